//! Renders the protocol as TypeScript: a declaration per wire type and typed method maps
//! (`ClientRequestMap`, `ServerRequestMap`, notification maps) for the TypeScript SDK.

use std::fmt::Write;

use super::{Field, MethodType, Protocol, Ty};

/// Where the TypeScript SDK keeps the generated file, relative to the repository root.
pub const TS_FILE: &str = "clients/typescript/src/generated/protocol.ts";

/// The generated module's text.
pub fn render(protocol: &Protocol) -> String {
    let mut out = String::new();
    out.push_str(
        "// Wire types of the appserver protocol. Generated from the Rust types by\n\
         // `cargo run -p appserver-protocol --bin appserver-schema`; do not edit.\n\
         /* eslint-disable */\n\n",
    );
    let _ = writeln!(out, "export const PROTOCOL_VERSION = {:?};\n", protocol.version);
    for def in &protocol.definitions {
        doc_comment(&mut out, def.doc.as_deref(), "");
        match &def.ty {
            Ty::Object(obj) => {
                let _ = writeln!(out, "export interface {} {}\n", def.name, object(&obj.fields, ""));
            }
            ty => {
                let rendered = render_ty(ty, "");
                let sep = if rendered.starts_with('\n') { "" } else { " " };
                let _ = writeln!(out, "export type {} ={sep}{rendered};\n", def.name);
            }
        }
    }
    requests(&mut out, "ClientRequestMap", "Requests a client sends: params and result.", &protocol.client_requests);
    notifications(&mut out, "ClientNotificationMap", "Notifications a client sends.", &protocol.client_notifications);
    notifications(&mut out, "ServerNotificationMap", "Notifications the server sends.", &protocol.server_notifications);
    requests(
        &mut out,
        "ServerRequestMap",
        "Requests the server sends to a client: params and the result the client answers with.",
        &protocol.server_requests,
    );
    out.push_str("export type ClientRequestMethod = keyof ClientRequestMap;\n");
    out.push_str("export type ClientNotificationMethod = keyof ClientNotificationMap;\n");
    out.push_str("export type ServerNotificationMethod = keyof ServerNotificationMap;\n");
    out.push_str("export type ServerRequestMethod = keyof ServerRequestMap;\n");
    out
}

fn requests(out: &mut String, name: &str, doc: &str, methods: &[MethodType]) {
    let _ = writeln!(out, "/** {doc} */\nexport interface {name} {{");
    for m in methods {
        let result = m.result.as_ref().map_or_else(|| "void".to_owned(), |r| render_ty(r, "    "));
        let _ = writeln!(out, "  {:?}: {{ params: {}; result: {} }};", m.method, render_ty(&m.params, "    "), result);
    }
    out.push_str("}\n\n");
}

fn notifications(out: &mut String, name: &str, doc: &str, methods: &[MethodType]) {
    let _ = writeln!(out, "/** {doc} The value is the params. */\nexport interface {name} {{");
    for m in methods {
        let _ = writeln!(out, "  {:?}: {};", m.method, render_ty(&m.params, "  "));
    }
    out.push_str("}\n\n");
}

fn doc_comment(out: &mut String, doc: Option<&str>, indent: &str) {
    let Some(doc) = doc else { return };
    let lines: Vec<&str> = doc.lines().collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0].replace("*/", "*\\/"));
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in lines {
        let _ = writeln!(out, "{indent} * {}", line.replace("*/", "*\\/"));
    }
    let _ = writeln!(out, "{indent} */");
}

fn object(fields: &[Field], indent: &str) -> String {
    if fields.is_empty() {
        return "{}".to_owned();
    }
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for f in fields {
        doc_comment(&mut out, f.doc.as_deref(), &inner);
        let optional = if f.optional { "?" } else { "" };
        let _ = writeln!(out, "{inner}{}{optional}: {};", key(&f.name), render_ty(&f.ty, &inner));
    }
    out.push_str(indent);
    out.push('}');
    out
}

fn key(name: &str) -> String {
    let ident = name
        .chars()
        .enumerate()
        .all(|(i, c)| c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    if ident && !name.is_empty() { name.to_owned() } else { format!("{name:?}") }
}

/// A type expression. Integers are `number`: every integer on this wire fits a double.
fn render_ty(ty: &Ty, indent: &str) -> String {
    match ty {
        Ty::Unknown => "unknown".to_owned(),
        Ty::Ref(name) => name.clone(),
        Ty::Literal(v) => v.to_string(),
        Ty::Str => "string".to_owned(),
        Ty::Number | Ty::Integer => "number".to_owned(),
        Ty::Bool => "boolean".to_owned(),
        Ty::Null => "null".to_owned(),
        Ty::Array(item) => match **item {
            Ty::Union(_) => format!("Array<{}>", render_ty(item, indent)),
            _ => format!("{}[]", render_ty(item, indent)),
        },
        Ty::Map(value) => format!("{{ [key: string]: {} }}", render_ty(value, indent)),
        Ty::Object(obj) => object(&obj.fields, indent),
        Ty::Union(tys) => {
            if tys.iter().any(|t| matches!(t, Ty::Object(_))) {
                let inner = format!("{indent}  ");
                tys.iter().map(|t| format!("\n{inner}| {}", render_ty(t, &inner))).collect()
            } else {
                tys.iter().map(|t| render_ty(t, indent)).collect::<Vec<_>>().join(" | ")
            }
        }
    }
}
