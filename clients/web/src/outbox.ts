// The outbox: what the user sends is kept in localStorage until the server has taken it, so
// nothing typed is lost when the connection is down (or the page reloads meanwhile). Each entry
// is shown under the messages — queued, sending, or failed with Retry and Discard — and sent in
// order when the page is connected. An entry whose send was cut by the connection may have
// arrived: before sending it again, the page looks for it in the thread (see `delivered`), so it
// arrives exactly once.

import { ConnectionClosedError, TimeoutError } from "../../typescript/src/index.js";

const KEY = "appserver.desktop.outbox";
/** Most entries kept (more are refused, visibly). */
export const MAX_ENTRIES = 50;
/** Longest text kept. */
export const MAX_TEXT = 64 * 1024;

export interface OutboxEntry {
  id: string;
  /** The thread it goes to (none yet: a new thread is started for it, once). */
  threadId?: string;
  text: string;
  queuedAt: number;
  state: "queued" | "sending" | "failed";
  /** When it was first sent (client clock). */
  sentAt?: number;
  error?: string;
  /** Its send was cut by the connection: it may have arrived. */
  uncertain?: boolean;
}

export interface OutboxPort {
  /** Sends one entry (starting its thread first when it has none, and recording it on the entry). */
  send(entry: OutboxEntry, save: () => void): Promise<void>;
  /** The thread the user has open (an entry for another thread says which it goes to). */
  current(): string | undefined;
  /** A thread's title, for an entry that goes to a thread not open. */
  title(threadId: string): string;
  /** Whether an earlier, cut send of this entry reached the thread. */
  delivered(entry: OutboxEntry): Promise<boolean>;
  connected(): boolean;
}

/** A failure that says nothing about whether the server got the request. */
function cut(err: unknown): boolean {
  return err instanceof ConnectionClosedError || err instanceof TimeoutError;
}

export class Outbox {
  private entries: OutboxEntry[] = [];
  private flushing = false;

  constructor(
    private readonly port: OutboxPort,
    private readonly list: HTMLElement,
  ) {
    try {
      const saved = JSON.parse(localStorage.getItem(KEY) ?? "[]");
      if (Array.isArray(saved)) this.entries = saved.filter((e) => e && typeof e.text === "string" && typeof e.id === "string").slice(0, MAX_ENTRIES);
    } catch {
      this.entries = [];
    }
    // A page closed while sending: that send may have arrived.
    for (const e of this.entries) if (e.state === "sending") Object.assign(e, { state: "queued", uncertain: true });
    this.render();
  }

  get size(): number {
    return this.entries.length;
  }

  /** Keeps `text` for `threadId` and sends it when it can. Throws when the outbox is full. */
  add(threadId: string | undefined, text: string): void {
    if (this.entries.length >= MAX_ENTRIES) throw new Error(`the outbox is full (${MAX_ENTRIES} messages wait to be sent)`);
    if (text.length > MAX_TEXT) throw new Error(`the message is over ${MAX_TEXT / 1024} KiB`);
    this.entries.push({ id: `out_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`, threadId, text, queuedAt: Date.now(), state: "queued" });
    this.save();
    void this.flush();
  }

  /** Sends the queued entries, in order, while connected. */
  async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      for (;;) {
        const entry = this.entries.find((e) => e.state === "queued");
        if (!entry || !this.port.connected()) return;
        entry.state = "sending";
        entry.error = undefined;
        entry.sentAt ??= Date.now();
        this.save();
        try {
          if (!(entry.uncertain && (await this.port.delivered(entry)))) await this.port.send(entry, () => this.save());
          this.remove(entry.id);
        } catch (err: any) {
          if (cut(err)) {
            // Maybe sent: asked again (after a look at the thread) on the next connection.
            Object.assign(entry, { state: "queued", uncertain: true });
            this.save();
            return;
          }
          Object.assign(entry, { state: "failed", error: String(err?.message ?? err) });
          this.save();
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private retry(id: string): void {
    const entry = this.entries.find((e) => e.id === id);
    if (!entry) return;
    entry.state = "queued";
    this.save();
    void this.flush();
  }

  private remove(id: string): void {
    this.entries = this.entries.filter((e) => e.id !== id);
    this.save();
  }

  private save(): void {
    try {
      localStorage.setItem(KEY, JSON.stringify(this.entries));
    } catch {
      // Storage full or refused: the entries stay in memory (and on screen).
    }
    this.render();
  }

  private render(): void {
    this.list.replaceChildren(
      ...this.entries.map((e) => {
        const li = document.createElement("li");
        li.className = `outbox-entry ${e.state}`;
        li.dataset.id = e.id;
        const text = document.createElement("span");
        text.className = "text";
        text.textContent = e.text;
        const status = document.createElement("span");
        status.className = "outbox-status";
        status.textContent =
          e.state === "failed" ? `Not sent: ${e.error}` : e.state === "sending" ? "Sending…" : this.port.connected() ? "Queued" : "Waiting for the connection: sent when it is back";
        li.append(text, status);
        if (e.threadId && e.threadId !== this.port.current()) status.textContent += ` (to “${this.port.title(e.threadId)}”)`;
        if (e.state !== "sending") {
          if (e.state === "failed") li.append(button("Retry", () => this.retry(e.id)));
          li.append(button(e.state === "failed" ? "Discard" : "Cancel", () => this.remove(e.id)));
        }
        return li;
      }),
    );
    this.list.hidden = this.entries.length === 0;
  }

  /** Shows the entries again (the connection changed what they say). */
  refresh(): void {
    this.render();
  }
}

function button(text: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", onClick);
  return b;
}
