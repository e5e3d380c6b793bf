// The connection from the user's side, in headless Chromium against the real server: the server
// is killed (as a crash would) and the page says so at once, counts down to its next attempt,
// keeps a message typed meanwhile in its outbox (and localStorage), and when the server is back
// on the same workspace and port sends it, catching up the thread's events, so it arrives exactly
// once; a server that hangs without closing anything is found by the heartbeat; a message the
// server refuses is shown failed, with Retry and Discard. Screenshots go to docs/images.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, launchBrowser, openApp, openDesktop, say, startServer, TIMEOUT_MS, useWebDist } from "./harness.mjs";

const OPTIONS = { timeout: 120_000 };
const OUTBOX = "appserver.desktop.outbox";
let browser;

before(async () => {
  mkdirSync(IMAGES, { recursive: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("a message typed while the server is down is kept and arrives exactly once when it is back", OPTIONS, async () => {
  const server = await startServer();
  let again;
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "before the crash");
    await page.locator(".item.agentMessage[data-status=completed]").waitFor();
    assert.equal(await page.getAttribute("#status", "data-state"), "connected");

    await server.kill();
    // Noticed at once, with a countdown to the next attempt.
    await page.locator("#status[data-state=reconnecting]").waitFor({ timeout: 3_000 });
    await page.locator("#status", { hasText: /reconnecting in \d+ s/ }).waitFor();
    await say(page, "typed while it was down");
    const entry = page.locator("#outbox li", { hasText: "typed while it was down" });
    await entry.waitFor();
    assert.match(await entry.textContent(), /Waiting for the connection/);
    assert.equal(await page.inputValue("#input"), "", "the composer is free for the next one");
    assert.match(await page.evaluate((key) => localStorage.getItem(key), OUTBOX), /typed while it was down/);
    await page.screenshot({ path: join(IMAGES, "desktop-reconnecting.png") });

    again = await startServer([], { workspace: server.workspace, port: server.port });
    await page.locator("#status[data-state=connected]").waitFor({ timeout: TIMEOUT_MS });
    const sent = page.locator(".item.userMessage", { hasText: "typed while it was down" });
    await sent.waitFor();
    await page.locator("#outbox").waitFor({ state: "hidden" });
    // Its reply comes through the caught-up subscription.
    await page.locator(".item.agentMessage[data-status=completed]").nth(1).waitFor();
    assert.equal(await sent.count(), 1);
    assert.equal(await page.evaluate((key) => localStorage.getItem(key), OUTBOX), "[]");

    // The thread itself holds it once.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator(".item.userMessage", { hasText: "before the crash" }).waitFor();
    assert.equal(await page.locator(".item.userMessage", { hasText: "typed while it was down" }).count(), 1);
    assert.deepEqual(errors, []);
  } finally {
    if (again) await again.stop();
    else await server.stop();
  }
});

test("a message the server refuses is shown failed, with Retry and Discard", OPTIONS, async () => {
  const server = await startServer();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
    page.setDefaultTimeout(TIMEOUT_MS);
    await useWebDist(page);
    // An outbox left by an earlier page, for a thread this server does not have.
    const stale = [{ id: "out_1", threadId: "thr_gone", text: "to a lost thread", queuedAt: Date.now(), state: "queued" }];
    await page.addInitScript(([key, value]) => localStorage.getItem(key) ?? localStorage.setItem(key, value), [OUTBOX, JSON.stringify(stale)]);
    await page.goto(server.base);
    await page.waitForSelector("body[data-ready=true]");
    const entry = page.locator("#outbox li.failed", { hasText: "to a lost thread" });
    await entry.waitFor();
    assert.match(await entry.textContent(), /Not sent: .*\(to “thr_gone”\)/);
    await entry.locator("button", { hasText: "Retry" }).click();
    await page.locator("#outbox li.failed", { hasText: "to a lost thread" }).waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-outbox-failed.png") });
    await page.locator("#outbox li button", { hasText: "Discard" }).click();
    await page.locator("#outbox").waitFor({ state: "hidden" });
    assert.equal(await page.evaluate((key) => localStorage.getItem(key), OUTBOX), "[]");
  } finally {
    await server.stop();
  }
});

test("a server that hangs is noticed by the heartbeat, and the page reconnects when it goes on", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    server.pause();
    // The socket stays open: only the heartbeat (every 10 s, 5 s to answer) can tell.
    await page.locator("#status:not([data-state=connected])").waitFor({ timeout: 25_000 });
    await say(page, "sent to a hung server");
    await page.locator("#outbox li", { hasText: "sent to a hung server" }).waitFor();
    server.resume();
    await page.locator("#status[data-state=connected]").waitFor({ timeout: 25_000 });
    await page.locator(".item.userMessage", { hasText: "sent to a hung server" }).waitFor();
    await page.locator("#outbox").waitFor({ state: "hidden" });
    assert.equal(await page.locator(".item.userMessage", { hasText: "sent to a hung server" }).count(), 1);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("without network the page says offline, and comes back when the network does", OPTIONS, async () => {
  const server = await startServer();
  let again;
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await server.kill();
    await page.locator("#status[data-state=reconnecting]").waitFor({ timeout: 3_000 });
    await page.context().setOffline(true);
    await page.locator("#status[data-state=offline]", { hasText: "no network" }).waitFor();
    assert.equal(await page.textContent("#reconnect-now"), "Retry");
    await page.screenshot({ path: join(IMAGES, "desktop-offline.png") });
    // It stays so: no countdown runs while there is no network.
    const states = [];
    for (let i = 0; i < 6; i++) {
      states.push(await page.getAttribute("#status", "data-state"));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.deepEqual([...new Set(states)], ["offline"]);
    again = await startServer([], { workspace: server.workspace, port: server.port });
    await page.context().setOffline(false);
    await page.locator("#status[data-state=connected]").waitFor();
    assert.equal(await page.isHidden("#reconnect-now"), true);
    assert.deepEqual(errors, []);
  } finally {
    if (again) await again.stop();
    else await server.stop();
  }
});

test("after a reconnect an MCP Apps window loads again and its replay rebuilds it once, with no app/reset", OPTIONS, async () => {
  const server = await startServer();
  let again;
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await openApp(page, "counter");
    const view = page.frameLocator('.window[data-app="counter"] iframe');
    await view.locator("#last", { hasText: "host: appserver-desktop" }).waitFor();
    await view.locator("#inc").click();
    await view.locator("#count", { hasText: "1" }).waitFor();
    await view.locator("#inc").click();
    await view.locator("#count", { hasText: "2" }).waitFor();
    const frame = () => page.frames().find((f) => f.url().includes("/counter/"));
    await frame().evaluate(() => (window.before = true));
    await server.kill();
    await page.locator("#status[data-state=reconnecting]").waitFor({ timeout: 3_000 });
    again = await startServer([], { workspace: server.workspace, port: server.port });
    await page.locator("#status[data-state=connected]").waitFor({ timeout: 25_000 });
    // A fresh document, rebuilt by the replay: 2, not 4.
    for (const deadline = Date.now() + TIMEOUT_MS; ; ) {
      if ((await frame()?.evaluate(() => window.before === undefined && document.getElementById("count")?.textContent === "2").catch(() => false))) break;
      if (Date.now() > deadline) throw new Error("the window did not load again");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await view.locator("#last", { hasText: "increment: count is 2" }).waitFor();
    await view.locator("#count", { hasText: "2" }).waitFor();
    const received = (await view.locator("body").getAttribute("data-received")) ?? "";
    assert.doesNotMatch(received, /app\/reset|tool-input|tool-result/);
    assert.deepEqual(errors, []);
  } finally {
    if (again) await again.stop();
    else await server.stop();
  }
});
