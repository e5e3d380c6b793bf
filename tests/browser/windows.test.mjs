// The desk's window manager, the narrow layout and the keyboard, from the user's side in headless
// Chromium against the real server: windows dragged, resized, minimized, maximized and tiled,
// and a reload puts them back; at 390 px the page fits and every pane is reached through its
// tabs; a keyboard-only flow opens an app, answers an approval and switches threads, and a thread that
// opens slowly does not take back the focus.
// Screenshots go to docs/images.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, launchBrowser, openApp, openDesktop, say, startServer, within } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  mkdirSync(IMAGES, { recursive: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** A window's box on the desk, from its style (what the window manager set) and the screen. */
function box(page, app) {
  return page.locator(`.window[data-app="${app}"]`).evaluate((w) => ({
    left: w.offsetLeft,
    top: w.offsetTop,
    width: w.offsetWidth,
    height: w.offsetHeight,
    state: w.dataset.state,
  }));
}

/** What has the keyboard focus: its id, or else its text. */
function focusedName(page) {
  return page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent?.trim());
}

/** Drags from the centre of `locator` by (dx, dy) with the mouse. */
async function drag(page, locator, dx, dy) {
  const b = await locator.boundingBox();
  const x = b.x + b.width / 2;
  const y = b.y + b.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + dx, y + dy, { steps: 8 });
  await page.mouse.up();
}

test("windows move, resize, minimize, maximize and tile, and a reload keeps their layout", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await openApp(page, "sheet");
    await openApp(page, "jobs");
    const start = await box(page, "sheet");

    // Minimize to the taskbar, and back.
    await page.click('.window[data-app="jobs"] button.minimize');
    assert.equal(await page.locator('.window[data-app="jobs"]').isHidden(), true);
    await page.click('#taskbar button[data-app="jobs"]');
    await page.locator('.window[data-app="jobs"]').waitFor();

    // Drag the title bar; drag the corner.
    await drag(page, page.locator('.window[data-app="sheet"] header .title'), 60, 40);
    const moved = await box(page, "sheet");
    assert.deepEqual([moved.left - start.left, moved.top - start.top], [60, 40]);
    await drag(page, page.locator('.window[data-app="sheet"] .resize-handle'), -80, -50);
    const sized = await box(page, "sheet");
    assert.deepEqual([sized.width - moved.width, sized.height - moved.height, sized.left], [-80, -50, moved.left]);

    // Maximize fills the desk; again restores.
    await page.click('.window[data-app="sheet"] button.maximize');
    const desk = await page.locator("#desk").evaluate((d) => ({ width: d.clientWidth, height: d.clientHeight }));
    const max = await box(page, "sheet");
    assert.deepEqual([max.left, max.top, max.width, max.height, max.state], [0, 0, desk.width, desk.height, "maximized"]);
    await page.click('.window[data-app="sheet"] button.maximize');
    assert.deepEqual(await box(page, "sheet"), sized);

    // Tile: side by side, no overlap, inside the desk.
    await page.click("#tile");
    const [a, b] = [await box(page, "sheet"), await box(page, "jobs")];
    assert.ok(a.left + a.width <= b.left || b.left + b.width <= a.left, JSON.stringify([a, b]));
    for (const w of [a, b]) assert.ok(w.left >= 0 && w.top >= 0 && w.left + w.width <= desk.width && w.top + w.height <= desk.height, JSON.stringify(w));
    await page.screenshot({ path: join(IMAGES, "desktop-windows.png") });

    // A layout of our own, one window minimized; a reload brings it back.
    await drag(page, page.locator('.window[data-app="sheet"] header .title'), 30, 20);
    await page.click('.window[data-app="jobs"] button.minimize');
    const before = await box(page, "sheet");
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator('.window[data-app="sheet"][data-window-id]').waitFor();
    assert.deepEqual(await box(page, "sheet"), before);
    await page.locator('#taskbar button[data-app="jobs"]').waitFor();
    assert.equal(await page.locator('.window[data-app="jobs"]').isHidden(), true);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("at 390 px (and 360 px) the page fits and every pane is reached through its tabs", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base, "/", { width: 390, height: 780 });
    const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= innerWidth && document.body.scrollWidth <= innerWidth);
    const inView = (selector) =>
      page.locator(selector).evaluate((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.left >= 0 && r.right <= innerWidth;
      });
    assert.equal(await fits(), true);
    // The conversation first.
    assert.equal(await inView("#conversation"), true);
    assert.equal(await page.locator("#sidebar").isHidden(), true);
    // Threads and apps.
    await page.click('#tabs button[data-pane="threads"]');
    assert.equal(await inView("#sidebar"), true);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await page.screenshot({ path: join(IMAGES, "desktop-narrow-threads.png") });
    await page.click("#threads li.current button");
    assert.equal(await inView("#conversation"), true);
    await say(page, "hello from a phone");
    await page.locator(".item.agentMessage[data-status=completed]").waitFor();
    assert.equal(await fits(), true);
    await page.screenshot({ path: join(IMAGES, "desktop-narrow-chat.png") });
    // An app opened from the list shows the windows.
    await page.click('#tabs button[data-pane="threads"]');
    const win = await openApp(page, "sheet");
    await page.frameLocator('.window[data-app="sheet"] iframe').locator("#info", { hasText: win }).waitFor();
    assert.equal(await inView('.window[data-app="sheet"]'), true);
    assert.equal(await fits(), true);
    await page.screenshot({ path: join(IMAGES, "desktop-narrow-windows.png") });
    // An approval fits too.
    await page.click('#tabs button[data-pane="chat"]');
    await say(page, `/command ${win} setCells {"cells":{"A1":"phone"}}`);
    await page.locator("dialog#approval[open]").waitFor();
    assert.equal(await inView("dialog#approval"), true);
    assert.equal(await inView("dialog#approval button[data-decision=accept]"), true);
    await page.click("dialog#approval button[data-decision=accept]");
    await page.locator(".item.toolResult", { hasText: "✔" }).waitFor();
    // Between the layouts, three columns that fit.
    await page.setViewportSize({ width: 800, height: 740 });
    assert.equal(await fits(), true, "800 px");
    assert.equal(await inView("#windows"), true);
    // Down to 360 px, every pane still fits.
    await page.setViewportSize({ width: 360, height: 740 });
    for (const pane of ["threads", "chat", "desk"]) {
      await page.click(`#tabs button[data-pane="${pane}"]`);
      assert.equal(await fits(), true, pane);
    }
    assert.equal(await inView('.window[data-app="sheet"]'), true);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("keyboard only: open an app, answer an approval, switch threads", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const focused = () => focusedName(page);
    const press = (key) => page.keyboard.press(key);
    // Two threads, from the keyboard.
    await press("Alt+1");
    assert.equal(await focused(), "new-thread");
    await press("Enter");
    await page.waitForSelector("#threads li.current");
    const first = await page.getAttribute("#threads li.current", "data-id");
    await press("Alt+n");
    await page.locator(`#threads li.current:not([data-id="${first}"])`).waitFor();
    assert.equal(await focused(), "input");

    // Open the sheet: Alt+2, the arrows, Enter (once the app list has loaded: Alt+2 focuses
    // its first entry, and with none yet it leaves the focus where it is).
    await page.locator("#apps li button").first().waitFor();
    await press("Alt+2");
    for (let i = 0; i < 5 && !(await focused())?.includes("Sheet"); i++) await press("ArrowDown");
    assert.match(await focused(), /Sheet/);
    await press("Enter");
    await page.locator('.window[data-app="sheet"][data-window-id]').waitFor();
    const win = await page.getAttribute('.window[data-app="sheet"]', "data-window-id");

    // Ask, and answer with the keyboard: Tab to Accept, Enter.
    await press("Alt+3");
    assert.equal(await focused(), "input");
    // The completions take the arrow keys: the second, chosen with Enter; Escape closes the list.
    await page.keyboard.type("/");
    await page.locator("#completions li").nth(1).waitFor();
    const second = await page.getAttribute("#completions li >> nth=1", "data-name");
    await press("ArrowDown");
    await press("ArrowDown");
    assert.equal(await page.getAttribute("#completions li >> nth=1", "aria-selected"), "true");
    assert.equal(await page.getAttribute("#input", "aria-activedescendant"), "completion-1");
    await press("Enter");
    assert.equal(await page.inputValue("#input"), `${second} `);
    await page.fill("#input", "");
    await page.keyboard.type("/");
    await page.locator("#completions li").first().waitFor();
    await press("Escape");
    assert.equal(await page.isHidden("#completions"), true);
    await page.fill("#input", "");
    await page.keyboard.type(`/command ${win} setCells {"cells":{"E8":"keys"}}`);
    await press("Enter");
    await page.locator("dialog#approval[open]").waitFor();
    for (let i = 0; i < 12 && (await page.evaluate(() => document.activeElement?.dataset?.decision)) !== "accept"; i++) await press("Tab");
    await press("Enter");
    await page.frameLocator('.window[data-app="sheet"] iframe').locator("#E8", { hasText: "keys" }).waitFor();

    // Switch back to the first thread: Alt+1, the arrows, Enter.
    await press("Alt+1");
    await press("ArrowDown");
    await press("Enter");
    await page.locator(`#threads li.current[data-id="${first}"]`).waitFor();
    // The window's title bar takes the keys too.
    await press("Alt+4");
    const before = await box(page, "sheet");
    await press("Alt+ArrowRight");
    await press("Alt+Shift+ArrowDown");
    const after = await box(page, "sheet");
    assert.deepEqual([after.left - before.left, after.height - before.height], [20, 20]);
    await press("Alt+m");
    await page.locator('#taskbar button[data-app="sheet"]').waitFor();
    // The shortcuts are listed behind the ? button.
    await page.click("#help");
    await page.locator("dialog#shortcuts[open] dt", { hasText: "Alt+N" }).waitFor();
    await page.screenshot({ path: join(IMAGES, "desktop-shortcuts.png") });
    await press("Escape");
    await page.locator("dialog#shortcuts:not([open])").waitFor({ state: "attached" });
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("a new thread that opens slowly leaves the focus where the user moved it meanwhile", OPTIONS, async () => {
  const server = await startServer();
  try {
    // The server's answer to the new thread's thread/subscribe (the last step of opening it) is
    // held until the user has moved the focus to the apps with Alt+2.
    const subscribes = new Set();
    let hold = false;
    let pageSocket;
    let releaseHeld;
    const held = new Promise((resolve) => (releaseHeld = resolve));
    const socket = (ws) => {
      const upstream = ws.connectToServer();
      pageSocket = ws;
      ws.onMessage((text) => {
        const message = JSON.parse(text);
        if (message.method === "thread/subscribe") subscribes.add(message.id);
        upstream.send(text);
      });
      upstream.onMessage((text) => {
        const message = JSON.parse(text);
        if (hold && subscribes.has(message.id)) releaseHeld(text);
        else ws.send(text);
      });
    };
    const { page, errors } = await openDesktop(browser, server.base, "/", undefined, { socket });
    const focused = () => focusedName(page);
    await page.locator("#apps li button").first().waitFor();
    await page.keyboard.press("Alt+3");
    assert.equal(await focused(), "input");
    hold = true;
    await page.keyboard.press("Alt+n");
    const answer = await within(held, "the answer to the new thread's thread/subscribe");
    const threadId = await page.getAttribute("#threads li.current", "data-id");
    await page.keyboard.press("Alt+2");
    const moved = await focused();
    assert.notEqual(moved, "input");
    assert.equal(moved, (await page.locator("#apps li button").first().textContent()).trim());
    // The held answer, then a notification the page shows: by the time it shows, the page has
    // finished opening the thread (one socket, messages handled in order, each handler's
    // continuations run before the next message).
    pageSocket.send(answer);
    pageSocket.send(JSON.stringify({ jsonrpc: "2.0", method: "thread/renamed", params: { threadId, displayName: "opened" } }));
    await page.locator(`#threads li[data-id="${threadId}"] .name`, { hasText: "opened" }).waitFor();
    assert.equal(await focused(), moved);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("reloading and closing windows is not reported as foreign messages", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    for (const app of ["sheet", "counter"]) {
      const win = await openApp(page, app);
      await page.click(`.window[data-app="${app}"] button.reload`);
      await page.locator(`.window[data-app="${app}"][data-window-id="${win}"]:not(.reloading)`).waitFor();
      await page.click(`.window[data-app="${app}"] button.close`);
      await page.locator(`.window[data-app="${app}"]`).waitFor({ state: "detached" });
    }
    // One more message round trip, so any late message has been handled.
    await openApp(page, "sheet");
    assert.equal(await page.getAttribute("#ignored", "data-count"), "0");
    assert.equal(await page.textContent("#ignored"), "");
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("clicking into an app brings its window to the front", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await openApp(page, "sheet");
    await openApp(page, "jobs");
    const z = (app) => page.locator(`.window[data-app="${app}"]`).evaluate((w) => Number(w.style.zIndex));
    assert.ok((await z("jobs")) > (await z("sheet")));
    // The sheet lies under the jobs window, a strip of its left edge still showing: click there.
    const frame = await page.locator('.window[data-app="sheet"] iframe').boundingBox();
    await page.mouse.click(frame.x + 8, frame.y + 150);
    for (let i = 0; i < 100 && (await z("sheet")) < (await z("jobs")); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok((await z("sheet")) > (await z("jobs")));
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
