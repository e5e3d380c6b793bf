// The quickstart of docs/clients.md: start a thread, stream a turn, answer an approval, host an app.
// `node dist/examples/quickstart.js ws://127.0.0.1:8080/ws` (the test suite runs it).

import { AppServerClient, AppError, RpcError } from "../src/index.js";

// Connect over WebSocket (or: { spawn: { command: "appserver", args: ["--listen", "stdio://"] } }).
const client = await AppServerClient.connect({
  url: process.argv[2] ?? "ws://127.0.0.1:8080/ws",
  clientInfo: { name: "my-ide", version: "1.0.0" },
  reconnect: { initialDelayMs: 100, maxDelayMs: 5000 },
});

// Answer approvals (gated tool calls and app commands) and dynamic tools.
client.onApproval(async (req) => {
  console.log(`approve ${req.approvalType} ${req.operation}?`);
  return { decision: "accept" }; // or acceptForSession, acceptAlways, decline, cancel
});
client.onToolCall(async (call) => ({ success: true, contentItems: [{ type: "text", text: `ran ${call.tool}` }] }));

// Host an app: the agent reads and drives it with app_query / app_command (or /query, /command).
const cells: Record<string, string> = {};
const sheet = await client.registerApp(
  {
    appId: "sheet",
    name: "Sheet",
    state: { cells: { description: "All cell values" } },
    commands: { setCells: { description: "Set cells", params: { type: "object", required: ["cells"] } } },
  },
  {
    query: (key) => {
      if (key === "cells") return cells;
      throw new AppError("INVALID_PARAMS", `unknown state key ${key}`);
    },
    commands: {
      setCells: (params: { cells: Record<string, string> }) => {
        Object.assign(cells, params.cells);
        return { ok: true };
      },
    },
    reset: () => { for (const k of Object.keys(cells)) delete cells[k]; }, // the replay rebuilds it
  },
);

// Start a thread and stream a turn to its end.
const { thread } = await client.request("thread/start", { identity: { channelName: "my-ide", userId: "me" } });
const { events } = await client.startTurn({
  threadId: thread.id,
  input: [{ type: "text", text: `/command ${sheet.windowId} setCells {"cells":{"A1":"42"}}` }],
});
for await (const n of events) {
  if (n.method === "item/agentMessage/delta") process.stdout.write(n.params.delta);
  if (n.method === "turn/completed") console.log("\ndone:", n.params.turn.status);
}

// Typed errors carry the JSON-RPC code.
try {
  await client.request("thread/read", { threadId: "thread_missing" });
} catch (err) {
  if (err instanceof RpcError) console.log(err.code); // -32010
}

// Unregister the app, forgetting its log: without this the server keeps a dead "Sheet" window
// (and its log, to replay to a host that comes back) after every run.
await client.unregisterApp(sheet.windowId, true);
client.close();
