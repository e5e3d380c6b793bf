// The app-host side of the app protocol: an app's handlers, and answering `ext/app/query` and
// `ext/app/command` with them.

import { AppError } from "./errors.js";
import type { AppManifest, ExtAppCommandParams, ExtAppQueryParams, FileAssociation } from "./generated/protocol.js";

/** What a command handler gets besides its params. */
export interface CommandContext {
  windowId: string;
  /** True while the server replays the window's log (after a (re-)registration). */
  replay: boolean;
  /** Sends an `app/emit` progress event of a streaming command. */
  emit(runId: string, type: string, payload?: unknown): void;
}

/** The app's behaviour. Throw `AppError` to answer with an app error code. */
export interface AppHandlers {
  /** Returns the value of a state key (`ext/app/query`). */
  query(stateKey: string): unknown | Promise<unknown>;
  /** One handler per command of the manifest (`ext/app/command`). */
  commands: Record<string, (params: any, ctx: CommandContext) => unknown | Promise<unknown>>;
  /**
   * Called before every registration (the first and each re-registration after a reconnect):
   * reset the state here, and the server's replay of the log rebuilds it.
   */
  reset?(): void;
}

export interface RegisterOptions {
  /** Re-register this window (its log is replayed); a new window when omitted. */
  windowId?: string;
  fileAssociations?: FileAssociation[];
  threadId?: string;
}

/** A registered app. `windowId` is known once `registerApp` resolves. */
export interface AppRegistration {
  windowId: string;
  manifest: AppManifest;
  handlers: AppHandlers;
  options: RegisterOptions;
  /** Entries the last registration replayed, and how many of them the app rejected. */
  replayed: number;
  failed: number;
}

/** A JSON-RPC error object for an exception thrown by an app handler. */
export function appErrorObject(err: unknown): { code: number; message: string; data?: unknown } {
  if (err instanceof AppError) {
    const code = err.appCode === "INVALID_PARAMS" ? -32602 : -32000;
    return { code, message: err.message, data: { code: err.appCode } };
  }
  return { code: -32000, message: err instanceof Error ? err.message : String(err), data: { code: "APP_ERROR" } };
}

/** Answers an `ext/app/query`. */
export async function answerQuery(app: AppRegistration, params: ExtAppQueryParams): Promise<{ data: unknown }> {
  return { data: await app.handlers.query(params.stateKey) };
}

/** Answers an `ext/app/command`. */
export async function answerCommand(
  app: AppRegistration,
  params: ExtAppCommandParams,
  emit: CommandContext["emit"],
): Promise<{ result: unknown }> {
  const handler = app.handlers.commands[params.command];
  if (!handler) throw new AppError("UNKNOWN_TOOL", `no command ${params.command}`);
  const ctx: CommandContext = { windowId: params.windowId, replay: params.replay ?? false, emit };
  return { result: await handler(params.params, ctx) };
}
