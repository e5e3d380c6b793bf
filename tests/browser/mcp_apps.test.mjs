// The published MCP Apps examples, `@modelcontextprotocol/server-basic-vanillajs` and
// `@modelcontextprotocol/server-basic-react` (tests/mcp_servers/package-lock.json, installed by
// .ci/run with `npm ci`; $APPSERVER_TEST_MCP_SERVERS is their `.bin` folder), configured as MCP
// servers of the agent over stdio and rendered by the desktop in headless Chromium through the
// sandbox proxy page. Nobody here wrote them: their views are built with the MCP Apps SDK
// (`@modelcontextprotocol/ext-apps`), which validates every message the host sends. The agent (a
// mock model) calls `get-time` (approved by the user); the view initializes, gets `tool-input`
// once and `tool-result` (it shows the time, not "Loading..."), shows the same time after a page
// reload without the server being called again, calls `get-time` itself (approved), is told of a
// display mode it asked for and of one the user chose, and answers its teardown before the window
// closes.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, TIMEOUT_MS, inView, launchBrowser, mcpReady, openDesktop, reasoningToolCall, root, say, startMockModel, startServer, storedViewItems, textReply, viewFrame } from "./harness.mjs";

const OPTIONS = { timeout: 120_000 };
const BIN = process.env.APPSERVER_TEST_MCP_SERVERS ?? join(root, "tests/mcp_servers/node_modules/.bin");
const EXAMPLES = [
  ["vanillajs", "mcp-server-basic-vanillajs"],
  ["react", "mcp-server-basic-react"],
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** A server whose agent has the example as its MCP server `basic`, and a mock model that calls
 * its `get-time` once, then says "Done.". */
async function start(bin) {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-mcp-apps-"));
  mkdirSync(join(workspace, ".appserver"), { recursive: true });
  const basic = { name: "basic", enabled: true, transport: "stdio", command: join(BIN, bin), args: ["--stdio"] };
  writeFileSync(join(workspace, ".appserver/mcp.json"), JSON.stringify({ servers: [basic] }));
  const call = JSON.stringify({ server: "basic", tool: "get-time", arguments: {} });
  const model = await startMockModel([reasoningToolCall("What time is it there?", "c1", "mcp_call", call), textReply("Done."), textReply("Noted.")]);
  const server = await startServer(model.args, { workspace, port: 0 });
  return {
    server,
    model,
    async stop() {
      await server.stop();
      await model.close();
    },
  };
}

/** The time the view shows (its one `<code>` element). */
const shown = (frame) => frame.evaluate(() => document.querySelector("code")?.textContent ?? "");

/** Messages from the page to the view, recorded from now on (the SDK keeps them to itself). */
async function spy(frame) {
  await frame.evaluate(() => {
    window.__seen = [];
    addEventListener("message", (e) => {
      if (e.source === parent) window.__seen.push(e.data);
    });
  });
}

/** A request the test sends as the view (the example has no button for it); its answer. */
function askAsView(frame, method, params) {
  return frame.evaluate(
    ({ method, params, ms }) =>
      new Promise((resolve) => {
        const id = `test-${Math.random()}`;
        const timer = setTimeout(() => resolve({ timeout: true }), ms);
        addEventListener("message", (e) => {
          if (e.source === parent && e.data?.id === id) {
            clearTimeout(timer);
            resolve(e.data);
          }
        });
        parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
      }),
    { method, params, ms: TIMEOUT_MS },
  );
}

for (const [name, bin] of EXAMPLES) {
  const missing = existsSync(join(BIN, bin)) ? false : `needs ${bin} (npm ci in tests/mcp_servers, or APPSERVER_TEST_MCP_SERVERS)`;
  test(`the published MCP Apps example ${name}: initialized, tool-input once and the result shown, the same after a reload, its server's tool called, display mode, torn down`, { ...OPTIONS, skip: missing }, async () => {
    const { server, model, stop } = await start(bin);
    try {
      const { page, errors } = await openDesktop(browser, server.base);
      const logs = [];
      page.on("console", (m) => logs.push(m.text()));
      const count = (text) => logs.filter((l) => l.includes(text)).length;
      await mcpReady(page, "basic");
      await page.click("#new-thread");
      await page.waitForSelector("#threads li.current");
      await say(page, "what time is it on the server?");
      // `get-time` declares no annotations: the agent's call is asked of the user.
      const dialog = page.locator("dialog#approval[open]");
      await dialog.waitFor();
      assert.equal(await page.textContent("#approval-what"), "Allow basic tool get-time?");
      await page.click("dialog#approval button[data-decision=accept]");

      const win = page.locator('.window.view[data-view="c1"]');
      await win.waitFor();
      assert.equal(await win.locator("iframe").getAttribute("sandbox"), "allow-scripts");
      let frame = await viewFrame(page, "c1");
      const time = await inView(frame, () => /^\d{4}-/.test(document.querySelector("code")?.textContent ?? "") && document.querySelector("code").textContent, null, "the time from the tool result");
      assert.match(time, ISO);
      assert.equal(await frame.evaluate(() => origin), "null", "the view runs with an opaque origin");
      assert.equal(count("Received tool call input:"), 1, "tool-input once");
      assert.equal(count("Received tool call result:"), 1, "tool-result once");
      // The call is one line in the conversation.
      assert.match(await page.locator("#messages .item.view-result .view-line").textContent(), /◇ get-time · basic · ✔ done/);
      // A storage the view can use in its opaque origin, kept by the server (across the reload below).
      assert.equal(await frame.evaluate(() => { localStorage.setItem("seen", "once"); return localStorage.getItem("seen"); }), "once");
      const thread = await page.evaluate(() => sessionStorage.getItem("appserver.desktop.thread"));
      await storedViewItems(page, thread, "c1", (items) => items.seen === "once", "the view's storage saved");
      await page.locator("#messages .item.agentMessage", { hasText: "Done." }).waitFor();
      await page.screenshot({ path: join(IMAGES, `desktop-mcp-apps-${name}.png`) });

      // A reload: the view opens again with the same time, from the thread (the server is not asked again).
      const requests = model.requests.length;
      await page.reload();
      await page.waitForSelector("body[data-ready=true]");
      await win.waitFor();
      frame = await viewFrame(page, "c1");
      const again = await inView(frame, () => /^\d{4}-/.test(document.querySelector("code")?.textContent ?? "") && document.querySelector("code").textContent, null, "the time after the reload");
      assert.equal(again, time);
      assert.equal(await frame.evaluate(() => localStorage.getItem("seen")), "once", "the view's storage after the reload");
      assert.equal(count("Received tool call input:"), 2, "tool-input once more, for the reopened view");
      assert.equal(model.requests.length, requests);

      // The view calls its server's `get-time` (not read-only: asked of the user, naming the view).
      await spy(frame);
      await frame.click("button >> text=Get Server Time");
      await dialog.waitFor();
      assert.match(await dialog.textContent(), /mcp-view:c1/);
      await page.click("dialog#approval button[data-decision=accept]");
      const later = await inView(frame, (before) => {
        const t = document.querySelector("code")?.textContent ?? "";
        return /^\d{4}-/.test(t) && t !== before && t;
      }, time, "the time from the view's own call");
      assert.match(later, ISO);
      assert.ok(later > time, `${later} after ${time}`);
      assert.equal(count("Received tool call result:"), 2, "the view's own call is not a tool-result");

      // Display mode: asked by the view, and chosen by the user from the title bar.
      const full = await askAsView(frame, "ui/request-display-mode", { mode: "fullscreen" });
      assert.equal(full.result?.mode, "fullscreen", JSON.stringify(full));
      assert.ok(await win.evaluate((w) => w.classList.contains("maximized")));
      await win.locator("header button.maximize").click();
      await inView(frame, () => window.__seen.some((m) => m?.method === "ui/notifications/host-context-changed" && m.params?.displayMode === "inline"), null, "inline from the title bar");
      assert.ok(!(await win.evaluate((w) => w.classList.contains("maximized"))));
      const seen = await frame.evaluate(() => window.__seen.map((m) => m?.method).filter(Boolean));
      assert.ok(!seen.includes("ui/notifications/tool-input") && !seen.includes("ui/notifications/tool-result"), seen.join(", "));

      // Closing: the view answers its teardown, so the window goes before the bound (3 s).
      const started = Date.now();
      await win.locator("header button.close").click();
      await win.waitFor({ state: "detached" });
      assert.ok(Date.now() - started < 2500, `closed after ${Date.now() - started} ms`);
      assert.equal(count("App is being torn down"), 1);
      assert.ok(!logs.some((l) => /Failed to parse|ZodError|invalid_/i.test(l)), logs.filter((l) => /Failed|Zod|invalid/i.test(l)).join("\n"));
      assert.deepEqual(errors, []);
    } finally {
      await stop();
    }
  });
}
