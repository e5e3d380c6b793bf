// The approval queue: every pending `item/approval/request` is kept until it is answered, decided
// elsewhere or withdrawn, and each can be answered in any order. The dialog lists them all and
// shows the selected one in full (who asks, the app and command or the shell command, the params
// or the change in a scrollable monospace block), after checking the request's shape and, for a
// window hosted here, that the command is one its app declared and the params fit its schema:
// an invalid one can only be declined. Escape (or "Later") minimizes the dialog to the queue
// button in the top bar and never answers; the pending count is in the page title, on that
// button and on each thread in the thread list. Identical requests (same asker, scope and
// operation: a view polling a tool) are one entry, answered together; "accept for session" (for
// a view: "for this view") answers every pending request of the same asker and scope; a view's
// requests are withdrawn when it closes (`withdrawCaller`).

import { approvalDetail } from "./hands.js";
import { checkSchema } from "./schema-check.js";

type Json = any;

/** The kinds of request the page knows how to show. */
const KINDS = ["shell", "file", "app"];
/** Most pending requests kept (a hostile or broken server cannot grow the page without end):
 * one more is declined at once. */
export const MAX_PENDING = 100;
/** Longest params shown (a larger payload is cut, visibly, and cannot be accepted). */
const MAX_PARAMS_CHARS = 256 * 1024;

interface Pending {
  params: Json;
  requestId: string;
  problems: string[];
  resolve: (answer: { decision: string }) => void;
  /** Identical requests collapsed into this one: answered with it. */
  twins: Array<{ requestId: string; resolve: (answer: { decision: string }) => void }>;
}

/** What makes two requests the same question: who asks, the scope, and what exactly. */
function sameness(params: Json): string {
  const app = params?.app;
  return JSON.stringify([params?.threadId, params?.approvalType, params?.scopeKey, params?.operation, params?.target, app?.windowId, app?.command, app?.params]);
}

/** Decisions that cover later calls of the same scope (so they answer the pending ones too). */
const LASTING = ["acceptForSession", "acceptAlways"];

export interface ApprovalEvents {
  /** Who made an app call, for the user. */
  callerText(caller: Json): string;
  /** The commands of a window this page hosts, as its app declared them (undefined: not hosted
   * here, or not registered yet: nothing to check against). */
  commands(windowId: string): Record<string, { params?: unknown }> | undefined;
  /** The queue changed: its size, and the pending count of each thread. */
  changed(total: number, perThread: Map<string, number>): void;
}

/** What is wrong with a request, before it is shown (empty when nothing). */
export function validateApproval(params: Json): string[] {
  const problems: string[] = [];
  if (!params || typeof params !== "object") return ["the request has no params"];
  for (const key of ["requestId", "approvalType", "operation"]) {
    if (typeof params[key] !== "string" || params[key] === "") problems.push(`\`${key}\` is missing or not a string`);
  }
  if (typeof params.approvalType === "string" && !KINDS.includes(params.approvalType)) problems.push(`unknown kind of request \`${params.approvalType}\``);
  if (params.approvalType === "app") {
    const app = params.app;
    if (!app || typeof app !== "object") problems.push("an app request without its `app` (which command, on which window)");
    else {
      for (const key of ["windowId", "appId", "command"]) if (typeof app[key] !== "string" || app[key] === "") problems.push(`\`app.${key}\` is missing or not a string`);
      if (app.params !== undefined && app.params !== null && typeof app.params !== "object") problems.push("`app.params` is not an object");
      else if (paramsText(app.params).length > MAX_PARAMS_CHARS) problems.push(`the params are over ${MAX_PARAMS_CHARS / 1024} KiB and cannot all be shown`);
    }
  }
  return problems;
}

function paramsText(params: Json): string {
  try {
    return JSON.stringify(params ?? {}, null, 2) ?? "";
  } catch {
    return "(params that cannot be shown)";
  }
}

function el(tag: string, className?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Whether the asker is an MCP Apps view (its calls' consent is per view instance). */
function fromView(params: Json): boolean {
  return typeof params?.threadId === "string" && params.threadId.startsWith("app:mcp-view:");
}

/** One line saying what a request asks. */
export function approvalSummary(params: Json): string {
  if (params?.approvalType === "app" && params.app) return `Run ${params.app.command} on ${params.app.appId} (${params.app.windowId})`;
  // An MCP tool (scope `mcp:<server>:<tool>`, `@<view>` for a view's call).
  // The agent's own call may carry only its operation, `mcp <server> <tool> <arguments>`.
  const mcp =
    (typeof params?.scopeKey === "string" ? /^mcp:([^@]+):([^:@]+)(?:@(.+))?$/.exec(params.scopeKey) : null) ??
    (typeof params?.operation === "string" ? /^mcp (\S+) (\S+)(?: |$)()/.exec(params.operation) : null);
  if (mcp) return `Allow ${mcp[1]} tool ${mcp[2]}?${mcp[3] ? ` (asked by view ${mcp[3]})` : ""}`;
  if (params?.approvalType === "shell") return `Run a command in ${params.target}`;
  return `${params?.operation ?? "?"} (in ${params?.target ?? "?"})`;
}

export class ApprovalQueue {
  private readonly pending: Pending[] = [];
  private selected: string | undefined;
  private readonly dialog: HTMLDialogElement;

  constructor(private readonly events: ApprovalEvents) {
    this.dialog = document.getElementById("approval") as HTMLDialogElement;
    for (const b of this.dialog.querySelectorAll<HTMLButtonElement>("button[data-decision]")) {
      b.addEventListener("click", () => {
        if (this.selected !== undefined) this.answer(this.selected, b.dataset.decision!);
      });
    }
    this.dialog.querySelector("button[data-action=minimize]")?.addEventListener("click", () => this.minimize());
    // Escape closes the dialog: the request stays in the queue, unanswered.
    this.dialog.addEventListener("close", () => this.changed());
    document.getElementById("approval-queue")?.addEventListener("click", () => this.open());
  }

  get size(): number {
    return this.pending.reduce((n, p) => n + 1 + p.twins.length, 0);
  }

  /** The handler of `item/approval/request`: resolves when the user decides. */
  ask(params: Json): Promise<{ decision: string }> {
    if (this.size >= MAX_PENDING) return Promise.resolve({ decision: "decline" });
    return new Promise((resolve) => {
      let requestId = typeof params?.requestId === "string" && params.requestId ? params.requestId : `local_${Math.random().toString(36).slice(2)}`;
      // The queue's key must be unique even if a (broken) server reuses one.
      if (this.find(requestId)) requestId = `${requestId}#${Math.random().toString(36).slice(2)}`;
      // The same question as one pending: answered with it, not asked again.
      // (Not when the operation was cut short: two calls that differ past the cut are not the same.)
      const cut = typeof params?.operation === "string" && params.operation.endsWith("…");
      const same = cut ? undefined : this.pending.find((p) => sameness(p.params) === sameness(params));
      if (same) {
        same.twins.push({ requestId, resolve });
        this.render();
        this.changed();
        return;
      }
      this.pending.push({ params, requestId, problems: [...validateApproval(params), ...this.checkCommand(params)], resolve, twins: [] });
      // A dialog already open keeps what the user is reading; a closed one opens on the new request.
      if (!this.dialog.open || this.selected === undefined) this.selected = requestId;
      this.render();
      if (!this.dialog.open) this.dialog.showModal();
      this.focusSelected();
      this.changed();
    });
  }

  /** An app command on a window hosted here: the command must be one the app declared, and the
   * params must fit its schema. */
  private checkCommand(params: Json): string[] {
    const app = params?.approvalType === "app" ? params.app : undefined;
    if (!app || typeof app.windowId !== "string" || typeof app.command !== "string") return [];
    const commands = this.events.commands(app.windowId);
    if (!commands) return [];
    const command = Object.prototype.hasOwnProperty.call(commands, app.command) ? commands[app.command] : undefined;
    if (!command) return [`the app has no command \`${app.command}\``];
    return command.params ? checkSchema(command.params, app.params ?? {}).map((p) => `the params do not fit the command: ${p}`) : [];
  }

  /** The request was decided elsewhere or withdrawn: it leaves the queue (the answer is void). */
  withdraw(requestId: string): void {
    this.answer(requestId, "cancel");
  }

  /** The asker (`threadId` of its requests, e.g. `app:mcp-view:<callId>`) is gone: its pending
   * requests are withdrawn (answered `cancel`: the calls never run). */
  withdrawCaller(threadId: string): void {
    for (const p of this.pending.filter((p) => p.params?.threadId === threadId)) this.answer(p.requestId, "cancel");
  }

  private find(requestId: string): boolean {
    return this.pending.some((p) => p.requestId === requestId || p.twins.some((t) => t.requestId === requestId));
  }

  /** The connection is gone: its requests can no longer be answered. */
  clear(): void {
    for (const p of [...this.pending]) this.answer(p.requestId, "cancel");
  }

  /** Shows the queue (the selected request, or the first). */
  open(requestId?: string): void {
    if (!this.pending.length) return;
    if (requestId && this.pending.some((p) => p.requestId === requestId)) this.selected = requestId;
    if (!this.pending.some((p) => p.requestId === this.selected)) this.selected = this.pending[0]!.requestId;
    this.render();
    if (!this.dialog.open) this.dialog.showModal();
    this.focusSelected();
  }

  minimize(): void {
    if (this.dialog.open) this.dialog.close();
  }

  private answer(requestId: string, decision: string): void {
    // A collapsed twin decided elsewhere or withdrawn: only it leaves.
    const holder = this.pending.find((p) => p.twins.some((t) => t.requestId === requestId));
    if (holder) {
      const i = holder.twins.findIndex((t) => t.requestId === requestId);
      holder.twins.splice(i, 1)[0]!.resolve({ decision });
      this.render();
      this.changed();
      return;
    }
    const at = this.pending.findIndex((p) => p.requestId === requestId);
    if (at < 0) return;
    const [done] = this.pending.splice(at, 1);
    done!.resolve({ decision });
    for (const twin of done!.twins.splice(0)) twin.resolve({ decision });
    // "For session" (for a view: "for this view") covers the same asker's pending calls of that scope.
    if (LASTING.includes(decision)) {
      const covered = this.pending.filter((p) => p.problems.length === 0 && p.params?.threadId === done!.params?.threadId && p.params?.scopeKey === done!.params?.scopeKey);
      for (const p of covered) this.answer(p.requestId, decision);
    }
    if (this.selected === requestId) this.selected = this.pending[Math.min(at, this.pending.length - 1)]?.requestId;
    if (!this.pending.length) {
      this.selected = undefined;
      if (this.dialog.open) this.dialog.close();
    } else {
      this.render();
      if (this.dialog.open) this.focusSelected();
    }
    this.changed();
  }

  private focusSelected(): void {
    this.dialog.querySelector<HTMLElement>("#approval-list li.selected button")?.focus();
  }

  private changed(): void {
    const perThread = new Map<string, number>();
    for (const p of this.pending) {
      const t = p.params?.threadId;
      if (typeof t === "string" && t) perThread.set(t, (perThread.get(t) ?? 0) + 1 + p.twins.length);
    }
    const queue = document.getElementById("approval-queue");
    if (queue) {
      const n = this.size;
      queue.hidden = n === 0;
      queue.textContent = `${n} approval${n === 1 ? "" : "s"} pending`;
      queue.dataset.count = String(n);
      queue.classList.toggle("minimized", n > 0 && !this.dialog.open);
    }
    this.events.changed(this.size, perThread);
  }

  private render(): void {
    const list = document.getElementById("approval-list")!;
    list.replaceChildren(
      ...this.pending.map((p, i) => {
        const li = el("li", p.requestId === this.selected ? "selected" : undefined);
        li.dataset.requestId = p.requestId;
        const b = el("button") as HTMLButtonElement;
        b.type = "button";
        b.append(el("span", "n", `${i + 1}.`), ` ${approvalSummary(p.params)}`);
        if (p.twins.length) b.append(el("span", "twins", ` ×${p.twins.length + 1}`));
        if (p.params?.app?.caller) b.append(el("span", "who", ` · ${this.events.callerText(p.params.app.caller)}`));
        if (p.problems.length) b.append(el("span", "bad", " · invalid"));
        b.setAttribute("aria-current", String(p.requestId === this.selected));
        b.addEventListener("click", () => {
          this.selected = p.requestId;
          this.render();
          this.focusSelected();
        });
        li.append(b);
        return li;
      }),
    );
    document.getElementById("approval-count")!.textContent = this.size > 1 ? `${this.size} pending` : "";
    const current = this.pending.find((p) => p.requestId === this.selected);
    if (current) this.show(current);
  }

  private show(p: Pending): void {
    const params = p.params ?? {};
    const text = (id: string, value: string) => (document.getElementById(id)!.textContent = value);
    text("approval-what", approvalSummary(params));
    text("approval-caller", params.app?.caller ? `Asked by ${this.events.callerText(params.app.caller)}` : "");
    text("approval-reason", typeof params.reason === "string" ? params.reason : "");
    text("approval-scope", typeof params.scopeKey === "string" ? params.scopeKey : "");
    const problem = document.getElementById("approval-problem")!;
    problem.hidden = p.problems.length === 0;
    problem.textContent = p.problems.length ? `This request cannot be accepted, only declined: ${p.problems.join("; ")}.` : "";
    const detail: HTMLElement[] = [];
    if (params.approvalType === "app" && params.app) {
      const pre = el("pre", "params", paramsText(params.app.params).slice(0, MAX_PARAMS_CHARS));
      pre.tabIndex = 0;
      pre.setAttribute("aria-label", "The command's params");
      detail.push(el("div", "detail-head", "Params"), pre);
    } else {
      const d = approvalDetail(params);
      if (d) {
        d.tabIndex = 0;
        detail.push(d);
      }
    }
    document.getElementById("approval-detail")!.replaceChildren(...detail);
    for (const b of this.dialog.querySelectorAll<HTMLButtonElement>("button[data-decision]")) {
      b.disabled = p.problems.length > 0 && b.dataset.decision !== "decline";
      // A view's consent is per view instance and tool.
      if (b.dataset.decision === "acceptForSession") b.textContent = fromView(params) ? "Accept for this view" : "Accept for session";
    }
  }
}
