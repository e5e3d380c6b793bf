// The thread list: the user's threads (`thread/list`, paged), each a button with its title and
// its pending approvals, a search box filtering them by title, and the open thread's Rename,
// Archive and Delete. A thread is titled by its name unless it has none or the name is a slash
// command ("New thread" then, never its id); the page names it after its first real message.

import type { AppServerClient } from "../../typescript/src/index.js";

type Json = any;

const PAGE = 30;
/** Most characters of a title taken from a message. */
const TITLE_LENGTH = 60;

const $ = (id: string) => document.getElementById(id)!;

function el(tag: string, className?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A thread's title for the user: its name, unless it has none or it is a slash command. */
export function threadTitle(name: string | null | undefined): string {
  return name && !name.startsWith("/") ? name : "New thread";
}

/** A title from the first real message: its first line, cut at 60 characters. */
export function titleFrom(text: string): string {
  const line = text.trim().split("\n", 1)[0]!.trim();
  return line.length > TITLE_LENGTH ? `${line.slice(0, TITLE_LENGTH - 1)}…` : line;
}

export interface ThreadListEvents {
  client(): AppServerClient;
  identity: Json;
  /** The user picked a thread. */
  open(threadId: string): void;
  /** The open thread was archived or deleted. */
  closed(threadId: string): void;
  error(text: string): void;
}

export class ThreadList {
  current: string | undefined;
  private cursor: string | undefined;
  private readonly names = new Map<string, string>();
  private approvals = new Map<string, number>();

  constructor(private readonly events: ThreadListEvents) {
    $("more-threads").addEventListener("click", () => void this.load(true));
    $("thread-search").addEventListener("input", () => this.filter());
    $("rename-thread").addEventListener("click", () => this.startRename());
    $("archive-thread").addEventListener("click", () => void this.act("thread/archive", "archive"));
    $("delete-thread").addEventListener("click", () => this.armDelete());
    $("rename-form").addEventListener("submit", (e) => {
      e.preventDefault();
      void this.finishRename(true);
    });
    $("rename-input").addEventListener("keydown", (e) => {
      if ((e as KeyboardEvent).key === "Escape") {
        e.preventDefault();
        void this.finishRename(false);
      }
    });
  }

  name(threadId: string): string | undefined {
    return this.names.get(threadId);
  }

  async load(more = false): Promise<void> {
    const params = { identity: this.events.identity, limit: PAGE, cursor: more ? this.cursor : undefined };
    const page: Json = await this.events.client().request("thread/list", params as Json);
    if (!more) $("threads").replaceChildren();
    for (const t of page.data) this.add(t, false);
    this.cursor = page.nextCursor ?? undefined;
    $("more-threads").hidden = !this.cursor;
    this.filter();
  }

  add(t: Json, first: boolean): void {
    if (document.querySelector(`#threads li[data-id="${t.id}"]`)) return;
    const li = el("li", "thread");
    li.dataset.id = t.id;
    const open = el("button", "thread-open") as HTMLButtonElement;
    open.type = "button";
    open.title = t.id;
    this.names.set(t.id, t.displayName ?? "");
    open.append(el("span", "name", threadTitle(t.displayName)), el("span", "badge"));
    open.addEventListener("click", () => this.events.open(t.id));
    li.append(open);
    li.classList.toggle("running", !!t.runtime?.running);
    if (first) $("threads").prepend(li);
    else $("threads").append(li);
    this.mark();
    this.showApprovals(this.approvals);
    this.filter();
  }

  remove(threadId: string): void {
    document.querySelector(`#threads li[data-id="${threadId}"]`)?.remove();
    this.names.delete(threadId);
    if (threadId === this.current) this.events.closed(threadId);
  }

  /** Marks the open thread, and shows its title and actions. */
  select(threadId: string | undefined): void {
    this.current = threadId;
    this.mark();
    $("thread-title").textContent = threadId ? threadTitle(this.names.get(threadId)) : "No thread";
    $("thread-actions").hidden = !threadId;
  }

  showName(threadId: string, name: string): void {
    this.names.set(threadId, name);
    const label = document.querySelector(`#threads li[data-id="${threadId}"] .name`);
    if (label) label.textContent = threadTitle(name);
    if (threadId === this.current) $("thread-title").textContent = threadTitle(name);
    this.filter();
  }

  showRunning(threadId: string, running: boolean): void {
    document.querySelector(`#threads li[data-id="${threadId}"]`)?.classList.toggle("running", running);
  }

  /** Pending approvals per thread, as a badge on each. */
  showApprovals(perThread: Map<string, number>): void {
    this.approvals = perThread;
    for (const li of document.querySelectorAll<HTMLElement>("#threads li")) {
      const n = perThread.get(li.dataset.id!) ?? 0;
      const badge = li.querySelector<HTMLElement>(".badge");
      if (!badge) continue;
      badge.textContent = n ? String(n) : "";
      badge.title = n ? `${n} approval${n === 1 ? "" : "s"} pending` : "";
      li.classList.toggle("asking", n > 0);
    }
  }

  private mark(): void {
    for (const li of document.querySelectorAll<HTMLElement>("#threads li")) {
      li.classList.toggle("current", li.dataset.id === this.current);
      li.querySelector("button")?.setAttribute("aria-current", String(li.dataset.id === this.current));
    }
  }

  /** Shows only the threads whose title holds the search's words (of the pages loaded). */
  private filter(): void {
    const words = ($("thread-search") as HTMLInputElement).value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const li of document.querySelectorAll<HTMLElement>("#threads li")) {
      const title = threadTitle(this.names.get(li.dataset.id!)).toLowerCase();
      li.hidden = !words.every((w) => title.includes(w));
      if (!li.hidden) shown++;
    }
    const none = $("no-thread-match");
    none.hidden = words.length === 0 || shown > 0;
  }

  private startRename(): void {
    if (!this.current) return;
    const input = $("rename-input") as HTMLInputElement;
    input.value = this.names.get(this.current) ?? "";
    $("rename-form").hidden = false;
    $("thread-title").hidden = true;
    input.focus();
    input.select();
  }

  private async finishRename(save: boolean): Promise<void> {
    const threadId = this.current;
    const displayName = ($("rename-input") as HTMLInputElement).value.trim().slice(0, 200);
    $("rename-form").hidden = true;
    $("thread-title").hidden = false;
    $("rename-thread").focus();
    if (!save || !threadId || !displayName) return;
    try {
      await this.events.client().request("thread/rename", { threadId, displayName } as Json);
      this.showName(threadId, displayName);
    } catch (err: any) {
      this.events.error(`Cannot rename the thread: ${String(err?.message ?? err)}`);
    }
  }

  private disarm: ReturnType<typeof setTimeout> | undefined;

  /** Delete asks once more (the button turns into "Delete for good?" for 5 s). */
  private armDelete(): void {
    const button = $("delete-thread");
    if (button.dataset.armed === "true") {
      clearTimeout(this.disarm);
      this.resetDelete();
      void this.act("thread/delete", "delete");
      return;
    }
    button.dataset.armed = "true";
    button.textContent = "Delete for good?";
    this.disarm = setTimeout(() => this.resetDelete(), 5_000);
  }

  private resetDelete(): void {
    const button = $("delete-thread");
    button.dataset.armed = "false";
    button.textContent = "Delete";
  }

  private async act(method: "thread/archive" | "thread/delete", what: string): Promise<void> {
    const threadId = this.current;
    if (!threadId) return;
    try {
      await this.events.client().request(method, { threadId } as Json);
      this.remove(threadId);
    } catch (err: any) {
      this.events.error(`Cannot ${what} the thread: ${String(err?.message ?? err)}`);
    }
  }
}
