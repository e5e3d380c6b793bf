"""The quickstart of docs/clients.md: start a thread, stream a turn, answer an approval, host an app.

    python examples/quickstart.py ws://127.0.0.1:8080/ws   (the test suite runs it)
"""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from appserver_client import AppError, AppHandlers, AppServerClient, Reconnect, RpcError


async def main() -> None:
    # WebSocket (or: AppServerClient.connect(spawn=("appserver", ["--listen", "stdio://"])))
    client = await AppServerClient.connect(
        sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/ws",
        client_info={"name": "my-bot", "version": "1.0.0"},
        reconnect=Reconnect(initial_delay=0.1, max_delay=5.0),
    )

    # Approvals and dynamic tools.
    async def approve(req):
        print(f"approve {req['approvalType']} {req['operation']}?")
        return {"decision": "accept"}  # or acceptForSession, acceptAlways, decline, cancel

    client.on_approval(approve)
    client.on_tool_call(lambda call: {"success": True, "contentItems": [{"type": "text", "text": "done"}]})

    # Host an app.
    cells: dict = {}

    def query(key):
        if key == "cells":
            return cells
        raise AppError("INVALID_PARAMS", f"unknown state key {key}")

    def set_cells(params, ctx):  # ctx.replay is True while the server replays the log
        cells.update(params["cells"])
        return {"ok": True}

    manifest = {
        "appId": "sheet",
        "name": "Sheet",
        "state": {"cells": {"description": "All cell values"}},
        "commands": {"setCells": {"description": "Set cells", "params": {"type": "object", "required": ["cells"]}}},
    }
    sheet = await client.register_app(manifest, AppHandlers(query=query, commands={"setCells": set_cells}, reset=cells.clear))

    # Start a thread and stream a turn to its end.
    thread = (await client.request("thread/start", {"identity": {"channelName": "my-bot", "userId": "me"}}))["thread"]
    line = f'/command {sheet.window_id} setCells {{"cells":{{"A1":"42"}}}}'
    turn, events = await client.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": line}]})
    async for n in events:
        if n.method == "item/agentMessage/delta":
            print(n.params["delta"], end="")
        elif n.method == "turn/completed":
            print("\ndone:", n.params["turn"]["status"])

    # Typed errors carry the JSON-RPC code.
    try:
        await client.request("thread/read", {"threadId": "thread_missing"})
    except RpcError as err:
        print(err.code)  # -32010

    # Unregister the app, forgetting its log: without this the server keeps a dead "Sheet" window
    # (and its log, to replay to a host that comes back) after every run.
    await client.unregister_app(sheet.window_id, forget=True)
    await client.close()


asyncio.run(main())
