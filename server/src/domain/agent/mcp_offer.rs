//! MCP tools as a model sees them: each tool of the thread's MCP servers offered by its own
//! namespaced name (`mcp__<server>__<tool>`, with its description and input schema) while all of
//! them together fit the MCP tools' share of the context window (`[model] mcp_tools_budget`,
//! percent); above it they are loaded on demand, as Claude Code's tool search does: the model
//! gets `mcp_tool_search`, and the tools a search finds are offered by name from then on in the
//! thread. A tool is called through the approval flow like `mcp_call` (scope
//! `mcp:<server>:<tool>`), its `toolCall` item naming the server and the tool (`mcpServer`,
//! `mcpTool`). `mcp_servers` / `mcp_tool` / `mcp_call` stay for compatibility.

use std::collections::BTreeSet;

use rmcp::model::{JsonObject, Tool as McpTool};
use serde_json::{Value, json};

use super::mcp_tools::{call_mcp, for_model, hints};
use crate::domain::policy::ApprovalSpec;
use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolEnv, ToolOutput};
use crate::infra::model_client::window::Estimator;

/// The prefix of every namespaced MCP tool name.
pub(crate) const PREFIX: &str = "mcp__";
/// The search tool offered when the MCP tools do not fit their budget.
pub(crate) const SEARCH_TOOL: &str = "mcp_tool_search";
/// Longest function name the chat API takes.
const MAX_NAME: usize = 64;
/// Most tools one search gives by default, and at most.
const DEFAULT_MATCHES: usize = 5;
const MAX_MATCHES: usize = 20;

/// `mcp__<server>__<tool>`, each part reduced to the characters a function name may hold
/// (letters, digits, `_`, `-`; anything else `_`), cut to 64 characters.
pub(crate) fn model_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
    };
    let name = format!("{PREFIX}{}__{}", clean(server), clean(tool));
    name.chars().take(MAX_NAME).collect()
}

/// One MCP tool the model may call by its own name.
#[derive(Debug, Clone)]
pub(crate) struct McpNamedTool {
    pub(crate) name: String,
    pub(crate) server: String,
    pub(crate) tool: McpTool,
}

impl McpNamedTool {
    /// Its function spec.
    pub(crate) fn spec(&self) -> Value {
        let description = format!(
            "[MCP server `{}`, tool `{}`] {}",
            self.server,
            self.tool.name,
            self.tool.description.as_deref().unwrap_or("")
        );
        json!({ "type": "function", "function": {
            "name": self.name, "description": description, "parameters": *self.tool.input_schema } })
    }
}

/// Every tool of `thread`'s MCP servers the model may see, by name (the first of two that
/// reduce to the same name wins).
pub(crate) fn all(env: &ToolEnv, thread: &str) -> Vec<McpNamedTool> {
    let mut seen = BTreeSet::new();
    let mut tools = Vec::new();
    for connection in env.mcp.connections_for(thread) {
        for tool in connection.tools().into_iter().filter(for_model) {
            let name = model_name(&connection.config.name, &tool.name);
            if seen.insert(name.clone()) {
                tools.push(McpNamedTool { name, server: connection.config.name.clone(), tool });
            }
        }
    }
    tools
}

/// The specs offered: every tool's while they fit `budget` tokens (`false`), else only the
/// `loaded` ones' (`true`: the search tool is offered with them).
pub(crate) fn offer(tools: &[McpNamedTool], budget: u64, loaded: &BTreeSet<String>) -> (Vec<Value>, bool) {
    let specs: Vec<Value> = tools.iter().map(McpNamedTool::spec).collect();
    if Estimator::raw(&[], &specs) <= budget {
        return (specs, false);
    }
    (tools.iter().filter(|t| loaded.contains(&t.name)).map(McpNamedTool::spec).collect(), true)
}

/// The tools that best match `query` (each of its words found in the tool's names or
/// description counts; `select:NAME,NAME` picks tools by name), best first.
pub(crate) fn search<'a>(tools: &'a [McpNamedTool], query: &str, limit: usize) -> Vec<&'a McpNamedTool> {
    if let Some(names) = query.trim().strip_prefix("select:") {
        let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
        return tools.iter().filter(|t| wanted.contains(&t.name.as_str())).take(limit).collect();
    }
    let words: Vec<String> = query.split_whitespace().map(str::to_ascii_lowercase).collect();
    let mut scored: Vec<(usize, &McpNamedTool)> = tools
        .iter()
        .map(|t| {
            let text = format!("{} {} {}", t.name, t.tool.name, t.tool.description.as_deref().unwrap_or(""))
                .to_ascii_lowercase()
                .replace(['_', '-'], " ");
            let name = t.name.to_ascii_lowercase();
            let score = words
                .iter()
                .map(|w| usize::from(text.contains(w.as_str())) + usize::from(name.contains(w.as_str())))
                .sum();
            (score, t)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().take(limit).map(|(_, t)| t).collect()
}

/// The names a successful `mcp_tool_search` result made callable.
pub(crate) fn found_names(result: &str) -> Vec<String> {
    let parsed: Value = serde_json::from_str(result).unwrap_or(Value::Null);
    let tools = parsed["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

impl Tool for McpNamedTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        self.tool.description.as_deref().unwrap_or("")
    }

    fn input_schema(&self) -> Value {
        Value::Object((*self.tool.input_schema).clone())
    }

    fn approval(&self, arguments: &Value, env: &ToolEnv) -> Option<ApprovalSpec> {
        let workspace = env.apps.config.workspace.display().to_string();
        Some(crate::domain::mcp_host::approval_spec(&self.server, &self.tool, arguments, &workspace))
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let arguments: JsonObject = match &call.arguments {
                Value::Null => JsonObject::new(),
                Value::Object(map) => map.clone(),
                _ => return ToolOutput::error("INVALID_PARAMS: the arguments must be an object"),
            };
            call_mcp(&call, &self.server, &self.tool.name, arguments).await
        })
    }
}

/// A turn's MCP tools: every one callable by name, offered as the budget allows.
#[derive(Debug, Default)]
pub(crate) struct Offering {
    tools: Vec<std::sync::Arc<McpNamedTool>>,
    budget: u64,
    /// The tools a search found in the thread (offered by name while deferred).
    pub(crate) loaded: BTreeSet<String>,
}

impl Offering {
    /// `thread`'s MCP tools within `budget` tokens (none when `allowed` is false: plan mode, a
    /// role without `mcp_call`), with those an earlier search found.
    pub(crate) fn new(env: &ToolEnv, thread: &str, budget: u64, loaded: BTreeSet<String>, allowed: bool) -> Self {
        let tools = if allowed { all(env, thread).into_iter().map(std::sync::Arc::new).collect() } else { Vec::new() };
        Offering { tools, budget, loaded }
    }

    /// Every one of them.
    pub(crate) fn all(&self) -> Vec<std::sync::Arc<McpNamedTool>> {
        self.tools.clone()
    }

    /// The tool `name`, when it is one of them.
    pub(crate) fn get(&self, name: &str) -> Option<std::sync::Arc<McpNamedTool>> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    /// The specs of a step: the tools themselves, or the search tool and the tools found.
    pub(crate) fn specs(&self) -> Vec<Value> {
        if self.tools.is_empty() {
            return Vec::new();
        }
        let named: Vec<McpNamedTool> = self.tools.iter().map(|t| (**t).clone()).collect();
        let (mut specs, deferred) = offer(&named, self.budget, &self.loaded);
        if deferred {
            let search = McpToolSearchTool;
            specs.insert(
                0,
                json!({ "type": "function", "function": {
                "name": SEARCH_TOOL, "description": search.description(), "parameters": search.input_schema() } }),
            );
        }
        specs
    }

    /// Learns the tools a successful search found.
    pub(crate) fn learn(&mut self, tool: &str, output: &ToolOutput) {
        if tool == SEARCH_TOOL && output.success {
            let found: Vec<String> =
                found_names(&output.result).into_iter().filter(|n| self.get(n).is_some()).collect();
            self.loaded.extend(found);
        }
    }
}

/// `mcp_tool_search`: finds MCP tools by what they do; those found become callable by name.
#[derive(Debug)]
pub(crate) struct McpToolSearchTool;

impl Tool for McpToolSearchTool {
    fn name(&self) -> &str {
        SEARCH_TOOL
    }

    fn description(&self) -> &str {
        "Search the tools of the MCP servers you can use (too many to list here) by keywords, or pick them with \
         \"select:mcp__server__tool,...\". The tools found are returned with their input schemas and become \
         callable by their names (mcp__<server>__<tool>) from your next step on."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "query": { "type": "string", "description": "keywords, or select:NAME,NAME" },
            "limit": { "type": "integer", "minimum": 1, "maximum": MAX_MATCHES } },
            "required": ["query"] })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(query) = call.arguments.get("query").and_then(Value::as_str) else {
                return ToolOutput::error("INVALID_PARAMS: `query` (a string) is required");
            };
            let limit = call.arguments.get("limit").and_then(Value::as_u64).map_or(DEFAULT_MATCHES, |n| n as usize);
            let tools = all(call.env, call.thread_id);
            let found: Vec<Value> = search(&tools, query, limit.clamp(1, MAX_MATCHES))
                .into_iter()
                .map(|t| {
                    json!({ "name": t.name, "server": t.server, "tool": t.tool.name,
                        "description": t.tool.description, "inputSchema": *t.tool.input_schema,
                        "readOnly": hints(&t.tool).0 })
                })
                .collect();
            ToolOutput::json(&json!({ "tools": found, "total": tools.len() }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> McpTool {
        let schema = serde_json::json!({ "type": "object", "properties": { "x": { "type": "string" } } });
        McpTool::new(name.to_owned(), description.to_owned(), schema.as_object().unwrap().clone())
    }

    #[test]
    fn names_budget_and_search() {
        assert_eq!(model_name("everything", "get-tiny-image"), "mcp__everything__get-tiny-image");
        assert_eq!(model_name("plug:fs.v2", "read file"), "mcp__plug_fs_v2__read_file");
        assert_eq!(model_name(&"s".repeat(40), &"t".repeat(40)).len(), 64);
        let tools: Vec<McpNamedTool> = [("echo", "Echoes back the input"), ("get-sum", "Adds two numbers")]
            .iter()
            .map(|(n, d)| McpNamedTool { name: model_name("e", n), server: "e".into(), tool: tool(n, d) })
            .collect();
        let (specs, deferred) = offer(&tools, 10_000, &BTreeSet::new());
        assert_eq!((specs.len(), deferred), (2, false));
        let loaded: BTreeSet<String> = ["mcp__e__get-sum".to_owned()].into();
        let (specs, deferred) = offer(&tools, 10, &loaded);
        assert_eq!((specs.len(), deferred), (1, true));
        assert_eq!(specs[0]["function"]["name"], "mcp__e__get-sum");
        let found: Vec<&str> = search(&tools, "add numbers", 5).iter().map(|t| t.name.as_str()).collect();
        assert_eq!(found, ["mcp__e__get-sum"]);
        assert_eq!(search(&tools, "select:mcp__e__echo", 5)[0].name, "mcp__e__echo");
        assert!(search(&tools, "weather", 5).is_empty());
        let result = json!({ "tools": [{ "name": "mcp__e__echo" }] }).to_string();
        assert_eq!(found_names(&result), ["mcp__e__echo"]);
    }
}
