// The agent's Markdown, rendered: `marked` (GitHub-flavoured) to HTML, then `DOMPurify` keeps
// only inert markup (no scripts, event handlers, styles, forms, frames or images; links only to
// http(s) and mailto), links open in a new tab with `rel="noopener noreferrer"`, and code blocks
// are highlighted by highlight.js (a few common languages; the highlighter works on the text,
// never on markup). Streaming text is rendered again at most once a frame.

import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked } from "marked";

for (const [name, language] of Object.entries({ bash, css, diff, javascript, json, python, rust, typescript, xml, yaml })) hljs.registerLanguage(name, language);
hljs.registerAliases(["sh", "shell", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

const marked = new Marked({ gfm: true, breaks: true, async: false });

/** Longest text rendered as Markdown (a longer one is shown as plain text). */
const MAX_MARKDOWN = 200_000;

const SAFE_LINK = /^(https?:|mailto:|#)/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  // The only class kept is a code fence's language (for the highlighter).
  const cls = node.getAttribute("class");
  if (cls !== null && !(node.tagName === "CODE" && /^language-[\w+-]+$/.test(cls))) node.removeAttribute("class");
  if (node.tagName === "A") {
    const href = node.getAttribute("href") ?? "";
    if (!SAFE_LINK.test(href.trim())) node.removeAttribute("href");
    if (!href.startsWith("#")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  }
});

const PURIFY: import("dompurify").Config & { RETURN_DOM_FRAGMENT: true } = {
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "video", "audio", "iframe", "object", "embed", "svg", "math"],
  FORBID_ATTR: ["style", "id"],
  RETURN_DOM_FRAGMENT: true,
};

/** `text` as sanitized, highlighted Markdown, into `target` (replacing what it held). */
export function renderMarkdown(target: HTMLElement, text: string): void {
  target.classList.add("markdown");
  if (text.length > MAX_MARKDOWN) {
    target.textContent = text;
    return;
  }
  // Terminal escape sequences (a command's output quoted by the agent) are not text.
  const html = marked.parse(text.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[^[]/g, "")) as string;
  const fragment = DOMPurify.sanitize(html, PURIFY);
  for (const code of fragment.querySelectorAll<HTMLElement>("pre code")) highlight(code);
  target.replaceChildren(fragment);
}

/** Highlights one code block, in the fence's language (`language-x`) or a guessed one. */
function highlight(code: HTMLElement): void {
  const source = code.textContent ?? "";
  const language = /^language-([\w+-]+)$/.exec(code.className)?.[1];
  try {
    const result = language && hljs.getLanguage(language) ? hljs.highlight(source, { language }) : hljs.highlightAuto(source);
    // The highlighter's output: the text, escaped, in its own spans.
    code.innerHTML = result.value;
    code.className = "hljs";
    if (result.language) code.dataset.language = result.language;
  } catch {
    code.textContent = source;
  }
}

const pending = new WeakMap<HTMLElement, string>();

/** Renders streaming text, at most once a frame. */
export function renderMarkdownSoon(target: HTMLElement, text: string): void {
  const scheduled = pending.has(target);
  pending.set(target, text);
  if (scheduled) return;
  requestAnimationFrame(() => {
    const latest = pending.get(target);
    pending.delete(target);
    if (latest !== undefined) renderMarkdown(target, latest);
  });
}
