// Builds dist/ (committed, embedded in the server binary): the page's script bundled with
// esbuild from src/desktop.ts (which uses the TypeScript SDK in ../typescript/src), the iframe
// app SDK from src/app-sdk.ts, and the page, the stylesheet and the views' sandbox proxy page copied as they are. The page's bundle
// (with marked, DOMPurify and highlight.js, from package-lock.json) is minified; the app SDK is
// kept readable for app authors.
// `node build.mjs --check` builds in memory and fails when dist/ differs (CI runs it).

import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const check = process.argv.includes("--check");

const common = {
  bundle: true,
  write: false,
  format: "iife",
  target: "es2020",
  platform: "browser",
  charset: "utf8",
  legalComments: "none",
  logLevel: "warning",
  // The SDK's Node-only transports are loaded on demand and never in a browser.
  external: ["ws", "node:child_process"],
};

// The bundled libraries' notices (their licences ask for them in every copy); esbuild keeps only
// `/*! … */` comments, which marked and highlight.js do not use.
const NOTICE = `/*! appserver desktop. Bundled: marked (MIT; Copyright (c) 2018+, MarkedJS; Copyright (c) 2011-2018, Christopher Jeffrey),
 DOMPurify (Apache-2.0 or MPL-2.0; Cure53 and other contributors), highlight.js (BSD-3-Clause; Copyright (c) 2006, Ivan Sagalaev),
 their full licences in their npm packages (clients/web/package-lock.json). */`;

const outputs = {};
for (const [entry, out, minify] of [
  ["src/desktop.ts", "desktop.js", true],
  ["src/app-sdk.ts", "appserver-app.js", false],
]) {
  const banner = minify ? { js: NOTICE } : undefined;
  const result = await esbuild.build({ ...common, minify, banner, legalComments: minify ? "eof" : "none", entryPoints: [join(here, entry)], outfile: join(here, "dist", out) });
  outputs[out] = result.outputFiles[0].text;
}
for (const file of ["index.html", "desktop.css", "view-frame.html"]) outputs[file] = readFileSync(join(here, "src", file), "utf8");

let stale = [];
for (const [name, text] of Object.entries(outputs)) {
  const path = join(here, "dist", name);
  if (check) {
    let current = null;
    try {
      current = readFileSync(path, "utf8");
    } catch {}
    if (current !== text) stale.push(name);
  } else {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
}
if (stale.length) {
  console.error(`clients/web/dist is out of date (${stale.join(", ")}): run \`npm run build\` in clients/web and commit dist/`);
  process.exit(1);
}
console.log(check ? "clients/web/dist is up to date" : "built clients/web/dist");
