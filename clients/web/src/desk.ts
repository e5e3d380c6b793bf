// The apps list and the desk: the workspace's apps (the catalog, `/api/apps`) as buttons, each
// opening a window (host.ts) on the desk, whose window manager (wm.ts) moves, sizes, minimizes,
// maximizes and tiles them. The open windows — their app, window id and layout — are kept in
// sessionStorage, so a reload of the page reopens them where they were, under the same ids.
// MCP Apps views (views.ts) open on the desk too, one per offered call, and are reopened the same
// way; or, the user's choice (remembered), inline in the conversation under their call's line,
// moved there and back without reloading their iframe.

import type { AppServerClient } from "../../typescript/src/index.js";
import { attend } from "./keys.js";
import { WindowHost, type CatalogApp, type SavedWindow } from "./host.js";
import { VIEW_SESSION_PREFIX, ViewHost, type ViewOffer } from "./views.js";
import { WindowManager, moveInto, type Layout } from "./wm.js";

const WINDOWS_KEY = "appserver.desktop.windows";
const VIEWS_KEY = "appserver.desktop.views";
/** Open views, at most (the oldest closes when a new one would pass it). */
const MAX_VIEWS = 16;
/** Where views live, the user's choice (the toggle on a view): `inline` in the conversation, under
 * the call's line, or `desk` (a window; the default). */
const PLACEMENT_KEY = "appserver.desktop.viewPlacement";

export type Placement = "inline" | "desk";

export function viewPlacement(): Placement {
  try {
    return localStorage.getItem(PLACEMENT_KEY) === "inline" ? "inline" : "desk";
  } catch {
    return "desk";
  }
}

type Saved = SavedWindow & { layout?: Layout };

export class Desk {
  readonly hosts: WindowHost[] = [];
  readonly views: ViewHost[] = [];
  catalog: CatalogApp[] = [];
  private readonly wm: WindowManager;

  constructor(
    private readonly client: () => AppServerClient,
    /** A window was opened by the user (the page shows the desk, on a narrow screen). */
    private readonly opened: (host: WindowHost) => void,
    /** A view's `ui/message`, confirmed by the user: the user's message in its thread. */
    private readonly say: (threadId: string, text: string) => void = () => {},
    /** A view is closing: its pending calls are withdrawn (`mcp-view:<callId>`). */
    private readonly viewClosing: (view: ViewHost) => void = () => {},
  ) {
    this.wm = new WindowManager(document.getElementById("desk")!, document.getElementById("taskbar")!, () => this.save());
    document.getElementById("tile")!.addEventListener("click", () => this.tile());
  }

  tile(): void {
    this.wm.tile();
  }

  async loadCatalog(): Promise<void> {
    const response = await fetch("/api/apps", { credentials: "same-origin" });
    const body = (await response.json()) as { apps: CatalogApp[]; problems?: { id: string; error: string }[] };
    this.catalog = body.apps;
    const broken = (body.problems ?? []).map((problem) => this.brokenEntry(problem));
    document.getElementById("apps")!.replaceChildren(...this.catalog.map((app) => this.appEntry(app)), ...broken);
  }

  /** An app folder the server could not read: listed, not openable, with what is wrong. */
  private brokenEntry(problem: { id: string; error: string }): HTMLElement {
    const li = document.createElement("li");
    li.className = "app app-broken";
    li.dataset.app = problem.id;
    const name = document.createElement("span");
    name.textContent = `⚠ ${problem.id}`;
    const why = document.createElement("small");
    why.className = "app-error";
    why.textContent = problem.error;
    li.title = `${problem.id} cannot be opened: ${problem.error}`;
    li.append(name, why);
    return li;
  }

  private appEntry(app: CatalogApp): HTMLElement {
    const li = document.createElement("li");
    li.className = "app";
    li.dataset.app = app.id;
    const open = document.createElement("button");
    open.type = "button";
    open.className = "app-open";
    if (app.icon && /\.(svg|png|jpe?g|gif|webp)$/i.test(app.icon)) {
      // An image in the app's folder, next to its entry page.
      const img = document.createElement("img");
      img.className = "icon";
      img.alt = "";
      img.src = app.entry.slice(0, app.entry.indexOf(`/${app.id}/`) + app.id.length + 2) + app.icon;
      open.append(img, ` ${app.name}`);
    } else {
      open.textContent = `${app.icon ?? "▣"} ${app.name}`;
    }
    open.title = app.description ?? app.name;
    open.addEventListener("click", () => this.opened(this.open(app)));
    li.append(open);
    return li;
  }

  private save(): void {
    const open = this.hosts.filter((h) => h.element.isConnected).map((h) => ({ ...h.saved(), layout: this.wm.layout(h.slot) }));
    sessionStorage.setItem(WINDOWS_KEY, JSON.stringify(open));
    const views = this.views.map((v) => ({ offer: v.offer, layout: this.wm.layout(v.slot) }));
    try {
      sessionStorage.setItem(VIEWS_KEY, JSON.stringify(views));
    } catch {
      // Over the storage quota (huge tool results): the views are not reopened after a reload.
    }
  }

  /** Every iframe the page hosts: app windows and views. */
  frames(): Array<{ frame: HTMLIFrameElement; receive(m: unknown): void }> {
    return [...this.hosts, ...this.views];
  }

  /** An offered view (`mcp/view/offered`): a window for its call, unless one is open already. */
  openView(offer: ViewOffer, restored = false, layout?: unknown): ViewHost | undefined {
    if (!offer || typeof offer.callId !== "string" || typeof offer.server !== "string") return undefined;
    const open = this.views.find((v) => v.offer.callId === offer.callId);
    if (open) return open;
    if (this.views.length >= MAX_VIEWS) void this.views[0]!.close();
    const view = new ViewHost(this.client, offer, restored, {
      displayMode: (v, mode) => {
        // Fullscreen fills the browser window (not the desk); pip stays on top of the page.
        // (A window on the desk is maximized too, so its title bar's restore button leaves it.)
        v.element.classList.toggle("fullscreen", mode === "fullscreen");
        v.element.classList.toggle("pip", mode === "pip");
        this.wm.setMaximized(v, mode === "fullscreen");
        return mode;
      },
      togglePlacement: (v) => {
        const next: Placement = v.element.classList.contains("inline-view") ? "desk" : "inline";
        try {
          localStorage.setItem(PLACEMENT_KEY, next);
        } catch {
          // Not remembered: this view still moves.
        }
        this.place(v, next);
      },
      message: (threadId, text) => this.say(threadId, text),
      asking: (v) => attend(v.element),
      closing: (v) => this.viewClosing(v),
      closed: (v) => {
        this.wm.remove(v.slot);
        const i = this.views.indexOf(v);
        if (i >= 0) this.views.splice(i, 1);
        this.save();
      },
      log: (text) => console.info(text),
    });
    this.views.push(view);
    this.wm.add(view, layout);
    this.place(view, viewPlacement());
    this.save();
    return view;
  }

  /** Puts a view where asked: inline under its call's line in the conversation (when the line
   * is shown; otherwise on the desk until it is), or a window on the desk. Moved, not reloaded. */
  place(view: ViewHost, where: Placement): void {
    const slot = where === "inline" ? document.querySelector<HTMLElement>(`.view-slot[data-view="${CSS.escape(view.offer.callId)}"]`) : null;
    if (slot) {
      this.wm.remove(view.slot);
      view.element.classList.add("inline-view");
      moveInto(slot, view.element);
    } else if (view.element.classList.contains("inline-view") || !this.wm.layout(view.slot)) {
      view.element.classList.remove("inline-view");
      this.wm.add(view, undefined);
    }
    view.placed(view.element.classList.contains("inline-view"));
    this.save();
  }

  /** A view's line was drawn in the conversation: an open inline view goes under it. */
  adopt(callId: string): void {
    const view = this.views.find((v) => v.offer.callId === callId);
    if (view && viewPlacement() === "inline") this.place(view, "inline");
  }

  /** The conversation is about to be redrawn: inline views wait on the desk (alive) until their
   * line is drawn again. */
  parkInline(): void {
    for (const v of this.views) if (v.element.classList.contains("inline-view")) this.place(v, "desk");
  }

  /** The thread is gone: its views are torn down and closed. */
  closeViewsOf(threadId: string): void {
    for (const v of this.views.filter((v) => v.offer.threadId === threadId)) void v.close();
    // Their storage in this tab goes with them (the server drops theirs with the thread).
    for (let i = sessionStorage.length - 1; i >= 0; i--) {
      const key = sessionStorage.key(i);
      if (key?.startsWith(`${VIEW_SESSION_PREFIX}${threadId}/`)) sessionStorage.removeItem(key);
    }
  }

  open(app: CatalogApp, saved?: Saved): WindowHost {
    const slot = saved?.slot ?? `slot_${Math.random().toString(36).slice(2, 10)}`;
    const host = new WindowHost(this.client(), app, slot, saved?.windowId, {
      changed: () => {
        for (let i = this.hosts.length - 1; i >= 0; i--) {
          if (this.hosts[i]!.element.isConnected) continue;
          this.wm.remove(this.hosts[i]!.slot);
          this.hosts.splice(i, 1);
        }
        this.save();
      },
      log: (text) => console.info(text),
    });
    this.hosts.push(host);
    this.wm.add(host, saved?.layout);
    this.save();
    return host;
  }

  /** Reopens the windows of this tab's previous page. */
  restore(): void {
    let saved: Saved[] = [];
    try {
      saved = JSON.parse(sessionStorage.getItem(WINDOWS_KEY) ?? "[]");
    } catch {
      saved = [];
    }
    for (const w of Array.isArray(saved) ? saved : []) {
      const app = this.catalog.find((a) => a.id === w.appId);
      if (app) this.open(app, w);
    }
    let views: Array<{ offer: ViewOffer; layout?: unknown }> = [];
    try {
      views = JSON.parse(sessionStorage.getItem(VIEWS_KEY) ?? "[]");
    } catch {
      views = [];
    }
    for (const v of Array.isArray(views) ? views.slice(-MAX_VIEWS) : []) this.openView(v?.offer, true, v?.layout);
  }

  /** A new connection: every window registers on it again. */
  attach(client: AppServerClient): void {
    for (const host of this.hosts) host.attach(client);
  }

  find(windowId: string): WindowHost | undefined {
    return this.hosts.find((h) => h.windowId === windowId);
  }
}
