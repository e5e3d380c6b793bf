//! The other published shapes of aai.json (those of the AAI gateway, `gybob/aai-gateway`), read
//! into the one [`Descriptor`] the server runs:
//!
//! - **1.0 without `app`** (the gateway's first examples): `schema_version`, `appId`, `name`,
//!   `description`, `platforms.<os> {automation, tools}`;
//! - **1.x camelCase**: `schemaVersion`, `app {id, name, defaultLang, description}` where `name`
//!   is a string or a map of localized names, `execution {type, baseUrl | command, args, timeout}`,
//!   `tools [{name, description, parameters, execution {path, method}}]`;
//! - **2.0**: `schemaVersion: "2.0"`, `app {name: {default, …}}` (no id: the app's folder names
//!   it), `access {protocol, config}`, `exposure {summary, keywords}`.
//!
//! What appserver cannot run (AppleScript, Apple Events, D-Bus, COM, macOS IPC, ACP agents,
//! skills, CLIs) is refused with an error naming the field and saying what does run.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::format::{AppInfo, Descriptor, Execution, McpTransport, Tool, ToolCall};

/// Parsing: every published shape is read into the one [`Descriptor`].
impl Descriptor {
    /// Parses a descriptor of any published shape; the error names the field.
    pub(crate) fn parse(text: &str) -> Result<Descriptor, String> {
        Descriptor::parse_named(text, None)
    }

    /// [`Descriptor::parse`], `folder` naming the app when the descriptor does not (2.0).
    pub(crate) fn parse_named(text: &str, folder: Option<&str>) -> Result<Descriptor, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let mut descriptor = match shape(&value)? {
            Shape::Spec => {
                let kind = value.pointer("/execution/type").and_then(Value::as_str).unwrap_or("stdio");
                if !matches!(kind, "stdio" | "http") {
                    return Err(unrunnable("execution.type", kind));
                }
                read::<Descriptor>(value)?
            }
            Shape::Agent => return Err(unrunnable("start", "acp-agent")),
            Shape::Platforms => from_platforms(value)?,
            Shape::Camel => from_camel(value)?,
            Shape::Access => from_access(value, folder)?,
        };
        if descriptor.app.id.trim().is_empty() || descriptor.app.id.len() > 200 {
            return Err("app.id: must be 1 to 200 characters".into());
        }
        // `@` joins a web app's id and its origin: no descriptor may spell another's.
        if descriptor.app.id.contains('@') {
            return Err("app.id: may not contain `@`".into());
        }
        if let Some(top) = descriptor.auth.take() {
            match &mut descriptor.execution {
                Execution::Http { auth: auth @ None, .. } => *auth = Some(top),
                Execution::Http { .. } => return Err("auth: given twice (also as execution.auth)".into()),
                _ => return Err("auth: only an `http` app sends one".into()),
            }
        }
        Ok(descriptor)
    }
}

/// What runs: said in every refusal.
const RUNS: &str = "appserver runs `stdio` programs (the AAI JSON envelope), `http` services and MCP servers";

/// Which shape a descriptor has.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The AAI spec's own (snake_case `schema_version`, `app`, `execution`, `tools`).
    Spec,
    /// 1.0 without `app` (`appId`, `platforms`).
    Platforms,
    /// 1.x camelCase.
    Camel,
    /// 2.0 (`access`, `exposure`).
    Access,
    /// The gateway's ACP agent descriptors (`id`, `name`, `start {command, args}`, `tools`).
    Agent,
}

/// The shape of a parsed descriptor, or why it has none.
pub(crate) fn shape(value: &Value) -> Result<Shape, String> {
    let Value::Object(map) = value else { return Err("the descriptor is not a JSON object".into()) };
    if let Some(version) = map.get("schemaVersion") {
        let version = version.as_str().unwrap_or_default();
        return match version.split('.').next() {
            Some("2") => Ok(Shape::Access),
            Some("1") => Ok(Shape::Camel),
            _ => Err(format!("schemaVersion: `{version}` is not a published version (1.x or 2.0)")),
        };
    }
    if !map.contains_key("app") && (map.contains_key("appId") || map.contains_key("platforms")) {
        return Ok(Shape::Platforms);
    }
    if !map.contains_key("app") && !map.contains_key("execution") && map.contains_key("start") {
        return Ok(Shape::Agent);
    }
    Ok(Shape::Spec)
}

/// Deserializes `value` as `T`, the error naming the field.
pub(crate) fn read<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| e.to_string())
}

/// [`read`] of the member `prefix` of a descriptor: the error names the field under it.
fn read_at<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| match e.path().to_string().as_str() {
        "." => format!("{prefix}: {}", e.inner()),
        path => format!("{prefix}.{path}: {}", e.inner()),
    })
}

// ---- 1.0 without `app` ----

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Platforms {
    app_id: String,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    platforms: BTreeMap<String, Platform>,
}

#[derive(Debug, Deserialize)]
struct Platform {
    #[serde(default)]
    automation: Option<String>,
}

/// `platforms.web` of a REST API (`automation: "restapi"`).
#[derive(Debug, Deserialize)]
struct RestPlatform {
    base_url: String,
    #[serde(default)]
    auth: Option<Value>,
    #[serde(default)]
    default_headers: BTreeMap<String, String>,
    #[serde(default)]
    tools: Vec<RestTool>,
}

#[derive(Debug, Deserialize)]
struct RestTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    returns: Option<Value>,
    endpoint: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The body template.
    #[serde(default)]
    body: Option<Value>,
}

/// 1.0 without `app`: `platforms.web` of a REST API is an `http` app; any other platform's tools
/// are scripts for that OS's automation.
pub(crate) fn from_platforms(value: Value) -> Result<Descriptor, String> {
    let web = value.pointer("/platforms/web").filter(|w| w["automation"] == "restapi").cloned();
    let d: Platforms = read(value)?;
    if let Some(web) = web {
        return from_rest(d, web);
    }
    let what = d
        .platforms
        .iter()
        .map(|(os, p)| format!("platforms.{os}.automation: `{}`", p.automation.as_deref().unwrap_or("?")))
        .next()
        .unwrap_or_else(|| "platforms: none given".into());
    let _ = d.description;
    Err(format!("{what} ({}: {}) is a desktop automation script appserver cannot run; {RUNS}", d.app_id, d.name))
}

fn from_rest(d: Platforms, web: Value) -> Result<Descriptor, String> {
    let web: RestPlatform = read_at(web, "platforms.web")?;
    let auth = web.auth.map(|a| super::super::hosts::auth::read(a, "platforms.web.auth")).transpose()?;
    let tools = web
        .tools
        .into_iter()
        .map(|t| Tool {
            name: t.name,
            description: t.description,
            parameters: t.parameters,
            returns: t.returns,
            state_changing: false,
            path: Some(t.endpoint),
            method: t.method,
            headers: t.headers,
            body_template: t.body,
            execution: None,
        })
        .collect();
    Ok(Descriptor {
        app: AppInfo { id: d.app_id, name: d.name, description: d.description },
        execution: Execution::Http {
            base_url: web.base_url,
            auth,
            default_headers: web.default_headers,
            timeout_ms: None,
        },
        tools,
        cache_ttl_secs: None,
        auth: None,
    })
}

// ---- 1.x camelCase ----

/// A name, or localized names (`{"en": "Reminders", "zh-CN": "提醒事项"}`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Name {
    Plain(String),
    Localized(BTreeMap<String, String>),
}

impl Name {
    /// The name in `lang`, else English, else `default`, else the first.
    pub(crate) fn pick(&self, lang: Option<&str>) -> String {
        match self {
            Name::Plain(name) => name.clone(),
            Name::Localized(names) => [lang, Some("default"), Some("en")]
                .into_iter()
                .flatten()
                .find_map(|l| names.get(l))
                .or_else(|| names.values().next())
                .cloned()
                .unwrap_or_default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Camel {
    app: CamelApp,
    execution: Value,
    #[serde(default)]
    auth: Option<Value>,
    #[serde(default)]
    tools: Vec<CamelTool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CamelApp {
    id: String,
    name: Name,
    #[serde(default)]
    default_lang: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CamelTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    returns: Option<Value>,
    #[serde(default)]
    execution: Option<ToolCall>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CamelHttp {
    base_url: String,
    #[serde(default)]
    default_headers: BTreeMap<String, String>,
    /// Milliseconds.
    #[serde(default)]
    timeout: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CamelStdio {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    /// Milliseconds.
    #[serde(default)]
    timeout: Option<u64>,
}

/// 1.x camelCase.
pub(crate) fn from_camel(value: Value) -> Result<Descriptor, String> {
    let d: Camel = read(value)?;
    let kind = d.execution.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    let execution = match kind.as_str() {
        "http" => {
            let http: CamelHttp = read_at(d.execution, "execution")?;
            let auth = d.auth.map(|a| super::super::hosts::auth::read(a, "auth")).transpose()?;
            Execution::Http {
                base_url: http.base_url,
                auth,
                default_headers: http.default_headers,
                timeout_ms: http.timeout,
            }
        }
        "stdio" => {
            let stdio: CamelStdio = read_at(d.execution, "execution")?;
            Execution::Stdio { command: stdio.command, args: stdio.args, cwd: stdio.cwd, timeout_ms: stdio.timeout }
        }
        other => return Err(unrunnable("execution.type", other)),
    };
    let tools = d
        .tools
        .into_iter()
        .map(|t| Tool {
            name: t.name,
            description: t.description,
            parameters: t.parameters,
            returns: t.returns,
            state_changing: false,
            path: None,
            method: None,
            headers: BTreeMap::new(),
            body_template: None,
            execution: t.execution,
        })
        .collect();
    Ok(Descriptor {
        app: AppInfo {
            id: d.app.id,
            name: d.app.name.pick(d.app.default_lang.as_deref()),
            description: d.app.description,
        },
        execution,
        tools,
        cache_ttl_secs: None,
        auth: None,
    })
}

/// The refusal of a kind of execution appserver does not run.
pub(crate) fn unrunnable(field: &str, kind: &str) -> String {
    let what = match kind {
        "ipc" => "a desktop app's IPC",
        "apple-events" => "macOS Apple Events",
        "dbus" => "D-Bus",
        "com" => "Windows COM",
        "acp" | "acp-agent" => "an ACP agent",
        "skill" => "a skill",
        "cli" => "a command-line tool",
        "sse" => "MCP's deprecated HTTP+SSE transport",
        "" => "none given",
        _ => "unknown",
    };
    format!("{field}: `{kind}` ({what}) is not something appserver can run; {RUNS}")
}

// ---- 2.0 ----

#[derive(Debug, Deserialize)]
struct Access2 {
    app: App2,
    access: AccessOf,
    #[serde(default)]
    exposure: Option<Exposure>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct App2 {
    name: Name,
    /// Not in the gateway's 2.0 schema (its apps are named by where they are found); taken when
    /// present.
    #[serde(default)]
    id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AccessOf {
    protocol: String,
    #[serde(default)]
    config: Value,
}

#[derive(Debug, Deserialize)]
struct Exposure {
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "transport")]
enum McpConfig {
    #[serde(rename = "stdio")]
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        cwd: Option<String>,
        #[serde(default)]
        timeout: Option<u64>,
    },
    #[serde(rename = "streamable-http")]
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default)]
        timeout: Option<u64>,
    },
    #[serde(rename = "sse")]
    Sse {},
}

/// 2.0: the app is its access (an MCP server; the others are refused); its tools are the
/// server's, listed when it runs. `id` names it when the descriptor does not (its folder).
pub(crate) fn from_access(value: Value, id: Option<&str>) -> Result<Descriptor, String> {
    let d: Access2 = read(value)?;
    let Some(id) = d.app.id.clone().or_else(|| id.map(str::to_owned)) else {
        return Err("app.id: a 2.0 descriptor is named by its folder, and this one has none".into());
    };
    if d.access.protocol != "mcp" {
        return Err(unrunnable("access.protocol", &d.access.protocol));
    }
    let config: McpConfig = read_at(d.access.config, "access.config")?;
    let transport = match config {
        McpConfig::Stdio { command, args, env, cwd, timeout } => {
            McpTransport::Stdio { command, args, env, cwd, timeout_ms: timeout }
        }
        McpConfig::Http { url, headers, timeout } => McpTransport::Http { url, headers, timeout_ms: timeout },
        McpConfig::Sse {} => return Err(unrunnable("access.config.transport", "sse")),
    };
    Ok(Descriptor {
        app: AppInfo { id, name: d.app.name.pick(None), description: d.exposure.and_then(|e| e.summary) },
        execution: Execution::Mcp(transport),
        tools: Vec::new(),
        cache_ttl_secs: None,
        auth: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixtures written from the AAI gateway's published schemas (tests/fixtures/aai_gateway).
    fn fixture(name: &str) -> Result<Descriptor, String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/aai_gateway").join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Descriptor::parse_named(&text, Some("folder-name"))
    }

    #[test]
    fn snake_case_1_0_with_tool_execution_paths() {
        let d = fixture("snake-1.0-http.json").unwrap();
        assert_eq!((d.app.id.as_str(), d.app.name.as_str(), d.kind()), ("com.example.tasks", "Tasks", "http"));
        assert_eq!((d.tools[0].http_path(), d.tools[0].http_method()), (Some("/v1/tasks"), Some("GET")));
        assert_eq!(d.manifest().commands.len(), 2);
    }

    #[test]
    fn camel_case_1_x_with_localized_names() {
        let d = fixture("camel-1.x-http.json").unwrap();
        assert_eq!((d.app.id.as_str(), d.app.name.as_str(), d.kind()), ("com.example.wiki", "Wiki", "http"));
        assert_eq!(d.window_id(), "aai:com.example.wiki");
        assert_eq!((d.tools[0].http_path(), d.tools[0].http_method()), (Some("/v1/search"), Some("POST")));
        let Execution::Http { base_url, .. } = &d.execution else { panic!("http") };
        assert_eq!(base_url, "http://127.0.0.1:9");
        // `defaultLang` picks the name; the timeout (ms) is kept.
        let d = fixture("camel-1.x-stdio.json").unwrap();
        assert_eq!(d.app.name, "计数器");
        let Execution::Stdio { command, timeout_ms, .. } = &d.execution else { panic!("stdio") };
        assert_eq!((command.as_str(), *timeout_ms), ("python3", Some(300)));
    }

    #[test]
    fn version_2_0_mcp_access_is_an_mcp_server_named_by_its_folder() {
        let d = fixture("v2-mcp-stdio.json").unwrap();
        assert_eq!((d.app.id.as_str(), d.app.name.as_str(), d.kind()), ("folder-name", "Everything", "mcp"));
        assert_eq!(d.app.description.as_deref(), Some("The MCP test server: echo, add, long-running operations"));
        let Execution::Mcp(McpTransport::Stdio { command, args, timeout_ms, .. }) = &d.execution else { panic!() };
        assert_eq!((command.as_str(), args.len(), *timeout_ms), ("npx", 2, Some(30000)));
        let d = fixture("v2-mcp-http.json").unwrap();
        assert!(
            matches!(&d.execution, Execution::Mcp(McpTransport::Http { url, .. }) if url == "https://docs.example.com/mcp")
        );
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/aai_gateway/v2-mcp-http.json"),
        )
        .unwrap();
        let err = Descriptor::parse(&text).unwrap_err();
        assert!(err.starts_with("app.id: "), "{err}");
    }

    #[test]
    fn what_cannot_run_is_refused_naming_the_field() {
        for (name, field) in [
            ("platforms-1.0.json", "platforms.macos.automation: `applescript`"),
            ("snake-1.0-ipc.json", "execution.type: `ipc`"),
            ("camel-1.x-acp.json", "execution.type: `acp`"),
            ("v2-skill.json", "access.protocol: `skill`"),
            ("v2-acp-agent.json", "access.protocol: `acp-agent`"),
        ] {
            let err = fixture(name).unwrap_err();
            assert!(err.starts_with(field), "{name}: {err}");
            assert!(err.contains("appserver runs `stdio` programs"), "{name}: {err}");
        }
        let err = Descriptor::parse(r#"{"schemaVersion":"3.0"}"#).unwrap_err();
        assert_eq!(err, "schemaVersion: `3.0` is not a published version (1.x or 2.0)");
        let err = Descriptor::parse(
            r#"{"schemaVersion":"1.0","app":{"id":"x","name":{"en":"X"}},"execution":{"type":"http"}}"#,
        )
        .unwrap_err();
        assert_eq!(err, "execution: missing field `baseUrl`");
        let sse = r#"{"schemaVersion":"2.0","app":{"name":{"default":"S"}},"access":{"protocol":"mcp","config":{"transport":"sse","url":"http://x"}}}"#;
        let err = Descriptor::parse_named(sse, Some("s")).unwrap_err();
        assert!(err.starts_with("access.config.transport: `sse`"), "{err}");
    }
}
