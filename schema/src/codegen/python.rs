//! Renders the protocol as a Python module of `TypedDict`s (one per wire object; the variants of
//! a tagged union get their own, named after their tag) plus method tables, for the Python SDK.

use std::fmt::Write;

use serde_json::Value;

use super::{Field, MethodType, Object, Protocol, Ty, variant_tag};

/// Where the Python SDK keeps the generated module, relative to the repository root.
pub const PY_FILE: &str = "clients/python/appserver_client/protocol.py";

/// The generated module's text.
pub fn render(protocol: &Protocol) -> String {
    let mut out = String::new();
    out.push_str(
        "\"\"\"Wire types of the appserver protocol.\n\n\
         Generated from the Rust types by `cargo run -p appserver-protocol --bin appserver-schema`;\n\
         do not edit. Integers are `int`, other numbers `float`.\n\"\"\"\n\n\
         # ruff: noqa\n\
         from typing import Any, Dict, List, Literal, NotRequired, Optional, Tuple, TypedDict, Union\n\n",
    );
    let _ = writeln!(out, "PROTOCOL_VERSION = {:?}\n", protocol.version);
    for def in &protocol.definitions {
        let mut hoisted = Vec::new();
        let body = match &def.ty {
            Ty::Object(obj) => typed_dict(&def.name, obj),
            ty => {
                let expr = render_ty(ty, &def.name, &mut hoisted);
                format!("{} = {expr}\n", def.name)
            }
        };
        for (name, obj) in &hoisted {
            out.push_str(&typed_dict(name, obj));
            out.push('\n');
        }
        if let Some(doc) = &def.doc {
            for line in doc.lines() {
                let _ = writeln!(out, "# {line}");
            }
        }
        out.push_str(&body);
        out.push('\n');
    }
    table(&mut out, "CLIENT_REQUESTS", "ClientRequestMethod", &protocol.client_requests);
    table(&mut out, "CLIENT_NOTIFICATIONS", "ClientNotificationMethod", &protocol.client_notifications);
    table(&mut out, "SERVER_NOTIFICATIONS", "ServerNotificationMethod", &protocol.server_notifications);
    table(&mut out, "SERVER_REQUESTS", "ServerRequestMethod", &protocol.server_requests);
    typed_requests(&mut out, &protocol.client_requests);
    out
}

/// `class ClientRequests`: one typed coroutine per client request (`thread/start` ->
/// `thread_start(params) -> ThreadResult`), over the untyped `request` the client implements.
fn typed_requests(out: &mut String, methods: &[MethodType]) {
    out.push_str(
        "class ClientRequests:\n    \"\"\"One typed coroutine per client request; `AppServerClient` implements `request`.\"\"\"\n\n\
         \x20   async def request(self, method: ClientRequestMethod, params: Any, timeout: Optional[float] = None) -> Any:\n\
         \x20       raise NotImplementedError\n",
    );
    for m in methods {
        let name = m.method.replace('/', "_");
        let result = m.result.as_ref().map_or_else(|| "None".to_owned(), |r| format!("{:?}", type_name(r)));
        let _ = write!(
            out,
            "\n    async def {name}(self, params: {:?}, timeout: Optional[float] = None) -> {result}:\n\
             \x20       return await self.request({:?}, params, timeout)\n",
            type_name(&m.params),
            m.method
        );
    }
}

/// `NAME = {"method": ("Params", "Result" or None)}` and a `Literal` of the method names.
fn table(out: &mut String, name: &str, literal: &str, methods: &[MethodType]) {
    let names: Vec<String> = methods.iter().map(|m| format!("{:?}", m.method)).collect();
    let _ = writeln!(out, "{literal} = Literal[{}]\n", names.join(", "));
    let _ = writeln!(out, "# method -> (params type name, result type name or None)");
    let _ = writeln!(out, "{name}: Dict[str, Tuple[str, Optional[str]]] = {{");
    for m in methods {
        let result = m.result.as_ref().map_or_else(|| "None".to_owned(), |r| format!("{:?}", type_name(r)));
        let _ = writeln!(out, "    {:?}: ({:?}, {result}),", m.method, type_name(&m.params));
    }
    out.push_str("}\n\n");
}

fn type_name(ty: &Ty) -> String {
    match ty {
        Ty::Ref(name) => name.clone(),
        other => render_ty(other, "", &mut Vec::new()),
    }
}

fn typed_dict(name: &str, obj: &Object) -> String {
    let mut hoisted = Vec::new();
    let mut fields = String::new();
    for Field { name: field, ty, optional, doc } in &obj.fields {
        let nested = format!("{name}{}", pascal(field));
        let mut expr = render_ty(ty, &nested, &mut hoisted);
        if *optional {
            expr = format!("NotRequired[{expr}]");
        }
        let comment = doc.as_deref().and_then(|d| d.lines().next()).map(|d| format!("  # {d}")).unwrap_or_default();
        let _ = writeln!(fields, "    {field:?}: {expr},{comment}");
    }
    let mut out = String::new();
    for (n, o) in &hoisted {
        out.push_str(&typed_dict(n, o));
        out.push('\n');
    }
    if obj.fields.is_empty() {
        let _ = writeln!(out, "{name} = TypedDict({name:?}, {{}})");
    } else {
        let _ = writeln!(out, "{name} = TypedDict({name:?}, {{\n{fields}}})");
    }
    out
}

fn pascal(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// A type expression; inline objects are hoisted into `hoisted` under names derived from `context`.
fn render_ty(ty: &Ty, context: &str, hoisted: &mut Vec<(String, Object)>) -> String {
    match ty {
        Ty::Unknown => "Any".to_owned(),
        Ty::Ref(name) => format!("{name:?}"),
        Ty::Literal(v) => format!("Literal[{}]", literal(v)),
        Ty::Str => "str".to_owned(),
        Ty::Integer => "int".to_owned(),
        Ty::Number => "float".to_owned(),
        Ty::Bool => "bool".to_owned(),
        Ty::Null => "None".to_owned(),
        Ty::Array(item) => format!("List[{}]", render_ty(item, context, hoisted)),
        Ty::Map(value) => format!("Dict[str, {}]", render_ty(value, context, hoisted)),
        Ty::Object(obj) => {
            let name = hoist_name(context, obj, hoisted);
            hoisted.push((name.clone(), obj.clone()));
            format!("{name:?}")
        }
        Ty::Union(tys) => {
            let nullable = tys.contains(&Ty::Null);
            let rest: Vec<&Ty> = tys.iter().filter(|t| **t != Ty::Null).collect();
            let inner = if !rest.is_empty() && rest.iter().all(|t| matches!(t, Ty::Literal(_))) {
                let values: Vec<String> =
                    rest.iter().filter_map(|t| if let Ty::Literal(v) = t { Some(literal(v)) } else { None }).collect();
                format!("Literal[{}]", values.join(", "))
            } else {
                let parts: Vec<String> = rest.iter().map(|t| render_ty(t, context, hoisted)).collect();
                if parts.len() == 1 { parts[0].clone() } else { format!("Union[{}]", parts.join(", ")) }
            };
            if nullable { format!("Optional[{inner}]") } else { inner }
        }
    }
}

fn hoist_name(context: &str, obj: &Object, hoisted: &[(String, Object)]) -> String {
    let base = match variant_tag(obj) {
        Some(tag) => format!("{context}{}", pascal(tag)),
        None => context.to_owned(),
    };
    let mut name = base.clone();
    let mut n = 2;
    while hoisted.iter().any(|(h, _)| *h == name) {
        name = format!("{base}{n}");
        n += 1;
    }
    name
}

fn literal(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}
