//! Client code generation from the protocol's JSON Schema: the schema document
//! (`schema::protocol_schema`, itself built from the Rust types and the method table) is read into
//! a small type model, which `typescript` and `python` render as the SDKs' declarations.

pub mod python;
pub mod typescript;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The generated client files: (path relative to the repository root, content).
pub fn client_files() -> Vec<(&'static str, String)> {
    let protocol = Protocol::from_schema(&crate::schema::protocol_schema());
    vec![(typescript::TS_FILE, typescript::render(&protocol)), (python::PY_FILE, python::render(&protocol))]
}

/// The repository root (the parent of the schema crate).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Every generated file: the JSON Schema, the TypeScript declarations and the Python types, each
/// with its path relative to the repository root.
pub fn generated_files() -> Vec<(PathBuf, String)> {
    let mut files =
        vec![(Path::new("schema/generated").join(crate::schema::SCHEMA_FILE), crate::schema::protocol_schema_text())];
    files.extend(client_files().into_iter().map(|(path, text)| (PathBuf::from(path), text)));
    files
}

/// Writes every generated file into `dir` (created when missing), under its own file name
/// (`appserver-protocol.schema.json`, `protocol.ts`, `protocol.py`): what `appserver schema
/// --out DIR` does. Returns the paths written.
pub fn write_into(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (relative, text) in generated_files() {
        let path = dir.join(relative.file_name().unwrap_or_default());
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

/// A wire type, as far as a client's type system needs it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// Any JSON value (a schema of `true`, or one that only describes).
    Unknown,
    /// A named type from `$defs`.
    Ref(String),
    /// A single JSON literal (`const`, or one member of an `enum`).
    Literal(Value),
    Str,
    /// Every JSON number, integers included: clients use their ordinary number type.
    Number,
    Integer,
    Bool,
    Null,
    Array(Box<Ty>),
    /// An object keyed by arbitrary strings.
    Map(Box<Ty>),
    Object(Object),
    Union(Vec<Ty>),
}

/// An object with named fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    /// Not in `required`: the key may be absent.
    pub optional: bool,
    pub doc: Option<String>,
}

/// A named type of `$defs`.
#[derive(Debug, Clone)]
pub struct Definition {
    pub name: String,
    pub doc: Option<String>,
    pub ty: Ty,
}

/// One method of a listing; `result` is `None` for notifications.
#[derive(Debug, Clone)]
pub struct MethodType {
    pub method: String,
    pub params: Ty,
    pub result: Option<Ty>,
}

/// The whole protocol as types.
#[derive(Debug, Clone)]
pub struct Protocol {
    pub version: String,
    pub definitions: Vec<Definition>,
    pub client_requests: Vec<MethodType>,
    pub client_notifications: Vec<MethodType>,
    pub server_notifications: Vec<MethodType>,
    pub server_requests: Vec<MethodType>,
}

impl Protocol {
    /// Reads the generated schema document.
    pub fn from_schema(schema: &Value) -> Protocol {
        let empty = Map::new();
        let defs = schema["$defs"].as_object().unwrap_or(&empty);
        let definitions =
            defs.iter().map(|(name, s)| Definition { name: name.clone(), doc: doc(s), ty: ty_of(s) }).collect();
        let listing = |key: &str| -> Vec<MethodType> {
            schema[key]
                .as_object()
                .unwrap_or(&empty)
                .iter()
                .map(|(method, entry)| MethodType {
                    method: method.clone(),
                    params: ty_of(&entry["params"]),
                    result: entry.get("result").map(ty_of),
                })
                .collect()
        };
        Protocol {
            version: schema["protocolVersion"].as_str().unwrap_or_default().to_owned(),
            definitions,
            client_requests: listing("clientRequests"),
            client_notifications: listing("clientNotifications"),
            server_notifications: listing("serverNotifications"),
            server_requests: listing("serverRequests"),
        }
    }
}

fn doc(schema: &Value) -> Option<String> {
    schema.get("description").and_then(Value::as_str).map(str::to_owned)
}

/// The type a schema describes.
pub fn ty_of(schema: &Value) -> Ty {
    let Some(obj) = schema.as_object() else { return Ty::Unknown };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        return Ty::Ref(r.rsplit('/').next().unwrap_or(r).to_owned());
    }
    if let Some(c) = obj.get("const") {
        return Ty::Literal(c.clone());
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        return union(values.iter().cloned().map(Ty::Literal).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = obj.get(key).and_then(Value::as_array) {
            let base = object_fields(obj);
            return union(variants.iter().map(|v| with_base(&base, ty_of(v))).collect());
        }
    }
    match obj.get("type") {
        Some(Value::String(t)) => ty_of_type(t, obj),
        Some(Value::Array(types)) => {
            union(types.iter().filter_map(Value::as_str).map(|t| ty_of_type(t, obj)).collect())
        }
        _ => Ty::Unknown,
    }
}

fn ty_of_type(t: &str, obj: &Map<String, Value>) -> Ty {
    match t {
        "string" => Ty::Str,
        "integer" => Ty::Integer,
        "number" => Ty::Number,
        "boolean" => Ty::Bool,
        "null" => Ty::Null,
        "array" => Ty::Array(Box::new(obj.get("items").map(ty_of).unwrap_or(Ty::Unknown))),
        "object" => {
            let fields = object_fields(obj);
            match (fields.is_empty(), obj.get("additionalProperties")) {
                (true, Some(extra)) => Ty::Map(Box::new(ty_of(extra))),
                (true, None) if obj.get("properties").is_none() => Ty::Map(Box::new(Ty::Unknown)),
                _ => Ty::Object(Object { fields }),
            }
        }
        _ => Ty::Unknown,
    }
}

fn object_fields(obj: &Map<String, Value>) -> Vec<Field> {
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = obj.get("properties").and_then(Value::as_object) else { return Vec::new() };
    // Required fields first (in `required` order, which is the Rust field order), then the rest.
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| required.iter().position(|r| r == n).unwrap_or(usize::MAX));
    names
        .into_iter()
        .map(|name| Field {
            name: name.clone(),
            ty: ty_of(&props[name]),
            optional: !required.contains(&name.as_str()),
            doc: doc(&props[name]),
        })
        .collect()
}

/// A variant of a tagged union, with the fields every variant shares prepended.
fn with_base(base: &[Field], variant: Ty) -> Ty {
    match variant {
        Ty::Object(Object { fields }) if !base.is_empty() => {
            let mut all = base.to_vec();
            all.extend(fields.into_iter().filter(|f| !base.iter().any(|b| b.name == f.name)));
            Ty::Object(Object { fields: all })
        }
        other => other,
    }
}

fn union(mut tys: Vec<Ty>) -> Ty {
    tys.dedup();
    if tys.len() == 1 { tys.remove(0) } else { Ty::Union(tys) }
}

/// The `type` literal of a tagged-union variant (`"userMessage"`), for naming it.
pub fn variant_tag(object: &Object) -> Option<&str> {
    object.fields.iter().find(|f| f.name == "type").and_then(|f| match &f.ty {
        Ty::Literal(Value::String(s)) => Some(s.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed TypeScript and Python declarations must match the Rust types. Regenerate with
    /// `cargo run -p appserver-protocol --bin appserver-schema`.
    #[test]
    fn committed_client_types_are_current() {
        for (relative, content) in client_files() {
            let path = repository_root().join(relative);
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == content,
                "{} is out of date: run `cargo run -p appserver-protocol --bin appserver-schema`",
                path.display()
            );
        }
    }

    #[test]
    fn integers_are_plain_numbers_in_typescript() {
        let (_, ts) = &client_files()[0];
        assert!(!ts.contains("bigint"));
        assert!(ts.contains("export interface ClientRequestMap"));
        assert!(ts.contains("\"turn/start\": { params: TurnStartParams; result: TurnResult }"));
    }
}
