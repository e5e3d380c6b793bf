// The appserver TypeScript SDK: the client, app hosting, errors, and the generated wire types.

export * from "./generated/protocol.js";
export { AppServerClient, TURN_END_METHODS, seqOf, threadIdOf, turnIdOf } from "./client.js";
export type { ConnectOptions, Notification, ReconnectOptions, ServerRequestHandler } from "./client.js";
export type { AppHandlers, AppRegistration, CommandContext, RegisterOptions } from "./app.js";
export { AppError, ConnectionClosedError, RpcError, TimeoutError } from "./errors.js";
export { EventStream } from "./stream.js";
