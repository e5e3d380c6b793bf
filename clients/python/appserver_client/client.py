"""The JSON-RPC client: the `initialize` handshake, requests with timeouts, notification streams
per thread and per turn, handlers for server requests (approvals, dynamic tools, `ext/app/*`),
app hosting, and reconnecting with backoff, thread subscriptions resumed after the last event
number (`seq`) delivered."""

import asyncio
import inspect
import itertools
import json
import random
import typing
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Set, Tuple

from .app import AppHandlers, AppRegistration, answer_command, answer_query
from .errors import AppError, ConnectionClosedError, RpcError
from .protocol import ClientRequestMethod, ClientRequests, ServerRequestMethod
from .stream import NotificationStream
from .transport import StdioTransport, Transport, WebSocketTransport

#: The terminal notifications of a turn.
TURN_END_METHODS = ("turn/completed", "turn/failed", "turn/cancelled")
METHOD_NOT_FOUND = -32601
#: The code `thread/subscribe` refuses an `afterSeq` it cannot serve with (too old, not kept).
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Notification:
    """A server notification."""

    method: str
    params: Any

    @property
    def thread_id(self) -> Optional[str]:
        p = self.params if isinstance(self.params, dict) else {}
        return (
            p.get("threadId")
            or (p.get("turn") or {}).get("threadId")
            or (p.get("thread") or {}).get("id")
            or (p.get("terminal") or {}).get("threadId")
        )

    @property
    def turn_id(self) -> Optional[str]:
        p = self.params if isinstance(self.params, dict) else {}
        return p.get("turnId") or (p.get("turn") or {}).get("id")

    @property
    def seq(self) -> Optional[int]:
        """The thread's event number (`params.seq`) of a numbered thread event: one with a
        numeric `seq` about a thread (`threadId`, or `turn.threadId` for `turn/*`); else None."""
        p = self.params if isinstance(self.params, dict) else {}
        seq = p.get("seq")
        if not isinstance(self.thread_id, str) or not isinstance(seq, int) or isinstance(seq, bool):
            return None
        return seq


@dataclass
class Reconnect:
    """Reconnect (WebSocket only) when the connection drops: delays double from `initial_delay`
    up to `max_delay` (with jitter), for at most `max_attempts` tries."""

    initial_delay: float = 0.1
    max_delay: float = 5.0
    max_attempts: int = 20


ServerRequestHandler = Callable[[Any], Any]


class AppServerClient(ClientRequests):
    """A connection to appserver. Create it with `await AppServerClient.connect(...)`. Besides
    `request(method, params)` it has a typed coroutine per request (`thread_start(params)`,
    `turn_start(params)`, ...; generated in `protocol.ClientRequests`)."""

    def __init__(
        self,
        url: Optional[str],
        spawn: Optional[Tuple[str, Sequence[str]]],
        client_info: dict,
        capabilities: dict,
        request_timeout: float,
        connect_timeout: float,
        reconnect: Optional[Reconnect],
        headers: Optional[dict],
    ) -> None:
        self._url = url
        self._spawn = spawn
        self._client_info = client_info
        self._capabilities = capabilities
        self.request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self._reconnect = reconnect
        self._headers = headers
        self._transport: Optional[Transport] = None
        self._ids = itertools.count(1)
        self._pending: Dict[str, asyncio.Future] = {}
        self._streams: List[Tuple[Callable[[Notification], bool], NotificationStream]] = []
        self._handlers: Dict[str, ServerRequestHandler] = {}
        self._apps: Dict[str, AppRegistration] = {}
        self._registering: Set[int] = set()
        self._registering_apps: Dict[int, AppRegistration] = {}
        self._subscriptions: Dict[str, dict] = {}
        self._reconnect_listeners: List[Callable[[], Any]] = []
        self._resync_listeners: List[Callable[[str], Any]] = []
        #: Per thread, the highest `seq` delivered to the application.
        self._last_seqs: Dict[str, int] = {}
        #: Threads whose gap a reconnect could not fill, reported once the reconnect succeeds.
        self._resync_pending: List[str] = []
        self._closed_by_user = False
        self._reconnecting: Optional[asyncio.Task] = None
        self._tasks: Set[asyncio.Task] = set()
        #: The server's `initialize` answer (of the latest connection).
        self.server_info: dict = {}

    @classmethod
    async def connect(
        cls,
        url: Optional[str] = None,
        *,
        spawn: Optional[Tuple[str, Sequence[str]]] = None,
        client_info: Optional[dict] = None,
        capabilities: Optional[dict] = None,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        reconnect: Optional[Reconnect] = None,
        headers: Optional[dict] = None,
        token: Optional[str] = None,
    ) -> "AppServerClient":
        """Connects over WebSocket (`url`) or spawns the server (`spawn=(binary, args)`), sends
        `initialize` and `initialized`, and returns the ready client. `token` is the server's
        WebSocket token (`--ws-token`), sent as `Authorization: Bearer`."""
        if not url and not spawn:
            raise ValueError("connect needs url or spawn")
        if token:
            headers = {**(headers or {}), "Authorization": f"Bearer {token}"}
        client = cls(
            url,
            spawn,
            client_info or {"name": "appserver-py", "version": "0.1.0"},
            capabilities or {},
            request_timeout,
            connect_timeout,
            reconnect,
            headers,
        )
        try:
            await client._open()
        except BaseException:
            # Nothing half-open is left behind (a socket, a spawned server).
            await client.close()
            raise
        return client

    async def _open(self) -> None:
        if self._url:
            transport: Transport = await WebSocketTransport.open(self._url, self._connect_timeout, self._headers)
        else:
            assert self._spawn is not None
            transport = await StdioTransport.spawn(self._spawn[0], self._spawn[1])
        self._transport = transport
        transport.on_message = self._receive
        transport.on_close = lambda reason: self._dropped(transport, reason)
        self.server_info = await self.request(
            "initialize", {"clientInfo": self._client_info, "capabilities": self._capabilities}
        )
        self.notify("initialized", {})

    # Requests and notifications

    async def request(self, method: ClientRequestMethod, params: Any, timeout: Optional[float] = None) -> Any:
        """Sends a request and returns its result; a JSON-RPC error raises `RpcError`."""
        if method == "thread/subscribe":
            self._subscriptions[params["threadId"]] = params
        elif method == "thread/unsubscribe":
            self._subscriptions.pop(params["threadId"], None)
            self._last_seqs.pop(params["threadId"], None)
        return await self._call(method, params, timeout or self.request_timeout)

    async def _call(self, method: str, params: Any, timeout: float) -> Any:
        key = str(next(self._ids))
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            self._send_raw({"jsonrpc": "2.0", "id": int(key), "method": method, "params": params})
            return await asyncio.wait_for(future, timeout)
        except ConnectionError as err:
            raise ConnectionClosedError(str(err)) from err
        finally:
            self._pending.pop(key, None)

    def notify(self, method: str, params: Any) -> None:
        """Sends a notification."""
        try:
            self._send_raw({"jsonrpc": "2.0", "method": method, "params": params})
        except ConnectionError:
            pass  # the connection is gone; _dropped deals with it

    def _send_raw(self, message: dict) -> None:
        if self._transport is None:
            raise ConnectionError("not connected")
        self._transport.send(json.dumps(message))

    # Notification streams

    def notifications(self, accept: Callable[[Notification], bool] = lambda _n: True) -> NotificationStream:
        """Every notification (optionally filtered) from now on, until `aclose()` or `close()`."""
        entry: list = []
        stream = NotificationStream(on_done=lambda: self._streams.remove(entry[0]) if entry[0] in self._streams else None)
        entry.append((accept, stream))
        self._streams.append(entry[0])
        return stream

    def thread_events(self, thread_id: str) -> NotificationStream:
        """Notifications about one thread (its turns, items, runtime, queue, ...)."""
        return self.notifications(lambda n: n.thread_id == thread_id)

    def turn_events(self, thread_id: str, turn_id: str) -> NotificationStream:
        """One turn's notifications; the stream ends after its terminal notification."""
        return self.notifications(lambda n: n.thread_id == thread_id and n.turn_id == turn_id).until(
            lambda n: n.method in TURN_END_METHODS
        )

    async def start_turn(self, params: dict) -> Tuple[dict, NotificationStream]:
        """Starts a turn and streams it: events are collected from before the request, so none is
        missed; the stream ends with the turn's terminal notification. Returns (turn, events)."""
        thread_id = params["threadId"]
        turn_id: List[str] = []
        early = self.notifications(lambda n: n.thread_id == thread_id and n.turn_id is not None)
        try:
            result = await self.request("turn/start", params)
        except BaseException:
            await early.aclose()
            raise
        turn_id.append(result["turn"]["id"])
        stream = early.filtered(lambda n: n.turn_id == turn_id[0]).until(lambda n: n.method in TURN_END_METHODS)
        return result["turn"], stream

    # Server requests

    def handle(self, method: ServerRequestMethod, handler: ServerRequestHandler) -> None:
        """Answers the server requests of `method` with handler(params) (sync or async); raise to
        answer with an error. A later handler replaces an earlier one."""
        self._handlers[method] = handler

    def on_approval(self, handler: ServerRequestHandler) -> None:
        """Answers `item/approval/request`: return `{"decision": "accept" | "acceptForSession" |
        "acceptAlways" | "decline" | "cancel"}`."""
        self.handle("item/approval/request", handler)

    def on_tool_call(self, handler: ServerRequestHandler) -> None:
        """Answers `item/tool/call` (dynamic tools declared on `thread/start`)."""
        self.handle("item/tool/call", handler)

    def on_reconnect(self, listener: Callable[[], Any]) -> None:
        """Runs after every successful reconnect (apps re-registered, subscriptions renewed)."""
        self._reconnect_listeners.append(listener)

    def on_resync_needed(self, listener: Callable[[str], Any]) -> None:
        """Runs (sync or async) after a reconnect with each subscribed thread whose missed events
        could not be caught up: the server refused `thread/subscribe` with `afterSeq` (-32602:
        the events are too old or no longer kept), so the client subscribed again without it and
        events may have been missed. Read the thread (`thread/read`) to refresh its state."""
        self._resync_listeners.append(listener)

    def last_seq(self, thread_id: str) -> Optional[int]:
        """The highest `seq` of `thread_id` this client delivered (None before its first numbered event)."""
        return self._last_seqs.get(thread_id)

    # Apps

    async def register_app(
        self,
        manifest: dict,
        handlers: AppHandlers,
        *,
        window_id: Optional[str] = None,
        file_associations: Optional[list] = None,
        thread_id: Optional[str] = None,
    ) -> AppRegistration:
        """Hosts an app: registers its window and answers `ext/app/query` / `ext/app/command`.
        After a reconnect the window is registered again (`handlers.reset` first) and the
        server's replay of its log restores the state."""
        app = AppRegistration(manifest, handlers, window_id, file_associations or [], thread_id)
        await self._register(app)
        return app

    async def unregister_app(self, window_id: str, forget: bool = False) -> None:
        self._apps.pop(window_id, None)
        await self.request("app/unregister", {"windowId": window_id, "forget": forget})

    async def _register(self, app: AppRegistration) -> None:
        if app.handlers.reset:
            app.handlers.reset()
        if app.window_id:
            self._apps[app.window_id] = app
        self._registering_apps[id(app)] = app
        params: Dict[str, Any] = {"manifest": app.manifest}
        if app.window_id:
            params["windowId"] = app.window_id
        if app.file_associations:
            params["fileAssociations"] = app.file_associations
        if app.thread_id:
            params["threadId"] = app.thread_id
        try:
            result = await self.request("app/register", params)
        finally:
            self._registering_apps.pop(id(app), None)
        app.window_id = result["windowId"]
        app.replayed = result["replayed"]
        app.failed = result["failed"]
        self._apps[app.window_id] = app

    # Closing

    async def close(self) -> None:
        """Closes the connection for good (no reconnect); pending requests fail. A spawned
        server gets EOF on stdin and exits."""
        self._closed_by_user = True
        if self._reconnecting:
            self._reconnecting.cancel()
        if self._transport:
            self._transport.close()
            await self._transport.wait_closed(10)
        self._fail_all("closed by the client")
        for _, stream in list(self._streams):
            stream.end()

    def drop_connection(self) -> None:
        """Drops the connection as a network failure would (the reconnect logic then runs). For tests."""
        if self._transport:
            self._transport.close()

    # Incoming frames

    def _receive(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            return
        for m in message if isinstance(message, list) else [message]:
            if isinstance(m, dict):
                self._dispatch(m)

    def _dispatch(self, m: dict) -> None:
        method = m.get("method")
        if isinstance(method, str) and m.get("id") is not None:
            self._spawn_task(self._answer(m["id"], method, m.get("params")))
        elif isinstance(method, str):
            n = Notification(method, m.get("params"))
            if not self._accept(n):
                return
            for accept, stream in list(self._streams):
                if accept(n):
                    stream.push(n)
        elif "id" in m:
            future = self._pending.get(str(m["id"]))
            if future is None or future.done():
                return
            error = m.get("error")
            if error:
                future.set_exception(RpcError(error.get("code", 0), error.get("message", ""), error.get("data")))
            else:
                future.set_result(m.get("result"))

    def _accept(self, n: Notification) -> bool:
        """Records a numbered event's `seq`; False for one already delivered (seq <= the last seen)."""
        seq = n.seq
        if seq is None:
            return True
        thread_id = typing.cast(str, n.thread_id)
        last = self._last_seqs.get(thread_id)
        if last is not None and seq <= last:
            return False
        self._last_seqs[thread_id] = seq
        return True

    def _spawn_task(self, coro: Awaitable[Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        try:
            if method in ("ext/app/query", "ext/app/command"):
                window = (params or {}).get("windowId")
                app = self._apps.get(window)
                if app is None and len(self._registering_apps) == 1:
                    app = next(iter(self._registering_apps.values()))
                if app is None:
                    raise _MethodNotFound(f"no app hosted here for window {window}")

                def emit(run_id: str, kind: str, payload: Any = None) -> None:
                    self.notify("app/emit", {"windowId": window, "runId": run_id, "type": kind, "payload": payload})

                if method == "ext/app/query":
                    result = await answer_query(app, params)
                else:
                    result = await answer_command(app, params, emit)
            else:
                handler = self._handlers.get(method)
                if handler is None:
                    raise _MethodNotFound(f"no handler for {method}")
                result = handler(params)
                if inspect.isawaitable(result):
                    result = await result
            reply: dict = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except _MethodNotFound as err:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": METHOD_NOT_FOUND, "message": str(err)}}
        except AppError as err:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": err.to_error_object()}
        except Exception as err:  # noqa: BLE001 - a handler's failure is the server's error answer
            reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": str(err)}}
        try:
            self._send_raw(reply)
        except ConnectionError:
            pass

    # Dropped connections

    def _fail_all(self, reason: str) -> None:
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(ConnectionClosedError(reason))

    def _dropped(self, transport: Transport, reason: str) -> None:
        if transport is not self._transport:
            return
        self._fail_all(reason)
        if self._reconnecting is not None:
            return  # a reconnect in progress retries by itself
        if self._closed_by_user or self._reconnect is None or not self._url:
            for _, stream in list(self._streams):
                stream.end(ConnectionClosedError(reason))
            return
        self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect_loop(self._reconnect))

    async def _resubscribe(self, thread_id: str, params: dict) -> None:
        """Subscribes again after a reconnect, after the last event delivered when there is one.
        If the server cannot serve that (-32602), subscribes without `afterSeq`, forgets the
        thread's last `seq` (the server's numbering may have restarted) and marks the thread for
        `on_resync_needed`."""
        last = self._last_seqs.get(thread_id)
        with_seq = params if last is None else {**params, "afterSeq": last}
        if with_seq.get("afterSeq") is None:
            await self._call("thread/subscribe", params, self.request_timeout)
            return
        try:
            await self._call("thread/subscribe", with_seq, self.request_timeout)
        except RpcError as err:
            if err.code != INVALID_PARAMS:
                raise
            self._last_seqs.pop(thread_id, None)
            if thread_id not in self._resync_pending:
                self._resync_pending.append(thread_id)
            plain = {k: v for k, v in with_seq.items() if k != "afterSeq"}
            await self._call("thread/subscribe", plain, self.request_timeout)

    async def _reconnect_loop(self, options: Reconnect) -> None:
        try:
            for attempt in range(options.max_attempts):
                if self._closed_by_user:
                    return
                delay = min(options.max_delay, options.initial_delay * 2**attempt) * (0.5 + random.random() / 2)
                await asyncio.sleep(delay)
                try:
                    await self._open()
                    for thread_id, params in list(self._subscriptions.items()):
                        await self._resubscribe(thread_id, params)
                    for app in {id(a): a for a in self._apps.values()}.values():
                        await self._register(app)
                except Exception:  # noqa: BLE001
                    # A refused connection, or the old window not yet released by the server.
                    if self._transport:
                        self._transport.close()
                    continue
                resync, self._resync_pending = self._resync_pending, []
                for thread_id in resync:
                    for resync_listener in list(self._resync_listeners):
                        await _call_safely(resync_listener, thread_id)
                for listener in list(self._reconnect_listeners):
                    result = listener()
                    if inspect.isawaitable(result):
                        await result
                return
            for _, stream in list(self._streams):
                stream.end(ConnectionClosedError("reconnect gave up"))
        finally:
            self._reconnecting = None


class _MethodNotFound(Exception):
    pass


async def _call_safely(listener: Callable[[str], Any], arg: str) -> None:
    """Runs an application callback (sync or async); its failure must not break the client's own work."""
    try:
        result = listener(arg)
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - the application's error is its own
        pass
