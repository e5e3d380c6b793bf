// MCP Apps views in the desktop, in headless Chromium against the real server: the agent (a mock
// model) calls the `board` tool of tests/mcp_server (an MCP server over stdio whose tool declares
// the view `ui://board/view.html`, here tests/browser/fixtures/board-view.html, a view speaking
// SEP-1865 with plain postMessage). The view window opens through the sandbox proxy page, is
// initialized with the host context, gets `tool-input` once and `tool-result`, follows the
// page's theme, changes display mode, calls its server's tools (a destructive one approved), opens a link only
// once the user confirms, is torn down before it closes (a view that never answers closes after
// the bound), and after a page reload gets its state back from its log. Its policy is the
// restrictive default, opened only to the origins its resource declares in `_meta.ui.csp`. A view
// polling its server's harmless tools asks nothing; a destructive call is asked once for the view
// (identical pending calls are one question), withdrawn when the view closes or its thread is
// deleted (which closes the thread's views); and the view reads
// and lists its server's resources beyond `ui://`, bounded.

import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, inView, launchBrowser, mcpReady, openDesktop, reasoningToolCall, root, say, startMockModel, startServer, textReply, viewFrame } from "./harness.mjs";

const OPTIONS = { timeout: 120_000 };
const VIEW = join(root, "tests/browser/fixtures/board-view.html");
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

function testServerBinary() {
  return join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "debug/mcp-test-server");
}

/** A server whose workspace has the MCP server `tools` (tests/mcp_server with the board view), and
 * a mock model that calls `board` once, then says "Done.". */
async function start(viewArgs = [], replies = [textReply("Done."), textReply("Noted.")]) {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-views-"));
  mkdirSync(join(workspace, ".appserver/apps"), { recursive: true });
  cpSync(join(root, "clients/web/apps"), join(workspace, ".appserver/apps"), { recursive: true });
  const tools = { name: "tools", enabled: true, transport: "stdio", command: testServerBinary(), args: ["--view", VIEW, ...viewArgs] };
  writeFileSync(join(workspace, ".appserver/mcp.json"), JSON.stringify({ servers: [tools] }));
  const call = JSON.stringify({ server: "tools", tool: "board", arguments: { title: "Q3" } });
  const model = await startMockModel([reasoningToolCall("Show it.", "c1", "mcp_call", call), ...replies]);
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

const methods = (frame) => frame.evaluate(() => view.received.map((m) => m.method));

/** A desktop with a thread in which the agent called `board`: its view open and initialized. */
async function openBoard(browser, base) {
  const { page, errors } = await openDesktop(browser, base);
  await mcpReady(page, "tools");
  await page.click("#new-thread");
  await page.waitForSelector("#threads li.current");
  await say(page, "show the board");
  await page.locator('.window.view[data-view="c1"]').waitFor();
  const frame = await viewFrame(page, "c1");
  await inView(frame, () => typeof view !== "undefined" && view.received.some((m) => m.method === "ui/notifications/tool-result"), null, "the tool result");
  return { page, errors, frame };
}

test("an offered view opens sandboxed, is initialized with the host context, gets tool-input once and tool-result, and follows the theme", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    assert.equal(await page.getAttribute('.window.view[data-view="c1"] iframe', "sandbox"), "allow-scripts");
    assert.match(await page.textContent('.window.view[data-view="c1"] .window-id'), /mcp-view:c1/);
    assert.equal(await frame.evaluate(() => document.getElementById("title").textContent), "Board");
    // The proxy's origin is opaque: the view cannot reach the page.
    assert.equal(await frame.evaluate(() => origin), "null");

    const context = await frame.evaluate(() => view.context);
    const theme = await page.evaluate(() => document.documentElement.dataset.theme);
    assert.equal(context.theme, theme);
    assert.equal(context.displayMode, "inline");
    assert.deepEqual(context.availableDisplayModes, ["inline", "fullscreen", "pip"]);
    assert.ok(context.containerDimensions.width > 0 && context.containerDimensions.height > 0, JSON.stringify(context));
    assert.deepEqual(context.toolInfo.id, "c1");
    assert.equal(context.toolInfo.tool.name, "board");
    assert.equal(context["appserver/viewLog"], undefined, "a new view has no log to restore");

    const received = await frame.evaluate(() => view.received);
    const inputs = received.filter((m) => m.method === "ui/notifications/tool-input");
    assert.equal(inputs.length, 1, "tool-input once");
    assert.deepEqual(inputs[0].params.arguments, { title: "Q3" });
    const results = received.filter((m) => m.method === "ui/notifications/tool-result");
    assert.equal(results.length, 1);
    assert.equal(results[0].params.content[0].text, "board Q3");
    assert.ok(received.indexOf(inputs[0]) < received.indexOf(results[0]), "the input comes first");

    await page.screenshot({ path: join(IMAGES, "desktop-mcp-server-view.png") });
    // The theme toggles: the view is told.
    for (;;) {
      await page.click("#theme-toggle");
      if ((await page.evaluate(() => document.documentElement.dataset.theme)) !== theme) break;
    }
    const changed = await inView(frame, () => view.received.find((m) => m.method === "ui/notifications/host-context-changed" && m.params.theme), null, "host-context-changed");
    assert.equal(changed.params.theme, theme === "dark" ? "light" : "dark");
    assert.equal(await frame.evaluate(() => view.context.theme), changed.params.theme);
    // A view's call of its read-only tool runs unasked; an unknown one is an error it can read.
    const echo = await frame.evaluate(() => view.request("tools/call", { name: "echo", arguments: { text: "hi" } }));
    assert.equal(echo.result.content[0].text, "hi");
    const unknown = await frame.evaluate(() => view.request("ui/unknown-thing", {}));
    assert.equal(unknown.error.code, -32601);
    // Its own server's resources are read through the host; a URI it does not serve is its refusal.
    const read = await frame.evaluate(() => view.request("resources/read", { uri: "ui://board/view.html" }));
    assert.match(read.result.contents[0].text, /<h1 id=title>Board<\/h1>/);
    const file = await frame.evaluate(() => view.request("resources/read", { uri: "file:///etc/passwd" }));
    assert.equal(file.error.code, -32073);
    // Resized: the view is told its container's size.
    await page.setViewportSize({ width: 1200, height: 700 });
    await page.locator('.window.view[data-view="c1"] header button.maximize').click();
    await inView(frame, () => view.received.some((m) => m.method === "ui/notifications/host-context-changed" && m.params.containerDimensions), null, "the new size");
    assert.equal((await methods(frame)).filter((m) => m === "ui/notifications/tool-input").length, 1, "still once");
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("a view changes display mode, calls its server's tools (a destructive one with approval), opens a link only when the user confirms, and is torn down before it closes", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    const win = page.locator('.window.view[data-view="c1"]');
    const logs = [];
    page.on("console", (m) => logs.push(m.text()));

    // Display modes: fullscreen fills the browser window (the window maximized too), pip stays on top.
    const full = await frame.evaluate(() => view.request("ui/request-display-mode", { mode: "fullscreen" }));
    assert.equal(full.result.mode, "fullscreen");
    assert.ok(await win.evaluate((w) => w.classList.contains("maximized") && w.classList.contains("fullscreen")));
    assert.equal(await frame.evaluate(() => view.context.displayMode), "fullscreen");
    const pip = await frame.evaluate(() => view.request("ui/request-display-mode", { mode: "pip" }));
    assert.equal(pip.result.mode, "pip");
    assert.ok(await win.evaluate((w) => w.classList.contains("pip") && !w.classList.contains("fullscreen")));
    const inline = await frame.evaluate(() => view.request("ui/request-display-mode", { mode: "inline" }));
    assert.equal(inline.result.mode, "inline");
    assert.ok(!(await win.evaluate((w) => w.classList.contains("maximized"))));
    // The user maximizes it from the title bar: the view is told.
    await win.locator("header button.maximize").click();
    await inView(frame, () => view.context.displayMode === "fullscreen", null, "fullscreen from the title bar");
    await win.locator("header button.maximize").click();
    await inView(frame, () => view.context.displayMode === "inline", null, "inline again");

    // A tool of its server that destroys nothing (`add`: destructiveHint false): runs unasked.
    const answer = await frame.evaluate(() => view.add(5));
    assert.equal(answer.result.content[0].text, "5");
    assert.equal(await frame.evaluate(() => view.total), 5);
    const dialog = page.locator("dialog#approval[open]");
    assert.equal(await dialog.count(), 0);
    // A destructive one: asked of the user, naming the view; declined, the view reads an error result.
    const declined = frame.evaluate(() => view.request("tools/call", { name: "wipe", arguments: {} }));
    await dialog.waitFor();
    assert.match(await dialog.textContent(), /mcp-view:c1/);
    await page.click("dialog#approval button[data-decision=decline]");
    assert.equal((await declined).result.isError, true);

    // Links: only http(s), and only once the user says so.
    await page.evaluate(() => {
      window.opened = [];
      window.open = (...args) => {
        window.opened.push(args);
        return null;
      };
    });
    const bad = await frame.evaluate(() => view.request("ui/open-link", { url: "javascript:alert(1)" }));
    assert.deepEqual(bad.error, { code: -32000, message: "Invalid URL" });
    assert.ok(await win.locator(".view-notice").isHidden());
    let link = frame.evaluate(() => view.request("ui/open-link", { url: "https://example.com/board" }));
    await win.locator(".view-notice", { hasText: "https://example.com/board" }).waitFor();
    // A second link while the first waits is refused at once (no stack of questions).
    const second = await frame.evaluate(() => view.request("ui/open-link", { url: "https://example.com/other" }));
    assert.equal(second.error.code, -32000);
    await win.locator(".view-notice button.refuse-open-link").click();
    assert.deepEqual((await link).error, { code: -32000, message: "Link opening denied by user" });
    assert.deepEqual(await page.evaluate(() => window.opened), []);
    link = frame.evaluate(() => view.request("ui/open-link", { url: "https://example.com/board" }));
    await win.locator(".view-notice button.open-link").click();
    assert.deepEqual((await link).result, {});
    assert.deepEqual(await page.evaluate(() => window.opened), [["https://example.com/board", "_blank", "noopener,noreferrer"]]);

    // A message into the conversation: only once the user says so, then it is the user's message.
    const refusedMessage = frame.evaluate(() => view.request("ui/message", { role: "user", content: [{ type: "text", text: "not this" }] }));
    await win.locator(".view-notice", { hasText: "not this" }).waitFor();
    await win.locator(".view-notice button.refuse-send-message").click();
    assert.deepEqual((await refusedMessage).error, { code: -32000, message: "Message sending denied by user" });
    const empty = await frame.evaluate(() => view.request("ui/message", { role: "user", content: [] }));
    assert.equal(empty.error.code, -32000);
    const sent = frame.evaluate(() => view.request("ui/message", { role: "user", content: [{ type: "text", text: "from the board view" }] }));
    await win.locator(".view-notice button.send-message").click();
    assert.deepEqual((await sent).result, {});
    await page.locator("#messages .item.userMessage", { hasText: "from the board view" }).waitFor();
    assert.equal(await page.locator("#messages .item.userMessage", { hasText: "not this" }).count(), 0);

    // Closing: the view is torn down (and says so) before its window goes.
    await win.locator("header button.close").click();
    await win.waitFor({ state: "detached" });
    assert.ok(logs.some((l) => l.includes("board torn down: the user closed the view")), logs.join("\n"));
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("a view reopened after a page reload gets its state back from its log, and one that never answers its teardown still closes", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    const added = await frame.evaluate(() => view.add(7));
    assert.equal(added.result.content[0].text, "7");

    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator('.window.view[data-view="c1"]').waitFor();
    const again = await viewFrame(page, "c1");
    await inView(again, () => typeof view !== "undefined" && view.received.some((m) => m.method === "ui/notifications/tool-result"), null, "the reopened view");
    const log = await again.evaluate(() => view.context["appserver/viewLog"]);
    assert.equal(log.length, 1);
    assert.equal(log[0].tool, "add");
    assert.deepEqual(log[0].arguments, { a: 0, b: 7 });
    assert.equal(await again.evaluate(() => view.total), 7, "the state is back");
    assert.equal((await methods(again)).filter((m) => m === "ui/notifications/tool-input").length, 1);

    // A view that never answers its teardown: the window closes after the bound (3 s).
    await again.evaluate(() => (view.silent = true));
    const started = Date.now();
    await page.click('.window.view[data-view="c1"] header button.close');
    await page.locator('.window.view[data-view="c1"]').waitFor({ state: "detached" });
    const took = Date.now() - started;
    assert.ok(took >= 2500 && took < 10_000, `closed after ${took} ms`);
    // Closed, it is not reopened by the next reload; the thread's result of the call opens it
    // again, with its state.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    assert.equal(await page.locator(".window.view").count(), 0);
    await page.locator("#messages .item.toolResult button.open-view").click();
    await page.locator('.window.view[data-view="c1"]').waitFor();
    const reopened = await viewFrame(page, "c1");
    await inView(reopened, () => typeof view !== "undefined" && view.total === 7, null, "the reopened view's state");
    const input = await reopened.evaluate(() => view.received.filter((m) => m.method === "ui/notifications/tool-input"));
    assert.deepEqual(input.map((m) => m.params.arguments), [{ title: "Q3" }]);
    const result = await reopened.evaluate(() => view.received.find((m) => m.method === "ui/notifications/tool-result").params);
    assert.equal(result.content[0].text, "board Q3");
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

/** A fetch from the view: "ok" when it went through, else the error's name. */
const fetchFrom = (frame, url) => frame.evaluate((url) => fetch(url, { mode: "no-cors" }).then(() => "ok", (e) => e.name), url);

test("a view's Content-Security-Policy is the restrictive default, opened only to the origins its _meta.ui.csp declares", OPTIONS, async () => {
  const other = createServer((_req, res) => res.end("ok"));
  await new Promise((resolve) => other.listen(0, "127.0.0.1", resolve));
  const allowed = `http://127.0.0.1:${other.address().port}`;
  // Declared: one origin to connect to; keywords and other directives smuggled in are dropped.
  const csp = JSON.stringify({ connectDomains: [allowed, "'unsafe-eval'", "*", "https://x.example;script-src *"] });
  const { server, stop } = await start(["--view-csp", csp]);
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    assert.equal(await fetchFrom(frame, `${allowed}/x`), "ok", "the declared origin");
    assert.equal(await fetchFrom(frame, `${server.base}/assets/desktop.css`), "TypeError", "an undeclared one");
    const src = await page.getAttribute('.window.view[data-view="c1"] iframe', "src");
    assert.match(src, /^\/assets\/view-frame\.html\?connect=/);
    // Told to the user in the window, not only in the console.
    const warning = page.locator('.window.view[data-view="c1"] .view-warning');
    assert.ok(await warning.isVisible());
    assert.match(await warning.textContent(), new RegExp(`reaches outside this computer: it connects to ${allowed}`));
    assert.deepEqual(errors, []);
  } finally {
    await stop();
    await new Promise((resolve) => other.close(resolve));
  }
});

test("a view that declares no CSP can reach no network", OPTIONS, async () => {
  const other = createServer((_req, res) => res.end("ok"));
  await new Promise((resolve) => other.listen(0, "127.0.0.1", resolve));
  const { server, stop } = await start();
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    assert.equal(await fetchFrom(frame, `http://127.0.0.1:${other.address().port}/x`), "TypeError");
    assert.equal(await fetchFrom(frame, `${server.base}/assets/desktop.css`), "TypeError");
    assert.equal(await page.getAttribute('.window.view[data-view="c1"] iframe', "src"), "/assets/view-frame.html");
    assert.equal(await page.getAttribute('.window.view[data-view="c1"] iframe', "allow"), null, "no permission declared, none allowed");
    assert.equal(await page.locator('.window.view[data-view="c1"] .view-warning').count(), 0, "nothing outside to warn of");
    assert.deepEqual(errors, []);
  } finally {
    await stop();
    await new Promise((resolve) => other.close(resolve));
  }
});

test("a view that declares this server's own origins still cannot reach its WebSocket or its API (its origin is opaque)", OPTIONS, async () => {
  const csp = JSON.stringify({ connectDomains: ["ws://127.0.0.1:*", "http://127.0.0.1:*"] });
  const { server, stop } = await start(["--view-csp", csp]);
  try {
    const { errors, frame } = await openBoard(browser, server.base);
    const ws = await frame.evaluate(
      (url) =>
        new Promise((resolve) => {
          const socket = new WebSocket(url);
          socket.onopen = () => resolve("open");
          socket.onerror = () => resolve("refused");
        }),
      server.base.replace("http://", "ws://") + "/ws",
    );
    assert.equal(ws, "refused");
    const api = await frame.evaluate((url) => fetch(url).then((r) => `status ${r.status}`, (e) => e.name), `${server.base}/api/apps`);
    assert.notEqual(api, "status 200");
    // The policy let both through; the server refused them for their origin (`null`).
    assert.match(server.stderr(), /request refused: origin not allowed.*path="?\/ws/);
    assert.match(server.stderr(), /request refused: origin not allowed.*path="?\/api\/apps/);
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("a view is allowed only the permissions it declares, and its model context is in the next turn's request to the model", OPTIONS, async () => {
  // Declared: camera and clipboard writes; `bluetooth` is not one the spec knows (ignored).
  const permissions = JSON.stringify({ camera: {}, clipboardWrite: {}, bluetooth: {} });
  const { server, model, stop } = await start(["--view-permissions", permissions]);
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    assert.equal(await page.getAttribute('.window.view[data-view="c1"] iframe', "allow"), "camera; clipboard-write");
    await page.locator("#messages .item.agentMessage", { hasText: "Done." }).waitFor();

    const first = await frame.evaluate(() => view.request("ui/update-model-context", { content: [{ type: "text", text: "the board has 3 cards" }] }));
    assert.deepEqual(first.result, {});
    const second = await frame.evaluate(() => view.request("ui/update-model-context", { content: [{ type: "text", text: "the board has 4 cards" }], structuredContent: { cards: 4 } }));
    assert.deepEqual(second.result, {});
    const big = await frame.evaluate(() => view.request("ui/update-model-context", { content: [{ type: "text", text: "x".repeat(20_000) }] }));
    assert.equal(big.error.code, -32602, "bounded");

    await say(page, "what does the board say?");
    await page.locator("#messages .item.agentMessage", { hasText: "Noted." }).waitFor();
    const request = model.requests.at(-1);
    const views = request.messages.filter((m) => m.role === "user" && typeof m.content === "string" && m.content.startsWith("Context from the MCP Apps views"));
    assert.equal(views.length, 1, JSON.stringify(request.messages));
    assert.match(views[0].content, /\[view mcp-view:c1\]\nthe board has 4 cards\nstructuredContent: \{"cards":4\}/);
    assert.doesNotMatch(views[0].content, /3 cards/, "replaced by the later update");
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("a view polls its server's harmless tools with no dialog, a destructive call is asked once for the view, withdrawn when the view closes, and the view reads its server's other resources (issue 51 items 1 and 3)", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    const dialog = page.locator("dialog#approval[open]");
    // Polling, as system-monitor does: every call runs, none asks, the activity list counts them.
    for (let i = 0; i < 10; i++) {
      const refreshed = await frame.evaluate(() => view.request("tools/call", { name: "refresh", arguments: {} }));
      assert.equal(refreshed.result.content[0].text, "refreshed");
    }
    for (let i = 0; i < 10; i++) {
      const polled = await frame.evaluate(() => view.add(1));
      assert.notEqual(polled.result.isError, true, JSON.stringify(polled));
    }
    assert.equal(await frame.evaluate(() => view.total), 10);
    assert.equal(await dialog.count(), 0, "no dialog for a harmless call");
    assert.ok(await page.locator("#approval-queue").isHidden());
    await page.locator("#activity li", { hasText: /add on mcp-view:c1 done ×\d+/ }).waitFor({ state: "attached" });

    // A destructive call waits for the user; the view closes: its call is withdrawn, never run.
    const lost = frame.evaluate(() => view.request("tools/call", { name: "wipe", arguments: {} })).catch(() => "the view is gone");
    await dialog.waitFor();
    assert.match(await page.textContent("#approval-what"), /Allow tools tool wipe\? \(asked by view mcp-view:c1\)/);
    await page.keyboard.press("Escape");
    await page.click('.window.view[data-view="c1"] header button.close');
    await page.locator('.window.view[data-view="c1"]').waitFor({ state: "detached" });
    await page.waitForFunction(() => document.getElementById("approval-queue").hidden);
    await page.locator("#activity li", { hasText: "wipe on mcp-view:c1 declined" }).waitFor({ state: "attached" });
    await lost;

    // Reopened from the thread: two identical destructive calls are one question, "for this view".
    await page.locator("#messages .item.toolResult button.open-view").click();
    const view2 = await viewFrame(page, "c1");
    await inView(view2, () => typeof view !== "undefined" && view.received.some((m) => m.method === "ui/notifications/tool-result"), null, "the reopened view");
    const wipes = view2.evaluate(() => Promise.all([1, 2].map(() => view.request("tools/call", { name: "wipe", arguments: {} }))));
    await dialog.waitFor();
    await page.locator("#approval-list li .twins", { hasText: "×2" }).waitFor();
    assert.equal(await page.locator("#approval-list li").count(), 1);
    const forView = page.locator("dialog#approval button[data-decision=acceptForSession]");
    assert.equal(await forView.textContent(), "Accept for this view");
    await forView.click();
    for (const w of await wipes) assert.equal(w.result.content[0].text, "wiped", JSON.stringify(w));
    const third = await view2.evaluate(() => view.request("tools/call", { name: "wipe", arguments: {} }));
    assert.equal(third.result.content[0].text, "wiped");
    assert.equal(await dialog.count(), 0, "remembered for this view");

    // Its server's resources beyond ui://: read (text), listed, and bounded.
    const notes = await view2.evaluate(() => view.request("resources/read", { uri: "test://notes.txt" }));
    assert.equal(notes.result.contents[0].text, "the board's notes");
    const list = await view2.evaluate(() => view.request("resources/list", {}));
    assert.deepEqual(list.result.resources.map((r) => r.uri), ["ui://board/view.html", "test://notes.txt", "test://dot.png", "test://big.txt"]);
    const big = await view2.evaluate(() => view.request("resources/read", { uri: "test://big.txt" }));
    assert.equal(big.error.code, -32602);
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});

test("deleting a thread closes its views and withdraws their pending calls (issue 51 item 1)", OPTIONS, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors, frame } = await openBoard(browser, server.base);
    const lost = frame.evaluate(() => view.request("tools/call", { name: "wipe", arguments: {} })).catch(() => "the view is gone");
    await page.locator("dialog#approval[open]").waitFor();
    await page.keyboard.press("Escape");
    await page.click("#delete-thread");
    await page.click("#delete-thread");
    await page.locator('.window.view[data-view="c1"]').waitFor({ state: "detached" });
    await page.waitForFunction(() => document.getElementById("approval-queue").hidden);
    await page.locator("#activity li", { hasText: "wipe on mcp-view:c1 declined" }).waitFor({ state: "attached" });
    await lost;
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});
