// The page's theme: the OS's (`prefers-color-scheme`, followed as it changes) unless the user
// picked light or dark with the top bar's toggle (kept in localStorage). It is the `data-theme`
// of the root element, which the stylesheet's colour variables follow, and what app views are
// told in their host context; a change is announced as the document's `themechange` event
// (views are told with `ui/notifications/host-context-changed`).

const KEY = "appserver.desktop.theme";
const ORDER = ["system", "light", "dark"] as const;
type Preference = (typeof ORDER)[number];

const media = matchMedia("(prefers-color-scheme: dark)");

function preference(): Preference {
  const saved = localStorage.getItem(KEY);
  return (ORDER as readonly string[]).includes(saved ?? "") ? (saved as Preference) : "system";
}

/** The theme shown now. */
export function currentTheme(): "light" | "dark" {
  const p = preference();
  return p === "system" ? (media.matches ? "dark" : "light") : p;
}

function apply(button: HTMLButtonElement): void {
  const theme = currentTheme();
  const changed = document.documentElement.dataset.theme !== undefined && document.documentElement.dataset.theme !== theme;
  document.documentElement.dataset.theme = theme;
  if (changed) document.dispatchEvent(new CustomEvent("themechange", { detail: theme }));
  const p = preference();
  button.textContent = p === "system" ? `Theme: system (${theme})` : `Theme: ${p}`;
  button.title = "Switch the theme: the system's, light, or dark";
}

/** Applies the theme and wires the toggle. */
export function setupTheme(button: HTMLButtonElement): void {
  apply(button);
  media.addEventListener("change", () => apply(button));
  button.addEventListener("click", () => {
    const next = ORDER[(ORDER.indexOf(preference()) + 1) % ORDER.length]!;
    localStorage.setItem(KEY, next);
    apply(button);
  });
}
