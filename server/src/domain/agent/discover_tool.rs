//! The agent tool `app_discover`: loads a web app's descriptor (`/.well-known/aai.json`) by its
//! URL, or by a name the user confirmed before, and registers it, so the agent can read its
//! manifest with `app_query` and call its tools with `app_command`. The same operation as the
//! `app/discover` method. It reaches the network for the agent, so it is asked about (as
//! `onRequest` asks any call that is not read-only), showing the origin it will fetch; a URL's
//! user and password are never sent.

use appserver_protocol::AppDiscoverParams;
use serde_json::{Value, json};

use crate::domain::apps::web;
use crate::domain::policy::ApprovalSpec;
use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolEnv, ToolOutput};

#[derive(Debug)]
pub(crate) struct AppDiscoverTool;

impl Tool for AppDiscoverTool {
    fn name(&self) -> &str {
        "app_discover"
    }

    fn description(&self) -> &str {
        "Load a web app by its URL (e.g. https://notion.so): its descriptor is fetched from \
         /.well-known/aai.json (or taken from a 24 h cache) and the app is registered; the answer gives its \
         windowId. Or pass only a name the user confirmed before (e.g. \"jira\"). Pass both name and url when the \
         user has told you which URL a name means, so it is remembered."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "url": { "type": "string" }, "name": { "type": "string" } } })
    }

    fn approval(&self, arguments: &Value, env: &ToolEnv) -> Option<ApprovalSpec> {
        let shown = match (arguments.get("url").and_then(Value::as_str), arguments.get("name").and_then(Value::as_str))
        {
            (Some(url), _) => web::shown_origin(url),
            (None, Some(name)) => format!("the web app the user named `{name}`"),
            (None, None) => return None,
        };
        let workspace = env.apps.config.workspace.display().to_string();
        let mut spec = ApprovalSpec::new(
            "shell",
            &format!("app_discover {shown}"),
            &workspace,
            format!("The agent wants to fetch {shown}/.well-known/aai.json and register the web app it describes"),
        );
        spec.scope_key = format!("app_discover:{shown}");
        Some(spec)
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let text = |member: &str| call.arguments.get(member).and_then(Value::as_str).map(str::to_owned);
            let params = AppDiscoverParams { url: text("url"), name: text("name") };
            match web::discover(&call.env.apps, params).await {
                Ok(result) => ToolOutput::json(&serde_json::to_value(&result).unwrap_or(Value::Null)),
                Err(err) => ToolOutput::error(format!("{}: {err}", err.code())),
            }
        })
    }
}
