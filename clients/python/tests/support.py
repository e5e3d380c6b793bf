"""Test support: starts the real `appserver` binary on 127.0.0.1 port 0 in a fresh workspace
and reads its "listening on" line; a mock OpenAI-compatible model serving scripted replies; a TCP
proxy whose connections the test can cut, to force a client to reconnect."""

import asyncio
import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import AsyncIterator, List, Optional, Set
from urllib.parse import urlsplit, urlunsplit

#: The bound on every wait in the tests, in seconds.
TIMEOUT = 20.0

IDENTITY = {"channelName": "test", "userId": "user-1", "channelContext": "ctx-1"}


def server_binary() -> str:
    """`$APPSERVER_BIN`, or `target/debug/appserver` of this repository (`cargo build -p appserver`)."""
    if os.environ.get("APPSERVER_BIN"):
        return os.environ["APPSERVER_BIN"]
    return str(Path(__file__).resolve().parents[3] / "target" / "debug" / "appserver")


def server_env() -> dict:
    env = dict(os.environ)
    for var in ("APPSERVER_MODEL", "APPSERVER_BASE_URL", "APPSERVER_API_KEY"):
        env.pop(var, None)
    return env


class Server:
    def __init__(self, process: asyncio.subprocess.Process, url: str, workspace: str) -> None:
        self.process = process
        self.url = url
        self.workspace = workspace


@contextlib.asynccontextmanager
async def running_server(args: Optional[List[str]] = None) -> AsyncIterator[Server]:
    """A server on WebSocket (port 0); killed on exit."""
    workspace = tempfile.mkdtemp(prefix="appserver-py-")
    process = await asyncio.create_subprocess_exec(
        server_binary(),
        "--workspace",
        workspace,
        "--listen",
        "ws://127.0.0.1:0",
        *(args or []),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=server_env(),
    )
    drain: Optional[asyncio.Task] = None
    try:

        async def address() -> str:
            assert process.stderr is not None
            seen = []
            while True:
                line = await process.stderr.readline()
                if not line:
                    raise RuntimeError("server exited before listening:\n" + "".join(seen))
                text = line.decode("utf-8", "replace")
                seen.append(text)
                match = re.search(r"appserver: listening on (ws://\S+)", text)
                if match:
                    url = match.group(1)
                    return url if url.endswith("/ws") else url + "/ws"

        url = await asyncio.wait_for(address(), TIMEOUT)

        async def discard() -> None:
            assert process.stderr is not None
            while await process.stderr.readline():
                pass

        drain = asyncio.get_running_loop().create_task(discard())
        yield Server(process, url, workspace)
    finally:
        if process.returncode is None:
            process.kill()
            await asyncio.wait_for(process.wait(), TIMEOUT)
        if drain:
            drain.cancel()
        shutil.rmtree(workspace, ignore_errors=True)


class MockModel:
    """Each POST gets the next scripted list of SSE chunks; bodies are kept in `requests`."""

    def __init__(self, script: List[list]) -> None:
        self.script = list(script)
        self.requests: List[dict] = []
        self.server: Optional[asyncio.AbstractServer] = None

    @property
    def base_url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def start(self) -> "MockModel":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    def close(self) -> None:
        if self.server:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n"):
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1].strip())
        body = await reader.readexactly(length) if length else b""
        self.requests.append(json.loads(body) if body else {})
        if not self.script:
            text = json.dumps({"error": {"message": "the mock has no more replies"}})
            writer.write(
                f"HTTP/1.1 500 Error\r\nContent-Type: application/json\r\nContent-Length: {len(text)}\r\n"
                f"Connection: close\r\n\r\n{text}".encode()
            )
        else:
            chunks = self.script.pop(0)
            out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            out += "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            writer.write(out.encode())
        await writer.drain()
        writer.close()


def tool_call_reply(call_id: str, name: str, arguments: str) -> list:
    return [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}},
    ]


def text_reply(text: str) -> list:
    return [
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
    ]


class Proxy:
    """A TCP proxy on 127.0.0.1 port 0 in front of a server's WebSocket URL. `cut()` closes every
    connection and refuses new ones (closed at once) until `resume()`."""

    def __init__(self, url: str) -> None:
        self._target = urlsplit(url)
        self._writers: Set[asyncio.StreamWriter] = set()
        self._refusing = False
        self.server: Optional[asyncio.AbstractServer] = None
        self.url = ""

    async def start(self) -> "Proxy":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = urlunsplit(self._target._replace(netloc=f"127.0.0.1:{port}"))
        return self

    def cut(self) -> None:
        self._refusing = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def resume(self) -> None:
        self._refusing = False

    def close(self) -> None:
        self.cut()
        if self.server:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(self._target.hostname, self._target.port), TIMEOUT
            )
        except (OSError, asyncio.TimeoutError):
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copies until either side closes, then closes both."""
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.transport.abort()
