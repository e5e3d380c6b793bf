"""The agent's hands through the Python SDK: a command's `commandExecution` item and its output
deltas and a file write's diff (the built-in agent's /exec and /write, no model), and a background
terminal's `terminal/*` (a mock model calling `Exec` with `runInBackground`), with the generated
types."""

import asyncio
import json
import typing

from support import IDENTITY, TIMEOUT, MockModel, running_server, text_reply, tool_call_reply

from appserver_client import AppServerClient, RpcError, protocol


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 3 * TIMEOUT))


async def command(client, thread_id, name, args_text):
    part = {"type": "commandRef", "name": name, "argsText": args_text, "rawText": f"/{name} {args_text}"}
    _, events = await client.start_turn({"threadId": thread_id, "input": [part]})
    return await events.collect(TIMEOUT)


def test_command_output_and_file_diffs_arrive_as_notifications():
    async def body():
        async with running_server(["--approval-policy", "never"]) as server:
            client = await AppServerClient.connect(server.url, capabilities={"commandExecutionStreaming": True})
            try:
                thread = (await client.thread_start({"identity": IDENTITY}))["thread"]
                seen = await command(client, thread["id"], "exec", "printf 'a\\nb\\n'")
                deltas = [n.params["delta"] for n in seen if n.method == "item/commandExecution/outputDelta"]
                done = [n.params["item"]["payload"] for n in seen
                        if n.method == "item/completed" and n.params["item"]["type"] == "commandExecution"][0]
                assert done["aggregatedOutput"] == "".join(deltas) == "a\nb\n"
                assert (done["exitCode"], done["status"]) == (0, "completed")
                seen = await command(client, thread["id"], "write", "notes.txt hello")
                diff = [n.params for n in seen if n.method == "turn/diff/updated"][0]
                assert diff["diff"] == "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hello\n"
                assert diff["threadId"] == thread["id"]
                result = [n.params["item"]["payload"] for n in seen
                          if n.method == "item/completed" and n.params["item"]["type"] == "toolResult"][0]
                assert result["fileChanges"][0]["kind"] == "add"
                # The generated types know the new shapes.
                assert set(typing.get_type_hints(protocol.CommandExecutionOutputDeltaParams)) == {
                    "threadId", "turnId", "itemId", "delta"}
                assert "fileChanges" in typing.get_type_hints(protocol.ToolResultPayload)
            finally:
                await client.close()

    run(body())


def test_a_background_terminal_is_announced_and_stopped():
    async def body():
        args = json.dumps({"command": "echo up; sleep 300", "runInBackground": True, "yieldTimeMs": 300})
        mock = await MockModel([tool_call_reply("call_b", "Exec", args), text_reply("Started.")]).start()
        try:
            flags = ["--approval-policy", "never", "--model", "mock-model", "--base-url", mock.base_url, "--api-key", "k"]
            async with running_server(flags) as server:
                client = await AppServerClient.connect(server.url, capabilities={"backgroundTerminals": True})
                try:
                    thread = (await client.thread_start({"identity": IDENTITY}))["thread"]
                    terminals = client.notifications(lambda n: n.method.startswith("terminal/"))
                    _, events = await client.start_turn(
                        {"threadId": thread["id"], "input": [{"type": "text", "text": "start it"}]})
                    await events.collect(TIMEOUT)
                    started = await asyncio.wait_for(terminals.__anext__(), TIMEOUT)
                    assert started.method == "terminal/started"
                    assert started.thread_id == thread["id"]
                    snapshot = started.params["terminal"]
                    assert snapshot["backgroundReason"] == "runInBackground"
                    assert set(typing.get_type_hints(protocol.BackgroundTerminal)) >= set(snapshot)
                    stopped = await client.request("terminal/stop", {"sessionId": snapshot["sessionId"]})
                    assert stopped["terminal"]["status"] == "killed"
                    try:
                        await client.request("terminal/stop", {"sessionId": "term_missing"})
                        raise AssertionError("an unknown terminal is an error")
                    except RpcError as err:
                        assert err.code == -32602
                finally:
                    await client.close()
        finally:
            mock.close()

    run(body())
