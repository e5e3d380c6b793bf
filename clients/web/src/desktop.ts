// The desktop page: connects to the server it was served by (connection.ts: the TypeScript SDK
// over the same origin's /ws, reconnecting), shows a thread with its streaming agent text
// (Markdown, markdown.ts), reasoning, tool calls and results (their images, audio and resources:
// content.ts), the agent's commands, diffs and
// plan (hands.ts), sends messages and slash commands (completed from `command/list`) through the
// outbox (outbox.ts), and wires the thread list (threads.ts), the approval queue (approvals.ts),
// the apps and their windows (desk.ts, wm.ts, host.ts), the theme (theme.ts) and the keys (keys.ts).

import { contentItems } from "./content.js";
import { RpcError, seqOf, type AppServerClient, type Notification } from "../../typescript/src/index.js";
import { ApprovalQueue } from "./approvals.js";
import { Elicitations } from "./elicit.js";
import { Connection, type ConnectionState } from "./connection.js";
import { renderMarkdown, renderMarkdownSoon } from "./markdown.js";
import { Outbox, type OutboxEntry } from "./outbox.js";
import { setupTheme } from "./theme.js";
import { appendCommandOutput, diffView, fileChanges, noteToolCall, renderCommand, renderPlan } from "./hands.js";
import { Desk } from "./desk.js";
import { listen } from "./host.js";
import { offerOf, renderViewResult } from "./views.js";
import { setupKeys, showPane } from "./keys.js";
import { ThreadList, threadTitle, titleFrom } from "./threads.js";

const IDENTITY = { channelName: "web", userId: "desktop-user", channelContext: "desktop" };
const THREAD_KEY = "appserver.desktop.thread";
const TITLE = "appserver desktop";
/** `turn/start` refused: a turn is already running on the thread. */
const TURN_IN_PROGRESS = -32012;

type Json = any;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

let client: AppServerClient;
let currentThread: string | undefined;
let commands: Array<{ name: string; description: string; category: string }> = [];
const desk = new Desk(
  () => client,
  () => showPane("desk"),
  (threadId, text) => outbox.add(threadId, text),
  // A closing view's calls still waiting for approval are withdrawn: they never run.
  (view) => approvals.withdrawCaller(`app:mcp-view:${view.offer.callId}`),
);
let ignoredMessages = 0;

function el(tag: string, className?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- threads ----

const threads = new ThreadList({
  client: () => client,
  identity: IDENTITY,
  open: (id) => {
    showPane("chat");
    void openThread(id);
  },
  closed: () => {
    // The open thread was archived or deleted: nothing is open now.
    if (currentThread) void client.request("thread/unsubscribe", { threadId: currentThread }).catch(() => {});
    currentThread = undefined;
    sessionStorage.removeItem(THREAD_KEY);
    threads.select(undefined);
    desk.parkInline();
    $("messages").replaceChildren();
    renderPlan($("plan"), undefined);
    renderQueue(undefined);
    $("turn-diff").replaceChildren();
    setRunning(undefined);
  },
  error: (text) => $("messages").append(el("div", "item error", text)),
});

/** New thread (the button, Alt+N): started, opened, and the message box focused — unless the
 * user moved the focus elsewhere (Alt+2, a click) while the thread was opening. */
async function startThread(): Promise<void> {
  const focusedBefore = document.activeElement;
  try {
    await newThread();
    if (document.activeElement === focusedBefore || document.activeElement === document.body) $("input").focus();
  } catch (err: any) {
    $("messages").append(el("div", "item error", `Cannot start a thread: ${String(err?.message ?? err)}`));
  }
}

async function newThread(): Promise<string> {
  const { thread } = await client.request("thread/start", { identity: IDENTITY } as Json);
  threads.add(thread, true);
  await openThread(thread.id);
  return thread.id;
}

async function openThread(id: string): Promise<void> {
  if (currentThread && currentThread !== id) await client.request("thread/unsubscribe", { threadId: currentThread }).catch(() => {});
  currentThread = id;
  sessionStorage.setItem(THREAD_KEY, id);
  threads.select(id);
  outbox.refresh();
  const { thread }: Json = await client.request("thread/read", { threadId: id, includeTurns: true, turnsLimit: 20 } as Json);
  threads.showName(thread.id, thread.displayName ?? "");
  setRunning(thread.runtime?.running ? runningTurn(thread) ?? "" : undefined);
  desk.parkInline();
  $("messages").replaceChildren();
  renderPlan($("plan"), thread.plan);
  renderQueue(thread.queuedInputs);
  $("turn-diff").replaceChildren();
  for (const turn of thread.turns ?? []) for (const item of turn.items ?? []) renderItem(turn.id, item);
  await client.request("thread/subscribe", { threadId: id, replayRecent: true } as Json);
}

// ---- items ----

function itemElement(turnId: string, itemId: string): HTMLElement | null {
  return document.querySelector(`#messages [data-key="${turnId}/${itemId}"]`);
}

/** The thread's tool calls by id (a result names its call), to open a call's MCP Apps view. */
const toolCalls = new Map<string, Json>();

function renderItem(turnId: string, item: Json): HTMLElement | null {
  const p = item.payload ?? {};
  let node = itemElement(turnId, item.id);
  if (!node) {
    node = el("div", `item ${item.type}`);
    node.dataset.key = `${turnId}/${item.id}`;
    $("messages").append(node);
  }
  node.dataset.status = item.status;
  switch (item.type) {
    case "userMessage":
      node.textContent = p.text ?? "";
      break;
    case "agentMessage":
      if (item.status === "completed" || p.text) {
        const text = p.text ?? agentText.get(node) ?? "";
        agentText.set(node, text);
        renderMarkdown(node, text);
      }
      break;
    case "reasoningContent":
      if (item.status === "completed" || p.text) node.textContent = p.text ?? node.textContent;
      break;
    case "toolCall":
      node.textContent = `${p.toolName}(${p.arguments === undefined ? "…" : JSON.stringify(p.arguments)})`;
      noteToolCall(p);
      toolCalls.set(p.callId, p);
      if (toolCalls.size > 500) toolCalls.delete(toolCalls.keys().next().value!);
      break;
    case "toolResult": {
      // A call that opened a view: one compact line (the view shows the result), the raw result
      // a click away, and the view's place in the conversation.
      const offer = currentThread ? offerOf(currentThread, turnId, toolCalls.get(p.callId), p) : undefined;
      if (offer) {
        renderViewResult(node, p, offer, () => desk.openView(offer, true));
        desk.adopt(offer.callId);
        break;
      }
      // Terminal colour codes are the command block's to render, not the result's.
      node.textContent = `${p.success ? "✔" : "✘"} ${String(p.result).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "")}`;
      node.classList.toggle("failed", !p.success);
      if (p.fileChanges?.length) node.append(fileChanges(p.fileChanges));
      {
        const media = contentItems(p.contentItems);
        if (media) node.append(media);
      }
      break;
    }
    case "commandExecution":
      renderCommand(node, p);
      break;
    case "approvalRequest":
      node.textContent = `Approval asked: ${p.operation}`;
      break;
    case "approvalResponse":
      node.textContent = `Approval: ${p.decision ?? (p.approved ? "accept" : "decline")}`;
      break;
    case "error":
      node.textContent = `Error: ${p.message}`;
      break;
    default:
      node.textContent = `${item.type}`;
  }
  node.scrollIntoView({ block: "end" });
  return node;
}

/** An agent message's Markdown source, as streamed so far. */
const agentText = new WeakMap<HTMLElement, string>();

function appendDelta(n: Json, type: string): void {
  let node = itemElement(n.turnId, n.itemId);
  if (!node) node = renderItem(n.turnId, { id: n.itemId, type, status: "started", payload: {} });
  if (!node) return;
  if (type === "agentMessage") {
    const text = (agentText.get(node) ?? "") + n.delta;
    agentText.set(node, text);
    renderMarkdownSoon(node, text);
  } else {
    node.textContent = (node.textContent ?? "") + n.delta;
  }
}

/** Most outside-agent calls listed in the sidebar. */
const ACTIVITY_LIMIT = 20;

/** Who made an app call, for the user: a name the caller gave itself is said to be declared. */
function callerText(caller: Json): string {
  switch (caller?.kind) {
    case "mcp":
      return `outside agent "${caller.declaredName}" (declared name, not verified)`;
    case "app":
      return `app ${caller.appId} (${caller.windowId})`;
    case "agent":
      return threads.name(caller.threadId) === undefined
        ? `the agent of thread ${caller.threadId}`
        : `the agent of thread "${threadTitle(threads.name(caller.threadId))}" (${caller.threadId})`;
    case "client":
      return `client "${caller.declaredName}" (declared name)`;
    default:
      return "an outside caller";
  }
}

function onNotification(n: Notification): void {
  const p: Json = n.params;
  switch (n.method) {
    case "thread/started":
      if (p.thread?.userId === IDENTITY.userId) threads.add(p.thread, true);
      return;
    case "thread/renamed": {
      threads.showName(p.threadId, p.displayName);
      return;
    }
    case "app/event": {
      // A streaming command's progress, shown in its window's title bar.
      desk.find(p.windowId)?.showEvent(`${p.type} ${JSON.stringify(p.payload ?? {})}`);
      return;
    }
    case "mcp/view/offered":
      // A call of a tool with an MCP Apps view: its window opens (views.ts).
      desk.openView(p);
      return;
    case "app/externalCall": {
      // An outside agent (MCP) or an app called an app: listed under "Outside agents", and shown
      // in the app's window when it is open.
      const line = `${callerText(p.caller)}: ${p.command} on ${p.windowId} ${p.status}`;
      const list = $("activity");
      // A view polling its server repeats itself: one line, counted.
      const top = list.firstElementChild as HTMLElement | null;
      if (top?.dataset.line === line) {
        const n = Number(top.dataset.count ?? "1") + 1;
        top.dataset.count = String(n);
        top.textContent = `${line} ×${n}`;
      } else {
        const li = el("li", `external ${p.status}`, line);
        li.dataset.line = line;
        list.prepend(li);
      }
      while (list.children.length > ACTIVITY_LIMIT) list.lastElementChild?.remove();
      desk.find(p.windowId)?.showEvent(line);
      return;
    }
    case "thread/queue/updated":
      if (p.threadId === currentThread) renderQueue(p.queuedInputs);
      return;
    case "plan/updated":
      if (p.threadId === currentThread) renderPlan($("plan"), p);
      return;
    case "thread/runtimeChanged":
      threads.showRunning(p.threadId, !!p.runtime?.running);
      if (p.threadId === currentThread) setRunning(p.runtime?.running ? (runningTurnId ?? "") : undefined);
      return;
    case "thread/deleted":
      threads.remove(p.threadId);
      // Its views go with it (torn down, their pending calls withdrawn).
      desk.closeViewsOf(p.threadId);
      return;
    case "item/approval/resolved":
      // Decided elsewhere, or withdrawn (the call was cancelled): the question is void.
      if (typeof p.item?.payload?.requestId === "string") approvals.withdraw(p.item.payload.requestId);
      break;
  }
  if (p?.threadId !== currentThread && p?.turn?.threadId !== currentThread) return;
  switch (n.method) {
    case "item/started":
    case "item/completed":
      renderItem(p.turnId, p.item);
      break;
    case "item/approval/resolved":
      renderItem(p.turnId, p.item);
      break;
    case "item/agentMessage/delta":
      appendDelta(p, "agentMessage");
      break;
    case "item/reasoning/delta":
      appendDelta(p, "reasoningContent");
      break;
    case "item/commandExecution/outputDelta": {
      const node = itemElement(p.turnId, p.itemId);
      if (node) appendCommandOutput(node, p.delta);
      break;
    }
    case "turn/diff/updated":
      $("turn-diff").replaceChildren(diffView(p.diff));
      break;
    case "turn/failed":
      $("messages").append(el("div", "item error", `Turn failed: ${p.error ?? ""}`));
      setRunning(undefined);
      break;
    case "turn/started":
      setRunning(p.turn?.id ?? "");
      break;
    case "turn/completed":
    case "turn/cancelled":
      setRunning(undefined);
      break;
  }
}

// ---- composer ----

/** Sends an outbox entry: starts its thread first when it has none (once: the thread is recorded
 * on the entry before anything else is sent). */
async function sendEntry(entry: OutboxEntry, save: () => void): Promise<void> {
  if (!entry.threadId) {
    const { thread }: Json = await client.request("thread/start", { identity: IDENTITY } as Json);
    entry.threadId = thread.id;
    save();
    threads.add(thread, true);
    if (!currentThread) await openThread(thread.id);
  }
  const threadId = entry.threadId!;
  const text = entry.text;
  const name = text.startsWith("/") ? text.slice(1).split(/\s/, 1)[0] : undefined;
  const command = commands.find((c) => c.name === `/${name}`);
  if (command && command.category === "builtin") {
    const result: Json = await client.request("command/execute", { threadId, command: text } as Json);
    if (result.message && threadId === currentThread) $("messages").append(el("div", "item systemNotice", result.message));
    if (result.thread) {
      threads.add(result.thread, true);
      await openThread(result.thread.id);
    }
    return;
  }
  const input = [{ type: "text", text }];
  try {
    await client.request("turn/start", { threadId, input } as Json);
  } catch (err) {
    // A turn is running: the message waits in the thread's queue and runs after it.
    if (!(err instanceof RpcError) || err.code !== TURN_IN_PROGRESS) throw err;
    await client.request("turn/enqueue", { threadId, input } as Json);
  }
  // The first real message names the thread (a slash command or an app's message never does).
  const known = threads.name(threadId);
  if (!known || known.startsWith("/")) {
    const displayName = titleFrom(text);
    await client.request("thread/rename", { threadId, displayName } as Json).catch(() => {});
    threads.showName(threadId, displayName);
  }
}

/** The thread's queued inputs (sent while a turn ran), each with Remove. */
function renderQueue(queued: Json[] | undefined): void {
  const list = $("queued");
  const threadId = currentThread;
  list.replaceChildren(
    ...(queued ?? []).map((q) => {
      const li = el("li", "queued-input");
      li.dataset.id = q.id;
      li.append(el("span", "text", q.displayText), el("span", "outbox-status", "Queued: runs after the current turn"));
      const remove = el("button", undefined, "Remove") as HTMLButtonElement;
      remove.type = "button";
      remove.addEventListener("click", () => {
        if (!threadId) return;
        client
          .request("turn/queue/remove", { threadId, queuedInputId: q.id } as Json)
          .then((r: Json) => threadId === currentThread && renderQueue(r.queuedInputs))
          .catch((err) => $("messages").append(el("div", "item error", `Cannot remove it: ${String(err?.message ?? err)}`)));
      });
      li.append(remove);
      return li;
    }),
  );
  list.hidden = list.children.length === 0;
}

// ---- the running turn ----

/** The current thread's running turn (`""`: running, turn unknown yet), or undefined. */
let runningTurnId: string | undefined;

function runningTurn(thread: Json): string | undefined {
  const turns: Json[] = thread.turns ?? [];
  return [...turns].reverse().find((t) => t.status === "running" || t.status === "waitingApproval")?.id;
}

function setRunning(turnId: string | undefined): void {
  runningTurnId = turnId;
  document.body.classList.toggle("running", turnId !== undefined);
  $("stop").hidden = turnId === undefined;
}

/** The Stop button: interrupts the running turn. */
async function stopTurn(): Promise<void> {
  const threadId = currentThread;
  if (!threadId || runningTurnId === undefined) return;
  let turnId = runningTurnId;
  if (!turnId) {
    const { thread }: Json = await client.request("thread/read", { threadId, includeTurns: true, turnsLimit: 3 } as Json);
    turnId = runningTurn(thread) ?? "";
  }
  if (turnId) await client.request("turn/interrupt", { threadId, turnId } as Json);
}

/** Whether a send of `entry` that the connection cut reached its thread: a user message with its
 * text in a turn started since (a few minutes of clock difference allowed). */
async function entryDelivered(entry: OutboxEntry): Promise<boolean> {
  if (!entry.threadId) return false;
  const { thread }: Json = await client.request("thread/read", { threadId: entry.threadId, includeTurns: true, turnsLimit: 10 } as Json);
  const since = (entry.sentAt ?? entry.queuedAt) - 5 * 60_000;
  const queued = (thread.queuedInputs ?? []).some((q: Json) => q.displayText === entry.text && Date.parse(q.createdAt) >= since);
  return (
    queued ||
    (thread.turns ?? []).some(
      (turn: Json) => Date.parse(turn.startedAt) >= since && (turn.items ?? []).some((i: Json) => i.type === "userMessage" && i.payload?.text === entry.text),
    )
  );
}

/** The completion the arrow keys chose (-1: none chosen, Tab takes the first). */
let chosen = -1;

function updateCompletions(): void {
  const input = $("input") as HTMLTextAreaElement;
  const list = $("completions");
  const text = input.value;
  const word = /^\/\S*$/.test(text) ? text : undefined;
  const matches = word === undefined ? [] : commands.filter((c) => c.name.startsWith(word));
  chosen = Math.min(chosen, matches.length - 1);
  list.replaceChildren(
    ...matches.map((c, i) => {
      const li = el("li", "completion");
      li.id = `completion-${i}`;
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", String(i === chosen));
      li.append(el("b", undefined, c.name), el("span", undefined, ` ${c.description}`));
      li.dataset.name = c.name;
      li.addEventListener("mousedown", (e) => {
        e.preventDefault();
        complete(c.name);
      });
      return li;
    }),
  );
  list.hidden = matches.length === 0;
  input.setAttribute("aria-expanded", String(matches.length > 0));
  if (chosen >= 0) input.setAttribute("aria-activedescendant", `completion-${chosen}`);
  else input.removeAttribute("aria-activedescendant");
  list.querySelector(`#completion-${chosen}`)?.scrollIntoView({ block: "nearest" });
}

function complete(name: string): void {
  const input = $("input") as HTMLTextAreaElement;
  input.value = `${name} `;
  input.focus();
  chosen = -1;
  updateCompletions();
}

function setupComposer(): void {
  const input = $("input") as HTMLTextAreaElement;
  input.addEventListener("input", () => {
    chosen = -1;
    updateCompletions();
  });
  input.addEventListener("keydown", (e) => {
    const options = [...document.querySelectorAll<HTMLElement>("#completions li")];
    const open = options.length > 0 && !$("completions").hidden;
    if (open && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
      e.preventDefault();
      chosen = (chosen + (e.key === "ArrowDown" ? 1 : options.length - 1 + (chosen < 0 ? 1 : 0))) % options.length;
      updateCompletions();
    } else if (open && e.key === "Escape") {
      e.preventDefault();
      $("completions").hidden = true;
    } else if (open && (e.key === "Tab" || (e.key === "Enter" && chosen >= 0))) {
      e.preventDefault();
      complete(options[Math.max(chosen, 0)]!.dataset.name!);
    } else if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("composer").dispatchEvent(new Event("submit", { cancelable: true }));
    }
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    try {
      // Kept (localStorage) until the server has it; shown under the messages meanwhile.
      outbox.add(currentThread, text);
    } catch (err: any) {
      $("messages").append(el("div", "item error", String(err?.message ?? err)));
      return;
    }
    input.value = "";
    updateCompletions();
  });
}

// ---- approvals ----

const approvals = new ApprovalQueue({
  callerText,
  commands: (windowId) => desk.find(windowId)?.commands(),
  changed(total, perThread) {
    document.title = total ? `(${total}) ${TITLE}` : TITLE;
    threads.showApprovals(perThread);
  },
});
const elicitations = new Elicitations($("elicitation") as HTMLDialogElement);

// ---- start ----

/** Takes `?token=` out of the address bar and the history entry: the page's own response set
 * the cookie (HttpOnly) that the page's later requests carry instead, so the token need not
 * stay where anyone looking at the screen, the history or a shared link would find it. */
function forgetToken(): void {
  const url = new URL(location.href);
  if (!url.searchParams.has("token")) return;
  url.searchParams.delete("token");
  history.replaceState(history.state, "", url.pathname + url.search + url.hash);
}

/** What the top bar says about the connection. */
function showConnection(state: ConnectionState, text: string): void {
  const status = $("status");
  status.textContent = text;
  status.dataset.state = state;
  document.body.dataset.connection = state;
  $("reconnect-now").hidden = state === "connected" || state === "connecting";
  $("reconnect-now").textContent = state === "offline" ? "Retry" : "Retry now";
  outbox?.refresh();
}

/** A connection is up: on the first, the page is set up; on a later one, it catches up. */
async function connected(next: AppServerClient, first: boolean): Promise<void> {
  client = next;
  client.onApproval((params) => approvals.ask(params) as Json);
  client.handle("mcp/elicitation/request", (params) => elicitations.ask(params) as Json);
  if (first) {
    commands = ((await client.request("command/list", {} as Json)) as Json).commands;
    await Promise.all([threads.load(), desk.loadCatalog()]);
    const previous = sessionStorage.getItem(THREAD_KEY);
    if (previous) await openThread(previous).catch(() => sessionStorage.removeItem(THREAD_KEY));
    desk.restore();
    document.body.dataset.ready = "true";
  } else {
    desk.attach(client);
    await catchUp();
    await threads.load();
  }
  await outbox.flush();
}

/** After a reconnect: the current thread's events since the last one seen (`afterSeq`), or the
 * thread read again when the server no longer has them. */
async function catchUp(): Promise<void> {
  const id = currentThread;
  if (!id) return;
  const afterSeq = lastSeqs.get(id);
  if (afterSeq === undefined) return openThread(id);
  try {
    await client.request("thread/subscribe", { threadId: id, afterSeq } as Json);
  } catch (err) {
    if (!(err instanceof RpcError) || err.code !== -32602) throw err;
    // The server cannot serve those events (too old, or its numbering restarted): read the
    // thread again, and take its events as they come from now on.
    lastSeqs.delete(id);
    await openThread(id);
  }
}

/** Per thread, the highest event number seen (for `afterSeq` on reconnect). */
const lastSeqs = new Map<string, number>();

function received(n: Notification): void {
  const numbered = seqOf(n);
  if (numbered) {
    const last = lastSeqs.get(numbered.threadId);
    if (last !== undefined && numbered.seq <= last) return;
    lastSeqs.set(numbered.threadId, numbered.seq);
  }
  onNotification(n);
}

let outbox: Outbox;

function main(): void {
  forgetToken();
  setupTheme($("theme-toggle") as HTMLButtonElement);
  setupKeys({ newThread: () => void startThread(), approvals: () => approvals.open(), tile: () => desk.tile() });
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  const connection = new Connection(
    {
      url,
      clientInfo: { name: "appserver-desktop", version: "0.1.0" },
      capabilities: { approvalSupport: true, commandExecutionStreaming: true, extensions: { appProtocol: true } } as Json,
    },
    {
      connected,
      disconnected: () => {
        // Its approvals cannot be answered on another connection (the server asks the new one
        // about those still pending); its turn state is unknown.
        const pending = approvals.size;
        approvals.clear();
        if (pending) {
          const text = `The connection dropped with ${pending} approval${pending === 1 ? "" : "s"} pending: still-waiting requests are asked again once it is back.`;
          $("messages").append(el("div", "item systemNotice", text));
        }
        setRunning(undefined);
      },
      notification: received,
      state: showConnection,
    },
  );
  outbox = new Outbox(
    {
      send: sendEntry,
      delivered: entryDelivered,
      connected: () => connection.connected,
      current: () => currentThread,
      title: (threadId) => (threads.name(threadId) === undefined ? threadId : threadTitle(threads.name(threadId))),
    },
    $("outbox"),
  );
  $("reconnect-now").addEventListener("click", () => connection.retryNow());
  listen(
    () => desk.frames(),
    (why) => {
      ignoredMessages++;
      $("ignored").textContent = `ignored ${ignoredMessages} foreign message${ignoredMessages === 1 ? "" : "s"}`;
      $("ignored").dataset.count = String(ignoredMessages);
      console.warn(`desktop: ignored ${why}`);
    },
  );
  setupComposer();
  $("new-thread").addEventListener("click", () => void startThread());
  $("stop").addEventListener("click", () => void stopTurn().catch((err) => $("messages").append(el("div", "item error", `Cannot stop: ${String(err?.message ?? err)}`))));
  connection.start();
}

main();
