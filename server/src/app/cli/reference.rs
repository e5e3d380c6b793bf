//! docs/config.md, rendered from the code: the command line's flags from clap, the config file's
//! keys from their types' JSON Schema (key, type, doc comment) and [`NOTES`] (default, flag, when
//! a change takes effect); a test keeps the page equal to what this renders.

use serde_json::Value;

use clap::CommandFactory;

use super::Cli;
use crate::infra::config::FileConfig;

/// Sections that map a name to a wire type: one row for the whole entry.
const WIRE_MAPS: &[&str] = &["subagent_profiles"];

/// Every key of the config file as `(section.key, type, description)`, sorted.
pub(crate) fn file_keys() -> Vec<(String, String, String)> {
    let schema = serde_json::to_value(schemars::schema_for!(FileConfig)).unwrap_or_default();
    let defs = schema.get("$defs").cloned().unwrap_or_default();
    let mut keys = Vec::new();
    for (section, field) in properties(&schema) {
        let table = resolve(&field, &defs);
        if WIRE_MAPS.contains(&section.as_str()) {
            keys.push((format!("{section}.<name>"), "table".into(), describe(&field, &table)));
            continue;
        }
        let (prefix, entries) = match table.get("additionalProperties") {
            Some(inner @ Value::Object(_)) => (format!("{section}.<name>"), resolve(inner, &defs)),
            _ => (section.clone(), table),
        };
        for (key, value) in properties(&entries) {
            let resolved = resolve(&value, &defs);
            keys.push((format!("{prefix}.{key}"), type_of(&resolved), describe(&value, &resolved)));
        }
    }
    keys
}

fn properties(schema: &Value) -> Vec<(String, Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// `schema` with a `$ref` (also inside `anyOf` with null: an `Option`) followed into `defs`.
fn resolve(schema: &Value, defs: &Value) -> Value {
    if let Some(name) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        return resolve(&defs[name], defs);
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        if let Some(some) = options.iter().find(|o| o.get("type") != Some(&Value::from("null"))) {
            let mut inner = resolve(some, defs);
            if let (Some(obj), Some(desc)) = (inner.as_object_mut(), schema.get("description")) {
                obj.entry("description").or_insert(desc.clone());
            }
            return inner;
        }
    }
    schema.clone()
}

fn type_of(schema: &Value) -> String {
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("any"),
        Some(Value::String(kind)) => kind.as_str(),
        _ => return if schema.get("enum").is_some() { "string".into() } else { "table".into() },
    };
    match kind {
        "array" => "list".into(),
        "object" => "table".into(),
        other => other.into(),
    }
}

fn describe(field: &Value, resolved: &Value) -> String {
    let text = field.get("description").or_else(|| resolved.get("description")).and_then(Value::as_str);
    text.unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// When a change to a key takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Read at start-up: the server must be restarted.
    Restart,
    /// Read where it is used: the next use sees the change.
    Live,
}

/// What the types do not say about a key: `(key, default, flag or environment variable, effect,
/// description)`; a description here is used where the field has no doc comment.
type Note = (&'static str, &'static str, &'static str, Effect, &'static str);

use Effect::{Live, Restart};

/// One row per key of the config file (a test checks both ways against [`file_keys`]).
pub(crate) const NOTES: &[Note] = &[
    (
        "approvals.approver_channels",
        "none",
        "--approver-channel",
        Restart,
        "Chat channels whose adapters may answer approvals.",
    ),
    (
        "approvals.policy",
        "onRequest",
        "--approval-policy",
        Restart,
        "When the agent's actions are asked: autoApprove, onRequest, untrusted, never, interrupt.",
    ),
    (
        "approvals.timeout_ms",
        "120000",
        "--approval-timeout-ms",
        Restart,
        "How long an approval waits for an answer before it counts as declined.",
    ),
    (
        "apps.forget_after_ms",
        "600000",
        "--app-window-forget-after-ms",
        Restart,
        "How long a closed app window's state is kept for a reopen.",
    ),
    ("apps.max_windows", "4096", "--max-app-windows", Restart, "App windows open at once on the server."),
    (
        "apps.max_windows_per_connection",
        "256",
        "--max-app-windows-per-connection",
        Restart,
        "App windows one connection may hold.",
    ),
    (
        "cluster.lease_ttl_seconds",
        "10",
        "--cluster-lease-ttl",
        Restart,
        "How long an instance holds a thread without renewing its lease.",
    ),
    (
        "cluster.namespace",
        "appserver",
        "--cluster-namespace, APPSERVER_CLUSTER_NAMESPACE",
        Restart,
        "The NATS subject prefix the instances share.",
    ),
    ("cluster.tls_ca_file", "none", "--cluster-tls-ca", Restart, "Certificates to trust for a tls:// NATS server."),
    (
        "cluster.url",
        "none (single instance)",
        "--cluster, APPSERVER_CLUSTER",
        Restart,
        "The NATS server of cluster mode (needs a PostgreSQL --db).",
    ),
    ("external_channels.<name>.args", "none", "", Live, "Arguments of the adapter's command."),
    ("external_channels.<name>.command", "none", "", Live, "The adapter's program (subprocess transport)."),
    ("external_channels.<name>.enabled", "false", "", Live, "Whether the server starts this chat adapter."),
    ("external_channels.<name>.env", "none", "", Live, "Environment variables of the adapter's process."),
    (
        "external_channels.<name>.transport",
        "subprocess",
        "",
        Live,
        "subprocess (the server starts it) or websocket (it connects).",
    ),
    ("external_channels.<name>.working_directory", "the workspace", "", Live, "The adapter's working directory."),
    ("heartbeat.interval_ms", "off", "", Restart, "Run HEARTBEAT.md this often (at least 60000)."),
    (
        "memory.auto_consolidate_enabled",
        "true",
        "",
        Restart,
        "Consolidate a thread's history into MEMORY.md and HISTORY.md.",
    ),
    ("memory.consolidate_every_turns", "10", "", Restart, ""),
    (
        "model.api_key",
        "none",
        "--api-key, APPSERVER_API_KEY",
        Restart,
        "The model endpoint's key (prefer api_key_env or the user config).",
    ),
    (
        "model.api_key_env",
        "none",
        "",
        Restart,
        "An environment variable holding the key; unset is refused at start-up.",
    ),
    (
        "model.auto_compact",
        "true",
        "",
        Restart,
        "Compact a thread's history automatically when it nears the context window.",
    ),
    (
        "model.base_url",
        "https://api.openai.com/v1",
        "--base-url, APPSERVER_BASE_URL",
        Restart,
        "The OpenAI-compatible endpoint.",
    ),
    ("model.context_window", "known from the model's name", "", Restart, "The model's context window in tokens."),
    (
        "model.idle_timeout_ms",
        "120000",
        "--model-idle-timeout-ms",
        Restart,
        "How long the model may send nothing before the request is retried or the turn fails.",
    ),
    (
        "model.input_modalities",
        "known from the model's name",
        "",
        Restart,
        "What the model takes besides text: text, image, audio (MCP images and audio reach it as such, else described).",
    ),
    ("model.instructions", "none", "", Restart, "Extra instructions for every turn."),
    ("model.max_retries", "3", "", Restart, "Retries of a request that failed to connect or got 429/5xx."),
    ("model.max_steps", "20", "", Restart, "Model calls per turn before the agent stops."),
    (
        "model.mcp_tools_budget",
        "10",
        "",
        Restart,
        "Percent of the context window MCP tools may take offered by name; above it they are found with mcp_tool_search.",
    ),
    ("model.model", "none (no agent)", "--model, APPSERVER_MODEL", Restart, "The model id sent in requests."),
    ("model.output_reserve", "an eighth of the window, at most 16384", "", Restart, "Tokens kept free for the answer."),
    ("plugins.disabled", "none", "", Live, "Plugins disabled with plugin/setEnabled."),
    (
        "sandbox.allowed_domains",
        "*",
        "",
        Restart,
        "The domains the proxy lets confined commands reach (when network is on).",
    ),
    ("sandbox.deny_read", "the usual places of secrets", "", Restart, ""),
    ("sandbox.extra_deny_read", "none", "", Restart, ""),
    ("sandbox.max_cpu_seconds", "3600", "", Restart, "CPU seconds per process of a command (0: no limit)."),
    ("sandbox.max_file_size_mb", "512", "", Restart, "Largest file a command may write (0: no limit)."),
    ("sandbox.max_memory_mb", "1024", "", Restart, "Memory of a whole command (0: no limit)."),
    ("sandbox.max_open_files", "4096", "", Restart, "Open files per process of a command (0: no limit)."),
    ("sandbox.max_processes", "256", "", Restart, "Processes of a command at once (0: no limit)."),
    ("sandbox.network", "false", "", Restart, "Confined commands reach the network (through the allowlisting proxy)."),
    (
        "sandbox.read_only",
        ".git, .gitmodules, .vscode, .idea, .mcp.json",
        "",
        Restart,
        "Paths in each writable root that stay read-only.",
    ),
    (
        "sandbox.workspace_roots",
        "none",
        "",
        Restart,
        "Folders besides the workspace a thread's workspacePath may be in.",
    ),
    ("sandbox.writable_roots", "none", "", Restart, "Writable folders besides the workspace and the temp folders."),
    (
        "sandbox.writable_temp",
        "true",
        "",
        Restart,
        "/tmp, /var/tmp and $TMPDIR are writable to workspaceWrite commands.",
    ),
    ("server.allowed_hosts", "loopback names", "--allowed-host", Restart, "Host headers the HTTP listener accepts."),
    ("server.mcp_idle_timeout_ms", "600000", "--mcp-idle-timeout-ms", Restart, "How long an idle MCP session is kept."),
    (
        "shell.hidden_env",
        "none",
        "--exec-hide-env",
        Restart,
        "Environment variables kept from the agent's commands (the model key's always is).",
    ),
    ("shell.sandbox_mode", "workspaceWrite", "--sandbox-mode", Restart, "readOnly, workspaceWrite or fullAccess."),
    ("shell.timeout_ms", "120000", "--exec-timeout-ms", Restart, "How long one command may run."),
    ("skills.disabled", "none", "", Live, ""),
    ("skills.self_learning_enabled", "false", "", Restart, "The agent may write skills of its own."),
    ("store.durability", "normal", "--durability", Restart, "normal, or full (sync every commit)."),
    ("subagent.disabled_profiles", "none", "", Live, "Sub-agent profiles the agent may not use."),
    (
        "subagent.external_cli_session_resume_enabled",
        "false",
        "",
        Live,
        "cli-oneshot profiles may resume their CLI's session.",
    ),
    ("subagent.max_concurrent", "4", "", Live, "Sub-agents running at once per thread."),
    ("subagent.max_depth", "1", "", Live, "How deep sub-agents may spawn sub-agents."),
    ("subagent.model", "the thread's", "", Live, "The model of sub-agents."),
    (
        "subagent_profiles.<name>",
        "none",
        "",
        Live,
        "A sub-agent profile, in its wire shape (camelCase keys; docs/protocol.md, sub-agent profiles).",
    ),
    ("welcome.suggestions_enabled", "true", "", Live, "Personalized welcome suggestions."),
];

const INTRO: &str = "# Configuration reference

<!-- Generated from the code (server/src/app/cli/reference.rs): the flags from the command line's
definition, the keys from the config file's types. Edit those, then run
`APPSERVER_WRITE_DOCS=1 cargo test -p appserver --lib cli::reference`. -->

Every setting of `appserver` (the server, `appserver mcp`, `appserver acp` and `appserver exec`
take the same flags), where it comes from and when a change takes effect.

## Where settings come from

Highest first:

1. a flag on the command line;
2. its environment variable, where it has one;
3. the workspace's config file, `<workspace>/.appserver/config.toml`;
4. the user's config file, `$XDG_CONFIG_HOME/appserver/config.toml` (else
   `~/.config/appserver/config.toml`): personal defaults and keys for every workspace. Its
   tables merge key by key under the workspace's (a workspace's `[model] model` overrides the
   user's, the user's `api_key` stays);
5. the default.

Both files refuse unknown keys, and an error names the file it is in. The agent's commands and
file tools can read neither the user's config folder nor the workspace's `.appserver/` (see
docs/security.md). Keys marked *restart* are read when the server starts; *live* keys are read
where they are used, so the next use sees a change (including one made with
`workspace/config/update`, which writes the workspace's file).

";

/// docs/config.md as the code defines it.
pub(crate) fn render() -> String {
    let mut page = String::from(INTRO);
    page.push_str("## Command-line flags\n\n| flag | environment | meaning |\n|---|---|---|\n");
    for (flag, env, help) in flags() {
        page.push_str(&format!(
            "| `{}` | {} | {} |\n",
            flag.replace('|', "\\|"),
            env.map(|e| format!("`{e}`")).unwrap_or_default(),
            cell(&help)
        ));
    }
    page.push_str("\n## The config file\n\nSections and keys of `config.toml` (both files).\n");
    let keys = file_keys();
    let mut section = "";
    for (key, kind, doc) in &keys {
        let this = key.split('.').next().unwrap_or_default();
        if this != section {
            section = this;
            page.push_str(&format!("\n### [{section}]\n\n| key | type | default | flag, environment | takes effect | meaning |\n|---|---|---|---|---|---|\n"));
        }
        let Some((_, default, flag, effect, note)) = NOTES.iter().find(|n| n.0 == key) else { continue };
        let meaning = if doc.is_empty() { note } else { doc.as_str() };
        let effect = match effect {
            Effect::Restart => "restart",
            Effect::Live => "live",
        };
        page.push_str(&format!(
            "| `{key}` | {kind} | {} | {} | {effect} | {} |\n",
            cell(default),
            code_list(flag),
            cell(meaning)
        ));
    }
    page
}

/// The server's flags: `(--flag VALUE, environment variable, help)`, in `--help`'s order.
pub(crate) fn flags() -> Vec<(String, Option<String>, String)> {
    Cli::command()
        .get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .filter_map(|arg| {
            let long = arg.get_long()?;
            let value = arg.get_value_names().and_then(|v| v.first()).map(|v| format!(" {v}")).unwrap_or_default();
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
            Some((format!("--{long}{value}"), env, help))
        })
        .collect()
}

/// `text` as one table cell: one line, `|` escaped, and `<`/`>` outside code spans escaped so
/// that `<workspace>` is not taken for an HTML tag.
fn cell(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|");
    line.split('`')
        .enumerate()
        .map(|(n, part)| if n % 2 == 0 { part.replace('<', "&lt;").replace('>', "&gt;") } else { part.to_owned() })
        .collect::<Vec<_>>()
        .join("`")
}

fn code_list(text: &str) -> String {
    text.split(", ").filter(|p| !p.is_empty()).map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;
