// The desktop's routes as a hostile page meets them, in headless Chromium against the real
// server: an app page opened on its own (not in the desktop's sandboxed iframe) is still
// sandboxed by its Content-Security-Policy, so it has an opaque origin and can neither script
// the desktop nor reach `/` or `/ws`; and the link's `?token=` leaves the address bar once the
// page has its cookie.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { launchBrowser, openDesktop, startServer, TIMEOUT_MS } from "./harness.mjs";

const OPTIONS = { timeout: 90_000 };
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

// An app that, opened top-level, tries what a hostile page would: open the desktop in a window
// of its own and read it (the desktop's page, its cookie-authenticated WebSocket client),
// fetch `/`, and open `/ws`. It writes what it got into the page.
const HOSTILE = `<!doctype html>
<meta charset="utf-8">
<pre id="out"></pre>
<script>
(async () => {
  const got = { origin: self.origin };
  let popup = null;
  try {
    popup = window.open("/", "_blank");
    got.open = popup ? "opened" : "blocked";
  } catch (e) {
    got.open = "threw " + e.name;
  }
  if (popup) {
    got.desktop = "unread";
    for (let i = 0; i < 100 && got.desktop === "unread"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      try {
        if (popup.document.body && popup.document.body.dataset.ready === "true") got.desktop = "read: " + popup.document.title;
      } catch (e) {
        got.desktop = "denied " + e.name;
      }
    }
  }
  try {
    const r = await fetch("/", { credentials: "include" });
    got.fetch = "status " + r.status;
  } catch (e) {
    got.fetch = "failed";
  }
  got.ws = await new Promise((resolve) => {
    try {
      const ws = new WebSocket("ws://" + location.host + "/ws");
      ws.onopen = () => resolve("open");
      ws.onerror = () => resolve("refused");
    } catch (e) {
      resolve("threw " + e.name);
    }
  });
  document.getElementById("out").textContent = JSON.stringify(got);
  document.body.dataset.done = "true";
})();
</script>`;

test("an app page opened on its own is sandboxed: it cannot script the desktop or reach / and /ws", OPTIONS, async () => {
  const server = await startServer();
  try {
    const dir = join(server.workspace, ".appserver/apps/hostile");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "app.json"), JSON.stringify({ name: "Hostile" }));
    writeFileSync(join(dir, "index.html"), HOSTILE);
    // The desktop is open in the same browser, as the user's would be.
    const context = await browser.newContext();
    const desktop = await context.newPage();
    desktop.setDefaultTimeout(TIMEOUT_MS);
    await desktop.goto(server.base + "/");
    await desktop.waitForSelector("body[data-ready=true]");
    const page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT_MS);
    await page.goto(`${server.base}/apps/hostile/index.html`);
    await page.waitForSelector("body[data-done=true]");
    const got = JSON.parse(await page.textContent("#out"));
    assert.equal(got.origin, "null", JSON.stringify(got));
    assert.notEqual(got.open, "opened", JSON.stringify(got));
    assert.equal(got.desktop, undefined, JSON.stringify(got));
    assert.equal(got.fetch, "failed", JSON.stringify(got));
    assert.notEqual(got.ws, "open", JSON.stringify(got));
    await context.close();
  } finally {
    await server.stop();
  }
});

test("the link's ?token= leaves the address bar once the page has its cookie", OPTIONS, async () => {
  const server = await startServer(["--ws-token", "s3cret"]);
  try {
    const { page, errors } = await openDesktop(browser, server.base, "/?token=s3cret");
    const url = new URL(page.url());
    assert.equal(url.searchParams.has("token"), false, page.url());
    assert.doesNotMatch(page.url(), /s3cret/);
    // The page, its WebSocket included, gets in again on the cookie alone.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
  }
});
