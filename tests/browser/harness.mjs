// Support for the browser tests: the real appserver binary on 127.0.0.1 port 0 in a fresh
// workspace holding the example apps of clients/web/apps, and headless Chromium (Debian's
// /usr/bin/chromium, or $CHROMIUM) driven by playwright-core.

import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "../..");
/** The bound on every wait. */
export const TIMEOUT_MS = 20_000;
/** Where the screenshots go: target/screenshots, or $APPSERVER_SCREENSHOTS (`docs/images` to
 * refresh the ones docs/desktop.md shows), so a test run never changes tracked files. */
export const IMAGES = process.env.APPSERVER_SCREENSHOTS
  ? resolve(process.env.APPSERVER_SCREENSHOTS)
  : join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "screenshots");
mkdirSync(IMAGES, { recursive: true });

export function serverBinary() {
  return process.env.APPSERVER_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "debug/appserver");
}

export function within(promise, what, ms = TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Starts a server with the example apps in its workspace; `base` is its http:// origin.
 * `again: {workspace, port}` starts one on an earlier server's workspace and port (a restart). */
export async function startServer(args = [], again = undefined) {
  const workspace = again?.workspace ?? mkdtempSync(join(tmpdir(), "appserver-web-"));
  if (!again) {
    const apps = join(workspace, ".appserver/apps");
    mkdirSync(apps, { recursive: true });
    cpSync(join(root, "clients/web/apps"), apps, { recursive: true });
  }
  const env = { ...process.env };
  for (const v of ["APPSERVER_MODEL", "APPSERVER_BASE_URL", "APPSERVER_API_KEY"]) delete env[v];
  const listen = `ws://127.0.0.1:${again?.port ?? 0}`;
  const child = spawn(serverBinary(), ["--workspace", workspace, "--listen", listen, ...args], {
    stdio: ["pipe", "ignore", "pipe"],
    env,
  });
  let stderr = "";
  const url = await within(
    new Promise((resolve, reject) => {
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
        const match = /appserver: listening on ws:\/\/(\S+?)(\/ws)?\s/.exec(stderr);
        if (match) resolve(`http://${match[1]}`);
      });
      child.on("error", reject);
      child.on("exit", (code) => reject(new Error(`server exited (${code}) before listening:\n${stderr}`)));
    }),
    "the server's address",
  );
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGCONT");
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await within(exited, "the server to exit");
    }
  };
  return {
    base: url,
    port: Number(new URL(url).port),
    workspace,
    stderr: () => stderr,
    /** Kills the server (SIGKILL, as a crash would), keeping its workspace for a restart. */
    kill,
    /** Stops the server without closing anything (SIGSTOP: a hung process), and lets it go on. */
    pause: () => child.kill("SIGSTOP"),
    resume: () => child.kill("SIGCONT"),
    async stop() {
      await kill();
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    // A page answered by useWebDist has, to Chromium, no network address of its own: its
    // Local Network Access checks would then refuse it 127.0.0.1 (only while working on the page).
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", ...(process.env.APPSERVER_WEB_DIST ? ["--disable-features=LocalNetworkAccessChecks"] : [])],
    timeout: TIMEOUT_MS,
  });
}

/** While working on the page: with $APPSERVER_WEB_DIST (a clients/web/dist folder), the page's
 * own files are answered from there instead of the binary's embedded copy (the server's headers,
 * its Content-Security-Policy included, are kept), so a rebuilt bundle needs no rebuilt server.
 * CI never sets it: the suite tests what the binary serves. */
export async function useWebDist(page) {
  const dist = process.env.APPSERVER_WEB_DIST;
  if (!dist) return;
  const files = { "/": "index.html", "/assets/desktop.js": "desktop.js", "/assets/desktop.css": "desktop.css", "/assets/appserver-app.js": "appserver-app.js" };
  await page.route(
    (url) => url.pathname in files,
    async (route) => {
      const response = await route.fetch();
      const body = readFileSync(join(resolve(dist), files[new URL(route.request().url()).pathname]));
      await route.fulfill({ response, body });
    },
  );
}

/** A page on the desktop, ready (connected, threads and apps listed). */
export async function openDesktop(browser, base, path = "/", viewport = { width: 1400, height: 800 }, options = {}) {
  // `socket`: a handler for the page's WebSocket (Playwright's WebSocketRoute), set before the
  // page connects, for a test that holds or adds messages between the page and the server.
  const { socket, ...pageOptions } = options;
  const page = await browser.newPage({ viewport: viewport ?? { width: 1400, height: 800 }, ...pageOptions });
  page.setDefaultTimeout(TIMEOUT_MS);
  if (socket) await page.routeWebSocket(/\/ws(\?|$)/, socket);
  await useWebDist(page);
  const errors = [];
  page.on("pageerror", (err) => errors.push(String(err)));
  await page.goto(base + path);
  await page.waitForSelector("body[data-ready=true]");
  return { page, errors };
}

/** Sends a line through the composer. */
export async function say(page, text) {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
}

/** Opens an app from the Apps list; resolves with its window id once registered. */
export async function openApp(page, appId) {
  const before = await page.locator(`.window[data-app="${appId}"]`).count();
  await page.click(`#apps li[data-app="${appId}"]`);
  const win = page.locator(`.window[data-app="${appId}"]`).nth(before);
  await page.locator(`.window[data-app="${appId}"][data-window-id]`).nth(before).waitFor();
  return win.getAttribute("data-window-id");
}

/** A mock OpenAI-compatible model: each POST gets the next scripted list of SSE chunks (push more while running). */
export async function startMockModel(script = []) {
  const { createServer } = await import("node:http");
  const requests = [];
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
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    args: ["--model", "mock-model", "--base-url", `http://127.0.0.1:${port}/v1`, "--api-key", "test-key"],
    script,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** SSE chunks of a model reply that thinks aloud, then calls one tool. */
export function reasoningToolCall(reasoning, id, name, args) {
  return [
    { choices: [{ index: 0, delta: { reasoning_content: reasoning }, finish_reason: null }] },
    { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: args } }] } }] },
    { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
    { choices: [], usage: { prompt_tokens: 20, completion_tokens: 5 } },
  ];
}

/** SSE chunks of a plain text reply, in pieces. */
export function textReply(...pieces) {
  return [
    ...pieces.map((p) => ({ choices: [{ index: 0, delta: { content: p }, finish_reason: null }] })),
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    { choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } },
  ];
}

/** One JSON-RPC message over MCP streamable HTTP (plain fetch: the desktop test needs no MCP SDK);
 * the answer is a JSON body or the `data:` line of an SSE event. */
export async function mcpPost(base, session, message) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (session.id) headers["mcp-session-id"] = session.id;
  if (session.version) headers["mcp-protocol-version"] = session.version;
  const response = await fetch(`${base}/mcp`, { method: "POST", headers, body: JSON.stringify(message) });
  session.id ??= response.headers.get("mcp-session-id");
  const text = await response.text();
  if (!("id" in message)) return null;
  const data = text.startsWith("{") ? text : text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).find((l) => l.trim().startsWith("{"));
  if (!data) throw new Error(`no JSON-RPC answer from /mcp (${response.status}): ${text}`);
  return JSON.parse(data);
}

/** An outside agent on /mcp, initialized; `call(name, args)` sends a `tools/call` and resolves with its answer. */
export async function mcpAgent(base, name = "outside-agent") {
  const session = {};
  const init = await mcpPost(base, session, {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name, version: "1.0" } },
  });
  session.version = init.result.protocolVersion;
  await mcpPost(base, session, { jsonrpc: "2.0", method: "notifications/initialized" });
  let next = 2;
  return {
    call: (tool, args) => mcpPost(base, session, { jsonrpc: "2.0", id: next++, method: "tools/call", params: { name: tool, arguments: args } }),
  };
}

/** Waits until `fn` (run in the page) returns true: `page.waitForFunction` needs eval, which
 * the page's Content-Security-Policy refuses. */
export async function until(page, fn, arg, what = "a condition in the page") {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    if (await page.evaluate(fn, arg)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the MCP server `name` is ready, asked over a WebSocket of the page's own. */
export async function mcpReady(page, name) {
  const ready = await page.evaluate(
    ({ name, ms }) =>
      new Promise((resolve) => {
        const ws = new WebSocket(`ws://${location.host}/ws`);
        const deadline = Date.now() + ms;
        let id = 1;
        const send = (method, params) => ws.send(JSON.stringify({ jsonrpc: "2.0", id: id++, method, params }));
        ws.onopen = () => {
          send("initialize", { clientInfo: { name: "views-test", version: "1" }, capabilities: {} });
          ws.send(JSON.stringify({ jsonrpc: "2.0", method: "initialized", params: {} }));
          send("mcp/status/list", {});
        };
        ws.onmessage = (e) => {
          const m = JSON.parse(e.data);
          const servers = m.result?.servers;
          if (!servers) return;
          if (servers.some((s) => s.name === name && s.startupState === "ready")) {
            ws.close();
            resolve(true);
          } else if (Date.now() > deadline) {
            ws.close();
            resolve(false);
          } else setTimeout(() => send("mcp/status/list", {}), 50);
        };
        ws.onerror = () => resolve(false);
      }),
    { name, ms: TIMEOUT_MS },
  );
  assert.ok(ready, `the MCP server ${name} is ready`);
}

/** The view's frame (the sandbox proxy's iframe, the view written into it). */
export async function viewFrame(page, callId) {
  const handle = await page.locator(`.window.view[data-view="${callId}"] iframe`).elementHandle();
  return handle.contentFrame();
}

/** Evaluates `fn` in the view until it returns a truthy value (the view may still be loading). */
export async function inView(frame, fn, arg, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await frame.evaluate(fn, arg).catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One request over a WebSocket of the page's own (as another client of the server would). */
export function viewRpc(page, method, params) {
  return page.evaluate(
    ({ method, params, ms }) =>
      new Promise((resolve) => {
        const ws = new WebSocket(`ws://${location.host}/ws`);
        const timer = setTimeout(() => resolve({ timeout: true }), ms);
        ws.onopen = () => {
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { clientInfo: { name: "view-state-test", version: "1" }, capabilities: {} } }));
          ws.send(JSON.stringify({ jsonrpc: "2.0", method: "initialized", params: {} }));
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method, params }));
        };
        ws.onmessage = (e) => {
          const m = JSON.parse(e.data);
          if (m.id !== 2) return;
          clearTimeout(timer);
          ws.close();
          resolve(m);
        };
      }),
    { method, params, ms: TIMEOUT_MS },
  );
}

/** The server's copy of a view instance's storage (`mcp/view/storage/load`), once `ready(items)` holds. */
export async function storedViewItems(page, threadId, callId, ready, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const answer = await viewRpc(page, "mcp/view/storage/load", { threadId, callId });
    if (answer.result && ready(answer.result.items)) return answer.result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(answer)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
