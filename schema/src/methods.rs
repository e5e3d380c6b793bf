//! The method table: every method of the protocol is listed once here, and the typed request,
//! notification and server-request enums, the method-name constants and the JSON Schema listing
//! are all generated from that one list.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::acp::{
    AcpReadTextFileParams, AcpReadTextFileResult, AcpSessionMcpServersParams, AcpSessionMcpServersResult,
    AcpTerminalCreateParams, AcpTerminalCreateResult, AcpTerminalExitStatus, AcpTerminalOutputResult,
    AcpTerminalParams, AcpWriteTextFileParams,
};
use crate::app::{
    AppCommandParams, AppCommandResult, AppDescriptorApproveParams, AppDescriptorApproveResult, AppDiscoverParams,
    AppDiscoverResult, AppEmitParams, AppEventParams, AppExternalCallParams, AppInteractionParams, AppListParams,
    AppListResult, AppLogReadParams, AppLogReadResult, AppOpenParams, AppOpenResult, AppQueryParams, AppQueryResult,
    AppRegisterParams, AppRegisterResult, AppRegisteredParams, AppReplayedParams, AppUnregisterParams,
    AppUnregisteredParams, ExtAppCommandParams, ExtAppQueryParams,
};
use crate::approval::{ApprovalDecisionResult, ApprovalRequestParams};
use crate::automation::{
    AutomationOkResult, AutomationTask, AutomationTaskCreateParams, AutomationTaskCreateResult, AutomationTaskIdParams,
    AutomationTaskListParams, AutomationTaskListResult, AutomationTaskResult, AutomationTaskUpdateBindingParams,
    AutomationTaskUpdatedParams, AutomationTemplateIdParams, AutomationTemplateListParams,
    AutomationTemplateListResult, AutomationTemplateResult, AutomationTemplateSaveParams, WorktreeStatusParams,
    WorktreeStatusResult,
};
use crate::channel::{
    ChannelListParams, ChannelListResult, ChannelStatusParams, ChannelStatusResult, ExternalChannelListParams,
    ExternalChannelListResult, ExternalChannelNameParams, ExternalChannelResult, ExternalChannelUpsertParams,
    RemovedResult,
};
use crate::command::{CommandExecuteParams, CommandListParams, CommandListResult, CommandResult};
use crate::cron::{
    CronEnableParams, CronJobIdParams, CronJobResult, CronListParams, CronListResult, CronRunResult,
    CronStateChangedParams, HeartbeatTriggerParams, HeartbeatTriggerResult, JobResultParams,
};
use crate::delivery::{
    ExtChannelHeartbeatParams, ExtChannelSendParams, ExtChannelSendResult, ExtChannelToolCallParams, SystemEventParams,
};
use crate::initialize::{InitializeParams, InitializeResult, InitializedParams};
use crate::item::{
    CommandExecutionOutputDeltaParams, ItemEventParams, PlanUpdatedParams, TextDeltaParams,
    ToolCallArgumentsDeltaParams, TurnDiffUpdatedParams, UsageDeltaParams,
};
use crate::jsonrpc::decode_params;
use crate::mcp::{
    McpElicitationRequestParams, McpElicitationResult, McpListParams, McpListResult, McpNameParams, McpRemoveResult,
    McpResourceListParams, McpResourceListResult, McpResourceReadParams, McpResourceReadResult, McpServerParams,
    McpServerResult, McpStatusListResult, McpStatusUpdatedParams, McpTestResult, McpViewCallParams, McpViewCallResult,
    McpViewContextParams, McpViewOfferedParams, McpViewToolParams, McpViewToolResult, ToolCallProgressParams,
};
use crate::model::{ModelListParams, ModelListResult};
use crate::plugin::{
    PluginIdParams, PluginInstallParams, PluginListParams, PluginListResult, PluginMcpApproveParams, PluginResult,
    PluginSetEnabledParams,
};
use crate::roles::{Role, Roles};
use crate::skill::{
    SkillNameParams, SkillResult, SkillsListParams, SkillsListResult, SkillsReadResult, SkillsRestoreResult,
    SkillsSetEnabledParams, SkillsUninstallResult, SkillsViewResult,
};
use crate::subagent::{
    SubAgentChildrenListParams, SubAgentChildrenListResult, SubAgentControlParams, SubAgentControlResult,
    SubAgentGraphChangedParams, SubAgentProfileNameParams, SubAgentProfileResult, SubAgentProfileSetEnabledParams,
    SubAgentProfileUpsertParams, SubAgentProfilesListParams, SubAgentProfilesListResult, SubAgentProgressParams,
    SubAgentSettingsResult, SubAgentSettingsUpdateParams,
};
use crate::terminal::{
    TerminalCleanParams, TerminalEventParams, TerminalListParams, TerminalListResult, TerminalReadParams,
    TerminalResult, TerminalSessionParams, TerminalWriteParams,
};
use crate::thread::{
    EmptyResult, ThreadCompactResult, ThreadConfigUpdateParams, ThreadIdParams, ThreadListParams, ThreadListResult,
    ThreadModeSetParams, ThreadQueueUpdatedParams, ThreadReadParams, ThreadReadResult, ThreadRenameParams,
    ThreadRenamedParams, ThreadResult, ThreadResumeParams, ThreadResumedParams, ThreadRollbackParams,
    ThreadRuntimeChangedParams, ThreadStartParams, ThreadStatusChangedParams, ThreadSubscribeParams,
};
use crate::turn::{
    DynamicToolCallParams, DynamicToolCallResult, QueuedInputsResult, TurnCancelledParams, TurnEnqueueParams,
    TurnEnqueueResult, TurnFailedParams, TurnInterruptParams, TurnQueueRemoveParams, TurnResult, TurnStartParams,
    TurnSteerParams, TurnSteerResult,
};
use crate::view_storage::{
    McpViewStorageLoadParams, McpViewStorageLoadResult, McpViewStorageSaveParams, McpViewStorageSaveResult,
};
use crate::workspace::{
    CommitMessageSuggestParams, CommitMessageSuggestResult, WelcomeSuggestionsParams, WelcomeSuggestionsResult,
    WorkspaceConfigChangedParams, WorkspaceConfigSchemaParams, WorkspaceConfigSchemaResult, WorkspaceConfigValues,
};

/// A method of the protocol, named by a marker type (`methods::Initialize`).
pub trait Method {
    const NAME: &'static str;
    type Params: Serialize + for<'de> Deserialize<'de> + JsonSchema;
    type Result: Serialize + for<'de> Deserialize<'de> + JsonSchema;
}

/// One entry of the generated schema listing.
#[derive(Debug)]
pub struct MethodSchema {
    pub method: &'static str,
    pub params: Schema,
    /// `None` for notifications.
    pub result: Option<Schema>,
}

/// The roles column of a client table: `ROLES` (every method, in table order) and `roles`.
macro_rules! roles_of {
    ($enum_name:ident; $( $method:literal [$($role:ident),*] )*) => {
        impl $enum_name {
            /// Every method with the roles allowed to call it, in table order.
            pub const ROLES: &'static [(&'static str, Roles)] = &[$( ($method, Roles::of(&[$(Role::$role),*])) ),*];

            /// The roles allowed to call `method` (`None`: not in the table).
            pub fn roles(method: &str) -> Option<Roles> {
                match method {
                    $( $method => Some(Roles::of(&[$(Role::$role),*])), )*
                    _ => None,
                }
            }
        }
    };
}

/// Requests: a marker type per method, an enum of decoded requests, and a schema listing.
macro_rules! request_table {
    // A client table: each row names the roles allowed to call the method (`roles.rs`).
    (roles $enum_name:ident, $schemas_fn:ident; $( $(#[$doc:meta])* $variant:ident => $method:literal [$($role:ident),*] ($params:ty) -> $result:ty; )*) => {
        request_table! { $enum_name, $schemas_fn; $( $(#[$doc])* $variant => $method ($params) -> $result; )* }
        roles_of! { $enum_name; $( $method [$($role),*] )* }
    };
    ($enum_name:ident, $schemas_fn:ident; $( $(#[$doc:meta])* $variant:ident => $method:literal ($params:ty) -> $result:ty; )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug)]
            pub enum $variant {}
            impl Method for $variant {
                const NAME: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )*

        #[derive(Debug, Clone)]
        pub enum $enum_name {
            $( $variant($params), )*
        }

        impl $enum_name {
            /// Every method name in the table, in table order.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            pub fn method(&self) -> &'static str {
                match self { $( Self::$variant(_) => $method, )* }
            }

            /// `None` when the method is not in the table; `Some(Err(..))` when its params do not
            /// match (the message names the field).
            pub fn decode(method: &str, params: Option<&RawValue>) -> Option<Result<Self, String>> {
                match method {
                    $( $method => Some(decode_params::<$params>(params).map(Self::$variant)), )*
                    _ => None,
                }
            }

            /// Checks `result` against `method`'s result type (the message names the field);
            /// `None` when the method is not in the table.
            pub fn decode_result(method: &str, result: &RawValue) -> Option<Result<(), String>> {
                match method {
                    $( $method => Some(decode_params::<$result>(Some(result)).map(|_| ())), )*
                    _ => None,
                }
            }

            /// The params, serialized.
            pub fn params_json(&self) -> Result<serde_json::Value, serde_json::Error> {
                match self { $( Self::$variant(p) => serde_json::to_value(p), )* }
            }
        }

        pub fn $schemas_fn(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$( MethodSchema {
                method: $method,
                params: generator.subschema_for::<$params>(),
                result: Some(generator.subschema_for::<$result>()),
            }, )*]
        }
    };
}

/// Notifications: an enum of typed params and a schema listing.
macro_rules! notification_table {
    (roles $enum_name:ident, $schemas_fn:ident; $( $(#[$doc:meta])* $variant:ident => $method:literal [$($role:ident),*] ($params:ty); )*) => {
        notification_table! { $enum_name, $schemas_fn; $( $(#[$doc])* $variant => $method ($params); )* }
        roles_of! { $enum_name; $( $method [$($role),*] )* }
    };
    ($enum_name:ident, $schemas_fn:ident; $( $(#[$doc:meta])* $variant:ident => $method:literal ($params:ty); )*) => {
        #[derive(Debug, Clone)]
        pub enum $enum_name {
            $( $(#[$doc])* $variant($params), )*
        }

        impl $enum_name {
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            pub fn method(&self) -> &'static str {
                match self { $( Self::$variant(_) => $method, )* }
            }

            pub fn decode(method: &str, params: Option<&RawValue>) -> Option<Result<Self, String>> {
                match method {
                    $( $method => Some(decode_params::<$params>(params).map(Self::$variant)), )*
                    _ => None,
                }
            }

            /// The whole frame, `{"jsonrpc":"2.0","method":..,"params":..}`.
            pub fn to_frame(&self) -> Result<String, serde_json::Error> {
                match self { $( Self::$variant(p) => crate::jsonrpc::write_notification($method, p), )* }
            }
        }

        pub fn $schemas_fn(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$( MethodSchema {
                method: $method,
                params: generator.subschema_for::<$params>(),
                result: None,
            }, )*]
        }
    };
}

request_table! { roles ClientRequest, client_request_schemas;
    /// The handshake: the first request on every connection.
    Initialize => "initialize" [Owner, ChannelAdapter, OutsideAgent, Editor] (InitializeParams) -> InitializeResult;
    /// Create a thread.
    ThreadStart => "thread/start" [Owner, ChannelAdapter, Editor] (ThreadStartParams) -> ThreadResult;
    /// Make a paused (or any loaded) thread active again.
    ThreadResume => "thread/resume" [Owner, ChannelAdapter, Editor] (ThreadResumeParams) -> ThreadResult;
    /// Threads of an identity, most recently active first, a page at a time.
    ThreadList => "thread/list" [Owner, ChannelAdapter, Editor] (ThreadListParams) -> ThreadListResult;
    /// Read a thread without resuming it, optionally with (a page of) its turns.
    ThreadRead => "thread/read" [Owner, ChannelAdapter, Editor] (ThreadReadParams) -> ThreadReadResult;
    /// Origin channel names that may appear on threads (built-in, seen on threads, adapters').
    ChannelList => "channel/list" [Owner] (ChannelListParams) -> ChannelListResult;
    /// Drop turns from the end of the history.
    ThreadRollback => "thread/rollback" [Owner, ChannelAdapter] (ThreadRollbackParams) -> ThreadResult;
    /// Receive this thread's turn and item notifications on this connection.
    ThreadSubscribe => "thread/subscribe" [Owner, ChannelAdapter, Editor] (ThreadSubscribeParams) -> EmptyResult;
    ThreadUnsubscribe => "thread/unsubscribe" [Owner, ChannelAdapter, Editor] (ThreadIdParams) -> EmptyResult;
    ThreadPause => "thread/pause" [Owner, ChannelAdapter] (ThreadIdParams) -> EmptyResult;
    ThreadArchive => "thread/archive" [Owner, ChannelAdapter] (ThreadIdParams) -> EmptyResult;
    ThreadUnarchive => "thread/unarchive" [Owner, ChannelAdapter] (ThreadIdParams) -> EmptyResult;
    ThreadDelete => "thread/delete" [Owner, ChannelAdapter] (ThreadIdParams) -> EmptyResult;
    ThreadModeSet => "thread/mode/set" [Owner, ChannelAdapter, Editor] (ThreadModeSetParams) -> EmptyResult;
    ThreadCompact => "thread/compact" [Owner, ChannelAdapter, Editor] (ThreadIdParams) -> ThreadCompactResult;
    ThreadRename => "thread/rename" [Owner, ChannelAdapter] (ThreadRenameParams) -> EmptyResult;
    ThreadConfigUpdate => "thread/config/update" [Owner, ChannelAdapter, Editor] (ThreadConfigUpdateParams) -> EmptyResult;
    /// An ACP session's own MCP servers, connected for its thread while this connection lasts
    /// (appserver extension).
    AcpSessionMcpServers => "ext/acp/session/mcpServers" [Owner, Editor] (AcpSessionMcpServersParams) -> AcpSessionMcpServersResult;
    /// Submit input and start the agent; the turn streams as notifications.
    TurnStart => "turn/start" [Owner, ChannelAdapter, Editor] (TurnStartParams) -> TurnResult;
    TurnInterrupt => "turn/interrupt" [Owner, ChannelAdapter, Editor] (TurnInterruptParams) -> EmptyResult;
    /// Queue input to run after the current turn.
    TurnEnqueue => "turn/enqueue" [Owner, ChannelAdapter] (TurnEnqueueParams) -> TurnEnqueueResult;
    TurnQueueRemove => "turn/queue/remove" [Owner, ChannelAdapter] (TurnQueueRemoveParams) -> QueuedInputsResult;
    /// Promote a queued input into guidance for the running turn.
    TurnSteer => "turn/steer" [Owner, ChannelAdapter] (TurnSteerParams) -> TurnSteerResult;
    /// Register (or re-register, replaying its log) an app window owned by this connection.
    AppRegister => "app/register" [Owner] (AppRegisterParams) -> AppRegisterResult;
    AppUnregister => "app/unregister" [Owner] (AppUnregisterParams) -> EmptyResult;
    /// `app/emit` sent with an id: answered `{}`, or refused (`PERMISSION_DENIED` when this
    /// connection does not host the window). Also accepted as a notification.
    AppEmit => "app/emit" [Owner] (AppEmitParams) -> EmptyResult;
    /// Registered apps, names only (progressive discovery).
    AppList => "app/list" [Owner, App, OutsideAgent] (AppListParams) -> AppListResult;
    AppQuery => "app/query" [Owner, App, OutsideAgent] (AppQueryParams) -> AppQueryResult;
    AppCommand => "app/command" [Owner, App] (AppCommandParams) -> AppCommandResult;
    AppLogRead => "app/log/read" [Owner] (AppLogReadParams) -> AppLogReadResult;
    /// Open a workspace file with the app associated with its extension.
    AppOpen => "app/open" [Owner] (AppOpenParams) -> AppOpenResult;
    /// Fetch (or take from the cache) a web app's `/.well-known/aai.json` and register it.
    AppDiscover => "app/discover" [Owner] (AppDiscoverParams) -> AppDiscoverResult;
    /// Approve (and pin) the program of a descriptor app that is new or changed; only a client
    /// acting for the workspace's owner may.
    AppDescriptorApprove => "app/descriptor/approve" [Owner] (AppDescriptorApproveParams) -> AppDescriptorApproveResult;
    /// Slash commands the server knows (built-in and custom).
    CommandList => "command/list" [Owner, ChannelAdapter, Editor] (CommandListParams) -> CommandListResult;
    /// Run a slash command (built-ins run here; custom ones expand to a prompt).
    CommandExecute => "command/execute" [Owner, ChannelAdapter] (CommandExecuteParams) -> CommandResult;
    /// Models of the configured provider (only when one is configured).
    ModelList => "model/list" [Owner, ChannelAdapter, Editor] (ModelListParams) -> ModelListResult;
    /// MCP servers the agent may use (section 22): their definitions.
    McpList => "mcp/list" [Owner] (McpListParams) -> McpListResult;
    McpGet => "mcp/get" [Owner] (McpNameParams) -> McpServerResult;
    /// Create or replace a workspace MCP server definition.
    McpUpsert => "mcp/upsert" [Owner] (McpServerParams) -> McpServerResult;
    McpRemove => "mcp/remove" [Owner] (McpNameParams) -> McpRemoveResult;
    /// Every server's runtime state.
    McpStatusList => "mcp/status/list" [Owner] (McpListParams) -> McpStatusListResult;
    /// Probe a definition without keeping it.
    McpTest => "mcp/test" [Owner] (McpServerParams) -> McpTestResult;
    /// Read a resource of a running server (an MCP Apps view's HTML, or any its views read;
    /// bounded in size) (appserver extension).
    McpResourcesRead => "mcp/resources/read" [Owner] (McpResourceReadParams) -> McpResourceReadResult;
    /// One page of a running server's resources, for its views (appserver extension).
    McpResourcesList => "mcp/resources/list" [Owner] (McpResourceListParams) -> McpResourceListResult;
    /// A view's call of its own server's tool, gated and logged per view (appserver extension).
    McpViewCall => "mcp/view/call" [Owner] (McpViewCallParams) -> McpViewCallResult;
    /// A view's context for the model (`ui/update-model-context`), kept per thread and view
    /// (appserver extension).
    McpViewContext => "mcp/view/context" [Owner] (McpViewContextParams) -> EmptyResult;
    /// The tool that opened a view, as its running server lists it (appserver extension).
    McpViewTool => "mcp/view/tool" [Owner] (McpViewToolParams) -> McpViewToolResult;
    /// A view instance's storage (the `localStorage` the desktop gives it), kept per thread and
    /// view, bounded (appserver extension).
    McpViewStorageLoad => "mcp/view/storage/load" [Owner] (McpViewStorageLoadParams) -> McpViewStorageLoadResult;
    /// Changes to a view instance's storage, all or none, within its bound (appserver extension).
    McpViewStorageSave => "mcp/view/storage/save" [Owner] (McpViewStorageSaveParams) -> McpViewStorageSaveResult;
    /// Background terminals (section 19A), of one thread or all.
    TerminalList => "terminal/list" [Owner] (TerminalListParams) -> TerminalListResult;
    /// A terminal's output since the last read (waiting up to `waitMs` for some).
    TerminalRead => "terminal/read" [Owner] (TerminalReadParams) -> TerminalResult;
    /// Write to a terminal's stdin, then return its output after `yieldTimeMs`.
    TerminalWrite => "terminal/write" [Owner] (TerminalWriteParams) -> TerminalResult;
    /// Kill a terminal's process group.
    TerminalStop => "terminal/stop" [Owner] (TerminalSessionParams) -> TerminalResult;
    /// Stop every terminal of a thread and forget the finished ones.
    TerminalClean => "terminal/clean" [Owner] (TerminalCleanParams) -> TerminalListResult;
    /// The config file's sections and fields, and when a change of each takes effect (section 25.2).
    WorkspaceConfigSchema => "workspace/config/schema" [Owner] (WorkspaceConfigSchemaParams) -> WorkspaceConfigSchemaResult;
    /// Write workspace defaults into `.appserver/config.toml`; echoes what was written (section 25.3).
    WorkspaceConfigUpdate => "workspace/config/update" [Owner] (WorkspaceConfigValues) -> WorkspaceConfigValues;
    /// A commit message for the diff of some paths, from the model (section 5.3).
    WorkspaceCommitMessageSuggest => "workspace/commitMessage/suggest" [Owner] (CommitMessageSuggestParams) -> CommitMessageSuggestResult;
    /// Welcome-screen suggestions from the workspace's recent threads (section 5.4).
    WelcomeSuggestions => "welcome/suggestions" [Owner] (WelcomeSuggestionsParams) -> WelcomeSuggestionsResult;
    /// The configured external channels and whether an adapter of each is connected (section 20).
    ChannelStatus => "channel/status" [Owner] (ChannelStatusParams) -> ChannelStatusResult;
    /// External channel configs (section 23).
    ExternalChannelList => "externalChannel/list" [Owner] (ExternalChannelListParams) -> ExternalChannelListResult;
    ExternalChannelGet => "externalChannel/get" [Owner] (ExternalChannelNameParams) -> ExternalChannelResult;
    ExternalChannelUpsert => "externalChannel/upsert" [Owner] (ExternalChannelUpsertParams) -> ExternalChannelResult;
    ExternalChannelRemove => "externalChannel/remove" [Owner] (ExternalChannelNameParams) -> RemovedResult;
    /// A thread's sub-agent children (section 24.10).
    SubAgentChildrenList => "subagent/children/list" [Owner, ChannelAdapter] (SubAgentChildrenListParams) -> SubAgentChildrenListResult;
    /// Cancel a child's running turn (if any) and close its edge.
    SubAgentClose => "subagent/close" [Owner] (SubAgentControlParams) -> SubAgentControlResult;
    /// Reopen a child's edge (sends it nothing).
    SubAgentResume => "subagent/resume" [Owner] (SubAgentControlParams) -> SubAgentControlResult;
    /// Built-in and workspace sub-agent profiles, and the workspace's settings (section 24).
    SubAgentProfilesList => "subagent/profiles/list" [Owner] (SubAgentProfilesListParams) -> SubAgentProfilesListResult;
    SubAgentSettingsUpdate => "subagent/settings/update" [Owner] (SubAgentSettingsUpdateParams) -> SubAgentSettingsResult;
    SubAgentProfilesSetEnabled => "subagent/profiles/setEnabled" [Owner] (SubAgentProfileSetEnabledParams) -> SubAgentProfileResult;
    SubAgentProfilesUpsert => "subagent/profiles/upsert" [Owner] (SubAgentProfileUpsertParams) -> SubAgentProfileResult;
    SubAgentProfilesRemove => "subagent/profiles/remove" [Owner] (SubAgentProfileNameParams) -> RemovedResult;
    /// Installed skills, workspace ones first (section 18).
    SkillsList => "skills/list" [Owner] (SkillsListParams) -> SkillsListResult;
    /// A skill's raw `SKILL.md` with its frontmatter parsed.
    SkillsRead => "skills/read" [Owner] (SkillNameParams) -> SkillsReadResult;
    /// A skill's body as the agent gets it.
    SkillsView => "skills/view" [Owner] (SkillNameParams) -> SkillsViewResult;
    SkillsRestoreOriginal => "skills/restoreOriginal" [Owner] (SkillNameParams) -> SkillsRestoreResult;
    SkillsSetEnabled => "skills/setEnabled" [Owner] (SkillsSetEnabledParams) -> SkillResult;
    /// Delete a workspace or user skill's folder.
    SkillsUninstall => "skills/uninstall" [Owner] (SkillNameParams) -> SkillsUninstallResult;
    /// Plugins in the workspace (section 18.9).
    PluginList => "plugin/list" [Owner] (PluginListParams) -> PluginListResult;
    PluginView => "plugin/view" [Owner] (PluginIdParams) -> PluginResult;
    /// Install a plugin from a folder or archive (`path`, appserver extension); owner only.
    PluginInstall => "plugin/install" [Owner] (PluginInstallParams) -> PluginResult;
    /// Delete a plugin installed by `plugin/install`; owner only.
    PluginRemove => "plugin/remove" [Owner] (PluginIdParams) -> PluginResult;
    PluginSetEnabled => "plugin/setEnabled" [Owner] (PluginSetEnabledParams) -> PluginResult;
    /// Approve a plugin MCP server's program or URL as it is now (appserver extension); owner only.
    PluginMcpApprove => "plugin/mcp/approve" [Owner] (PluginMcpApproveParams) -> PluginResult;
    /// Scheduled jobs (section 16).
    CronList => "cron/list" [Owner] (CronListParams) -> CronListResult;
    CronRemove => "cron/remove" [Owner] (CronJobIdParams) -> RemovedResult;
    CronEnable => "cron/enable" [Owner] (CronEnableParams) -> CronJobResult;
    /// Queue one run of a job now.
    CronRun => "cron/run" [Owner] (CronJobIdParams) -> CronRunResult;
    /// Run `.appserver/HEARTBEAT.md` now, on the heartbeat thread (section 17); long-running.
    HeartbeatTrigger => "heartbeat/trigger" [Owner] (HeartbeatTriggerParams) -> HeartbeatTriggerResult;
    /// Automation tasks (DotCraft's automations-lifecycle §13): the caller's own tasks only.
    AutomationTaskList => "automation/task/list" [Owner, ChannelAdapter] (AutomationTaskListParams) -> AutomationTaskListResult;
    /// One task, as the task itself (DotCraft's server answers it unwrapped).
    AutomationTaskRead => "automation/task/read" [Owner, ChannelAdapter] (AutomationTaskIdParams) -> AutomationTask;
    AutomationTaskCreate => "automation/task/create" [Owner, ChannelAdapter] (AutomationTaskCreateParams) -> AutomationTaskCreateResult;
    /// Run a task now (-32052 while it runs).
    AutomationTaskRun => "automation/task/run" [Owner, ChannelAdapter] (AutomationTaskIdParams) -> AutomationTaskResult;
    AutomationTaskUpdateBinding => "automation/task/updateBinding" [Owner, ChannelAdapter] (AutomationTaskUpdateBindingParams) -> AutomationTaskResult;
    AutomationTaskDelete => "automation/task/delete" [Owner, ChannelAdapter] (AutomationTaskIdParams) -> AutomationOkResult;
    /// Remove a task's managed worktree and branch, keeping the task (-32052 while it runs).
    AutomationTaskDiscardWorktree => "automation/task/discardWorktree" [Owner, ChannelAdapter] (AutomationTaskIdParams) -> AutomationTaskResult;
    /// Built-in templates, then the workspace's user templates.
    /// The managed worktree a thread works in (an automation task's): changes and commits ahead.
    WorktreeStatus => "worktree/status" [Owner, ChannelAdapter] (WorktreeStatusParams) -> WorktreeStatusResult;
    AutomationTemplateList => "automation/template/list" [Owner] (AutomationTemplateListParams) -> AutomationTemplateListResult;
    /// Create or replace a user template (`.appserver/automations/templates/<id>/template.md`).
    AutomationTemplateSave => "automation/template/save" [Owner] (AutomationTemplateSaveParams) -> AutomationTemplateResult;
    AutomationTemplateDelete => "automation/template/delete" [Owner] (AutomationTemplateIdParams) -> AutomationOkResult;
}

notification_table! { roles ClientNotification, client_notification_schemas;
    /// The client is ready to receive notifications.
    Initialized => "initialized" [Owner, ChannelAdapter, OutsideAgent, Editor] (InitializedParams);
    /// A progress event of a streaming app command.
    AppEmit => "app/emit" [Owner] (AppEmitParams);
    /// Something the user did in an app, for the agent.
    AppInteraction => "app/interaction" [Owner] (AppInteractionParams);
}

notification_table! { ServerNotification, server_notification_schemas;
    ThreadStarted => "thread/started" (ThreadResult);
    ThreadResumed => "thread/resumed" (ThreadResumedParams);
    ThreadRenamed => "thread/renamed" (ThreadRenamedParams);
    ThreadDeleted => "thread/deleted" (ThreadIdParams);
    ThreadStatusChanged => "thread/statusChanged" (ThreadStatusChangedParams);
    ThreadRuntimeChanged => "thread/runtimeChanged" (ThreadRuntimeChangedParams);
    ThreadQueueUpdated => "thread/queue/updated" (ThreadQueueUpdatedParams);
    TurnStarted => "turn/started" (TurnResult);
    TurnCompleted => "turn/completed" (TurnResult);
    TurnFailed => "turn/failed" (TurnFailedParams);
    TurnCancelled => "turn/cancelled" (TurnCancelledParams);
    ItemStarted => "item/started" (ItemEventParams);
    ItemCompleted => "item/completed" (ItemEventParams);
    AgentMessageDelta => "item/agentMessage/delta" (TextDeltaParams);
    ReasoningDelta => "item/reasoning/delta" (TextDeltaParams);
    ToolCallArgumentsDelta => "item/toolCall/argumentsDelta" (ToolCallArgumentsDeltaParams);
    UsageDelta => "item/usage/delta" (UsageDeltaParams);
    /// Output of a `commandExecution` item (only to clients that declared
    /// `commandExecutionStreaming`).
    CommandExecutionOutputDelta => "item/commandExecution/outputDelta" (CommandExecutionOutputDeltaParams);
    /// The turn's aggregate unified diff, after each file change.
    TurnDiffUpdated => "turn/diff/updated" (TurnDiffUpdatedParams);
    /// Background terminal lifecycle (only to clients that declared `backgroundTerminals`).
    TerminalStarted => "terminal/started" (TerminalEventParams);
    TerminalOutputDelta => "terminal/outputDelta" (TerminalEventParams);
    TerminalCompleted => "terminal/completed" (TerminalEventParams);
    TerminalStalled => "terminal/stalled" (TerminalEventParams);
    TerminalCleaned => "terminal/cleaned" (TerminalEventParams);
    PlanUpdated => "plan/updated" (PlanUpdatedParams);
    /// An approval was decided (before the `approvalResponse` item's `item/completed`).
    ItemApprovalResolved => "item/approval/resolved" (ItemEventParams);
    AppRegistered => "app/registered" (AppRegisteredParams);
    AppUnregistered => "app/unregistered" (AppUnregisteredParams);
    AppReplayed => "app/replayed" (AppReplayedParams);
    AppEvent => "app/event" (AppEventParams);
    /// An outside agent (an MCP client) or an app ran, or was refused, an app command.
    AppExternalCall => "app/externalCall" (AppExternalCallParams);
    /// One MCP server's runtime state changed (section 22.10).
    McpStatusUpdated => "mcp/status/updated" (McpStatusUpdatedParams);
    /// The agent called a tool that declares an MCP Apps view (appserver extension).
    McpViewOffered => "mcp/view/offered" (McpViewOfferedParams);
    /// An MCP server's progress during the agent's call of its tool (appserver extension).
    ToolCallProgress => "item/toolCall/progress" (ToolCallProgressParams);
    /// The workspace's configuration was written (section 25.5; not to clients that declared
    /// `configChange: false`).
    WorkspaceConfigChanged => "workspace/configChanged" (WorkspaceConfigChangedParams);
    /// A sub-agent edge was made or changed (section 6.5).
    SubAgentGraphChanged => "subagent/graphChanged" (SubAgentGraphChangedParams);
    /// A complete snapshot of the sub-agents a turn's `SpawnAgent` calls run (section 6.5).
    SubAgentProgress => "subagent/progress" (SubAgentProgressParams);
    /// A cron job changed, ran, or was removed (section 16.8).
    CronStateChanged => "cron/stateChanged" (CronStateChangedParams);
    /// A cron run's result (section 6.9).
    JobResult => "system/jobResult" (JobResultParams);
    /// An automation task's status, binding or next run changed (to its owner's clients).
    AutomationTaskUpdated => "automation/task/updated" (AutomationTaskUpdatedParams);
    /// A system-level event (section 6.7): `channelRejected` before an adapter is closed,
    /// `deliveryFailed` when a message for a channel was given up.
    SystemEvent => "system/event" (SystemEventParams);
}

request_table! { ServerRequest, server_request_schemas;
    /// Ask the client to approve a gated tool call.
    ItemApprovalRequest => "item/approval/request" (ApprovalRequestParams) -> ApprovalDecisionResult;
    /// Read a state key of an app window from the connection that hosts it.
    ExtAppQuery => "ext/app/query" (ExtAppQueryParams) -> AppQueryResult;
    /// Run a command in an app window (`replay: true` while replaying its log).
    ExtAppCommand => "ext/app/command" (ExtAppCommandParams) -> AppCommandResult;
    /// Run a dynamic tool the client declared on `thread/start`.
    DynamicToolCall => "item/tool/call" (DynamicToolCallParams) -> DynamicToolCallResult;
    /// Deliver a message through a channel adapter (section 11.2.1).
    ExtChannelSend => "ext/channel/send" (ExtChannelSendParams) -> ExtChannelSendResult;
    /// Run a tool a channel adapter declared in `channelTools` (section 11.2.3).
    ExtChannelToolCall => "ext/channel/toolCall" (ExtChannelToolCallParams) -> DynamicToolCallResult;
    /// Health probe of a channel adapter; it answers `{}` at once.
    ExtChannelHeartbeat => "ext/channel/heartbeat" (ExtChannelHeartbeatParams) -> EmptyResult;
    /// An MCP server's `elicitation/create` during the agent's call of its tool: the user's
    /// answer (appserver extension).
    McpElicitationRequest => "mcp/elicitation/request" (McpElicitationRequestParams) -> McpElicitationResult;
    /// ACP tool proxy: read a text file as the editor has it (section 11.3).
    AcpReadTextFile => "ext/acp/fs/readTextFile" (AcpReadTextFileParams) -> AcpReadTextFileResult;
    /// ACP tool proxy: write a text file through the editor.
    AcpWriteTextFile => "ext/acp/fs/writeTextFile" (AcpWriteTextFileParams) -> EmptyResult;
    /// ACP tool proxy: start a command in an editor terminal.
    AcpTerminalCreate => "ext/acp/terminal/create" (AcpTerminalCreateParams) -> AcpTerminalCreateResult;
    /// ACP tool proxy: an editor terminal's output so far.
    AcpTerminalGetOutput => "ext/acp/terminal/getOutput" (AcpTerminalParams) -> AcpTerminalOutputResult;
    /// ACP tool proxy: wait until an editor terminal's command has exited.
    AcpTerminalWaitForExit => "ext/acp/terminal/waitForExit" (AcpTerminalParams) -> AcpTerminalExitStatus;
    /// ACP tool proxy: kill an editor terminal's command (the terminal stays).
    AcpTerminalKill => "ext/acp/terminal/kill" (AcpTerminalParams) -> EmptyResult;
    /// ACP tool proxy: release an editor terminal (killing its command if still running).
    AcpTerminalRelease => "ext/acp/terminal/release" (AcpTerminalParams) -> EmptyResult;
}
