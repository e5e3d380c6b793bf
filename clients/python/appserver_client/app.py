"""The app-host side of the app protocol: an app's handlers, and answering `ext/app/query` and
`ext/app/command` with them."""

import inspect
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Union

from .errors import AppError
from .protocol import AppManifest, FileAssociation


@dataclass
class CommandContext:
    """What a command handler gets besides its params."""

    window_id: str
    #: True while the server replays the window's log (after a (re-)registration).
    replay: bool
    #: Sends an `app/emit` progress event of a streaming command: emit(run_id, type, payload).
    emit: Callable[[str, str, Any], None]


MaybeAwaitable = Union[Any, Awaitable[Any]]


@dataclass
class AppHandlers:
    """The app's behaviour. Raise `AppError` to answer with an app error code."""

    #: Returns the value of a state key (`ext/app/query`).
    query: Callable[[str], MaybeAwaitable]
    #: One handler per command of the manifest (`ext/app/command`): handler(params, ctx).
    commands: Dict[str, Callable[[Any, CommandContext], MaybeAwaitable]]
    #: Called before every registration (the first and each one after a reconnect): reset the
    #: state here, and the server's replay of the log rebuilds it.
    reset: Optional[Callable[[], None]] = None


@dataclass
class AppRegistration:
    """A registered app; `window_id` is known once `register_app` returns."""

    manifest: AppManifest
    handlers: AppHandlers
    window_id: Optional[str] = None
    file_associations: List[FileAssociation] = field(default_factory=list)
    thread_id: Optional[str] = None
    #: Entries the last registration replayed, and how many of them the app rejected.
    replayed: int = 0
    failed: int = 0


async def _settle(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def answer_query(app: AppRegistration, params: dict) -> dict:
    return {"data": await _settle(app.handlers.query(params.get("stateKey", "")))}


async def answer_command(app: AppRegistration, params: dict, emit: Callable[[str, str, Any], None]) -> dict:
    command = params.get("command", "")
    handler = app.handlers.commands.get(command)
    if handler is None:
        raise AppError("UNKNOWN_TOOL", f"no command {command}")
    ctx = CommandContext(window_id=params.get("windowId", ""), replay=bool(params.get("replay")), emit=emit)
    return {"result": await _settle(handler(params.get("params"), ctx))}
