// The MCP Apps host conformance catalogue against the desktop: the 24 host checks of the ext-apps
// project's `examples/conformance-server` (the MCP Apps spec 2026-01-26), with the same ids, run in
// a view of the desktop in headless Chromium. That server is not published on npm, so it is
// written again here (fixtures/conformance: the same fixture tools and `ui://conformance/runner`
// resource; the checks in plain JavaScript on the published MCP Apps SDK,
// `@modelcontextprotocol/ext-apps` from package-lock.json). The agent (a mock model) lists its MCP
// servers and calls `run_conformance`; the view's checks run inside the sandbox, and this file
// is the Runner, in the operator's place: it accepts the approval the host asks, clicks the
// window's Send/Open, toggles the theme, reads the model's tool list and input, and sees the tab
// a link opened. Offline: every request leaving 127.0.0.1 is answered here (the declared
// `https://modelcontextprotocol.io` and the undeclared `https://example.com`, both reachable, so
// a blocked fetch is the CSP's doing). Prints `conformance: N/24 passed` and each check's result;
// every check passes, or is a departure docs/apps.md ("Conformance") lists with its reason.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { TIMEOUT_MS, inView, launchBrowser, mcpReady, openDesktop, reasoningToolCall, root, say, startMockModel, startServer, textReply, viewFrame, within } from "./harness.mjs";

const OPTIONS = { timeout: 180_000 };
const SERVER = join(root, "tests/browser/fixtures/conformance/server.mjs");
const CHECKS = 24;
/** What the desktop does not pass, and why (docs/apps.md, "Conformance", says the same). */
const DEPARTURES = {
  // The view's origin is opaque (sandbox="allow-scripts", no allow-same-origin): stricter.
  "security/sandbox-permissions": "FAIL",
  // MAY / flexible-only checks: reported as signals, not pass or fail.
  "lifecycle/tool-input-partial": "INFO",
  "dimensions/listen-size-changed": "INFO",
  "messages/consent": "INFO",
};
let browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** The mock model's requests, with a wait for one that `matches`. */
function watched(model) {
  const waiters = [];
  const push = model.requests.push.bind(model.requests);
  model.requests.push = (...items) => {
    const n = push(...items);
    for (const w of [...waiters]) w();
    return n;
  };
  return (matches, what) =>
    within(
      new Promise((resolve) => {
        const look = () => {
          const found = model.requests.find(matches);
          if (!found) return false;
          waiters.splice(waiters.indexOf(look), 1);
          resolve(found);
          return true;
        };
        waiters.push(look);
        look();
      }),
      what,
    );
}

/** The tool names the model was told of the server `conformance` (its `mcp_servers` call `c0`). */
function modelToolList(model) {
  for (const request of model.requests) {
    const told = request?.messages?.find((m) => m.role === "tool" && m.tool_call_id === "c0");
    if (!told) continue;
    const text = typeof told.content === "string" ? told.content : JSON.stringify(told.content);
    const servers = JSON.parse(text).servers ?? [];
    return (servers.find((s) => s.server === "conformance")?.tools ?? []).map((t) => t.name);
  }
  return undefined;
}

test(`the MCP Apps conformance catalogue (${CHECKS} host checks of ext-apps' conformance server) against the desktop`, OPTIONS, async () => {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-conformance-"));
  mkdirSync(join(workspace, ".appserver"), { recursive: true });
  const conformance = { name: "conformance", enabled: true, transport: "stdio", command: process.execPath, args: [SERVER] };
  writeFileSync(join(workspace, ".appserver/mcp.json"), JSON.stringify({ servers: [conformance] }));
  const run = JSON.stringify({ server: "conformance", tool: "run_conformance", arguments: {} });
  const model = await startMockModel([
    reasoningToolCall("Which servers are there?", "c0", "mcp_servers", "{}"),
    reasoningToolCall("Run the suite.", "c1", "mcp_call", run),
    textReply("Launched."),
    textReply("Noted."),
    textReply("Noted."),
    textReply("Noted."),
  ]);
  const modelSaw = watched(model);
  const server = await startServer(model.args, { workspace, port: 0 });
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    const context = page.context();
    // Offline: nothing leaves 127.0.0.1; the two outside origins the checks reach are answered here.
    const opened = [];
    context.on("page", (p) => opened.push(p));
    const outside = (url) => url.hostname !== "127.0.0.1";
    const answer = (route) => {
      const { hostname } = new URL(route.request().url());
      if (hostname === "modelcontextprotocol.io" || hostname === "example.com") return route.fulfill({ status: 200, contentType: "text/plain", body: "ok" });
      return route.abort();
    };
    // The page's own route too (it comes before the context's, and after useWebDist's).
    await context.route(outside, answer);
    await page.route(outside, answer);
    await mcpReady(page, "conformance");
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "run the MCP Apps conformance suite");
    // `run_conformance` declares no annotations: the agent's call is asked of the user.
    await page.locator("dialog#approval[open]").waitFor();
    await page.click("dialog#approval button[data-decision=accept]");
    const win = page.locator('.window.view[data-view="c1"]');
    await win.waitFor();
    const frame = await viewFrame(page, "c1");
    await inView(frame, () => window.conformance?.connected, null, "the runner connected");
    await frame.click("#run");

    const handlers = {
      async approve() {
        await page.locator("dialog#approval[open]").waitFor();
        await page.click("dialog#approval button[data-decision=accept]");
        return true;
      },
      readModelToolList: () => modelToolList(model) ?? null,
      async changeTheme() {
        const theme = await page.evaluate(() => document.documentElement.dataset.theme);
        for (let i = 0; i < 4 && (await page.evaluate(() => document.documentElement.dataset.theme)) === theme; i++) await page.click("#theme-toggle");
        return true;
      },
      async confirmInView({ what }) {
        await win.locator(`.view-notice button.confirm.${what}`).click();
        return true;
      },
      async consentPrompt() {
        const refuse = win.locator(".view-notice button.refuse-send-message");
        const shown = await refuse.waitFor({ timeout: 5_000 }).then(
          () => true,
          () => false,
        );
        if (shown) await refuse.click();
        return { shown };
      },
      async checkLinkOpen({ url }) {
        // A tab the window opened (a new page of the context) that reaches the link.
        const reached = new Promise((resolve) => {
          const watch = (p) => p.waitForURL(url, { timeout: TIMEOUT_MS }).then(() => resolve(true), () => {});
          opened.forEach(watch);
          context.on("page", watch);
        });
        return { ok: await within(reached, `a tab on ${url}`).catch(() => false) };
      },
      async conversationContains({ marker }) {
        const item = page.locator("#messages .item", { hasText: marker }).first();
        return { ok: await item.waitFor().then(() => true, () => false) };
      },
      async modelReceived({ marker }) {
        const seen = await modelSaw((r) => JSON.stringify(r?.messages ?? []).includes(marker), `a model request with ${marker}`).catch(() => undefined);
        return { ok: Boolean(seen) };
      },
    };

    let results;
    for (;;) {
      const request = await within(frame.evaluate(() => window.conformance.next()), "the runner's next request", 60_000);
      if (request.done) {
        results = request.results;
        break;
      }
      const handler = handlers[request.kind];
      assert.ok(handler, `the runner asked for ${request.kind}`);
      const value = await handler(request);
      await frame.evaluate(([seq, value]) => window.conformance.answer(seq, value), [request.seq, value]);
    }

    const passed = results.filter((r) => r.status === "PASS");
    console.log(`conformance: ${passed.length}/${CHECKS} passed`);
    for (const r of results) console.log(`  ${r.status.padEnd(7)} ${r.id}${r.message ? ` — ${r.message}` : ""}`);
    assert.equal(results.length, CHECKS, results.map((r) => r.id).join(", "));
    assert.equal(new Set(results.map((r) => r.id)).size, CHECKS, "ids are unique");
    const departures = Object.fromEntries(results.filter((r) => r.status !== "PASS").map((r) => [r.id, r.status]));
    assert.deepEqual(departures, DEPARTURES, "every check passes, or is a departure docs/apps.md lists");
    const doc = readFileSync(join(root, "docs/apps.md"), "utf8");
    const section = doc.slice(doc.indexOf("### Conformance"), doc.indexOf("## Security model"));
    for (const [id, status] of Object.entries(DEPARTURES)) assert.match(section, new RegExp(`\\| \`${id}\` \\|[^\\n]*\\| ${status}`), `docs/apps.md's Conformance table lists ${id} as ${status}`);
    assert.match(section, new RegExp(`\\*\\*${passed.length} of ${CHECKS} pass\\*\\*`), "docs/apps.md states the pass count measured");
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    await model.close();
  }
});
