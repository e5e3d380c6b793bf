"""Errors the client raises: a JSON-RPC error answer, a closed connection, a timeout, and the
error an app handler raises to answer with an app error code."""

from typing import Any, Optional


class RpcError(Exception):
    """The server answered with a JSON-RPC error; `code` is the JSON-RPC code (-32602, -32010, ...)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def app_code(self) -> Optional[str]:
        """`data.code` of app errors (`INVALID_PARAMS`, `APP_NOT_FOUND`, ...), if any."""
        if isinstance(self.data, dict) and isinstance(self.data.get("code"), str):
            return self.data["code"]
        return None

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"


class ConnectionClosedError(Exception):
    """The connection closed before the answer came."""


class AppError(Exception):
    """Raised by an app's query or command handler: answered as a JSON-RPC error with `data.code`."""

    def __init__(self, app_code: str, message: str) -> None:
        super().__init__(message)
        self.app_code = app_code
        self.message = message

    def to_error_object(self) -> dict:
        code = -32602 if self.app_code == "INVALID_PARAMS" else -32000
        return {"code": code, "message": self.message, "data": {"code": self.app_code}}
