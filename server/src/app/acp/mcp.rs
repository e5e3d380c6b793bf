//! The MCP servers an editor gives a session (`session/new` / `session/load`'s `mcpServers`, which
//! ACP says every agent must support over stdio): translated to appserver's definitions — stdio
//! `{name, command, args, env: [{name, value}]}` and, as `mcpCapabilities.http` advertises, HTTP
//! `{type: "http", name, url, headers: [{name, value}]}` as `streamableHttp` — and connected for
//! the session's thread with `ext/acp/session/mcpServers`, for as long as this bridge's
//! connection lasts (the server disconnects them when it closes). SSE servers are refused (not
//! advertised).

use serde_json::{Map, Value, json};

/// A server name as a definition takes it (letters, digits, `-`, `_`, `.`; 1 to 64).
fn name_of(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(64)
        .collect();
    if clean.is_empty() { "mcp".to_owned() } else { clean }
}

/// `[{name, value}]` as a map.
fn pairs(list: Option<&Value>) -> Map<String, Value> {
    let items = list.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    items
        .iter()
        .filter_map(|p| {
            Some((p.get("name")?.as_str()?.to_owned(), Value::String(p.get("value")?.as_str()?.to_owned())))
        })
        .collect()
}

/// The definitions of an ACP request's `mcpServers`; `Err` says which one is not supported.
pub(crate) fn definitions(params: &Value) -> Result<Vec<Value>, String> {
    let servers = params.get("mcpServers").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let name = name_of(server.get("name").and_then(Value::as_str).unwrap_or_default());
        let definition = match server.get("type").and_then(Value::as_str) {
            None | Some("stdio") => {
                let Some(command) = server.get("command").and_then(Value::as_str) else {
                    return Err(format!("mcpServers[{i}].command: required for a stdio server"));
                };
                let mut definition = json!({ "name": name, "transport": "stdio", "command": command,
                    "args": server.get("args").cloned().unwrap_or_else(|| json!([])) });
                let env = pairs(server.get("env"));
                if !env.is_empty() {
                    definition["env"] = Value::Object(env);
                }
                definition
            }
            Some("http") => {
                let url = server.get("url").and_then(Value::as_str).unwrap_or_default();
                let mut definition = json!({ "name": name, "transport": "streamableHttp", "url": url });
                let headers = pairs(server.get("headers"));
                if !headers.is_empty() {
                    definition["httpHeaders"] = Value::Object(headers);
                }
                definition
            }
            Some(other) => {
                return Err(format!("mcpServers[{i}]: `{other}` servers are not supported (stdio and http are)"));
            }
        };
        out.push(definition);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_http_servers_become_definitions() {
        let params = json!({ "mcpServers": [
            { "name": "my files", "command": "/bin/fs", "args": ["--root", "/p"], "env": [{ "name": "K", "value": "v" }] },
            { "type": "http", "name": "docs", "url": "https://x/mcp", "headers": [{ "name": "Authorization", "value": "Bearer t" }] },
        ] });
        let defs = definitions(&params).unwrap();
        assert_eq!(
            defs[0],
            json!({ "name": "my-files", "transport": "stdio", "command": "/bin/fs",
            "args": ["--root", "/p"], "env": { "K": "v" } })
        );
        assert_eq!(defs[1]["transport"], "streamableHttp");
        assert_eq!(defs[1]["httpHeaders"]["Authorization"], "Bearer t");
        assert!(definitions(&json!({ "mcpServers": [{ "type": "sse", "name": "s", "url": "u" }] })).is_err());
        assert!(definitions(&json!({ "mcpServers": [] })).unwrap().is_empty());
    }
}
