// Accessibility: axe-core (npm, tests/browser/package-lock.json) on the desktop's main screens
// in headless Chromium against the real server — the empty page, a thread with a reply and an
// app window, the approval dialog, the dark theme, and the narrow layout — failing on any
// serious or critical violation. (The apps' own pages, in their sandboxed iframes, are theirs.)

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, test } from "node:test";

import { launchBrowser, openApp, openDesktop, say, startServer } from "./harness.mjs";

const OPTIONS = { timeout: 120_000 };
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** The serious and critical violations axe finds on the page as it is now. */
async function audit(page, what) {
  // Run through the DevTools protocol: the page's Content-Security-Policy (no inline script, no
  // eval) does not apply to it.
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) await page.evaluate(AXE);
  const result = await page.evaluate(() =>
    window.axe.run(document, { iframes: false, resultTypes: ["violations"], runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } }),
  );
  // The audit did run its rules (contrast included), and did not pass by finding nothing to check.
  const ran = [...result.passes, ...result.violations, ...result.incomplete].map((r) => r.id);
  assert.ok(ran.includes("color-contrast") && ran.includes("button-name") && ran.length > 20, `${what}: axe ran ${ran.join(", ")}`);
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  const text = bad.map((v) => `${what}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(" ")).slice(0, 5).join(", ")}`);
  return text;
}

test("axe finds no serious or critical violation on the main screens", OPTIONS, async () => {
  const server = await startServer();
  try {
    const found = [];
    const { page, errors } = await openDesktop(browser, server.base);
    found.push(...(await audit(page, "empty page")));
    const win = await openApp(page, "sheet");
    await page.frameLocator('.window[data-app="sheet"] iframe').locator("#info", { hasText: win }).waitFor();
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "hello");
    await page.locator(".item.agentMessage[data-status=completed]").waitFor();
    await page.fill("#input", "/");
    await page.dispatchEvent("#input", "input");
    await page.locator("#completions li").first().waitFor();
    found.push(...(await audit(page, "thread, completions and a window")));
    await page.fill("#input", "");
    await say(page, `/command ${win} setCells {"cells":{"A1":"1"}}`);
    await page.locator("dialog#approval[open]").waitFor();
    found.push(...(await audit(page, "approval dialog")));
    await page.keyboard.press("Escape");
    await page.locator("#approval-queue").waitFor();
    found.push(...(await audit(page, "approval minimized")));
    await page.click("#theme-toggle");
    await page.click("#theme-toggle");
    assert.equal(await page.getAttribute("html", "data-theme"), "dark");
    found.push(...(await audit(page, "dark theme")));
    await page.setViewportSize({ width: 390, height: 780 });
    found.push(...(await audit(page, "390 px")));
    await page.click("#help");
    found.push(...(await audit(page, "shortcuts")));
    assert.deepEqual(found, []);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("axe finds no serious or critical violation on the agent's hands: command output, diffs, the plan", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "/exec printf 'plain \\033[31mred\\033[0m \\033[32mgreen\\033[0m done\\n'");
    await page.locator(".item.commandExecution[data-command-status=completed]").waitFor();
    await say(page, "/write notes.txt first line");
    await page.locator(".item.toolResult pre.diff").waitFor();
    await say(page, '/plan {"title":"Ship","todos":[{"id":"a","content":"Write it","status":"completed"},{"id":"b","content":"Test it","status":"in_progress"}]}');
    await page.locator("#plan .plan-progress").waitFor();
    await page.locator("#changes").evaluate((d) => (d.open = true));
    const found = await audit(page, "unified diff, command, plan");
    await page.locator(".item.toolResult .diff-toggle").first().click();
    await page.locator(".item.toolResult table.diff-split").waitFor();
    found.push(...(await audit(page, "diff side by side")));
    await page.click("#theme-toggle");
    await page.click("#theme-toggle");
    found.push(...(await audit(page, "the same, dark")));
    assert.deepEqual(found, []);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
