// The quickstart of docs/clients.md (examples/quickstart.ts), run as a process against the real
// binary: it hosts an app, drives it with /command through an approval, streams the turn to
// completion, reports a typed error and unregisters its app with `forget`. Run twice on one
// server, it leaves no window behind.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { AppServerClient } from "../src/index.js";
import { startServer, within } from "./server.js";

const quickstart = join(dirname(fileURLToPath(import.meta.url)), "../examples/quickstart.js");

async function runQuickstart(url: string): Promise<string> {
  const child = spawn(process.execPath, [quickstart, url], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c));
  const code = await within(new Promise<number | null>((resolve) => child.on("exit", resolve)), "the quickstart to finish");
  assert.equal(code, 0, out);
  return out;
}

test("the quickstart of docs/clients.md runs, twice, and leaves no window behind", { timeout: 120_000 }, async () => {
  const server = await startServer();
  try {
    for (let run = 0; run < 2; run++) {
      const out = await runQuickstart(server.url);
      assert.match(out, /approve shell app_command sheet/);
      assert.match(out, /done: completed/);
      assert.match(out, /-32010/);
    }
    const client = await within(
      AppServerClient.connect({ url: server.url, clientInfo: { name: "examples-test", version: "1.0.0" } }),
      "connect",
    );
    try {
      const { apps } = await within(client.request("app/list", {}), "app/list");
      assert.deepEqual(
        apps.filter((app) => app.appId === "sheet"),
        [],
        "a quickstart run left its window (and its log) behind",
      );
    } finally {
      client.close();
    }
  } finally {
    await server.stop();
  }
});
