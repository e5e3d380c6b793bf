// The JSON-RPC client: the `initialize` handshake, typed requests with timeouts, notification
// streams per thread and per turn, handlers for server requests (approvals, dynamic tools,
// `ext/app/*`), app hosting, and reconnecting with backoff, thread subscriptions resumed after the
// last event number (`seq`) delivered.

import { answerCommand, answerQuery, appErrorObject, type AppHandlers, type AppRegistration, type RegisterOptions } from "./app.js";
import { ConnectionClosedError, RpcError, TimeoutError } from "./errors.js";
import type {
  AppManifest,
  ClientCapabilities,
  ClientInfo,
  ClientNotificationMap,
  ClientNotificationMethod,
  ClientRequestMap,
  ClientRequestMethod,
  InitializeResult,
  ServerNotificationMap,
  ServerNotificationMethod,
  ServerRequestMap,
  ServerRequestMethod,
  TurnStartParams,
  Turn,
} from "./generated/protocol.js";
import { EventStream } from "./stream.js";
import { openWebSocket, spawnStdio, type Transport } from "./transport.js";

/** A server notification, discriminated by `method`. */
export type Notification = {
  [M in ServerNotificationMethod]: { method: M; params: ServerNotificationMap[M] };
}[ServerNotificationMethod];

/** Answers one server request; its return value is the result (throw to answer with an error). */
export type ServerRequestHandler<M extends ServerRequestMethod> = (
  params: ServerRequestMap[M]["params"],
) => ServerRequestMap[M]["result"] | Promise<ServerRequestMap[M]["result"]>;

export interface ReconnectOptions {
  /** First delay after a drop; doubles per failed attempt (with jitter). Default 100 ms. */
  initialDelayMs?: number;
  /** Cap on the delay. Default 5000 ms. */
  maxDelayMs?: number;
  /** Attempts before giving up (the client then stays closed). Default 20. */
  maxAttempts?: number;
}

export interface ConnectOptions {
  /** `ws://HOST:PORT/ws`. */
  url?: string;
  /** The server's WebSocket token (`--ws-token`), sent as `?token=` (browsers cannot set headers). */
  token?: string;
  /** Spawn the server and speak JSON lines over its stdin/stdout (Node only). */
  spawn?: { command: string; args?: string[]; env?: Record<string, string | undefined> };
  clientInfo?: ClientInfo;
  capabilities?: ClientCapabilities;
  /** Bound on every request's answer. Default 30 s. */
  requestTimeoutMs?: number;
  /** Bound on opening the connection. Default 10 s. */
  connectTimeoutMs?: number;
  /** Reconnect (WebSocket only) when the connection drops. Off unless given. */
  reconnect?: ReconnectOptions | boolean;
}

interface Pending {
  resolve: (value: any) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** Methods a server request without a handler is refused with. */
const METHOD_NOT_FOUND = -32601;
/** The code `thread/subscribe` refuses an `afterSeq` it cannot serve with (too old, not kept). */
const INVALID_PARAMS = -32602;

/** The terminal notifications of a turn. */
export const TURN_END_METHODS: readonly string[] = ["turn/completed", "turn/failed", "turn/cancelled"];

/** The thread a notification is about, if any. */
export function threadIdOf(n: { params: unknown }): string | undefined {
  const p = n.params as any;
  return p?.threadId ?? p?.turn?.threadId ?? p?.thread?.id ?? p?.terminal?.threadId;
}

/**
 * The thread and event number (`params.seq`) of a numbered thread event, if `n` is one: a
 * notification with a numeric `seq` about a thread (`threadId`, or `turn.threadId` for
 * `turn/started` and the turn's end).
 */
export function seqOf(n: { params: unknown }): { threadId: string; seq: number } | undefined {
  const seq = (n.params as any)?.seq;
  const threadId = threadIdOf(n);
  if (typeof threadId !== "string" || typeof seq !== "number") return undefined;
  return { threadId, seq };
}

/** The turn a notification is about, if any. */
export function turnIdOf(n: { params: unknown }): string | undefined {
  const p = n.params as any;
  return p?.turnId ?? p?.turn?.id;
}

/** Runs an application callback; its failure must not break the client's own work. */
function callSafely(f: () => void): void {
  try {
    f();
  } catch {
    // The application's error is its own.
  }
}

function withToken(url: string, token: string): string {
  const u = new URL(url);
  u.searchParams.set("token", token);
  return u.toString();
}

export class AppServerClient {
  private transport!: Transport;
  private nextId = 1;
  private readonly pending = new Map<string, Pending>();
  private readonly streams = new Set<{ filter: (n: Notification) => boolean; stream: EventStream<Notification> }>();
  private readonly handlers = new Map<string, (params: any) => unknown>();
  private readonly apps = new Map<string, AppRegistration>();
  /** Registrations sent but not answered yet (a new window's id is not known until then). */
  private readonly registering = new Set<AppRegistration>();
  private readonly subscriptions = new Map<string, unknown>();
  private readonly reconnectListeners = new Set<() => void>();
  private readonly resyncListeners = new Set<(threadId: string) => void>();
  /** Per thread, the highest `seq` delivered to the application. */
  private readonly lastSeqs = new Map<string, number>();
  /** Threads whose gap a reconnect could not fill, reported once the reconnect succeeds. */
  private readonly resyncPending = new Set<string>();
  private closedByUser = false;
  private reconnecting: Promise<void> | undefined;
  /** The server's `initialize` answer (of the latest connection). */
  serverInfo!: InitializeResult;

  private constructor(private readonly options: ConnectOptions) {}

  /** Connects, sends `initialize` and `initialized`, and returns the ready client. */
  static async connect(options: ConnectOptions): Promise<AppServerClient> {
    if (!options.url && !options.spawn) throw new Error("connect needs `url` or `spawn`");
    const client = new AppServerClient(options);
    try {
      await client.open();
    } catch (err) {
      // Nothing half-open is left behind (a socket, a spawned server).
      if (client.transport) client.close();
      throw err;
    }
    return client;
  }

  private get requestTimeoutMs(): number {
    return this.options.requestTimeoutMs ?? 30_000;
  }

  private async open(): Promise<void> {
    const { url, spawn, token } = this.options;
    const transport = url
      ? await openWebSocket(token ? withToken(url, token) : url, this.options.connectTimeoutMs ?? 10_000)
      : await spawnStdio(spawn!.command, spawn!.args ?? [], spawn!.env);
    this.transport = transport;
    transport.onMessage = (text) => this.receive(text);
    transport.onClose = (reason) => this.dropped(transport, reason);
    this.serverInfo = await this.request("initialize", {
      clientInfo: this.options.clientInfo ?? { name: "appserver-ts", version: "0.1.0" },
      capabilities: this.options.capabilities ?? {},
    });
    this.notify("initialized", {});
  }

  /** Sends a request and resolves with its result; a JSON-RPC error rejects with `RpcError`. */
  request<M extends ClientRequestMethod>(
    method: M,
    params: ClientRequestMap[M]["params"],
    options: { timeoutMs?: number } = {},
  ): Promise<ClientRequestMap[M]["result"]> {
    if (method === "thread/subscribe") this.subscriptions.set((params as any).threadId, params);
    if (method === "thread/unsubscribe") {
      this.subscriptions.delete((params as any).threadId);
      this.lastSeqs.delete((params as any).threadId);
    }
    return this.call(method, params, options.timeoutMs ?? this.requestTimeoutMs);
  }

  private call(method: string, params: unknown, timeoutMs: number): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(String(id));
        reject(new TimeoutError(method, timeoutMs));
      }, timeoutMs);
      this.pending.set(String(id), { resolve, reject, timer });
      try {
        this.transport.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(String(id));
        reject(new ConnectionClosedError(String(err)));
      }
    });
  }

  /** Sends a notification. */
  notify<M extends ClientNotificationMethod>(method: M, params: ClientNotificationMap[M]): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  private send(message: unknown): void {
    try {
      this.transport.send(JSON.stringify(message));
    } catch {
      // The connection is gone; `dropped` deals with it.
    }
  }

  /** Every notification (optionally filtered) from now on, until `return()` or `close()`. */
  notifications(filter: (n: Notification) => boolean = () => true): EventStream<Notification> {
    const entry = { filter, stream: undefined as unknown as EventStream<Notification> };
    entry.stream = new EventStream<Notification>(() => this.streams.delete(entry));
    this.streams.add(entry);
    return entry.stream;
  }

  /** Notifications about one thread (its turns, items, runtime, queue, ...). */
  threadEvents(threadId: string): EventStream<Notification> {
    return this.notifications((n) => threadIdOf(n) === threadId);
  }

  /** One turn's notifications; the stream ends after its `turn/completed`, `turn/failed` or `turn/cancelled`. */
  turnEvents(threadId: string, turnId: string): EventStream<Notification> {
    const stream: EventStream<Notification> = this.notifications((n) => {
      if (threadIdOf(n) !== threadId || turnIdOf(n) !== turnId) return false;
      if (TURN_END_METHODS.includes(n.method)) queueMicrotask(() => stream.end());
      return true;
    });
    return stream;
  }

  /**
   * Starts a turn and streams it: the events are collected from before the request, so none is
   * missed, and the stream ends with the turn's terminal notification.
   */
  async startTurn(params: TurnStartParams): Promise<{ turn: Turn; events: AsyncIterableIterator<Notification> }> {
    let turnId: string | undefined;
    const early: Notification[] = [];
    const events: EventStream<Notification> = this.notifications((n) => {
      if (threadIdOf(n) !== params.threadId) return false;
      const id = turnIdOf(n);
      if (id === undefined) return false;
      if (turnId === undefined) {
        early.push(n);
        return false;
      }
      if (id !== turnId) return false;
      if (TURN_END_METHODS.includes(n.method)) queueMicrotask(() => events.end());
      return true;
    });
    try {
      const { turn } = await this.request("turn/start", params);
      turnId = turn.id;
      for (const n of early) {
        if (turnIdOf(n) !== turnId) continue;
        events.push(n);
        if (TURN_END_METHODS.includes(n.method)) events.end();
      }
      return { turn, events };
    } catch (err) {
      events.end();
      throw err;
    }
  }

  /** Answers the server requests of `method` (one handler per method; a later one replaces it). */
  handle<M extends ServerRequestMethod>(method: M, handler: ServerRequestHandler<M>): void {
    this.handlers.set(method, handler);
  }

  /** Answers `item/approval/request` (approvals of gated tool calls and app commands). */
  onApproval(handler: ServerRequestHandler<"item/approval/request">): void {
    this.handle("item/approval/request", handler);
  }

  /** Answers `item/tool/call` (dynamic tools this client declared on `thread/start`). */
  onToolCall(handler: ServerRequestHandler<"item/tool/call">): void {
    this.handle("item/tool/call", handler);
  }

  /** Runs after every successful reconnect (apps re-registered, subscriptions renewed). */
  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /**
   * Runs after a reconnect for each subscribed thread whose missed events could not be caught up:
   * the server refused `thread/subscribe` with `afterSeq` (-32602: the events are too old or no
   * longer kept), so the client subscribed again without it and events may have been missed.
   * Read the thread (`thread/read`) to refresh its state. Returns a function that removes it.
   */
  onResyncNeeded(listener: (threadId: string) => void): () => void {
    this.resyncListeners.add(listener);
    return () => this.resyncListeners.delete(listener);
  }

  /** The highest `seq` of `threadId` this client delivered (undefined before its first numbered event). */
  lastSeq(threadId: string): number | undefined {
    return this.lastSeqs.get(threadId);
  }

  /**
   * Hosts an app: registers its window and answers `ext/app/query` / `ext/app/command` for it.
   * After a reconnect the window is registered again (`handlers.reset` first), and the server's
   * replay of its log restores the state.
   */
  async registerApp(manifest: AppManifest, handlers: AppHandlers, options: RegisterOptions = {}): Promise<AppRegistration> {
    const app: AppRegistration = { windowId: options.windowId ?? "", manifest, handlers, options, replayed: 0, failed: 0 };
    await this.register(app);
    return app;
  }

  /** Unregisters an app (`forget: true` deletes its log) and stops answering for it. */
  async unregisterApp(windowId: string, forget = false): Promise<void> {
    this.apps.delete(windowId);
    await this.request("app/unregister", { windowId, forget });
  }

  private async register(app: AppRegistration): Promise<void> {
    app.handlers.reset?.();
    if (app.windowId) this.apps.set(app.windowId, app);
    this.registering.add(app);
    try {
      const result = await this.request("app/register", {
        windowId: app.windowId || undefined,
        manifest: app.manifest,
        fileAssociations: app.options.fileAssociations,
        threadId: app.options.threadId,
      });
      app.windowId = result.windowId;
      app.options.windowId = result.windowId;
      app.replayed = result.replayed;
      app.failed = result.failed;
      this.apps.set(result.windowId, app);
    } finally {
      this.registering.delete(app);
    }
  }

  /** Closes the connection for good (no reconnect); pending requests fail. */
  close(): void {
    this.closedByUser = true;
    this.transport.close();
    this.failAll("closed by the client");
    for (const { stream } of [...this.streams]) stream.end();
  }

  /** Drops the connection as a network failure would (the reconnect logic then runs). For tests. */
  dropConnection(): void {
    this.transport.close();
  }

  /** Resolves when a reconnect in progress has finished (at once when none is). */
  async reconnected(): Promise<void> {
    await this.reconnecting;
  }

  private receive(text: string): void {
    let message: any;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    for (const m of Array.isArray(message) ? message : [message]) this.dispatch(m);
  }

  private dispatch(m: any): void {
    if (m === null || typeof m !== "object") return;
    if (typeof m.method === "string" && m.id !== undefined && m.id !== null) {
      void this.answer(m.id, m.method, m.params);
    } else if (typeof m.method === "string") {
      const n = { method: m.method, params: m.params } as Notification;
      if (!this.accept(n)) return;
      for (const { filter, stream } of [...this.streams]) if (filter(n)) stream.push(n);
    } else if (m.id !== undefined) {
      const pending = this.pending.get(String(m.id));
      if (!pending) return;
      this.pending.delete(String(m.id));
      clearTimeout(pending.timer);
      if (m.error) pending.reject(new RpcError(m.error.code, m.error.message, m.error.data));
      else pending.resolve(m.result);
    }
  }

  /** Records a numbered event's `seq`; false for one already delivered (seq <= the last seen). */
  private accept(n: Notification): boolean {
    const numbered = seqOf(n);
    if (!numbered) return true;
    const last = this.lastSeqs.get(numbered.threadId);
    if (last !== undefined && numbered.seq <= last) return false;
    this.lastSeqs.set(numbered.threadId, numbered.seq);
    return true;
  }

  /**
   * Subscribes again after a reconnect, after the last event delivered when there is one. If the
   * server cannot serve that (-32602), subscribes without `afterSeq`, forgets the thread's last
   * `seq` (the server's numbering may have restarted) and marks the thread for `onResyncNeeded`.
   */
  private async resubscribe(threadId: string, params: unknown): Promise<void> {
    const last = this.lastSeqs.get(threadId);
    const withSeq: any = last === undefined ? params : { ...(params as object), afterSeq: last };
    if (withSeq?.afterSeq === undefined || withSeq?.afterSeq === null) {
      await this.call("thread/subscribe", params, this.requestTimeoutMs);
      return;
    }
    try {
      await this.call("thread/subscribe", withSeq, this.requestTimeoutMs);
    } catch (err) {
      if (!(err instanceof RpcError) || err.code !== INVALID_PARAMS) throw err;
      const { afterSeq: _dropped, ...plain } = withSeq;
      this.lastSeqs.delete(threadId);
      this.resyncPending.add(threadId);
      await this.call("thread/subscribe", plain, this.requestTimeoutMs);
    }
  }

  private async answer(id: unknown, method: string, params: any): Promise<void> {
    try {
      let result: unknown;
      if (method === "ext/app/query" || method === "ext/app/command") {
        const app = this.apps.get(params?.windowId) ?? (this.registering.size === 1 ? [...this.registering][0] : undefined);
        if (!app) throw Object.assign(new Error(`no app hosted here for window ${params?.windowId}`), { rpcCode: METHOD_NOT_FOUND });
        const emit = (runId: string, type: string, payload?: unknown) =>
          this.notify("app/emit", { windowId: params.windowId, runId, type, payload });
        result = method === "ext/app/query" ? await answerQuery(app, params) : await answerCommand(app, params, emit);
      } else {
        const handler = this.handlers.get(method);
        if (!handler) throw Object.assign(new Error(`no handler for ${method}`), { rpcCode: METHOD_NOT_FOUND });
        result = await handler(params);
      }
      this.send({ jsonrpc: "2.0", id, result });
    } catch (err: any) {
      const error = err?.rpcCode ? { code: err.rpcCode, message: err.message } : appErrorObject(err);
      this.send({ jsonrpc: "2.0", id, error });
    }
  }

  private failAll(reason: string): void {
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new ConnectionClosedError(reason));
      this.pending.delete(id);
    }
  }

  private dropped(transport: Transport, reason: string): void {
    if (transport !== this.transport) return;
    this.failAll(reason);
    // A reconnect in progress retries by itself.
    if (this.reconnecting) return;
    const reconnect = this.options.reconnect;
    if (this.closedByUser || !reconnect || !this.options.url) {
      for (const { stream } of [...this.streams]) stream.end(new ConnectionClosedError(reason));
      return;
    }
    this.reconnecting = this.reconnectLoop(reconnect === true ? {} : reconnect).finally(() => {
      this.reconnecting = undefined;
    });
  }

  private async reconnectLoop(options: ReconnectOptions): Promise<void> {
    const initial = options.initialDelayMs ?? 100;
    const max = options.maxDelayMs ?? 5_000;
    const attempts = options.maxAttempts ?? 20;
    for (let attempt = 0; attempt < attempts && !this.closedByUser; attempt++) {
      const delay = Math.min(max, initial * 2 ** attempt) * (0.5 + Math.random() / 2);
      await new Promise((resolve) => setTimeout(resolve, delay));
      try {
        await this.open();
        for (const [threadId, params] of this.subscriptions) await this.resubscribe(threadId, params);
        for (const app of new Set(this.apps.values())) await this.register(app);
        const resync = [...this.resyncPending];
        this.resyncPending.clear();
        for (const threadId of resync) for (const listener of this.resyncListeners) callSafely(() => listener(threadId));
        for (const listener of this.reconnectListeners) listener();
        return;
      } catch {
        // A refused connection, or the old window not yet released by the server: try again.
        this.transport?.close();
      }
    }
    for (const { stream } of [...this.streams]) stream.end(new ConnectionClosedError("reconnect gave up"));
  }
}
