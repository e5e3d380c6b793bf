// Test support: starts the real `appserver` binary on 127.0.0.1 port 0 in a fresh workspace and
// reads its "listening on" line; a mock OpenAI-compatible model that serves scripted replies; a
// TCP proxy whose connections the test can cut, to force a client to reconnect.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect as tcpConnect, createServer as createTcpServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The bound on every wait in the tests. */
export const TIMEOUT_MS = 20_000;

/** `$APPSERVER_BIN`, or `target/debug/appserver` of this repository (`cargo build -p appserver`). */
export function serverBinary(): string {
  if (process.env.APPSERVER_BIN) return process.env.APPSERVER_BIN;
  const here = dirname(fileURLToPath(import.meta.url)); // clients/typescript/dist/test
  return resolve(here, "../../../../target/debug/appserver");
}

/** Rejects after `ms` unless `promise` settles first. */
export function within<T>(promise: Promise<T>, what: string, ms = TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface RunningServer {
  url: string;
  workspace: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts a server on WebSocket (port 0) with the given extra arguments. */
export async function startServer(args: string[] = []): Promise<RunningServer> {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-ts-"));
  const env = { ...process.env };
  for (const v of ["APPSERVER_MODEL", "APPSERVER_BASE_URL", "APPSERVER_API_KEY"]) delete env[v];
  const child = spawn(serverBinary(), ["--workspace", workspace, "--listen", "ws://127.0.0.1:0", ...args], {
    stdio: ["pipe", "ignore", "pipe"],
    env,
  });
  let stderr = "";
  const url = await within(
    new Promise<string>((resolve, reject) => {
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (chunk: string) => {
        stderr += chunk;
        const match = /appserver: listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) resolve(match[1]!.endsWith("/ws") ? match[1]! : `${match[1]}/ws`);
      });
      child.on("error", reject);
      child.on("exit", (code) => reject(new Error(`server exited (${code}) before listening:\n${stderr}`)));
    }),
    "the server's address",
  );
  return {
    url,
    workspace,
    process: child,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGKILL");
        await within(exited, "the server to exit");
      }
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/** A mock OpenAI-compatible model: each POST gets the next scripted list of SSE chunks. */
export async function startMockModel(script: unknown[][]): Promise<{ baseUrl: string; server: Server; requests: unknown[] }> {
  const requests: unknown[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push(body ? JSON.parse(body) : null);
      const chunks = script.shift();
      if (!chunks) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the mock has no more replies" } }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, server, requests };
}

/** SSE chunks of a model reply that calls one tool. */
export function toolCallReply(id: string, name: string, args: string): unknown[] {
  return [
    { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: args } }] } }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
    { choices: [], usage: { prompt_tokens: 20, completion_tokens: 5 } },
  ];
}

/** SSE chunks of a plain text reply. */
export function textReply(text: string): unknown[] {
  return [
    { choices: [{ index: 0, delta: { content: text }, finish_reason: null }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } },
  ];
}

export interface Proxy {
  /** The server's WebSocket URL through the proxy. */
  url: string;
  /** Cuts every connection and refuses new ones (they are closed at once) until `resume()`. */
  cut(): void;
  resume(): void;
  close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 port 0 in front of `url`'s host and port. */
export async function startProxy(url: string): Promise<Proxy> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createTcpServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(Number(target.port), target.hostname);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(a);
      a.on("error", () => b.destroy());
      a.on("close", () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const proxied = new URL(url);
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    cut() {
      refusing = true;
      for (const socket of [...sockets]) socket.destroy();
    },
    resume() {
      refusing = false;
    },
    async close() {
      for (const socket of [...sockets]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
