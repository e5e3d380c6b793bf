"""An example chat-platform channel adapter on the Python SDK: bridges a line-based chat on
stdin/stdout to appserver, like the Rust `chat-adapter`. Initialize as a channel adapter → find
the user's thread (thread/list) or start one → send `/…` lines to command/execute (and start a
turn with a commandRef when a prompt comes back) → send other lines with turn/start → print the
reply. Approvals are asked as chat prompts.

    python examples/chat_adapter.py ws://127.0.0.1:8080/ws [--user NAME] [--channel NAME] [--token T]
"""

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from appserver_client import AppServerClient, RpcError  # noqa: E402

DECISIONS = {"y": "accept", "s": "acceptForSession", "a": "acceptAlways", "c": "cancel"}


class Chat:
    def __init__(self, client: AppServerClient, lines: asyncio.StreamReader) -> None:
        self.client = client
        self.lines = lines

    def say(self, text: str) -> None:
        print(text, flush=True)

    async def read_line(self):
        line = await self.lines.readline()
        return line.decode("utf-8", "replace").rstrip("\n") if line else None

    async def approve(self, params: dict) -> dict:
        self.say(
            f"approve {params.get('approvalType', '')} {params.get('operation', '')} on {params.get('target', '')}? "
            "[y]es / [s]ession / [a]lways / [n]o / [c]ancel"
        )
        answer = (await self.read_line() or "").strip().lower()
        return {"decision": DECISIONS.get(answer[:1], "decline")}

    async def run_turn(self, thread_id: str, input_parts: list) -> None:
        _, events = await self.client.start_turn({"threadId": thread_id, "input": input_parts})
        async for n in events:
            if n.method == "item/completed" and n.params["item"]["type"] == "agentMessage":
                self.say(f"bot: {n.params['item']['payload']['text']}")
            elif n.method == "turn/failed":
                self.say(f"(the turn failed: {n.params.get('error') or 'unknown error'})")
            elif n.method == "turn/cancelled":
                self.say("(stopped)")


async def main(url: str, user: str, channel: str, token) -> int:
    capabilities = {
        "approvalSupport": True,
        "channelAdapter": {"channelName": channel, "deliveryCapabilities": {"structuredDelivery": False}, "channelTools": []},
    }
    client = await AppServerClient.connect(
        url, client_info={"name": "chat-adapter-py", "version": "0.1.0"}, capabilities=capabilities,
        request_timeout=60, token=token,
    )
    loop = asyncio.get_running_loop()
    lines = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines), sys.stdin)
    chat = Chat(client, lines)
    client.on_approval(chat.approve)
    identity = {"channelName": channel, "userId": user, "channelContext": f"{channel}:{user}"}
    listed = await client.request("thread/list", {"identity": identity, "limit": 1})
    if listed["data"]:
        thread_id = listed["data"][0]["id"]
    else:
        thread_id = (await client.request("thread/start", {"identity": identity}))["thread"]["id"]
    print(f"chat-adapter: talking in {thread_id}", file=sys.stderr)
    try:
        while (line := await chat.read_line()) is not None:
            line = line.strip()
            if not line:
                continue
            if not line.startswith("/"):
                await chat.run_turn(thread_id, [{"type": "text", "text": line}])
                continue
            try:
                result = await client.request("command/execute", {"threadId": thread_id, "command": line})
            except RpcError as err:
                chat.say(f"({err})")
                continue
            if result.get("message"):
                chat.say(result["message"])
            if result.get("sessionReset") and result.get("thread"):
                thread_id = result["thread"]["id"]
            if isinstance(result.get("expandedPrompt"), str):
                name, _, args = line[1:].partition(" ")
                part = {"type": "commandRef", "name": name, "argsText": args.strip(), "rawText": line}
                await chat.run_turn(thread_id, [part])
    finally:
        await client.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--user", default="chat-user")
    parser.add_argument("--channel", default="console")
    parser.add_argument("--token")
    a = parser.parse_args()
    sys.exit(asyncio.run(main(a.url, a.user, a.channel, a.token)))
