//! A plugin's MCP servers: read from its MCP file (`{"mcpServers": {...}}` or a direct map of
//! name to server; DotCraft's `arguments`, `environmentVariables` and `headers` or the common
//! `args`, `env` and `httpHeaders`), checked as workspace servers are (no credential in plain
//! config: `bearerTokenEnvVar` / `envHttpHeaders` name environment variables), named
//! `{pluginId}:{name}`, their relative `command` and `cwd` resolved in the plugin's folder.
//!
//! None runs because it was installed: each is pinned when the workspace's owner approves it
//! (`plugin/mcp/approve`), as a descriptor app's program is (`apps::descriptors::pins`, same
//! table): program (or URL), arguments, working directory, a SHA-256 of the server's definition
//! and, for a program, of the plugin's whole folder (the code it runs). A server whose pin is
//! missing or differs is listed but not started, and the pin is checked again before each
//! start of its program (`service.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use appserver_protocol::{McpServerConfig, McpServerOrigin, McpTransportKind};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::infra::store::DescriptorPin;

/// Most MCP servers one plugin declares.
pub(crate) const MAX_PLUGIN_SERVERS: usize = 16;
const MAX_MCP_FILE_BYTES: u64 = 64 * 1024;

fn strings(value: &Value, field: &str) -> Result<Vec<String>, String> {
    let list = value.as_array().ok_or_else(|| format!("{field}: must be a list of strings"))?;
    list.iter()
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("{field}: must be a list of strings")))
        .collect()
}

fn map(value: &Value, field: &str) -> Result<BTreeMap<String, String>, String> {
    let object = value.as_object().ok_or_else(|| format!("{field}: must be an object of strings"))?;
    object
        .iter()
        .map(|(k, v)| {
            v.as_str().map(|s| (k.clone(), s.to_owned())).ok_or_else(|| format!("{field}.{k}: must be a string"))
        })
        .collect()
}

/// The first of `names` present in `object`.
fn field<'a>(object: &'a Map<String, Value>, names: &[&'a str]) -> Option<(&'a str, &'a Value)> {
    names.iter().find_map(|n| object.get(*n).filter(|v| !v.is_null()).map(|v| (*n, v)))
}

/// One declared server, as a definition named `name` (not yet prefixed).
fn server(name: &str, value: &Value) -> Result<McpServerConfig, String> {
    let at = |f: &str| format!("mcpServers.{name}.{f}");
    let object = value.as_object().ok_or_else(|| format!("mcpServers.{name}: must be an object"))?;
    let text = |names: &[&str]| -> Result<Option<String>, String> {
        match field(object, names) {
            Some((_, Value::String(s))) => Ok(Some(s.clone())),
            Some((f, _)) => Err(format!("{}: must be a string", at(f))),
            None => Ok(None),
        }
    };
    let url = text(&["url"])?;
    let transport = match text(&["transport", "type"])?.as_deref() {
        Some("stdio") => McpTransportKind::Stdio,
        Some("streamableHttp" | "http" | "streamable-http") => McpTransportKind::StreamableHttp,
        Some(other) => return Err(format!("{}: `{other}` is not stdio or streamableHttp", at("transport"))),
        None if url.is_some() => McpTransportKind::StreamableHttp,
        None => McpTransportKind::Stdio,
    };
    let list = |names: &[&str]| field(object, names).map(|(f, v)| strings(v, &at(f))).transpose();
    let pairs = |names: &[&str]| field(object, names).map(|(f, v)| map(v, &at(f))).transpose();
    let seconds = |f: &str| object.get(f).and_then(Value::as_f64);
    Ok(McpServerConfig {
        name: name.to_owned(),
        enabled: object.get("enabled").and_then(Value::as_bool).unwrap_or(true),
        transport,
        command: text(&["command"])?,
        args: list(&["arguments", "args"])?,
        env: pairs(&["environmentVariables", "env"])?,
        env_vars: list(&["envVars"])?,
        cwd: text(&["cwd"])?,
        url,
        bearer_token_env_var: text(&["bearerTokenEnvVar"])?,
        http_headers: pairs(&["headers", "httpHeaders"])?,
        env_http_headers: pairs(&["envHttpHeaders"])?,
        startup_timeout_sec: seconds("startupTimeoutSec"),
        tool_timeout_sec: seconds("toolTimeoutSec"),
        origin: None,
        read_only: None,
    })
}

/// Resolves a relative program (`./run.sh`) and working directory inside `root`.
fn confine(mut config: McpServerConfig, root: &Path) -> Result<McpServerConfig, String> {
    let at = |f: &str| format!("mcpServers.{}.{f}", config.name);
    if config.transport == McpTransportKind::Stdio {
        let cwd = match config.cwd.as_deref() {
            None => root.to_path_buf(),
            Some(dir) if Path::new(dir).is_absolute() || dir.starts_with('\\') => {
                return Err(format!("{}: `{dir}` must be a folder inside the plugin", at("cwd")));
            }
            Some(dir) => super::manifest::relative(root, &at("cwd"), &format!("./{}", dir.trim_start_matches("./")))?,
        };
        config.cwd = Some(cwd.display().to_string());
        if let Some(command) = config.command.as_deref().filter(|c| c.starts_with("./")) {
            config.command = Some(super::manifest::relative(root, &at("command"), command)?.display().to_string());
        }
    }
    Ok(config)
}

/// The servers declared in the MCP file at `file`, of the plugin `id` (folder `root`), named
/// `{id}:{name}`; the error names the field.
pub(crate) fn read(file: &Path, root: &Path, id: &str, display_name: &str) -> Result<Vec<McpServerConfig>, String> {
    let meta = std::fs::symlink_metadata(file).map_err(|_| format!("mcpServers: `{}` is missing", file.display()))?;
    if !meta.is_file() || meta.len() > MAX_MCP_FILE_BYTES {
        return Err(format!("mcpServers: not a file of at most {MAX_MCP_FILE_BYTES} bytes"));
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("mcpServers: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("mcpServers: not JSON: {e}"))?;
    let servers = value.get("mcpServers").unwrap_or(&value);
    let servers = servers.as_object().ok_or("mcpServers: must be an object of servers")?;
    if servers.len() > MAX_PLUGIN_SERVERS {
        return Err(format!("mcpServers: at most {MAX_PLUGIN_SERVERS} servers"));
    }
    let mut out = Vec::new();
    for (name, value) in servers {
        let config = confine(server(name, value)?, root)?;
        crate::domain::mcp_host::config::validate(&config)
            .map_err(|e| format!("mcpServers.{name}: {}", e.to_string().trim_start_matches("invalid MCP server: ")))?;
        out.push(McpServerConfig {
            name: format!("{id}:{name}"),
            origin: Some(McpServerOrigin {
                kind: "plugin".into(),
                plugin_id: Some(id.to_owned()),
                plugin_display_name: Some(display_name.to_owned()),
                declared_name: Some(name.clone()),
            }),
            read_only: Some(true),
            ..config
        });
    }
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What approving `config` (a server of the plugin in `root`, declared in `file`) pins now: its
/// definition, and — for a program — the plugin's whole folder, whatever file of it the program
/// runs (`python3 server.py`; `apps::hosts::code`). A URL runs no code of the plugin's.
pub(crate) fn pin_for(config: &McpServerConfig, root: &Path, file: &Path) -> DescriptorPin {
    let declared = config.origin.as_ref().and_then(|o| o.declared_name.clone()).unwrap_or_default();
    let program = config.command.clone().or_else(|| config.url.clone()).unwrap_or_default();
    let program_sha256 = match config.transport {
        McpTransportKind::Stdio => crate::domain::apps::hosts::code::tree_sha256(root),
        McpTransportKind::StreamableHttp => None,
    };
    let definition = serde_json::to_string(config).unwrap_or_default();
    DescriptorPin {
        path: format!("{}#{declared}", file.display()),
        window_id: format!("mcp:{}", config.name),
        program,
        args: config.args.clone().unwrap_or_default(),
        cwd: config.cwd.clone().unwrap_or_default(),
        descriptor_sha256: hex(&Sha256::digest(definition.as_bytes())),
        program_sha256,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_named_confined_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers":{"review":{"command":"./bin/run","arguments":["-v"],"env":{"A":"1"}}}}"#,
        )
        .unwrap();
        let servers = read(&file, dir.path(), "tools", "Tools").unwrap();
        assert_eq!(servers[0].name, "tools:review");
        assert_eq!(servers[0].command.as_deref(), Some(dir.path().join("bin/run").to_str().unwrap()));
        assert_eq!(servers[0].cwd.as_deref(), Some(dir.path().to_str().unwrap()));
        std::fs::write(&file, r#"{"x":{"url":"https://e.com/mcp","headers":{"Authorization":"Bearer s"}}}"#).unwrap();
        let err = read(&file, dir.path(), "tools", "Tools").unwrap_err();
        assert!(err.starts_with("mcpServers.x: httpHeaders.Authorization"), "{err}");
        std::fs::write(&file, r#"{"x":{"command":"./../../bin/sh"}}"#).unwrap();
        assert!(read(&file, dir.path(), "tools", "Tools").unwrap_err().starts_with("mcpServers.x.command"));
        std::fs::write(&file, r#"{"x":{"command":"sh","cwd":"/"}}"#).unwrap();
        assert!(read(&file, dir.path(), "tools", "Tools").unwrap_err().starts_with("mcpServers.x.cwd"));
    }
}
