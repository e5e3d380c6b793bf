// The app host: each app window of the desktop is an iframe whose app speaks either our SDK
// (`appserver-app.js`: `app/register`, `app/emit`, `app/interaction`, `app/command`) or the MCP
// Apps dialect (`ui/initialize`, `tools/list`/`tools/call`, `ui/message`,
// `ui/request-display-mode`, `host-context-changed` on a theme change, `ui/resource-teardown`
// before the window closes; no tool-input / tool-result: no tool call created the window).
// Either way the page registers the window on its own WebSocket and
// answers the server's `ext/app/query` / `ext/app/command` for it by asking the iframe. The
// window id is kept in sessionStorage, so a reload of the iframe or of the page registers the
// same window again and the server's replay of its log restores the app.
//
// The iframe is not trusted with who it is: the page registers its window with the app folder's
// id, name and permissions (from the catalog's `app.json`), never the iframe's, and every call
// the iframe makes goes to the server with `callerWindowId` — its own window — so the server
// applies the app's permission (`permissions.callApps`) and approval to calls on other windows.

import { AppError, RpcError, type AppServerClient } from "../../typescript/src/index.js";
import { HOST_INFO, MCP_APPS_PROTOCOL_VERSION, TEARDOWN_MS, messageText } from "./mcp-ui.js";
import { currentTheme } from "./theme.js";

export interface CatalogApp {
  id: string;
  name: string;
  icon?: string | null;
  description?: string | null;
  entry: string;
  dialect: "appserver" | "mcp-apps";
  fileAssociations: unknown[];
  permissions?: { callApps?: boolean } | null;
}

/** A window as remembered across page reloads. */
export interface SavedWindow {
  slot: string;
  appId: string;
  windowId?: string;
}

/** How long a command waits for a reloading iframe, and an iframe request for its answer. */
const FRAME_WAIT_MS = 10_000;
/** Retries of a registration the server refused because it still sees the previous page. */
const REGISTER_ATTEMPTS = 40;
/** How long a new document has to register (either dialect) before the window says it did not start. */
export const READY_TIMEOUT_MS = 10_000;

type Json = any;

export interface HostEvents {
  changed(): void;
  log(text: string): void;
}

export class WindowHost {
  readonly element: HTMLElement;
  readonly frame: HTMLIFrameElement;
  windowId: string | undefined;
  /** Whether the iframe's app is registered and takes commands (false while it reloads). */
  private frameReady = false;
  private readyWaiters: Array<() => void> = [];
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void; timer: any }>();
  private mcpTools: string[] = [];
  private mcpHasTools = false;
  /** An MCP Apps view that said `ui/notifications/initialized` (told theme changes and its teardown). */
  private mcpInitialized = false;
  private readonly onTheme = () => {
    if (this.mcpInitialized) this.notifyFrame("ui/notifications/host-context-changed", { theme: currentTheme() });
  };
  /** What the app declared at its latest registration, to register it again on a new connection. */
  private declared: Json | undefined;

  constructor(
    private client: AppServerClient,
    readonly app: CatalogApp,
    readonly slot: string,
    windowId: string | undefined,
    private readonly events: HostEvents,
  ) {
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
    id.textContent = windowId ?? "starting…";
    const reload = button("⟳", "Reload the app (its state comes back by replay)", () => this.reload());
    reload.classList.add("reload");
    const close = button("✕", "Close the window (its log is kept)", () => void this.close());
    close.classList.add("close");
    const event = document.createElement("span");
    event.className = "event";
    bar.append(title, id, event, reload, close);
    this.frame = document.createElement("iframe");
    // Scripts only: no same origin (the app cannot reach the page, its cookie or the server).
    this.frame.setAttribute("sandbox", "allow-scripts");
    this.frame.title = app.name;
    this.frame.src = app.entry;
    const failure = document.createElement("div");
    failure.className = "failure";
    failure.setAttribute("role", "alert");
    failure.hidden = true;
    this.element.append(bar, failure, this.frame);
    this.watchStart();
    document.addEventListener("themechange", this.onTheme);
  }

  private startTimer: ReturnType<typeof setTimeout> | undefined;

  /** A document that never registers (broken, or not an app at all) is said to have failed, with a retry. */
  private watchStart(): void {
    clearTimeout(this.startTimer);
    this.showFailure(undefined);
    this.startTimer = setTimeout(() => {
      if (this.frameReady) return;
      this.showFailure(`${this.app.name} did not start: its page did not register within ${READY_TIMEOUT_MS / 1000} s (a broken app, or a page that is not an app).`);
    }, READY_TIMEOUT_MS);
  }

  private showFailure(text: string | undefined): void {
    const box = this.element.querySelector<HTMLElement>(".failure")!;
    box.hidden = text === undefined;
    this.element.classList.toggle("failed", text !== undefined);
    if (text === undefined) return box.replaceChildren();
    box.replaceChildren(text, " ", button("Retry", "Load the app again", () => this.reload()));
  }

  private get idLabel(): HTMLElement {
    return this.element.querySelector(".window-id") as HTMLElement;
  }

  /** A message from this window's iframe (origin and source already checked). */
  receive(m: Json): void {
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (typeof m.method === "string" && m.id !== undefined && m.id !== null) {
      this.answerFrame(m.id, m.method, m.params ?? {});
    } else if (typeof m.method === "string") {
      this.frameNotification(m.method, m.params ?? {});
    } else if (m.id !== undefined) {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.error) p.reject(new AppError(m.error.data?.code ?? "INTERNAL_ERROR", String(m.error.message)));
      else p.resolve(m.result);
    }
  }

  private post(message: Json): void {
    // The iframe's origin is opaque (sandboxed), so no target origin can name it; the message
    // goes to this iframe's window only.
    this.frame.contentWindow?.postMessage(message, "*");
  }

  private notifyFrame(method: string, params: Json): void {
    this.post({ jsonrpc: "2.0", method, params });
  }

  private requestFrame(method: string, params: Json): Promise<Json> {
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

  private answerFrame(id: Json, method: string, params: Json): void {
    this.frameRequest(method, params).then(
      (result) => this.post({ jsonrpc: "2.0", id, result }),
      (err: any) => {
        const code = err instanceof RpcError ? err.code : -32000;
        const data = err instanceof RpcError ? err.data : { code: err?.appCode ?? "INTERNAL_ERROR" };
        this.post({ jsonrpc: "2.0", id, error: { code, message: String(err?.message ?? err), data } });
      },
    );
  }

  /** Requests from the iframe, both dialects. */
  private async frameRequest(method: string, params: Json): Promise<Json> {
    switch (method) {
      case "app/register":
        return this.register(params.manifest);
      case "app/command": {
        const own = this.requireId();
        return this.client.request("app/command", { windowId: own, command: params.command, params: params.params, callerWindowId: own } as Json);
      }
      case "ui/initialize":
        this.mcpHasTools = params?.appCapabilities?.tools !== undefined;
        return {
          protocolVersion: MCP_APPS_PROTOCOL_VERSION,
          hostInfo: HOST_INFO,
          hostCapabilities: { serverTools: {}, message: { text: {} }, logging: {} },
          hostContext: {
            theme: currentTheme(),
            displayMode: "inline",
            availableDisplayModes: ["inline"],
            platform: "web",
            locale: navigator.language,
            timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
            containerDimensions: { width: this.frame.clientWidth, height: this.frame.clientHeight },
          },
        };
      case "tools/call":
        return this.viewToolCall(params.name, params.arguments ?? {});
      case "ui/message": {
        const text = messageText(params);
        this.client.notify("app/interaction", { windowId: this.requireId(), content: text });
        return {};
      }
      case "ui/request-display-mode":
        // An app window is always inline (the desktop's window); the mode granted is answered.
        return { mode: "inline" };
      case "ping":
        return {};
      default:
        throw new RpcError(-32601, `the desktop does not support ${method}`);
    }
  }

  private frameNotification(method: string, params: Json): void {
    switch (method) {
      case "app/emit":
        if (this.windowId) this.client.notify("app/emit", { windowId: this.windowId, runId: params.runId, type: params.type, payload: params.payload });
        break;
      case "app/interaction":
        if (this.windowId) this.client.notify("app/interaction", { windowId: this.windowId, content: String(params.content) });
        break;
      case "app/unloading":
        this.setFrameReady(false);
        this.watchStart();
        break;
      case "ui/notifications/initialized":
        this.mcpInitialized = true;
        void this.registerMcpView();
        break;
      case "notifications/message":
        this.events.log(`${this.app.name}: ${JSON.stringify(params.data ?? params)}`);
        break;
      default:
        // ui/notifications/size-changed and others: the window's size is the desktop's.
        break;
    }
  }

  private requireId(): string {
    if (!this.windowId) throw new AppError("INVALID_REQUEST", "the window is not registered yet");
    return this.windowId;
  }

  /** An MCP Apps view: its tools (`tools/list`) become the window's commands. */
  private async registerMcpView(): Promise<void> {
    try {
      const listed = this.mcpHasTools ? await this.requestFrame("tools/list", {}) : { tools: [] };
      const commands: Record<string, Json> = {};
      for (const tool of listed.tools ?? []) {
        commands[tool.name] = { description: tool.description ?? tool.title ?? tool.name, params: tool.inputSchema };
      }
      this.mcpTools = Object.keys(commands);
      await this.register({ description: this.app.description ?? undefined, state: {}, commands });
    } catch (err) {
      this.events.log(`${this.app.name}: ${String(err)}`);
    }
  }

  /** `tools/call` from the iframe (either dialect): its own tools run through the server (logged,
   * replayed); `app_list`, `app_query` and `app_command` reach other windows as this app, which
   * needs `permissions.callApps` and, for commands, the user's approval. A refusal is an
   * `isError` result the app can read. */
  private async viewToolCall(name: string, args: Json): Promise<Json> {
    const callerWindowId = this.requireId();
    let result: Json;
    try {
      if (this.mcpTools.includes(name)) {
        const call = { windowId: callerWindowId, command: name, params: args, callerWindowId };
        result = (await this.client.request("app/command", call as Json)).result;
      } else if (name === "app_list") {
        result = await this.client.request("app/list", { callerWindowId } as Json);
      } else if (name === "app_query") {
        result = (await this.client.request("app/query", { windowId: args.windowId, stateKey: args.stateKey, callerWindowId } as Json)).data;
      } else if (name === "app_command") {
        const call = { windowId: args.windowId, command: args.command, params: args.params, callerWindowId };
        result = (await this.client.request("app/command", call as Json)).result;
      } else {
        return { content: [{ type: "text", text: `unknown tool ${name}` }], isError: true };
      }
    } catch (err: any) {
      const code = err?.appCode ?? err?.data?.code ?? "INTERNAL_ERROR";
      return { content: [{ type: "text", text: `${code}: ${String(err?.message ?? err)}` }], isError: true };
    }
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  }

  /** Registers (or registers again) the window on the page's connection; the server replays its
   * log. The app's id, name and permissions are the folder's (`app.json`), never the iframe's. */
  private async register(declared: Json): Promise<Json> {
    this.declared = declared;
    const { permissions: _ignored, ...own } = declared ?? {};
    const manifest = { ...own, appId: this.app.id, name: this.app.name, permissions: this.app.permissions ?? undefined };
    this.setFrameReady(false);
    const names = Object.keys(manifest.commands ?? {});
    const commands: Record<string, (params: Json, ctx: { replay: boolean }) => Promise<unknown>> = {};
    for (const name of names) commands[name] = (params, ctx) => this.runCommand(name, params, ctx.replay);
    const handlers = {
      query: async (stateKey: string) => (await this.untilReady(() => this.requestFrame("ext/app/query", { windowId: this.windowId, stateKey }))).data,
      commands,
      // An MCP Apps view is not told to reset (no such message in the spec): after a reconnect
      // its iframe is loaded again instead (`attach`), and the replay rebuilds a fresh document.
      reset: this.app.dialect === "mcp-apps" ? undefined : () => this.notifyFrame("app/reset", {}),
    };
    for (let attempt = 1; ; attempt++) {
      try {
        const registration = await this.client.registerApp(manifest, handlers, { windowId: this.windowId });
        this.windowId = registration.windowId;
        this.idLabel.textContent = registration.windowId;
        this.element.dataset.windowId = registration.windowId;
        this.setFrameReady(true);
        clearTimeout(this.startTimer);
        this.showFailure(undefined);
        this.events.changed();
        return { windowId: registration.windowId, replayed: registration.replayed, failed: registration.failed };
      } catch (err) {
        // The server has not yet seen the previous page's connection close: try again.
        if (!(err instanceof RpcError && err.appCode === "PERMISSION_DENIED") || attempt >= REGISTER_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  }

  /** A command from the server: replayed ones go at once (they rebuild the reloading app); others wait for the app. */
  private async runCommand(name: string, params: Json, replay: boolean): Promise<unknown> {
    const send = async () => {
      if (this.app.dialect === "mcp-apps") {
        // The view's own tool: its answer is the result. No tool-input / tool-result around it
        // (the spec sends those once, for the tool call that created a view; no call created
        // an app window).
        const result = await this.requestFrame("tools/call", { name, arguments: params });
        if (result?.isError) throw new AppError("INVALID_REQUEST", JSON.stringify(result.content ?? result));
        return result?.structuredContent ?? result;
      }
      return (await this.requestFrame("ext/app/command", { windowId: this.windowId, command: name, params, replay })).result;
    };
    return replay ? send() : this.untilReady(send);
  }

  private async untilReady<T>(run: () => Promise<T>): Promise<T> {
    if (!this.frameReady) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new AppError("TIMEOUT", "the app is reloading")), FRAME_WAIT_MS);
        this.readyWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return run();
  }

  private setFrameReady(ready: boolean): void {
    this.frameReady = ready;
    this.element.classList.toggle("reloading", !ready);
    if (ready) for (const waiter of this.readyWaiters.splice(0)) waiter();
  }

  /** The page has a new connection (after a drop): the window is registered on it again, under
   * its id, and the server's replay of its log brings the app back to its state. */
  attach(client: AppServerClient): void {
    this.client = client;
    if (this.declared === undefined) return;
    // An MCP Apps view keeps its state in its document: it is loaded again (then registers,
    // and the replay rebuilds it) rather than replayed into twice.
    if (this.app.dialect === "mcp-apps") return this.reload();
    this.register(this.declared).catch((err) => this.events.log(`${this.app.name}: registering again failed: ${String(err?.message ?? err)}`));
  }

  /** The commands the app declared at its registration (undefined before it registered). */
  commands(): Record<string, { params?: unknown }> | undefined {
    if (!this.windowId || this.declared === undefined) return undefined;
    const commands = this.declared?.commands;
    return commands && typeof commands === "object" ? commands : {};
  }

  /** The window's latest app event (`app/event`). */
  showEvent(text: string): void {
    (this.element.querySelector(".event") as HTMLElement).textContent = text;
  }

  reload(): void {
    this.mcpInitialized = false;
    this.setFrameReady(false);
    this.watchStart();
    this.mcpTools = [];
    this.frame.src = this.app.entry;
  }

  async close(): Promise<void> {
    clearTimeout(this.startTimer);
    document.removeEventListener("themechange", this.onTheme);
    // An MCP Apps view is told it goes (`ui/resource-teardown`), its answer awaited at most 3 s.
    if (this.mcpInitialized) {
      const bound = new Promise((resolve) => setTimeout(resolve, TEARDOWN_MS));
      await Promise.race([this.requestFrame("ui/resource-teardown", { reason: "the user closed the window" }).catch(() => {}), bound]);
    }
    this.element.remove();
    if (this.windowId) await this.client.unregisterApp(this.windowId).catch(() => {});
    this.events.changed();
  }

  saved(): SavedWindow {
    return { slot: this.slot, appId: this.app.id, windowId: this.windowId };
  }
}

function button(text: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

/** Routes window messages to their host: only from one of our iframes, with an expected origin. */
export function listen(hosts: () => Array<{ frame: HTMLIFrameElement; receive(m: unknown): void }>, ignored: (why: string) => void): void {
  window.addEventListener("message", (event: MessageEvent) => {
    // The sender's window is gone (a frame reloaded or closed, its last words such as
    // `app/unloading`): nobody to answer, and nothing foreign about it.
    if (event.source === null) return;
    const host = hosts().find((h) => h.frame.contentWindow !== null && h.frame.contentWindow === event.source);
    if (!host) return ignored(`a message from an unknown source (origin ${event.origin})`);
    // A sandboxed iframe's origin is "null"; an app page served without the sandbox has ours.
    if (event.origin !== "null" && event.origin !== location.origin) return ignored(`a message from origin ${event.origin}`);
    host.receive(event.data);
  });
}
