// MCP Apps views in the conversation and their state (issue 51 items 4, 5 and 6), in headless
// Chromium against the real server and tests/mcp_server's `board` view
// (tests/browser/fixtures/board-view.html): the call that opened a view is one compact line in
// the conversation (its raw result folded); the view moves inline under it and back to the desk
// (a choice remembered) without its iframe reloading; its `localStorage` (shimmed by the sandbox
// proxy, the view's origin being opaque) is kept by the server per view instance, so it survives a
// reload and reaches a second browser, while `sessionStorage` stays in the tab; a view never reads
// another view's storage, a hostile view cannot pass the bound (the shim throws
// QuotaExceededError; raw messages are refused by the server), and deleting the thread drops it
// all.

import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { inView, launchBrowser, mcpReady, openDesktop, reasoningToolCall, root, say, startMockModel, startServer, storedViewItems, textReply, until, viewFrame, viewRpc } from "./harness.mjs";

const OPTIONS = { timeout: 120_000 };
const VIEW = join(root, "tests/browser/fixtures/board-view.html");
const LIMIT = 256 * 1024;
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** A server with the MCP server `tools` (the board view) and a mock model that calls `board` as
 * `c1`, says "Done.", then (in a second thread) calls it as `c2` and says "Again.". */
async function start() {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-view-state-"));
  mkdirSync(join(workspace, ".appserver/apps"), { recursive: true });
  cpSync(join(root, "clients/web/apps"), join(workspace, ".appserver/apps"), { recursive: true });
  const binary = join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "debug/mcp-test-server");
  const tools = { name: "tools", enabled: true, transport: "stdio", command: binary, args: ["--view", VIEW] };
  writeFileSync(join(workspace, ".appserver/mcp.json"), JSON.stringify({ servers: [tools] }));
  const call = JSON.stringify({ server: "tools", tool: "board", arguments: { title: "Q3" } });
  const model = await startMockModel([
    reasoningToolCall("Show it.", "c1", "mcp_call", call),
    textReply("Done."),
    reasoningToolCall("Another.", "c2", "mcp_call", call),
    textReply("Again."),
  ]);
  const server = await startServer(model.args, { workspace, port: 0 });
  return {
    server,
    async stop() {
      await server.stop();
      await model.close();
    },
  };
}

/** A thread in which the agent called `board` (`callId`): its view open and initialized. */
async function board(page, text, callId) {
  await page.click("#new-thread");
  await page.waitForSelector("#threads li.current");
  await say(page, text);
  await page.locator(`.window.view[data-view="${callId}"]`).waitFor();
  const frame = await viewFrame(page, callId);
  await inView(frame, () => typeof view !== "undefined" && view.received.some((m) => m.method === "ui/notifications/tool-result"), null, "the tool result");
  return frame;
}

const currentThread = (page) => page.evaluate(() => sessionStorage.getItem("appserver.desktop.thread"));

test("the call that opened a view is one compact line; the view moves inline and back without reloading, the choice remembered", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await mcpReady(page, "tools");
    let frame = await board(page, "show the board", "c1");
    const line = page.locator("#messages .item.toolResult.view-result");
    await line.waitFor();
    assert.match(await line.locator(".view-line").textContent(), /◇ board · tools · ✔ done/);
    assert.equal(await line.locator("details.raw-result").getAttribute("open"), null, "the raw result is folded");
    assert.match(await line.locator("details.raw-result pre").textContent(), /"resourceUri"/);
    assert.ok((await line.boundingBox()).height < 80, "one line, not the raw result");

    // Inline, under its line: the same document (not reloaded), still a working view.
    await frame.evaluate(() => (window.marker = "kept"));
    const win = page.locator('.window.view[data-view="c1"]');
    await win.locator("header button.placement").click();
    await page.locator('#messages .view-slot[data-view="c1"] .window.view[data-view="c1"]').waitFor();
    frame = await viewFrame(page, "c1");
    assert.equal(await frame.evaluate(() => window.marker), "kept", "moved, not reloaded");
    assert.equal(await page.locator('#taskbar [data-slot="view_c1"]').count(), 0);
    const added = await frame.evaluate(() => view.request("tools/call", { name: "add", arguments: { a: 1, b: 2 } }));
    assert.ok(added.result, JSON.stringify(added));

    // Remembered: after a reload the view opens inline again.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator('#messages .view-slot[data-view="c1"] .window.view[data-view="c1"]').waitFor();
    // And back to the desk.
    await page.locator('.window.view[data-view="c1"] header button.placement').click();
    await page.locator('#desk > .window.view[data-view="c1"]').waitFor();
    assert.equal(await page.evaluate(() => localStorage.getItem("appserver.desktop.viewPlacement")), "desk");

    // Fullscreen fills the browser window, not the desk; pip stays on top.
    frame = await viewFrame(page, "c1");
    await inView(frame, () => typeof view !== "undefined" && view.context, null, "the view again");
    const full = await frame.evaluate(() => view.request("ui/request-display-mode", { mode: "fullscreen" }));
    assert.equal(full.result.mode, "fullscreen");
    const box = await win.boundingBox();
    assert.deepEqual([box.x, box.y, box.width, box.height], [0, 0, 1400, 800]);
    const pip = await frame.evaluate(() => view.request("ui/request-display-mode", { mode: "pip" }));
    assert.equal(pip.result.mode, "pip");
    assert.ok(await win.evaluate((w) => w.classList.contains("pip") && getComputedStyle(w).position === "fixed"));
    await frame.evaluate(() => view.request("ui/request-display-mode", { mode: "inline" }));
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("a view's localStorage is kept per view instance by the server: after a reload, in a second browser, never another view's, bounded", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await mcpReady(page, "tools");
    let frame = await board(page, "show the board", "c1");
    const thread = await currentThread(page);
    // The shim: a synchronous Storage in an opaque origin.
    const first = await frame.evaluate(() => {
      localStorage.setItem("budget", "42");
      localStorage.spare = "1";
      localStorage.removeItem("spare");
      sessionStorage.setItem("tab", "this tab");
      return { origin, budget: localStorage.getItem("budget"), length: localStorage.length, key: localStorage.key(0), session: sessionStorage.tab };
    });
    assert.deepEqual(first, { origin: "null", budget: "42", length: 1, key: "budget", session: "this tab" });
    await storedViewItems(page, thread, "c1", (items) => items.budget === "42" && !("spare" in items), "the budget saved");

    // A write past the bound throws QuotaExceededError and changes nothing.
    const refused = await frame.evaluate((n) => {
      try {
        localStorage.setItem("huge", "x".repeat(n));
        return "stored";
      } catch (e) {
        return e.name;
      }
    }, LIMIT);
    assert.equal(refused, "QuotaExceededError");
    assert.equal(await frame.evaluate(() => localStorage.getItem("huge")), null);

    // A hostile view skips the shim and posts raw changes, naming another instance: the page
    // saves them as this view's (never another's), and the server refuses what passes the bound.
    await frame.evaluate(() => {
      parent.postMessage({ jsonrpc: "2.0", method: "appserver/storage/changed", params: { area: "local", threadId: "elsewhere", callId: "c2", changes: [{ key: "mine", value: "from c1" }] } }, "*");
    });
    await storedViewItems(page, thread, "c1", (items) => items.mine === "from c1", "the raw change kept as c1's");
    await frame.evaluate((n) => {
      parent.postMessage({ jsonrpc: "2.0", method: "appserver/storage/changed", params: { area: "local", changes: [{ key: "flood", value: "x".repeat(n) }] } }, "*");
    }, LIMIT);
    await page.locator('.window.view[data-view="c1"] .view-notice', { hasText: "at most 262144" }).waitFor();
    const kept = await storedViewItems(page, thread, "c1", () => true, "the storage");
    assert.ok(!("flood" in kept.items), "the flood was refused");
    assert.equal(kept.items.mine, "from c1");
    assert.ok(kept.used <= LIMIT);
    const direct = await viewRpc(page, "mcp/view/storage/save", { threadId: thread, callId: "c1", changes: [{ key: "a", value: "x".repeat(LIMIT - 10) }] });
    assert.equal(direct.error?.code, -32070, JSON.stringify(direct.error));
    assert.equal(direct.error?.data?.code, "LIMIT_REACHED");

    // After a reload: the same storage, the tab's sessionStorage too.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator('.window.view[data-view="c1"]').waitFor();
    frame = await viewFrame(page, "c1");
    const again = await inView(frame, () => typeof view !== "undefined" && view.context && { budget: localStorage.getItem("budget"), tab: sessionStorage.getItem("tab") }, null, "the storage after the reload");
    assert.deepEqual(again, { budget: "42", tab: "this tab" });

    // Another view (another call, another thread) sees none of it.
    const other = await board(page, "another board", "c2");
    assert.deepEqual(await other.evaluate(() => [localStorage.length, localStorage.getItem("budget"), localStorage.getItem("mine")]), [0, null, null]);

    // A second browser: the thread's Open view brings the view back with its localStorage, and
    // a sessionStorage of its own.
    const second = await openDesktop(browser, server.base);
    await second.page.click("#threads li button:has-text('show the board')");
    const open = second.page.locator("#messages .item.view-result button.open-view");
    await open.first().click();
    await second.page.locator('.window.view[data-view="c1"]').waitFor();
    const elsewhere = await viewFrame(second.page, "c1");
    const there = await inView(elsewhere, () => typeof view !== "undefined" && view.context && { budget: localStorage.getItem("budget"), tab: sessionStorage.getItem("tab") }, null, "the storage in a second browser");
    assert.deepEqual(there, { budget: "42", tab: null });
    // Opened from the thread, it gets the result as the first view did: its image block and _meta.
    const result = await elsewhere.evaluate(() => view.received.find((m) => m.method === "ui/notifications/tool-result").params);
    assert.deepEqual(result._meta, { board: { title: "Q3" } });
    assert.deepEqual(result.content.map((b) => b.type), ["text", "image"]);
    assert.equal(result.content[1].mimeType, "image/png");
    await second.page.context().close();
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("deleting a thread tears its views down and drops their storage; the view gets its tool's real definition; a model-only tool is a JSON-RPC error", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await mcpReady(page, "tools");
    const frame = await board(page, "show the board", "c1");
    const thread = await currentThread(page);
    // toolInfo.tool: the tool as the server lists it, not a placeholder.
    const tool = await frame.evaluate(() => view.context.toolInfo.tool);
    assert.equal(tool.name, "board");
    assert.equal(typeof tool.description, "string");
    assert.ok(tool.description.length > 0);
    assert.ok(tool.inputSchema?.properties?.title, JSON.stringify(tool.inputSchema));
    // A tool hidden from views: the request fails (callServerTool throws), saying why.
    const hidden = await frame.evaluate(() => view.request("tools/call", { name: "env", arguments: { name: "HOME" } }));
    assert.equal(hidden.error?.code, -32602, JSON.stringify(hidden));
    assert.match(hidden.error.message, /not callable by views/);

    await frame.evaluate(() => {
      localStorage.setItem("budget", "42");
      sessionStorage.setItem("tab", "x");
    });
    await storedViewItems(page, thread, "c1", (items) => items.budget === "42", "the budget saved");
    await page.click("#delete-thread");
    await page.click("#delete-thread");
    await page.locator('.window.view[data-view="c1"]').waitFor({ state: "detached" });
    assert.equal(await page.locator("iframe").count(), 0, "no view iframe is left");
    await until(page, (t) => !Object.keys(sessionStorage).some((k) => k.startsWith(`appserver.desktop.viewSession.${t}/`)), thread, "the tab's storage of its views dropped");
    const gone = await viewRpc(page, "mcp/view/storage/load", { threadId: thread, callId: "c1" });
    assert.ok(gone.error, `the storage went with the thread: ${JSON.stringify(gone)}`);
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("on a 390 px phone, a view that asks the user something shows its pane, its tab badged until answered", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors } = await openDesktop(browser, server.base, "/", { width: 390, height: 800 });
    await mcpReady(page, "tools");
    await page.click("#tabs button[data-pane=threads]");
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await page.click("#threads li.current button");
    await say(page, "show the board");
    await page.locator('.window.view[data-view="c1"]').waitFor({ state: "attached" });
    const frame = await viewFrame(page, "c1");
    await inView(frame, () => typeof view !== "undefined" && view.received.some((m) => m.method === "ui/notifications/tool-result"), null, "the tool result");
    await page.click("#tabs button[data-pane=chat]");
    assert.equal(await page.evaluate(() => document.body.dataset.pane), "chat");
    const asked = frame.evaluate(() => view.request("ui/open-link", { url: "https://example.com/" }));
    await until(page, () => document.body.dataset.pane === "desk", undefined, "the windows pane shown");
    const badged = () => document.querySelector("#tabs button[data-pane=desk]").classList.contains("waiting");
    assert.equal(await page.evaluate(badged), true, "the Windows tab carries a badge while the question waits");
    await page.click("#tabs button[data-pane=chat]");
    assert.equal(await page.evaluate(badged), true, "still badged from the conversation");
    await page.click("#tabs button[data-pane=desk]");
    await page.locator('.window.view[data-view="c1"] .view-notice button.refuse').click();
    await until(page, () => !document.querySelector("#tabs button[data-pane=desk]").classList.contains("waiting"), undefined, "the badge cleared");
    assert.equal((await asked).error?.message, "Link opening denied by user");
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});
