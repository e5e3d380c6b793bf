// Errors the client raises: a JSON-RPC error answer, a closed connection, a timeout, and the
// error an app handler throws to answer with an app error code.

/** The server answered with a JSON-RPC error. `code` is the JSON-RPC code (-32602, -32010, ...). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "RpcError";
  }

  /** `data.code` of app errors (`INVALID_PARAMS`, `APP_NOT_FOUND`, ...), if any. */
  get appCode(): string | undefined {
    const data = this.data as { code?: unknown } | undefined;
    return typeof data?.code === "string" ? data.code : undefined;
  }
}

/** The connection closed before the answer came. */
export class ConnectionClosedError extends Error {
  constructor(reason: string) {
    super(`connection closed: ${reason}`);
    this.name = "ConnectionClosedError";
  }
}

/** No answer within the request's timeout. */
export class TimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no answer within ${ms} ms`);
    this.name = "TimeoutError";
  }
}

/** Thrown by an app's query or command handler: answered as a JSON-RPC error with `data.code`. */
export class AppError extends Error {
  constructor(
    readonly appCode: string,
    message: string,
  ) {
    super(message);
    this.name = "AppError";
  }
}
