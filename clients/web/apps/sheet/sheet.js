// The sheet: cells A1..E8. State `cells`; commands setCells, clear and openCsv. A cell the user
// edits is set through the server (appserver.app.command), so it is logged and comes back by
// replay after a reload like the agent's changes.
const COLS = ["A", "B", "C", "D", "E"];
const ROWS = 8;
let cells = {};

const grid = document.getElementById("grid");
const head = grid.insertRow();
head.appendChild(document.createElement("th"));
for (const c of COLS) head.appendChild(document.createElement("th")).textContent = c;
for (let r = 1; r <= ROWS; r++) {
  const row = grid.insertRow();
  row.appendChild(document.createElement("th")).textContent = String(r);
  for (const c of COLS) {
    const td = row.insertCell();
    td.id = `${c}${r}`;
    td.contentEditable = "true";
    td.addEventListener("blur", () => {
      const value = td.textContent;
      if ((cells[td.id] ?? "") !== value) {
        appserver.app.command("setCells", { cells: { [td.id]: value } }).catch((e) => (info.textContent = String(e.message)));
      }
    });
  }
}
const info = document.getElementById("info");

function render() {
  for (const td of grid.querySelectorAll("td")) td.textContent = cells[td.id] ?? "";
}

function setCells(values) {
  for (const [k, v] of Object.entries(values)) {
    if (!/^[A-E][1-8]$/.test(k)) throw Object.assign(new Error(`no cell ${k}`), { code: "INVALID_PARAMS" });
  }
  Object.assign(cells, values);
  render();
  return { ok: true, count: Object.keys(values).length };
}

appserver.app
  .register({
    appId: "sheet",
    name: "Sheet",
    description: "A small spreadsheet (cells A1..E8)",
    state: {
      cells: { description: "All non-empty cell values keyed by address", handler: () => ({ ...cells }) },
    },
    commands: {
      setCells: {
        description: "Set one or more cell values",
        params: {
          type: "object",
          properties: { cells: { type: "object", additionalProperties: { type: "string" } } },
          required: ["cells"],
        },
        handler: (p) => setCells(p.cells),
      },
      clear: { description: "Clear every cell", handler: () => ((cells = {}), render(), { ok: true }) },
      openCsv: {
        description: "Load CSV text into the sheet",
        params: { type: "object", properties: { content: { type: "string" } }, required: ["content"] },
        handler: (p) => {
          const values = {};
          p.content.split(/\r?\n/).slice(0, ROWS).forEach((line, r) =>
            line.split(",").slice(0, COLS.length).forEach((v, c) => v && (values[`${COLS[c]}${r + 1}`] = v)),
          );
          return setCells(values);
        },
      },
    },
    reset: () => ((cells = {}), render()),
  })
  .then((r) => (info.textContent = `window ${r.windowId} · replayed ${r.replayed}`))
  .catch((e) => (info.textContent = `not registered: ${e.message}`));
