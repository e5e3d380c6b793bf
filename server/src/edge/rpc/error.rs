//! `RpcError`, the one place where every library error becomes a JSON-RPC error object, and the
//! response frames written from a result or an error.

use appserver_protocol::jsonrpc::{self, ErrorObject, RequestId, error_codes};
use serde::Serialize;
use serde_json::{Value, json};

use crate::domain::apps::AppError;
use crate::domain::automations::AutomationError;
use crate::domain::cron::CronError;
use crate::domain::mcp_host::McpHostError;
use crate::domain::plugins::PluginError;
use crate::domain::skills::SkillError;
use crate::domain::slash_commands::CommandError;
use crate::domain::threads::SessionError;
use crate::domain::workspace::WorkspaceError;
use crate::infra::store::StoreError;

/// A JSON-RPC error on its way to the client.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(crate) fn parse_error(detail: &str) -> Self {
        Self::new(error_codes::PARSE_ERROR, "Parse error").with_data(json!({ "detail": detail }))
    }

    pub(crate) fn invalid_request(detail: &str) -> Self {
        Self::new(error_codes::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    pub(crate) fn method_not_found(method: &str) -> Self {
        Self::new(error_codes::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// `detail` names the field, e.g. `identity.workspacePath: missing field`.
    pub(crate) fn invalid_params(detail: impl Into<String>) -> Self {
        Self::new(error_codes::INVALID_PARAMS, format!("Invalid params: {}", detail.into()))
    }

    /// Params that do not decode. The app methods' errors carry `data.code` (`INVALID_PARAMS`),
    /// like every other app error, so an app host can tell a bad manifest by its code.
    pub(crate) fn undecodable_params(method: &str, detail: impl Into<String>) -> Self {
        let error = Self::invalid_params(detail);
        if method.starts_with("app/") { error.with_data(json!({ "code": "INVALID_PARAMS" })) } else { error }
    }

    pub(crate) fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(error_codes::INTERNAL_ERROR, "Internal error").with_data(json!({ "detail": detail.to_string() }))
    }

    /// A response larger than the client accepts: not sent, this error instead.
    pub(crate) fn response_too_large(bytes: usize, limit: usize) -> Self {
        Self::new(error_codes::INTERNAL_ERROR, "Response too large").with_data(json!({
            "code": "RESPONSE_TOO_LARGE",
            "bytes": bytes,
            "limit": limit,
        }))
    }

    /// -32001 with the retry advice of section 9.1.
    pub(crate) fn overloaded(max_in_flight: usize) -> Self {
        Self::new(error_codes::SERVER_OVERLOADED, "Server overloaded; retry later.").with_data(json!({
            "maxInFlight": max_in_flight,
            "retry": "exponential backoff with jitter",
        }))
    }

    pub(crate) fn not_initialized() -> Self {
        Self::new(error_codes::NOT_INITIALIZED, "Not initialized")
    }

    pub(crate) fn already_initialized() -> Self {
        Self::new(error_codes::ALREADY_INITIALIZED, "Already initialized")
    }

    pub(crate) fn to_object(&self) -> ErrorObject {
        ErrorObject { code: self.code, message: self.message.clone(), data: self.data.clone() }
    }
}

impl From<super::roles::RoleError> for RpcError {
    /// One code for every refusal by role: the message names the role and the method, `data`
    /// carries them (and the setting refused, if it was one).
    fn from(err: super::roles::RoleError) -> Self {
        let mut data = json!({ "code": "ROLE_NOT_ALLOWED", "role": err.role().as_str(), "method": err.method() });
        if let Some(field) = err.field() {
            data["field"] = json!(field);
        }
        RpcError::new(error_codes::ROLE_NOT_ALLOWED, err.to_string()).with_data(data)
    }
}

/// How long a client is asked to wait before trying again a request the database could not
/// serve (`data.retryAfterMs`).
const STORE_RETRY_AFTER_MS: u64 = 1_000;

impl From<StoreError> for RpcError {
    /// A database blip that outlasted the store's retries is retryable: -32001 with
    /// `data.reason: "storeUnavailable"` and `data.retryAfterMs`, never -32603 with the driver's
    /// text. Anything else is an internal error.
    fn from(err: StoreError) -> Self {
        if err.is_unavailable() {
            tracing::warn!(error = %err, "the database is unavailable: request refused, retryable");
            return RpcError::new(error_codes::SERVER_OVERLOADED, "The database is unavailable; retry later.")
                .with_data(json!({
                    "reason": "storeUnavailable",
                    "retryAfterMs": STORE_RETRY_AFTER_MS,
                    "retry": "exponential backoff with jitter",
                }));
        }
        if let StoreError::Busy { .. } = err {
            return RpcError::new(error_codes::SERVER_OVERLOADED, "The database is busy; retry later.").with_data(
                json!({ "reason": "storeBusy", "retryAfterMs": STORE_RETRY_AFTER_MS, "retry": "exponential backoff with jitter" }),
            );
        }
        tracing::error!(error = %err, "store failure");
        RpcError::internal(err)
    }
}

impl From<SessionError> for RpcError {
    fn from(err: SessionError) -> Self {
        let err = match err {
            SessionError::Store(store) => return RpcError::from(store),
            other => other,
        };
        let code = match &err {
            SessionError::ThreadNotFound(_) => error_codes::THREAD_NOT_FOUND,
            SessionError::ThreadNotActive { .. } => error_codes::THREAD_NOT_ACTIVE,
            SessionError::TurnInProgress(_) => error_codes::TURN_IN_PROGRESS,
            SessionError::TurnNotFound { .. } => error_codes::TURN_NOT_FOUND,
            SessionError::TurnNotRunning(_) => error_codes::TURN_NOT_RUNNING,
            // Answered above.
            SessionError::Store(_) => error_codes::INTERNAL_ERROR,
            SessionError::InvalidParams(detail) => return RpcError::invalid_params(detail.clone()),
            SessionError::QueueFull { max, .. } => {
                return RpcError::invalid_params(err.to_string()).with_data(json!({ "maxQueuedInputs": max }));
            }
            // Another instance could not be reached (NATS down, an instance stopping): retryable.
            SessionError::Unavailable(detail) => {
                return RpcError::new(error_codes::SERVER_OVERLOADED, detail.clone()).with_data(json!({
                    "reason": "clusterUnavailable",
                    "retryAfterMs": STORE_RETRY_AFTER_MS,
                    "retry": "exponential backoff with jitter",
                }));
            }
            SessionError::ShuttingDown => {
                return RpcError::new(error_codes::SERVER_OVERLOADED, err.to_string()).with_data(json!({
                    "reason": "shuttingDown",
                    "retry": "reconnect (to another instance) with exponential backoff and jitter",
                }));
            }
            SessionError::Remote(error) => {
                let forwarded = RpcError::new(error.code, error.message.clone());
                return match &error.data {
                    Some(data) => forwarded.with_data(data.clone()),
                    None => forwarded,
                };
            }
        };
        RpcError::new(code, err.to_string())
    }
}

impl From<CommandError> for RpcError {
    fn from(err: CommandError) -> Self {
        let code = match &err {
            CommandError::NotFound(_) => error_codes::COMMAND_NOT_FOUND,
            CommandError::PermissionDenied(_) => error_codes::COMMAND_PERMISSION_DENIED,
            CommandError::Session(_) => 0,
        };
        match err {
            CommandError::Session(session) => RpcError::from(session),
            other => RpcError::new(code, other.to_string()),
        }
    }
}

impl From<McpHostError> for RpcError {
    fn from(err: McpHostError) -> Self {
        let code = match &err {
            McpHostError::NotFound(_) => error_codes::MCP_SERVER_NOT_FOUND,
            McpHostError::Validation(_) => error_codes::MCP_SERVER_VALIDATION_FAILED,
            McpHostError::NameConflict(..) => error_codes::MCP_SERVER_NAME_CONFLICT,
            McpHostError::ReadOnly(_) | McpHostError::NotOwner => error_codes::MCP_SERVER_READ_ONLY,
            McpHostError::Storage(_) => error_codes::INTERNAL_ERROR,
            McpHostError::Unavailable(_) => error_codes::MCP_SERVER_TEST_FAILED,
            McpHostError::TooLarge(_) => error_codes::INVALID_PARAMS,
        };
        RpcError::new(code, err.to_string())
    }
}

impl From<WorkspaceError> for RpcError {
    fn from(err: WorkspaceError) -> Self {
        let err = match err {
            WorkspaceError::Store(store) => return RpcError::from(store),
            other => other,
        };
        let code = match &err {
            WorkspaceError::InvalidParams(_) => error_codes::INVALID_PARAMS,
            WorkspaceError::ThreadNotFound(_) => error_codes::THREAD_NOT_FOUND,
            WorkspaceError::ChannelNotFound(_) => error_codes::EXTERNAL_CHANNEL_NOT_FOUND,
            WorkspaceError::ChannelInvalid(_) => error_codes::EXTERNAL_CHANNEL_VALIDATION_FAILED,
            WorkspaceError::ChannelConflict(_) => error_codes::EXTERNAL_CHANNEL_NAME_CONFLICT,
            // The suggestion could not be made (no model, not a repository, nothing changed,
            // the model failed or said nothing): `data.code` says which.
            _ => error_codes::INTERNAL_ERROR,
        };
        RpcError::new(code, err.to_string()).with_data(json!({ "code": err.code() }))
    }
}

impl From<crate::domain::subagent::SubAgentError> for RpcError {
    fn from(err: crate::domain::subagent::SubAgentError) -> Self {
        use crate::domain::subagent::SubAgentError as E;
        let err = match err {
            E::Workspace(workspace) => return RpcError::from(workspace),
            other => other,
        };
        let code = match &err {
            E::Workspace(_) => error_codes::INTERNAL_ERROR,
            E::NotFound(_) => error_codes::SUBAGENT_PROFILE_NOT_FOUND,
            E::Invalid(_) => error_codes::SUBAGENT_PROFILE_VALIDATION_FAILED,
            E::Protected(_) => error_codes::SUBAGENT_PROFILE_PROTECTED,
            E::InvalidParams(_) => error_codes::INVALID_PARAMS,
            E::Config(_) => error_codes::INTERNAL_ERROR,
        };
        RpcError::new(code, err.to_string())
    }
}

impl From<CronError> for RpcError {
    fn from(err: CronError) -> Self {
        match err {
            CronError::Store(store) => RpcError::from(store),
            CronError::NotFound(_) => RpcError::new(error_codes::CRON_JOB_NOT_FOUND, err.to_string()),
            CronError::Invalid(_) => RpcError::invalid_params(err.to_string()),
            CronError::Busy => RpcError::new(error_codes::SERVER_OVERLOADED, err.to_string()),
        }
    }
}

impl From<AutomationError> for RpcError {
    fn from(err: AutomationError) -> Self {
        let code = match &err {
            AutomationError::Store(_) | AutomationError::Io(_) => error_codes::INTERNAL_ERROR,
            AutomationError::NotFound(_) => error_codes::TASK_NOT_FOUND,
            AutomationError::ThreadNotFound(_) => error_codes::THREAD_NOT_FOUND,
            AutomationError::InvalidStatus(_) => error_codes::TASK_INVALID_STATUS,
            AutomationError::AlreadyExists(_) => error_codes::TASK_ALREADY_EXISTS,
            AutomationError::BindingInvalid(_) => error_codes::THREAD_BINDING_INVALID,
            AutomationError::Invalid(_) => error_codes::INVALID_PARAMS,
            AutomationError::Busy => error_codes::SERVER_OVERLOADED,
        };
        match err {
            AutomationError::Store(store) => RpcError::from(store),
            other => RpcError::new(code, other.to_string()),
        }
    }
}

impl From<SkillError> for RpcError {
    fn from(err: SkillError) -> Self {
        match err {
            SkillError::Config(config) => RpcError::from(config),
            SkillError::NotFound(_) => RpcError::new(error_codes::SKILL_NOT_FOUND, err.to_string()),
            SkillError::InvalidParams(_) => RpcError::invalid_params(err.to_string()),
            SkillError::Io { .. } => RpcError::internal(err),
        }
    }
}

impl From<PluginError> for RpcError {
    /// DotCraft's protocol names no plugin error codes: a request that cannot be done as asked is
    /// `-32602` (invalid params), `data.code` saying why (`PluginNotFound`, `PluginInvalid`,
    /// `PluginConflict`, `PluginNotRemovable`, `PluginPermissionDenied`); storage failures are
    /// internal errors.
    fn from(err: PluginError) -> Self {
        let code = err.code();
        match err {
            PluginError::Config(config) => RpcError::from(config),
            PluginError::Store(store) => RpcError::from(store),
            PluginError::Io(_) => {
                RpcError::new(error_codes::INTERNAL_ERROR, err.to_string()).with_data(json!({ "code": code }))
            }
            other => RpcError::invalid_params(other.to_string()).with_data(json!({ "code": code })),
        }
    }
}

impl From<AppError> for RpcError {
    fn from(err: AppError) -> Self {
        let code = err.code().to_owned();
        if let Some((log_state, seq)) = err.log_state() {
            tracing::error!(error = %err, "app log write failed");
            return RpcError::new(error_codes::INTERNAL_ERROR, err.to_string())
                .with_data(json!({ "code": code, "logState": log_state, "seq": seq }));
        }
        match err {
            AppError::Session(session) => RpcError::from(session),
            AppError::Store(store) => RpcError::from(store),
            AppError::InvalidParams(_) | AppError::InvalidManifest(_) | AppError::UnknownStateKey { .. } => {
                RpcError::invalid_params(err.to_string()).with_data(json!({ "code": code }))
            }
            other => RpcError::new(error_codes::APP_ERROR, other.to_string()).with_data(json!({ "code": code })),
        }
    }
}

/// A success response frame. A result that cannot be serialized is a bug; it becomes -32603.
pub(crate) fn reply_text<T: Serialize>(id: &RequestId, result: &T) -> String {
    jsonrpc::write_response(id, result).unwrap_or_else(|err| error_text(id, &RpcError::internal(err)))
}

pub(crate) fn error_text(id: &RequestId, err: &RpcError) -> String {
    jsonrpc::write_error(id, &err.to_object())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages_follow_the_protocol() {
        assert_eq!(RpcError::overloaded(32).code, -32001);
        assert_eq!(RpcError::overloaded(32).message, "Server overloaded; retry later.");
        assert_eq!(RpcError::not_initialized().message, "Not initialized");
        assert_eq!(RpcError::already_initialized().code, -32003);
        assert_eq!(RpcError::invalid_params("threadId: missing").code, -32602);
        assert_eq!(RpcError::from(StoreError::NotFound("thread")).code, -32603);
        assert_eq!(RpcError::from(SessionError::ThreadNotFound("t".into())).code, -32010);
        assert_eq!(RpcError::from(SessionError::ThreadNotActive { id: "t".into(), status: "paused" }).code, -32011);
        assert_eq!(RpcError::from(SessionError::TurnInProgress("t".into())).code, -32012);
        assert_eq!(RpcError::from(SessionError::TurnNotFound { thread: "t".into(), turn: "u".into() }).code, -32013);
        assert_eq!(RpcError::from(SessionError::TurnNotRunning("u".into())).code, -32014);
        assert_eq!(RpcError::from(SessionError::InvalidParams("x".into())).code, -32602);
        let draining = RpcError::from(SessionError::ShuttingDown);
        assert_eq!((draining.code, draining.data.unwrap()["reason"].as_str()), (-32001, Some("shuttingDown")));
    }
}
