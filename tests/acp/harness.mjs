// Test support: a server on WebSocket (port 0) in a fresh workspace, `appserver acp` spawned
// against it with the official ACP TypeScript SDK on its stdio (the editor's side), and a small
// JSON-RPC client of the server's own protocol over WebSocket (another client of the same
// threads). Every wait is bounded.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

import * as acp from "@agentclientprotocol/sdk";

export const TIMEOUT = 20_000;
const repo = resolve(fileURLToPath(import.meta.url), "../../..");
export const BIN = process.env.APPSERVER_BIN ?? join(repo, "target", "debug", "appserver");

export function within(promise, what, ms = TIMEOUT) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

function serverEnv() {
  const env = { ...process.env };
  for (const name of ["APPSERVER_MODEL", "APPSERVER_BASE_URL", "APPSERVER_API_KEY"]) delete env[name];
  return env;
}

/** A server listening on ws://127.0.0.1:0 in a fresh workspace. */
export async function startServer(args = []) {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-acp-"));
  const child = spawn(BIN, ["--workspace", workspace, "--listen", "ws://127.0.0.1:0", ...args], {
    stdio: ["pipe", "ignore", "pipe"],
    env: serverEnv(),
  });
  let seen = "";
  const url = await within(
    new Promise((resolveUrl, reject) => {
      child.stderr.on("data", (chunk) => {
        seen += chunk.toString();
        const match = seen.match(/appserver: listening on (ws:\/\/\S+)/);
        if (match) resolveUrl(match[1]);
      });
      child.on("exit", () => reject(new Error(`server exited:\n${seen}`)));
    }),
    "listening line",
  );
  return {
    url,
    workspace,
    async stop() {
      child.kill("SIGKILL");
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/**
 * `appserver acp --workspace W` driven by the SDK's client side. `handlers` answer the agent's
 * requests (session/request_permission, fs/*, terminal/*); every session/update is recorded.
 */
export function startEditor(workspace, handlers = {}, capabilities = {}) {
  const child = spawn(BIN, ["acp", "--workspace", workspace], { stdio: ["pipe", "pipe", "pipe"], env: serverEnv() });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk.toString()));
  const updates = [];
  const waiters = [];
  const requests = [];
  let app = acp.client({ name: "acp-sdk-test" }).onNotification("session/update", ({ params }) => {
    updates.push(params);
    for (const waiter of [...waiters]) waiter();
  });
  for (const [method, handler] of Object.entries(handlers)) {
    app = app.onRequest(method, async ({ params }) => {
      requests.push({ method, params });
      return handler(params);
    });
  }
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const connection = app.connect(stream);
  const agent = connection.agent;
  return {
    agent,
    updates,
    requests,
    stderr: () => stderr,
    async initialize() {
      return within(
        agent.request("initialize", {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...capabilities },
          clientInfo: { name: "acp-sdk-test", version: "1.0.0" },
        }),
        "initialize answer",
      );
    },
    /** Waits until `predicate(updates)` holds. */
    async until(predicate, what) {
      if (predicate(updates)) return;
      await within(
        new Promise((done) => {
          const check = () => {
            if (predicate(updates)) {
              waiters.splice(waiters.indexOf(check), 1);
              done();
            }
          };
          waiters.push(check);
        }),
        what,
      );
    },
    async close() {
      child.stdin.end();
      await within(new Promise((done) => (child.exitCode !== null ? done() : child.on("exit", done))), "acp exit");
    },
  };
}

/** The update kinds of a session, in order. */
export function kinds(updates, sessionId) {
  return updates.filter((u) => u.sessionId === sessionId).map((u) => u.update.sessionUpdate);
}

/** The text of every agent_message_chunk of a session. */
export function agentText(updates, sessionId) {
  return updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk")
    .map((u) => u.update.content.text)
    .join("");
}

/** A JSON-RPC client of appserver's own protocol over WebSocket (Node's WebSocket). */
export async function wsClient(url, onRequest = async () => ({})) {
  const socket = new WebSocket(url);
  await within(new Promise((done, fail) => {
    socket.onopen = done;
    socket.onerror = fail;
  }), "websocket open");
  let next = 1;
  const pending = new Map();
  const notifications = [];
  const waiting = [];
  socket.onmessage = async (event) => {
    const message = JSON.parse(event.data);
    if (message.id !== undefined && message.method) {
      const result = await onRequest(message.method, message.params);
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: message.id, result }));
    } else if (message.id !== undefined) {
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    } else {
      notifications.push(message);
      for (const waiter of [...waiting]) waiter();
    }
  };
  const client = {
    notifications,
    async request(method, params) {
      const id = next++;
      const answer = await within(
        new Promise((done) => {
          pending.set(id, done);
          socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
        }),
        `answer to ${method}`,
      );
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result;
    },
    /** Waits for a notification `method` whose params satisfy `predicate`. */
    async notified(method, predicate = () => true) {
      const found = () => notifications.find((n) => n.method === method && predicate(n.params));
      if (found()) return found();
      return within(
        new Promise((done) => {
          const check = () => {
            if (found()) {
              waiting.splice(waiting.indexOf(check), 1);
              done(found());
            }
          };
          waiting.push(check);
        }),
        method,
      );
    },
    close() {
      socket.close();
    },
  };
  await client.request("initialize", {
    clientInfo: { name: "ws-test", version: "1.0.0" },
    capabilities: { approvalSupport: false },
  });
  socket.send(JSON.stringify({ jsonrpc: "2.0", method: "initialized", params: {} }));
  return client;
}
