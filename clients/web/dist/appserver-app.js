"use strict";
(() => {
  // src/app-sdk.ts
  var parentOrigin = location.origin;
  var def;
  var nextId = 1;
  var pending = /* @__PURE__ */ new Map();
  var registration;
  var listeners = /* @__PURE__ */ new Set();
  function post(message) {
    window.parent.postMessage(message, parentOrigin);
  }
  function request(method, params) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      post({ jsonrpc: "2.0", id, method, params });
    });
  }
  function manifestOf(app2) {
    const state = {};
    for (const [key, s] of Object.entries(app2.state ?? {})) state[key] = { description: s.description, schema: s.schema };
    const commands = {};
    for (const [name, c] of Object.entries(app2.commands ?? {})) {
      commands[name] = { description: c.description, params: c.params, streams: c.streams };
    }
    return { appId: app2.appId, name: app2.name, description: app2.description, state, commands, events: app2.events ?? {} };
  }
  async function answer(method, params) {
    if (!def) throw Object.assign(new Error("the app has not registered"), { code: "INVALID_REQUEST" });
    if (method === "ext/app/query") {
      const state = def.state?.[params.stateKey];
      if (!state) throw Object.assign(new Error(`no state key ${params.stateKey}`), { code: "INVALID_PARAMS" });
      return { data: await state.handler() };
    }
    if (method === "ext/app/command") {
      const command = def.commands?.[params.command];
      if (!command) throw Object.assign(new Error(`no command ${params.command}`), { code: "UNKNOWN_TOOL" });
      return { result: await command.handler(params.params ?? {}, { replay: !!params.replay }) };
    }
    throw Object.assign(new Error(`unknown method ${method}`), { rpc: -32601 });
  }
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent || event.origin !== parentOrigin) return;
    const m = event.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (typeof m.method === "string" && m.id !== void 0) {
      answer(m.method, m.params ?? {}).then(
        (result) => post({ jsonrpc: "2.0", id: m.id, result }),
        (err) => post({
          jsonrpc: "2.0",
          id: m.id,
          error: { code: err?.rpc ?? -32e3, message: String(err?.message ?? err), data: { code: err?.code ?? "INTERNAL_ERROR" } }
        })
      );
    } else if (m.method === "app/reset") {
      def?.reset?.();
    } else if (m.id !== void 0 && pending.has(m.id)) {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) p.reject(Object.assign(new Error(m.error.message), { code: m.error.data?.code }));
      else p.resolve(m.result);
    }
  });
  window.addEventListener("pagehide", () => post({ jsonrpc: "2.0", method: "app/unloading", params: {} }));
  var app = {
    /** Registers the app's window; resolves with `{windowId, replayed, failed}` after the replay. */
    async register(app2) {
      def = app2;
      registration = await request("app/register", { manifest: manifestOf(app2) });
      for (const listener of listeners) listener(registration);
      return registration;
    },
    /** A progress event of a streaming command (`app/emit`). */
    emit(runId, type, payload) {
      post({ jsonrpc: "2.0", method: "app/emit", params: { runId, type, payload } });
    },
    /** Tells the agent what the user did (`app/interaction`). */
    sendInteraction(content) {
      post({ jsonrpc: "2.0", method: "app/interaction", params: { content } });
    },
    /** Runs one of this app's own commands through the server, so it is logged and replayed. */
    command(command, params) {
      return request("app/command", { command, params: params ?? {} }).then((r) => r?.result);
    },
    /** The window's registration, once known. */
    get registration() {
      return registration;
    },
    onRegistered(listener) {
      listeners.add(listener);
    }
  };
  async function callTool(name, args) {
    const result = await request("tools/call", { name, arguments: args });
    if (result?.isError) {
      const text = String(result.content?.[0]?.text ?? "the call failed");
      throw Object.assign(new Error(text), { code: text.split(":", 1)[0] });
    }
    return result?.structuredContent;
  }
  var apps = {
    list() {
      return callTool("app_list", {});
    },
    query(windowId, stateKey) {
      return callTool("app_query", { windowId, stateKey });
    },
    command(windowId, command, params) {
      return callTool("app_command", { windowId, command, params: params ?? {} });
    }
  };
  window.appserver = { app, apps };
})();
