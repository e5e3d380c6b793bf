//! The aai.json descriptor file (the AAI spec's shape): `schema_version`, `app {id, name,
//! description}`, `execution {type, …}` and `tools [{name, description, parameters, returns}]`,
//! read into a manifest (tools become commands) and how to run the app. The AAI gateway's other
//! published shapes (1.0 without `app`, 1.x camelCase, 2.0 `access`/`exposure`) are read into
//! the same by `versions.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use appserver_protocol::{AppCommandDescriptor, AppManifest};
use serde::Deserialize;
use serde_json::Value;

pub(crate) use super::super::hosts::auth::HttpAuth;

/// Largest descriptor file read.
pub(crate) const MAX_DESCRIPTOR_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Descriptor {
    pub(crate) app: AppInfo,
    pub(crate) execution: Execution,
    #[serde(default)]
    pub(crate) tools: Vec<Tool>,
    /// How long a fetched web descriptor may be served from the cache, in seconds.
    #[serde(default)]
    pub(crate) cache_ttl_secs: Option<u64>,
    /// The AAI spec's place for an `http` app's auth (appserver's is `execution.auth`).
    #[serde(default)]
    pub(crate) auth: Option<HttpAuth>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AppInfo {
    pub(crate) id: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

/// How the app runs: a program the server spawns, or a web service.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Execution {
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        /// Working directory, relative to the workspace (default: the workspace).
        #[serde(default)]
        cwd: Option<String>,
        /// Longest one request may take, in milliseconds (default 5000).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    Http {
        base_url: String,
        #[serde(default)]
        auth: Option<HttpAuth>,
        /// Headers sent with every request (`Notion-Version`, say).
        #[serde(default, alias = "defaultHeaders")]
        default_headers: BTreeMap<String, String>,
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// An MCP server (a 2.0 descriptor's `access`): its tools are the app's commands.
    #[serde(skip)]
    Mcp(McpTransport),
}

/// How an MCP server described by a 2.0 descriptor is reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
        timeout_ms: Option<u64>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        timeout_ms: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) parameters: Option<Value>,
    #[serde(default)]
    pub(crate) returns: Option<Value>,
    /// Whether the tool changes the app's state: only such tools are replayed.
    #[serde(default)]
    pub(crate) state_changing: bool,
    /// HTTP apps: the tool's path under `base_url` (default `/<name>`) and method (default POST).
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default)]
    pub(crate) method: Option<String>,
    /// HTTP apps: headers of this tool's requests, after the default ones.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// HTTP apps: the JSON body, `${param}` standing for a param (`hosts::request`).
    #[serde(default, alias = "bodyTemplate")]
    pub(crate) body_template: Option<Value>,
    /// The AAI 1.0 spelling of `path`, `method`, `headers` and `body_template`.
    #[serde(default)]
    pub(crate) execution: Option<ToolCall>,
}

/// Where an HTTP tool is called.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ToolCall {
    pub(crate) path: String,
    #[serde(default)]
    pub(crate) method: Option<String>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    #[serde(default, alias = "bodyTemplate")]
    pub(crate) body_template: Option<Value>,
}

impl Tool {
    /// The tool's path under `base_url`, when it gives one.
    pub(crate) fn http_path(&self) -> Option<&str> {
        self.path.as_deref().or(self.execution.as_ref().map(|e| e.path.as_str()))
    }

    /// The tool's HTTP method, when it gives one.
    pub(crate) fn http_method(&self) -> Option<&str> {
        self.method.as_deref().or(self.execution.as_ref().and_then(|e| e.method.as_deref()))
    }

    /// The tool's own headers (both spellings).
    pub(crate) fn http_headers(&self) -> impl Iterator<Item = (&String, &String)> {
        self.headers.iter().chain(self.execution.iter().flat_map(|e| e.headers.iter()))
    }

    /// The tool's body template (either spelling).
    pub(crate) fn http_body_template(&self) -> Option<&Value> {
        self.body_template.as_ref().or(self.execution.as_ref().and_then(|e| e.body_template.as_ref()))
    }
}

impl Descriptor {
    #[cfg(test)]
    pub(crate) fn kind(&self) -> &'static str {
        match self.execution {
            Execution::Stdio { .. } => "stdio",
            Execution::Http { .. } => "http",
            Execution::Mcp(_) => "mcp",
        }
    }

    /// The window id the app is registered under.
    pub(crate) fn window_id(&self) -> String {
        format!("aai:{}", self.app.id)
    }

    /// The manifest: the app's id, name and description; its tools as commands (`parameters` is
    /// the params schema). Only the state-changing tools of a stdio app replay: the others, and
    /// every tool of an HTTP app (the service keeps its own state), are `replay: false`.
    pub(crate) fn manifest(&self) -> AppManifest {
        let commands: BTreeMap<String, AppCommandDescriptor> = self
            .tools
            .iter()
            .map(|tool| {
                let command = AppCommandDescriptor {
                    description: tool.description.clone(),
                    params: tool.parameters.clone(),
                    returns: tool.returns.clone(),
                    // A web service keeps its own state: its calls are never repeated.
                    replay: Some(tool.state_changing && matches!(self.execution, Execution::Stdio { .. })),
                    ..Default::default()
                };
                (tool.name.clone(), command)
            })
            .collect();
        AppManifest {
            app_id: self.app.id.clone(),
            name: self.app.name.clone(),
            description: self.app.description.clone(),
            commands,
            ..Default::default()
        }
    }
}

/// The program of a stdio app: a command with a `/` in it is relative to the descriptor's
/// directory; a bare name is looked up in `PATH`.
pub(crate) fn program_path(command: &str, descriptor_dir: &Path) -> PathBuf {
    let path = Path::new(command);
    if path.is_absolute() || !command.contains('/') { path.to_path_buf() } else { descriptor_dir.join(path) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_become_commands_and_only_state_changing_ones_replay() {
        let text = json!({
            "schema_version": "1.0",
            "app": { "id": "com.example.counter", "name": "Counter" },
            "execution": { "type": "stdio", "command": "python3", "args": ["c.py"] },
            "tools": [
                { "name": "increment", "description": "Add one", "state_changing": true,
                  "parameters": { "type": "object" } },
                { "name": "get", "description": "Read" }
            ]
        })
        .to_string();
        let d = Descriptor::parse(&text).unwrap();
        assert_eq!(d.window_id(), "aai:com.example.counter");
        assert_eq!(d.kind(), "stdio");
        let m = d.manifest();
        assert_eq!(m.commands["increment"].replay, Some(true));
        assert_eq!(m.commands["get"].replay, Some(false));
        assert_eq!(m.commands["increment"].params, Some(json!({ "type": "object" })));
    }

    #[test]
    fn errors_name_the_field() {
        let err = Descriptor::parse(r#"{"app":{"id":"a","name":"A"},"execution":{"type":"ftp"}}"#).unwrap_err();
        assert!(err.starts_with("execution"), "{err}");
        let err = Descriptor::parse(r#"{"app":{"id":"","name":"A"},"execution":{"type":"stdio","command":"x"}}"#)
            .unwrap_err();
        assert!(err.starts_with("app.id"), "{err}");
    }
}
