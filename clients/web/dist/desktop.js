"use strict";
(() => {
  var __create = Object.create;
  var __defProp = Object.defineProperty;
  var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
  var __getOwnPropNames = Object.getOwnPropertyNames;
  var __getProtoOf = Object.getPrototypeOf;
  var __hasOwnProp = Object.prototype.hasOwnProperty;
  var __defNormalProp = (obj, key, value) => key in obj ? __defProp(obj, key, { enumerable: true, configurable: true, writable: true, value }) : obj[key] = value;
  var __require = /* @__PURE__ */ ((x) => typeof require !== "undefined" ? require : typeof Proxy !== "undefined" ? new Proxy(x, {
    get: (a, b) => (typeof require !== "undefined" ? require : a)[b]
  }) : x)(function(x) {
    if (typeof require !== "undefined") return require.apply(this, arguments);
    throw Error('Dynamic require of "' + x + '" is not supported');
  });
  var __copyProps = (to, from, except, desc) => {
    if (from && typeof from === "object" || typeof from === "function") {
      for (let key of __getOwnPropNames(from))
        if (!__hasOwnProp.call(to, key) && key !== except)
          __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
    }
    return to;
  };
  var __toESM = (mod, isNodeMode, target) => (target = mod != null ? __create(__getProtoOf(mod)) : {}, __copyProps(
    // If the importer is in node compatibility mode or this is not an ESM
    // file that has been converted to a CommonJS file using a Babel-
    // compatible transform (i.e. "__esModule" has not been set), then set
    // "default" to the CommonJS "module.exports" for node compatibility.
    isNodeMode || !mod || !mod.__esModule ? __defProp(target, "default", { value: mod, enumerable: true }) : target,
    mod
  ));
  var __publicField = (obj, key, value) => __defNormalProp(obj, typeof key !== "symbol" ? key + "" : key, value);

  // ../typescript/src/errors.ts
  var RpcError = class extends Error {
    constructor(code, message, data) {
      super(message);
      this.code = code;
      this.data = data;
      this.name = "RpcError";
    }
    /** `data.code` of app errors (`INVALID_PARAMS`, `APP_NOT_FOUND`, ...), if any. */
    get appCode() {
      const data = this.data;
      return typeof data?.code === "string" ? data.code : void 0;
    }
  };
  var ConnectionClosedError = class extends Error {
    constructor(reason) {
      super(`connection closed: ${reason}`);
      this.name = "ConnectionClosedError";
    }
  };
  var TimeoutError = class extends Error {
    constructor(what, ms) {
      super(`${what}: no answer within ${ms} ms`);
      this.name = "TimeoutError";
    }
  };
  var AppError = class extends Error {
    constructor(appCode, message) {
      super(message);
      this.appCode = appCode;
      this.name = "AppError";
    }
  };

  // ../typescript/src/app.ts
  function appErrorObject(err) {
    if (err instanceof AppError) {
      const code = err.appCode === "INVALID_PARAMS" ? -32602 : -32e3;
      return { code, message: err.message, data: { code: err.appCode } };
    }
    return { code: -32e3, message: err instanceof Error ? err.message : String(err), data: { code: "APP_ERROR" } };
  }
  async function answerQuery(app, params) {
    return { data: await app.handlers.query(params.stateKey) };
  }
  async function answerCommand(app, params, emit) {
    const handler = app.handlers.commands[params.command];
    if (!handler) throw new AppError("UNKNOWN_TOOL", `no command ${params.command}`);
    const ctx = { windowId: params.windowId, replay: params.replay ?? false, emit };
    return { result: await handler(params.params, ctx) };
  }

  // ../typescript/src/stream.ts
  var EventStream = class {
    /** `onDone` runs once, when the stream ends for any reason (to unsubscribe it). */
    constructor(onDone = () => {
    }) {
      this.onDone = onDone;
      __publicField(this, "buffered", []);
      __publicField(this, "waiting", []);
      __publicField(this, "ended", false);
      __publicField(this, "failure");
    }
    push(value) {
      if (this.ended) return;
      const waiter = this.waiting.shift();
      if (waiter) waiter({ value, done: false });
      else this.buffered.push(value);
    }
    /** Ends the stream; values already pushed are still delivered. With `error`, the next pull after them throws. */
    end(error) {
      if (this.ended) return;
      this.ended = true;
      this.failure = error;
      this.onDone();
      for (const waiter of this.waiting.splice(0)) waiter({ value: void 0, done: true });
    }
    next() {
      const value = this.buffered.shift();
      if (value !== void 0) return Promise.resolve({ value, done: false });
      if (this.ended) {
        const failure = this.failure;
        this.failure = void 0;
        return failure ? Promise.reject(failure) : Promise.resolve({ value: void 0, done: true });
      }
      return new Promise((resolve) => this.waiting.push(resolve));
    }
    return() {
      this.end();
      this.buffered.length = 0;
      return Promise.resolve({ value: void 0, done: true });
    }
    [Symbol.asyncIterator]() {
      return this;
    }
  };

  // ../typescript/src/transport.ts
  async function openWebSocket(url, timeoutMs) {
    const Impl = globalThis.WebSocket ?? (await import("ws")).default;
    const socket = new Impl(url);
    const transport = {
      send: (text) => socket.send(text),
      close: () => socket.close(),
      onMessage: () => {
      },
      onClose: () => {
      }
    };
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.close();
        reject(new Error(`connecting to ${url} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.onopen = () => {
        clearTimeout(timer);
        resolve();
      };
      socket.onerror = (event) => {
        clearTimeout(timer);
        reject(new Error(`cannot connect to ${url}: ${event?.message ?? "error"}`));
      };
    });
    let closed = false;
    socket.onmessage = (event) => transport.onMessage(String(event.data));
    socket.onerror = () => {
    };
    socket.onclose = (event) => {
      if (!closed) {
        closed = true;
        transport.onClose(`WebSocket closed (${event?.code ?? "?"})`);
      }
    };
    return transport;
  }
  async function spawnStdio(command, args, env) {
    const { spawn } = await import("node:child_process");
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: env ?? process.env });
    let buffer = "";
    let closed = false;
    const transport = {
      process: child,
      send: (text) => {
        child.stdin.write(text + "\n");
      },
      close: () => {
        child.stdin.end();
      },
      onMessage: (_text) => {
      },
      onClose: (_reason) => {
      }
    };
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.trim() !== "") transport.onMessage(line);
      }
    });
    child.stderr.resume();
    const finish = (reason) => {
      if (!closed) {
        closed = true;
        transport.onClose(reason);
      }
    };
    child.stdout.on("end", () => finish("stdout closed"));
    child.on("error", (err) => finish(`spawn failed: ${err.message}`));
    child.stdin.on("error", () => {
    });
    return transport;
  }

  // ../typescript/src/client.ts
  var METHOD_NOT_FOUND = -32601;
  var INVALID_PARAMS = -32602;
  var TURN_END_METHODS = ["turn/completed", "turn/failed", "turn/cancelled"];
  function threadIdOf(n) {
    const p = n.params;
    return p?.threadId ?? p?.turn?.threadId ?? p?.thread?.id ?? p?.terminal?.threadId;
  }
  function seqOf(n) {
    const seq = n.params?.seq;
    const threadId = threadIdOf(n);
    if (typeof threadId !== "string" || typeof seq !== "number") return void 0;
    return { threadId, seq };
  }
  function turnIdOf(n) {
    const p = n.params;
    return p?.turnId ?? p?.turn?.id;
  }
  function callSafely(f) {
    try {
      f();
    } catch {
    }
  }
  function withToken(url, token) {
    const u = new URL(url);
    u.searchParams.set("token", token);
    return u.toString();
  }
  var AppServerClient = class _AppServerClient {
    constructor(options) {
      this.options = options;
      __publicField(this, "transport");
      __publicField(this, "nextId", 1);
      __publicField(this, "pending", /* @__PURE__ */ new Map());
      __publicField(this, "streams", /* @__PURE__ */ new Set());
      __publicField(this, "handlers", /* @__PURE__ */ new Map());
      __publicField(this, "apps", /* @__PURE__ */ new Map());
      /** Registrations sent but not answered yet (a new window's id is not known until then). */
      __publicField(this, "registering", /* @__PURE__ */ new Set());
      __publicField(this, "subscriptions", /* @__PURE__ */ new Map());
      __publicField(this, "reconnectListeners", /* @__PURE__ */ new Set());
      __publicField(this, "resyncListeners", /* @__PURE__ */ new Set());
      /** Per thread, the highest `seq` delivered to the application. */
      __publicField(this, "lastSeqs", /* @__PURE__ */ new Map());
      /** Threads whose gap a reconnect could not fill, reported once the reconnect succeeds. */
      __publicField(this, "resyncPending", /* @__PURE__ */ new Set());
      __publicField(this, "closedByUser", false);
      __publicField(this, "reconnecting");
      /** The server's `initialize` answer (of the latest connection). */
      __publicField(this, "serverInfo");
    }
    /** Connects, sends `initialize` and `initialized`, and returns the ready client. */
    static async connect(options) {
      if (!options.url && !options.spawn) throw new Error("connect needs `url` or `spawn`");
      const client2 = new _AppServerClient(options);
      try {
        await client2.open();
      } catch (err) {
        if (client2.transport) client2.close();
        throw err;
      }
      return client2;
    }
    get requestTimeoutMs() {
      return this.options.requestTimeoutMs ?? 3e4;
    }
    async open() {
      const { url, spawn, token } = this.options;
      const transport = url ? await openWebSocket(token ? withToken(url, token) : url, this.options.connectTimeoutMs ?? 1e4) : await spawnStdio(spawn.command, spawn.args ?? [], spawn.env);
      this.transport = transport;
      transport.onMessage = (text) => this.receive(text);
      transport.onClose = (reason) => this.dropped(transport, reason);
      this.serverInfo = await this.request("initialize", {
        clientInfo: this.options.clientInfo ?? { name: "appserver-ts", version: "0.1.0" },
        capabilities: this.options.capabilities ?? {}
      });
      this.notify("initialized", {});
    }
    /** Sends a request and resolves with its result; a JSON-RPC error rejects with `RpcError`. */
    request(method, params, options = {}) {
      if (method === "thread/subscribe") this.subscriptions.set(params.threadId, params);
      if (method === "thread/unsubscribe") {
        this.subscriptions.delete(params.threadId);
        this.lastSeqs.delete(params.threadId);
      }
      return this.call(method, params, options.timeoutMs ?? this.requestTimeoutMs);
    }
    call(method, params, timeoutMs) {
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
    notify(method, params) {
      this.send({ jsonrpc: "2.0", method, params });
    }
    send(message) {
      try {
        this.transport.send(JSON.stringify(message));
      } catch {
      }
    }
    /** Every notification (optionally filtered) from now on, until `return()` or `close()`. */
    notifications(filter = () => true) {
      const entry = { filter, stream: void 0 };
      entry.stream = new EventStream(() => this.streams.delete(entry));
      this.streams.add(entry);
      return entry.stream;
    }
    /** Notifications about one thread (its turns, items, runtime, queue, ...). */
    threadEvents(threadId) {
      return this.notifications((n) => threadIdOf(n) === threadId);
    }
    /** One turn's notifications; the stream ends after its `turn/completed`, `turn/failed` or `turn/cancelled`. */
    turnEvents(threadId, turnId) {
      const stream = this.notifications((n) => {
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
    async startTurn(params) {
      let turnId;
      const early = [];
      const events = this.notifications((n) => {
        if (threadIdOf(n) !== params.threadId) return false;
        const id = turnIdOf(n);
        if (id === void 0) return false;
        if (turnId === void 0) {
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
    handle(method, handler) {
      this.handlers.set(method, handler);
    }
    /** Answers `item/approval/request` (approvals of gated tool calls and app commands). */
    onApproval(handler) {
      this.handle("item/approval/request", handler);
    }
    /** Answers `item/tool/call` (dynamic tools this client declared on `thread/start`). */
    onToolCall(handler) {
      this.handle("item/tool/call", handler);
    }
    /** Runs after every successful reconnect (apps re-registered, subscriptions renewed). */
    onReconnect(listener) {
      this.reconnectListeners.add(listener);
      return () => this.reconnectListeners.delete(listener);
    }
    /**
     * Runs after a reconnect for each subscribed thread whose missed events could not be caught up:
     * the server refused `thread/subscribe` with `afterSeq` (-32602: the events are too old or no
     * longer kept), so the client subscribed again without it and events may have been missed.
     * Read the thread (`thread/read`) to refresh its state. Returns a function that removes it.
     */
    onResyncNeeded(listener) {
      this.resyncListeners.add(listener);
      return () => this.resyncListeners.delete(listener);
    }
    /** The highest `seq` of `threadId` this client delivered (undefined before its first numbered event). */
    lastSeq(threadId) {
      return this.lastSeqs.get(threadId);
    }
    /**
     * Hosts an app: registers its window and answers `ext/app/query` / `ext/app/command` for it.
     * After a reconnect the window is registered again (`handlers.reset` first), and the server's
     * replay of its log restores the state.
     */
    async registerApp(manifest, handlers, options = {}) {
      const app = { windowId: options.windowId ?? "", manifest, handlers, options, replayed: 0, failed: 0 };
      await this.register(app);
      return app;
    }
    /** Unregisters an app (`forget: true` deletes its log) and stops answering for it. */
    async unregisterApp(windowId, forget = false) {
      this.apps.delete(windowId);
      await this.request("app/unregister", { windowId, forget });
    }
    async register(app) {
      app.handlers.reset?.();
      if (app.windowId) this.apps.set(app.windowId, app);
      this.registering.add(app);
      try {
        const result = await this.request("app/register", {
          windowId: app.windowId || void 0,
          manifest: app.manifest,
          fileAssociations: app.options.fileAssociations,
          threadId: app.options.threadId
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
    close() {
      this.closedByUser = true;
      this.transport.close();
      this.failAll("closed by the client");
      for (const { stream } of [...this.streams]) stream.end();
    }
    /** Drops the connection as a network failure would (the reconnect logic then runs). For tests. */
    dropConnection() {
      this.transport.close();
    }
    /** Resolves when a reconnect in progress has finished (at once when none is). */
    async reconnected() {
      await this.reconnecting;
    }
    receive(text) {
      let message;
      try {
        message = JSON.parse(text);
      } catch {
        return;
      }
      for (const m of Array.isArray(message) ? message : [message]) this.dispatch(m);
    }
    dispatch(m) {
      if (m === null || typeof m !== "object") return;
      if (typeof m.method === "string" && m.id !== void 0 && m.id !== null) {
        void this.answer(m.id, m.method, m.params);
      } else if (typeof m.method === "string") {
        const n = { method: m.method, params: m.params };
        if (!this.accept(n)) return;
        for (const { filter, stream } of [...this.streams]) if (filter(n)) stream.push(n);
      } else if (m.id !== void 0) {
        const pending = this.pending.get(String(m.id));
        if (!pending) return;
        this.pending.delete(String(m.id));
        clearTimeout(pending.timer);
        if (m.error) pending.reject(new RpcError(m.error.code, m.error.message, m.error.data));
        else pending.resolve(m.result);
      }
    }
    /** Records a numbered event's `seq`; false for one already delivered (seq <= the last seen). */
    accept(n) {
      const numbered = seqOf(n);
      if (!numbered) return true;
      const last = this.lastSeqs.get(numbered.threadId);
      if (last !== void 0 && numbered.seq <= last) return false;
      this.lastSeqs.set(numbered.threadId, numbered.seq);
      return true;
    }
    /**
     * Subscribes again after a reconnect, after the last event delivered when there is one. If the
     * server cannot serve that (-32602), subscribes without `afterSeq`, forgets the thread's last
     * `seq` (the server's numbering may have restarted) and marks the thread for `onResyncNeeded`.
     */
    async resubscribe(threadId, params) {
      const last = this.lastSeqs.get(threadId);
      const withSeq = last === void 0 ? params : { ...params, afterSeq: last };
      if (withSeq?.afterSeq === void 0 || withSeq?.afterSeq === null) {
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
    async answer(id, method, params) {
      try {
        let result;
        if (method === "ext/app/query" || method === "ext/app/command") {
          const app = this.apps.get(params?.windowId) ?? (this.registering.size === 1 ? [...this.registering][0] : void 0);
          if (!app) throw Object.assign(new Error(`no app hosted here for window ${params?.windowId}`), { rpcCode: METHOD_NOT_FOUND });
          const emit = (runId, type, payload) => this.notify("app/emit", { windowId: params.windowId, runId, type, payload });
          result = method === "ext/app/query" ? await answerQuery(app, params) : await answerCommand(app, params, emit);
        } else {
          const handler = this.handlers.get(method);
          if (!handler) throw Object.assign(new Error(`no handler for ${method}`), { rpcCode: METHOD_NOT_FOUND });
          result = await handler(params);
        }
        this.send({ jsonrpc: "2.0", id, result });
      } catch (err) {
        const error = err?.rpcCode ? { code: err.rpcCode, message: err.message } : appErrorObject(err);
        this.send({ jsonrpc: "2.0", id, error });
      }
    }
    failAll(reason) {
      for (const [id, pending] of this.pending) {
        clearTimeout(pending.timer);
        pending.reject(new ConnectionClosedError(reason));
        this.pending.delete(id);
      }
    }
    dropped(transport, reason) {
      if (transport !== this.transport) return;
      this.failAll(reason);
      if (this.reconnecting) return;
      const reconnect = this.options.reconnect;
      if (this.closedByUser || !reconnect || !this.options.url) {
        for (const { stream } of [...this.streams]) stream.end(new ConnectionClosedError(reason));
        return;
      }
      this.reconnecting = this.reconnectLoop(reconnect === true ? {} : reconnect).finally(() => {
        this.reconnecting = void 0;
      });
    }
    async reconnectLoop(options) {
      const initial = options.initialDelayMs ?? 100;
      const max = options.maxDelayMs ?? 5e3;
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
          this.transport?.close();
        }
      }
      for (const { stream } of [...this.streams]) stream.end(new ConnectionClosedError("reconnect gave up"));
    }
  };

  // src/hands.ts
  var COLORS = ["#2e3440", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#dcdfe4"];
  var BRIGHT = ["#5c6370", "#ff7a85", "#b5e890", "#ffd68a", "#82c3ff", "#e09cff", "#7fdbe6", "#ffffff"];
  var states = /* @__PURE__ */ new WeakMap();
  function appendAnsi(pre, text) {
    const state = states.get(pre) ?? { carry: "", bold: false };
    states.set(pre, state);
    let input = state.carry + text;
    state.carry = "";
    const cut = input.lastIndexOf("\x1B");
    if (cut >= 0 && !/^\x1b\[[0-9;?]*[A-Za-z]/.test(input.slice(cut)) && input.length - cut < 32) {
      state.carry = input.slice(cut);
      input = input.slice(0, cut);
    }
    const pattern = /\x1b\[([0-9;?]*)([A-Za-z])|\x1b[^[]/g;
    let last = 0;
    for (let m = pattern.exec(input); m; m = pattern.exec(input)) {
      span(pre, input.slice(last, m.index), state);
      last = pattern.lastIndex;
      if (m[2] === "m") sgr(state, m[1] ?? "");
    }
    span(pre, input.slice(last), state);
  }
  function span(pre, text, state) {
    if (!text) return;
    if (!state.color && !state.bold) {
      pre.append(text);
      return;
    }
    const s = document.createElement("span");
    s.textContent = text;
    if (state.color) s.style.color = state.color;
    if (state.bold) s.style.fontWeight = "bold";
    pre.append(s);
  }
  function sgr(state, params) {
    for (const code of (params || "0").split(";").map(Number)) {
      if (code === 0) Object.assign(state, { color: void 0, bold: false });
      else if (code === 1) state.bold = true;
      else if (code === 22) state.bold = false;
      else if (code === 39) state.color = void 0;
      else if (code >= 30 && code <= 37) state.color = COLORS[code - 30];
      else if (code >= 90 && code <= 97) state.color = BRIGHT[code - 90];
    }
  }
  function el(tag, className, text) {
    const e = document.createElement(tag);
    e.className = className;
    if (text !== void 0) e.textContent = text;
    return e;
  }
  function renderCommand(node, payload) {
    let head = node.querySelector(".command-head");
    let pre = node.querySelector("pre.terminal");
    if (!head || !pre) {
      node.replaceChildren();
      head = el("div", "command-head");
      pre = el("pre", "terminal");
      node.append(head, pre);
    }
    const exit = payload.exitCode === void 0 || payload.exitCode === null ? "" : ` · exit ${payload.exitCode}`;
    const session = payload.sessionId ? ` · ${payload.sessionId}` : "";
    head.textContent = `$ ${payload.command}   [${payload.status}${exit}${session}]`;
    node.dataset.commandStatus = payload.status;
    if (payload.status !== "inProgress") {
      pre.replaceChildren();
      states.delete(pre);
      appendAnsi(pre, payload.aggregatedOutput ?? "");
    }
  }
  function appendCommandOutput(node, delta) {
    const pre = node.querySelector("pre.terminal");
    if (pre) appendAnsi(pre, delta);
  }
  function diffBlock(diff) {
    const pre = el("pre", "diff");
    for (const line of diff.split("\n")) {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "file" : line.startsWith("@@") ? "hunk" : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "ctx";
      pre.append(el("span", `line ${kind}`, `${line}
`));
    }
    return pre;
  }
  function fileChanges(changes) {
    const box = el("div", "file-changes");
    for (const c of changes) {
      box.append(el("div", "file-change-head", `${c.kind === "add" ? "Added" : "Changed"} ${c.path} (+${c.additions} −${c.deletions})`));
      box.append(diffBlock(c.diff));
    }
    return box;
  }
  function renderPlan(target, plan) {
    target.replaceChildren();
    target.hidden = !plan;
    if (!plan) return;
    target.append(el("div", "plan-title", plan.title));
    if (plan.overview) target.append(el("div", "plan-overview muted", plan.overview));
    const list = el("ul", "plan-todos");
    for (const t of plan.todos ?? []) {
      const mark = t.status === "completed" ? "☑" : t.status === "in_progress" ? "▶" : t.status === "cancelled" ? "☒" : "☐";
      const li = el("li", `todo ${t.status}`, `${mark} ${t.content}`);
      li.dataset.id = t.id;
      list.append(li);
    }
    target.append(list);
  }
  var recentCalls = [];
  function noteToolCall(payload) {
    if (!payload?.callId) return;
    const at = recentCalls.findIndex((c) => c.callId === payload.callId);
    if (at >= 0) recentCalls.splice(at, 1);
    recentCalls.push(payload);
    if (recentCalls.length > 50) recentCalls.shift();
  }
  function approvalDetail(params) {
    if (params.approvalType === "shell") {
      const pre = el("pre", "terminal approval-command");
      pre.textContent = `${params.target} $ ${params.operation}`;
      return pre;
    }
    if (params.approvalType !== "file" || params.operation !== "write" && params.operation !== "edit") return void 0;
    const target = String(params.target ?? "");
    const call = [...recentCalls].reverse().find((c) => (c.toolName === "WriteFile" || c.toolName === "EditFile") && target.endsWith(String(c.arguments?.path ?? "").replace(/^\.\//, "")));
    if (!call) return void 0;
    const a = call.arguments ?? {};
    const lines = (text, sign) => String(text ?? "").replace(/\n$/, "").split("\n").map((l) => `${sign}${l}`);
    const diff = call.toolName === "WriteFile" ? [`+++ ${a.path}`, ...lines(a.content, "+")] : [`--- ${a.path}`, `+++ ${a.path}`, ...lines(a.oldText, "-"), ...lines(a.newText, "+")];
    return diffBlock(diff.join("\n"));
  }

  // src/host.ts
  var MCP_PROTOCOL_VERSION = "2026-01-26";
  var FRAME_WAIT_MS = 1e4;
  var REGISTER_ATTEMPTS = 40;
  var WindowHost = class {
    constructor(client2, app, slot, windowId, events) {
      this.client = client2;
      this.app = app;
      this.slot = slot;
      this.events = events;
      __publicField(this, "element");
      __publicField(this, "frame");
      __publicField(this, "windowId");
      /** Whether the iframe's app is registered and takes commands (false while it reloads). */
      __publicField(this, "frameReady", false);
      __publicField(this, "readyWaiters", []);
      __publicField(this, "nextId", 1);
      __publicField(this, "pending", /* @__PURE__ */ new Map());
      __publicField(this, "mcpTools", []);
      __publicField(this, "mcpHasTools", false);
      this.windowId = windowId;
      this.element = document.createElement("article");
      this.element.className = "window";
      this.element.dataset.app = app.id;
      const bar = document.createElement("header");
      const title = document.createElement("span");
      title.className = "title";
      title.textContent = `${app.icon && !app.icon.includes(".") ? app.icon + " " : ""}${app.name}`;
      const id = document.createElement("code");
      id.className = "window-id";
      id.textContent = windowId ?? "registering…";
      const reload = button("⟳", "Reload the app (its state comes back by replay)", () => this.reload());
      reload.classList.add("reload");
      const close = button("✕", "Close the window (its log is kept)", () => void this.close());
      close.classList.add("close");
      const event = document.createElement("span");
      event.className = "event";
      bar.append(title, id, event, reload, close);
      this.frame = document.createElement("iframe");
      this.frame.setAttribute("sandbox", "allow-scripts");
      this.frame.title = app.name;
      this.frame.src = app.entry;
      this.element.append(bar, this.frame);
    }
    get idLabel() {
      return this.element.querySelector(".window-id");
    }
    /** A message from this window's iframe (origin and source already checked). */
    receive(m) {
      if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
      if (typeof m.method === "string" && m.id !== void 0 && m.id !== null) {
        this.answerFrame(m.id, m.method, m.params ?? {});
      } else if (typeof m.method === "string") {
        this.frameNotification(m.method, m.params ?? {});
      } else if (m.id !== void 0) {
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        clearTimeout(p.timer);
        if (m.error) p.reject(new AppError(m.error.data?.code ?? "INTERNAL_ERROR", String(m.error.message)));
        else p.resolve(m.result);
      }
    }
    post(message) {
      this.frame.contentWindow?.postMessage(message, "*");
    }
    notifyFrame(method, params) {
      this.post({ jsonrpc: "2.0", method, params });
    }
    requestFrame(method, params) {
      const id = this.nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new AppError("TIMEOUT", `the app did not answer ${method} within ${FRAME_WAIT_MS} ms`));
        }, FRAME_WAIT_MS);
        this.pending.set(id, { resolve, reject, timer });
        this.post({ jsonrpc: "2.0", id, method, params });
      });
    }
    answerFrame(id, method, params) {
      this.frameRequest(method, params).then(
        (result) => this.post({ jsonrpc: "2.0", id, result }),
        (err) => {
          const code = err instanceof RpcError ? err.code : -32e3;
          const data = err instanceof RpcError ? err.data : { code: err?.appCode ?? "INTERNAL_ERROR" };
          this.post({ jsonrpc: "2.0", id, error: { code, message: String(err?.message ?? err), data } });
        }
      );
    }
    /** Requests from the iframe, both dialects. */
    async frameRequest(method, params) {
      switch (method) {
        case "app/register":
          return this.register(params.manifest);
        case "app/command": {
          const own = this.requireId();
          return this.client.request("app/command", { windowId: own, command: params.command, params: params.params, callerWindowId: own });
        }
        case "ui/initialize":
          this.mcpHasTools = params?.appCapabilities?.tools !== void 0;
          return {
            protocolVersion: MCP_PROTOCOL_VERSION,
            hostInfo: { name: "appserver-desktop", version: "0.1.0" },
            hostCapabilities: { serverTools: {}, message: { text: {} }, logging: {} },
            hostContext: {
              theme: matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light",
              displayMode: "inline",
              availableDisplayModes: ["inline"],
              platform: "web",
              locale: navigator.language,
              timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
              containerDimensions: { width: this.frame.clientWidth, height: this.frame.clientHeight }
            }
          };
        case "tools/call":
          return this.viewToolCall(params.name, params.arguments ?? {});
        case "ui/message": {
          const parts = Array.isArray(params.content) ? params.content : [params.content];
          const text = parts.filter((p) => p?.type === "text").map((p) => p.text).join("\n");
          this.client.notify("app/interaction", { windowId: this.requireId(), content: text });
          return {};
        }
        case "ping":
          return {};
        default:
          throw new RpcError(-32601, `the desktop does not support ${method}`);
      }
    }
    frameNotification(method, params) {
      switch (method) {
        case "app/emit":
          if (this.windowId) this.client.notify("app/emit", { windowId: this.windowId, runId: params.runId, type: params.type, payload: params.payload });
          break;
        case "app/interaction":
          if (this.windowId) this.client.notify("app/interaction", { windowId: this.windowId, content: String(params.content) });
          break;
        case "app/unloading":
          this.setFrameReady(false);
          break;
        case "ui/notifications/initialized":
          void this.registerMcpView();
          break;
        case "notifications/message":
          this.events.log(`${this.app.name}: ${JSON.stringify(params.data ?? params)}`);
          break;
        default:
          break;
      }
    }
    requireId() {
      if (!this.windowId) throw new AppError("INVALID_REQUEST", "the window is not registered yet");
      return this.windowId;
    }
    /** An MCP Apps view: its tools (`tools/list`) become the window's commands. */
    async registerMcpView() {
      try {
        const listed = this.mcpHasTools ? await this.requestFrame("tools/list", {}) : { tools: [] };
        const commands2 = {};
        for (const tool of listed.tools ?? []) {
          commands2[tool.name] = { description: tool.description ?? tool.title ?? tool.name, params: tool.inputSchema };
        }
        this.mcpTools = Object.keys(commands2);
        await this.register({ description: this.app.description ?? void 0, state: {}, commands: commands2 });
      } catch (err) {
        this.events.log(`${this.app.name}: ${String(err)}`);
      }
    }
    /** `tools/call` from the iframe (either dialect): its own tools run through the server (logged,
     * replayed); `app_list`, `app_query` and `app_command` reach other windows as this app, which
     * needs `permissions.callApps` and, for commands, the user's approval. A refusal is an
     * `isError` result the app can read. */
    async viewToolCall(name, args) {
      const callerWindowId = this.requireId();
      let result;
      try {
        if (this.mcpTools.includes(name)) {
          const call = { windowId: callerWindowId, command: name, params: args, callerWindowId };
          result = (await this.client.request("app/command", call)).result;
        } else if (name === "app_list") {
          result = await this.client.request("app/list", { callerWindowId });
        } else if (name === "app_query") {
          result = (await this.client.request("app/query", { windowId: args.windowId, stateKey: args.stateKey, callerWindowId })).data;
        } else if (name === "app_command") {
          const call = { windowId: args.windowId, command: args.command, params: args.params, callerWindowId };
          result = (await this.client.request("app/command", call)).result;
        } else {
          return { content: [{ type: "text", text: `unknown tool ${name}` }], isError: true };
        }
      } catch (err) {
        const code = err?.appCode ?? err?.data?.code ?? "INTERNAL_ERROR";
        return { content: [{ type: "text", text: `${code}: ${String(err?.message ?? err)}` }], isError: true };
      }
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    }
    /** Registers (or registers again) the window on the page's connection; the server replays its
     * log. The app's id, name and permissions are the folder's (`app.json`), never the iframe's. */
    async register(declared) {
      const { permissions: _ignored, ...own } = declared ?? {};
      const manifest = { ...own, appId: this.app.id, name: this.app.name, permissions: this.app.permissions ?? void 0 };
      this.setFrameReady(false);
      const names = Object.keys(manifest.commands ?? {});
      const commands2 = {};
      for (const name of names) commands2[name] = (params, ctx) => this.runCommand(name, params, ctx.replay);
      const handlers = {
        query: async (stateKey) => (await this.untilReady(() => this.requestFrame("ext/app/query", { windowId: this.windowId, stateKey }))).data,
        commands: commands2,
        reset: () => this.notifyFrame("app/reset", {})
      };
      for (let attempt = 1; ; attempt++) {
        try {
          const registration = await this.client.registerApp(manifest, handlers, { windowId: this.windowId });
          this.windowId = registration.windowId;
          this.idLabel.textContent = registration.windowId;
          this.element.dataset.windowId = registration.windowId;
          this.setFrameReady(true);
          this.events.changed();
          return { windowId: registration.windowId, replayed: registration.replayed, failed: registration.failed };
        } catch (err) {
          if (!(err instanceof RpcError && err.appCode === "PERMISSION_DENIED") || attempt >= REGISTER_ATTEMPTS) throw err;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
    }
    /** A command from the server: replayed ones go at once (they rebuild the reloading app); others wait for the app. */
    async runCommand(name, params, replay) {
      const send2 = async () => {
        if (this.app.dialect === "mcp-apps") {
          this.notifyFrame("ui/notifications/tool-input", { arguments: params });
          const result = await this.requestFrame("tools/call", { name, arguments: params });
          this.notifyFrame("ui/notifications/tool-result", result);
          if (result?.isError) throw new AppError("INVALID_REQUEST", JSON.stringify(result.content ?? result));
          return result?.structuredContent ?? result;
        }
        return (await this.requestFrame("ext/app/command", { windowId: this.windowId, command: name, params, replay })).result;
      };
      return replay ? send2() : this.untilReady(send2);
    }
    async untilReady(run) {
      if (!this.frameReady) {
        await new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new AppError("TIMEOUT", "the app is reloading")), FRAME_WAIT_MS);
          this.readyWaiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return run();
    }
    setFrameReady(ready) {
      this.frameReady = ready;
      this.element.classList.toggle("reloading", !ready);
      if (ready) for (const waiter of this.readyWaiters.splice(0)) waiter();
    }
    /** The window's latest app event (`app/event`). */
    showEvent(text) {
      this.element.querySelector(".event").textContent = text;
    }
    reload() {
      this.setFrameReady(false);
      this.mcpTools = [];
      this.frame.src = this.app.entry;
    }
    async close() {
      this.element.remove();
      if (this.windowId) await this.client.unregisterApp(this.windowId).catch(() => {
      });
      this.events.changed();
    }
    saved() {
      return { slot: this.slot, appId: this.app.id, windowId: this.windowId };
    }
  };
  function button(text, title, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }
  function listen(hosts2, ignored) {
    window.addEventListener("message", (event) => {
      const host = hosts2().find((h) => h.frame.contentWindow !== null && h.frame.contentWindow === event.source);
      if (!host) return ignored(`a message from an unknown source (origin ${event.origin})`);
      if (event.origin !== "null" && event.origin !== location.origin) return ignored(`a message from origin ${event.origin}`);
      host.receive(event.data);
    });
  }

  // src/desktop.ts
  var IDENTITY = { channelName: "web", userId: "desktop-user", channelContext: "desktop" };
  var THREAD_PAGE = 30;
  var WINDOWS_KEY = "appserver.desktop.windows";
  var THREAD_KEY = "appserver.desktop.thread";
  var $ = (id) => document.getElementById(id);
  var client;
  var currentThread;
  var threadCursor;
  var commands = [];
  var catalog = [];
  var hosts = [];
  var ignoredMessages = 0;
  function el2(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== void 0) e.textContent = text;
    return e;
  }
  function setStatus(text) {
    $("status").textContent = text;
  }
  async function loadThreads(more = false) {
    const page = await client.request("thread/list", { identity: IDENTITY, limit: THREAD_PAGE, cursor: more ? threadCursor : void 0 });
    if (!more) $("threads").replaceChildren();
    for (const t of page.data) addThreadEntry(t, false);
    threadCursor = page.nextCursor ?? void 0;
    $("more-threads").hidden = !threadCursor;
  }
  function addThreadEntry(t, first) {
    if (document.querySelector(`#threads li[data-id="${t.id}"]`)) return;
    const li = el2("li", "thread", t.displayName || "New thread");
    li.dataset.id = t.id;
    li.title = t.id;
    li.addEventListener("click", () => void openThread(t.id));
    if (first) $("threads").prepend(li);
    else $("threads").append(li);
    markCurrent();
  }
  function markCurrent() {
    for (const li of document.querySelectorAll("#threads li")) li.classList.toggle("current", li.dataset.id === currentThread);
  }
  async function newThread() {
    const { thread } = await client.request("thread/start", { identity: IDENTITY });
    addThreadEntry(thread, true);
    await openThread(thread.id);
    return thread.id;
  }
  async function openThread(id) {
    if (currentThread && currentThread !== id) await client.request("thread/unsubscribe", { threadId: currentThread }).catch(() => {
    });
    currentThread = id;
    sessionStorage.setItem(THREAD_KEY, id);
    markCurrent();
    const { thread } = await client.request("thread/read", { threadId: id, includeTurns: true, turnsLimit: 20 });
    $("thread-title").textContent = thread.displayName || thread.id;
    $("messages").replaceChildren();
    renderPlan($("plan"), thread.plan);
    $("turn-diff").replaceChildren();
    for (const turn of thread.turns ?? []) for (const item of turn.items ?? []) renderItem(turn.id, item);
    await client.request("thread/subscribe", { threadId: id, replayRecent: true });
  }
  function itemElement(turnId, itemId) {
    return document.querySelector(`#messages [data-key="${turnId}/${itemId}"]`);
  }
  function renderItem(turnId, item) {
    const p = item.payload ?? {};
    let node = itemElement(turnId, item.id);
    if (!node) {
      node = el2("div", `item ${item.type}`);
      node.dataset.key = `${turnId}/${item.id}`;
      $("messages").append(node);
    }
    node.dataset.status = item.status;
    switch (item.type) {
      case "userMessage":
        node.textContent = p.text ?? "";
        break;
      case "agentMessage":
        if (item.status === "completed" || p.text) node.textContent = p.text ?? node.textContent;
        break;
      case "reasoningContent":
        if (item.status === "completed" || p.text) node.textContent = p.text ?? node.textContent;
        break;
      case "toolCall":
        node.textContent = `${p.toolName}(${p.arguments === void 0 ? "…" : JSON.stringify(p.arguments)})`;
        noteToolCall(p);
        break;
      case "toolResult":
        node.textContent = `${p.success ? "✔" : "✘"} ${String(p.result).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "")}`;
        node.classList.toggle("failed", !p.success);
        if (p.fileChanges?.length) node.append(fileChanges(p.fileChanges));
        break;
      case "commandExecution":
        renderCommand(node, p);
        break;
      case "approvalRequest":
        node.textContent = `Approval asked: ${p.operation}`;
        break;
      case "approvalResponse":
        node.textContent = `Approval: ${p.decision ?? (p.approved ? "accept" : "decline")}`;
        break;
      case "error":
        node.textContent = `Error: ${p.message}`;
        break;
      default:
        node.textContent = `${item.type}`;
    }
    node.scrollIntoView({ block: "end" });
    return node;
  }
  function appendDelta(n, type) {
    let node = itemElement(n.turnId, n.itemId);
    if (!node) node = renderItem(n.turnId, { id: n.itemId, type, status: "started", payload: {} });
    if (node) node.textContent = (node.textContent ?? "") + n.delta;
  }
  var ACTIVITY_LIMIT = 20;
  function callerText(caller) {
    switch (caller?.kind) {
      case "mcp":
        return `outside agent "${caller.declaredName}" (declared name, not verified)`;
      case "app":
        return `app ${caller.appId} (${caller.windowId})`;
      case "agent":
        return `the agent of thread ${caller.threadId}`;
      case "client":
        return `client "${caller.declaredName}" (declared name)`;
      default:
        return "an outside caller";
    }
  }
  function onNotification(n) {
    const p = n.params;
    switch (n.method) {
      case "thread/started":
        if (p.thread?.userId === IDENTITY.userId) addThreadEntry(p.thread, true);
        return;
      case "thread/renamed": {
        const li = document.querySelector(`#threads li[data-id="${p.threadId}"]`);
        if (li) li.textContent = p.displayName;
        if (p.threadId === currentThread) $("thread-title").textContent = p.displayName;
        return;
      }
      case "app/event": {
        const host = hosts.find((h) => h.windowId === p.windowId);
        host?.showEvent(`${p.type} ${JSON.stringify(p.payload ?? {})}`);
        return;
      }
      case "app/externalCall": {
        const line = `${callerText(p.caller)}: ${p.command} on ${p.windowId} ${p.status}`;
        const list = $("activity");
        list.prepend(el2("li", `external ${p.status}`, line));
        while (list.children.length > ACTIVITY_LIMIT) list.lastElementChild?.remove();
        hosts.find((h) => h.windowId === p.windowId)?.showEvent(line);
        return;
      }
      case "plan/updated":
        if (p.threadId === currentThread) renderPlan($("plan"), p);
        return;
      case "thread/runtimeChanged":
        if (p.threadId === currentThread) document.body.classList.toggle("running", !!p.runtime?.running);
        return;
      case "item/approval/resolved":
        if (shownApproval && shownApproval.requestId === p.item?.payload?.requestId) shownApproval.close();
        break;
    }
    if (p?.threadId !== currentThread && p?.turn?.threadId !== currentThread) return;
    switch (n.method) {
      case "item/started":
      case "item/completed":
        renderItem(p.turnId, p.item);
        break;
      case "item/approval/resolved":
        renderItem(p.turnId, p.item);
        break;
      case "item/agentMessage/delta":
        appendDelta(p, "agentMessage");
        break;
      case "item/reasoning/delta":
        appendDelta(p, "reasoningContent");
        break;
      case "item/commandExecution/outputDelta": {
        const node = itemElement(p.turnId, p.itemId);
        if (node) appendCommandOutput(node, p.delta);
        break;
      }
      case "turn/diff/updated":
        $("turn-diff").replaceChildren(diffBlock(p.diff));
        break;
      case "turn/failed":
        $("messages").append(el2("div", "item error", `Turn failed: ${p.error ?? ""}`));
        break;
    }
  }
  async function send(text) {
    const threadId = currentThread ?? await newThread();
    const name = text.startsWith("/") ? text.slice(1).split(/\s/, 1)[0] : void 0;
    const command = commands.find((c) => c.name === `/${name}`);
    if (command && command.category === "builtin") {
      const result = await client.request("command/execute", { threadId, command: text });
      if (result.message) $("messages").append(el2("div", "item systemNotice", result.message));
      if (result.thread) {
        addThreadEntry(result.thread, true);
        await openThread(result.thread.id);
      }
      return;
    }
    await client.request("turn/start", { threadId, input: [{ type: "text", text }] });
  }
  function updateCompletions() {
    const input = $("input");
    const list = $("completions");
    const text = input.value;
    const word = /^\/\S*$/.test(text) ? text : void 0;
    const matches = word === void 0 ? [] : commands.filter((c) => c.name.startsWith(word));
    list.replaceChildren(
      ...matches.map((c) => {
        const li = el2("li", "completion");
        li.append(el2("b", void 0, c.name), el2("span", void 0, ` ${c.description}`));
        li.dataset.name = c.name;
        li.addEventListener("mousedown", (e) => {
          e.preventDefault();
          complete(c.name);
        });
        return li;
      })
    );
    list.hidden = matches.length === 0;
  }
  function complete(name) {
    const input = $("input");
    input.value = `${name} `;
    input.focus();
    updateCompletions();
  }
  function setupComposer() {
    const input = $("input");
    input.addEventListener("input", updateCompletions);
    input.addEventListener("keydown", (e) => {
      const first = document.querySelector("#completions li");
      if (e.key === "Tab" && first && !$("completions").hidden) {
        e.preventDefault();
        complete(first.dataset.name);
      } else if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        $("composer").dispatchEvent(new Event("submit", { cancelable: true }));
      }
    });
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.value = "";
      updateCompletions();
      send(text).catch((err) => $("messages").append(el2("div", "item error", String(err?.message ?? err))));
    });
  }
  var shownApproval;
  function askApproval(params) {
    return new Promise((resolve) => {
      const dialog = $("approval");
      const what = params.approvalType === "app" && params.app ? `Run ${params.app.command} on ${params.app.appId} (${params.app.windowId}) with ${JSON.stringify(params.app.params ?? {})}` : `${params.operation} (in ${params.target})`;
      $("approval-what").textContent = what;
      $("approval-caller").textContent = params.app?.caller ? `Asked by ${callerText(params.app.caller)}` : "";
      $("approval-reason").textContent = params.reason ?? "";
      $("approval-scope").textContent = params.scopeKey;
      const detail = approvalDetail(params);
      $("approval-detail").replaceChildren(...detail ? [detail] : []);
      const buttons = dialog.querySelectorAll("button[data-decision]");
      const done = (decision) => {
        for (const b of buttons) b.onclick = null;
        if (shownApproval?.requestId === params.requestId) shownApproval = void 0;
        dialog.close();
        resolve({ decision });
      };
      shownApproval = { requestId: params.requestId, close: () => done("cancel") };
      for (const b of buttons) b.onclick = () => done(b.dataset.decision);
      dialog.showModal();
    });
  }
  async function loadCatalog() {
    const response = await fetch("/api/apps", { credentials: "same-origin" });
    catalog = (await response.json()).apps;
    $("apps").replaceChildren(
      ...catalog.map((app) => {
        const li = el2("li", "app");
        li.dataset.app = app.id;
        if (app.icon && /\.(svg|png|jpe?g|gif|webp)$/i.test(app.icon)) {
          const img = document.createElement("img");
          img.className = "icon";
          img.alt = "";
          img.src = app.entry.slice(0, app.entry.indexOf(`/${app.id}/`) + app.id.length + 2) + app.icon;
          li.append(img, ` ${app.name}`);
        } else {
          li.textContent = `${app.icon ?? "▣"} ${app.name}`;
        }
        li.title = app.description ?? app.name;
        li.addEventListener("click", () => openWindow(app));
        return li;
      })
    );
  }
  function saveWindows() {
    sessionStorage.setItem(WINDOWS_KEY, JSON.stringify(hosts.filter((h) => h.element.isConnected).map((h) => h.saved())));
  }
  function openWindow(app, saved) {
    const slot = saved?.slot ?? `slot_${Math.random().toString(36).slice(2, 10)}`;
    const host = new WindowHost(client, app, slot, saved?.windowId, {
      changed: () => {
        for (let i = hosts.length - 1; i >= 0; i--) if (!hosts[i].element.isConnected) hosts.splice(i, 1);
        saveWindows();
      },
      log: (text) => console.info(text)
    });
    hosts.push(host);
    $("windows").append(host.element);
    saveWindows();
    return host;
  }
  function restoreWindows() {
    let saved = [];
    try {
      saved = JSON.parse(sessionStorage.getItem(WINDOWS_KEY) ?? "[]");
    } catch {
      saved = [];
    }
    for (const w of saved) {
      const app = catalog.find((a) => a.id === w.appId);
      if (app) openWindow(app, w);
    }
  }
  function forgetToken() {
    const url = new URL(location.href);
    if (!url.searchParams.has("token")) return;
    url.searchParams.delete("token");
    history.replaceState(history.state, "", url.pathname + url.search + url.hash);
  }
  async function main() {
    forgetToken();
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
    client = await AppServerClient.connect({
      url,
      clientInfo: { name: "appserver-desktop", version: "0.1.0" },
      capabilities: { approvalSupport: true, commandExecutionStreaming: true, extensions: { appProtocol: true } },
      reconnect: true
    });
    client.onReconnect(() => setStatus("connected"));
    setStatus("connected");
    client.onApproval((params) => askApproval(params));
    listen(
      () => hosts,
      (why) => {
        ignoredMessages++;
        $("ignored").textContent = `ignored ${ignoredMessages} foreign message${ignoredMessages === 1 ? "" : "s"}`;
        $("ignored").dataset.count = String(ignoredMessages);
        console.warn(`desktop: ignored ${why}`);
      }
    );
    void (async () => {
      for await (const n of client.notifications()) onNotification(n);
    })();
    setupComposer();
    $("new-thread").addEventListener("click", () => void newThread());
    $("more-threads").addEventListener("click", () => void loadThreads(true));
    commands = (await client.request("command/list", {})).commands;
    await Promise.all([loadThreads(), loadCatalog()]);
    const previous = sessionStorage.getItem(THREAD_KEY);
    if (previous) await openThread(previous).catch(() => sessionStorage.removeItem(THREAD_KEY));
    restoreWindows();
    document.body.dataset.ready = "true";
  }
  main().catch((err) => setStatus(`cannot connect: ${String(err?.message ?? err)}`));
})();
