// An MCP tool's image and embedded resource are shown under its result in the desktop: the
// published `@modelcontextprotocol/server-everything` (tests/mcp_servers; $APPSERVER_TEST_MCP_SERVERS
// is its `.bin` folder) as the agent's MCP server, its `get-tiny-image` and
// `get-resource-reference` called by the agent (a mock model) by their own names.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { launchBrowser, mcpReady, openDesktop, reasoningToolCall, root, say, startMockModel, startServer, textReply } from "./harness.mjs";

const OPTIONS = { timeout: 120_000 };
const BIN = process.env.APPSERVER_TEST_MCP_SERVERS ?? join(root, "tests/mcp_servers/node_modules/.bin");
const EVERYTHING = join(BIN, "mcp-server-everything");
const SKIP = existsSync(EVERYTHING) ? false : "needs mcp-server-everything (npm ci in tests/mcp_servers, or APPSERVER_TEST_MCP_SERVERS)";
let browser;

before(async () => {
  if (!SKIP) browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

test("an MCP tool's image and embedded resource are shown under its result", { ...OPTIONS, skip: SKIP }, async () => {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-media-"));
  mkdirSync(join(workspace, ".appserver"), { recursive: true });
  const everything = { name: "everything", enabled: true, transport: "stdio", command: EVERYTHING, args: ["stdio"] };
  writeFileSync(join(workspace, ".appserver/mcp.json"), JSON.stringify({ servers: [everything] }));
  const model = await startMockModel([
    reasoningToolCall("Show an image.", "c1", "mcp__everything__get-tiny-image", "{}"),
    reasoningToolCall("And a resource.", "c2", "mcp__everything__get-resource-reference", JSON.stringify({ resourceType: "Text", resourceId: 1 })),
    textReply("Here they are."),
  ]);
  const server = await startServer([...model.args, "--approval-policy", "never"], { workspace, port: 0 });
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await mcpReady(page, "everything");
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "show me");
    await page.locator("#messages .item.agentMessage", { hasText: "Here they are." }).waitFor();
    const image = page.locator("#messages .item.toolResult img.content-item.image").first();
    await image.waitFor();
    assert.match(await image.getAttribute("src"), /^data:image\/png;base64,/);
    // The image decoded: the page's CSP let the data URL in.
    assert.ok(await image.evaluate((img) => img.complete && img.naturalWidth > 0), "the image is drawn");
    const resource = page.locator("#messages .item.toolResult .content-item.resource").first();
    await resource.waitFor();
    assert.match(await resource.textContent(), /📄 \S+/);
    assert.deepEqual(errors, []);
  } finally {
    await server.stop();
    await model.close();
  }
});
