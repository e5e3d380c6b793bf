"""The appserver Python SDK: the asyncio client, app hosting, errors, and the generated wire
types (`appserver_client.protocol`)."""

from . import protocol
from .app import AppHandlers, AppRegistration, CommandContext
from .client import TURN_END_METHODS, AppServerClient, Notification, Reconnect
from .errors import AppError, ConnectionClosedError, RpcError
from .stream import NotificationStream

__all__ = [
    "AppError",
    "AppHandlers",
    "AppRegistration",
    "AppServerClient",
    "CommandContext",
    "ConnectionClosedError",
    "Notification",
    "NotificationStream",
    "Reconnect",
    "RpcError",
    "TURN_END_METHODS",
    "protocol",
]
