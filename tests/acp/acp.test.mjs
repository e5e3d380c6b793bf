// `appserver acp` driven by the official ACP TypeScript SDK (@agentclientprotocol/sdk, its client
// side) as an editor would, against a server the test also reaches over WebSocket.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { agentText, kinds, startEditor, startServer, within, wsClient } from "./harness.mjs";

async function session(editor, server) {
  const created = await within(editor.agent.request("session/new", { cwd: server.workspace, mcpServers: [] }), "session/new");
  assert.match(created.sessionId, /^thread_/);
  return created;
}

test("initialize, a new session and a streamed prompt; the session is a thread WebSocket clients see", async () => {
  const server = await startServer();
  const editor = startEditor(server.workspace);
  try {
    const init = await editor.initialize();
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.deepEqual(init.agentCapabilities.sessionCapabilities, { list: {} });
    assert.equal(init.agentInfo.name, "appserver");
    const { sessionId, modes } = await session(editor, server);
    assert.equal(modes.currentModeId, "agent");
    await editor.until((u) => kinds(u, sessionId).includes("available_commands_update"), "the commands");
    const commands = editor.updates.find((u) => u.update.sessionUpdate === "available_commands_update");
    assert.ok(commands.update.availableCommands.some((c) => c.name === "exec"));

    const answer = await within(
      editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello there" }] }),
      "prompt answer",
    );
    assert.equal(answer.stopReason, "end_turn");
    const chunks = kinds(editor.updates, sessionId).filter((k) => k === "agent_message_chunk");
    assert.ok(chunks.length > 1, `streamed in several chunks, got ${chunks.length}`);
    assert.match(agentText(editor.updates, sessionId), /No language model is configured/);

    const ws = await wsClient(server.url);
    const read = await ws.request("thread/read", { threadId: sessionId, includeTurns: true });
    assert.equal(read.thread.originChannel, "acp");
    const items = read.thread.turns[0].items.map((i) => i.type);
    assert.deepEqual(items, ["userMessage", "agentMessage"]);
    assert.equal(read.thread.turns[0].items[0].payload.text, "hello there");
    const listed = await within(editor.agent.request("session/list", {}), "session/list");
    assert.ok(listed.sessions.some((s) => s.sessionId === sessionId && s.cwd === server.workspace));
    await within(editor.agent.request("session/set_mode", { sessionId, modeId: "plan" }), "set_mode");
    const after = await ws.request("thread/read", { threadId: sessionId });
    assert.equal(after.thread.configuration.mode, "plan");
    ws.close();
  } finally {
    await editor.close();
    await server.stop();
  }
});

test("a tool call asks for permission: allowed once, rejected once", async () => {
  const server = await startServer();
  const choices = ["accept", "decline"];
  const editor = startEditor(server.workspace, {
    "session/request_permission": async (params) => ({
      outcome: { outcome: "selected", optionId: choices.shift() },
    }),
  });
  try {
    await editor.initialize();
    const { sessionId } = await session(editor, server);
    const prompt = (text) =>
      within(editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }), text);
    assert.equal((await prompt("/exec echo allowed-once")).stopReason, "end_turn");
    assert.equal((await prompt("/exec echo rejected-once")).stopReason, "end_turn");

    const asked = editor.requests.filter((r) => r.method === "session/request_permission");
    assert.equal(asked.length, 2);
    assert.equal(asked[0].params.toolCall.kind, "execute");
    assert.deepEqual(asked[0].params.options.map((o) => o.kind), ["allow_once", "allow_always", "allow_always", "reject_once"]);
    const calls = editor.updates.filter((u) => u.update.sessionUpdate === "tool_call");
    assert.equal(calls.length, 2);
    assert.equal(calls[0].update.kind, "execute");
    assert.equal(asked[0].params.toolCall.toolCallId, calls[0].update.toolCallId, "the permission names the tool call");
    const finished = (id) =>
      editor.updates.filter((u) => u.update.toolCallId === id && ["completed", "failed"].includes(u.update.status));
    const first = finished(calls[0].update.toolCallId);
    assert.equal(first.at(-1).update.status, "completed");
    assert.match(JSON.stringify(first.at(-1).update.content), /allowed-once/);
    const second = finished(calls[1].update.toolCallId);
    assert.equal(second.at(-1).update.status, "failed");
    assert.match(JSON.stringify(second.at(-1).update.content), /rejected/);
  } finally {
    await editor.close();
    await server.stop();
  }
});

test("file tools go through the editor: fs/write_text_file holds the edit, fs/read_text_file reads the buffer", async () => {
  const server = await startServer(["--approval-policy", "never"]);
  const buffers = new Map();
  const editor = startEditor(
    server.workspace,
    {
      "fs/write_text_file": async ({ path, content }) => {
        buffers.set(path, content);
        return {};
      },
      "fs/read_text_file": async ({ path }) => ({ content: buffers.get(path) ?? "" }),
    },
    { fs: { readTextFile: true, writeTextFile: true } },
  );
  try {
    await editor.initialize();
    const { sessionId } = await session(editor, server);
    const prompt = (text) =>
      within(editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }), text);
    await prompt("/write notes.txt unsaved words");
    const path = join(server.workspace, "notes.txt");
    const write = editor.requests.find((r) => r.method === "fs/write_text_file");
    assert.deepEqual(write.params, { sessionId, path, content: "unsaved words\n" });
    assert.equal(existsSync(path), false, "the editor holds the change; the server wrote nothing");
    const diff = editor.updates.flatMap((u) => u.update.content ?? []).find((c) => c.type === "diff");
    assert.deepEqual(diff, { type: "diff", path, oldText: null, newText: "unsaved words\n" });

    await prompt("/read notes.txt");
    const read = editor.requests.find((r) => r.method === "fs/read_text_file");
    assert.equal(read.params.path, path);
    assert.match(agentText(editor.updates, sessionId), /unsaved words/);
  } finally {
    await editor.close();
    await server.stop();
  }
});

test("Exec runs in the editor's terminal, confined by the server's sandbox helper", async () => {
  const server = await startServer(["--approval-policy", "never"]);
  const terminals = new Map();
  let next = 0;
  const editor = startEditor(
    server.workspace,
    {
      "terminal/create": async ({ command, args, cwd }) => {
        const id = `term_${++next}`;
        const child = spawn(command, args, { cwd });
        const entry = { output: "", exit: null };
        entry.done = new Promise((done) => child.on("exit", (code, signal) => done({ exitCode: code, signal })));
        child.stdout.on("data", (d) => (entry.output += d));
        child.stderr.on("data", (d) => (entry.output += d));
        entry.done.then((status) => (entry.exit = status));
        terminals.set(id, entry);
        return { terminalId: id };
      },
      "terminal/wait_for_exit": async ({ terminalId }) => terminals.get(terminalId).done,
      "terminal/output": async ({ terminalId }) => {
        const entry = terminals.get(terminalId);
        return { output: entry.output, truncated: false, exitStatus: entry.exit };
      },
      "terminal/kill": async () => ({}),
      "terminal/release": async ({ terminalId }) => {
        terminals.get(terminalId).released = true;
        return {};
      },
    },
    { terminal: true },
  );
  try {
    await editor.initialize();
    const { sessionId } = await session(editor, server);
    const answer = await within(
      editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/exec echo from-the-editor" }] }),
      "prompt answer",
    );
    assert.equal(answer.stopReason, "end_turn");
    const create = editor.requests.find((r) => r.method === "terminal/create");
    assert.equal(create.params.sessionId, sessionId);
    assert.equal(create.params.args[0], "sandbox-exec", "the command stays confined");
    assert.equal(create.params.args.at(-1), "echo from-the-editor");
    assert.ok(terminals.get("term_1").released, "the terminal is released");
    const shown = editor.updates.flatMap((u) => u.update.content ?? []).filter((c) => c.type === "terminal");
    assert.ok(shown.some((c) => c.terminalId === "term_1"), "the tool call shows the terminal");
    assert.match(agentText(editor.updates, sessionId), /from-the-editor/);
  } finally {
    await editor.close();
    await server.stop();
  }
});

test("session/cancel mid-turn interrupts the turn and the prompt ends cancelled", async () => {
  const server = await startServer(["--approval-policy", "never"]);
  const editor = startEditor(server.workspace);
  try {
    await editor.initialize();
    const { sessionId } = await session(editor, server);
    const answer = editor.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/exec sleep 30" }] });
    await editor.until(
      (u) => u.some((x) => x.sessionId === sessionId && x.update.sessionUpdate === "tool_call_update" && x.update.status === "in_progress"),
      "the command running",
    );
    await editor.agent.notify("session/cancel", { sessionId });
    const result = await within(answer, "the cancelled prompt's answer", 10_000);
    assert.equal(result.stopReason, "cancelled");
    const ws = await wsClient(server.url);
    const read = await ws.request("thread/read", { threadId: sessionId, includeTurns: true });
    assert.equal(read.thread.turns[0].status, "cancelled");
    ws.close();
  } finally {
    await editor.close();
    await server.stop();
  }
});

test("session/load of a thread started over WebSocket replays its history, then continues it", async () => {
  const server = await startServer(["--approval-policy", "never"]);
  const ws = await wsClient(server.url);
  const editor = startEditor(server.workspace);
  try {
    const { thread } = await ws.request("thread/start", {
      identity: { channelName: "desktop", userId: "me", workspacePath: server.workspace },
    });
    await ws.request("turn/start", { threadId: thread.id, input: [{ type: "text", text: "from the desktop" }] });
    await ws.notified("turn/completed", (p) => p.turn.threadId === thread.id);
    await editor.initialize();
    const loaded = await within(
      editor.agent.request("session/load", { sessionId: thread.id, cwd: server.workspace, mcpServers: [] }),
      "session/load",
    );
    assert.equal(loaded.modes.currentModeId, "agent");
    const replayed = kinds(editor.updates, thread.id);
    assert.deepEqual(replayed.slice(0, 2), ["user_message_chunk", "agent_message_chunk"]);
    assert.equal(editor.updates[0].update.content.text, "from the desktop");
    assert.match(editor.updates[1].update.content.text, /No language model/);

    const answer = await within(
      editor.agent.request("session/prompt", { sessionId: thread.id, prompt: [{ type: "text", text: "from the editor" }] }),
      "prompt answer",
    );
    assert.equal(answer.stopReason, "end_turn");
    const read = await ws.request("thread/read", { threadId: thread.id, includeTurns: true });
    assert.equal(read.thread.turns.length, 2);
    assert.equal(read.thread.turns[1].items[0].payload.text, "from the editor");
  } finally {
    ws.close();
    await editor.close();
    await server.stop();
  }
});

test("an unknown session and a prompt before initialize are refused", async () => {
  const server = await startServer();
  const editor = startEditor(server.workspace);
  try {
    await assert.rejects(editor.agent.request("session/new", { cwd: server.workspace, mcpServers: [] }), /initialize/);
    await editor.initialize();
    await assert.rejects(
      editor.agent.request("session/prompt", { sessionId: "thread_nope", prompt: [{ type: "text", text: "x" }] }),
      /unknown session/,
    );
    assert.equal(readFileSync(join(server.workspace, ".appserver", "server.lock"), "utf8").includes("wsUrl"), true);
  } finally {
    await editor.close();
    await server.stop();
  }
});
