// An MCP Apps view (SEP-1865) with no SDK: JSON-RPC over postMessage to the host. It declares
// tools (`appCapabilities.tools`), answers the host's tools/list and tools/call, calls its own
// tool through the host on a click (so the server logs it), and shows what the host's last
// tools/call did. The notifications it gets are listed in `data-received` of its body.
let count = 0;
let nextId = 1;
const pending = new Map();
const $ = (id) => document.getElementById(id);
const render = () => ($("count").textContent = String(count));

const tools = [
  {
    name: "increment",
    description: "Add `by` (default 1) to the counter",
    inputSchema: { type: "object", properties: { by: { type: "integer" } } },
  },
  { name: "reset", description: "Set the counter to zero", inputSchema: { type: "object", properties: {} } },
];

function callTool(name, args) {
  if (name === "increment") count += args.by ?? 1;
  else if (name === "reset") count = 0;
  else return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
  render();
  $("last").textContent = `${name}: count is ${count}`;
  return { content: [{ type: "text", text: `count is ${count}` }], structuredContent: { count } };
}

const send = (m) => window.parent.postMessage(m, "*");
function request(method, params) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    send({ jsonrpc: "2.0", id, method, params });
  });
}

window.addEventListener("message", (e) => {
  if (e.source !== window.parent) return;
  const m = e.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.method && m.id !== undefined) {
    let result;
    if (m.method === "tools/list") result = { tools };
    else if (m.method === "tools/call") result = callTool(m.params.name, m.params.arguments ?? {});
    else if (m.method === "ping") result = {};
    else if (m.method === "ui/resource-teardown") {
      console.info(`counter torn down: ${m.params?.reason}`);
      result = {};
    }
    if (result) send({ jsonrpc: "2.0", id: m.id, result });
    else send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: `no method ${m.method}` } });
  } else if (m.method) {
    document.body.dataset.received = `${document.body.dataset.received ?? ""} ${m.method}`.trim();
  } else if (m.id !== undefined && pending.has(m.id)) {
    const p = pending.get(m.id);
    pending.delete(m.id);
    m.error ? p.reject(new Error(m.error.message)) : p.resolve(m.result);
  }
});

$("inc").addEventListener("click", () =>
  request("tools/call", { name: "increment", arguments: { by: 1 } }).catch((err) => ($("last").textContent = String(err.message))),
);
$("tell").addEventListener("click", () =>
  request("ui/message", { role: "user", content: [{ type: "text", text: `The counter shows ${count}` }] }),
);

request("ui/initialize", {
  protocolVersion: "2026-01-26",
  appInfo: { name: "counter", version: "1.0.0" },
  appCapabilities: { tools: { listChanged: false } },
}).then((r) => {
  $("last").textContent = `host: ${r.hostInfo.name} (${r.hostContext.theme}, ${r.hostContext.platform})`;
  send({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
});
