// A small JSON Schema check (the keywords app manifests use: type, required, properties,
// additionalProperties, items, enum, minimum, maximum, minLength, maxLength), so the approval
// dialog can say, before the user is asked, that an app command's params do not fit the
// command the app declared. Returns the first few problems, each with where it is.

type Json = any;

const MAX_PROBLEMS = 5;
const MAX_DEPTH = 32;

function typeOf(value: Json): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function fits(type: string, actual: string): boolean {
  return type === actual || (type === "number" && actual === "integer");
}

export function checkSchema(schema: Json, value: Json): string[] {
  const problems: string[] = [];
  walk(schema, value, "params", problems, 0);
  return problems.slice(0, MAX_PROBLEMS);
}

function walk(schema: Json, value: Json, at: string, problems: string[], depth: number): void {
  if (!schema || typeof schema !== "object" || problems.length >= MAX_PROBLEMS || depth > MAX_DEPTH) return;
  const actual = typeOf(value);
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => fits(t, actual))) {
      problems.push(`${at} should be ${types.join(" or ")}, not ${actual}`);
      return;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e: Json) => JSON.stringify(e) === JSON.stringify(value))) {
    problems.push(`${at} should be one of ${schema.enum.map((e: Json) => JSON.stringify(e)).join(", ")}`);
  }
  if (actual === "number" || actual === "integer") {
    if (typeof schema.minimum === "number" && value < schema.minimum) problems.push(`${at} should be at least ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum) problems.push(`${at} should be at most ${schema.maximum}`);
  }
  if (actual === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) problems.push(`${at} should be at least ${schema.minLength} characters`);
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) problems.push(`${at} should be at most ${schema.maxLength} characters`);
  }
  if (actual === "object") {
    for (const key of Array.isArray(schema.required) ? schema.required : []) {
      if (!(key in value)) problems.push(`${at}.${key} is required`);
    }
    const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
    for (const [key, v] of Object.entries(value)) {
      if (key in properties) walk(properties[key], v, `${at}.${key}`, problems, depth + 1);
      else if (schema.additionalProperties === false) problems.push(`${at}.${key} is not a parameter of the command`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === "object") walk(schema.additionalProperties, v, `${at}.${key}`, problems, depth + 1);
    }
  }
  if (actual === "array" && schema.items && typeof schema.items === "object") {
    (value as Json[]).slice(0, 1000).forEach((v, i) => walk(schema.items, v, `${at}[${i}]`, problems, depth + 1));
  }
}
