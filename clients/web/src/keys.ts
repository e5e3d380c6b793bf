// Keyboard access and the narrow layout. Shortcuts (also listed in the page's help, `?` button):
// Alt+1 the threads, Alt+2 the apps, Alt+3 the composer, Alt+4 the windows, Alt+N a new thread, Alt+A the approval
// queue, Alt+T tile the windows; in a list (threads, apps, approvals, minimized windows) the
// arrow keys, Home and End move between its entries. On a narrow screen (under 760 px) the
// three panes — threads and apps, the conversation, the windows — are tabs, one shown at a time.

export type Pane = "threads" | "chat" | "desk";

export const SHORTCUTS: Array<[string, string]> = [
  ["Alt+1", "the thread list"],
  ["Alt+2", "the apps"],
  ["Alt+3", "the message box"],
  ["Alt+4", "the app windows"],
  ["Alt+N", "a new thread"],
  ["Alt+A", "the approval queue"],
  ["Alt+T", "tile the windows"],
  ["↑ ↓ Home End", "move in a list"],
  ["Alt+arrows, Alt+Shift+arrows", "move, resize the focused window (its title bar)"],
  ["Alt+Enter, Alt+M", "maximize, minimize the focused window"],
  ["Escape", "put the approval dialog away (still pending)"],
];

/** Lists whose buttons the arrow keys move between. */
const LISTS = ["#threads", "#apps", "#approval-list", "#taskbar"];

export function showPane(pane: Pane): void {
  document.body.dataset.pane = pane;
  for (const tab of document.querySelectorAll<HTMLElement>("#tabs button[data-pane]")) {
    tab.setAttribute("aria-selected", String(tab.dataset.pane === pane));
  }
}

/** How many questions wait for the user in each pane. */
const waiting = new Map<Pane, number>();

/** The pane's tab says whether something there waits for the user (a badge, and in its name). */
function markTab(pane: Pane): void {
  const tab = document.querySelector<HTMLElement>(`#tabs button[data-pane=${pane}]`);
  if (!tab) return;
  const count = waiting.get(pane) ?? 0;
  tab.classList.toggle("waiting", count > 0);
  if (count > 0) tab.setAttribute("aria-description", "a question waits for you here");
  else tab.removeAttribute("aria-description");
}

/** Something in `element` waits for the user (a view asks a question): its pane's tab carries a
 * badge until the returned function is called (the question answered or gone), and on the
 * narrow layout, where one pane shows at a time, its pane is shown, so the question is not
 * missed. */
export function attend(element: HTMLElement): () => void {
  const pane: Pane | undefined = element.closest("#windows") ? "desk" : element.closest("#conversation") ? "chat" : undefined;
  if (!pane) return () => {};
  waiting.set(pane, (waiting.get(pane) ?? 0) + 1);
  markTab(pane);
  if (window.matchMedia("(max-width: 760px)").matches && document.body.dataset.pane !== pane) showPane(pane);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const left = (waiting.get(pane) ?? 1) - 1;
    if (left > 0) waiting.set(pane, left);
    else waiting.delete(pane);
    markTab(pane);
  };
}

function focusFirst(...selectors: string[]): void {
  for (const s of selectors) {
    const e = document.querySelector<HTMLElement>(s);
    if (e && e.offsetParent !== null) {
      e.focus();
      return;
    }
  }
}

export interface KeyActions {
  newThread(): void;
  approvals(): void;
  tile(): void;
}

export function setupKeys(actions: KeyActions): void {
  showPane("chat");
  for (const tab of document.querySelectorAll<HTMLElement>("#tabs button[data-pane]")) {
    tab.addEventListener("click", () => showPane(tab.dataset.pane as Pane));
  }
  const help = document.getElementById("shortcuts");
  if (help) {
    const list = help.querySelector("dl")!;
    for (const [keys, what] of SHORTCUTS) {
      const dt = document.createElement("dt");
      dt.textContent = keys;
      const dd = document.createElement("dd");
      dd.textContent = what;
      list.append(dt, dd);
    }
    document.getElementById("help")?.addEventListener("click", () => (help as HTMLDialogElement).showModal());
    help.querySelector("button")?.addEventListener("click", () => (help as HTMLDialogElement).close());
  }
  document.addEventListener("keydown", (e) => {
    if (e.altKey && !e.ctrlKey && !e.metaKey && shortcut(e, actions)) {
      e.preventDefault();
      return;
    }
    if (!e.altKey && !e.ctrlKey && !e.metaKey && listKey(e)) e.preventDefault();
  });
}

function shortcut(e: KeyboardEvent, actions: KeyActions): boolean {
  switch (e.code) {
    case "Digit1":
      showPane("threads");
      focusFirst("#threads li.current button", "#threads li button", "#new-thread");
      return true;
    case "Digit2":
      showPane("threads");
      focusFirst("#apps li button");
      return true;
    case "Digit3":
      showPane("chat");
      focusFirst("#input");
      return true;
    case "Digit4":
      showPane("desk");
      focusFirst(".window:not(.minimized) header", "#taskbar button", "#tile");
      return true;
    case "KeyN":
      showPane("chat");
      actions.newThread();
      return true;
    case "KeyA":
      actions.approvals();
      return true;
    case "KeyT":
      actions.tile();
      return true;
    default:
      return false;
  }
}

function listKey(e: KeyboardEvent): boolean {
  if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(e.key)) return false;
  const target = e.target as HTMLElement;
  const list = target.closest(LISTS.join(","));
  if (!list || target.tagName !== "BUTTON") return false;
  const buttons = [...list.querySelectorAll<HTMLElement>("button")].filter((b) => b.offsetParent !== null && !b.closest(".badge"));
  // Only each entry's first button (a failed outbox entry has more).
  const entries = buttons.filter((b) => b.parentElement?.querySelector("button") === b || list.id === "taskbar");
  const at = entries.indexOf(target);
  if (at < 0) return false;
  const next = e.key === "Home" ? 0 : e.key === "End" ? entries.length - 1 : at + (e.key === "ArrowDown" ? 1 : -1);
  entries[Math.max(0, Math.min(entries.length - 1, next))]?.focus();
  return true;
}
