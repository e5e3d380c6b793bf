//! The agent tool `app_discover`: loads a web app's descriptor (`/.well-known/aai.json`) by its
//! URL, or by a name the user confirmed before, and registers it, so the agent can read its
//! manifest with `app_query` and call its tools with `app_command`. The same operation as the
//! `app/discover` method.

use appserver_protocol::AppDiscoverParams;
use serde_json::{Value, json};

use crate::apps::web;
use crate::ports::BoxFuture;
use crate::turns::tools::{Tool, ToolCall, ToolOutput};

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
