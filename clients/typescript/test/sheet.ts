// A tiny spreadsheet app for the tests: cells keyed by address, set with `setCells`.

import { AppError, type AppHandlers, type AppManifest } from "../src/index.js";

export const sheetManifest: AppManifest = {
  appId: "sheet",
  name: "Sheet",
  description: "Cells keyed by address.",
  state: { cells: { description: "All cell values keyed by address" } },
  commands: {
    setCells: {
      description: "Set one or more cell values",
      params: {
        type: "object",
        properties: { cells: { type: "object", additionalProperties: { type: "string" } } },
        required: ["cells"],
      },
    },
    render: {
      description: "Render in the background; progress arrives as events",
      params: { type: "object", properties: { steps: { type: "integer" } } },
      streams: ["render.progress"],
    },
  },
  events: { "render.progress": { description: "One step: { step, of }" } },
};

/** The sheet's state and handlers; `received` records every command as [name, replay]. */
export function sheet(): { cells: Record<string, string>; received: Array<[string, boolean]>; resets: number; handlers: AppHandlers } {
  const self = {
    cells: {} as Record<string, string>,
    received: [] as Array<[string, boolean]>,
    resets: 0,
    handlers: {} as AppHandlers,
  };
  self.handlers = {
    query(stateKey) {
      if (stateKey === "cells") return { ...self.cells };
      throw new AppError("INVALID_PARAMS", `unknown state key ${stateKey}`);
    },
    commands: {
      setCells(params: { cells: Record<string, string> }, ctx) {
        self.received.push(["setCells", ctx.replay]);
        Object.assign(self.cells, params.cells);
        return { ok: true, count: Object.keys(params.cells).length };
      },
      render(params: { steps?: number }, ctx) {
        const steps = params.steps ?? 2;
        for (let step = 1; step <= steps; step++) ctx.emit("run_1", "render.progress", { step, of: steps });
        return { runId: "run_1" };
      },
    },
    reset() {
      self.resets += 1;
      self.cells = {};
    },
  };
  return self;
}
