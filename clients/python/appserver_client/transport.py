"""Transports: a text frame in, a text frame out. WebSocket (the `websockets` package) and stdio
(a spawned `appserver` speaking JSON lines)."""

import asyncio
from typing import Awaitable, Callable, Optional, Sequence

import websockets

OnMessage = Callable[[str], None]
OnClose = Callable[[str], None]

#: The largest line a stdio reader accepts (the server's own limit is lower).
STDIO_LINE_LIMIT = 64 * 1024 * 1024


class Transport:
    """One connection's frames. `on_close` is called once, whoever closed."""

    def __init__(self) -> None:
        self.on_message: OnMessage = lambda _text: None
        self.on_close: OnClose = lambda _reason: None
        self._closed = False
        self._reader: Optional[asyncio.Task] = None

    def send(self, text: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    async def wait_closed(self, timeout: float) -> None:
        """Waits (at most `timeout` seconds) until the connection has closed."""
        if self._reader is not None:
            await asyncio.wait([self._reader], timeout=timeout)

    def _finish(self, reason: str) -> None:
        if not self._closed:
            self._closed = True
            self.on_close(reason)


class WebSocketTransport(Transport):
    def __init__(self, socket) -> None:
        super().__init__()
        self._socket = socket
        self._outgoing: asyncio.Queue = asyncio.Queue()
        self._writer: Optional[asyncio.Task] = None

    @classmethod
    async def open(cls, url: str, timeout: float, headers: Optional[dict] = None) -> "WebSocketTransport":
        socket = await asyncio.wait_for(
            websockets.connect(url, max_size=None, additional_headers=headers, open_timeout=timeout), timeout
        )
        transport = cls(socket)
        transport._reader = asyncio.get_running_loop().create_task(transport._read())
        transport._writer = asyncio.get_running_loop().create_task(transport._write())
        return transport

    async def _read(self) -> None:
        reason = "closed"
        try:
            async for message in self._socket:
                self.on_message(message if isinstance(message, str) else message.decode("utf-8", "replace"))
        except websockets.ConnectionClosed as err:
            reason = f"WebSocket closed ({err.rcvd.code if err.rcvd else '?'})"
        except Exception as err:  # noqa: BLE001 - any failure ends the connection
            reason = f"WebSocket failed: {err}"
        finally:
            if self._writer:
                self._writer.cancel()
            self._finish(reason)

    async def _write(self) -> None:
        while True:
            text = await self._outgoing.get()
            try:
                await self._socket.send(text)
            except Exception:  # noqa: BLE001 - the reader sees the close
                return

    def send(self, text: str) -> None:
        if self._closed:
            raise ConnectionError("closed")
        self._outgoing.put_nowait(text)

    def close(self) -> None:
        self._closing = asyncio.get_running_loop().create_task(self._socket.close())


class StdioTransport(Transport):
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        super().__init__()
        self.process = process

    @classmethod
    async def spawn(cls, command: str, args: Sequence[str], env: Optional[dict] = None) -> "StdioTransport":
        process = await asyncio.create_subprocess_exec(
            command,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            limit=STDIO_LINE_LIMIT,
        )
        transport = cls(process)
        transport._reader = asyncio.get_running_loop().create_task(transport._read())
        return transport

    async def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    break
                text = line.decode("utf-8", "replace").strip()
                if text:
                    self.on_message(text)
        finally:
            self._finish("stdout closed")

    def send(self, text: str) -> None:
        if self._closed or self.process.stdin is None or self.process.stdin.is_closing():
            raise ConnectionError("closed")
        self.process.stdin.write(text.encode("utf-8") + b"\n")

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()

    async def wait_closed(self, timeout: float) -> None:
        """Waits for the server process to exit (it does after EOF on its stdin); kills it after
        `timeout` seconds."""
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()


Opener = Callable[[], Awaitable[Transport]]
