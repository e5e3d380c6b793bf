// An MCP server asks the user during the agent's call of its tool: the published
// `@modelcontextprotocol/server-everything` (tests/mcp_servers, installed by .ci/run with
// `npm ci`; $APPSERVER_TEST_MCP_SERVERS is its `.bin` folder) as the agent's MCP server over
// stdio, its `trigger-elicitation-request` called by the agent (a mock model). The desktop asks
// in a form built from the server's schema (defaults filled in, the required field marked);
// what the user submits, or that they declined, is what the server gets.

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

async function start() {
  const workspace = mkdtempSync(join(tmpdir(), "appserver-elicit-"));
  mkdirSync(join(workspace, ".appserver"), { recursive: true });
  const everything = { name: "everything", enabled: true, transport: "stdio", command: EVERYTHING, args: ["stdio"] };
  writeFileSync(join(workspace, ".appserver/mcp.json"), JSON.stringify({ servers: [everything] }));
  const call = JSON.stringify({ server: "everything", tool: "trigger-elicitation-request", arguments: {} });
  const model = await startMockModel([
    reasoningToolCall("Ask the user.", "c1", "mcp_call", call),
    textReply("Thanks."),
    reasoningToolCall("Ask again.", "c2", "mcp_call", call),
    textReply("Understood."),
  ]);
  const server = await startServer([...model.args, "--approval-policy", "never"], { workspace, port: 0 });
  return {
    server,
    async stop() {
      await server.stop();
      await model.close();
    },
  };
}

test("an MCP server's elicitation is asked in a form built from its schema; the answer, or a decline, is what the server gets", { ...OPTIONS, skip: SKIP }, async () => {
  const { server, stop } = await start();
  try {
    const { page, errors } = await openDesktop(browser, server.base);
    await mcpReady(page, "everything");
    await page.click("#new-thread");
    await page.waitForSelector("#threads li.current");
    await say(page, "ask me something");
    const dialog = page.locator("dialog#elicitation[open]");
    await dialog.waitFor();
    assert.match(await dialog.textContent(), /Please provide inputs for the following fields:/);
    assert.match(await dialog.locator("h2").textContent(), /everything asks \(during trigger-elicitation-request\)/);
    // Defaults are filled in; the required field is marked and must be given.
    assert.equal(await dialog.locator("input[name=firstLine]").inputValue(), "It was a dark and stormy night.");
    assert.equal(await dialog.locator("input[name=integer]").inputValue(), "42");
    assert.equal(await dialog.locator("select[name=untitledSingleSelectEnum]").inputValue(), "Monica");
    assert.equal(await dialog.locator("input[name=name]").getAttribute("required"), "");
    await dialog.locator("input[name=name]").fill("Ada Lovelace");
    await dialog.locator("input[name=check]").check();
    await dialog.locator("input[name=email]").fill("ada@example.com");
    await dialog.locator("button[data-action=accept]").click();
    await dialog.waitFor({ state: "detached" }).catch(() => {});
    const result = page.locator("#messages .item.toolResult").first();
    await result.filter({ hasText: "Name: Ada Lovelace" }).waitFor();
    assert.match(await result.textContent(), /Agreed to terms: true/);
    assert.match(await result.textContent(), /Email: ada@example.com/);
    assert.match(await result.textContent(), /Favorite Integer: 42/);
    await page.locator("#messages .item.agentMessage", { hasText: "Thanks." }).waitFor();

    // Declined: the server is told so.
    await say(page, "ask me again");
    await dialog.waitFor();
    await dialog.locator("button[data-action=decline]").click();
    await page.locator("#messages .item.toolResult", { hasText: "declined to provide" }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await stop();
  }
});
