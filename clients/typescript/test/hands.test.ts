// The agent's hands through the SDK's typed events: a command's `commandExecution` item and its
// output deltas and a file write's diff (the built-in agent's /exec and /write, no model), and a
// background terminal's `terminal/*` (a mock model calling `Exec` with `runInBackground`).

import assert from "node:assert/strict";
import { test } from "node:test";

import { AppServerClient, type Notification } from "../src/index.js";
import type { CommandExecutionOutputDeltaParams, TerminalEventParams, TurnDiffUpdatedParams } from "../src/index.js";
import { startMockModel, startServer, textReply, toolCallReply, within } from "./server.js";

const identity = { channelName: "test", userId: "user-1" };
const OPTIONS = { timeout: 60_000 };

async function collect(events: AsyncIterableIterator<Notification>, what: string): Promise<Notification[]> {
  const seen: Notification[] = [];
  await within(
    (async () => {
      for await (const n of events) seen.push(n);
    })(),
    what,
  );
  return seen;
}

async function command(client: AppServerClient, threadId: string, name: string, argsText: string): Promise<Notification[]> {
  const input = [{ type: "commandRef" as const, name, argsText, rawText: `/${name} ${argsText}` }];
  const { events } = await client.startTurn({ threadId, input });
  return collect(events, `/${name}`);
}

test("command output and file diffs arrive as typed events", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  const client = await AppServerClient.connect({ url: server.url, capabilities: { commandExecutionStreaming: true } });
  try {
    const { thread } = await client.request("thread/start", { identity });
    const exec = await command(client, thread.id, "exec", "printf 'a\\nb\\n'");
    const streamed = exec
      .filter((n) => n.method === "item/commandExecution/outputDelta")
      .map((n) => (n.params as CommandExecutionOutputDeltaParams).delta)
      .join("");
    const done = exec.find((n) => n.method === "item/completed" && n.params.item.type === "commandExecution");
    assert.ok(done?.method === "item/completed" && done.params.item.type === "commandExecution");
    assert.equal(done.params.item.payload.aggregatedOutput, streamed);
    assert.equal(streamed, "a\nb\n");
    assert.equal(done.params.item.payload.exitCode, 0);

    const write = await command(client, thread.id, "write", "notes.txt hello");
    const diff = write.find((n) => n.method === "turn/diff/updated");
    assert.equal((diff?.params as TurnDiffUpdatedParams).diff, "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello\n");
    const result = write.find((n) => n.method === "item/completed" && n.params.item.type === "toolResult");
    assert.ok(result?.method === "item/completed" && result.params.item.type === "toolResult");
    assert.equal(result.params.item.payload.fileChanges?.[0]?.kind, "add");
  } finally {
    await client.close();
    await server.stop();
  }
});

test("a background terminal is announced with its snapshot and can be stopped", OPTIONS, async () => {
  const args = JSON.stringify({ command: "echo up; sleep 300", runInBackground: true, yieldTimeMs: 300 });
  const mock = await startMockModel([toolCallReply("call_b", "Exec", args), textReply("Started.")]);
  const server = await startServer(["--approval-policy", "never", "--model", "mock-model", "--base-url", mock.baseUrl, "--api-key", "k"]);
  const client = await AppServerClient.connect({ url: server.url, capabilities: { backgroundTerminals: true } });
  try {
    const { thread } = await client.request("thread/start", { identity });
    const terminals = client.notifications((n) => n.method.startsWith("terminal/"));
    const { events } = await client.startTurn({ threadId: thread.id, input: [{ type: "text", text: "start it" }] });
    await collect(events, "the turn");
    const started = await within(terminals.next(), "terminal/started");
    assert.equal(started.value?.method, "terminal/started");
    const snapshot = (started.value?.params as TerminalEventParams).terminal;
    assert.equal(snapshot.threadId, thread.id);
    assert.equal(snapshot.backgroundReason, "runInBackground");
    const stopped = await client.request("terminal/stop", { sessionId: snapshot.sessionId });
    assert.equal(stopped.terminal.status, "killed");
    await assert.rejects(client.request("terminal/stop", { sessionId: "term_missing" }));
  } finally {
    await client.close();
    await server.stop();
    mock.server.close();
  }
});
