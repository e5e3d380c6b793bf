// A tool result's content blocks besides its text (an MCP tool's images, audio, resource links
// and embedded resources): shown under the result, built with DOM nodes only (no HTML parsed),
// images and audio only from the item's own data and only of raster or audio media types.

type Json = any;

/** Most characters of an embedded text resource shown. */
const RESOURCE_TEXT_LIMIT = 4000;

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;
const AUDIO = /^audio\/(wav|x-wav|mpeg|mp3|ogg|webm|flac|aac|mp4)$/;

function block(className: string, text?: string): HTMLElement {
  const node = document.createElement("div");
  node.className = `content-item ${className}`;
  if (text !== undefined) node.textContent = text;
  return node;
}

function dataUrl(item: Json): string | undefined {
  const data = typeof item.dataBase64 === "string" ? item.dataBase64 : "";
  return /^[A-Za-z0-9+/=\s]+$/.test(data) ? `data:${item.mediaType};base64,${data.replace(/\s/g, "")}` : undefined;
}

function one(item: Json): HTMLElement | undefined {
  switch (item?.type) {
    case "image": {
      const src = IMAGE.test(String(item.mediaType)) ? dataUrl(item) : undefined;
      if (!src) return block("unsupported", `[an image of type ${item.mediaType ?? "unknown"}]`);
      const img = document.createElement("img");
      img.src = src;
      img.alt = "an image the tool returned";
      img.className = "content-item image";
      return img;
    }
    case "audio": {
      const src = AUDIO.test(String(item.mediaType)) ? dataUrl(item) : undefined;
      if (!src) return block("unsupported", `[audio of type ${item.mediaType ?? "unknown"}]`);
      const audio = document.createElement("audio");
      audio.controls = true;
      audio.src = src;
      audio.className = "content-item audio";
      return audio;
    }
    case "resourceLink": {
      const node = block("resource-link");
      const uri = String(item.uri ?? "");
      const label = `${item.name ?? uri}${item.description ? ` — ${item.description}` : ""}`;
      if (/^https:\/\//.test(uri)) {
        const a = document.createElement("a");
        a.href = uri;
        a.target = "_blank";
        a.rel = "noopener noreferrer";
        a.textContent = label;
        node.append("🔗 ", a);
      } else {
        node.textContent = `🔗 ${label} (${uri})`;
      }
      return node;
    }
    case "resource": {
      const node = block("resource", `📄 ${item.uri ?? "a resource"}${item.mediaType ? ` (${item.mediaType})` : ""}`);
      if (typeof item.text === "string") {
        const pre = document.createElement("pre");
        pre.textContent = item.text.length > RESOURCE_TEXT_LIMIT ? `${item.text.slice(0, RESOURCE_TEXT_LIMIT)}…` : item.text;
        node.append(pre);
      } else if (typeof item.dataBase64 === "string") {
        node.append(` — ${Math.floor((item.dataBase64.length * 3) / 4)} bytes`);
      }
      return node;
    }
    default:
      return undefined;
  }
}

/** The blocks of `items` other than text, or nothing when there are none. */
export function contentItems(items: Json[] | undefined): HTMLElement | undefined {
  const shown = (items ?? []).map(one).filter((n): n is HTMLElement => n !== undefined);
  if (shown.length === 0) return undefined;
  const box = document.createElement("div");
  box.className = "content-items";
  box.append(...shown);
  return box;
}
