// `npm run prepare`, which npm runs on `npm install` / `npm ci` here, when another project
// installs this folder by path or from git, and before `npm pack` / `npm publish`: compiles the
// SDK into dist/. Installed by path from a fresh checkout, the folder has no node_modules yet, so
// the pinned build tools come first from the committed package-lock.json (`npm ci`, its own
// scripts off so this does not run again).

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const tsc = join(here, "node_modules", "typescript", "bin", "tsc");

// The settings of the npm command that runs this one reach it as npm_config_* variables; those
// that would turn the install of the build tools into nothing (`npm pack --dry-run`, a global or
// production install) are left out.
const env = { ...process.env };
for (const name of ["npm_config_dry_run", "npm_config_global", "npm_config_production", "npm_config_omit"]) {
  delete env[name];
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: here, env, stdio: "inherit", shell: process.platform === "win32" });
  if (result.status !== 0) {
    console.error(`@appserver/client prepare: ${command} ${args.join(" ")} failed`);
    process.exit(result.status ?? 1);
  }
}

if (!existsSync(tsc)) run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--include=dev"]);
run(process.execPath, [tsc, "-p", "tsconfig.json"]);
