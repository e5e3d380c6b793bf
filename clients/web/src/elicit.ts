// An MCP server asks the user for input during the agent's call of its tool
// (`mcp/elicitation/request`, the server's MCP `elicitation/create`): a dialog with the server's
// message and a form built from its `requestedSchema` (text, email, URL and date fields, numbers,
// check boxes, single and multiple choices), answered Submit (`accept` with the values), Decline
// or Cancel. One request at a time; another that arrives meanwhile is declined. A URL elicitation
// shows the link (opened only by the user) and is answered the same way.

type Json = any;

export interface ElicitAnswer {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, unknown>;
}

/** The choices of a property: `enum` (with `enumNames`), `oneOf`/`anyOf` of `{const, title}`. */
function choices(schema: Json): Array<{ value: string; label: string }> | undefined {
  const titled = schema?.oneOf ?? schema?.anyOf;
  if (Array.isArray(titled)) return titled.map((c: Json) => ({ value: String(c?.const), label: String(c?.title ?? c?.const) }));
  if (Array.isArray(schema?.enum)) return schema.enum.map((v: Json, i: number) => ({ value: String(v), label: String(schema.enumNames?.[i] ?? v) }));
  return undefined;
}

/** One form field for the property `name`; `read` gives its value (undefined: left empty). */
function field(name: string, schema: Json, required: boolean): { element: HTMLElement; read: () => unknown } {
  const label = document.createElement("label");
  label.className = "elicit-field";
  label.textContent = `${schema?.title ?? name}${required ? " *" : ""}`;
  if (schema?.description) label.title = String(schema.description);
  const multi = schema?.type === "array" ? choices(schema.items) : undefined;
  const single = choices(schema);
  let read: () => unknown;
  if (multi || single) {
    const select = document.createElement("select");
    select.name = name;
    select.multiple = Boolean(multi);
    const defaults = new Set([schema?.default].flat().map(String));
    for (const c of multi ?? single!) select.append(new Option(c.label, c.value, false, defaults.has(c.value)));
    read = () => (multi ? [...select.selectedOptions].map((o) => o.value) : select.value || undefined);
    label.append(select);
  } else if (schema?.type === "boolean") {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.name = name;
    box.checked = schema.default === true;
    read = () => box.checked;
    label.prepend(box);
  } else {
    const input = document.createElement("input");
    input.name = name;
    const numeric = schema?.type === "number" || schema?.type === "integer";
    input.type = numeric ? "number" : ({ email: "email", uri: "url", date: "date" } as Record<string, string>)[schema?.format] ?? "text";
    // A number takes any value (the browser's default step of 1 would refuse 3.14); an integer whole ones.
    if (numeric) input.step = schema.type === "integer" ? "1" : "any";
    if (numeric && typeof schema.minimum === "number") input.min = String(schema.minimum);
    if (numeric && typeof schema.maximum === "number") input.max = String(schema.maximum);
    if (schema?.default !== undefined) input.value = String(schema.default);
    input.required = required;
    read = () => (input.value === "" ? undefined : numeric ? Number(input.value) : input.value);
    label.append(input);
  }
  return { element: label, read };
}

export class Elicitations {
  private busy = false;

  constructor(private readonly dialog: HTMLDialogElement) {}

  /** The handler of `mcp/elicitation/request`: resolves with the user's answer. */
  ask(params: Json): Promise<ElicitAnswer> {
    if (this.busy) return Promise.resolve({ action: "decline" });
    this.busy = true;
    const request = params?.request ?? {};
    const form = document.createElement("form");
    form.method = "dialog";
    const heading = document.createElement("h2");
    heading.id = "elicitation-heading";
    heading.textContent = `${params?.server ?? "An MCP server"} asks (during ${params?.tool ?? "a tool call"})`;
    const message = document.createElement("p");
    message.textContent = String(request.message ?? "");
    form.append(heading, message);
    const schema = request.requestedSchema ?? {};
    const required = new Set<string>(Array.isArray(schema.required) ? schema.required : []);
    const fields = Object.entries(schema.properties ?? {}).map(([name, s]) => ({ name, ...field(name, s, required.has(name)) }));
    for (const f of fields) form.append(f.element);
    if (request.mode === "url" && typeof request.url === "string") {
      const link = document.createElement("a");
      link.href = request.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      link.textContent = request.url;
      form.append(link);
    }
    const buttons = document.createElement("div");
    buttons.className = "buttons";
    const button = (text: string, action: string) => {
      const b = document.createElement("button");
      b.type = action === "accept" ? "submit" : "button";
      b.dataset.action = action;
      b.textContent = text;
      return b;
    };
    buttons.append(button("Submit", "accept"), button("Decline", "decline"), button("Cancel", "cancel"));
    form.append(buttons);
    this.dialog.replaceChildren(form);
    this.dialog.showModal();
    return new Promise((resolve) => {
      const done = (answer: ElicitAnswer) => {
        this.busy = false;
        if (this.dialog.open) this.dialog.close();
        this.dialog.replaceChildren();
        resolve(answer);
      };
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        const content: Record<string, unknown> = {};
        for (const f of fields) {
          const value = f.read();
          if (value !== undefined) content[f.name] = value;
        }
        done({ action: "accept", content });
      });
      for (const b of buttons.querySelectorAll<HTMLButtonElement>("button[type=button]")) {
        b.addEventListener("click", () => done({ action: b.dataset.action as "decline" | "cancel" }));
      }
      this.dialog.addEventListener("cancel", () => done({ action: "cancel" }), { once: true });
    });
  }
}
