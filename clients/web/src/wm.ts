// The window manager of the desk (the app windows' area): windows move (drag the title bar, or
// Alt+arrows on it), resize (drag the corner, or Alt+Shift+arrows), minimize to the desk's
// taskbar, maximize to the whole desk, and tile (the desk's Tile button, or Alt+T); the one
// pressed comes to the front. Each window's layout is kept with the window (sessionStorage, so a
// reload puts it back) and, per app, in localStorage (a new window of that app opens where the
// last one was). Positions are clamped to the desk, so no window is left out of reach. On a narrow
// screen the stylesheet stacks the windows instead (the layout is kept for a wider one).

export interface Layout {
  x: number;
  y: number;
  w: number;
  h: number;
  state: "normal" | "minimized" | "maximized";
}

/** What the manager needs of a window. */
export interface Managed {
  readonly element: HTMLElement;
  readonly slot: string;
  readonly app: { id: string; name: string; icon?: string | null };
}

const MIN_W = 220;
const MIN_H = 140;
/** What stays of a window on the desk when it is dragged to an edge. */
const KEEP = 60;
/** A keyboard step, in pixels. */
const STEP = 20;
const APP_KEY = "appserver.desktop.layout.";

export class WindowManager {
  private readonly windows = new Map<string, { w: Managed; layout: Layout }>();
  private z = 1;
  /** Elements whose title bar and corner have their controls (a view moved back from the
   * conversation keeps them). */
  private readonly decorated = new WeakSet<HTMLElement>();

  constructor(
    private readonly desk: HTMLElement,
    private readonly taskbar: HTMLElement,
    private readonly changed: () => void,
  ) {
    // A click into an app's iframe never reaches the page; the page only sees its own window
    // lose focus, to that iframe: its window comes to the front.
    window.addEventListener("blur", () =>
      setTimeout(() => {
        const frame = document.activeElement;
        if (frame?.tagName !== "IFRAME") return;
        for (const { w } of this.windows.values()) if (w.element.contains(frame)) this.raise(w);
      }),
    );
    new ResizeObserver(() => {
      for (const { w, layout } of this.windows.values()) this.apply(w, layout);
    }).observe(desk);
  }

  /** Takes a window onto the desk, with its remembered layout (or its app's, or a cascade). */
  add(w: Managed, saved?: unknown): void {
    const layout = validLayout(saved) ?? this.appLayout(w.app.id) ?? this.cascade();
    if (!saved && layout.state === "minimized") layout.state = "normal";
    this.windows.set(w.slot, { w, layout: { ...layout } });
    if (!this.decorated.has(w.element)) this.decorate(w);
    this.decorated.add(w.element);
    moveInto(this.desk, w.element);
    this.apply(w, layout);
    this.raise(w);
    this.renderTaskbar();
  }

  remove(slot: string): void {
    this.windows.delete(slot);
    this.renderTaskbar();
  }

  layout(slot: string): Layout | undefined {
    const entry = this.windows.get(slot);
    return entry ? { ...entry.layout } : undefined;
  }

  /** Arranges the windows that are not minimized in a grid filling the desk. */
  tile(): void {
    const shown = [...this.windows.values()].filter((e) => e.layout.state !== "minimized");
    if (!shown.length) return;
    const cols = Math.ceil(Math.sqrt(shown.length));
    const rows = Math.ceil(shown.length / cols);
    const { width, height } = this.size();
    const gap = 6;
    const cw = Math.floor((width - gap * (cols + 1)) / cols);
    const ch = Math.floor((height - gap * (rows + 1)) / rows);
    shown.forEach((e, i) => {
      const c = i % cols;
      const r = Math.floor(i / cols);
      this.set(e.w, { x: gap + c * (cw + gap), y: gap + r * (ch + gap), w: cw, h: ch, state: "normal" });
    });
  }

  private size(): { width: number; height: number } {
    return { width: Math.max(this.desk.clientWidth, MIN_W), height: Math.max(this.desk.clientHeight, MIN_H) };
  }

  private cascade(): Layout {
    const { width, height } = this.size();
    const n = this.windows.size % 8;
    const w = Math.min(560, width - 24);
    const h = Math.min(440, height - 24);
    return { x: 8 + n * 24, y: 8 + n * 24, w, h, state: "normal" };
  }

  private appLayout(appId: string): Layout | undefined {
    try {
      const saved = validLayout(JSON.parse(localStorage.getItem(APP_KEY + appId) ?? "null"));
      if (saved) return { ...saved, state: saved.state === "maximized" ? "maximized" : "normal" };
    } catch {
      // A broken entry: the default layout.
    }
    return undefined;
  }

  private set(w: Managed, layout: Layout): void {
    const entry = this.windows.get(w.slot);
    if (!entry) return;
    entry.layout = { ...layout };
    this.apply(w, entry.layout);
    try {
      localStorage.setItem(APP_KEY + w.app.id, JSON.stringify(entry.layout));
    } catch {
      // Storage refused: the layout is still kept with the window.
    }
    this.renderTaskbar();
    this.changed();
  }

  /** Puts the window where its layout says, clamped to the desk. */
  private apply(w: Managed, layout: Layout): void {
    const { width, height } = this.size();
    const ww = Math.max(MIN_W, Math.min(layout.w, width));
    const wh = Math.max(MIN_H, Math.min(layout.h, height));
    const x = Math.max(KEEP - ww, Math.min(layout.x, width - KEEP));
    const y = Math.max(0, Math.min(layout.y, height - 32));
    const s = w.element.style;
    s.left = `${x}px`;
    s.top = `${y}px`;
    s.width = `${ww}px`;
    s.height = `${wh}px`;
    w.element.classList.toggle("minimized", layout.state === "minimized");
    w.element.classList.toggle("maximized", layout.state === "maximized");
    w.element.dataset.state = layout.state;
    const max = w.element.querySelector<HTMLButtonElement>("button.maximize");
    if (max) {
      max.textContent = layout.state === "maximized" ? "❐" : "□";
      max.title = layout.state === "maximized" ? "Restore the window's size (Alt+Enter)" : "Maximize the window (Alt+Enter)";
      max.setAttribute("aria-label", max.title);
    }
  }

  private raise(w: Managed): void {
    w.element.style.zIndex = String(++this.z);
  }

  private update(w: Managed, change: Partial<Layout>): void {
    const entry = this.windows.get(w.slot);
    if (entry) this.set(w, { ...entry.layout, ...change });
  }

  minimize(w: Managed): void {
    this.update(w, { state: "minimized" });
    this.taskbar.querySelector<HTMLElement>(`button[data-slot="${w.slot}"]`)?.focus();
  }

  restore(w: Managed): void {
    const entry = this.windows.get(w.slot);
    if (!entry) return;
    this.update(w, { state: entry.layout.state === "minimized" ? "normal" : entry.layout.state });
    this.raise(w);
    w.element.querySelector<HTMLElement>("header")?.focus();
  }

  /** Maximized (a view's `fullscreen`) or not (`inline`). */
  setMaximized(w: Managed, maximized: boolean): void {
    const entry = this.windows.get(w.slot);
    if (entry) this.update(w, { state: maximized ? "maximized" : "normal" });
  }

  toggleMaximize(w: Managed): void {
    const entry = this.windows.get(w.slot);
    if (entry) this.update(w, { state: entry.layout.state === "maximized" ? "normal" : "maximized" });
  }

  /** The title bar's controls, its drag, the corner's resize, and the keys. */
  private decorate(w: Managed): void {
    const header = w.element.querySelector<HTMLElement>("header")!;
    header.tabIndex = 0;
    header.setAttribute("aria-label", `${w.app.name} window: Alt+arrows move it, Alt+Shift+arrows resize it, Alt+Enter maximizes, Alt+M minimizes`);
    const min = control("—", "Minimize the window to the taskbar (Alt+M)", () => this.minimize(w));
    min.classList.add("minimize");
    const max = control("□", "Maximize the window (Alt+Enter)", () => this.toggleMaximize(w));
    max.classList.add("maximize");
    header.querySelector("button.close")?.before(min, max);
    const corner = document.createElement("div");
    corner.className = "resize-handle";
    corner.setAttribute("aria-hidden", "true");
    w.element.append(corner);
    w.element.addEventListener("pointerdown", () => this.raise(w));
    header.addEventListener("dblclick", (e) => {
      if (!(e.target as HTMLElement).closest("button")) this.toggleMaximize(w);
    });
    this.drag(w, header, (layout, dx, dy) => ({ ...layout, x: layout.x + dx, y: layout.y + dy }));
    this.drag(w, corner, (layout, dx, dy) => ({ ...layout, w: Math.max(MIN_W, layout.w + dx), h: Math.max(MIN_H, layout.h + dy) }));
    header.addEventListener("keydown", (e) => this.key(w, e));
  }

  private key(w: Managed, e: KeyboardEvent): void {
    if (!e.altKey || e.target !== e.currentTarget) return;
    const entry = this.windows.get(w.slot);
    if (!entry) return;
    const l = entry.layout;
    const arrows: Record<string, [number, number]> = { ArrowLeft: [-STEP, 0], ArrowRight: [STEP, 0], ArrowUp: [0, -STEP], ArrowDown: [0, STEP] };
    const d = arrows[e.key];
    if (d && e.shiftKey) this.update(w, { w: Math.max(MIN_W, l.w + d[0]), h: Math.max(MIN_H, l.h + d[1]), state: "normal" });
    else if (d) this.update(w, { x: l.x + d[0], y: l.y + d[1], state: "normal" });
    else if (e.key === "Enter") this.toggleMaximize(w);
    else if (e.key.toLowerCase() === "m") this.minimize(w);
    else return;
    e.preventDefault();
  }

  /** Drags on `handle` change the layout by `change` (from the layout at the press). */
  private drag(w: Managed, handle: HTMLElement, change: (start: Layout, dx: number, dy: number) => Layout): void {
    handle.addEventListener("pointerdown", (e) => {
      if (e.button !== 0 || (e.target as HTMLElement).closest("button")) return;
      const entry = this.windows.get(w.slot);
      if (!entry || entry.layout.state === "maximized" || getComputedStyle(w.element).position !== "absolute") return;
      e.preventDefault();
      const start = { ...entry.layout };
      // What is on screen (clamped) is where the drag starts.
      start.x = w.element.offsetLeft;
      start.y = w.element.offsetTop;
      start.w = w.element.offsetWidth;
      start.h = w.element.offsetHeight;
      const x0 = e.clientX;
      const y0 = e.clientY;
      handle.setPointerCapture(e.pointerId);
      document.body.classList.add("dragging");
      const move = (m: PointerEvent) => {
        entry.layout = change(start, m.clientX - x0, m.clientY - y0);
        this.apply(w, entry.layout);
      };
      const up = (u: PointerEvent) => {
        handle.removeEventListener("pointermove", move);
        handle.removeEventListener("pointerup", up);
        handle.removeEventListener("pointercancel", up);
        document.body.classList.remove("dragging");
        move(u);
        this.set(w, entry.layout);
      };
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", up);
      handle.addEventListener("pointercancel", up);
    });
  }

  private renderTaskbar(): void {
    const minimized = [...this.windows.values()].filter((e) => e.layout.state === "minimized");
    this.taskbar.replaceChildren(
      ...minimized.map(({ w }) => {
        const b = control(`${w.app.icon && !w.app.icon.includes(".") ? w.app.icon + " " : ""}${w.app.name}`, `Restore ${w.app.name}`, () => this.restore(w));
        b.dataset.slot = w.slot;
        b.dataset.app = w.app.id;
        return b;
      }),
    );
  }
}

/** A layout read back from storage, if it is one (storage is the user's, and may hold anything). */
/** Appends `element` to `parent`; one already in the page is moved without reloading its
 * iframes (`moveBefore`) where the browser can. */
export function moveInto(parent: HTMLElement, element: HTMLElement): void {
  const p = parent as HTMLElement & { moveBefore?: (node: Node, child: Node | null) => void };
  if (element.isConnected && typeof p.moveBefore === "function") {
    try {
      p.moveBefore(element, null);
      return;
    } catch {
      // Not movable here (another document): appended instead.
    }
  }
  parent.append(element);
}

export function validLayout(value: unknown): Layout | undefined {
  const v = value as Record<string, unknown> | null;
  if (!v || typeof v !== "object") return undefined;
  const n = (k: string) => typeof v[k] === "number" && Number.isFinite(v[k]) && Math.abs(v[k] as number) < 100_000;
  if (!["x", "y", "w", "h"].every(n)) return undefined;
  const state = v.state === "minimized" || v.state === "maximized" ? v.state : "normal";
  return { x: v.x as number, y: v.y as number, w: v.w as number, h: v.h as number, state };
}

function control(text: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.title = title;
  b.setAttribute("aria-label", title);
  b.addEventListener("click", onClick);
  return b;
}
