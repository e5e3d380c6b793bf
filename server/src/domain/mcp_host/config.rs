//! The workspace's MCP server definitions: validated (section 22.2's rules, and no secret in
//! plain config) and kept in `<workspace>/.appserver/mcp.json` (`{"servers": [...]}`, written
//! whole to a temporary file and renamed over the old one).

use std::path::{Path, PathBuf};

use appserver_protocol::{McpServerConfig, McpTransportKind};
use serde::{Deserialize, Serialize};

use super::McpHostError;

/// Most servers a workspace may define.
pub(crate) const MAX_SERVERS: usize = 64;
/// Longest server name.
const MAX_NAME: usize = 64;
/// Header names whose value is a credential: never stored in plain config.
const SECRET_HEADERS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "x-api-key"];

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    servers: Vec<McpServerConfig>,
}

/// `<workspace>/.appserver/mcp.json`.
pub(crate) fn path(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("mcp.json")
}

/// The definitions kept for `workspace` (none when the file does not exist; a file that does
/// not parse is an error, so it is never overwritten unread).
pub(crate) fn load(workspace: &Path) -> Result<Vec<McpServerConfig>, McpHostError> {
    let path = path(workspace);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(McpHostError::Storage(format!("{}: {e}", path.display()))),
    };
    let file: File = serde_json::from_str(&text)
        .map_err(|e| McpHostError::Storage(format!("{}: not a list of MCP servers: {e}", path.display())))?;
    Ok(file.servers)
}

/// Writes the definitions (the workspace-origin ones) for `workspace`.
pub(crate) fn save(workspace: &Path, servers: &[McpServerConfig]) -> Result<(), McpHostError> {
    let path = path(workspace);
    let file = File { servers: servers.to_vec() };
    let text = serde_json::to_string_pretty(&file).map_err(|e| McpHostError::Storage(e.to_string()))?;
    let fail = |e: std::io::Error| McpHostError::Storage(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let temporary = path.with_extension(format!("json.{:08x}", fastrand::u32(..)));
    std::fs::write(&temporary, text).map_err(fail)?;
    std::fs::rename(&temporary, &path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        fail(e)
    })
}

/// Checks a definition for its transport (section 22.2's validation rules), and that it holds no
/// credential in plain text; the error names the field.
pub(crate) fn validate(server: &McpServerConfig) -> Result<(), McpHostError> {
    let invalid = |field: &str, why: &str| Err(McpHostError::Validation(format!("{field}: {why}")));
    let name = server.name.as_str();
    if name.is_empty()
        || name.len() > MAX_NAME
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        return invalid("name", "1 to 64 letters, digits, `-`, `_` or `.`");
    }
    if server.origin.as_ref().is_some_and(|o| o.kind != "workspace") || server.read_only == Some(true) {
        return invalid("origin", "only workspace-origin servers are written");
    }
    let has = |present: bool, field: &str| if present { Some(field.to_owned()) } else { None };
    match server.transport {
        McpTransportKind::Stdio => {
            if server.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
                return invalid("command", "required for the stdio transport");
            }
            let extra = [
                has(server.url.is_some(), "url"),
                has(server.bearer_token_env_var.is_some(), "bearerTokenEnvVar"),
                has(server.http_headers.is_some(), "httpHeaders"),
                has(server.env_http_headers.is_some(), "envHttpHeaders"),
            ];
            if let Some(field) = extra.into_iter().flatten().next() {
                return invalid(&field, "not allowed for the stdio transport");
            }
        }
        McpTransportKind::StreamableHttp => {
            let url = server.url.as_deref().unwrap_or_default();
            if !(url.starts_with("http://") || url.starts_with("https://")) || reqwest::Url::parse(url).is_err() {
                return invalid("url", "an http(s) URL is required for the streamableHttp transport");
            }
            let extra = [
                has(server.command.is_some(), "command"),
                has(server.args.is_some(), "args"),
                has(server.env.is_some(), "env"),
                has(server.env_vars.is_some(), "envVars"),
                has(server.cwd.is_some(), "cwd"),
            ];
            if let Some(field) = extra.into_iter().flatten().next() {
                return invalid(&field, "not allowed for the streamableHttp transport");
            }
            for header in server.http_headers.iter().flat_map(|h| h.keys()) {
                if SECRET_HEADERS.contains(&header.to_ascii_lowercase().as_str()) {
                    return invalid(
                        &format!("httpHeaders.{header}"),
                        "a credential is never stored in the config: name an environment variable \
                         (bearerTokenEnvVar, envHttpHeaders)",
                    );
                }
            }
        }
    }
    for (field, value) in
        [("startupTimeoutSec", server.startup_timeout_sec), ("toolTimeoutSec", server.tool_timeout_sec)]
    {
        if value.is_some_and(|v| !(v > 0.0 && v <= 3600.0)) {
            return invalid(field, "seconds, more than 0 and at most 3600");
        }
    }
    Ok(())
}

/// Checks a definition an ACP editor gave a session: as [`validate`], except that its headers
/// may carry a credential (it is never written anywhere: the servers last as long as the session).
pub(crate) fn validate_session(server: &McpServerConfig) -> Result<(), McpHostError> {
    let mut checked = server.clone();
    checked.http_headers = None;
    validate(&checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str) -> McpServerConfig {
        serde_json::from_value(serde_json::json!({ "name": name, "transport": "stdio", "command": "x" })).unwrap()
    }

    #[test]
    fn each_transport_allows_only_its_fields_and_no_plain_secret() {
        let validate = |server: &McpServerConfig| {
            validate(server).map_err(|e| e.to_string().trim_start_matches("invalid MCP server: ").to_owned())
        };
        assert!(validate(&stdio("fs")).is_ok());
        let mut bad = stdio("fs");
        bad.url = Some("http://x".into());
        assert_eq!(validate(&bad).unwrap_err(), "url: not allowed for the stdio transport");
        assert!(validate(&stdio("a b")).unwrap_err().starts_with("name: "));
        let http: McpServerConfig = serde_json::from_value(serde_json::json!({
            "name": "docs", "transport": "streamableHttp", "url": "https://example.com/mcp",
            "bearerTokenEnvVar": "DOCS_TOKEN", "envHttpHeaders": { "X-Key": "DOCS_KEY" } }))
        .unwrap();
        assert!(validate(&http).is_ok());
        let mut leaky = http.clone();
        leaky.http_headers = Some([("Authorization".to_owned(), "Bearer s3cret".to_owned())].into());
        let err = validate(&leaky).unwrap_err();
        assert!(err.starts_with("httpHeaders.Authorization: a credential is never stored"), "{err}");
        let mut no_url = http;
        no_url.url = Some("ftp://x".into());
        assert!(validate(&no_url).unwrap_err().starts_with("url: "));
    }

    #[test]
    fn definitions_are_kept_in_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        save(dir.path(), &[stdio("fs")]).unwrap();
        assert_eq!(load(dir.path()).unwrap(), vec![stdio("fs")]);
        std::fs::write(path(dir.path()), "{").unwrap();
        assert!(load(dir.path()).is_err(), "a broken file is not read as empty");
    }
}
