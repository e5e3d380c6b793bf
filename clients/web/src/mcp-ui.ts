// What the desktop's two MCP Apps hosts share (views of MCP servers, views.ts, and app windows
// of the mcp-apps dialect, host.ts): the protocol version and host identity answered to
// `ui/initialize`, the text of a `ui/message`, and how long a view's teardown is awaited.

type Json = any;

/** The MCP Apps (SEP-1865) version the desktop speaks. */
export const MCP_APPS_PROTOCOL_VERSION = "2026-01-26";

/** `hostInfo` of `ui/initialize`'s answer. */
export const HOST_INFO = { name: "appserver-desktop", version: "0.1.0" };

/** The text parts of a `ui/message`'s `content` (one block or a list), joined by new lines. */
export function messageText(params: Json): string {
  const parts = Array.isArray(params?.content) ? params.content : [params?.content];
  return parts
    .filter((p: Json) => p?.type === "text" && typeof p.text === "string")
    .map((p: Json) => p.text)
    .join("\n")
    .trim();
}

/** How long a view's answer to `ui/resource-teardown` is awaited before its window closes anyway. */
export const TEARDOWN_MS = 3_000;
