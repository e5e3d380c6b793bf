// Reading the desktop, from the user's side in headless Chromium against the real server: the
// agent's Markdown rendered (a mocked model's reply) with a <script>, event-handler and
// javascript: payload made inert, links opened safely and code highlighted; the OS's dark theme
// (and the toggle) followed by the page and told to an MCP Apps view; a thread named by its first
// real message, not a slash command; the Stop button while a turn runs; empty panes that say what
// to do; an app page that never registers shown as failed, with a retry; a malformed app.json
// listed with what is wrong. Screenshots go to
// docs/images.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, launchBrowser, openApp, openDesktop, say, startMockModel, startServer, textReply } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  mkdirSync(IMAGES, { recursive: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

const MARKDOWN = [
  "# The plan\n\nSome **bold** text, a [safe link](https://example.com/docs) and [a bad one](javascript:window.__pwned=3).\n\n",
  '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2"><a href="#" onclick="window.__pwned=4" id="trap">click me</a>\n\n',
  "- one\n- two\n\n```js\nconst answer = 42; // the answer\n```\n",
];

/** A desktop on a server whose (mocked) model answers with MARKDOWN. */
async function markdownReply(options = {}) {
  const model = await startMockModel([textReply(...MARKDOWN)]);
  const server = await startServer(model.args);
  const { page, errors } = await openDesktop(browser, server.base, "/", undefined, options);
  await page.click("#new-thread");
  await page.waitForSelector("#threads li.current");
  await say(page, "Show me the plan");
  const reply = page.locator(".item.agentMessage[data-status=completed]");
  await reply.waitFor();
  await reply.locator("pre code .hljs-keyword").first().waitFor();
  return { model, server, page, errors, reply };
}

test("the agent's Markdown is rendered, and a script payload in it is inert", OPTIONS, async () => {
  const { model, server, page, errors, reply } = await markdownReply();
  try {
    assert.equal(await reply.locator("h1").textContent(), "The plan");
    assert.equal(await reply.locator("strong").textContent(), "bold");
    assert.equal(await reply.locator("li").count(), 2);
    // The payloads: no script, no image, no handler, no javascript: link.
    assert.equal(await page.locator("#messages script, #messages img, #messages [onclick], #messages [onerror]").count(), 0);
    const safe = reply.locator("a", { hasText: "safe link" });
    assert.equal(await safe.getAttribute("href"), "https://example.com/docs");
    assert.equal(await safe.getAttribute("target"), "_blank");
    assert.equal(await safe.getAttribute("rel"), "noopener noreferrer");
    assert.equal(await reply.locator("a", { hasText: "a bad one" }).getAttribute("href"), null);
    await reply.locator("a", { hasText: "click me" }).click();
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    // The code block, highlighted.
    assert.equal(await reply.locator("pre code .hljs-keyword").first().textContent(), "const");
    assert.match(await reply.locator("pre code .hljs-comment").textContent(), /the answer/);
    // The thread is named by the message.
    await page.locator("#threads li.current", { hasText: "Show me the plan" }).waitFor();
    assert.equal(await page.textContent("#thread-title"), "Show me the plan");
    await page.screenshot({ path: join(IMAGES, "desktop-markdown.png") });
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    await model.close();
  }
});

test("the OS's dark theme is followed, told to views, and the toggle overrides it", OPTIONS, async () => {
  const { model, server, page, errors } = await markdownReply({ colorScheme: "dark" });
  try {
    assert.equal(await page.getAttribute("html", "data-theme"), "dark");
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(await background(), "rgb(20, 23, 29)");
    await openApp(page, "counter");
    const view = page.frameLocator('.window[data-app="counter"] iframe');
    await view.locator("#last", { hasText: "(dark, web)" }).waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-dark.png") });
    // The toggle: system → light (kept across a reload) → dark → system.
    await page.click("#theme-toggle");
    assert.equal(await page.textContent("#theme-toggle"), "Theme: light");
    assert.equal(await page.getAttribute("html", "data-theme"), "light");
    assert.equal(await background(), "rgb(238, 240, 244)");
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    assert.equal(await page.getAttribute("html", "data-theme"), "light");
    await view.locator("#last", { hasText: "(light, web)" }).waitFor();
    await page.click("#theme-toggle");
    assert.equal(await page.getAttribute("html", "data-theme"), "dark");
    await page.click("#theme-toggle");
    assert.equal(await page.textContent("#theme-toggle"), "Theme: system (dark)");
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    await model.close();
  }
});

test("a slash command does not name a thread; the first real message does", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    // Empty panes say what to do.
    const hint = (selector) => page.evaluate((s) => getComputedStyle(document.querySelector(s), "::before").content, selector);
    assert.match(await hint("#threads"), /New thread starts one/);
    assert.match(await hint("#desk"), /Open one from Apps/);
    await page.screenshot({ path: join(IMAGES, "desktop-empty.png") });
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await page.locator("#thread-title", { hasText: "New thread" }).waitFor();
    assert.match(await hint("#messages"), /No messages yet/);
    await say(page, '/plan {"title":"Ship","todos":[{"id":"a","content":"Write it","status":"pending"}]}');
    await page.locator("#plan li.todo", { hasText: "Write it" }).waitFor();
    assert.equal(await page.textContent("#threads li.current .name"), "New thread");
    await say(page, "Release notes for 1.0\nwith details");
    await page.locator(".item.agentMessage[data-status=completed]").last().waitFor();
    await page.locator("#threads li.current .name", { hasText: "Release notes for 1.0" }).waitFor();
    // Kept by the server: a reload shows it.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    assert.equal(await page.textContent("#threads li.current .name"), "Release notes for 1.0");
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("an app page that never registers is shown as failed, with a retry", OPTIONS, async () => {
  const server = await startServer();
  try {
    const dir = join(server.workspace, ".appserver/apps/silent");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "app.json"), JSON.stringify({ name: "Silent" }));
    writeFileSync(join(dir, "index.html"), "<!doctype html><p>no app here</p>");
    const { page } = await openDesktop(browser, server.base);
    await page.click('#apps li[data-app="silent"]');
    const failure = page.locator('.window[data-app="silent"] .failure');
    await failure.waitFor();
    assert.match(await failure.textContent(), /Silent did not start: its page did not register within 10 s/);
    await page.screenshot({ path: join(IMAGES, "desktop-app-failed.png") });
    await failure.locator("button", { hasText: "Retry" }).click();
    assert.equal(await failure.isHidden(), true);
    await failure.waitFor();
  } finally {
    await server.stop();
  }
});

test("a malformed app.json is listed with what is wrong, and cannot be opened", OPTIONS, async () => {
  const server = await startServer();
  try {
    const dir = join(server.workspace, ".appserver/apps/mangled");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "app.json"), '{ "name": "Mangled", ');
    const { page } = await openDesktop(browser, server.base);
    const entry = page.locator('#apps li[data-app="mangled"]');
    await entry.waitFor();
    assert.match(await entry.locator(".app-error").textContent(), /^app\.json: EOF/);
    assert.equal(await entry.locator("button").count(), 0, "a broken app offers nothing to open");
    // The working apps are still listed beside it.
    assert.equal(await page.locator('#apps li[data-app="sheet"] button.app-open').count(), 1);
  } finally {
    await server.stop();
  }
});

test("Stop interrupts the running turn, and the running mark survives a reload", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    await page.frameLocator('.window[data-app="sheet"] iframe').locator("#info", { hasText: win }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    // A turn that waits on an approval runs until it is answered.
    await say(page, `/command ${win} setCells {"cells":{"A1":"never"}}`);
    await page.locator("dialog#approval[open]").waitFor();
    await page.keyboard.press("Escape");
    await page.locator("#stop").waitFor();
    assert.equal(await page.evaluate(() => document.body.classList.contains("running")), true);
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator("#stop").waitFor();
    assert.equal(await page.evaluate(() => document.body.classList.contains("running")), true);
    // The server asks the reloaded page again: still pending, minimized again.
    await page.locator("dialog#approval[open]").waitFor();
    await page.keyboard.press("Escape");
    await page.screenshot({ path: join(IMAGES, "desktop-running.png") });
    await page.click("#stop");
    await page.locator("#stop").waitFor({ state: "hidden" });
    assert.equal(await page.evaluate(() => document.body.classList.contains("running")), false);
    assert.equal(await page.isHidden("#approval-queue"), true);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("a message sent while a turn runs waits in the thread's queue, and runs after it", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const win = await openApp(page, "sheet");
    await page.frameLocator('.window[data-app="sheet"] iframe').locator("#info", { hasText: win }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, `/command ${win} setCells {"cells":{"A1":"first"}}`);
    await page.locator("dialog#approval[open]").waitFor();
    await page.keyboard.press("Escape");
    await say(page, "after this one");
    await say(page, "never mind this");
    await page.locator("#queued li", { hasText: "never mind this" }).waitFor();
    assert.equal(await page.locator("#queued li").count(), 2);
    assert.equal(await page.isHidden("#outbox"), true, "nothing failed");
    await page.screenshot({ path: join(IMAGES, "desktop-queued.png") });
    await page.locator("#queued li", { hasText: "never mind this" }).locator("button", { hasText: "Remove" }).click();
    await page.locator("#queued li", { hasText: "never mind this" }).waitFor({ state: "detached" });
    // The running turn ends: the queued message runs, once.
    await page.click("#approval-queue");
    await page.click("dialog#approval button[data-decision=accept]");
    await page.locator(".item.userMessage", { hasText: "after this one" }).waitFor();
    await page.locator("#queued").waitFor({ state: "hidden" });
    await page.locator(".item.agentMessage[data-status=completed]", { hasText: "No language model" }).waitFor();
    assert.equal(await page.locator(".item.userMessage", { hasText: "after this one" }).count(), 1);
    assert.equal(await page.locator(".item.userMessage", { hasText: "never mind this" }).count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
