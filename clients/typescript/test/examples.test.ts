// The quickstart of docs/clients.md (examples/quickstart.ts), run as a process against the real
// binary: it hosts an app, drives it with /command through an approval, streams the turn to
// completion and reports a typed error.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { startServer, within } from "./server.js";

const quickstart = join(dirname(fileURLToPath(import.meta.url)), "../examples/quickstart.js");

test("the quickstart of docs/clients.md runs", { timeout: 60_000 }, async () => {
  const server = await startServer();
  try {
    const child = spawn(process.execPath, [quickstart, server.url], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c));
    const code = await within(new Promise<number | null>((resolve) => child.on("exit", resolve)), "the quickstart to finish");
    assert.equal(code, 0, out);
    assert.match(out, /approve shell app_command sheet/);
    assert.match(out, /done: completed/);
    assert.match(out, /-32010/);
  } finally {
    await server.stop();
  }
});
