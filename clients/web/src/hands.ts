// What the agent's hands look like in the desktop: a command's live output in a terminal-styled
// block (ANSI colours rendered, other escape sequences dropped), a file change's diff (unified,
// or side by side), the thread's plan as a checklist with its progress, and what a shell or file approval is about (the full command; for a write
// or an edit, the change the agent asked for, from its tool call's arguments).

type Json = any;

const COLORS = ["#2e3440", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#dcdfe4"];
const BRIGHT = ["#5c6370", "#ff7a85", "#b5e890", "#ffd68a", "#82c3ff", "#e09cff", "#7fdbe6", "#ffffff"];

interface AnsiState {
  carry: string;
  color?: string;
  bold: boolean;
}

const states = new WeakMap<HTMLElement, AnsiState>();

/** Appends terminal output (with SGR colour codes) to `pre`, across deltas. */
export function appendAnsi(pre: HTMLElement, text: string): void {
  const state = states.get(pre) ?? { carry: "", bold: false };
  states.set(pre, state);
  let input = state.carry + text;
  state.carry = "";
  // An escape sequence cut by the end of this delta waits for the next one.
  const cut = input.lastIndexOf("\x1b");
  if (cut >= 0 && !/^\x1b\[[0-9;?]*[A-Za-z]/.test(input.slice(cut)) && input.length - cut < 32) {
    state.carry = input.slice(cut);
    input = input.slice(0, cut);
  }
  const pattern = /\x1b\[([0-9;?]*)([A-Za-z])|\x1b[^[]/g;
  let last = 0;
  for (let m = pattern.exec(input); m; m = pattern.exec(input)) {
    span(pre, input.slice(last, m.index), state);
    last = pattern.lastIndex;
    if (m[2] === "m") sgr(state, m[1] ?? "");
  }
  span(pre, input.slice(last), state);
}

function span(pre: HTMLElement, text: string, state: AnsiState): void {
  if (!text) return;
  if (!state.color && !state.bold) {
    pre.append(text);
    return;
  }
  const s = document.createElement("span");
  s.textContent = text;
  if (state.color) s.style.color = state.color;
  if (state.bold) s.style.fontWeight = "bold";
  pre.append(s);
}

function sgr(state: AnsiState, params: string): void {
  for (const code of (params || "0").split(";").map(Number)) {
    if (code === 0) Object.assign(state, { color: undefined, bold: false });
    else if (code === 1) state.bold = true;
    else if (code === 22) state.bold = false;
    else if (code === 39) state.color = undefined;
    else if (code >= 30 && code <= 37) state.color = COLORS[code - 30];
    else if (code >= 90 && code <= 97) state.color = BRIGHT[code - 90];
  }
}

function el(tag: string, className: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A `commandExecution` item: its command, status and output. Deltas go to its `pre`. */
export function renderCommand(node: HTMLElement, payload: Json): void {
  let head = node.querySelector<HTMLElement>(".command-head");
  let pre = node.querySelector<HTMLElement>("pre.terminal");
  if (!head || !pre) {
    node.replaceChildren();
    head = el("div", "command-head");
    pre = el("pre", "terminal");
    node.append(head, pre);
  }
  const exit = payload.exitCode === undefined || payload.exitCode === null ? "" : ` · exit ${payload.exitCode}`;
  const session = payload.sessionId ? ` · ${payload.sessionId}` : "";
  head.textContent = `$ ${payload.command}   [${payload.status}${exit}${session}]`;
  node.dataset.commandStatus = payload.status;
  if (payload.status !== "inProgress") {
    // The completed item carries the whole output (what the deltas added up to).
    pre.replaceChildren();
    states.delete(pre);
    appendAnsi(pre, payload.aggregatedOutput ?? "");
  }
}

export function appendCommandOutput(node: HTMLElement, delta: string): void {
  const pre = node.querySelector<HTMLElement>("pre.terminal");
  if (pre) appendAnsi(pre, delta);
}

/** A unified diff, its lines coloured. */
export function diffBlock(diff: string): HTMLElement {
  const pre = el("pre", "diff");
  for (const line of diff.split("\n")) {
    const kind = line.startsWith("+++") || line.startsWith("---") ? "file" : line.startsWith("@@") ? "hunk" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx";
    pre.append(el("span", `line ${kind}`, `${line}\n`));
  }
  return pre;
}

const DIFF_KEY = "appserver.desktop.diff";

function splitPreferred(): boolean {
  return localStorage.getItem(DIFF_KEY) === "split";
}

/** A unified diff as two columns: the old lines on the left, the new on the right, a removed
 * run beside the added run that replaces it. */
export function splitDiff(diff: string): HTMLElement {
  const table = el("table", "diff-split");
  const row = (left: [string, string] | undefined, right: [string, string] | undefined) => {
    const tr = document.createElement("tr");
    for (const side of [left, right]) {
      const td = el("td", side ? side[0] : "empty", side ? side[1] : "");
      tr.append(td);
    }
    table.append(tr);
  };
  let dels: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      row(i < dels.length ? ["del", dels[i]!] : undefined, i < adds.length ? ["add", adds[i]!] : undefined);
    }
    dels = [];
    adds = [];
  };
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---")) {
      flush();
      row(["file", line], ["file", ""]);
    } else if (line.startsWith("@@")) {
      flush();
      row(["hunk", line], ["hunk", ""]);
    } else if (line[0] === "-") dels.push(line.slice(1));
    else if (line[0] === "+") adds.push(line.slice(1));
    else {
      flush();
      row(["ctx", line.slice(1)], ["ctx", line.slice(1)]);
    }
  }
  flush();
  return table;
}

/** A diff with its view's switch: unified (the default) or side by side (remembered). */
export function diffView(diff: string): HTMLElement {
  const box = el("div", "diff-view");
  const toggle = el("button", "diff-toggle") as HTMLButtonElement;
  toggle.type = "button";
  const show = (split: boolean) => {
    box.dataset.view = split ? "split" : "unified";
    toggle.textContent = split ? "Unified" : "Side by side";
    toggle.setAttribute("aria-label", split ? "Show the diff unified" : "Show the diff side by side");
    box.replaceChildren(toggle, split ? splitDiff(diff) : diffBlock(diff));
  };
  toggle.addEventListener("click", () => {
    const split = box.dataset.view !== "split";
    localStorage.setItem(DIFF_KEY, split ? "split" : "unified");
    show(split);
  });
  show(splitPreferred());
  return box;
}

/** The diffs of a `toolResult`'s `fileChanges`. */
export function fileChanges(changes: Json[]): HTMLElement {
  const box = el("div", "file-changes");
  for (const c of changes) {
    box.append(el("div", "file-change-head", `${c.kind === "add" ? "Added" : "Changed"} ${c.path} (+${c.additions} −${c.deletions})`));
    box.append(diffView(c.diff));
  }
  return box;
}

/** The thread's plan (`plan/updated`, `thread.plan`). */
export function renderPlan(target: HTMLElement, plan: Json | undefined): void {
  target.replaceChildren();
  target.hidden = !plan;
  if (!plan) return;
  target.append(el("div", "plan-title", plan.title));
  if (plan.overview) target.append(el("div", "plan-overview muted", plan.overview));
  const todos: Json[] = plan.todos ?? [];
  const done = todos.filter((t) => t.status === "completed").length;
  if (todos.length) target.append(el("div", "plan-progress muted", `${done} of ${todos.length} done`));
  const list = el("ul", "plan-todos");
  list.setAttribute("aria-label", "The plan's tasks");
  for (const t of todos) {
    const mark = t.status === "completed" ? "☑" : t.status === "in_progress" ? "▶" : t.status === "cancelled" ? "☒" : "☐";
    const li = el("li", `todo ${t.status}`, `${mark} ${t.content}`);
    li.setAttribute("aria-label", `${String(t.status).replace("_", " ")}: ${t.content}`);
    li.dataset.id = t.id;
    list.append(li);
  }
  target.append(list);
}

/** The latest tool calls by id, so a file approval can show what the call wants to write. */
const recentCalls: Json[] = [];

export function noteToolCall(payload: Json): void {
  if (!payload?.callId) return;
  const at = recentCalls.findIndex((c) => c.callId === payload.callId);
  if (at >= 0) recentCalls.splice(at, 1);
  recentCalls.push(payload);
  if (recentCalls.length > 50) recentCalls.shift();
}

/** What a `shell` or `file` approval is about, to show in full in the dialog. */
export function approvalDetail(params: Json): HTMLElement | undefined {
  if (params.approvalType === "shell") {
    const pre = el("pre", "terminal approval-command");
    pre.textContent = `${params.target} $ ${params.operation}`;
    return pre;
  }
  if (params.approvalType !== "file" || (params.operation !== "write" && params.operation !== "edit")) return undefined;
  const target = String(params.target ?? "");
  const call = [...recentCalls]
    .reverse()
    .find((c) => (c.toolName === "WriteFile" || c.toolName === "EditFile") && target.endsWith(String(c.arguments?.path ?? "").replace(/^\.\//, "")));
  if (!call) return undefined;
  const a = call.arguments ?? {};
  const lines = (text: string, sign: string) => String(text ?? "").replace(/\n$/, "").split("\n").map((l) => `${sign}${l}`);
  const diff =
    call.toolName === "WriteFile"
      ? [`+++ ${a.path}`, ...lines(a.content, "+")]
      : [`--- ${a.path}`, `+++ ${a.path}`, ...lines(a.oldText, "-"), ...lines(a.newText, "+")];
  return diffBlock(diff.join("\n"));
}
