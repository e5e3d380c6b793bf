"""An async-iterable stream of notifications: pushed by the connection, pulled by `async for`."""

import asyncio
from collections import deque
from typing import Any, Callable, Deque, Optional


class NotificationStream:
    """Values pushed by the client, read with `async for`. Ends on `end()`, `aclose()`, or (for a
    turn's stream) after its terminal notification."""

    def __init__(self, on_done: Callable[[], None] = lambda: None) -> None:
        self._buffered: Deque[Any] = deque()
        self._wakeup = asyncio.Event()
        self._ended = False
        self._failure: Optional[BaseException] = None
        self._on_done = on_done
        self._accept: Callable[[Any], bool] = lambda _v: True
        self._last: Optional[Callable[[Any], bool]] = None

    def filtered(self, accept: Callable[[Any], bool]) -> "NotificationStream":
        """Keeps only the values `accept` takes (also those already buffered)."""
        self._accept = accept
        self._buffered = deque(v for v in self._buffered if accept(v))
        self._truncate()
        return self

    def until(self, last: Callable[[Any], bool]) -> "NotificationStream":
        """Ends the stream after the first value `last` takes."""
        self._last = last
        self._truncate()
        return self

    def _truncate(self) -> None:
        if self._last is None:
            return
        for i, v in enumerate(self._buffered):
            if self._last(v):
                self._buffered = deque(list(self._buffered)[: i + 1])
                self.end()
                return

    def push(self, value: Any) -> None:
        if self._ended or not self._accept(value):
            return
        self._buffered.append(value)
        self._wakeup.set()
        if self._last is not None and self._last(value):
            self.end()

    def end(self, error: Optional[BaseException] = None) -> None:
        if self._ended:
            return
        self._ended = True
        self._failure = error
        self._on_done()
        self._wakeup.set()

    async def aclose(self) -> None:
        self.end()
        self._buffered.clear()

    def __aiter__(self) -> "NotificationStream":
        return self

    async def __anext__(self) -> Any:
        while True:
            if self._buffered:
                return self._buffered.popleft()
            if self._ended:
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise failure
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()

    async def collect(self, timeout: float) -> list:
        """Every value until the stream ends, bounded by `timeout` seconds."""

        async def gather() -> list:
            return [v async for v in self]

        return await asyncio.wait_for(gather(), timeout)
