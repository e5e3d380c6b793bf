// MCP Apps views (SEP-1865) in the desktop: when an agent's call of an MCP tool that declares a
// view is offered (`mcp/view/offered`), a view window opens for that call. Its HTML is read with
// `mcp/resources/read` and written into the sandbox proxy page (`/assets/view-frame.html`, a
// sandboxed iframe: an opaque origin, under the MCP Apps default Content-Security-Policy). The
// window speaks the host's side of the `ui/*` dialect: `ui/initialize` (host context: the page's
// theme, display modes, the container's size, `toolInfo`), the call's `tool-input` once and its
// `tool-result`, `host-context-changed` when the theme or display mode changes,
// `ui/request-display-mode` (inline, fullscreen), `ui/open-link` and `ui/message` (the user's
// message in the view's thread) once the user confirms, `ui/update-model-context` (kept by the
// server for the thread's next turns: `mcp/view/context`), the permissions the view declares
// (`_meta.ui.permissions`) as its iframe's `allow`, the
// view's `tools/call` of its own server's tools relayed as `mcp/view/call` (gated and logged
// by the server; its pending approvals withdrawn when it closes), `resources/read` and
// `resources/list` relayed to its own server only (`mcp/resources/read`, `mcp/resources/list`), and `ui/resource-teardown` awaited (bounded) before the window closes.
// A view reopened after a page reload is handed its log (the server's `mcp-view:<callId>` window
// log: the state-changing calls it made) in the host context, `appserver/viewLog`.
// Its `localStorage` and `sessionStorage` are shimmed by the proxy page (view-frame.html) from a
// copy handed with the HTML; their changes come back here (`appserver/storage/changed`) and are
// kept per view instance — this page's thread and call, never what the view names —
// `localStorage` by the server (`mcp/view/storage/load|save`, bounded), `sessionStorage` in this
// tab. `hostContext.toolInfo.tool` is the tool as its server lists it (`mcp/view/tool`); a
// declared outside origin is shown in the window; the call that opened the view is one compact
// line in the conversation (`renderViewResult`).

import { RpcError, type AppServerClient } from "../../typescript/src/index.js";
import { HOST_INFO, MCP_APPS_PROTOCOL_VERSION, TEARDOWN_MS, messageText } from "./mcp-ui.js";
import { contentItems } from "./content.js";
import { currentTheme } from "./theme.js";

type Json = any;

/** `mcp/view/offered`'s params. */
export interface ViewOffer {
  threadId: string;
  turnId: string;
  callId: string;
  server: string;
  tool: string;
  resourceUri: string;
  arguments: Json;
  result: Json;
}

export type DisplayMode = "inline" | "fullscreen" | "pip";

export interface ViewEvents {
  /** Sets the window's display mode; answers the mode granted. */
  displayMode(view: ViewHost, mode: DisplayMode): DisplayMode;
  /** Sends `text` into the thread as the user's message (the outbox). */
  message(threadId: string, text: string): void;
  /** The user moves the view between the conversation and the desk. */
  togglePlacement(view: ViewHost): void;
  /** The view asks the user something in its window; what it returns is called once the
   * question is answered or the view goes (the tab's badge then clears). */
  asking(view: ViewHost): () => void;
  /** The window is closing: the view's pending calls are withdrawn. */
  closing(view: ViewHost): void;
  /** The window has closed. */
  closed(view: ViewHost): void;
  log(text: string): void;
}

const MODES: DisplayMode[] = ["inline", "fullscreen", "pip"];
/** The most characters of keys and values a view's storage holds (the server's bound for
 * `localStorage`; this tab's for `sessionStorage`). */
const STORAGE_LIMIT = 256 * 1024;
/** Where this tab keeps each view's `sessionStorage` (then `<threadId>/<callId>`). */
export const VIEW_SESSION_PREFIX = "appserver.desktop.viewSession.";
/** Log entries handed to a reopened view, at most. */
const MAX_LOG = 1000;

/** The permissions a view may declare (`_meta.ui.permissions`) and their Permissions Policy features. */
const PERMISSIONS: Record<string, string> = {
  camera: "camera",
  microphone: "microphone",
  geolocation: "geolocation",
  clipboardWrite: "clipboard-write",
};

/** The known permissions a view declared (others are ignored), as the spec's object. */
export function grantedPermissions(declared: Json): Record<string, object> {
  const granted: Record<string, object> = {};
  if (!declared || typeof declared !== "object" || Array.isArray(declared)) return granted;
  for (const name of Object.keys(PERMISSIONS)) if (name in declared && declared[name] !== false && declared[name] !== null) granted[name] = {};
  return granted;
}

/** The origins a view's resource declares it reaches (`_meta.ui.csp`), as one sentence for the
 * user; undefined when it declares none. */
export function declaredOrigins(csp: Json): string | undefined {
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String).filter((s) => s.trim()) : []);
  const parts: string[] = [];
  const connect = list(csp?.connectDomains);
  const resource = list(csp?.resourceDomains);
  const frame = list(csp?.frameDomains);
  if (connect.length) parts.push(`connects to ${connect.join(", ")}`);
  if (resource.length) parts.push(`loads scripts, styles and media from ${resource.join(", ")}`);
  if (frame.length) parts.push(`embeds ${frame.join(", ")}`);
  return parts.length ? `This view reaches outside this computer: it ${parts.join("; ")}.` : undefined;
}

export class ViewHost {
  readonly element: HTMLElement;
  readonly frame: HTMLIFrameElement;
  readonly slot: string;
  readonly app: { id: string; name: string };
  private mode: DisplayMode = "inline";
  private initialized = false;
  private sentInput = false;
  private html: string | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, (m: Json) => void>();
  private readonly onTheme = () => this.contextChanged({ theme: currentTheme() });
  /** Escape leaves fullscreen (the page's keys; the view's own keys stay its). */
  private readonly onKey = (e: KeyboardEvent) => {
    if (e.key !== "Escape" || !this.element.classList.contains("fullscreen")) return;
    this.element.classList.remove("fullscreen");
    if (this.element.classList.contains("maximized")) this.element.querySelector<HTMLButtonElement>("header button.maximize")?.click();
  };
  private log: Json[] | undefined;
  /** The modes the view declared (`appCapabilities.availableDisplayModes`); none declared: all. */
  private viewModes: string[] | undefined;
  private lastSize = "";
  private asking = false;
  /** Clears the "waiting for you" badge of the pane this view's question is in. */
  private attended?: () => void;
  /** The permissions the view declared and its iframe was allowed (`_meta.ui.permissions`). */
  private granted: Record<string, object> = {};
  private declaredCsp: Json = {};
  /** The view's storage as the proxy page gets it with the HTML (`appserver/storage`). */
  private storage: Json = undefined;
  private toolDefinition: Json;
  /** `localStorage` changes not yet sent to the server (coalesced within a task), and the saves
   * in order. */
  private pendingLocal: { clear: boolean; changes: Map<string, string | null> } | undefined;
  private saving: Promise<void> = Promise.resolve();
  /** This tab's `sessionStorage` of the view (kept in the page's own sessionStorage). */
  private sessionItems = new Map<string, string>();

  constructor(
    private readonly client: () => AppServerClient,
    readonly offer: ViewOffer,
    /** Reopened after a reload: the view is handed its log. */
    private readonly restored: boolean,
    private readonly events: ViewEvents,
  ) {
    this.slot = `view_${offer.callId}`;
    this.toolDefinition = { name: offer.tool, inputSchema: { type: "object" } };
    this.app = { id: `mcp:${offer.server}`, name: `${offer.tool} (${offer.server})` };
    this.element = document.createElement("article");
    this.element.className = "window view";
    this.element.dataset.app = this.app.id;
    this.element.dataset.view = offer.callId;
    this.element.dataset.displayMode = this.mode;
    const bar = document.createElement("header");
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = `◇ ${this.app.name}`;
    const id = document.createElement("code");
    id.className = "window-id";
    id.textContent = `mcp-view:${offer.callId}`;
    const close = document.createElement("button");
    close.type = "button";
    close.className = "close";
    close.textContent = "✕";
    close.title = "Close the view (it is told first)";
    close.addEventListener("click", () => void this.close());
    const placement = document.createElement("button");
    placement.type = "button";
    placement.className = "placement";
    placement.addEventListener("click", () => this.events.togglePlacement(this));
    bar.append(title, id, placement, close);
    const notice = document.createElement("div");
    notice.className = "view-notice";
    notice.setAttribute("role", "alert");
    notice.hidden = true;
    this.frame = document.createElement("iframe");
    // Scripts only: an opaque origin, no reach into the page, its cookie or the server.
    this.frame.setAttribute("sandbox", "allow-scripts");
    this.frame.title = this.app.name;
    this.element.append(bar, notice, this.frame);
    void this.load();
    document.addEventListener("themechange", this.onTheme);
    document.addEventListener("keydown", this.onKey);
    this.placed(false);
    // Maximized or restored by the user (the title bar), or fullscreen left with Escape: the
    // view is told its mode too.
    new MutationObserver(() => {
      const c = this.element.classList;
      // Restored from the title bar: fullscreen ends with the maximized window.
      if (c.contains("fullscreen") && !c.contains("maximized") && !c.contains("inline-view")) c.remove("fullscreen");
      this.setMode(this.classMode());
    }).observe(this.element, {
      attributes: true,
      attributeFilter: ["class"],
    });
    // Resized: the view is told its container's new size.
    new ResizeObserver(() => {
      const size = this.size();
      const key = `${size.width}x${size.height}`;
      if (key === this.lastSize) return;
      this.lastSize = key;
      this.contextChanged({ containerDimensions: size });
    }).observe(this.frame);
  }

  /** The mode the window's classes show. */
  private classMode(): DisplayMode {
    const c = this.element.classList;
    return c.contains("fullscreen") || c.contains("maximized") ? "fullscreen" : c.contains("pip") ? "pip" : "inline";
  }

  /** The window is now in the conversation (`inline`) or on the desk: its toggle says where it goes. */
  placed(inline: boolean): void {
    const b = this.element.querySelector<HTMLButtonElement>("header button.placement")!;
    b.textContent = inline ? "⇱ Desk" : "⇲ Inline";
    b.title = inline ? "Show this view in a window on the desk (remembered for views)" : "Show this view in the conversation, under its call (remembered for views)";
    b.setAttribute("aria-label", b.title);
  }

  private size(): { width: number; height: number } {
    return { width: this.frame.clientWidth, height: this.frame.clientHeight };
  }

  /** A message from this view's iframe (source and origin already checked). */
  receive(m: Json): void {
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (typeof m.method === "string" && m.id !== undefined && m.id !== null) {
      this.request(m.method, m.params ?? {}).then(
        (result) => this.post({ jsonrpc: "2.0", id: m.id, result }),
        (err: any) => {
          const code = err instanceof RpcError ? err.code : -32000;
          this.post({ jsonrpc: "2.0", id: m.id, error: { code, message: String(err?.message ?? err) } });
        },
      );
    } else if (typeof m.method === "string") {
      this.notification(m.method, m.params ?? {});
    } else if (typeof m.id === "number") {
      const answer = this.pending.get(m.id);
      this.pending.delete(m.id);
      answer?.(m);
    }
  }

  private post(message: Json): void {
    this.frame.contentWindow?.postMessage(message, "*");
  }

  private notify(method: string, params: Json): void {
    this.post({ jsonrpc: "2.0", method, params });
  }

  /** A request to the view; its answer, or undefined when none came within `ms`. */
  private ask(method: string, params: Json, ms: number): Promise<Json | undefined> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, ms);
      this.pending.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      this.post({ jsonrpc: "2.0", id, method, params });
    });
  }

  private notice(text: string | undefined, ...controls: HTMLElement[]): void {
    const box = this.element.querySelector<HTMLElement>(".view-notice")!;
    box.hidden = text === undefined;
    box.replaceChildren(...(text === undefined ? [] : [text, " ", ...controls]));
  }

  /** The view's HTML is read from its server; the proxy page is loaded under the policy its
   * `_meta.ui.csp` declares, and sent the HTML once it says it is ready. */
  private async load(): Promise<void> {
    try {
      const read = await this.client().request("mcp/resources/read", { server: this.offer.server, uri: this.offer.resourceUri } as Json);
      const content = (read as Json).contents?.find((c: Json) => typeof c?.text === "string" || typeof c?.blob === "string");
      if (!content) throw new Error(`${this.offer.resourceUri} has no HTML`);
      this.html = typeof content.text === "string" ? content.text : new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0)));
      if (this.restored) this.log = await this.readLog();
      this.storage = await this.loadStorage();
      this.toolDefinition = await this.loadTool();
      const csp = content._meta?.ui?.csp ?? {};
      // Only what the view declares (`_meta.ui.permissions`), as the iframe's `allow`.
      this.granted = grantedPermissions(content._meta?.ui?.permissions);
      const allow = Object.keys(this.granted).map((name) => PERMISSIONS[name]).join("; ");
      if (allow) this.frame.setAttribute("allow", allow);
      this.declaredCsp = csp;
      // Said to the user, in the window (not only in the console): what the view may reach.
      const outside = declaredOrigins(csp);
      if (outside) {
        const warning = document.createElement("div");
        warning.className = "view-warning";
        warning.setAttribute("role", "note");
        warning.textContent = `⚠ ${outside}`;
        this.element.querySelector(".view-notice")!.after(warning);
      }
      const lists: Array<[string, unknown]> = [["connect", csp.connectDomains], ["resource", csp.resourceDomains], ["frame", csp.frameDomains], ["base", csp.baseUriDomains]];
      const query = lists
        .filter(([, v]) => Array.isArray(v) && v.length)
        .map(([k, v]) => `${k}=${encodeURIComponent((v as unknown[]).map(String).join(" "))}`)
        .join("&");
      // The audit trail the spec asks for: what the view declared (the server keeps only origins).
      this.events.log(`view ${this.offer.callId} (${this.offer.resourceUri}): CSP ${JSON.stringify(csp)}`);
      this.frame.src = `/assets/view-frame.html${query ? `?${query}` : ""}`;
    } catch (err: any) {
      this.notice(`The view could not be loaded: ${String(err?.message ?? err)}`);
    }
  }

  /** The tool that opened the view as its server lists it (`name`, `description`,
   * `inputSchema`…), for `hostContext.toolInfo.tool`; its name alone when the server is gone. */
  private async loadTool(): Promise<Json> {
    try {
      const answer = (await this.client().request("mcp/view/tool", { server: this.offer.server, tool: this.offer.tool } as Json)) as Json;
      if (answer?.tool && typeof answer.tool === "object") return answer.tool;
    } catch (err: any) {
      this.events.log(`view ${this.offer.callId}: the definition of ${this.offer.tool} could not be read: ${String(err?.message ?? err)}`);
    }
    return { name: this.offer.tool, inputSchema: { type: "object" } };
  }

  /** Where this tab keeps the view's `sessionStorage`. */
  private sessionKey(): string {
    return `${VIEW_SESSION_PREFIX}${this.offer.threadId}/${this.offer.callId}`;
  }

  /** The view's storage for the proxy page: its `localStorage` from the server (per view
   * instance: this thread and call, never what the view says), its `sessionStorage` from this tab. */
  private async loadStorage(): Promise<Json> {
    let local: Json = {};
    let limit = STORAGE_LIMIT;
    try {
      const loaded = (await this.client().request("mcp/view/storage/load", { threadId: this.offer.threadId, callId: this.offer.callId } as Json)) as Json;
      local = loaded.items ?? {};
      if (typeof loaded.limit === "number") limit = loaded.limit;
    } catch (err: any) {
      this.events.log(`view ${this.offer.callId}: its storage could not be loaded: ${String(err?.message ?? err)}`);
    }
    try {
      const saved = JSON.parse(sessionStorage.getItem(this.sessionKey()) ?? "{}");
      for (const [k, v] of Object.entries(saved ?? {})) if (typeof v === "string") this.sessionItems.set(k, v);
    } catch {
      this.sessionItems.clear();
    }
    return { local, session: Object.fromEntries(this.sessionItems), limit };
  }

  /** A change the proxy page reports (`appserver/storage/changed`): `localStorage` changes are
   * saved on the server in order (the server refuses what passes the bound, whatever the view
   * sends), `sessionStorage` ones in this tab, under the same bound. */
  private storageChanged(params: Json): void {
    const clear = params?.clear === true;
    const changes: Array<[string, string | null]> = (Array.isArray(params?.changes) ? params.changes : [])
      .filter((c: Json) => typeof c?.key === "string" && (typeof c.value === "string" || c.value === null))
      .map((c: Json) => [c.key, c.value]);
    if (params?.area === "session") return this.sessionChanged(clear, changes);
    if (params?.area !== "local") return;
    if (!this.pendingLocal) {
      this.pendingLocal = { clear: false, changes: new Map() };
      setTimeout(() => this.flushLocal(), 0);
    }
    if (clear) {
      this.pendingLocal.clear = true;
      this.pendingLocal.changes.clear();
    }
    for (const [k, v] of changes) this.pendingLocal.changes.set(k, v);
  }

  private flushLocal(): void {
    const batch = this.pendingLocal;
    this.pendingLocal = undefined;
    if (!batch) return;
    const params = {
      threadId: this.offer.threadId,
      callId: this.offer.callId,
      clear: batch.clear,
      changes: [...batch.changes].map(([key, value]) => ({ key, value })),
    };
    this.saving = this.saving.then(() =>
      this.client()
        .request("mcp/view/storage/save", params as Json)
        .then(
          () => {},
          (err: any) => {
            const why = String(err?.message ?? err);
            this.events.log(`view ${this.offer.callId}: its storage was not saved: ${why}`);
            // Said in the window, unless a question is waiting there (it keeps its place).
            if (!this.asking) this.notice(`The view's storage was not saved: ${why}`);
          },
        ),
    );
  }

  private sessionChanged(clear: boolean, changes: Array<[string, string | null]>): void {
    const next = new Map(clear ? [] : this.sessionItems);
    for (const [k, v] of changes) v === null ? next.delete(k) : next.set(k, v);
    let used = 0;
    for (const [k, v] of next) used += [...k].length + [...v].length;
    if (used > STORAGE_LIMIT) {
      this.events.log(`view ${this.offer.callId}: its sessionStorage would pass ${STORAGE_LIMIT} characters; not kept`);
      return;
    }
    this.sessionItems = next;
    try {
      sessionStorage.setItem(this.sessionKey(), JSON.stringify(Object.fromEntries(next)));
    } catch {
      // The page's own quota: the view's session storage lasts as long as the view.
    }
  }

  /** The view's log: its calls that changed state, oldest first (`app/log/read`, paged). */
  private async readLog(): Promise<Json[]> {
    const entries: Json[] = [];
    let afterSeq: number | undefined;
    while (entries.length < MAX_LOG) {
      const page = (await this.client().request("app/log/read", { windowId: `mcp-view:${this.offer.callId}`, afterSeq, limit: 1000 } as Json)) as Json;
      for (const e of page.entries ?? []) entries.push({ seq: e.seq, tool: e.command, arguments: e.params, result: e.result });
      if (page.nextSeq === undefined || page.nextSeq === null || !(page.entries ?? []).length) break;
      afterSeq = page.nextSeq;
    }
    return entries.slice(0, MAX_LOG);
  }

  private hostContext(): Json {
    const context: Json = {
      theme: currentTheme(),
      displayMode: this.mode,
      availableDisplayModes: MODES,
      platform: "web",
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      containerDimensions: this.size(),
      toolInfo: { id: this.offer.callId, tool: this.toolDefinition },
    };
    if (this.log) context["appserver/viewLog"] = this.log;
    return context;
  }

  private async request(method: string, params: Json): Promise<Json> {
    switch (method) {
      case "ui/initialize": {
        const declared = params?.appCapabilities?.availableDisplayModes;
        this.viewModes = Array.isArray(declared) ? declared.map(String) : undefined;
        this.lastSize = `${this.size().width}x${this.size().height}`;
        return {
          protocolVersion: MCP_APPS_PROTOCOL_VERSION,
          hostInfo: HOST_INFO,
          hostCapabilities: {
            openLinks: {},
            serverTools: {},
            serverResources: {},
            logging: {},
            message: { text: {} },
            updateModelContext: { text: {}, structuredContent: {} },
            sandbox: { permissions: this.granted, csp: this.declaredCsp },
          },
          hostContext: this.hostContext(),
        };
      }
      case "tools/call":
        return this.callTool(String(params.name ?? ""), params.arguments ?? {});
      case "resources/read":
        // Any resource of its own server, and only of that one (the server bounds the size).
        return this.client().request("mcp/resources/read", { server: this.offer.server, uri: String(params?.uri ?? "") } as Json);
      case "resources/list": {
        const cursor = typeof params?.cursor === "string" ? params.cursor : undefined;
        return this.client().request("mcp/resources/list", { server: this.offer.server, cursor } as Json);
      }
      case "ui/request-display-mode": {
        const wanted = this.allowed(params.mode) ? (params.mode as DisplayMode) : this.mode;
        this.setMode(this.events.displayMode(this, wanted));
        return { mode: this.mode };
      }
      case "ui/open-link":
        return this.openLink(String(params.url ?? ""));
      case "ui/message":
        return this.message(params);
      case "ui/update-model-context":
        // Kept by the server for the thread's next turns (a later update replaces it).
        await this.client().request("mcp/view/context", {
          threadId: this.offer.threadId,
          callId: this.offer.callId,
          content: Array.isArray(params.content) ? params.content : undefined,
          structuredContent: params.structuredContent,
        } as Json);
        return {};
      case "ping":
        return {};
      default:
        throw new RpcError(-32601, `the desktop does not support ${method}`);
    }
  }

  private notification(method: string, params: Json): void {
    switch (method) {
      case "ui/notifications/sandbox-proxy-ready":
        // The HTML once: a second announcement (a proxy that reloaded itself) gets nothing.
        if (this.html !== undefined) this.notify("ui/notifications/sandbox-resource-ready", { html: this.html, "appserver/storage": this.storage });
        this.html = undefined;
        break;
      case "ui/notifications/initialized":
        this.initialized = true;
        // The call that created the view: its input once, then its result.
        if (!this.sentInput) {
          this.sentInput = true;
          this.notify("ui/notifications/tool-input", { arguments: this.offer.arguments ?? {} });
        }
        this.notify("ui/notifications/tool-result", this.offer.result ?? {});
        break;
      case "appserver/storage/changed":
        this.storageChanged(params);
        break;
      case "notifications/message":
        this.events.log(`view ${this.offer.callId}: ${JSON.stringify(params.data ?? params)}`);
        break;
      default:
        // ui/notifications/size-changed and others: the window's size is the desktop's.
        break;
    }
  }

  /** A mode the desktop offers and the view declared (when it declared any). */
  private allowed(mode: unknown): boolean {
    return MODES.includes(mode as DisplayMode) && (this.viewModes === undefined || this.viewModes.includes(mode as string));
  }

  /** The display mode the window now has; the view is told when it changed (never switched to a
   * mode it did not declare: a maximized window is then still `inline` to it, only larger). */
  setMode(mode: DisplayMode): void {
    if (!this.allowed(mode)) mode = "inline";
    if (mode === this.mode) return;
    this.mode = mode;
    this.element.dataset.displayMode = mode;
    this.contextChanged({ displayMode: mode });
  }

  private contextChanged(change: Json): void {
    if (this.initialized) this.notify("ui/notifications/host-context-changed", change);
  }

  /** The view's `tools/call` of its own server's tools, through the server (approval, log). A
   * tool not visible to apps is rejected as a JSON-RPC error (-32602, as MCP answers a tool it
   * does not have: the spec's guard, conformance check `visibility/app-tool-call-guard`); any
   * other refusal or failure is an `isError` result the view can read. */
  private async callTool(name: string, args: Json): Promise<Json> {
    const call = { callId: this.offer.callId, server: this.offer.server, tool: name, arguments: args };
    let answer: Json;
    try {
      answer = (await this.client().request("mcp/view/call", call as Json)) as Json;
    } catch (err: any) {
      return { content: [{ type: "text", text: String(err?.message ?? err) }], isError: true };
    }
    if (answer.status === "done") return answer.result;
    if (hiddenFromViews(answer)) throw new RpcError(-32602, `Tool ${name} is not visible to apps: ${answer.error}`);
    return { content: [{ type: "text", text: `${answer.status}: ${answer.error ?? ""}` }], isError: true };
  }

  /** `ui/message`: its text, as the user's message in the view's thread, once the user says so
   * in the window; otherwise the error -32000. */
  private message(params: Json): Promise<Json> {
    const text = messageText(params);
    if (params?.role !== undefined && params.role !== "user") return Promise.reject(new RpcError(-32000, "Invalid message format: only the user's role"));
    if (!text) return Promise.reject(new RpcError(-32000, "Invalid message format: no text"));
    return this.confirm(`The view asks to send to the thread: “${text.length > 500 ? text.slice(0, 500) + "…" : text}”`, "Send", "Don't send", "send-message").then((yes) => {
      if (!yes) throw new RpcError(-32000, "Message sending denied by user");
      this.events.message(this.offer.threadId, text);
      return {};
    });
  }

  /** Asks the user in the window (one question at a time; a second is refused at once). */
  private confirm(question: string, yesText: string, noText: string, kind: string): Promise<boolean> {
    if (this.asking) return Promise.reject(new RpcError(-32000, "Denied: another question is waiting for the user"));
    this.asking = true;
    return new Promise((resolve) => {
      const answer = (yes: boolean) => {
        this.asking = false;
        this.attended?.();
        this.attended = undefined;
        this.notice(undefined);
        resolve(yes);
      };
      const yes = document.createElement("button");
      yes.type = "button";
      yes.className = `confirm ${kind}`;
      yes.textContent = yesText;
      yes.addEventListener("click", () => answer(true));
      const no = document.createElement("button");
      no.type = "button";
      no.className = `refuse refuse-${kind}`;
      no.textContent = noText;
      no.addEventListener("click", () => answer(false));
      this.notice(question, yes, no);
      this.attended = this.events.asking(this);
    });
  }

  /** `ui/open-link`: only http(s), and only once the user says so in the window; otherwise the
   * error -32000 ("Invalid URL", "Link opening denied by user"). One question at a time. */
  private openLink(url: string): Promise<Json> {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {}
    if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
      return Promise.reject(new RpcError(-32000, "Invalid URL"));
    }
    return this.confirm(`The view asks to open ${parsed.href}`, "Open", "Don't open", "open-link").then((open) => {
      if (!open) throw new RpcError(-32000, "Link opening denied by user");
      window.open(parsed!.href, "_blank", "noopener,noreferrer");
      return {};
    });
  }

  /** Tells the view it is going (`ui/resource-teardown`, its answer awaited at most 3 s), then closes. */
  async close(): Promise<void> {
    this.attended?.();
    this.attended = undefined;
    this.events.closing(this);
    if (this.initialized) await this.ask("ui/resource-teardown", { reason: "the user closed the view" }, TEARDOWN_MS);
    document.removeEventListener("themechange", this.onTheme);
    document.removeEventListener("keydown", this.onKey);
    this.element.remove();
    this.events.closed(this);
  }
}

/** Whether `mcp/view/call` refused the tool for its visibility (its `_meta.ui.visibility` leaves
 * out "app": the server's `declined` answer names that field), not the user or the policy. */
export function hiddenFromViews(answer: Json): boolean {
  return answer?.status === "declined" && typeof answer.error === "string" && answer.error.includes("_meta.ui.visibility");
}

/** The view of an agent's `mcp_call` as the thread keeps it (its `toolCall` and `toolResult`
 * items: the result names the view), so a closed view, or one on another device, can be opened
 * again; undefined when the call has no view or its result was cut. */
export function offerOf(threadId: string, turnId: string, call: Json, result: Json): ViewOffer | undefined {
  if (call?.toolName !== "mcp_call" || !result?.success || typeof result.result !== "string") return undefined;
  let answer: Json;
  try {
    answer = JSON.parse(result.result);
  } catch {
    return undefined;
  }
  const uri = answer?.view?.resourceUri;
  if (typeof uri !== "string" || typeof answer.server !== "string" || typeof answer.tool !== "string") return undefined;
  // The result's blocks as the item keeps them (its images and audio too), else its text.
  const blocks = (Array.isArray(result.contentItems) ? result.contentItems : []).map(contentBlock).filter((b: Json) => b);
  const toolResult: Json = { content: blocks.length ? blocks : [{ type: "text", text: String(answer.content ?? "") }] };
  if (answer.structuredContent !== undefined) toolResult.structuredContent = answer.structuredContent;
  if (answer._meta && typeof answer._meta === "object") toolResult._meta = answer._meta;
  return { threadId, turnId, callId: String(result.callId), server: answer.server, tool: answer.tool, resourceUri: uri, arguments: call.arguments?.arguments ?? {}, result: toolResult };
}

/** A call that opened a view, in the conversation: one line — the tool, its server, the
 * status — with the raw result (and its images) folded under it, the **Open view** button, and
 * the slot where the view lives when it is shown inline. */
export function renderViewResult(node: HTMLElement, p: Json, offer: ViewOffer, open: () => void): void {
  const keep = node.querySelector<HTMLElement>(`:scope > .view-slot`);
  node.classList.add("view-result");
  node.classList.toggle("failed", !p.success);
  const line = document.createElement("span");
  line.className = "view-line";
  line.textContent = `◇ ${offer.tool} · ${offer.server} · ${p.success ? "✔ done" : "✘ failed"}`;
  const raw = document.createElement("details");
  raw.className = "raw-result";
  const summary = document.createElement("summary");
  summary.textContent = "Raw result";
  const pre = document.createElement("pre");
  pre.textContent = String(p.result ?? "");
  raw.append(summary, pre);
  const media = contentItems(p.contentItems);
  if (media) raw.append(media);
  // The slot stays where it is (moving it would reload an inline view's iframe).
  for (const child of [...node.childNodes]) if (child !== keep) child.remove();
  if (keep) {
    keep.before(line, openViewButton(open), raw);
    return;
  }
  const slot = document.createElement("div");
  slot.className = "view-slot";
  slot.dataset.view = offer.callId;
  node.append(line, openViewButton(open), raw, slot);
}

/** A thread item's content item (`contentItems`) as the MCP content block it was. */
function contentBlock(item: Json): Json | undefined {
  switch (item?.type) {
    case "text":
      return typeof item.text === "string" ? { type: "text", text: item.text } : undefined;
    case "image":
    case "audio":
      return typeof item.dataBase64 === "string" ? { type: item.type, data: item.dataBase64, mimeType: String(item.mediaType ?? "") } : undefined;
    case "resourceLink":
      return typeof item.uri === "string" ? { type: "resource_link", uri: item.uri, name: String(item.name ?? item.uri), ...(item.mediaType ? { mimeType: item.mediaType } : {}) } : undefined;
    default:
      return undefined;
  }
}

/** The thread item's button that opens (or brings back) the call's view. */
export function openViewButton(open: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "open-view";
  b.textContent = "Open view";
  b.title = "Open this call's view (its state comes back from its log)";
  b.addEventListener("click", open);
  return b;
}
