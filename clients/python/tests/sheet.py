"""A tiny spreadsheet app for the tests: cells keyed by address, set with `setCells`."""

from typing import Dict, List, Tuple

from appserver_client import AppError, AppHandlers

MANIFEST = {
    "appId": "sheet",
    "name": "Sheet",
    "description": "Cells keyed by address.",
    "state": {"cells": {"description": "All cell values keyed by address"}},
    "commands": {
        "setCells": {
            "description": "Set one or more cell values",
            "params": {
                "type": "object",
                "properties": {"cells": {"type": "object", "additionalProperties": {"type": "string"}}},
                "required": ["cells"],
            },
        },
        "render": {
            "description": "Render in the background; progress arrives as events",
            "params": {"type": "object", "properties": {"steps": {"type": "integer"}}},
            "streams": ["render.progress"],
        },
    },
    "events": {"render.progress": {"description": "One step: { step, of }"}},
}


class Sheet:
    def __init__(self) -> None:
        self.cells: Dict[str, str] = {}
        self.received: List[Tuple[str, bool]] = []
        self.resets = 0
        self.handlers = AppHandlers(query=self.query, commands={"setCells": self.set_cells, "render": self.render}, reset=self.reset)

    def query(self, state_key: str):
        if state_key == "cells":
            return dict(self.cells)
        raise AppError("INVALID_PARAMS", f"unknown state key {state_key}")

    def set_cells(self, params, ctx):
        self.received.append(("setCells", ctx.replay))
        self.cells.update(params["cells"])
        return {"ok": True, "count": len(params["cells"])}

    def render(self, params, ctx):
        steps = params.get("steps", 2)
        for step in range(1, steps + 1):
            ctx.emit("run_1", "render.progress", {"step": step, "of": steps})
        return {"runId": "run_1"}

    def reset(self) -> None:
        self.resets += 1
        self.cells = {}
