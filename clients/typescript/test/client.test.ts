// The TypeScript SDK against the real appserver binary: a streamed turn, an approval, a dynamic
// tool, an app the agent drives with /command, reconnecting with the app restored by replay,
// typed errors, and the stdio transport.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { AppServerClient, RpcError, turnIdOf, type Notification } from "../src/index.js";
import { sheet, sheetManifest } from "./sheet.js";
import { serverBinary, startMockModel, startServer, textReply, toolCallReply, within } from "./server.js";

const identity = { channelName: "test", userId: "user-1", channelContext: "ctx-1" };
const OPTIONS = { timeout: 60_000 };

async function collect(events: AsyncIterable<Notification>): Promise<Notification[]> {
  const seen: Notification[] = [];
  for await (const n of events) seen.push(n);
  return seen;
}

function completedItems(events: Notification[], type: string): any[] {
  return events
    .filter((n) => n.method === "item/completed" && (n.params as any).item.type === type)
    .map((n) => (n.params as any).item.payload);
}

test("a turn streams to completion", OPTIONS, async () => {
  const server = await startServer();
  const client = await AppServerClient.connect({ url: server.url, clientInfo: { name: "ts-test", version: "1" } });
  try {
    assert.equal(client.serverInfo.serverInfo.protocolVersion, "1");
    const { thread } = await client.request("thread/start", { identity });
    const { turn, events } = await client.startTurn({ threadId: thread.id, input: [{ type: "text", text: "hello" }] });
    const seen = await within(collect(events), "the turn's events");
    assert.equal(seen[0]!.method, "turn/started");
    assert.equal(seen.at(-1)!.method, "turn/completed");
    const deltas = seen.filter((n) => n.method === "item/agentMessage/delta").map((n) => (n.params as any).delta as string);
    assert.ok(deltas.length > 1, "the answer streams in several deltas");
    assert.equal(completedItems(seen, "agentMessage")[0].text, deltas.join(""));
    assert.ok(seen.every((n) => (n.params as any).turn?.id === turn.id || (n.params as any).turnId === turn.id));
  } finally {
    client.close();
    await server.stop();
  }
});

test("an app is driven with /command and its approval is answered", OPTIONS, async () => {
  const server = await startServer();
  const host = await AppServerClient.connect({ url: server.url });
  const user = await AppServerClient.connect({ url: server.url });
  try {
    const app = sheet();
    const registration = await host.registerApp(sheetManifest, app.handlers);
    assert.match(registration.windowId, /^win_/);
    const approvals: any[] = [];
    user.onApproval((params) => {
      approvals.push(params);
      return { decision: "accept" };
    });
    const { thread } = await user.request("thread/start", { identity });
    const line = `/command ${registration.windowId} setCells {"cells":{"A1":"7"}}`;
    const { events } = await user.startTurn({ threadId: thread.id, input: [{ type: "text", text: line }] });
    const seen = await within(collect(events), "the turn's events");
    assert.equal(seen.at(-1)!.method, "turn/completed");
    assert.equal(approvals.length, 1);
    assert.equal(approvals[0].scopeKey, "app:sheet:setCells");
    assert.ok(seen.some((n) => n.method === "item/approval/resolved"));
    assert.deepEqual(app.cells, { A1: "7" });
    assert.equal(completedItems(seen, "toolResult")[0].success, true);
    const state = await user.request("app/query", { windowId: registration.windowId, stateKey: "cells" });
    assert.deepEqual(state.data, { A1: "7" });
  } finally {
    host.close();
    user.close();
    await server.stop();
  }
});

test("an app's streamed events reach other clients", OPTIONS, async () => {
  const server = await startServer();
  const host = await AppServerClient.connect({ url: server.url });
  const controller = await AppServerClient.connect({ url: server.url });
  try {
    const { windowId } = await host.registerApp(sheetManifest, sheet().handlers);
    const events = controller.notifications((n) => n.method === "app/event");
    const { result } = await controller.request("app/command", { windowId, command: "render", params: { steps: 2 } });
    assert.deepEqual(result, { runId: "run_1" });
    const seen: any[] = [];
    await within(
      (async () => {
        for await (const n of events) {
          seen.push(n.params);
          if (seen.length === 2) break;
        }
      })(),
      "the app's events",
    );
    assert.deepEqual(
      seen.map((p) => [p.windowId, p.runId, p.type, p.payload]),
      [
        [windowId, "run_1", "render.progress", { step: 1, of: 2 }],
        [windowId, "run_1", "render.progress", { step: 2, of: 2 }],
      ],
    );
  } finally {
    host.close();
    controller.close();
    await server.stop();
  }
});

test("a subscriber streams another client's turn per thread and per turn", OPTIONS, async () => {
  const server = await startServer(["--enable-debug-methods"]);
  const user = await AppServerClient.connect({ url: server.url });
  const watcher = await AppServerClient.connect({ url: server.url });
  try {
    const { thread } = await user.request("thread/start", { identity });
    await watcher.request("thread/subscribe", { threadId: thread.id });
    const threadEvents = watcher.threadEvents(thread.id);
    const { turn, events } = await user.startTurn({ threadId: thread.id, input: [{ type: "text", text: "hi" }] });
    const own = await within(collect(events), "the user's turn");
    // The watcher's thread stream: everything about the thread, up to the turn's end.
    const watched: Notification[] = [];
    await within(
      (async () => {
        for await (const n of threadEvents) {
          watched.push(n);
          if (n.method === "turn/completed") break;
        }
      })(),
      "the watcher's thread events",
    );
    const turnOnly = watched.filter((n) => turnIdOf(n) === turn.id).map((n) => n.method);
    assert.deepEqual(turnOnly, own.map((n) => n.method), "the subscriber sees the same turn");
    assert.ok(watched.some((n) => n.method === "thread/runtimeChanged"), "and the thread's other notifications");
    // A second turn, held open by the debug-block tool so that the watcher's turnEvents stream
    // certainly exists before the turn can end; released, it streams to its end.
    const blocked = [{ type: "commandRef" as const, name: "debug-block", argsText: "", rawText: "/debug-block" }];
    const second = await user.request("turn/start", { threadId: thread.id, input: blocked });
    const perTurnStream = watcher.turnEvents(thread.id, second.turn.id);
    await watcher.request("debug/release" as any, { threadId: thread.id } as any);
    const perTurn = await within(collect(perTurnStream), "the second turn");
    assert.ok(perTurn.every((n) => turnIdOf(n) === second.turn.id));
    assert.equal(perTurn.at(-1)!.method, "turn/completed");
  } finally {
    user.close();
    watcher.close();
    await server.stop();
  }
});

test("a declined approval fails the app command", OPTIONS, async () => {
  const server = await startServer();
  const host = await AppServerClient.connect({ url: server.url });
  const user = await AppServerClient.connect({ url: server.url });
  try {
    const app = sheet();
    const { windowId } = await host.registerApp(sheetManifest, app.handlers);
    user.onApproval(() => ({ decision: "decline" }));
    const { thread } = await user.request("thread/start", { identity });
    const line = `/command ${windowId} setCells {"cells":{"A1":"7"}}`;
    const { events } = await user.startTurn({ threadId: thread.id, input: [{ type: "text", text: line }] });
    const seen = await within(collect(events), "the turn's events");
    assert.equal(completedItems(seen, "toolResult")[0].success, false);
    assert.deepEqual(app.cells, {}, "the app was never asked");
  } finally {
    host.close();
    user.close();
    await server.stop();
  }
});

test("a dynamic tool call is answered by its handler", OPTIONS, async () => {
  const mock = await startMockModel([toolCallReply("call_d", "review__lookup", '{"q":"x"}'), textReply("Found it.")]);
  const server = await startServer(["--model", "mock-model", "--base-url", mock.baseUrl, "--api-key", "k"]);
  const client = await AppServerClient.connect({ url: server.url });
  try {
    const calls: any[] = [];
    client.onToolCall((params) => {
      calls.push(params);
      return { success: true, contentItems: [{ type: "text", text: "x is 7" }] };
    });
    const dynamicTools = [
      { namespace: "review", name: "lookup", description: "Look something up", inputSchema: { type: "object", properties: { q: { type: "string" } } } },
    ];
    const { thread } = await client.request("thread/start", { identity, dynamicTools });
    const { events } = await client.startTurn({ threadId: thread.id, input: [{ type: "text", text: "look up x" }] });
    const seen = await within(collect(events), "the turn's events");
    assert.equal(seen.at(-1)!.method, "turn/completed");
    assert.equal(calls.length, 1);
    assert.deepEqual([calls[0].namespace, calls[0].tool, calls[0].arguments], ["review", "lookup", { q: "x" }]);
    const item = completedItems(seen, "dynamicToolCall")[0];
    assert.equal(item.success, true);
    assert.equal(item.contentItems[0].text, "x is 7");
    const last = (mock.requests[1] as any).messages.at(-1);
    assert.deepEqual(last, { role: "tool", tool_call_id: "call_d", content: "x is 7" });
  } finally {
    client.close();
    await server.stop();
    mock.server.close();
  }
});

test("a host reconnects and its app comes back by replay", OPTIONS, async () => {
  const server = await startServer();
  const host = await AppServerClient.connect({ url: server.url, reconnect: { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 50 } });
  const controller = await AppServerClient.connect({ url: server.url });
  try {
    const app = sheet();
    const { windowId } = await host.registerApp(sheetManifest, app.handlers);
    await controller.request("app/command", { windowId, command: "setCells", params: { cells: { A1: "1" } } });
    await controller.request("app/command", { windowId, command: "setCells", params: { cells: { B2: "2" } } });
    assert.equal(app.resets, 1);

    const back = new Promise<void>((resolve) => host.onReconnect(resolve));
    host.dropConnection();
    await within(back, "the reconnect");
    assert.equal(app.resets, 2, "the state was reset before re-registering");
    assert.deepEqual(app.received.slice(2), [["setCells", true], ["setCells", true]], "the log was replayed");
    assert.deepEqual(app.cells, { A1: "1", B2: "2" });
    const state = await controller.request("app/query", { windowId, stateKey: "cells" });
    assert.deepEqual(state.data, { A1: "1", B2: "2" });
    const { apps } = await controller.request("app/list", {});
    assert.equal(apps.find((a) => a.windowId === windowId)?.live, true);
    // The host answers live commands again.
    await controller.request("app/command", { windowId, command: "setCells", params: { cells: { C3: "3" } } });
    assert.equal((app.cells as Record<string, string>)["C3"], "3");
  } finally {
    host.close();
    controller.close();
    await server.stop();
  }
});

test("a bad request is a typed error with the JSON-RPC code", OPTIONS, async () => {
  const server = await startServer();
  const client = await AppServerClient.connect({ url: server.url });
  try {
    await assert.rejects(client.request("thread/read", { threadId: "thread_missing" }), (err: unknown) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32010);
      return true;
    });
    await assert.rejects(client.request("turn/start", { threadId: 7 } as any), (err: unknown) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32602);
      assert.match(err.message, /Invalid params/);
      return true;
    });
    await assert.rejects(client.request("app/query", { windowId: "win_none", stateKey: "x" }), (err: unknown) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, -32070);
      assert.equal(err.appCode, "APP_NOT_FOUND");
      return true;
    });
  } finally {
    client.close();
    await server.stop();
  }
});

test("a server with a WebSocket token is reached with the token and refused without", OPTIONS, async () => {
  const server = await startServer(["--ws-token", "s3cret"]);
  try {
    await assert.rejects(AppServerClient.connect({ url: server.url }), /401|cannot connect/);
    const client = await AppServerClient.connect({ url: server.url, token: "s3cret" });
    assert.equal(client.serverInfo.serverInfo.name, "dotcraft");
    client.close();
  } finally {
    await server.stop();
  }
});

test("the stdio transport spawns the server", OPTIONS, async () => {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-ts-stdio-"));
  const client = await AppServerClient.connect({
    spawn: { command: serverBinary(), args: ["--workspace", workspace, "--listen", "stdio://"] },
  });
  try {
    const { thread } = await client.request("thread/start", { identity });
    const { events } = await client.startTurn({ threadId: thread.id, input: [{ type: "text", text: "hi" }] });
    const seen = await within(collect(events), "the turn's events");
    assert.equal(seen.at(-1)!.method, "turn/completed");
  } finally {
    client.close();
    rmSync(workspace, { recursive: true, force: true });
  }
});
