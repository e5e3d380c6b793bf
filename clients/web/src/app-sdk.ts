// The iframe app SDK, served as /assets/appserver-app.js. An app page includes it and calls
// `appserver.app.register({...})`; the desktop page that hosts the iframe registers the window on
// its WebSocket (`app/register`) and relays the server's `ext/app/query` / `ext/app/command`
// here over postMessage. Every message is checked: it must come from the parent window, with the
// server's origin; anything else is ignored.

type Handler = (params: any, ctx: { replay: boolean; runId?: string }) => unknown;

export interface StateDef {
  description: string;
  schema?: unknown;
  handler: () => unknown;
}
export interface CommandDef {
  description: string;
  params?: unknown;
  streams?: string[];
  handler: Handler;
}
export interface AppDef {
  appId: string;
  name: string;
  description?: string;
  state?: Record<string, StateDef>;
  commands?: Record<string, CommandDef>;
  events?: Record<string, { description: string }>;
  /** Called before a replay that rebuilds the state from scratch (after a reconnect). */
  reset?: () => void;
}

interface Registered {
  windowId: string;
  replayed: number;
  failed: number;
}

const parentOrigin = location.origin;
let def: AppDef | undefined;
let nextId = 1;
const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
let registration: Registered | undefined;
const listeners = new Set<(r: Registered) => void>();

function post(message: unknown): void {
  window.parent.postMessage(message, parentOrigin);
}

function request(method: string, params: unknown): Promise<any> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    post({ jsonrpc: "2.0", id, method, params });
  });
}

function manifestOf(app: AppDef): unknown {
  const state: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(app.state ?? {})) state[key] = { description: s.description, schema: s.schema };
  const commands: Record<string, unknown> = {};
  for (const [name, c] of Object.entries(app.commands ?? {})) {
    commands[name] = { description: c.description, params: c.params, streams: c.streams };
  }
  return { appId: app.appId, name: app.name, description: app.description, state, commands, events: app.events ?? {} };
}

async function answer(method: string, params: any): Promise<unknown> {
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

window.addEventListener("message", (event: MessageEvent) => {
  // Only the desktop that embeds us, from the server's origin.
  if (event.source !== window.parent || event.origin !== parentOrigin) return;
  const m = event.data;
  if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
  if (typeof m.method === "string" && m.id !== undefined) {
    answer(m.method, m.params ?? {}).then(
      (result) => post({ jsonrpc: "2.0", id: m.id, result }),
      (err: any) =>
        post({
          jsonrpc: "2.0",
          id: m.id,
          error: { code: err?.rpc ?? -32000, message: String(err?.message ?? err), data: { code: err?.code ?? "INTERNAL_ERROR" } },
        }),
    );
  } else if (m.method === "app/reset") {
    def?.reset?.();
  } else if (m.id !== undefined && pending.has(m.id)) {
    const p = pending.get(m.id)!;
    pending.delete(m.id);
    if (m.error) p.reject(Object.assign(new Error(m.error.message), { code: m.error.data?.code }));
    else p.resolve(m.result);
  }
});

// The desktop keeps sending a reloading window's commands to it once it has registered again.
window.addEventListener("pagehide", () => post({ jsonrpc: "2.0", method: "app/unloading", params: {} }));

const app = {
  /** Registers the app's window; resolves with `{windowId, replayed, failed}` after the replay. */
  async register(app: AppDef): Promise<Registered> {
    def = app;
    registration = await request("app/register", { manifest: manifestOf(app) });
    for (const listener of listeners) listener(registration!);
    return registration!;
  },
  /** A progress event of a streaming command (`app/emit`). */
  emit(runId: string, type: string, payload?: unknown): void {
    post({ jsonrpc: "2.0", method: "app/emit", params: { runId, type, payload } });
  },
  /** Tells the agent what the user did (`app/interaction`). */
  sendInteraction(content: string): void {
    post({ jsonrpc: "2.0", method: "app/interaction", params: { content } });
  },
  /** Runs one of this app's own commands through the server, so it is logged and replayed. */
  command(command: string, params?: unknown): Promise<unknown> {
    return request("app/command", { command, params: params ?? {} }).then((r) => r?.result);
  },
  /** The window's registration, once known. */
  get registration(): Registered | undefined {
    return registration;
  },
  onRegistered(listener: (r: Registered) => void): void {
    listeners.add(listener);
  },
};

/** A `tools/call` of `app_list`, `app_query` or `app_command`: the value, or an Error carrying the
 * code the server refused it with (`PERMISSION_DENIED` without `permissions.callApps` in the
 * app's `app.json`, or when the user declined). */
async function callTool(name: string, args: unknown): Promise<any> {
  const result = await request("tools/call", { name, arguments: args });
  if (result?.isError) {
    const text = String(result.content?.[0]?.text ?? "the call failed");
    throw Object.assign(new Error(text), { code: text.split(":", 1)[0] });
  }
  return result?.structuredContent;
}

/** Other app windows, for an app whose `app.json` declares `permissions: {callApps: true}`. Each
 * command is approved by the user like an agent's, with this app named as its caller. */
const apps = {
  list(): Promise<any> {
    return callTool("app_list", {});
  },
  query(windowId: string, stateKey: string): Promise<unknown> {
    return callTool("app_query", { windowId, stateKey });
  },
  command(windowId: string, command: string, params?: unknown): Promise<unknown> {
    return callTool("app_command", { windowId, command, params: params ?? {} });
  },
};

(window as any).appserver = { app, apps };
