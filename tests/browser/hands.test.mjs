// The agent's hands in the desktop, in headless Chromium against the real server (the
// built-in agent, no model): a command's output shown live in a terminal block with its ANSI
// colours, a file write's diff and the turn's changes, a shell approval showing the full
// command, a file approval showing the change, and the plan; a diff side by side on request (the
// choice kept), and the plan's progress. Screenshots go to docs/images.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { IMAGES, launchBrowser, openDesktop, say, startServer } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  mkdirSync(IMAGES, { recursive: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("command output and a file's diff are shown, and the approvals show the command and the change", OPTIONS, async () => {
  const server = await startServer();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");

    // A command: the approval dialog shows it in full; its output is rendered with its colours.
    await say(page, "/exec printf 'plain \\033[31mred\\033[0m done\\n'");
    const dialog = page.locator("dialog#approval[open]");
    await dialog.waitFor();
    assert.match(await page.locator("#approval-detail pre.terminal").textContent(), /\$ printf 'plain \\033\[31mred/);
    await page.screenshot({ path: join(IMAGES, "desktop-shell-approval.png") });
    await page.click("dialog#approval button[data-decision=accept]");
    const command = page.locator(".item.commandExecution[data-command-status=completed]");
    await command.waitFor();
    assert.equal(await command.locator("pre.terminal").textContent(), "plain red done\n");
    const red = command.locator("pre.terminal span", { hasText: "red" });
    assert.equal(await red.evaluate((s) => getComputedStyle(s).color), "rgb(224, 108, 117)");
    assert.match(await command.locator(".command-head").textContent(), /exit 0/);

    // A write: the dialog shows the content it asks to write; the result shows the diff.
    await say(page, "/write notes.txt hello desktop");
    await dialog.waitFor();
    assert.match(await page.locator("#approval-detail pre.diff").textContent(), /\+hello desktop/);
    await page.click("dialog#approval button[data-decision=acceptForSession]");
    const diff = page.locator(".item.toolResult pre.diff");
    await diff.waitFor();
    assert.equal(await diff.locator(".line.add").textContent(), "+hello desktop\n");
    assert.match(await page.locator("#turn-diff pre.diff").textContent(), /\+\+\+ b\/notes\.txt/);
    await page.locator("#changes").evaluate((d) => (d.open = true));
    await page.screenshot({ path: join(IMAGES, "desktop-command-and-diff.png") });

    // The plan.
    await say(page, '/plan {"title":"Ship","todos":[{"id":"a","content":"Write it","status":"in_progress"}]}');
    await page.locator("#plan li.todo.in_progress", { hasText: "Write it" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});

test("a diff is shown side by side on request, the choice is kept, and the plan shows its progress", OPTIONS, async () => {
  const server = await startServer(["--approval-policy", "never"]);
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "/write notes.txt first line");
    await page.locator(".item.toolResult pre.diff").waitFor();
    await say(page, "/edit notes.txt first line => second line");
    await page.locator(".item.toolResult pre.diff").nth(1).waitFor();
    await page.locator(".item.toolResult .diff-toggle").nth(1).click();
    const split = page.locator(".item.toolResult table.diff-split").first();
    await split.waitFor();
    const row = split.locator("tr", { has: page.locator("td.del") });
    assert.deepEqual(await row.locator("td").allTextContents(), ["first line", "second line"]);
    assert.deepEqual(await row.locator("td").evaluateAll((tds) => tds.map((td) => td.className)), ["del", "add"]);
    await page.screenshot({ path: join(IMAGES, "desktop-diff-split.png") });
    // Kept: after a reload every diff is side by side; the switch goes back.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await page.locator(".item.toolResult table.diff-split").nth(1).waitFor();
    assert.equal(await page.locator(".item.toolResult pre.diff").count(), 0);
    await page.locator(".item.toolResult .diff-toggle").first().click();
    await page.locator(".item.toolResult pre.diff").first().waitFor();

    await say(page, '/plan {"title":"Ship","todos":[{"id":"a","content":"Write it","status":"completed"},{"id":"b","content":"Test it","status":"in_progress"},{"id":"c","content":"Ship it","status":"pending"}]}');
    await page.locator("#plan .plan-progress", { hasText: "1 of 3 done" }).waitFor();
    assert.equal(await page.getAttribute("#plan li.todo.in_progress", "aria-label"), "in progress: Test it");
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
