// Support for the browser tests: the real appserver binary on 127.0.0.1 port 0 in a fresh
// workspace holding the example apps of clients/web/apps, and headless Chromium (Debian's
// /usr/bin/chromium, or $CHROMIUM) driven by playwright-core.

import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "../..");
/** The bound on every wait. */
export const TIMEOUT_MS = 20_000;
/** Where the screenshots go (docs/desktop.md shows them). */
export const IMAGES = join(root, "docs/images");

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

/** Starts a server with the example apps in its workspace; `base` is its http:// origin. */
export async function startServer(args = []) {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-web-"));
  const apps = join(workspace, ".appserver/apps");
  mkdirSync(apps, { recursive: true });
  cpSync(join(root, "clients/web/apps"), apps, { recursive: true });
  const env = { ...process.env };
  for (const v of ["APPSERVER_MODEL", "APPSERVER_BASE_URL", "APPSERVER_API_KEY"]) delete env[v];
  const child = spawn(serverBinary(), ["--workspace", workspace, "--listen", "ws://127.0.0.1:0", ...args], {
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
  return {
    base: url,
    workspace,
    stderr: () => stderr,
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

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    timeout: TIMEOUT_MS,
  });
}

/** A page on the desktop, ready (connected, threads and apps listed). */
export async function openDesktop(browser, base, path = "/") {
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  page.setDefaultTimeout(TIMEOUT_MS);
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
