//! One MCP session: rmcp's `ServerHandler` over the app service. Tools (`tools.rs`), one
//! resource per app window (`app://<windowId>`, its name and description; reading it gives the
//! manifest; `uris.rs`), and `notifications/resources/list_changed` whenever an app registers or
//! leaves. A streaming `app_command` of a client that asked for progress is followed to its end
//! (`progress.rs`).

use std::sync::Arc;

use appserver_protocol::{AppCaller, AppDiscoverParams};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::progress::{self, Ended, Follower};
use super::sessions::SessionEnds;
use super::{tools, uris};
use crate::domain::apps::service::{self, AppService};
use crate::domain::apps::web;
use crate::domain::policy::SessionConsents;
use crate::domain::turns::TurnService;
use crate::domain::turns::app_calls::{self, AppCall, Outcome};

const INSTRUCTIONS: &str = "appserver's registered apps (spreadsheets, editors, canvases, ...). Call app_list (or \
     list the resources) to see them, read an app's manifest (the resource app://<windowId>, or \
     app_query(windowId, \"manifest\")) before using it, read state with app_query and change it with app_command. \
     Every app_command is approved by the user (or the workspace policy) and recorded in the app's replay log. \
     app_discover loads a web app by its URL.";

/// The MCP server of one session (one client).
#[derive(Debug, Clone)]
pub(crate) struct McpSession {
    apps: Arc<AppService>,
    turns: Arc<TurnService>,
    /// The session's "accept for session" answers.
    consents: Arc<SessionConsents>,
    /// The end of each session (an HTTP `DELETE`), seen by its running calls.
    session_ends: Arc<SessionEnds>,
    /// This session's id when its requests carry none (protocol 2026-07-28 requests stand alone).
    local_id: Arc<str>,
    /// Cancelled when the session (its last handle) is dropped, which ends its watcher task.
    ended: CancellationToken,
    _end_on_drop: Arc<DropGuard>,
}

impl McpSession {
    pub(crate) fn new(apps: Arc<AppService>, turns: Arc<TurnService>, session_ends: Arc<SessionEnds>) -> Self {
        let ended = CancellationToken::new();
        McpSession {
            apps,
            turns,
            consents: Arc::new(SessionConsents::default()),
            session_ends,
            local_id: format!("local_{:016x}", fastrand::u64(..)).into(),
            _end_on_drop: Arc::new(ended.clone().drop_guard()),
            ended,
        }
    }

    /// `app_command`: through the gate of calls that are not a thread's own, as this session's
    /// agent. The call is withdrawn when the client cancels it (`notifications/cancelled`) or
    /// ends the session while its approval is pending.
    async fn command(
        &self,
        args: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let (window, command) = match (tools::string_arg(&args, "windowId"), tools::string_arg(&args, "command")) {
            (Ok(w), Ok(c)) => (w, c),
            (Err(e), _) | (_, Err(e)) => return Ok(e),
        };
        let timeout_ms = match args.get("timeoutMs") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(ms) => Some(ms),
                None => {
                    return Ok(tools::failure("INVALID_PARAMS: `timeoutMs` must be a whole number of milliseconds"));
                }
            },
        };
        let session = session_id(context);
        let caller = AppCaller::Mcp {
            session_id: session.clone().unwrap_or_else(|| self.local_id.to_string()),
            declared_name: caller_name(context),
        };
        let withdrawn = context.ct.child_token();
        let _stop_watching = withdrawn.clone().drop_guard();
        if let Some(session) = session {
            let (ended, withdrawn) = (self.session_ends.ended(&session), withdrawn.clone());
            self.turns.tasks.spawn(async move {
                tokio::select! {
                    _ = ended.cancelled() => withdrawn.cancel(),
                    _ = withdrawn.cancelled() => {}
                }
            });
        }
        let call = AppCall {
            caller,
            window_id: &window,
            command: &command,
            params: args.get("params").cloned(),
            timeout_ms,
            session: &self.consents,
            withdrawn: &withdrawn,
        };
        let outcome = app_calls::command(&self.turns, call)
            .await
            .map_err(|e| ErrorData::internal_error(format!("approval: {e}"), None))?;
        Ok(match outcome {
            Outcome::Done(result) => match result.get("runId").and_then(Value::as_str) {
                Some(run_id) if context.meta.get_progress_token().is_some() => {
                    self.follow(&window, &command, run_id, &result, timeout_ms, context).await
                }
                _ => tools::with_run_link(tools::success(&result), &window, &result),
            },
            Outcome::Declined(message) => tools::failure(message),
            Outcome::Withdrawn => tools::failure("CANCELLED: the call was withdrawn before it was approved."),
            Outcome::Failed(err) => tools::app_failure(&err),
        })
    }

    /// A streaming command's run, followed for a client that asked for progress: the answer is
    /// the command's (`runId`) with the run's events, once the run ended or the limit passed.
    async fn follow(
        &self,
        window_id: &str,
        command: &str,
        run_id: &str,
        result: &Value,
        timeout_ms: Option<u64>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (Some(window), Some(token)) = (self.apps.registry.get(window_id), context.meta.get_progress_token()) else {
            return tools::with_run_link(tools::success(result), window_id, result);
        };
        let terminal = progress::terminal_event(&window, command);
        let limit = progress::limit(timeout_ms);
        let to = Follower { peer: &context.peer, token, limit, stop: &context.ct };
        let (events, ended) = progress::follow(&window, run_id, terminal.as_deref(), to).await;
        let mut value = result.clone();
        if let Value::Object(map) = &mut value {
            map.insert("events".into(), Value::Array(events));
            let ended = match ended {
                Ended::Finished => "finished".to_owned(),
                Ended::TimedOut(after) => format!("still running after {} ms", after.as_millis()),
                Ended::Cancelled => "cancelled".to_owned(),
            };
            map.insert("run".into(), Value::String(ended));
        }
        tools::with_run_link(tools::success(&value), window_id, &value)
    }

    async fn discover(&self, args: &JsonObject) -> CallToolResult {
        let text = |member: &str| args.get(member).and_then(Value::as_str).map(str::to_owned);
        let params = AppDiscoverParams { url: text("url"), name: text("name") };
        match web::discover(&self.apps, params).await {
            Ok(result) => tools::success(&serde_json::to_value(&result).unwrap_or(Value::Null)),
            Err(err) => tools::app_failure(&err),
        }
    }

    async fn resources(&self) -> Vec<Resource> {
        service::list(&self.apps)
            .await
            .into_iter()
            .map(|app| {
                let description = match app.description.as_deref() {
                    Some(d) if !d.is_empty() => d.to_owned(),
                    _ => format!("The app {} ({})", app.name, app.app_id),
                };
                Resource::new(uris::window(&app.window_id), app.name)
                    .with_description(description)
                    .with_mime_type("application/json")
            })
            .collect()
    }

    /// Sends `notifications/resources/list_changed` to `peer` whenever an app registers or leaves,
    /// until the session or the server ends.
    fn watch_apps(&self, peer: Peer<RoleServer>) {
        let mut changes = self.apps.registry.watch_changes();
        changes.mark_unchanged();
        let (shutdown, ended) = (self.turns.shutdown.clone(), self.ended.clone());
        self.turns.tasks.spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { return },
                    _ = shutdown.cancelled() => return,
                    _ = ended.cancelled() => return,
                }
                if peer.notify_resource_list_changed().await.is_err() {
                    return;
                }
            }
        });
    }
}

/// The request's `Mcp-Session-Id`, when it has one (the header rmcp reads the session from).
fn session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<hyper::http::request::Parts>()?;
    parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The MCP client's declared name (`clientInfo.name`), as recorded on what it does: from the
/// request's `_meta` (protocol 2026-07-28, where requests stand alone), else from the session's
/// `initialize`. Nothing verifies it.
fn caller_name(context: &RequestContext<RoleServer>) -> String {
    context
        .meta
        .client_info()
        .map(|info| info.name)
        .or_else(|| context.peer.peer_info().map(|info| info.client_info.name.clone()))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_resources_list_changed().build(),
        )
        .with_server_info(Implementation::new("appserver", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch_apps(context.peer);
    }

    /// Protocol 2026-07-28 clients (no `initialize`) ask for `resources/list_changed` with
    /// `subscriptions/listen` instead.
    fn accepted_subscription_filter(&self, _requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().resources_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.apps.registry.watch_changes();
        changes.mark_unchanged();
        loop {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return Ok(()) },
                _ = context.cancelled() => return Ok(()),
                _ = self.turns.shutdown.cancelled() => return Ok(()),
            }
            if context.accepted().resources_list_changed == Some(true)
                && context.sink().notify_resource_list_changed().await.is_err()
            {
                return Ok(());
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::definitions()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The tool table's roles column: an outside agent calls only what it allows.
        if let Some(roles) = appserver_protocol::tools::tool_roles(&request.name)
            && !roles.allows(appserver_protocol::Role::OutsideAgent)
        {
            return Err(tools::refused_by_role(&request.name));
        }
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "app_list" => tools::list(&self.apps).await,
            "app_query" => tools::query(&self.apps, &args).await,
            "app_command" => self.command(args, &context).await?,
            "app_discover" => self.discover(&args).await,
            // A tool that does not exist is a protocol error (the MCP specification's
            // "Unknown tools" -32602), unlike a tool's own failure.
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}` (tools: app_list, app_query, app_command, app_discover)"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.resources().await))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = || ErrorData::resource_not_found(format!("no app resource {}", request.uri), None);
        let (window_id, run_id) = uris::parse(&request.uri).ok_or_else(not_found)?;
        let value = match run_id {
            // `app://<windowId>/runs/<runId>`: a streaming command's events so far.
            Some(run_id) => {
                let window = self.apps.registry.get(&window_id).ok_or_else(not_found)?;
                if !window.knows_run(&run_id) {
                    return Err(not_found());
                }
                let events: Vec<Value> = window
                    .run_events(&run_id)
                    .into_iter()
                    .map(|e| json!({ "type": e.event_type, "payload": e.payload }))
                    .collect();
                json!({ "windowId": window_id, "runId": run_id, "events": events })
            }
            None => service::query(&self.apps, &window_id, "manifest", None).await.map_err(|_| not_found())?,
        };
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let contents = ResourceContents::TextResourceContents {
            uri: request.uri.clone(),
            mime_type: Some("application/json".into()),
            text,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
