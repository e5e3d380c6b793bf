// The thread list from the user's side, in headless Chromium against the real server: searched
// by title, renamed, archived and deleted (with a second click), each kept by the server.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { launchBrowser, openDesktop, say, startServer } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("threads are searched, renamed, archived and deleted", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    for (const text of ["Groceries for the week", "Tax return 2026", "Holiday plans"]) {
      await page.click("#new-thread");
      await page.locator("#thread-title", { hasText: "New thread" }).waitFor();
      await say(page, text);
      await page.locator("#threads li.current .name", { hasText: text }).waitFor();
    }
    const shown = () => page.locator("#threads li:not([hidden]) .name").allTextContents();

    // Search.
    await page.fill("#thread-search", "tax");
    assert.deepEqual(await shown(), ["Tax return 2026"]);
    await page.fill("#thread-search", "nothing like it");
    assert.deepEqual(await shown(), []);
    await page.locator("#no-thread-match").waitFor();
    await page.fill("#thread-search", "");
    assert.equal((await shown()).length, 3);

    // Rename the open thread (Holiday plans).
    await page.click("#rename-thread");
    await page.fill("#rename-input", "Summer in Lisbon");
    await page.press("#rename-input", "Enter");
    await page.locator("#threads li.current .name", { hasText: "Summer in Lisbon" }).waitFor();
    assert.equal(await page.textContent("#thread-title"), "Summer in Lisbon");
    // Escape cancels a rename.
    await page.click("#rename-thread");
    await page.fill("#rename-input", "not this");
    await page.press("#rename-input", "Escape");
    assert.equal(await page.textContent("#thread-title"), "Summer in Lisbon");

    // Archive it: gone from the list, nothing open.
    await page.click("#archive-thread");
    await page.locator("#threads li .name", { hasText: "Summer in Lisbon" }).waitFor({ state: "detached" });
    assert.equal(await page.textContent("#thread-title"), "No thread");

    // Delete another: the first click only asks.
    await page.click("#threads li button:has-text('Tax return 2026')");
    await page.locator("#thread-title", { hasText: "Tax return 2026" }).waitFor();
    await page.click("#delete-thread");
    assert.equal(await page.textContent("#delete-thread"), "Delete for good?");
    assert.equal(await page.locator("#threads li .name", { hasText: "Tax return 2026" }).count(), 1);
    await page.click("#delete-thread");
    await page.locator("#threads li .name", { hasText: "Tax return 2026" }).waitFor({ state: "detached" });

    // The server kept all of it.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    assert.deepEqual(await shown(), ["Groceries for the week"]);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
