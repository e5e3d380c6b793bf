"""appserver's MCP server driven by the official Python MCP SDK (`mcp` from PyPI), as an outside
agent would: over streamable HTTP at /mcp and over stdio through `appserver mcp`. The app is
hosted, and approvals are answered, by appserver's own Python SDK."""

import asyncio
import json
import os

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation
from sheet import MANIFEST, Sheet
from support import TIMEOUT, running_server, server_binary

from appserver_client import AppServerClient


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 3 * TIMEOUT))


def mcp_url(server) -> str:
    return server.url[: -len("/ws")].replace("ws://", "http://", 1) + "/mcp"


def text(result) -> str:
    return result.content[0].text


AGENT = Implementation(name="py-agent", version="1.0")


def test_tools_resources_query_and_approved_and_declined_commands():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url, capabilities={"approvalSupport": False})
            desktop = await AppServerClient.connect(server.url)
            decisions = ["accept", "decline"]
            asked = []

            async def answer(params):
                asked.append(params)
                return {"decision": decisions.pop(0)}

            desktop.on_approval(answer)
            try:
                sheet = Sheet()
                window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
                async with Client(mcp_url(server), client_info=AGENT) as agent:
                    tools = {t.name: t for t in (await agent.list_tools()).tools}
                    assert sorted(tools) == ["app_command", "app_discover", "app_list", "app_query"]
                    assert tools["app_query"].annotations.read_only_hint is True
                    assert tools["app_command"].annotations.destructive_hint is True
                    assert tools["app_command"].input_schema["required"] == ["windowId", "command"]

                    resources = (await agent.list_resources()).resources
                    assert [str(r.uri) for r in resources] == [f"app://{window}"]
                    assert resources[0].name == "Sheet"
                    assert resources[0].description == "Cells keyed by address."
                    manifest = json.loads((await agent.read_resource(f"app://{window}")).contents[0].text)
                    assert manifest["appId"] == "sheet"

                    listed = await agent.call_tool("app_list", {})
                    assert json.loads(text(listed))["apps"][0]["windowId"] == window
                    empty = await agent.call_tool("app_query", {"windowId": window, "stateKey": "cells"})
                    assert (empty.is_error, json.loads(text(empty))) == (False, {})

                    cells = {"windowId": window, "command": "setCells", "params": {"cells": {"A1": "py"}}}
                    done = await agent.call_tool("app_command", cells)
                    assert done.is_error is False, text(done)
                    assert sheet.cells == {"A1": "py"}
                    assert asked[0]["threadId"] == "mcp:py-agent"
                    assert asked[0]["scopeKey"] == "app:sheet:setCells"

                    refused = {"windowId": window, "command": "setCells", "params": {"cells": {"B1": "no"}}}
                    declined = await agent.call_tool("app_command", refused)
                    assert declined.is_error is True
                    assert text(declined).startswith("DECLINED: ")
                    assert sheet.cells == {"A1": "py"}

                log = await desktop.request("app/log/read", {"windowId": window})
                # The caller: the agent's MCP session and the name it declared (not verified).
                [entry] = log["entries"]
                assert entry["command"] == "setCells"
                assert (entry["caller"]["kind"], entry["caller"]["declaredName"]) == ("mcp", "py-agent")
                assert entry["caller"]["sessionId"]
                assert "calls itself `py-agent` (a declared name, not verified" in asked[0]["reason"]
            finally:
                await host.close()
                await desktop.close()

    run(body())


def test_appserver_mcp_on_stdio_relays_to_the_running_server():
    async def body():
        async with running_server(["--approval-policy", "never"]) as server:
            host = await AppServerClient.connect(server.url, capabilities={"approvalSupport": False})
            try:
                sheet = Sheet()
                window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
                params = StdioServerParameters(command=server_binary(), args=["mcp", "--workspace", server.workspace])
                async with Client(params, client_info=AGENT) as agent:
                    assert [str(r.uri) for r in (await agent.list_resources()).resources] == [f"app://{window}"]
                    call = {"windowId": window, "command": "setCells", "params": {"cells": {"C3": "stdio"}}}
                    done = await agent.call_tool("app_command", call)
                    assert done.is_error is False, text(done)
                    assert sheet.cells == {"C3": "stdio"}
            finally:
                await host.close()

    run(body())


def test_a_listening_agent_is_told_when_an_app_registers():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url, capabilities={"approvalSupport": False})
            try:
                async with Client(mcp_url(server), client_info=AGENT) as agent:
                    assert (await agent.list_resources()).resources == []
                    async with agent.listen(resources_list_changed=True) as subscription:
                        assert subscription.honored.resources_list_changed is True
                        window = (await host.register_app(MANIFEST, Sheet().handlers)).window_id
                        event = await asyncio.wait_for(subscription.__anext__(), TIMEOUT)
                        assert type(event).__name__ == "ResourcesListChanged"
                    resources = (await agent.list_resources(cache_mode="refresh")).resources
                    assert [str(r.uri) for r in resources] == [f"app://{window}"]
            finally:
                await host.close()

    run(body())


def test_a_descriptor_apps_resource_is_a_valid_url_for_the_python_sdk():
    """A descriptor app is window `aai:<id>`; its resource `app://aai%3A<id>` is a URL the SDK
    accepts (`app://aai:<id>` made it refuse the whole `resources/list`)."""

    async def body():
        async with running_server() as server:
            folder = os.path.join(server.workspace, ".appserver", "apps", "notes")
            os.makedirs(folder)
            descriptor = {
                "schema_version": "1.0",
                "app": {"id": "com.example.notes", "name": "Notes"},
                "execution": {"type": "http", "base_url": "http://127.0.0.1:9"},
                "tools": [{"name": "echo", "description": "Echo"}],
            }
            with open(os.path.join(folder, "aai.json"), "w") as f:
                json.dump(descriptor, f)
            async with Client(mcp_url(server), client_info=AGENT) as agent:
                while True:
                    resources = (await agent.list_resources(cache_mode="refresh")).resources
                    if resources:
                        break
                    await asyncio.sleep(0.05)
                assert [str(r.uri) for r in resources] == ["app://aai%3Acom.example.notes"]
                manifest = json.loads((await agent.read_resource(str(resources[0].uri))).contents[0].text)
                assert manifest["appId"] == "com.example.notes"

    run(body())


def test_an_unknown_tool_is_a_protocol_error_and_a_large_result_arrives_whole():
    """An unknown tool is JSON-RPC -32602 (not a tool result); a result over 1 MiB (an SSE event
    that large fails this SDK) arrives, answered as plain JSON."""

    async def body():
        async with running_server(["--approval-policy", "never"]) as server:
            host = await AppServerClient.connect(server.url, capabilities={"approvalSupport": False})
            try:
                sheet = Sheet()
                window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
                async with Client(mcp_url(server), client_info=AGENT) as agent:
                    try:
                        await agent.call_tool("no_such_tool", {})
                        raise AssertionError("an unknown tool must be an error")
                    except MCPError as err:
                        assert err.error.code == -32602
                    big = "x" * 1_500_000
                    call = {"windowId": window, "command": "setCells", "params": {"cells": {"A1": big}}}
                    done = await agent.call_tool("app_command", call)
                    assert done.is_error is False, text(done)
                    cells = await agent.call_tool("app_query", {"windowId": window, "stateKey": "cells"})
                    assert cells.is_error is False
                    assert len(json.loads(text(cells))["A1"]) == 1_500_000
            finally:
                await host.close()

    run(body())
