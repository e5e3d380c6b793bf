"""`appserver acp` driven by the Python ACP SDK (`agent-client-protocol` from PyPI, its client
side) as an editor would, against a server that appserver's own Python SDK also reaches over
WebSocket: a streamed prompt, app commands asked through `session/request_permission` (allowed
once, rejected once), a write through the editor's `fs/write_text_file`, cancel mid-turn, and
`session/load` of a thread started over WebSocket, and an MCP server of the editor's passed in
`session/new` used by the session's agent."""

import asyncio
import json
import os
from typing import Any, List

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    EnvVariable,
    McpServerStdio,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
    WriteTextFileResponse,
)
from sheet import MANIFEST, Sheet
from support import TIMEOUT, MockModel, running_server, server_binary, text_reply, tool_call_reply

from appserver_client import AppServerClient


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 3 * TIMEOUT))


class Editor:
    """The editor's side: records every update and request, answers permissions from a script."""

    def __init__(self, choices: List[str] = ()) -> None:
        self.choices = list(choices)
        self.updates: List[Any] = []
        self.asked: List[Any] = []
        self.writes: List[Any] = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append((session_id, tool_call, options))
        choice = self.choices.pop(0)
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.writes.append((session_id, path, content))
        return WriteTextFileResponse()

    def of(self, session_id: str, kind: str) -> List[Any]:
        return [u for s, u in self.updates if s == session_id and u.session_update == kind]

    def text(self, session_id: str) -> str:
        return "".join(u.content.text for u in self.of(session_id, "agent_message_chunk"))


def spawn(editor: Editor, workspace: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("APPSERVER_MODEL")}
    return spawn_agent_process(editor, server_binary(), "acp", "--workspace", workspace, env=env)


async def initialize(conn, fs: bool = False):
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=fs), terminal=False)
    info = Implementation(name="py-editor", version="1.0")
    return await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps, client_info=info)


def test_a_streamed_prompt_in_a_session_that_websocket_clients_see_as_a_thread():
    async def body():
        async with running_server() as server:
            editor = Editor()
            async with spawn(editor, server.workspace) as (conn, _process):
                init = await initialize(conn)
                assert init.protocol_version == PROTOCOL_VERSION
                assert init.agent_capabilities.load_session is True
                session = await conn.new_session(cwd=server.workspace, mcp_servers=[])
                answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi from python")])
                assert answer.stop_reason == "end_turn"
                assert len(editor.of(session.session_id, "agent_message_chunk")) > 1
                assert "No language model is configured" in editor.text(session.session_id)
                desktop = await AppServerClient.connect(server.url)
                try:
                    read = await desktop.request("thread/read", {"threadId": session.session_id, "includeTurns": True})
                    assert read["thread"]["originChannel"] == "acp"
                    assert read["thread"]["turns"][0]["items"][0]["payload"]["text"] == "hi from python"
                finally:
                    await desktop.close()

    run(body())


def test_app_commands_from_an_editor_session_ask_through_request_permission():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url, capabilities={"approvalSupport": False})
            sheet = Sheet()
            window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
            editor = Editor(choices=["accept", "decline"])
            try:
                async with spawn(editor, server.workspace) as (conn, _process):
                    await initialize(conn)
                    sid = (await conn.new_session(cwd=server.workspace, mcp_servers=[])).session_id
                    await conn.prompt(session_id=sid, prompt=[text_block("/apps")])
                    assert window in editor.text(sid)
                    allowed = json.dumps({"cells": {"A1": "yes"}})
                    await conn.prompt(session_id=sid, prompt=[text_block(f"/command {window} setCells {allowed}")])
                    assert sheet.cells == {"A1": "yes"}
                    rejected = json.dumps({"cells": {"B1": "no"}})
                    await conn.prompt(session_id=sid, prompt=[text_block(f"/command {window} setCells {rejected}")])
                    assert sheet.cells == {"A1": "yes"}, "a rejected command never reaches the app"
                    assert len(editor.asked) == 2
                    _, tool_call, options = editor.asked[0]
                    assert [o.option_id for o in options] == ["accept", "acceptForSession", "acceptAlways", "decline"]
                    calls = editor.of(sid, "tool_call")
                    assert tool_call.tool_call_id == calls[-2].tool_call_id
                    statuses = [u.status for u in editor.of(sid, "tool_call_update") if u.status in ("completed", "failed")]
                    assert statuses[-2:] == ["completed", "failed"]
            finally:
                await host.close()

    run(body())


def test_a_write_through_the_editor_then_cancel_mid_turn():
    async def body():
        async with running_server(["--approval-policy", "never"]) as server:
            editor = Editor()
            async with spawn(editor, server.workspace) as (conn, _process):
                await initialize(conn, fs=True)
                sid = (await conn.new_session(cwd=server.workspace, mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text_block("/write draft.md first line")])
                assert editor.writes == [(sid, os.path.join(server.workspace, "draft.md"), "first line\n")]
                assert not os.path.exists(os.path.join(server.workspace, "draft.md"))

                prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("/exec sleep 30")]))

                async def running():
                    while not any(u.status == "in_progress" for u in editor.of(sid, "tool_call_update")[1:]):
                        await asyncio.sleep(0.01)

                await asyncio.wait_for(running(), TIMEOUT)
                await conn.cancel(session_id=sid)
                answer = await asyncio.wait_for(prompt, 10)
                assert answer.stop_reason == "cancelled"

    run(body())


def test_session_load_replays_a_thread_started_over_websocket():
    async def body():
        async with running_server() as server:
            desktop = await AppServerClient.connect(server.url)
            try:
                started = await desktop.request("thread/start", {"identity": {"channelName": "desktop", "userId": "me"}})
                thread_id = started["thread"]["id"]
                turn, events = await desktop.start_turn({"threadId": thread_id, "input": [{"type": "text", "text": "typed on the desktop"}]})
                async for event in events:
                    if event.method == "turn/completed":
                        break
                editor = Editor()
                async with spawn(editor, server.workspace) as (conn, _process):
                    await initialize(conn)
                    listed = await conn.list_sessions()
                    assert all(s.session_id != thread_id for s in listed.sessions), "a desktop thread is not an acp session"
                    await conn.load_session(cwd=server.workspace, session_id=thread_id, mcp_servers=[])
                    kinds = [u.session_update for s, u in editor.updates if s == thread_id]
                    assert kinds[:2] == ["user_message_chunk", "agent_message_chunk"]
                    assert editor.of(thread_id, "user_message_chunk")[0].content.text == "typed on the desktop"
                    answer = await conn.prompt(session_id=thread_id, prompt=[text_block("and from the editor")])
                    assert answer.stop_reason == "end_turn"
                read = await desktop.request("thread/read", {"threadId": thread_id, "includeTurns": True})
                assert [t["items"][0]["payload"]["text"] for t in read["thread"]["turns"]] == [
                    "typed on the desktop",
                    "and from the editor",
                ]
            finally:
                await desktop.close()

    run(body())


def mcp_test_server() -> str:
    """The repository's MCP test server (`cargo build -p appserver-tests`), next to the server."""
    return os.path.join(os.path.dirname(server_binary()), "mcp-test-server")


def test_an_mcp_server_passed_in_session_new_is_used_by_the_sessions_agent():
    async def body():
        mock = await MockModel(
            [
                text_reply("(the bridge's model/list)"),
                tool_call_reply("call_m", "mcp__editor-tools__env", '{"name": "FROM_EDITOR"}'),
                text_reply("The editor's variable is set."),
            ]
        ).start()
        try:
            args = ["--model", "mock-model", "--base-url", mock.base_url, "--api-key", "k"]
            async with running_server(args) as server:
                editor = Editor()
                async with spawn(editor, server.workspace) as (conn, _process):
                    init = await initialize(conn)
                    assert init.agent_capabilities.mcp_capabilities.http is True
                    tools = McpServerStdio(
                        name="editor tools",
                        command=mcp_test_server(),
                        args=[],
                        env=[EnvVariable(name="FROM_EDITOR", value="from-python")],
                    )
                    sid = (await conn.new_session(cwd=server.workspace, mcp_servers=[tools])).session_id
                    answer = await conn.prompt(session_id=sid, prompt=[text_block("use the editor's tool")])
                    assert answer.stop_reason == "end_turn"
                    calls = editor.of(sid, "tool_call")
                    assert [c.title for c in calls] == ["mcp__editor-tools__env"]
                    assert editor.asked == [], "a read-only tool is not asked about"
                    done = [u for u in editor.of(sid, "tool_call_update") if u.status == "completed"]
                    assert "from-python" in json.dumps(done[-1].raw_output)
                    offered = json.dumps(mock.requests[1].get("tools"))
                    assert "mcp__editor-tools__env" in offered
        finally:
            mock.close()

    run(body())
