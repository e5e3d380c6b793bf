"""The Python SDK against the real appserver binary: a streamed turn, an approval, a dynamic tool,
an app the agent drives with /command, reconnecting with the app restored by replay, typed
errors, the stdio transport, and the generated types."""

import asyncio
import shutil
import tempfile
import typing

import pytest
from sheet import MANIFEST, Sheet
from support import IDENTITY, TIMEOUT, MockModel, running_server, server_binary, text_reply, tool_call_reply

from appserver_client import AppServerClient, Reconnect, RpcError, protocol


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 3 * TIMEOUT))


def completed(events, kind):
    return [n.params["item"]["payload"] for n in events if n.method == "item/completed" and n.params["item"]["type"] == kind]


def test_a_turn_streams_to_completion():
    async def body():
        async with running_server() as server:
            client = await AppServerClient.connect(server.url, client_info={"name": "py-test", "version": "1"})
            try:
                assert client.server_info["serverInfo"]["protocolVersion"] == protocol.PROTOCOL_VERSION
                thread = (await client.thread_start({"identity": IDENTITY}))["thread"]
                turn, events = await client.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": "hello"}]})
                seen = await events.collect(TIMEOUT)
                assert seen[0].method == "turn/started"
                assert seen[-1].method == "turn/completed"
                deltas = [n.params["delta"] for n in seen if n.method == "item/agentMessage/delta"]
                assert len(deltas) > 1, "the answer streams in several deltas"
                assert completed(seen, "agentMessage")[0]["text"] == "".join(deltas)
                assert all(n.turn_id == turn["id"] for n in seen)
            finally:
                await client.close()

    run(body())


def test_an_app_is_driven_with_command_and_its_approval_is_answered():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url)
            user = await AppServerClient.connect(server.url)
            try:
                sheet = Sheet()
                registration = await host.register_app(MANIFEST, sheet.handlers)
                assert registration.window_id.startswith("win_")
                approvals = []

                async def approve(params):
                    approvals.append(params)
                    return {"decision": "accept"}

                user.on_approval(approve)
                thread = (await user.request("thread/start", {"identity": IDENTITY}))["thread"]
                line = f'/command {registration.window_id} setCells {{"cells":{{"A1":"7"}}}}'
                _, events = await user.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": line}]})
                seen = await events.collect(TIMEOUT)
                assert seen[-1].method == "turn/completed"
                assert len(approvals) == 1
                assert approvals[0]["scopeKey"] == "app:sheet:setCells"
                assert any(n.method == "item/approval/resolved" for n in seen)
                assert sheet.cells == {"A1": "7"}
                assert completed(seen, "toolResult")[0]["success"] is True
                state = await user.request("app/query", {"windowId": registration.window_id, "stateKey": "cells"})
                assert state["data"] == {"A1": "7"}
            finally:
                await host.close()
                await user.close()

    run(body())


def test_an_apps_streamed_events_reach_other_clients():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url)
            controller = await AppServerClient.connect(server.url)
            try:
                window = (await host.register_app(MANIFEST, Sheet().handlers)).window_id
                events = controller.notifications(lambda n: n.method == "app/event")
                result = await controller.app_command({"windowId": window, "command": "render", "params": {"steps": 2}})
                assert result == {"result": {"runId": "run_1"}}
                seen = []

                async def two():
                    async for n in events:
                        seen.append(n.params)
                        if len(seen) == 2:
                            return

                await asyncio.wait_for(two(), TIMEOUT)
                assert [(p["windowId"], p["runId"], p["type"], p["payload"]) for p in seen] == [
                    (window, "run_1", "render.progress", {"step": 1, "of": 2}),
                    (window, "run_1", "render.progress", {"step": 2, "of": 2}),
                ]
            finally:
                await host.close()
                await controller.close()

    run(body())


def test_a_subscriber_streams_another_clients_turn_per_thread_and_per_turn():
    async def body():
        async with running_server(["--enable-debug-methods"]) as server:
            user = await AppServerClient.connect(server.url)
            watcher = await AppServerClient.connect(server.url)
            try:
                thread = (await user.thread_start({"identity": IDENTITY}))["thread"]
                await watcher.thread_subscribe({"threadId": thread["id"]})
                thread_events = watcher.thread_events(thread["id"])
                turn, events = await user.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": "hi"}]})
                own = await events.collect(TIMEOUT)
                watched = await thread_events.until(lambda n: n.method == "turn/completed").collect(TIMEOUT)
                assert [n.method for n in watched if n.turn_id == turn["id"]] == [n.method for n in own]
                assert any(n.method == "thread/runtimeChanged" for n in watched)
                # A second turn, held open by the debug-block tool so that the watcher's stream
                # certainly exists before the turn can end; released, it streams to its end.
                blocked = [{"type": "commandRef", "name": "debug-block", "argsText": "", "rawText": "/debug-block"}]
                second = (await user.turn_start({"threadId": thread["id"], "input": blocked}))["turn"]
                per_turn = watcher.turn_events(thread["id"], second["id"])
                await watcher.request("debug/release", {"threadId": thread["id"]})  # type: ignore[arg-type]
                seen = await per_turn.collect(TIMEOUT)
                assert seen[-1].method == "turn/completed"
                assert all(n.turn_id == second["id"] for n in seen)
            finally:
                await user.close()
                await watcher.close()

    run(body())


def test_a_declined_approval_fails_the_app_command():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url)
            user = await AppServerClient.connect(server.url)
            try:
                sheet = Sheet()
                window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
                user.on_approval(lambda _params: {"decision": "decline"})
                thread = (await user.request("thread/start", {"identity": IDENTITY}))["thread"]
                line = f'/command {window} setCells {{"cells":{{"A1":"7"}}}}'
                _, events = await user.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": line}]})
                seen = await events.collect(TIMEOUT)
                assert completed(seen, "toolResult")[0]["success"] is False
                assert sheet.cells == {}, "the app was never asked"
            finally:
                await host.close()
                await user.close()

    run(body())


def test_a_dynamic_tool_call_is_answered_by_its_handler():
    async def body():
        mock = await MockModel([tool_call_reply("call_d", "review__lookup", '{"q":"x"}'), text_reply("Found it.")]).start()
        args = ["--model", "mock-model", "--base-url", mock.base_url, "--api-key", "k"]
        try:
            async with running_server(args) as server:
                client = await AppServerClient.connect(server.url)
                try:
                    calls = []

                    def lookup(params):
                        calls.append(params)
                        return {"success": True, "contentItems": [{"type": "text", "text": "x is 7"}]}

                    client.on_tool_call(lookup)
                    tools = [{"namespace": "review", "name": "lookup", "description": "Look something up",
                              "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
                    thread = (await client.request("thread/start", {"identity": IDENTITY, "dynamicTools": tools}))["thread"]
                    _, events = await client.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": "look up x"}]})
                    seen = await events.collect(TIMEOUT)
                    assert seen[-1].method == "turn/completed"
                    assert [(c["namespace"], c["tool"], c["arguments"]) for c in calls] == [("review", "lookup", {"q": "x"})]
                    item = completed(seen, "dynamicToolCall")[0]
                    assert item["success"] is True
                    assert item["contentItems"][0]["text"] == "x is 7"
                    last = mock.requests[1]["messages"][-1]
                    assert last == {"role": "tool", "tool_call_id": "call_d", "content": "x is 7"}
                finally:
                    await client.close()
        finally:
            mock.close()

    run(body())


def test_a_host_reconnects_and_its_app_comes_back_by_replay():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url, reconnect=Reconnect(initial_delay=0.02, max_delay=0.2, max_attempts=50))
            controller = await AppServerClient.connect(server.url)
            try:
                sheet = Sheet()
                window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
                for cells in ({"A1": "1"}, {"B2": "2"}):
                    await controller.request("app/command", {"windowId": window, "command": "setCells", "params": {"cells": cells}})
                assert sheet.resets == 1

                back = asyncio.Event()
                host.on_reconnect(back.set)
                host.drop_connection()
                await asyncio.wait_for(back.wait(), TIMEOUT)
                assert sheet.resets == 2, "the state was reset before re-registering"
                assert sheet.received[2:] == [("setCells", True), ("setCells", True)], "the log was replayed"
                assert sheet.cells == {"A1": "1", "B2": "2"}
                state = await controller.request("app/query", {"windowId": window, "stateKey": "cells"})
                assert state["data"] == {"A1": "1", "B2": "2"}
                apps = (await controller.request("app/list", {}))["apps"]
                assert [a["live"] for a in apps if a["windowId"] == window] == [True]
                await controller.request("app/command", {"windowId": window, "command": "setCells", "params": {"cells": {"C3": "3"}}})
                assert sheet.cells["C3"] == "3"
            finally:
                await host.close()
                await controller.close()

    run(body())


def test_a_bad_request_is_a_typed_error_with_the_json_rpc_code():
    async def body():
        async with running_server() as server:
            client = await AppServerClient.connect(server.url)
            try:
                with pytest.raises(RpcError) as missing:
                    await client.request("thread/read", {"threadId": "thread_missing"})
                assert missing.value.code == -32010
                with pytest.raises(RpcError) as invalid:
                    await client.request("turn/start", {"threadId": 7})
                assert invalid.value.code == -32602
                assert "Invalid params" in invalid.value.message
                with pytest.raises(RpcError) as no_app:
                    await client.request("app/query", {"windowId": "win_none", "stateKey": "x"})
                assert (no_app.value.code, no_app.value.app_code) == (-32070, "APP_NOT_FOUND")
            finally:
                await client.close()

    run(body())


def test_a_server_with_a_websocket_token_is_reached_with_the_token_and_refused_without():
    async def body():
        async with running_server(["--ws-token", "s3cret"]) as server:
            with pytest.raises(Exception, match="401"):
                await AppServerClient.connect(server.url)
            client = await AppServerClient.connect(server.url, token="s3cret")
            assert client.server_info["serverInfo"]["name"] == "dotcraft"
            await client.close()

    run(body())


def test_the_stdio_transport_spawns_the_server():
    async def body():
        workspace = tempfile.mkdtemp(prefix="appserver-py-stdio-")
        try:
            client = await AppServerClient.connect(
                spawn=(server_binary(), ["--workspace", workspace, "--listen", "stdio://"])
            )
            try:
                thread = (await client.request("thread/start", {"identity": IDENTITY}))["thread"]
                _, events = await client.start_turn({"threadId": thread["id"], "input": [{"type": "text", "text": "hi"}]})
                seen = await events.collect(TIMEOUT)
                assert seen[-1].method == "turn/completed"
            finally:
                await client.close()
        finally:
            shutil.rmtree(workspace, ignore_errors=True)

    run(body())


def test_the_generated_types_resolve():
    # Every forward reference in the generated module names a type it defines.
    for name in dir(protocol):
        value = getattr(protocol, name)
        if isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__annotations__"):
            typing.get_type_hints(value, globalns=vars(protocol))
    for table in (protocol.CLIENT_REQUESTS, protocol.SERVER_REQUESTS, protocol.SERVER_NOTIFICATIONS):
        for params, result in table.values():
            assert hasattr(protocol, params)
            assert result is None or hasattr(protocol, result)
    assert set(protocol.CLIENT_REQUESTS) == set(typing.get_args(protocol.ClientRequestMethod))
    # A typed coroutine per request, with the generated types.
    for method, (params, result) in protocol.CLIENT_REQUESTS.items():
        hints = typing.get_type_hints(getattr(AppServerClient, method.replace("/", "_")), globalns=vars(protocol))
        assert hints["params"] is getattr(protocol, params)
        assert hints["return"] == getattr(protocol, result)
