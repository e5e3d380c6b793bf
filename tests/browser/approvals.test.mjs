// The approval queue, from the user's side in headless Chromium against the real server: two
// requests pending at once, both listed and answered in the reverse order; Escape keeps a
// request (minimized to the top bar's queue) and it is answered from there; 5 KB of params shown
// whole in a scrollable block inside the viewport; a command or params that do not fit what the
// app declared fail at once, with no approval asked.
// Screenshots go to docs/images.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, launchBrowser, mcpAgent, openApp, openDesktop, say, startServer, until } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  mkdirSync(IMAGES, { recursive: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** A desktop with the sheet open and a thread started. */
async function sheetAndThread(server) {
  const { page, errors } = await openDesktop(browser, server.base);
  const win = await openApp(page, "sheet");
  const sheet = page.frameLocator('.window[data-app="sheet"] iframe');
  await sheet.locator("#info", { hasText: win }).waitFor();
  await page.click("#new-thread");
  await page.waitForSelector("#threads li.current");
  return { page, errors, win, sheet };
}

test("two approvals pending at once are both listed and answered in reverse order", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors, win, sheet } = await sheetAndThread(server);
    // The first: the thread's agent. The second: an outside agent, while the first waits.
    await say(page, `/command ${win} setCells {"cells":{"A1":"first"}}`);
    await page.locator("dialog#approval[open] #approval-list li").first().waitFor();
    const agent = await mcpAgent(server.base);
    const outside = agent.call("app_command", { windowId: win, command: "setCells", params: { cells: { B1: "second" } } });
    const list = page.locator("#approval-list li");
    await list.nth(1).waitFor();
    assert.equal(await list.count(), 2);
    // The dialog kept showing the first; the second is listed with who asks.
    assert.match(await page.textContent("#approval-detail pre.params"), /"A1": "first"/);
    assert.match(await list.nth(1).textContent(), /outside agent "outside-agent"/);
    assert.equal(await page.title(), "(2) appserver desktop");
    assert.equal(await page.textContent("#threads li.current .badge"), "1");
    await page.screenshot({ path: join(IMAGES, "desktop-approval-queue.png") });

    // Answer the second first.
    await list.nth(1).locator("button").click();
    assert.match(await page.textContent("#approval-detail pre.params"), /"B1": "second"/);
    await page.click("dialog#approval button[data-decision=accept]");
    const answer = await outside;
    assert.equal(answer.result.isError ?? false, false, JSON.stringify(answer));
    await sheet.locator("#B1", { hasText: "second" }).waitFor();
    assert.equal(await sheet.locator("#A1").textContent(), "", "the first is still waiting");
    assert.equal(await list.count(), 1);
    assert.equal(await page.title(), "(1) appserver desktop");

    // Then the first, still answerable.
    assert.match(await page.textContent("#approval-detail pre.params"), /"A1": "first"/);
    await page.click("dialog#approval button[data-decision=accept]");
    await sheet.locator("#A1", { hasText: "first" }).waitFor();
    await page.locator(".item.toolResult", { hasText: "✔" }).waitFor();
    await page.locator("dialog#approval:not([open])").waitFor({ state: "attached" });
    assert.equal(await page.title(), "appserver desktop");
    assert.equal(await page.textContent("#threads li.current .badge"), "");
    assert.equal(await page.isHidden("#approval-queue"), true);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("Escape minimizes an approval to the queue, and it is answered from there", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors, win, sheet } = await sheetAndThread(server);
    await say(page, `/command ${win} setCells {"cells":{"C3":"later"}}`);
    await page.locator("dialog#approval[open]").waitFor();
    await page.keyboard.press("Escape");
    await page.locator("dialog#approval:not([open])").waitFor({ state: "attached" });
    // Not answered: still pending, shown in the top bar, the title and the thread list.
    const queue = page.locator("#approval-queue");
    await queue.waitFor();
    assert.equal(await queue.textContent(), "1 approval pending");
    assert.equal(await page.title(), "(1) appserver desktop");
    assert.equal(await page.textContent("#threads li.current .badge"), "1");
    assert.equal(await page.locator(".item.toolResult").count(), 0);
    assert.equal(await sheet.locator("#C3").textContent(), "");
    await page.screenshot({ path: join(IMAGES, "desktop-approval-minimized.png") });
    await queue.click();
    await page.locator("dialog#approval[open]").waitFor();
    await page.click("dialog#approval button[data-decision=accept]");
    await sheet.locator("#C3", { hasText: "later" }).waitFor();
    await page.locator(".item.toolResult", { hasText: "✔" }).waitFor();
    assert.equal(await page.isHidden("#approval-queue"), true);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("5 KB of params are shown whole, in a block that scrolls inside the viewport", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors, win } = await sheetAndThread(server);
    const cells = {};
    for (let i = 1; i <= 60; i++) cells[`A${i}`] = `value ${i} `.padEnd(84, "x");
    cells.Z99 = "the last one";
    const json = JSON.stringify({ cells });
    assert.ok(json.length > 5000, `${json.length} bytes`);
    await say(page, `/command ${win} setCells ${json}`);
    await page.locator("dialog#approval[open]").waitFor();
    const pre = page.locator("#approval-detail pre.params");
    const box = await pre.evaluate((p) => {
      const r = p.getBoundingClientRect();
      const style = getComputedStyle(p);
      return { scroll: p.scrollHeight, client: p.clientHeight, wide: p.scrollWidth > p.clientWidth, right: r.right, bottom: r.bottom, font: style.fontFamily, text: p.textContent };
    });
    const viewport = page.viewportSize();
    assert.ok(box.scroll > box.client, "it scrolls");
    assert.equal(box.wide, false, "nothing runs off to the side");
    assert.ok(box.right <= viewport.width && box.bottom <= viewport.height, JSON.stringify(box));
    assert.match(box.font, /monospace/);
    assert.deepEqual(JSON.parse(box.text), { cells }, "every param is there");
    // Scrolled with the keyboard to the end, the last param is in view.
    await pre.focus();
    await page.keyboard.press("End");
    await until(
      page,
      () => {
        const p = document.querySelector("#approval-detail pre.params");
        return p.scrollTop + p.clientHeight >= p.scrollHeight - 1;
      },
      undefined,
      "the params scrolled to the end",
    );
    const last = await pre.evaluate((p) => {
      const range = document.createRange();
      const at = p.textContent.indexOf("the last one");
      range.setStart(p.firstChild, at);
      range.setEnd(p.firstChild, at + 12);
      const r = range.getBoundingClientRect();
      const outer = p.getBoundingClientRect();
      return r.top >= outer.top && r.bottom <= outer.bottom;
    });
    assert.equal(last, true, "the last param is visible");
    await page.screenshot({ path: join(IMAGES, "desktop-approval-long.png") });
    await page.click("dialog#approval button[data-decision=decline]");
    await page.locator(".item.toolResult", { hasText: "✘" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("a command or params that do not fit what the app declared fail at once, and nobody is asked", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors, win } = await sheetAndThread(server);
    // The server checks the call against the app's manifest before any approval: the turn's
    // failed result arrives, which it could not while an approval held it.
    await say(page, `/command ${win} setCells {"cells":{"A1":7},"colour":"red"}`);
    const results = page.locator(".item.toolResult", { hasText: "✘" });
    await results.first().waitFor();
    assert.match(await results.first().textContent(), /INVALID_PARAMS/);
    assert.equal(await page.locator("dialog#approval[open]").count(), 0, "asked about a call that cannot run");
    // A command the sheet does not have.
    await say(page, `/command ${win} dropTables {}`);
    await results.nth(1).waitFor();
    assert.match(await results.nth(1).textContent(), /UNKNOWN_TOOL/);
    assert.equal(await page.locator("dialog#approval[open]").count(), 0);
    assert.equal(await page.locator("#approval-list li").count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("an approval pending when the connection drops is asked again once it is back, and answered", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors, win, sheet } = await sheetAndThread(server);
    await say(page, `/command ${win} setCells {"cells":{"D4":"again"}}`);
    await page.locator("dialog#approval[open]").waitFor();
    // A hung server: the heartbeat drops the connection; its request cannot be answered there.
    server.pause();
    await page.locator("#status:not([data-state=connected])").waitFor({ timeout: 25_000 });
    await page.locator("dialog#approval:not([open])").waitFor({ state: "attached" });
    await page.locator(".item.systemNotice", { hasText: "The connection dropped with 1 approval pending" }).waitFor();
    server.resume();
    await page.locator("#status[data-state=connected]").waitFor({ timeout: 25_000 });
    await page.locator("dialog#approval[open]").waitFor();
    assert.match(await page.textContent("#approval-detail pre.params"), /"D4": "again"/);
    await page.click("dialog#approval button[data-decision=accept]");
    await sheet.locator("#D4", { hasText: "again" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
