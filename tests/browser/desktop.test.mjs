// The browser desktop end to end, in headless Chromium against the real server: a streamed
// reply in a new thread, the paged thread list, the sheet driven by the agent through an
// approval dialog and restored by replay after an iframe reload and a page reload, agent
// commands sent while the page or only the iframe reloads, a streaming app, an MCP Apps view
// whose tool the agent calls, foreign messages ignored, the token link, and a (mocked) model's
// reasoning and tool call. Screenshots go to docs/images.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, launchBrowser, mcpPost, openApp, openDesktop, reasoningToolCall, say, startMockModel, startServer, textReply } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  mkdirSync(IMAGES, { recursive: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("a new thread streams the agent's reply", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "hello");
    await page.locator(".item.userMessage", { hasText: "hello" }).waitFor();
    const reply = page.locator(".item.agentMessage[data-status=completed]");
    await reply.waitFor();
    assert.match(await reply.textContent(), /No language model is configured/);
    // The thread is named by its first message.
    await page.locator("#threads li.current", { hasText: "hello" }).waitFor();
    // Slash commands complete from command/list.
    await page.fill("#input", "/com");
    await page.dispatchEvent("#input", "input");
    await page.locator("#completions li[data-name='/command']").waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-thread.png") });
    await page.press("#input", "Tab");
    assert.equal(await page.inputValue("#input"), "/command ");
    // An app's icon may be an image in its folder.
    const icon = page.locator("#apps li[data-app=counter] img.icon");
    assert.ok((await icon.evaluate((img) => img.decode().then(() => img.naturalWidth))) > 0);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("the thread list is paged", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page } = await openDesktop(browser, server.base);
    // One page holds 30 threads.
    for (let i = 1; i <= 32; i++) {
      await page.click("#new-thread");
      await page.locator("#threads li").nth(i - 1).waitFor();
    }
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    assert.equal(await page.locator("#threads li").count(), 30);
    await page.click("#more-threads");
    await page.locator("#threads li").nth(31).waitFor();
    assert.equal(await page.locator("#threads li").count(), 32);
    assert.equal(await page.isHidden("#more-threads"), true);
  } finally {
    await server.stop();
  }
});

test("the agent sets a sheet cell after an approval, and reloads restore it", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    assert.match(win, /^win_/);
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, `/command ${win} setCells {"cells":{"A1":"42","B2":"hi"}}`);
    const dialog = page.locator("dialog#approval[open]");
    await dialog.waitFor();
    assert.match(await page.textContent("#approval-what"), /setCells on sheet/);
    await page.screenshot({ path: join(IMAGES, "desktop-approval.png") });
    await dialog.locator("button[data-decision=accept]").click();
    await sheet.locator("#A1", { hasText: "42" }).waitFor();
    await page.locator(".item.toolResult", { hasText: "✔" }).waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-sheet.png") });

    // Reload the iframe: a fresh document, registered again, the log replayed.
    await page.click('.window[data-app="sheet"] button.reload');
    await sheet.locator("#info", { hasText: "replayed 1" }).waitFor();
    assert.equal(await sheet.locator("#A1").textContent(), "42");
    assert.equal(await sheet.locator("#B2").textContent(), "hi");

    // Reload the whole page: the window comes back with the same id and its state.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator(`.window[data-app=sheet][data-window-id="${win}"]`).waitFor();
    await sheet.locator("#A1", { hasText: "42" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("an agent command waits for the page that reloads, then reaches the app", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  try {
    const { page } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();
    // A second desktop is the agent's user.
    const { page: other } = await openDesktop(browser, server.base);
    await other.click("#new-thread");
    await other.waitForSelector("#threads li.current");
    // The host page reloads, and its new script is held: the old page (and its WebSocket) is
    // gone, the new one has not registered the window yet.
    let release;
    const held = new Promise((resolve) => (release = resolve));
    let requested;
    const scriptRequested = new Promise((resolve) => (requested = resolve));
    await page.route("**/assets/desktop.js", async (route) => {
      requested();
      await held;
      await route.fallback();
    });
    const reloaded = page.reload();
    await scriptRequested;
    await say(other, `/command ${win} setCells {"cells":{"C3":"after reload"}}`);
    // The agent's call is under way (its toolCall item is shown) while nobody hosts the window.
    await other.locator(".item.toolCall", { hasText: "setCells" }).waitFor();
    assert.equal(await other.locator(".item.toolResult").count(), 0, "the call waits");
    release();
    await reloaded;
    await other.locator(".item.toolResult", { hasText: "✔" }).waitFor();
    await sheet.locator("#C3", { hasText: "after reload" }).waitFor();
    await other.close();
  } finally {
    await server.stop();
  }
});

test("a command sent while only the iframe reloads is held by the page until the app is back", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, `/command ${win} setCells {"cells":{"A1":"first"}}`);
    await sheet.locator("#A1", { hasText: "first" }).waitFor();
    // Reload the iframe with the sheet's script held: the new document cannot register yet.
    let release;
    const held = new Promise((resolve) => (release = resolve));
    let requested;
    const scriptRequested = new Promise((resolve) => (requested = resolve));
    await page.route("**/apps/sheet/sheet.js", async (route) => {
      requested();
      await held;
      await route.continue();
    });
    await page.click('.window[data-app="sheet"] button.reload');
    await scriptRequested;
    await say(page, `/command ${win} setCells {"cells":{"A2":"second"}}`);
    await page.locator(".item.toolCall", { hasText: "A2" }).waitFor();
    assert.equal(await page.locator(".item.toolResult").count(), 1, "only the first command has a result");
    release();
    // Replayed first (A1), then the held command (A2).
    await page.locator(".item.toolResult").nth(1).waitFor();
    assert.match(await page.locator(".item.toolResult").nth(1).textContent(), /✔/);
    await sheet.locator("#A2", { hasText: "second" }).waitFor();
    assert.equal(await sheet.locator("#A1").textContent(), "first");
    await sheet.locator("#info", { hasText: "replayed 1" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("a streaming app reports progress as app events", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  try {
    const { page } = await openDesktop(browser, server.base);
    const win = await openApp(page, "jobs");
    const jobs = page.frameLocator('.window[data-app="jobs"] iframe');
    await jobs.locator("#info", { hasText: win }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, `/command ${win} run {"name":"build","steps":3}`);
    await jobs.locator("li", { hasText: "done" }).waitFor();
    await page.locator(".item.toolResult", { hasText: "run_1" }).waitFor();
    // The app's app/emit events came back to the page as app/event notifications.
    await page.locator('.window[data-app="jobs"] .event', { hasText: 'job.done {"name":"build"}' }).waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-jobs.png") });
  } finally {
    await server.stop();
  }
});

test("the agent calls a tool an MCP Apps view registered", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "counter");
    const view = page.frameLocator('.window[data-app="counter"] iframe');
    await view.locator("#last", { hasText: "host: appserver-desktop" }).waitFor();
    // The view's own button goes through the server (logged) and back as a tools/call.
    await view.locator("#inc").click();
    await view.locator("#count", { hasText: "1" }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, `/command ${win} increment {"by":5}`);
    await page.locator("dialog#approval[open]").waitFor();
    await page.click("dialog#approval button[data-decision=acceptForSession]");
    await view.locator("#count", { hasText: "6" }).waitFor();
    await view.locator("#last", { hasText: "increment: count is 6" }).waitFor();
    // No tool-input / tool-result around the host's tools/call, no app/reset (not in the spec).
    const received = async () => (await view.locator("body").getAttribute("data-received")) ?? "";
    assert.doesNotMatch(await received(), /tool-input|tool-result|app\/reset/);
    await page.screenshot({ path: join(IMAGES, "desktop-mcp-view.png") });
    // Reloaded, the view gets its count back from the log.
    await page.click('.window[data-app="counter"] button.reload');
    await view.locator("#count", { hasText: "6" }).waitFor();
    assert.doesNotMatch(await received(), /tool-input|tool-result|app\/reset/);
    // ui/request-display-mode: the window stays inline, and says so.
    const mode = await page.frames().find((f) => f.url().endsWith("counter/index.html") || f.url().includes("/counter/"))?.evaluate(
      () =>
        new Promise((resolve) => {
          addEventListener("message", (e) => e.data?.id === "mode" && resolve(e.data));
          parent.postMessage({ jsonrpc: "2.0", id: "mode", method: "ui/request-display-mode", params: { mode: "fullscreen" } }, "*");
        }),
    );
    assert.deepEqual(mode?.result, { mode: "inline" });
    // ui/message becomes the user's input on the window's thread (app/interaction).
    await view.locator("#tell").click();
    await page.locator(".item.userMessage", { hasText: "The counter shows 6" }).waitFor();
    // The page's theme changes: the view is told.
    const theme = await page.evaluate(() => document.documentElement.dataset.theme);
    while ((await page.evaluate(() => document.documentElement.dataset.theme)) === theme) await page.click("#theme-toggle");
    await view.locator("body[data-received*='ui/notifications/host-context-changed']").waitFor();
    // Closed: the view is told first, and answers.
    const logs = [];
    page.on("console", (m) => logs.push(m.text()));
    await page.click('.window[data-app="counter"] button.close');
    await page.locator('.window[data-app="counter"]').waitFor({ state: "detached" });
    assert.ok(logs.some((l) => l.includes("counter torn down: the user closed the window")), logs.join("\n"));
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("messages from a foreign origin or an unknown source are ignored", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  try {
    const { page } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();
    const attack = { jsonrpc: "2.0", id: 99, method: "app/command", params: { command: "setCells", params: { cells: { B2: "evil" } } } };
    const count = await page.evaluate((message) => {
      const frame = document.querySelector(".window[data-app=sheet] iframe");
      // The sheet's own window, but from another origin.
      window.dispatchEvent(new MessageEvent("message", { data: message, origin: "http://evil.example", source: frame.contentWindow }));
      // The right shape from a window that is not one of the apps.
      window.postMessage(message, "*");
      return new Promise((resolve) => setTimeout(() => resolve(document.getElementById("ignored").dataset.count), 0));
    }, attack);
    assert.equal(count, "2");
    // A real command after them: the sheet got it, and never the foreign one.
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, `/command ${win} setCells {"cells":{"A1":"ok"}}`);
    await sheet.locator("#A1", { hasText: "ok" }).waitFor();
    assert.equal(await sheet.locator("#B2").textContent(), "");
  } finally {
    await server.stop();
  }
});

test("with a token, the link's ?token= lets the page, its WebSocket and the app iframes in", OPTIONS, async () => {
  const server = await startServer(["--ws-token", "s3cret"]);
  try {
    const denied = await fetch(`${server.base}/`);
    assert.equal(denied.status, 401);
    const { page, errors } = await openDesktop(browser, server.base, "/?token=s3cret");
    const win = await openApp(page, "sheet");
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("a model's reasoning, its call of a view's tool and its streamed answer are shown", OPTIONS, async () => {
  const model = await startMockModel();
  const server = await startServer([...model.args, "--approval-policy", "never"]);
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "counter");
    const view = page.frameLocator('.window[data-app="counter"] iframe');
    await view.locator("#last", { hasText: "host:" }).waitFor();
    const args = JSON.stringify({ windowId: win, command: "increment", params: { by: 3 } });
    model.script.push(
      reasoningToolCall("The user wants the counter at three.", "call_1", "app_command", args),
      textReply("The counter ", "now shows ", "3."),
    );
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "Set the counter to three");
    await page.locator(".item.reasoningContent", { hasText: "counter at three" }).waitFor();
    await view.locator("#count", { hasText: "3" }).waitFor();
    await view.locator("#last", { hasText: "increment: count is 3" }).waitFor();
    await page.locator(".item.toolResult", { hasText: '{"count":3}' }).waitFor();
    await page.locator(".item.agentMessage[data-status=completed]", { hasText: "The counter now shows 3." }).waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-model.png") });
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    await model.close();
  }
});

test("an outside agent's app command is approved in the desktop and shown as its activity", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();

    const session = {};
    const init = await mcpPost(server.base, session, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "outside-agent", version: "1.0" } },
    });
    session.version = init.result.protocolVersion;
    await mcpPost(server.base, session, { jsonrpc: "2.0", method: "notifications/initialized" });
    const call = mcpPost(server.base, session, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "app_command", arguments: { windowId: win, command: "setCells", params: { cells: { C3: "from outside" } } } },
    });

    // The desktop is an approval-capable client: the outside agent's call asks it.
    const dialog = page.locator("dialog#approval[open]");
    await dialog.waitFor();
    assert.match(await page.textContent("#approval-what"), /setCells on sheet/);
    await dialog.locator("button[data-decision=accept]").click();
    const answer = await call;
    assert.equal(answer.result.isError ?? false, false, JSON.stringify(answer));
    await sheet.locator("#C3", { hasText: "from outside" }).waitFor();
    // Its name is shown as what it is: a name it declared, not verified.
    await page.locator("#activity li", { hasText: `outside agent "outside-agent" (declared name, not verified): setCells on ${win} done` }).waitFor();
    await page.locator('.window[data-app="sheet"] .event', { hasText: "outside-agent" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

/** Writes a test app folder into the server's workspace: `app.json` and its `index.html`. */
function writeApp(workspace, id, appJson, html) {
  const dir = join(workspace, ".appserver/apps", id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "app.json"), JSON.stringify(appJson));
  writeFileSync(join(dir, "index.html"), html);
}

/** An app (our SDK) that, on a click, sets a cell of the sheet through `appserver.apps`. The
 * manifest it registers claims `callApps` and another app's id: the page ignores both. */
const RELAY_SDK = `<!doctype html><meta charset="utf-8"><button id="go">go</button><pre id="out"></pre>
<script src="/assets/appserver-app.js"></script>
<script>
appserver.app.register({ appId: "sheet", name: "Sheet", permissions: { callApps: true }, commands: {} });
document.getElementById("go").onclick = async () => {
  const out = document.getElementById("out");
  try {
    const { apps } = await appserver.apps.list();
    const sheet = apps.find((a) => a.appId === "sheet" && a.live);
    const result = await appserver.apps.command(sheet.windowId, "setCells", { cells: { A1: "from relay" } });
    out.textContent = "done " + JSON.stringify(result);
  } catch (err) {
    out.textContent = "error " + err.message;
  }
};
</script>`;

/** The same in the MCP Apps dialect: \`tools/call\` of app_list and app_command. */
const RELAY_MCP = `<!doctype html><meta charset="utf-8"><button id="go">go</button><pre id="out"></pre>
<script>
let next = 1;
const pending = new Map();
function request(method, params) {
  return new Promise((resolve) => {
    const id = next++;
    pending.set(id, resolve);
    parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  });
}
window.addEventListener("message", (event) => {
  const m = event.data;
  if (m && m.id !== undefined && pending.has(m.id)) { pending.get(m.id)(m.result ?? { isError: true, content: [{ text: m.error?.message }] }); pending.delete(m.id); }
});
request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "relay", version: "1" }, appCapabilities: {} }).then(() =>
  parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*"));
document.getElementById("go").onclick = async () => {
  const listed = await request("tools/call", { name: "app_list", arguments: {} });
  const set = await request("tools/call", { name: "app_command", arguments: { windowId: "x", command: "setCells", params: {} } });
  document.getElementById("out").textContent = [listed, set].map((r) => (r.isError ? "error " : "done ") + r.content[0].text).join("\\n");
};
</script>`;

test("an app calls another app only with its app.json's permission, and then through the user's approval", OPTIONS, async () => {
  const server = await startServer();
  try {
    writeApp(server.workspace, "relay-mcp", { name: "Relay (MCP)", dialect: "mcp-apps" }, RELAY_MCP);
    writeApp(server.workspace, "relay", { name: "Relay", permissions: { callApps: true } }, RELAY_SDK);
    writeApp(server.workspace, "relay-plain", { name: "Relay (no permission)" }, RELAY_SDK);
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
    await sheet.locator("#info", { hasText: win }).waitFor();

    // Without the permission, in either dialect: refused, and nobody is asked.
    await openApp(page, "relay-mcp");
    const mcp = page.frameLocator('.window[data-app="relay-mcp"] iframe');
    await mcp.locator("#go").click();
    await mcp.locator("#out", { hasText: "error PERMISSION_DENIED" }).waitFor();
    const refused = await mcp.locator("#out").textContent();
    assert.match(refused, /app `relay-mcp` .* may not call other apps: its manifest does not declare `permissions.callApps`/);
    assert.doesNotMatch(refused, /done/);
    await openApp(page, "relay-plain");
    const plain = page.frameLocator('.window[data-app="relay-plain"] iframe');
    await plain.locator("#go").click();
    // The iframe's own manifest claimed the permission (and the sheet's id): not taken.
    await plain.locator("#out", { hasText: "error PERMISSION_DENIED" }).waitFor();
    assert.equal(await page.locator("dialog#approval[open]").count(), 0);
    assert.equal(await sheet.locator("#A1").textContent(), "");

    // With it: the user is asked, with the calling app named.
    const relayWin = await openApp(page, "relay");
    const relay = page.frameLocator('.window[data-app="relay"] iframe');
    await relay.locator("#go").click();
    const dialog = page.locator("dialog#approval[open]");
    await dialog.waitFor();
    assert.match(await page.textContent("#approval-what"), /setCells on sheet/);
    assert.equal(await page.textContent("#approval-caller"), `Asked by app relay (${relayWin})`);
    assert.match(await page.textContent("#approval-reason"), new RegExp(`The app \`relay\` \\(window ${relayWin}\\) wants to run the command \`setCells\``));
    await page.screenshot({ path: join(IMAGES, "desktop-app-caller.png") });
    await dialog.locator("button[data-decision=accept]").click();
    await sheet.locator("#A1", { hasText: "from relay" }).waitFor();
    await relay.locator("#out", { hasText: "done" }).waitFor();
    await page.locator("#activity li", { hasText: `app relay (${relayWin}): setCells on ${win} done` }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
