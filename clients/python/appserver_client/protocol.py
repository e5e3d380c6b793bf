"""Wire types of the appserver protocol.

Generated from the Rust types by `cargo run -p appserver-protocol --bin appserver-schema`;
do not edit. Integers are `int`, other numbers `float`.
"""

# ruff: noqa
from typing import Any, Dict, List, Literal, NotRequired, Optional, Tuple, TypedDict, Union

PROTOCOL_VERSION = "1"

# An environment variable of an editor terminal.
AcpEnvVariable = TypedDict("AcpEnvVariable", {
    "name": str,
    "value": str,
})

# `capabilities.acpExtensions` of `initialize`: which `ext/acp/*` requests the client handles.
AcpExtensions = TypedDict("AcpExtensions", {
    "extensions": NotRequired[List[str]],  # Custom extension families (`ext/acp/<family>/<method>`); accepted, none is used by this
    "fsReadTextFile": NotRequired[Optional[bool]],  # `ext/acp/fs/readTextFile`.
    "fsWriteTextFile": NotRequired[Optional[bool]],  # `ext/acp/fs/writeTextFile`.
    "terminalCreate": NotRequired[Optional[bool]],  # `ext/acp/terminal/*`.
})

# Params of `ext/acp/fs/readTextFile` (server → client): the file's text as the editor has it
# (unsaved changes included).
AcpReadTextFileParams = TypedDict("AcpReadTextFileParams", {
    "threadId": str,
    "path": str,  # Absolute path.
    "limit": NotRequired[Optional[int]],  # Lines to read.
    "line": NotRequired[Optional[int]],  # First line to read, 1-based.
})

AcpReadTextFileResult = TypedDict("AcpReadTextFileResult", {
    "content": str,
})

# Params of `ext/acp/session/mcpServers` (appserver extension): the MCP servers an ACP editor
# gave a session (`session/new`, `session/load`), connected for that thread while the calling
# connection lasts; an empty list disconnects them.
AcpSessionMcpServersParams = TypedDict("AcpSessionMcpServersParams", {
    "threadId": str,
    "servers": List["McpServerConfig"],
})

# Result of `ext/acp/session/mcpServers`: each server's state once its first start settled.
AcpSessionMcpServersResult = TypedDict("AcpSessionMcpServersResult", {
    "servers": List["McpServerStatus"],
})

# Params of `ext/acp/terminal/create` (server → client): the editor starts `command` with
# `args` (no shell in between) in `cwd`, in a terminal it shows.
AcpTerminalCreateParams = TypedDict("AcpTerminalCreateParams", {
    "threadId": str,
    "command": str,
    "args": NotRequired[List[str]],
    "cwd": NotRequired[Optional[str]],
    "env": NotRequired[List["AcpEnvVariable"]],
    "outputByteLimit": NotRequired[Optional[int]],  # The most output the editor keeps (its tail, cut at a character boundary).
})

AcpTerminalCreateResult = TypedDict("AcpTerminalCreateResult", {
    "terminalId": str,
})

# How an editor terminal's command ended: its exit code, or the signal that ended it.
AcpTerminalExitStatus = TypedDict("AcpTerminalExitStatus", {
    "exitCode": NotRequired[Optional[int]],
    "signal": NotRequired[Optional[str]],
})

# Result of `ext/acp/terminal/getOutput`.
AcpTerminalOutputResult = TypedDict("AcpTerminalOutputResult", {
    "output": str,
    "exitStatus": NotRequired[Optional["AcpTerminalExitStatus"]],
    "truncated": NotRequired[bool],
})

# Params of `ext/acp/terminal/getOutput`, `…/waitForExit`, `…/kill` and `…/release`.
AcpTerminalParams = TypedDict("AcpTerminalParams", {
    "threadId": str,
    "terminalId": str,
})

# Params of `ext/acp/fs/writeTextFile` (server → client): the editor writes the file (its
# buffer, if open), creating it when absent. Result: `{}`.
AcpWriteTextFileParams = TypedDict("AcpWriteTextFileParams", {
    "threadId": str,
    "path": str,  # Absolute path.
    "content": str,
})

AppCaller = TypedDict("AppCaller", {
    "kind": Literal["agent"],
    "threadId": str,
})

AppCaller2 = TypedDict("AppCaller2", {
    "kind": Literal["mcp"],
    "declaredName": str,
    "sessionId": NotRequired[str],  # Empty in log entries written before sessions were recorded.
})

AppCaller3 = TypedDict("AppCaller3", {
    "kind": Literal["app"],
    "windowId": str,
    "appId": str,
})

AppCaller4 = TypedDict("AppCaller4", {
    "kind": Literal["client"],
    "connection": str,
    "declaredName": str,
})

# Who made an app query or command. A name the caller gave itself is a *declared* name: the
# server shows it, and never treats it as proof of who the caller is.
AppCaller = Union["AppCaller", "AppCaller2", "AppCaller3", "AppCaller4"]

# The app command an approval is about.
AppCommandApproval = TypedDict("AppCommandApproval", {
    "windowId": str,
    "appId": str,
    "command": str,
    "params": Any,
    "caller": NotRequired[Optional["AppCaller"]],  # Who asks to run it (appserver extension).
})

AppCommandDescriptor = TypedDict("AppCommandDescriptor", {
    "description": str,
    "args": NotRequired[Any],  # A descriptive shape of the params (the Robutler dialect, e.g. `{"index": "number"}`): shown
    "params": NotRequired[Any],  # JSON Schema the params must match (checked by the server before the app is called).
    "replay": NotRequired[Optional[bool]],  # `false`: the command is logged but never replayed (a streaming render, a file import).
    "returns": NotRequired[Any],
    "streams": NotRequired[Optional[List[str]]],  # Event types this command emits while it runs (it may return a `runId` at once).
})

AppCommandParams = TypedDict("AppCommandParams", {
    "windowId": str,
    "command": str,  # A declared command, or a built-in (`__describe`, `__getState`).
    "callerWindowId": NotRequired[Optional[str]],  # The app window on whose behalf this connection calls (it must host it). On the window
    "params": NotRequired[Any],
    "timeoutMs": NotRequired[Optional[int]],
})

AppCommandResult = TypedDict("AppCommandResult", {
    "result": Any,
})

# Params of `app/descriptor/approve`: run the program of a descriptor app that is new or whose
# descriptor changed (`needsApproval` in `app/list`).
AppDescriptorApproveParams = TypedDict("AppDescriptorApproveParams", {
    "windowId": str,
})

# What was approved and is now pinned: the app runs this program until its descriptor changes.
AppDescriptorApproveResult = TypedDict("AppDescriptorApproveResult", {
    "windowId": str,
    "program": str,  # The program, as started (a path, or a name looked up in `PATH`).
    "args": List[str],
    "cwd": str,  # The working directory.
    "descriptorSha256": str,  # SHA-256 (hex) of the descriptor file.
})

# Params of `app/discover`: a web app by its URL (`https://host`), or by a name the user
# confirmed before. With both, the name is remembered for the URL once the fetch succeeds.
AppDiscoverParams = TypedDict("AppDiscoverParams", {
    "name": NotRequired[Optional[str]],
    "url": NotRequired[Optional[str]],
})

AppDiscoverResult = TypedDict("AppDiscoverResult", {
    "windowId": str,  # The window the web app is registered as: `web:<app.id>@<origin>` (the origin as `host`,
    "url": str,  # The app's origin, e.g. `https://notion.so`.
    "descriptor": Any,  # The descriptor as published.
    "fetchedAt": str,  # When it was fetched (ISO 8601).
    "expiresAt": str,  # Until when it is served from the cache without a new fetch.
    "cached": bool,  # `true`: served from the cache without a fetch.
    "stale": bool,  # `true`: the fetch failed and this is an expired copy.
})

# Params of the `app/emit` notification (host → server): a progress event of a streaming command.
AppEmitParams = TypedDict("AppEmitParams", {
    "windowId": str,
    "runId": str,
    "type": str,
    "payload": NotRequired[Any],
})

AppEventDescriptor = TypedDict("AppEventDescriptor", {
    "description": str,
})

# Params of `app/event`.
AppEventParams = TypedDict("AppEventParams", {
    "windowId": str,
    "runId": str,
    "type": str,
    "payload": NotRequired[Any],
})

# Params of `app/externalCall`: a caller that is neither a thread's agent nor a client acting
# itself — an outside agent connected through the MCP server, or an app calling another app —
# called a command on a window. Sent to every client once the call is decided, so a user sees
# what was done to their app, and by whom.
AppExternalCallParams = TypedDict("AppExternalCallParams", {
    "windowId": str,
    "command": str,
    "params": Any,
    "caller": "AppCaller",  # Who called.
    "status": str,  # `done` (the app ran it; it is in the replay log), `declined` (no approval), `failed`, or
    "detail": NotRequired[Any],  # The app's result (`done`) or why it did not run.
})

# Params of the `app/interaction` notification (host → server): what the user did in the app.
AppInteractionParams = TypedDict("AppInteractionParams", {
    "windowId": str,
    "content": str,
})

# The `interface` wrapper of a Robutler manifest.
AppInterface = TypedDict("AppInterface", {
    "commands": NotRequired[Dict[str, "AppCommandDescriptor"]],
    "description": NotRequired[Optional[str]],
    "events": NotRequired[Optional[Dict[str, "AppEventDescriptor"]]],
})

AppListParams = TypedDict("AppListParams", {
    "callerWindowId": NotRequired[Optional[str]],  # The app window on whose behalf this connection asks (it must host it): its manifest must
})

AppListResult = TypedDict("AppListResult", {
    "apps": List["AppSummary"],
})

# One replay-log entry: a command the app answered successfully.
AppLogEntry = TypedDict("AppLogEntry", {
    "seq": int,
    "command": str,
    "params": Any,
    "result": Any,
    "recordedAt": str,
    "caller": NotRequired[Optional["AppCaller"]],  # Who ran the command (absent on entries written before callers were recorded).
    "replayError": NotRequired[Optional[str]],  # Why the app rejected this entry at its last replay, if it did.
})

AppLogReadParams = TypedDict("AppLogReadParams", {
    "windowId": str,
    "afterSeq": NotRequired[Optional[int]],  # Entries with a sequence number greater than this (default 0: from the start).
    "limit": NotRequired[Optional[int]],  # At most this many entries (default 100, at most 1000).
})

AppLogReadResult = TypedDict("AppLogReadResult", {
    "entries": List["AppLogEntry"],
    "nextSeq": NotRequired[Optional[int]],  # Pass as `afterSeq` to read on; absent at the end of the log.
})

# What an app can do: its state keys and commands (and the events its streaming commands emit).
AppManifest = TypedDict("AppManifest", {
    "appId": NotRequired[str],  # The app's id (`id` is accepted too, as in the Robutler manifests).
    "commands": NotRequired[Dict[str, "AppCommandDescriptor"]],
    "description": NotRequired[Optional[str]],
    "events": NotRequired[Optional[Dict[str, "AppEventDescriptor"]]],
    "interface": NotRequired[Optional["AppInterface"]],  # The Robutler dialect: `description`, `commands` and `events` wrapped in `interface`. The
    "name": NotRequired[str],
    "permissions": NotRequired[Optional["AppPermissions"]],  # What the app may do beyond its own window (appserver extension). The web desktop takes it
    "state": NotRequired[Dict[str, "AppStateDescriptor"]],
})

AppOpenParams = TypedDict("AppOpenParams", {
    "path": str,  # A file inside the workspace (relative to it, or absolute).
})

AppOpenResult = TypedDict("AppOpenResult", {
    "windowId": str,
    "command": str,
    "result": Any,
})

# Permissions an app declares (`permissions` of its manifest).
AppPermissions = TypedDict("AppPermissions", {
    "callApps": NotRequired[bool],  # The app may list, query and command *other* app windows (`app_list`, `app_query`,
})

AppQueryParams = TypedDict("AppQueryParams", {
    "windowId": str,
    "stateKey": str,  # A declared state key, or `"manifest"`.
    "callerWindowId": NotRequired[Optional[str]],  # The app window on whose behalf this connection asks (it must host it). Reading another
    "timeoutMs": NotRequired[Optional[int]],
})

AppQueryResult = TypedDict("AppQueryResult", {
    "data": Any,
})

AppRegisterParams = TypedDict("AppRegisterParams", {
    "manifest": "AppManifest",
    "fileAssociations": NotRequired[List["FileAssociation"]],
    "threadId": NotRequired[Optional[str]],  # appserver extension: bind the window to this thread (its interactions go there).
    "windowId": NotRequired[Optional[str]],  # The window to (re-)register; a new id is assigned when omitted.
})

AppRegisterResult = TypedDict("AppRegisterResult", {
    "windowId": str,
    "replayed": int,  # Log entries replayed successfully before this answer.
    "failed": int,  # Log entries the app rejected during the replay (see `app/log/read`).
})

# Params of `app/registered`.
AppRegisteredParams = TypedDict("AppRegisteredParams", {
    "windowId": str,
    "appId": str,
    "name": str,
})

# One log entry the app rejected during a replay.
AppReplayError = TypedDict("AppReplayError", {
    "seq": int,
    "command": str,
    "error": str,
})

# Params of `app/replayed`.
AppReplayedParams = TypedDict("AppReplayedParams", {
    "windowId": str,
    "replayed": int,
    "failed": int,
    "errors": List["AppReplayError"],
})

AppStateDescriptor = TypedDict("AppStateDescriptor", {
    "description": str,
    "schema": NotRequired[Any],  # JSON Schema of the value.
})

AppSummary = TypedDict("AppSummary", {
    "windowId": str,
    "appId": str,
    "name": str,
    "live": bool,  # Whether the connection that registered it is still there (commands can run now).
    "commandCount": int,
    "stateKeyCount": int,
    "description": NotRequired[Optional[str]],
    "kind": NotRequired[str],  # What hosts it: `window` (a connection that registered it), `stdio` (a program the server
    "needsApproval": NotRequired[bool],  # The program its descriptor runs is new or changed and not approved yet: nothing runs
})

AppUnregisterParams = TypedDict("AppUnregisterParams", {
    "windowId": str,
    "forget": NotRequired[bool],  # Also delete the window's replay log.
})

# Params of `app/unregistered`.
AppUnregisteredParams = TypedDict("AppUnregisteredParams", {
    "windowId": str,
    "forgotten": bool,
})

# A client's decision.
ApprovalDecision = Literal["accept", "acceptForSession", "acceptAlways", "decline", "cancel"]

# The client's answer to `item/approval/request`.
ApprovalDecisionResult = TypedDict("ApprovalDecisionResult", {
    "decision": "ApprovalDecision",
})

# Params of `item/approval/request` (server → client request).
ApprovalRequestParams = TypedDict("ApprovalRequestParams", {
    "threadId": str,
    "turnId": str,
    "itemId": str,  # The `approvalRequest` item.
    "requestId": str,  # Correlates the request with its `approvalResponse`.
    "approvalType": str,  # `shell` or `file` (the spec's values); `app` only for clients that declared the app
    "operation": str,  # For `shell`: the command line. For `app`: the app command's name.
    "target": str,  # For `shell`: the working directory. For `app`: the window id.
    "scopeKey": str,  # What `acceptForSession` / `acceptAlways` remember.
    "reason": str,
    "app": NotRequired[Optional["AppCommandApproval"]],  # The app command, for `approvalType: "app"` (clients that declared the app extension).
})

ApprovalRequestPayload = TypedDict("ApprovalRequestPayload", {
    "approvalType": str,  # `shell`, `file`, `app`, `remoteResource`, ...
    "operation": str,
    "target": str,
    "requestId": str,
    "reason": NotRequired[Optional[str]],
    "scopeKey": NotRequired[Optional[str]],
})

ApprovalResponsePayload = TypedDict("ApprovalResponsePayload", {
    "requestId": str,
    "approved": bool,
    "decision": NotRequired[Optional[str]],  # `accept`, `acceptForSession`, `acceptAlways`, `decline` or `cancel`.
})

# `{ ok: true }`.
AutomationOkResult = TypedDict("AutomationOkResult", {
    "ok": bool,
})

# When a task runs again: `CronSchedule`'s fields (`every`, `at`, `daily`, and appserver's
# `cron` expressions); `once` (or no schedule) is a one-shot task.
AutomationSchedule = TypedDict("AutomationSchedule", {
    "kind": str,
    "atMs": NotRequired[Optional[int]],
    "dailyHour": NotRequired[Optional[int]],
    "dailyMinute": NotRequired[Optional[int]],
    "everyMs": NotRequired[Optional[int]],
    "expr": NotRequired[Optional[str]],
    "initialDelayMs": NotRequired[Optional[int]],
    "tz": NotRequired[Optional[str]],
})

# One task (`AutomationTaskWire`).
AutomationTask = TypedDict("AutomationTask", {
    "id": str,
    "title": str,
    "status": str,  # `pending`, `running`, `completed` or `failed`.
    "workspaceMode": str,  # `project` (runs in the workspace) or `worktree` (an unbound task runs in a managed Git
    "agentSummary": NotRequired[Optional[str]],  # The agent's last answer, or why the last run failed.
    "approvalPolicy": NotRequired[Optional[str]],  # `workspaceScope` (default) or `fullAuto`.
    "createdAt": NotRequired[Optional[str]],  # ISO 8601 UTC.
    "description": NotRequired[Optional[str]],
    "nextRunAt": NotRequired[Optional[str]],  # The next scheduled run, ISO 8601 UTC (absent without a schedule).
    "schedule": NotRequired[Optional["AutomationSchedule"]],
    "threadBinding": NotRequired[Optional["AutomationThreadBinding"]],
    "threadId": NotRequired[Optional[str]],  # The thread of the task's last run (absent before its first).
    "updatedAt": NotRequired[Optional[str]],
    "worktree": NotRequired[Optional["AutomationWorktree"]],  # The managed worktree of a `worktree` task once provisioned; `null` otherwise (a
})

# `automation/task/create`.
AutomationTaskCreateParams = TypedDict("AutomationTaskCreateParams", {
    "approvalPolicy": NotRequired[Optional[str]],
    "description": NotRequired[Optional[str]],
    "schedule": NotRequired[Optional["AutomationSchedule"]],
    "templateId": NotRequired[Optional[str]],  # A template whose defaults fill the fields not given.
    "threadBinding": NotRequired[Optional["AutomationThreadBinding"]],
    "title": NotRequired[str],
    "workflowTemplate": NotRequired[Optional[str]],  # The `workflow.md` the runs follow (default: the template's, or a generic one).
    "workspaceMode": NotRequired[Optional[str]],
    "workspacePath": NotRequired[Optional[str]],
})

# The new task, and its id as DotCraft's server answers it.
AutomationTaskCreateResult = TypedDict("AutomationTaskCreateResult", {
    "taskId": str,
    "task": "AutomationTask",
})

# `automation/task/read`, `run` and `delete`.
AutomationTaskIdParams = TypedDict("AutomationTaskIdParams", {
    "taskId": str,
    "workspacePath": NotRequired[Optional[str]],
})

# `automation/task/list`.
AutomationTaskListParams = TypedDict("AutomationTaskListParams", {
    "workspacePath": NotRequired[Optional[str]],  # Accepted and ignored: the server's workspace is the one listed.
})

AutomationTaskListResult = TypedDict("AutomationTaskListResult", {
    "tasks": List["AutomationTask"],
})

# `automation/task/run` and `updateBinding`.
AutomationTaskResult = TypedDict("AutomationTaskResult", {
    "task": "AutomationTask",
})

# `automation/task/updateBinding`: `threadBinding` absent or null unbinds.
AutomationTaskUpdateBindingParams = TypedDict("AutomationTaskUpdateBindingParams", {
    "taskId": str,
    "threadBinding": NotRequired[Optional["AutomationThreadBinding"]],
    "workspacePath": NotRequired[Optional[str]],
})

# `automation/task/updated`: a task's status (or binding, or next run) changed.
AutomationTaskUpdatedParams = TypedDict("AutomationTaskUpdatedParams", {
    "workspacePath": str,
    "task": "AutomationTask",
})

# One template of the New Task dialog (`AutomationTemplateWire`).
AutomationTemplate = TypedDict("AutomationTemplate", {
    "id": str,
    "title": str,
    "workflowMarkdown": str,  # The complete `workflow.md` a task made from it runs.
    "category": NotRequired[Optional[str]],
    "createdAt": NotRequired[Optional[str]],  # ISO 8601 UTC, user templates only.
    "defaultApprovalPolicy": NotRequired[Optional[str]],
    "defaultDescription": NotRequired[Optional[str]],
    "defaultSchedule": NotRequired[Optional["AutomationSchedule"]],
    "defaultTitle": NotRequired[Optional[str]],
    "defaultWorkspaceMode": NotRequired[Optional[str]],
    "description": NotRequired[Optional[str]],
    "icon": NotRequired[Optional[str]],
    "isUser": NotRequired[bool],  # A user template (editable, deletable); absent for built-ins.
    "needsThreadBinding": NotRequired[Optional[bool]],
    "updatedAt": NotRequired[Optional[str]],
})

# `automation/template/delete`.
AutomationTemplateIdParams = TypedDict("AutomationTemplateIdParams", {
    "id": NotRequired[str],
})

# `automation/template/list`.
AutomationTemplateListParams = TypedDict("AutomationTemplateListParams", {
    "locale": NotRequired[Optional[str]],  # Accepted; the built-in templates are English only.
})

AutomationTemplateListResult = TypedDict("AutomationTemplateListResult", {
    "templates": List["AutomationTemplate"],
})

AutomationTemplateResult = TypedDict("AutomationTemplateResult", {
    "template": "AutomationTemplate",
})

# `automation/template/save`: an upsert of a user template (no `id`: a new `user-…` one).
AutomationTemplateSaveParams = TypedDict("AutomationTemplateSaveParams", {
    "category": NotRequired[Optional[str]],
    "defaultApprovalPolicy": NotRequired[Optional[str]],
    "defaultDescription": NotRequired[Optional[str]],
    "defaultSchedule": NotRequired[Optional["AutomationSchedule"]],
    "defaultTitle": NotRequired[Optional[str]],
    "defaultWorkspaceMode": NotRequired[Optional[str]],
    "description": NotRequired[Optional[str]],
    "icon": NotRequired[Optional[str]],
    "id": NotRequired[Optional[str]],
    "needsThreadBinding": NotRequired[bool],
    "title": NotRequired[str],
    "workflowMarkdown": NotRequired[str],
})

# A task bound to an existing thread: its runs are turns of that thread.
AutomationThreadBinding = TypedDict("AutomationThreadBinding", {
    "threadId": str,
    "mode": NotRequired[Optional[str]],  # `run-in-thread` (the default, and the only mode).
})

# A task's managed Git worktree (`AutomationTaskWire.worktree`).
AutomationWorktree = TypedDict("AutomationWorktree", {
    "branchName": str,  # `appserver/task-<taskId>`.
    "path": str,  # Absolute: `<workspace>/.appserver-worktrees/task-<taskId>`.
})

# A background terminal session (section 19A.2).
BackgroundTerminal = TypedDict("BackgroundTerminal", {
    "sessionId": str,  # `term_…`
    "threadId": str,
    "command": str,
    "workingDirectory": str,
    "source": str,  # `host` or `sandbox`.
    "status": str,  # `running`, `completed`, `failed`, `killed`, `timedOut` or `lost`.
    "output": str,  # Output: for `terminal/read` and `terminal/write` what arrived since the last of them
    "startedAt": str,
    "wallTimeMs": int,
    "originalOutputChars": int,  # Characters the process has written in all.
    "truncated": bool,  # Whether `output` is only a part of what it covers.
    "backgroundReason": NotRequired[Optional[str]],
    "callId": NotRequired[Optional[str]],
    "completedAt": NotRequired[Optional[str]],
    "exitCode": NotRequired[Optional[int]],
    "outputPath": NotRequired[Optional[str]],
    "turnId": NotRequired[Optional[str]],
})

# `capabilities.channelAdapter`: the connection is the remote backend of one chat channel.
ChannelAdapterCapabilities = TypedDict("ChannelAdapterCapabilities", {
    "channelName": str,
    "channelTools": NotRequired[List[Any]],
    "deliveryCapabilities": NotRequired[Any],
})

# One origin channel.
ChannelInfo = TypedDict("ChannelInfo", {
    "name": str,  # The `originChannel` string, in the case it is stored in.
    "category": str,  # `builtin`, `social`, `system` or `external`.
})

# Params of `channel/list`: an empty object (or omitted).
ChannelListParams = Dict[str, Any]

# Result of `channel/list`: sorted by category (builtin, social, system, external), then by
# name (case-insensitive).
ChannelListResult = TypedDict("ChannelListResult", {
    "channels": List["ChannelInfo"],
})

# Where a media payload's bytes come from; `kind` is authoritative (`hostPath`, `url`,
# `dataBase64` or `artifactId`) and the adapter ignores the other fields.
ChannelMediaSource = TypedDict("ChannelMediaSource", {
    "kind": str,
    "artifactId": NotRequired[Optional[str]],
    "dataBase64": NotRequired[Optional[str]],
    "hostPath": NotRequired[Optional[str]],
    "url": NotRequired[Optional[str]],
})

# A structured outbound message: `kind` is `text`, `file`, `audio`, `image` or `video`.
ChannelOutboundMessage = TypedDict("ChannelOutboundMessage", {
    "kind": str,
    "caption": NotRequired[Optional[str]],
    "fileName": NotRequired[Optional[str]],
    "mediaType": NotRequired[Optional[str]],
    "source": NotRequired[Optional["ChannelMediaSource"]],
    "text": NotRequired[Optional[str]],
})

# One configured channel's state (protocol section 20.2).
ChannelStatusInfo = TypedDict("ChannelStatusInfo", {
    "name": str,
    "category": str,  # `social` or `external`.
    "enabled": bool,  # Configured as enabled.
    "running": bool,  # An adapter for it is connected now.
})

# `channel/status` params: an empty object (or omitted).
ChannelStatusParams = Dict[str, Any]

ChannelStatusResult = TypedDict("ChannelStatusResult", {
    "channels": List["ChannelStatusInfo"],
})

# The chat a channel tool call happens in.
ChannelToolCallContext = TypedDict("ChannelToolCallContext", {
    "channelName": str,
    "channelContext": NotRequired[Optional[str]],
    "groupId": NotRequired[Optional[str]],
    "senderId": NotRequired[Optional[str]],
})

# A history message sent by the client when the thread uses `historyMode = "client"`.
ChatMessage = TypedDict("ChatMessage", {
    "role": str,  # `system`, `user`, `assistant` or `tool`.
    "content": NotRequired[Any],  # Text, or a list of content parts.
    "name": NotRequired[Optional[str]],
    "toolCallId": NotRequired[Optional[str]],
    "toolCalls": NotRequired[Any],
})

# What the client can handle. Every member is optional; absent members take the defaults of
# section 3.2 of the protocol.
ClientCapabilities = TypedDict("ClientCapabilities", {
    "acpExtensions": NotRequired[Optional["AcpExtensions"]],  # ACP tool proxy (section 11.3): the `ext/acp/*` requests the client handles for the
    "approvalSupport": NotRequired[Optional[bool]],  # Whether the client answers `item/approval/request`. Default `true`.
    "backgroundTerminals": NotRequired[Optional[bool]],
    "browserUse": NotRequired[Any],  # Desktop browser capability (accepted, not used by this server).
    "channelAdapter": NotRequired[Optional["ChannelAdapterCapabilities"]],  # Present when the connection is a chat-platform channel adapter.
    "commandExecutionStreaming": NotRequired[Optional[bool]],
    "configChange": NotRequired[Optional[bool]],
    "extensions": NotRequired[Optional[Dict[str, Any]]],  # Extensions the client implements, keyed by name, like the server's
    "maxMessageBytes": NotRequired[Optional[int]],  # The largest message this client accepts, in bytes (appserver extension). A response that
    "nodeRepl": NotRequired[Any],  # Desktop Node REPL capability (accepted, not used by this server).
    "optOutNotificationMethods": NotRequired[List[str]],  # Exact notification method names this connection never receives.
    "streamingSupport": NotRequired[Optional[bool]],  # Whether the client consumes `item/*/delta` notifications. Default `true`.
    "toolExecutionLifecycle": NotRequired[Optional[bool]],
})

ClientInfo = TypedDict("ClientInfo", {
    "name": str,  # Machine-readable client identifier.
    "version": str,
    "title": NotRequired[Optional[str]],  # Human-readable client name.
})

CommandExecuteParams = TypedDict("CommandExecuteParams", {
    "threadId": str,
    "command": str,  # The slash command, e.g. `/stop` or `/query sheet-1 cells`.
    "arguments": NotRequired[Optional[List[str]]],  # Parsed arguments; when absent, the text after the command name is used.
    "sender": NotRequired[Optional["SenderContext"]],
})

# Params of `item/commandExecution/outputDelta`: the next piece of a `commandExecution` item's
# output. The deltas concatenate to the completed item's `aggregatedOutput`.
CommandExecutionOutputDeltaParams = TypedDict("CommandExecutionOutputDeltaParams", {
    "threadId": str,
    "turnId": str,
    "itemId": str,
    "delta": str,
})

CommandExecutionPayload = TypedDict("CommandExecutionPayload", {
    "callId": str,
    "command": str,
    "workingDirectory": str,
    "source": str,
    "status": str,
    "aggregatedOutput": str,
    "backgroundReason": NotRequired[Optional[str]],  # `runInBackground` when the call asked for a background terminal.
    "durationMs": NotRequired[Optional[int]],
    "exitCode": NotRequired[Optional[int]],
    "originalOutputChars": NotRequired[Optional[int]],  # Characters the command wrote, when `aggregatedOutput` kept only its head and tail.
    "outputPath": NotRequired[Optional[str]],
    "sessionId": NotRequired[Optional[str]],  # The background terminal (`terminal/*`) the command goes on in, when it outlived its call.
    "truncated": NotRequired[Optional[bool]],
})

# A command as `command/list` describes it.
CommandInfo = TypedDict("CommandInfo", {
    "name": str,  # `/new`, `/code-review`, ...
    "aliases": List[str],
    "description": str,
    "category": str,  # `builtin` or `custom`.
    "requiresAdmin": bool,
})

CommandListParams = TypedDict("CommandListParams", {
    "includeBuiltins": NotRequired[Optional[bool]],  # Default `true`; `false` lists only custom commands (safe as `commandRef`).
    "language": NotRequired[Optional[str]],  # `en` (default) or `zh`.
})

CommandListResult = TypedDict("CommandListResult", {
    "commands": List["CommandInfo"],
})

# `CommandResult` (section 19.4).
CommandResult = TypedDict("CommandResult", {
    "handled": bool,
    "archivedThreadIds": NotRequired[Optional[List[str]]],
    "createdLazily": NotRequired[Optional[bool]],
    "expandedPrompt": NotRequired[Optional[str]],  # Set when the command expands to a prompt: start a turn with it (as a `commandRef`).
    "isMarkdown": NotRequired[bool],
    "message": NotRequired[Optional[str]],
    "sessionReset": NotRequired[Optional[bool]],
    "thread": NotRequired[Optional["Thread"]],
})

# Params of `workspace/commitMessage/suggest`.
CommitMessageSuggestParams = TypedDict("CommitMessageSuggestParams", {
    "threadId": str,  # The thread whose conversation gives the context.
    "paths": List[str],  # Paths relative to the workspace root; not empty.
    "maxDiffChars": NotRequired[Optional[int]],
})

# Result of `workspace/commitMessage/suggest`.
CommitMessageSuggestResult = TypedDict("CommitMessageSuggestResult", {
    "message": str,  # Subject line, then optionally a blank line and a body.
})

# One field of the config file.
ConfigFieldSchema = TypedDict("ConfigFieldSchema", {
    "key": str,  # The key inside its section (`model`, `api_key`, ...).
    "type": str,  # `string`, `password`, `boolean`, `integer`, `enum`, `stringList`.
    "reload": "ReloadBehavior",
    "sensitive": NotRequired[bool],
    "subsystemKey": NotRequired[Optional[str]],  # Present only when `reload` is `subsystemRestart`.
    "updateField": NotRequired[Optional[str]],  # The `workspace/config/update` field that writes it, when one does.
    "values": NotRequired[List[str]],  # The allowed values of an `enum` field.
})

# One section (TOML table) of the config file.
ConfigSectionSchema = TypedDict("ConfigSectionSchema", {
    "section": str,
    "order": int,
    "fields": List["ConfigFieldSchema"],
    "path": NotRequired[Optional[str]],  # The TOML table (`model`, `approvals`, ...); `null` for the top level.
})

# Rich content returned by dynamic, plugin and MCP tools.
ContentItem = TypedDict("ContentItem", {
    "type": str,  # `text` or `image`; an MCP tool's result also `audio`, `resourceLink` and `resource` (an
    "dataBase64": NotRequired[Optional[str]],
    "description": NotRequired[Optional[str]],  # A resource link's description.
    "mediaType": NotRequired[Optional[str]],
    "name": NotRequired[Optional[str]],  # A resource link's name.
    "text": NotRequired[Optional[str]],
    "uri": NotRequired[Optional[str]],  # A resource's URI (`resourceLink`, `resource`).
})

# `contextUsage` (section 4.4): context-window occupancy for the desktop's token ring; not
# billing usage.
ContextUsageSnapshot = TypedDict("ContextUsageSnapshot", {
    "tokens": int,  # Approximate input tokens currently occupying the context.
    "contextWindow": int,  # The effective context window (the denominator).
    "autoCompactThreshold": int,  # Where automatic compaction runs.
    "warningThreshold": int,  # Where `compactWarning` starts firing.
    "errorThreshold": int,  # Where `compactError` starts firing.
    "percentLeft": float,  # Fraction of the window still available (0.0 – 1.0).
})

# A job's delivery target: a chat channel's adapter (`ext/channel/send`) and the platform's
# target there (the chat or group the job was made in).
CronDelivery = TypedDict("CronDelivery", {
    "channel": str,
    "to": str,
})

CronEnableParams = TypedDict("CronEnableParams", {
    "jobId": str,
    "enabled": bool,
})

CronJobIdParams = TypedDict("CronJobIdParams", {
    "jobId": str,
})

# One job.
CronJobInfo = TypedDict("CronJobInfo", {
    "id": str,
    "name": str,
    "schedule": "CronSchedule",
    "enabled": bool,
    "createdAtMs": int,
    "deleteAfterRun": bool,
    "state": "CronJobState",
    "delivery": NotRequired[Optional["CronDelivery"]],  # Where each run's result is also delivered (appserver extension; absent: nowhere but
})

CronJobResult = TypedDict("CronJobResult", {
    "job": "CronJobInfo",
})

CronJobState = TypedDict("CronJobState", {
    "lastError": NotRequired[Optional[str]],
    "lastResult": NotRequired[Optional[str]],  # The agent's answer, at most 500 characters.
    "lastRunAtMs": NotRequired[Optional[int]],
    "lastStatus": NotRequired[Optional[str]],  # `ok` or `error`.
    "lastThreadId": NotRequired[Optional[str]],
    "nextRunAtMs": NotRequired[Optional[int]],
})

CronListParams = TypedDict("CronListParams", {
    "includeDisabled": NotRequired[bool],
})

CronListResult = TypedDict("CronListResult", {
    "jobs": List["CronJobInfo"],
})

CronRunResult = TypedDict("CronRunResult", {
    "queued": bool,
    "job": "CronJobInfo",
})

# When a job runs: `every` `everyMs` (after `initialDelayMs` the first time), once `at` `atMs`,
# `daily` at `dailyHour:dailyMinute`, or on a `cron` expression (`expr`, five fields; an
# appserver extension); `daily` and `cron` times are in the IANA zone `tz` (absent: UTC).
CronSchedule = TypedDict("CronSchedule", {
    "kind": str,
    "atMs": NotRequired[Optional[int]],
    "dailyHour": NotRequired[Optional[int]],
    "dailyMinute": NotRequired[Optional[int]],
    "everyMs": NotRequired[Optional[int]],
    "expr": NotRequired[Optional[str]],
    "initialDelayMs": NotRequired[Optional[int]],
    "tz": NotRequired[Optional[str]],
})

# `cron/stateChanged`.
CronStateChangedParams = TypedDict("CronStateChangedParams", {
    "job": "CronJobInfo",
    "removed": bool,
})

# Params of `item/tool/call` (server → client): run a dynamic tool the client declared on
# `thread/start` (section 11.3).
DynamicToolCallParams = TypedDict("DynamicToolCallParams", {
    "threadId": str,
    "turnId": str,
    "callId": str,
    "tool": str,
    "arguments": Any,
    "namespace": NotRequired[Optional[str]],
})

DynamicToolCallPayload = TypedDict("DynamicToolCallPayload", {
    "toolName": str,
    "callId": str,
    "arguments": NotRequired[Any],
    "contentItems": NotRequired[List["ContentItem"]],
    "errorCode": NotRequired[Optional[str]],
    "errorMessage": NotRequired[Optional[str]],
    "namespace": NotRequired[Optional[str]],
    "structuredResult": NotRequired[Any],
    "success": NotRequired[Optional[bool]],
})

# The client's answer to `item/tool/call`.
DynamicToolCallResult = TypedDict("DynamicToolCallResult", {
    "success": bool,
    "contentItems": NotRequired[List["ContentItem"]],
    "errorCode": NotRequired[Optional[str]],
    "errorMessage": NotRequired[Optional[str]],
    "structuredResult": NotRequired[Any],
})

# A runtime dynamic tool declared on `thread/start` (section 4.1.0).
DynamicToolSpec = TypedDict("DynamicToolSpec", {
    "name": str,
    "description": str,
    "inputSchema": Any,
    "approval": NotRequired[Any],
    "deferLoading": NotRequired[Optional[bool]],
    "namespace": NotRequired[Optional[str]],
})

# `{}`: the result of methods that return nothing.
EmptyResult = Dict[str, Any]

ErrorPayload = TypedDict("ErrorPayload", {
    "message": str,
    "code": str,  # Machine-readable code, e.g. `agent_error`, `approval_timeout`, `server_restart`.
    "fatal": bool,
})

# Params of `ext/app/command` (server → host).
ExtAppCommandParams = TypedDict("ExtAppCommandParams", {
    "windowId": str,
    "command": str,
    "params": Any,
    "replay": bool,  # `true` when the server replays the log after a re-registration.
})

# Params of `ext/app/query` (server → host).
ExtAppQueryParams = TypedDict("ExtAppQueryParams", {
    "windowId": str,
    "stateKey": str,
})

# Params of `ext/channel/heartbeat`: an empty object; the answer is `{}`.
ExtChannelHeartbeatParams = Dict[str, Any]

# Params of `ext/channel/send`. appserver puts `deliveryId` (the same on every retry of one
# message, so an adapter can drop a repeat), `origin` and, for a job's result, `jobId` and
# `threadId` in `metadata`.
ExtChannelSendParams = TypedDict("ExtChannelSendParams", {
    "target": str,  # The platform's delivery target (a chat or group id).
    "message": "ChannelOutboundMessage",
    "metadata": NotRequired[Any],
})

# The adapter's answer to `ext/channel/send`; `errorCode` is a stable string when
# `delivered` is false (`UnsupportedDeliveryKind`, `AdapterDeliveryFailed`, ...).
ExtChannelSendResult = TypedDict("ExtChannelSendResult", {
    "delivered": bool,
    "errorCode": NotRequired[Optional[str]],
    "errorMessage": NotRequired[Optional[str]],
    "remoteMediaId": NotRequired[Optional[str]],
    "remoteMessageId": NotRequired[Optional[str]],
})

# Params of `ext/channel/toolCall`; the answer is a `DynamicToolCallResult`
# (`{success, contentItems?, structuredResult?, errorCode?, errorMessage?}`).
ExtChannelToolCallParams = TypedDict("ExtChannelToolCallParams", {
    "threadId": str,
    "turnId": str,
    "callId": str,
    "tool": str,  # The tool's declared name.
    "arguments": Any,
    "context": "ChannelToolCallContext",
})

# An external channel's configuration (protocol section 23.2).
ExternalChannelConfig = TypedDict("ExternalChannelConfig", {
    "name": str,  # The key, compared case-insensitively.
    "args": NotRequired[Optional[List[str]]],
    "command": NotRequired[Optional[str]],  # Required for `subprocess`, refused for `websocket`.
    "enabled": NotRequired[bool],  # `true` when absent, as DotCraft's `ExternalChannelConfigWire` defaults it.
    "env": NotRequired[Optional[Dict[str, str]]],
    "transport": NotRequired[str],  # `subprocess` or `websocket` (anything else is refused with -32081); `subprocess` when
    "workingDirectory": NotRequired[Optional[str]],
})

# `externalChannel/list` params: an empty object (or omitted).
ExternalChannelListParams = Dict[str, Any]

ExternalChannelListResult = TypedDict("ExternalChannelListResult", {
    "channels": List["ExternalChannelConfig"],
})

# Params of `externalChannel/get` and `externalChannel/remove`.
ExternalChannelNameParams = TypedDict("ExternalChannelNameParams", {
    "name": str,
})

# Result of `externalChannel/get` and `externalChannel/upsert`.
ExternalChannelResult = TypedDict("ExternalChannelResult", {
    "channel": "ExternalChannelConfig",
})

ExternalChannelUpsertParams = TypedDict("ExternalChannelUpsertParams", {
    "channel": "ExternalChannelConfig",
})

# Files an app opens: a file whose extension matches runs `command` with its content under
# `paramKey`.
FileAssociation = TypedDict("FileAssociation", {
    "extensions": List[str],
    "command": str,
    "paramKey": str,
})

# One file a tool call changed (appserver extension of `toolResult`, shaped like DotCraft's
# `fileChange` structured content).
FileChange = TypedDict("FileChange", {
    "path": str,  # Workspace-relative (absolute when outside the workspace), `/`-separated.
    "kind": str,  # `add` or `update`.
    "diff": str,  # Unified diff (`--- a/path`, `+++ b/path`, hunks).
    "additions": int,
    "deletions": int,
    "truncated": NotRequired[Optional[bool]],  # Present (`true`) when the diff was cut to its size limit.
})

# `heartbeat/trigger` params: an empty object (or omitted).
HeartbeatTriggerParams = Dict[str, Any]

# Result of `heartbeat/trigger`: the agent's answer, or why the run failed; both `null` when
# there is no `HEARTBEAT.md`.
HeartbeatTriggerResult = TypedDict("HeartbeatTriggerResult", {
    "error": NotRequired[Optional[str]],
    "result": NotRequired[Optional[str]],
})

# `"server"` (the server keeps the history) or `"client"` (the client sends `messages`).
HistoryMode = Literal["server", "client"]

ImageRef = TypedDict("ImageRef", {
    "path": str,
    "fileName": NotRequired[Optional[str]],
    "mimeType": NotRequired[Optional[str]],
})

# Params of `initialize`.
InitializeParams = TypedDict("InitializeParams", {
    "clientInfo": "ClientInfo",
    "capabilities": NotRequired["ClientCapabilities"],
})

# Result of `initialize`.
InitializeResult = TypedDict("InitializeResult", {
    "serverInfo": "ServerInfo",
    "capabilities": "ServerCapabilities",
})

# Params of the `initialized` notification: an empty object.
InitializedParams = Dict[str, Any]

InputPartText = TypedDict("InputPartText", {
    "type": Literal["text"],
    "text": str,
})

InputPartCommandRef = TypedDict("InputPartCommandRef", {
    "type": Literal["commandRef"],
    "name": str,
    "argsText": NotRequired[Optional[str]],
    "rawText": NotRequired[Optional[str]],
})

InputPartSkillRef = TypedDict("InputPartSkillRef", {
    "type": Literal["skillRef"],
    "name": str,
})

InputPartFileRef = TypedDict("InputPartFileRef", {
    "type": Literal["fileRef"],
    "path": str,
    "displayPath": NotRequired[Optional[str]],
})

InputPartImage = TypedDict("InputPartImage", {
    "type": Literal["image"],
    "url": str,
})

InputPartLocalImage = TypedDict("InputPartLocalImage", {
    "type": Literal["localImage"],
    "path": str,
    "fileName": NotRequired[Optional[str]],
    "mimeType": NotRequired[Optional[str]],
})

# One part of the user's input (section 5.1), tagged by `type`.
InputPart = Union["InputPartText", "InputPartCommandRef", "InputPartSkillRef", "InputPartFileRef", "InputPartImage", "InputPartLocalImage"]

ItemUserMessage = TypedDict("ItemUserMessage", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["userMessage"],
    "payload": "UserMessagePayload",
})

ItemAgentMessage = TypedDict("ItemAgentMessage", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["agentMessage"],
    "payload": "TextPayload",
})

ItemReasoningContent = TypedDict("ItemReasoningContent", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["reasoningContent"],
    "payload": "TextPayload",
})

ItemToolCall = TypedDict("ItemToolCall", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["toolCall"],
    "payload": "ToolCallPayload",
})

ItemToolResult = TypedDict("ItemToolResult", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["toolResult"],
    "payload": "ToolResultPayload",
})

ItemToolExecution = TypedDict("ItemToolExecution", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["toolExecution"],
    "payload": "ToolExecutionPayload",
})

ItemCommandExecution = TypedDict("ItemCommandExecution", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["commandExecution"],
    "payload": "CommandExecutionPayload",
})

ItemDynamicToolCall = TypedDict("ItemDynamicToolCall", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["dynamicToolCall"],
    "payload": "DynamicToolCallPayload",
})

ItemPluginFunctionCall = TypedDict("ItemPluginFunctionCall", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["pluginFunctionCall"],
    "payload": "PluginFunctionCallPayload",
})

ItemApprovalRequest = TypedDict("ItemApprovalRequest", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["approvalRequest"],
    "payload": "ApprovalRequestPayload",
})

ItemApprovalResponse = TypedDict("ItemApprovalResponse", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["approvalResponse"],
    "payload": "ApprovalResponsePayload",
})

ItemError = TypedDict("ItemError", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["error"],
    "payload": "ErrorPayload",
})

ItemSystemNotice = TypedDict("ItemSystemNotice", {
    "id": str,  # `item_001`
    "turnId": str,
    "status": "ItemStatus",
    "createdAt": str,
    "completedAt": NotRequired[Optional[str]],
    "type": Literal["systemNotice"],
    "payload": "SystemNoticePayload",
})

# An item on the wire: `type` and `payload` come from [`ItemPayload`].
Item = Union["ItemUserMessage", "ItemAgentMessage", "ItemReasoningContent", "ItemToolCall", "ItemToolResult", "ItemToolExecution", "ItemCommandExecution", "ItemDynamicToolCall", "ItemPluginFunctionCall", "ItemApprovalRequest", "ItemApprovalResponse", "ItemError", "ItemSystemNotice"]

# `{ threadId, turnId, item }`: the params of `item/started` and `item/completed`.
ItemEventParams = TypedDict("ItemEventParams", {
    "threadId": str,
    "turnId": str,
    "item": "Item",
})

ItemStatus = Literal["started", "streaming", "completed"]

# `system/jobResult` (section 6.9).
JobResultParams = TypedDict("JobResultParams", {
    "source": str,  # `cron`.
    "error": NotRequired[Optional[str]],
    "jobId": NotRequired[Optional[str]],
    "jobName": NotRequired[Optional[str]],
    "result": NotRequired[Optional[str]],
    "threadId": NotRequired[Optional[str]],
    "tokenUsage": NotRequired[Optional["JobTokenUsage"]],
})

JobTokenUsage = TypedDict("JobTokenUsage", {
    "inputTokens": int,
    "outputTokens": int,
})

# Params of `mcp/elicitation/request` (appserver extension; server → client request): an MCP
# server asks, during the agent's call of one of its tools, for input from the user
# (`elicitation/create`). Sent to the thread's clients that declared `approvalSupport`, like an
# approval request; the first answer is the server's.
McpElicitationRequestParams = TypedDict("McpElicitationRequestParams", {
    "threadId": str,
    "turnId": str,
    "callId": str,  # The agent's `mcp_call` during which the server asks.
    "server": str,
    "tool": str,
    "request": Any,  # The MCP `elicitation/create` params as the server sent them (`mode`, `message`,
})

# The answer: MCP's `ElicitResult` — `action` `accept` (with `content` matching the requested
# schema), `decline` or `cancel`.
McpElicitationResult = TypedDict("McpElicitationResult", {
    "action": str,
    "content": NotRequired[Any],
})

# Params of `mcp/list` and `mcp/status/list`: none.
McpListParams = Dict[str, Any]

McpListResult = TypedDict("McpListResult", {
    "servers": List["McpServerConfig"],
})

# Params of `mcp/get` and `mcp/remove`.
McpNameParams = TypedDict("McpNameParams", {
    "name": str,
})

McpRemoveResult = TypedDict("McpRemoveResult", {
    "removed": bool,
})

# Params of `mcp/resources/list` (appserver extension): one page of a running server's
# resources (relayed for the server's MCP Apps views).
McpResourceListParams = TypedDict("McpResourceListParams", {
    "server": str,
    "cursor": NotRequired[Optional[str]],
})

# The page as the MCP server gave it (`[{uri, name, mimeType, …}]`), and the next page's cursor.
McpResourceListResult = TypedDict("McpResourceListResult", {
    "resources": List[Any],
    "nextCursor": NotRequired[Optional[str]],
})

# Params of `mcp/resources/read` (appserver extension): a `ui://` resource of a server, the
# HTML of an MCP Apps view.
McpResourceReadParams = TypedDict("McpResourceReadParams", {
    "server": str,
    "uri": str,
})

# The resource's contents as the MCP server gave them (`[{uri, mimeType, text | blob, _meta}]`).
McpResourceReadResult = TypedDict("McpResourceReadResult", {
    "contents": List[Any],
})

# One MCP server definition (section 22.2). Secrets are references: `bearerTokenEnvVar` and
# `envHttpHeaders` name environment variables; `envVars` names variables passed through.
McpServerConfig = TypedDict("McpServerConfig", {
    "name": str,
    "args": NotRequired[Optional[List[str]]],
    "bearerTokenEnvVar": NotRequired[Optional[str]],
    "command": NotRequired[Optional[str]],
    "cwd": NotRequired[Optional[str]],
    "enabled": NotRequired[bool],
    "env": NotRequired[Optional[Dict[str, str]]],
    "envHttpHeaders": NotRequired[Optional[Dict[str, str]]],
    "envVars": NotRequired[Optional[List[str]]],
    "httpHeaders": NotRequired[Optional[Dict[str, str]]],
    "origin": NotRequired[Optional["McpServerOrigin"]],
    "readOnly": NotRequired[Optional[bool]],
    "startupTimeoutSec": NotRequired[Optional[float]],
    "toolTimeoutSec": NotRequired[Optional[float]],
    "transport": NotRequired["McpTransportKind"],  # `stdio` when absent.
    "url": NotRequired[Optional[str]],
})

# Where a server's definition comes from.
McpServerOrigin = TypedDict("McpServerOrigin", {
    "kind": str,  # `workspace`, `plugin` or `descriptor` (an aai.json descriptor's MCP server).
    "declaredName": NotRequired[Optional[str]],
    "pluginDisplayName": NotRequired[Optional[str]],
    "pluginId": NotRequired[Optional[str]],
})

# Params of `mcp/upsert` and `mcp/test`.
McpServerParams = TypedDict("McpServerParams", {
    "server": "McpServerConfig",
})

# Result of `mcp/get` and `mcp/upsert`: the server as stored.
McpServerResult = TypedDict("McpServerResult", {
    "server": "McpServerConfig",
})

# A server's runtime state (section 22.7).
McpServerStatus = TypedDict("McpServerStatus", {
    "name": str,
    "enabled": bool,
    "startupState": str,  # `starting`, `ready`, `failed`, `disabled` or `stopped`.
    "toolCount": int,
    "lastError": NotRequired[Optional[str]],
    "origin": NotRequired[Optional["McpServerOrigin"]],  # Where the definition comes from (capability `mcpServerOrigins`): the workspace's own, a
    "readOnly": NotRequired[bool],  # Whether `mcp/upsert` and `mcp/remove` refuse it (`McpServerReadOnly`): every origin but the
    "resourceCount": NotRequired[int],
    "resourceTemplateCount": NotRequired[int],
    "transport": NotRequired["McpTransportKind"],
})

McpStatusListResult = TypedDict("McpStatusListResult", {
    "servers": List["McpServerStatus"],
})

# Params of `mcp/status/updated`.
McpStatusUpdatedParams = TypedDict("McpStatusUpdatedParams", {
    "server": "McpServerStatus",
})

# Result of `mcp/test`: a failure is a successful response with `success: false`.
McpTestResult = TypedDict("McpTestResult", {
    "success": bool,
    "errorCode": NotRequired[Optional[str]],
    "errorMessage": NotRequired[Optional[str]],
    "toolCount": NotRequired[Optional[int]],
})

# How an MCP server is reached.
McpTransportKind = Literal["streamableHttp", "stdio"]

# Params of `mcp/view/call` (appserver extension): a view's `tools/call` of its own server's
# tool, relayed by the client that renders the view.
McpViewCallParams = TypedDict("McpViewCallParams", {
    "callId": str,  # The tool call that created the view (`mcp/view/offered`'s `callId`).
    "server": str,
    "tool": str,
    "arguments": NotRequired[Optional[Dict[str, Any]]],
})

# What became of a view's call: `status` `done` (`result`: the server's `CallToolResult`;
# `seq`: its entry in the view's log, absent for a read-only tool), `declined` or `cancelled`
# (not approved / withdrawn: it did not run; `error` says why), or `failed` (`error`).
McpViewCallResult = TypedDict("McpViewCallResult", {
    "status": str,
    "error": NotRequired[Optional[str]],
    "result": NotRequired[Any],
    "seq": NotRequired[Optional[int]],
})

# Params of `mcp/view/context` (appserver extension): a view's `ui/update-model-context`,
# relayed by the client that renders it. The view's context (its `content` blocks and
# `structuredContent`) is kept for the thread and put before the next turn's input to the
# model; a later update of the same view replaces it; an update with neither clears it.
McpViewContextParams = TypedDict("McpViewContextParams", {
    "threadId": str,
    "callId": str,  # The tool call that created the view (`mcp/view/offered`'s `callId`).
    "content": NotRequired[Optional[List[Any]]],
    "structuredContent": NotRequired[Any],
})

# Params of `mcp/view/offered` (appserver extension): a tool that declares an MCP Apps view
# (`_meta.ui.resourceUri`) was called by the agent; a client may render the view for this call.
McpViewOfferedParams = TypedDict("McpViewOfferedParams", {
    "threadId": str,
    "turnId": str,
    "callId": str,  # The `mcp_call` tool call: one view instance per call.
    "server": str,
    "tool": str,
    "resourceUri": str,
    "arguments": Any,  # The tool's input (for the view's `ui/notifications/tool-input`).
    "result": Any,  # The tool's result as the MCP server gave it (for `ui/notifications/tool-result`).
})

# One change of a save: `value` absent or null removes the key.
McpViewStorageChange = TypedDict("McpViewStorageChange", {
    "key": str,
    "value": NotRequired[Optional[str]],
})

# Params of `mcp/view/storage/load`: the view instance, as the client rendering it assigned it.
McpViewStorageLoadParams = TypedDict("McpViewStorageLoadParams", {
    "threadId": str,
    "callId": str,  # The tool call that opened the view (`mcp/view/offered`'s `callId`).
})

# Result of `mcp/view/storage/load`: every key of the instance's storage, and its bound.
McpViewStorageLoadResult = TypedDict("McpViewStorageLoadResult", {
    "items": Dict[str, str],
    "used": int,  # Characters of keys and values held.
    "limit": int,  # The most characters of keys and values an instance may hold.
})

# Params of `mcp/view/storage/save`: changes to one instance's storage, applied together or
# (past the bound: -32070 `LIMIT_REACHED`) not at all.
McpViewStorageSaveParams = TypedDict("McpViewStorageSaveParams", {
    "threadId": str,
    "callId": str,
    "changes": NotRequired[List["McpViewStorageChange"]],
    "clear": NotRequired[bool],  # Every key removed before the changes (`localStorage.clear()`).
})

# Result of `mcp/view/storage/save`.
McpViewStorageSaveResult = TypedDict("McpViewStorageSaveResult", {
    "used": int,
    "limit": int,
})

# Params of `mcp/view/tool` (appserver extension): a tool of a running server, for the view it
# opened (its `hostContext.toolInfo.tool`).
McpViewToolParams = TypedDict("McpViewToolParams", {
    "server": str,
    "tool": str,
})

# Result of `mcp/view/tool`: the tool as the server's `tools/list` gave it (`name`,
# `description`, `inputSchema`, and whatever else it declared).
McpViewToolResult = TypedDict("McpViewToolResult", {
    "tool": Any,
})

# One model of the provider's catalog.
ModelCatalogItem = TypedDict("ModelCatalogItem", {
    "id": str,
    "ownedBy": str,  # Provider-reported owner; may be empty.
    "createdAt": str,  # Provider-reported creation time (ISO 8601 UTC); empty when unknown.
})

ModelListParams = Dict[str, Any]

# Provider errors are reported in the result, not as JSON-RPC errors.
ModelListResult = TypedDict("ModelListResult", {
    "success": bool,
    "models": List["ModelCatalogItem"],
    "errorCode": NotRequired[Optional[str]],
    "errorMessage": NotRequired[Optional[str]],
})

# A complete plan snapshot.
Plan = TypedDict("Plan", {
    "title": str,
    "todos": List["PlanTodo"],
    "content": NotRequired[str],
    "overview": NotRequired[str],
})

# One task of a plan (section 6.8).
PlanTodo = TypedDict("PlanTodo", {
    "id": str,
    "content": str,
    "priority": str,  # `high`, `medium` or `low`.
    "status": str,  # `pending`, `in_progress`, `completed` or `cancelled`.
})

# Params of `plan/updated`: the complete plan snapshot of a thread.
PlanUpdatedParams = TypedDict("PlanUpdatedParams", {
    "threadId": str,  # The thread the plan belongs to.
    "title": str,
    "todos": List["PlanTodo"],
    "content": NotRequired[str],
    "overview": NotRequired[str],
})

# A problem found while discovering plugins (a plugin that could not be loaded, a field ignored).
PluginDiagnostic = TypedDict("PluginDiagnostic", {
    "code": str,  # `InvalidPluginManifest`, `UnsupportedPluginNativeTools`, `MissingPluginCapabilities`, ...
    "message": str,
    "path": NotRequired[Optional[str]],
    "pluginId": NotRequired[Optional[str]],
})

PluginFunctionCallPayload = TypedDict("PluginFunctionCallPayload", {
    "pluginId": str,
    "functionName": str,
    "callId": str,
    "arguments": NotRequired[Any],
    "contentItems": NotRequired[List["ContentItem"]],
    "errorCode": NotRequired[Optional[str]],
    "errorMessage": NotRequired[Optional[str]],
    "namespace": NotRequired[Optional[str]],
    "structuredResult": NotRequired[Any],
    "success": NotRequired[Optional[bool]],
})

# A manifest-declared native function: always empty (manifests no longer declare tools).
PluginFunctionInfo = TypedDict("PluginFunctionInfo", {
    "name": str,
})

PluginIdParams = TypedDict("PluginIdParams", {
    "id": str,
})

# One plugin.
PluginInfo = TypedDict("PluginInfo", {
    "id": str,
    "displayName": str,
    "description": str,
    "enabled": bool,
    "installed": bool,
    "installable": bool,
    "removable": bool,  # Installed by `plugin/install` (carries the `.installed` marker), so `plugin/remove` may delete it.
    "source": str,  # `workspace`: found in `<workspace>/.appserver/plugins`.
    "functions": List["PluginFunctionInfo"],
    "skills": List["PluginSkillInfo"],
    "mcpServers": List["PluginMcpServerInfo"],
    "rootPath": str,  # The plugin's folder (DotCraft's `rootPath`; `path` is read too, as earlier appserver
    "apps": NotRequired[List[str]],  # appserver extension: the window ids (`aai:<app id>`) of the plugin's app descriptors.
    "commands": NotRequired[List[str]],  # appserver extension: the plugin's custom commands (names, without `/`).
    "interface": NotRequired[Optional["PluginInterface"]],
    "version": NotRequired[Optional[str]],
})

# Params of `plugin/install`.
PluginInstallParams = TypedDict("PluginInstallParams", {
    "id": str,  # The plugin's id: without `path`, a plugin of the server's built-in catalog (listed with
    "path": NotRequired[Optional[str]],  # appserver extension: a plugin folder, or a `.zip` / `.tar.gz` / `.tgz` archive of one, on
})

# A plugin's client-facing presentation metadata (the manifest's `interface`).
PluginInterface = TypedDict("PluginInterface", {
    "brandColor": NotRequired[Optional[str]],
    "capabilities": NotRequired[List[str]],
    "category": NotRequired[Optional[str]],
    "defaultPrompt": NotRequired[Optional[str]],
    "developerName": NotRequired[Optional[str]],
    "displayName": NotRequired[Optional[str]],
    "longDescription": NotRequired[Optional[str]],
    "shortDescription": NotRequired[Optional[str]],
})

PluginListParams = TypedDict("PluginListParams", {
    "includeDisabled": NotRequired[Optional[bool]],  # Default `true`; `false` leaves disabled plugins out.
})

PluginListResult = TypedDict("PluginListResult", {
    "plugins": List["PluginInfo"],
    "diagnostics": List["PluginDiagnostic"],
})

# Params of `plugin/mcp/approve` (appserver extension).
PluginMcpApproveParams = TypedDict("PluginMcpApproveParams", {
    "id": str,  # The plugin's id.
    "name": str,  # The server's declared name (not its runtime name).
})

# An MCP server the plugin declares.
PluginMcpServerInfo = TypedDict("PluginMcpServerInfo", {
    "name": str,  # The name inside the plugin's MCP file.
    "runtimeName": str,  # `{pluginId}:{name}`: its name in `mcp/list`.
    "transport": str,  # `stdio` or `streamableHttp`.
    "enabled": bool,
    "active": bool,  # Installed, enabled, declared enabled, not shadowed, and (appserver) approved.
    "needsApproval": NotRequired[bool],  # appserver extension: the program (or URL) is not yet approved by the workspace's owner
    "shadowedBy": NotRequired[Optional[str]],  # `workspace` or `plugin` when another server of the same runtime name wins.
})

PluginResult = TypedDict("PluginResult", {
    "plugin": "PluginInfo",
})

PluginSetEnabledParams = TypedDict("PluginSetEnabledParams", {
    "id": str,
    "enabled": bool,
})

# A skill the plugin holds.
PluginSkillInfo = TypedDict("PluginSkillInfo", {
    "name": str,
    "enabled": bool,  # Not disabled with `skills/setEnabled` (a disabled plugin's skills are hidden whatever this says).
    "displayName": NotRequired[Optional[str]],
})

QueuedInputStatus = Literal["queued", "guidancePending"]

QueuedInputsResult = TypedDict("QueuedInputsResult", {
    "queuedInputs": List["QueuedTurnInput"],
})

# Input waiting to become a turn (or guidance for the running one).
QueuedTurnInput = TypedDict("QueuedTurnInput", {
    "id": str,
    "threadId": str,
    "nativeInputParts": List["InputPart"],
    "materializedInputParts": List["InputPart"],
    "displayText": str,
    "status": "QueuedInputStatus",
    "createdAt": str,
    "readyAfterTurnId": NotRequired[Optional[str]],
    "sender": NotRequired[Optional["SenderContext"]],
})

# When a changed field takes effect.
ReloadBehavior = Literal["processRestart", "subsystemRestart", "hot"]

# Result of `externalChannel/remove`.
RemovedResult = TypedDict("RemovedResult", {
    "removed": bool,
})

# `capabilities.sandbox`: whether commands can be confined here. When `available` is false,
# every command outside `fullAccess` is asked about, each time.
SandboxCapability = TypedDict("SandboxCapability", {
    "mechanism": str,  # `namespaces+landlock+seccomp` on Linux.
    "available": bool,
    "defaultMode": str,  # The workspace's default mode: `readOnly`, `workspaceWrite` or `fullAccess`.
    "reason": NotRequired[Optional[str]],  # Why it is unavailable, when it is.
})

# Who sent a message in a group session.
SenderContext = TypedDict("SenderContext", {
    "senderId": str,
    "groupId": NotRequired[Optional[str]],
    "senderName": NotRequired[Optional[str]],
    "senderRole": NotRequired[Optional[str]],
})

# What the server implements. A capability that is absent is not implemented.
ServerCapabilities = TypedDict("ServerCapabilities", {
    "approvalFlow": NotRequired[Optional[bool]],
    "automations": NotRequired[Optional[bool]],  # `automation/task/*`, `automation/template/*` and `automation/task/updated` (DotCraft's
    "backgroundTerminals": NotRequired[Optional[bool]],  # `terminal/*` requests and notifications (section 19A).
    "channelStatus": NotRequired[Optional[bool]],  # `channel/status` (section 20).
    "commandManagement": NotRequired[Optional[bool]],
    "configOverride": NotRequired[Optional[bool]],
    "cronManagement": NotRequired[Optional[bool]],  # `cron/*` (section 16).
    "extensions": NotRequired[Dict[str, Any]],  # Extension registry keyed by extension name; `true` means its methods are available.
    "externalChannelManagement": NotRequired[Optional[bool]],  # `externalChannel/*` (section 23).
    "heartbeatManagement": NotRequired[Optional[bool]],  # `heartbeat/trigger` (section 17).
    "mcpManagement": NotRequired[Optional[bool]],  # `mcp/list`, `mcp/get`, `mcp/upsert`, `mcp/remove` (section 22).
    "mcpServerOrigins": NotRequired[Optional[bool]],  # MCP definitions and statuses carry `origin` and `readOnly` (section 22.2).
    "mcpStatus": NotRequired[Optional[bool]],  # `mcp/status/list`, `mcp/test` and `mcp/status/updated` (section 22).
    "modeSwitch": NotRequired[Optional[bool]],
    "modelCatalogManagement": NotRequired[Optional[bool]],
    "pluginManagement": NotRequired[Optional[bool]],  # `plugin/*` (section 18.10).
    "sandbox": NotRequired[Optional["SandboxCapability"]],  # How `Exec` commands are confined on this host (appserver extension).
    "skillsManagement": NotRequired[Optional[bool]],  # `skills/*` (section 18).
    "subAgentManagement": NotRequired[Optional[bool]],  # `subagent/profiles/*` and `subagent/settings/update` (section 24).
    "subAgentSessions": NotRequired[Optional[bool]],  # Sub-agent child threads: `subagent/children/list`, `subagent/close`, `subagent/resume`
    "threadManagement": NotRequired[Optional[bool]],
    "threadSubscriptions": NotRequired[Optional[bool]],
    "workspaceConfigManagement": NotRequired[Optional[bool]],  # `workspace/config/schema|update` and `workspace/configChanged` (section 25).
})

ServerInfo = TypedDict("ServerInfo", {
    "name": str,  # Always `"appserver"`.
    "version": str,
    "protocolVersion": str,  # Wire protocol version, currently `"1"`.
    "extensions": NotRequired[Optional[List[str]]],
})

# Who is asking: channel, user, context and workspace (Session Core 4.1.4).
SessionIdentity = TypedDict("SessionIdentity", {
    "channelName": str,
    "channelContext": NotRequired[Optional[str]],
    "userId": NotRequired[Optional[str]],
    "workspacePath": NotRequired[Optional[str]],  # Defaults to the server's workspace when omitted.
})

# One installed skill.
SkillInfo = TypedDict("SkillInfo", {
    "name": str,  # The skill's folder name.
    "description": str,  # Frontmatter `description` (the name when there is none).
    "source": str,  # `workspace`, `plugin` or `user`.
    "available": bool,  # Whether the requirements (`bins`, `env`) are met here.
    "enabled": bool,  # Not disabled with `skills/setEnabled`.
    "path": str,  # Absolute path of its `SKILL.md`.
    "metadata": Dict[str, str],  # The frontmatter's top-level keys.
    "defaultPrompt": NotRequired[Optional[str]],  # `interface.default_prompt` of `agents/openai.yaml`: a starter prompt.
    "displayName": NotRequired[Optional[str]],  # `interface.display_name` of the skill's `agents/openai.yaml`.
    "hasVariant": NotRequired[bool],  # Whether the skill is used through a workspace variant: never here (no variants).
    "iconLargeDataUrl": NotRequired[Optional[str]],  # `interface.icon_large`, the same way.
    "iconSmallDataUrl": NotRequired[Optional[str]],  # `interface.icon_small` of `agents/openai.yaml` as a `data:` URL (an image inside the
    "pluginDisplayName": NotRequired[Optional[str]],
    "pluginId": NotRequired[Optional[str]],  # The plugin holding it (source `plugin`).
    "shortDescription": NotRequired[Optional[str]],  # `interface.short_description` of `agents/openai.yaml`.
    "unavailableReason": NotRequired[Optional[str]],
})

# Params naming one skill.
SkillNameParams = TypedDict("SkillNameParams", {
    "name": str,
})

SkillResult = TypedDict("SkillResult", {
    "skill": "SkillInfo",
})

# Params of `skills/list`.
SkillsListParams = TypedDict("SkillsListParams", {
    "includeUnavailable": NotRequired[Optional[bool]],  # Default `true`: list skills whose requirements are not met too.
})

SkillsListResult = TypedDict("SkillsListResult", {
    "skills": List["SkillInfo"],
})

# Result of `skills/read`: the raw `SKILL.md`.
SkillsReadResult = TypedDict("SkillsReadResult", {
    "name": str,
    "content": str,
    "metadata": NotRequired[Optional[Dict[str, str]]],  # `null` when the file has no frontmatter.
})

# Result of `skills/restoreOriginal`.
SkillsRestoreResult = TypedDict("SkillsRestoreResult", {
    "name": str,
    "restored": bool,  # Whether an adaptation was restored (never: this server makes none).
})

SkillsSetEnabledParams = TypedDict("SkillsSetEnabledParams", {
    "name": str,
    "enabled": bool,
})

# Result of `skills/uninstall`.
SkillsUninstallResult = TypedDict("SkillsUninstallResult", {
    "name": str,
    "uninstalled": bool,
    "source": str,
    "removedSourcePath": str,
    "removedVariantCount": int,
})

# Result of `skills/view`: the body the agent gets (frontmatter stripped).
SkillsViewResult = TypedDict("SkillsViewResult", {
    "name": str,
    "content": str,
})

# One child.
SubAgentChild = TypedDict("SubAgentChild", {
    "edge": "SubAgentEdge",
    "thread": NotRequired[Optional["Thread"]],
})

# Params of `subagent/children/list`.
SubAgentChildrenListParams = TypedDict("SubAgentChildrenListParams", {
    "parentThreadId": str,
    "includeClosed": NotRequired[bool],  # Also list closed edges. Default `false`.
    "includeThreads": NotRequired[bool],  # Include each child's thread (as `thread/read` returns it, without turns). Default `false`.
})

# Result of `subagent/children/list`: oldest child first.
SubAgentChildrenListResult = TypedDict("SubAgentChildrenListResult", {
    "data": List["SubAgentChild"],
})

# Params of `subagent/close` and `subagent/resume`.
SubAgentControlParams = TypedDict("SubAgentControlParams", {
    "parentThreadId": str,
    "childThreadId": str,
})

# Result of `subagent/close` and `subagent/resume`: the child and its edge's status now
# (DotCraft's `SubAgentControlResult`, flat).
SubAgentControlResult = TypedDict("SubAgentControlResult", {
    "childThreadId": str,
    "status": str,  # The edge's status: `closed` after `subagent/close`, `open` after `subagent/resume`.
    "supportsSendInput": bool,
    "supportsResume": bool,
    "supportsClose": bool,
    "agentNickname": NotRequired[Optional[str]],
    "agentRole": NotRequired[Optional[str]],
    "message": NotRequired[Optional[str]],
    "profileName": NotRequired[Optional[str]],
    "runtimeType": NotRequired[Optional[str]],
})

# A parent/child edge.
SubAgentEdge = TypedDict("SubAgentEdge", {
    "parentThreadId": str,
    "childThreadId": str,
    "depth": int,
    "profileName": str,
    "runtimeType": str,
    "supportsSendInput": bool,
    "supportsResume": bool,
    "supportsClose": bool,
    "status": str,  # `open` or `closed`.
    "agentNickname": NotRequired[Optional[str]],
    "agentRole": NotRequired[Optional[str]],
    "parentTurnId": NotRequired[Optional[str]],
})

# `subagent/graphChanged`: a parent/child edge was made or changed; refresh the parent's
# `subagent/children/list`.
SubAgentGraphChangedParams = TypedDict("SubAgentGraphChangedParams", {
    "parentThreadId": str,
    "childThreadId": str,
})

# Whether a profile is offered, and why not (section 24.3).
SubAgentProfileDiagnostic = TypedDict("SubAgentProfileDiagnostic", {
    "enabled": bool,
    "binaryResolved": bool,
    "hiddenFromPrompt": bool,
    "warnings": List[str],
    "hiddenReason": NotRequired[Optional[str]],
})

# One profile as listed (section 24.3).
SubAgentProfileEntry = TypedDict("SubAgentProfileEntry", {
    "name": str,
    "isBuiltIn": bool,
    "isTemplate": bool,
    "hasWorkspaceOverride": bool,
    "isDefault": bool,
    "enabled": bool,
    "definition": "SubAgentProfileWrite",  # The effective definition (built-in defaults, then the workspace's override).
    "diagnostic": "SubAgentProfileDiagnostic",
    "builtInDefaults": NotRequired[Optional["SubAgentProfileWrite"]],  # Only for built-in profiles.
})

# Params of `subagent/profiles/remove`.
SubAgentProfileNameParams = TypedDict("SubAgentProfileNameParams", {
    "name": str,
})

# Result of `subagent/profiles/setEnabled` and `subagent/profiles/upsert`.
SubAgentProfileResult = TypedDict("SubAgentProfileResult", {
    "profile": "SubAgentProfileEntry",
})

# Params of `subagent/profiles/setEnabled`.
SubAgentProfileSetEnabledParams = TypedDict("SubAgentProfileSetEnabledParams", {
    "name": str,
    "enabled": bool,
})

# Params of `subagent/profiles/upsert`.
SubAgentProfileUpsertParams = TypedDict("SubAgentProfileUpsertParams", {
    "name": str,
    "definition": "SubAgentProfileWrite",
})

# A profile definition (section 24.2): the persisted shape of `SubAgentProfiles.<name>`, without
# its name. Fields other than `runtime` and `workingDirectoryMode` are those of external CLI
# runtimes.
SubAgentProfileWrite = TypedDict("SubAgentProfileWrite", {
    "args": NotRequired[Optional[List[str]]],
    "bin": NotRequired[Optional[str]],
    "deleteOutputFileAfterRead": NotRequired[Optional[bool]],
    "env": NotRequired[Optional[Dict[str, str]]],
    "envPassthrough": NotRequired[Optional[List[str]]],
    "inputArgTemplate": NotRequired[Optional[str]],
    "inputEnvKey": NotRequired[Optional[str]],
    "inputFormat": NotRequired[Optional[str]],
    "inputMode": NotRequired[Optional[str]],
    "maxOutputBytes": NotRequired[Optional[int]],
    "outputFileArgTemplate": NotRequired[Optional[str]],
    "outputFormat": NotRequired[Optional[str]],
    "outputInputTokensJsonPath": NotRequired[Optional[str]],
    "outputJsonPath": NotRequired[Optional[str]],
    "outputOutputTokensJsonPath": NotRequired[Optional[str]],
    "outputTotalTokensJsonPath": NotRequired[Optional[str]],
    "permissionModeMapping": NotRequired[Optional[Dict[str, str]]],
    "readOutputFile": NotRequired[Optional[bool]],
    "resumeArgTemplate": NotRequired[Optional[str]],
    "resumeSessionIdJsonPath": NotRequired[Optional[str]],
    "resumeSessionIdRegex": NotRequired[Optional[str]],
    "runtime": NotRequired[str],  # `native` (a child thread run by this server's agent) or `cli-oneshot` (an external command).
    "sanitizationRules": NotRequired[Any],
    "supportsModelSelection": NotRequired[Optional[bool]],
    "supportsResume": NotRequired[Optional[bool]],
    "supportsStreaming": NotRequired[Optional[bool]],
    "timeout": NotRequired[Optional[int]],  # Seconds; 0 is no limit.
    "trustLevel": NotRequired[Optional[str]],  # `trusted`, `prompt` or `restricted`.
    "workingDirectoryMode": NotRequired[str],  # `workspace` (default) or `specified`.
})

# Params of `subagent/profiles/list`: none.
SubAgentProfilesListParams = Dict[str, Any]

# Result of `subagent/profiles/list`.
SubAgentProfilesListResult = TypedDict("SubAgentProfilesListResult", {
    "defaultName": str,
    "settings": "SubAgentSettings",
    "profiles": List["SubAgentProfileEntry"],
})

# One sub-agent in a `subagent/progress` snapshot.
SubAgentProgressEntry = TypedDict("SubAgentProgressEntry", {
    "label": str,  # The `agentNickname` given to `SpawnAgent` (else the child's id).
    "inputTokens": int,
    "outputTokens": int,
    "isCompleted": bool,
    "currentTool": NotRequired[Optional[str]],  # The tool the sub-agent is running; `null` while it waits for its model.
})

# `subagent/progress`: a complete snapshot of the sub-agents of a turn (section 6.5).
SubAgentProgressParams = TypedDict("SubAgentProgressParams", {
    "threadId": str,  # The parent thread.
    "turnId": str,  # The parent's running turn.
    "entries": List["SubAgentProgressEntry"],
})

# The workspace's sub-agent settings.
SubAgentSettings = TypedDict("SubAgentSettings", {
    "externalCliSessionResumeEnabled": bool,
    "model": NotRequired[Optional[str]],  # The model of native sub-agents; `null`: the parent thread's model.
})

# Result of `subagent/settings/update`.
SubAgentSettingsResult = TypedDict("SubAgentSettingsResult", {
    "settings": "SubAgentSettings",
})

# Params of `subagent/settings/update`: at least one field. `model: null` (or empty) clears it;
# an absent field is left as it is.
SubAgentSettingsUpdateParams = TypedDict("SubAgentSettingsUpdateParams", {
    "externalCliSessionResumeEnabled": NotRequired[Optional[bool]],
    "model": NotRequired[Optional[str]],  # Absent: unchanged; `null`, empty or whitespace: cleared.
})

# `ThreadSource.subAgent`: where a sub-agent child comes from.
SubAgentThreadSource = TypedDict("SubAgentThreadSource", {
    "parentThreadId": str,
    "rootThreadId": str,  # The top-level (user) thread of the chain.
    "depth": int,  # 1 for a child of a top-level thread.
    "supportsSendInput": bool,
    "supportsResume": bool,
    "supportsClose": bool,
    "agentNickname": NotRequired[Optional[str]],
    "agentRole": NotRequired[Optional[str]],
    "parentTurnId": NotRequired[Optional[str]],  # The parent's turn that spawned the child.
    "profileName": NotRequired[Optional[str]],
    "runtimeType": NotRequired[Optional[str]],  # `native` or `cli-oneshot`.
    "spawnCallId": NotRequired[Optional[str]],  # The `SpawnAgent` call that made the child.
})

# `system/event` (section 6.7): a system-level event. appserver sends `channelRejected` to an
# adapter whose channel is not accepted, just before it closes the connection.
SystemEventParams = TypedDict("SystemEventParams", {
    "kind": str,
    "message": NotRequired[Optional[str]],
    "percentLeft": NotRequired[Optional[float]],
    "threadId": NotRequired[Optional[str]],  # The thread it concerns (`null` for a connection-level event such as `channelRejected`).
    "tokenCount": NotRequired[Optional[int]],
    "turnId": NotRequired[Optional[str]],
})

# A `systemNotice` item (Session Core, "SystemNotice"): a persistent marker in the timeline.
SystemNoticePayload = TypedDict("SystemNoticePayload", {
    "kind": str,  # `compacted` or `memoryConsolidated`.
    "clearedToolResults": NotRequired[Optional[int]],
    "mode": NotRequired[Optional[str]],  # For `compacted`: `micro` or `partial`.
    "percentLeftAfter": NotRequired[Optional[float]],
    "summary": NotRequired[Optional[str]],  # For `compacted` (appserver extension): the summary that stands for everything before this
    "tokensAfter": NotRequired[Optional[int]],
    "tokensBefore": NotRequired[Optional[int]],
    "trigger": NotRequired[Optional[str]],  # For `compacted`: `auto`, `reactive` or `manual`.
})

# Params of `terminal/clean`.
TerminalCleanParams = TypedDict("TerminalCleanParams", {
    "threadId": str,
})

# Params of `terminal/started`, `terminal/outputDelta`, `terminal/completed`, `terminal/stalled`
# and `terminal/cleaned` (section 19A.4): the terminal's snapshot, and for `outputDelta` the new
# output.
TerminalEventParams = TypedDict("TerminalEventParams", {
    "terminal": "BackgroundTerminal",
    "delta": NotRequired[Optional[str]],
})

# Params of `terminal/list`.
TerminalListParams = TypedDict("TerminalListParams", {
    "threadId": NotRequired[Optional[str]],
})

# Result of `terminal/list` and `terminal/clean`.
TerminalListResult = TypedDict("TerminalListResult", {
    "terminals": List["BackgroundTerminal"],
})

# Params of `terminal/read`.
TerminalReadParams = TypedDict("TerminalReadParams", {
    "sessionId": str,
    "maxOutputChars": NotRequired[Optional[int]],
    "waitMs": NotRequired[Optional[int]],  # Wait up to this long for output (or the end) when none is new.
})

# Result of `terminal/read`, `terminal/write` and `terminal/stop`.
TerminalResult = TypedDict("TerminalResult", {
    "terminal": "BackgroundTerminal",
})

# Params of `terminal/stop`.
TerminalSessionParams = TypedDict("TerminalSessionParams", {
    "sessionId": str,
})

# Params of `terminal/write`.
TerminalWriteParams = TypedDict("TerminalWriteParams", {
    "sessionId": str,
    "input": str,
    "maxOutputChars": NotRequired[Optional[int]],
    "yieldTimeMs": NotRequired[Optional[int]],  # How long to wait for output after writing (default 1000).
})

# Params of `item/agentMessage/delta` and `item/reasoning/delta`.
TextDeltaParams = TypedDict("TextDeltaParams", {
    "threadId": str,
    "turnId": str,
    "itemId": str,
    "deltaKind": str,  # `agentMessage` or `reasoningContent`.
    "delta": str,
})

# `agentMessage` and `reasoningContent`: the accumulated text.
TextPayload = TypedDict("TextPayload", {
    "text": str,
})

# A thread on the wire.
Thread = TypedDict("Thread", {
    "id": str,  # `thread_YYYYMMDD_xxxxxx`
    "workspacePath": str,
    "originChannel": str,
    "status": "ThreadStatus",
    "createdAt": str,
    "lastActiveAt": str,
    "historyMode": "HistoryMode",
    "channelContext": NotRequired[Optional[str]],
    "configuration": NotRequired[Optional["ThreadConfiguration"]],
    "contextUsage": NotRequired[Optional["ContextUsageSnapshot"]],  # How full the model's context window is (section 4.4): the persisted snapshot, absent
    "displayName": NotRequired[Optional[str]],
    "metadata": NotRequired[Dict[str, str]],
    "plan": NotRequired[Optional["Plan"]],  # The thread's current plan (the latest `plan/updated` snapshot), if it has one.
    "queuedInputs": NotRequired[List["QueuedTurnInput"]],
    "runtime": NotRequired[Optional["ThreadRuntime"]],
    "source": NotRequired["ThreadSource"],  # Why the thread exists (Session Core 4.1.1): `{kind: "user"}` for a top-level
    "turns": NotRequired[List["Turn"]],  # Populated by `thread/read` with `includeTurns`, `thread/rollback`, `thread/resume`.
    "userId": NotRequired[Optional[str]],
})

# Result of `thread/compact` (appserver extension): whether the history was compacted, and the
# thread's context usage after.
ThreadCompactResult = TypedDict("ThreadCompactResult", {
    "compacted": bool,
    "contextUsage": "ContextUsageSnapshot",
})

ThreadConfigUpdateParams = TypedDict("ThreadConfigUpdateParams", {
    "threadId": str,
    "config": "ThreadConfiguration",
})

# Per-thread agent configuration (section 4.1.1). Every field is optional; `thread/config/update`
# replaces the thread's whole configuration (a field left out is cleared).
ThreadConfiguration = TypedDict("ThreadConfiguration", {
    "agentInstructions": NotRequired[Optional[str]],
    "approvalPolicy": NotRequired[Optional[str]],  # `default`, `autoApprove`, `interrupt` (DotCraft) or `never`, `onRequest`, `untrusted`.
    "automationTaskDirectory": NotRequired[Optional[str]],
    "customTools": NotRequired[Optional[List[str]]],
    "extensions": NotRequired[Optional[List[str]]],
    "mcpServers": NotRequired[Optional[List[Any]]],
    "mode": NotRequired[Optional[str]],
    "model": NotRequired[Optional[str]],
    "requireApprovalOutsideWorkspace": NotRequired[Optional[bool]],
    "sandboxMode": NotRequired[Optional[str]],  # How this thread's commands are confined: `readOnly`, `workspaceWrite` or `fullAccess`
    "toolProfile": NotRequired[Optional[str]],
    "useToolProfileOnly": NotRequired[Optional[bool]],
    "workspaceOverride": NotRequired[Optional[str]],
})

ThreadIdParams = TypedDict("ThreadIdParams", {
    "threadId": str,
})

ThreadListParams = TypedDict("ThreadListParams", {
    "identity": "SessionIdentity",
    "channelName": NotRequired[Optional[str]],
    "crossChannelOrigins": NotRequired[Optional[List[str]]],
    "cursor": NotRequired[Optional[str]],  # appserver extension: `nextCursor` of the previous page.
    "includeArchived": NotRequired[bool],
    "includeSubAgents": NotRequired[bool],
    "limit": NotRequired[Optional[int]],  # appserver extension: page size (default 100, at most 1000).
})

ThreadListResult = TypedDict("ThreadListResult", {
    "data": List["ThreadSummary"],
    "nextCursor": NotRequired[Optional[str]],  # Present when more threads match: pass it as `cursor` for the next page.
})

ThreadModeSetParams = TypedDict("ThreadModeSetParams", {
    "threadId": str,
    "mode": str,
})

ThreadQueueUpdatedParams = TypedDict("ThreadQueueUpdatedParams", {
    "threadId": str,
    "queuedInputs": List["QueuedTurnInput"],
})

ThreadReadParams = TypedDict("ThreadReadParams", {
    "threadId": str,
    "includeTurns": NotRequired[bool],
    "turnsCursor": NotRequired[Optional[str]],  # appserver extension: `nextTurnsCursor` of the previous page, to read older turns.
    "turnsLimit": NotRequired[Optional[int]],  # appserver extension: return at most this many turns (the most recent ones).
})

ThreadReadResult = TypedDict("ThreadReadResult", {
    "thread": "Thread",
    "nextTurnsCursor": NotRequired[Optional[str]],  # Present when older turns were left out of this page.
    "seq": NotRequired[Optional[int]],  # appserver extension: the thread's last event `seq` when the read began; the result
})

ThreadRenameParams = TypedDict("ThreadRenameParams", {
    "threadId": str,
    "displayName": str,
})

ThreadRenamedParams = TypedDict("ThreadRenamedParams", {
    "threadId": str,
    "displayName": str,
})

# `{ thread }`: the result of `thread/start`, `thread/resume`, `thread/rollback`, and the params
# of `thread/started`.
ThreadResult = TypedDict("ThreadResult", {
    "thread": "Thread",
})

ThreadResumeParams = TypedDict("ThreadResumeParams", {
    "threadId": str,
    "afterSeq": NotRequired[Optional[int]],  # appserver extension: also subscribe this connection to the thread, delivering every event
})

ThreadResumedParams = TypedDict("ThreadResumedParams", {
    "thread": "Thread",
    "resumedBy": str,
})

ThreadRollbackParams = TypedDict("ThreadRollbackParams", {
    "threadId": str,
    "numTurns": int,
})

# Whether a thread is busy, for thread lists (section 6.1 `thread/runtimeChanged`).
ThreadRuntime = TypedDict("ThreadRuntime", {
    "running": bool,
    "waitingOnApproval": bool,
    "waitingOnPlanConfirmation": bool,
})

ThreadRuntimeChangedParams = TypedDict("ThreadRuntimeChangedParams", {
    "threadId": str,
    "runtime": "ThreadRuntime",
})

# `Thread.source` and `ThreadSummary.source`: why the thread exists (Session Core 4.1.1).
ThreadSource = TypedDict("ThreadSource", {
    "kind": str,  # `user` (a top-level conversation) or `subagent` (a child spawned from another thread's
    "subAgent": NotRequired[Optional["SubAgentThreadSource"]],  # With `kind: "subagent"`: the child's parent, root and spawn metadata.
})

ThreadStartParams = TypedDict("ThreadStartParams", {
    "identity": "SessionIdentity",
    "config": NotRequired[Optional["ThreadConfiguration"]],
    "displayName": NotRequired[Optional[str]],
    "dynamicTools": NotRequired[List["DynamicToolSpec"]],
    "historyMode": NotRequired[Optional["HistoryMode"]],
})

ThreadStatus = Literal["active", "paused", "archived"]

ThreadStatusChangedParams = TypedDict("ThreadStatusChangedParams", {
    "threadId": str,
    "previousStatus": "ThreadStatus",
    "newStatus": "ThreadStatus",
})

ThreadSubscribeParams = TypedDict("ThreadSubscribeParams", {
    "threadId": str,
    "afterSeq": NotRequired[Optional[int]],  # appserver extension: deliver every event of the thread numbered after this `seq` (from the
    "replayRecent": NotRequired[bool],
})

# One row of `thread/list`.
ThreadSummary = TypedDict("ThreadSummary", {
    "id": str,
    "status": "ThreadStatus",
    "originChannel": str,
    "workspacePath": str,
    "createdAt": str,
    "lastActiveAt": str,
    "channelContext": NotRequired[Optional[str]],
    "displayName": NotRequired[Optional[str]],
    "metadata": NotRequired[Dict[str, str]],
    "runtime": NotRequired[Optional["ThreadRuntime"]],
    "source": NotRequired["ThreadSource"],  # Why the thread exists, as on `Thread`.
    "turnCount": NotRequired[int],  # How many turns the thread has (after a rollback, those left).
    "userId": NotRequired[Optional[str]],
})

TokenUsage = TypedDict("TokenUsage", {
    "inputTokens": int,
    "outputTokens": int,
    "totalTokens": int,
})

# Params of `item/toolCall/argumentsDelta`.
ToolCallArgumentsDeltaParams = TypedDict("ToolCallArgumentsDeltaParams", {
    "threadId": str,
    "turnId": str,
    "itemId": str,
    "deltaKind": str,  # Always `toolCallArguments`.
    "delta": str,
    "callId": NotRequired[Optional[str]],
    "toolName": NotRequired[Optional[str]],
})

ToolCallPayload = TypedDict("ToolCallPayload", {
    "toolName": str,
    "callId": str,
    "arguments": NotRequired[Any],  # Complete in `item/completed`; may be absent while arguments stream.
    "mcpServer": NotRequired[Optional[str]],  # The MCP server of a call of one of its tools by its namespaced name
    "mcpTool": NotRequired[Optional[str]],  # The MCP tool's own name, with `mcpServer` (appserver extension).
})

# Params of `item/toolCall/progress` (appserver extension): a progress notification of the MCP
# server during the agent's call of its tool (`mcp_call`), as it comes; not kept.
ToolCallProgressParams = TypedDict("ToolCallProgressParams", {
    "threadId": str,
    "turnId": str,
    "callId": str,  # The `toolCall` item's `callId`.
    "server": str,
    "tool": str,
    "progress": float,
    "message": NotRequired[Optional[str]],
    "total": NotRequired[Optional[float]],
})

ToolExecutionPayload = TypedDict("ToolExecutionPayload", {
    "callId": str,
    "toolName": str,
    "status": str,  # `inProgress`, `completed`, `failed` or `cancelled`.
    "durationMs": NotRequired[Optional[int]],
    "errorMessage": NotRequired[Optional[str]],
    "resultPreview": NotRequired[Optional[str]],
    "success": NotRequired[Optional[bool]],
})

ToolResultPayload = TypedDict("ToolResultPayload", {
    "callId": str,
    "result": str,
    "success": bool,
    "contentItems": NotRequired[List["ContentItem"]],  # Every content block of an MCP tool's result — text, images, audio, resource links and
    "fileChanges": NotRequired[List["FileChange"]],  # The files this call changed, with their diffs (appserver extension: `WriteFile`,
    "structuredResult": NotRequired[Any],  # An MCP tool's `structuredContent` (appserver extension).
})

# A turn on the wire.
Turn = TypedDict("Turn", {
    "id": str,  # `turn_001`
    "threadId": str,
    "status": "TurnStatus",
    "startedAt": str,
    "completedAt": NotRequired[Optional[str]],
    "error": NotRequired[Optional[str]],
    "initiator": NotRequired[Optional["TurnInitiator"]],
    "items": NotRequired[List["Item"]],
    "originChannel": NotRequired[Optional[str]],
    "tokenUsage": NotRequired[Optional["TokenUsage"]],
})

TurnCancelledParams = TypedDict("TurnCancelledParams", {
    "turn": "Turn",
    "reason": str,
})

# Params of `turn/diff/updated`: the turn's aggregate unified diff after each file change.
TurnDiffUpdatedParams = TypedDict("TurnDiffUpdatedParams", {
    "threadId": str,
    "turnId": str,
    "diff": str,
})

TurnEnqueueParams = TypedDict("TurnEnqueueParams", {
    "threadId": str,
    "input": List["InputPart"],
    "sender": NotRequired[Optional["SenderContext"]],
})

TurnEnqueueResult = TypedDict("TurnEnqueueResult", {
    "queuedInput": "QueuedTurnInput",
    "queuedInputs": List["QueuedTurnInput"],
})

TurnFailedParams = TypedDict("TurnFailedParams", {
    "turn": "Turn",
    "error": str,
})

# Durable actor metadata of a turn.
TurnInitiator = TypedDict("TurnInitiator", {
    "channelName": str,
    "channelContext": NotRequired[Optional[str]],
    "groupId": NotRequired[Optional[str]],
    "userId": NotRequired[Optional[str]],
    "userName": NotRequired[Optional[str]],
    "userRole": NotRequired[Optional[str]],
})

TurnInterruptParams = TypedDict("TurnInterruptParams", {
    "threadId": str,
    "turnId": str,
})

TurnQueueRemoveParams = TypedDict("TurnQueueRemoveParams", {
    "threadId": str,
    "queuedInputId": str,
})

# `{ turn }`: the result of `turn/start` and the params of `turn/started` / `turn/completed`.
TurnResult = TypedDict("TurnResult", {
    "turn": "Turn",
})

TurnStartParams = TypedDict("TurnStartParams", {
    "threadId": str,
    "input": List["InputPart"],
    "messages": NotRequired[Optional[List["ChatMessage"]]],  # Required when the thread uses `historyMode = "client"`, forbidden otherwise.
    "sender": NotRequired[Optional["SenderContext"]],
})

TurnStatus = Literal["running", "waitingApproval", "completed", "failed", "cancelled"]

TurnSteerParams = TypedDict("TurnSteerParams", {
    "threadId": str,
    "expectedTurnId": str,
    "queuedInputId": str,
    "sender": NotRequired[Optional["SenderContext"]],
})

TurnSteerResult = TypedDict("TurnSteerResult", {
    "turnId": str,
    "queuedInputs": List["QueuedTurnInput"],
})

# Params of `item/usage/delta` (section 6.6).
UsageDeltaParams = TypedDict("UsageDeltaParams", {
    "threadId": str,
    "turnId": str,
    "inputTokens": int,
    "outputTokens": int,
    "contextUsage": NotRequired[Optional["ContextUsageSnapshot"]],  # The snapshot matching `totalInputTokens`, with the thresholds (section 6.6).
    "totalInputTokens": NotRequired[Optional[int]],
    "totalOutputTokens": NotRequired[Optional[int]],
})

UserMessagePayload = TypedDict("UserMessagePayload", {
    "text": str,  # Display text derived from the native input parts.
    "channelContext": NotRequired[Optional[str]],
    "channelName": NotRequired[Optional[str]],
    "deliveryMode": NotRequired[Optional[str]],  # `normal`, `queued` or `guidance`.
    "groupId": NotRequired[Optional[str]],
    "images": NotRequired[List["ImageRef"]],
    "materializedInputParts": NotRequired[List["InputPart"]],
    "nativeInputParts": NotRequired[List["InputPart"]],
    "senderId": NotRequired[Optional[str]],
    "senderName": NotRequired[Optional[str]],
    "senderRole": NotRequired[Optional[str]],
    "triggerKind": NotRequired[Optional[str]],
    "triggerLabel": NotRequired[Optional[str]],
    "triggerRefId": NotRequired[Optional[str]],
})

WelcomeSuggestionItem = TypedDict("WelcomeSuggestionItem", {
    "title": str,
    "prompt": str,
    "reason": NotRequired[Optional[str]],
})

# Params of `welcome/suggestions`.
WelcomeSuggestionsParams = TypedDict("WelcomeSuggestionsParams", {
    "identity": "SessionIdentity",
    "maxItems": NotRequired[Optional[int]],
})

# Result of `welcome/suggestions`.
WelcomeSuggestionsResult = TypedDict("WelcomeSuggestionsResult", {
    "items": List["WelcomeSuggestionItem"],
    "source": str,  # `dynamic` or `none`.
    "generatedAt": str,
    "fingerprint": str,
})

# `workspace/configChanged`: something in the workspace's configuration was written.
WorkspaceConfigChangedParams = TypedDict("WorkspaceConfigChangedParams", {
    "source": str,  # The method that wrote it.
    "regions": List[str],  # Coarse tags of what changed (`workspace.model`, `externalChannel`, ...).
    "changedAt": str,  # ISO 8601 UTC.
})

# Params of `workspace/config/schema`: an empty object (or omitted).
WorkspaceConfigSchemaParams = Dict[str, Any]

# Result of `workspace/config/schema`.
WorkspaceConfigSchemaResult = TypedDict("WorkspaceConfigSchemaResult", {
    "sections": List["ConfigSectionSchema"],
})

# Params (and, echoing what was written, result) of `workspace/config/update`. An absent field
# is left alone; `null` removes the key.
WorkspaceConfigValues = TypedDict("WorkspaceConfigValues", {
    "apiKey": NotRequired[Optional[str]],
    "defaultApprovalPolicy": NotRequired[Optional[str]],
    "endPoint": NotRequired[Optional[str]],
    "memoryAutoConsolidateEnabled": NotRequired[Optional[bool]],
    "model": NotRequired[Optional[str]],
    "skillsSelfLearningEnabled": NotRequired[Optional[bool]],
    "welcomeSuggestionsEnabled": NotRequired[Optional[bool]],
})

# A managed worktree as registered.
WorktreeInfo = TypedDict("WorktreeInfo", {
    "id": str,  # `task-<taskId>`.
    "sourceThreadId": str,
    "workspacePath": str,  # The worktree's folder (where its thread's tools work).
    "sourceWorkspacePath": str,  # The server's workspace it was made from.
    "path": str,
    "branchName": str,
    "baseRef": str,  # `HEAD`: what it was made from.
    "baseHead": str,  # The commit it was made from.
    "ownerKind": str,  # `automationTask`.
    "ownerId": str,  # The task's id.
    "head": NotRequired[Optional[str]],
})

# What a managed worktree holds now, for a review: changes not committed, and commits on its
# branch since it was made. A thread without one answers `worktree: null`, `exists: false`.
WorktreeStatus = TypedDict("WorktreeStatus", {
    "threadId": str,
    "exists": bool,
    "isGitWorktree": bool,
    "hasUncommittedChanges": bool,
    "hasCommitsAheadOfBase": bool,
    "aheadCount": int,
    "branchName": NotRequired[Optional[str]],
    "head": NotRequired[Optional[str]],  # The worktree's `HEAD` commit.
    "path": NotRequired[Optional[str]],
    "worktree": NotRequired[Optional["WorktreeInfo"]],
})

# `worktree/status`: the managed worktree a thread works in (an automation task's).
WorktreeStatusParams = TypedDict("WorktreeStatusParams", {
    "threadId": str,
})

WorktreeStatusResult = TypedDict("WorktreeStatusResult", {
    "status": "WorktreeStatus",
})

ClientRequestMethod = Literal["app/command", "app/descriptor/approve", "app/discover", "app/emit", "app/list", "app/log/read", "app/open", "app/query", "app/register", "app/unregister", "automation/task/create", "automation/task/delete", "automation/task/discardWorktree", "automation/task/list", "automation/task/read", "automation/task/run", "automation/task/updateBinding", "automation/template/delete", "automation/template/list", "automation/template/save", "channel/list", "channel/status", "command/execute", "command/list", "cron/enable", "cron/list", "cron/remove", "cron/run", "ext/acp/session/mcpServers", "externalChannel/get", "externalChannel/list", "externalChannel/remove", "externalChannel/upsert", "heartbeat/trigger", "initialize", "mcp/get", "mcp/list", "mcp/remove", "mcp/resources/list", "mcp/resources/read", "mcp/status/list", "mcp/test", "mcp/upsert", "mcp/view/call", "mcp/view/context", "mcp/view/storage/load", "mcp/view/storage/save", "mcp/view/tool", "model/list", "plugin/install", "plugin/list", "plugin/mcp/approve", "plugin/remove", "plugin/setEnabled", "plugin/view", "skills/list", "skills/read", "skills/restoreOriginal", "skills/setEnabled", "skills/uninstall", "skills/view", "subagent/children/list", "subagent/close", "subagent/profiles/list", "subagent/profiles/remove", "subagent/profiles/setEnabled", "subagent/profiles/upsert", "subagent/resume", "subagent/settings/update", "terminal/clean", "terminal/list", "terminal/read", "terminal/stop", "terminal/write", "thread/archive", "thread/compact", "thread/config/update", "thread/delete", "thread/list", "thread/mode/set", "thread/pause", "thread/read", "thread/rename", "thread/resume", "thread/rollback", "thread/start", "thread/subscribe", "thread/unarchive", "thread/unsubscribe", "turn/enqueue", "turn/interrupt", "turn/queue/remove", "turn/start", "turn/steer", "welcome/suggestions", "workspace/commitMessage/suggest", "workspace/config/schema", "workspace/config/update", "worktree/status"]

# method -> (params type name, result type name or None)
CLIENT_REQUESTS: Dict[str, Tuple[str, Optional[str]]] = {
    "app/command": ("AppCommandParams", "AppCommandResult"),
    "app/descriptor/approve": ("AppDescriptorApproveParams", "AppDescriptorApproveResult"),
    "app/discover": ("AppDiscoverParams", "AppDiscoverResult"),
    "app/emit": ("AppEmitParams", "EmptyResult"),
    "app/list": ("AppListParams", "AppListResult"),
    "app/log/read": ("AppLogReadParams", "AppLogReadResult"),
    "app/open": ("AppOpenParams", "AppOpenResult"),
    "app/query": ("AppQueryParams", "AppQueryResult"),
    "app/register": ("AppRegisterParams", "AppRegisterResult"),
    "app/unregister": ("AppUnregisterParams", "EmptyResult"),
    "automation/task/create": ("AutomationTaskCreateParams", "AutomationTaskCreateResult"),
    "automation/task/delete": ("AutomationTaskIdParams", "AutomationOkResult"),
    "automation/task/discardWorktree": ("AutomationTaskIdParams", "AutomationTaskResult"),
    "automation/task/list": ("AutomationTaskListParams", "AutomationTaskListResult"),
    "automation/task/read": ("AutomationTaskIdParams", "AutomationTask"),
    "automation/task/run": ("AutomationTaskIdParams", "AutomationTaskResult"),
    "automation/task/updateBinding": ("AutomationTaskUpdateBindingParams", "AutomationTaskResult"),
    "automation/template/delete": ("AutomationTemplateIdParams", "AutomationOkResult"),
    "automation/template/list": ("AutomationTemplateListParams", "AutomationTemplateListResult"),
    "automation/template/save": ("AutomationTemplateSaveParams", "AutomationTemplateResult"),
    "channel/list": ("ChannelListParams", "ChannelListResult"),
    "channel/status": ("ChannelStatusParams", "ChannelStatusResult"),
    "command/execute": ("CommandExecuteParams", "CommandResult"),
    "command/list": ("CommandListParams", "CommandListResult"),
    "cron/enable": ("CronEnableParams", "CronJobResult"),
    "cron/list": ("CronListParams", "CronListResult"),
    "cron/remove": ("CronJobIdParams", "RemovedResult"),
    "cron/run": ("CronJobIdParams", "CronRunResult"),
    "ext/acp/session/mcpServers": ("AcpSessionMcpServersParams", "AcpSessionMcpServersResult"),
    "externalChannel/get": ("ExternalChannelNameParams", "ExternalChannelResult"),
    "externalChannel/list": ("ExternalChannelListParams", "ExternalChannelListResult"),
    "externalChannel/remove": ("ExternalChannelNameParams", "RemovedResult"),
    "externalChannel/upsert": ("ExternalChannelUpsertParams", "ExternalChannelResult"),
    "heartbeat/trigger": ("HeartbeatTriggerParams", "HeartbeatTriggerResult"),
    "initialize": ("InitializeParams", "InitializeResult"),
    "mcp/get": ("McpNameParams", "McpServerResult"),
    "mcp/list": ("McpListParams", "McpListResult"),
    "mcp/remove": ("McpNameParams", "McpRemoveResult"),
    "mcp/resources/list": ("McpResourceListParams", "McpResourceListResult"),
    "mcp/resources/read": ("McpResourceReadParams", "McpResourceReadResult"),
    "mcp/status/list": ("McpListParams", "McpStatusListResult"),
    "mcp/test": ("McpServerParams", "McpTestResult"),
    "mcp/upsert": ("McpServerParams", "McpServerResult"),
    "mcp/view/call": ("McpViewCallParams", "McpViewCallResult"),
    "mcp/view/context": ("McpViewContextParams", "EmptyResult"),
    "mcp/view/storage/load": ("McpViewStorageLoadParams", "McpViewStorageLoadResult"),
    "mcp/view/storage/save": ("McpViewStorageSaveParams", "McpViewStorageSaveResult"),
    "mcp/view/tool": ("McpViewToolParams", "McpViewToolResult"),
    "model/list": ("ModelListParams", "ModelListResult"),
    "plugin/install": ("PluginInstallParams", "PluginResult"),
    "plugin/list": ("PluginListParams", "PluginListResult"),
    "plugin/mcp/approve": ("PluginMcpApproveParams", "PluginResult"),
    "plugin/remove": ("PluginIdParams", "PluginResult"),
    "plugin/setEnabled": ("PluginSetEnabledParams", "PluginResult"),
    "plugin/view": ("PluginIdParams", "PluginResult"),
    "skills/list": ("SkillsListParams", "SkillsListResult"),
    "skills/read": ("SkillNameParams", "SkillsReadResult"),
    "skills/restoreOriginal": ("SkillNameParams", "SkillsRestoreResult"),
    "skills/setEnabled": ("SkillsSetEnabledParams", "SkillResult"),
    "skills/uninstall": ("SkillNameParams", "SkillsUninstallResult"),
    "skills/view": ("SkillNameParams", "SkillsViewResult"),
    "subagent/children/list": ("SubAgentChildrenListParams", "SubAgentChildrenListResult"),
    "subagent/close": ("SubAgentControlParams", "SubAgentControlResult"),
    "subagent/profiles/list": ("SubAgentProfilesListParams", "SubAgentProfilesListResult"),
    "subagent/profiles/remove": ("SubAgentProfileNameParams", "RemovedResult"),
    "subagent/profiles/setEnabled": ("SubAgentProfileSetEnabledParams", "SubAgentProfileResult"),
    "subagent/profiles/upsert": ("SubAgentProfileUpsertParams", "SubAgentProfileResult"),
    "subagent/resume": ("SubAgentControlParams", "SubAgentControlResult"),
    "subagent/settings/update": ("SubAgentSettingsUpdateParams", "SubAgentSettingsResult"),
    "terminal/clean": ("TerminalCleanParams", "TerminalListResult"),
    "terminal/list": ("TerminalListParams", "TerminalListResult"),
    "terminal/read": ("TerminalReadParams", "TerminalResult"),
    "terminal/stop": ("TerminalSessionParams", "TerminalResult"),
    "terminal/write": ("TerminalWriteParams", "TerminalResult"),
    "thread/archive": ("ThreadIdParams", "EmptyResult"),
    "thread/compact": ("ThreadIdParams", "ThreadCompactResult"),
    "thread/config/update": ("ThreadConfigUpdateParams", "EmptyResult"),
    "thread/delete": ("ThreadIdParams", "EmptyResult"),
    "thread/list": ("ThreadListParams", "ThreadListResult"),
    "thread/mode/set": ("ThreadModeSetParams", "EmptyResult"),
    "thread/pause": ("ThreadIdParams", "EmptyResult"),
    "thread/read": ("ThreadReadParams", "ThreadReadResult"),
    "thread/rename": ("ThreadRenameParams", "EmptyResult"),
    "thread/resume": ("ThreadResumeParams", "ThreadResult"),
    "thread/rollback": ("ThreadRollbackParams", "ThreadResult"),
    "thread/start": ("ThreadStartParams", "ThreadResult"),
    "thread/subscribe": ("ThreadSubscribeParams", "EmptyResult"),
    "thread/unarchive": ("ThreadIdParams", "EmptyResult"),
    "thread/unsubscribe": ("ThreadIdParams", "EmptyResult"),
    "turn/enqueue": ("TurnEnqueueParams", "TurnEnqueueResult"),
    "turn/interrupt": ("TurnInterruptParams", "EmptyResult"),
    "turn/queue/remove": ("TurnQueueRemoveParams", "QueuedInputsResult"),
    "turn/start": ("TurnStartParams", "TurnResult"),
    "turn/steer": ("TurnSteerParams", "TurnSteerResult"),
    "welcome/suggestions": ("WelcomeSuggestionsParams", "WelcomeSuggestionsResult"),
    "workspace/commitMessage/suggest": ("CommitMessageSuggestParams", "CommitMessageSuggestResult"),
    "workspace/config/schema": ("WorkspaceConfigSchemaParams", "WorkspaceConfigSchemaResult"),
    "workspace/config/update": ("WorkspaceConfigValues", "WorkspaceConfigValues"),
    "worktree/status": ("WorktreeStatusParams", "WorktreeStatusResult"),
}

ClientNotificationMethod = Literal["app/emit", "app/interaction", "initialized"]

# method -> (params type name, result type name or None)
CLIENT_NOTIFICATIONS: Dict[str, Tuple[str, Optional[str]]] = {
    "app/emit": ("AppEmitParams", None),
    "app/interaction": ("AppInteractionParams", None),
    "initialized": ("InitializedParams", None),
}

ServerNotificationMethod = Literal["app/event", "app/externalCall", "app/registered", "app/replayed", "app/unregistered", "automation/task/updated", "cron/stateChanged", "item/agentMessage/delta", "item/approval/resolved", "item/commandExecution/outputDelta", "item/completed", "item/reasoning/delta", "item/started", "item/toolCall/argumentsDelta", "item/toolCall/progress", "item/usage/delta", "mcp/status/updated", "mcp/view/offered", "plan/updated", "subagent/graphChanged", "subagent/progress", "system/event", "system/jobResult", "terminal/cleaned", "terminal/completed", "terminal/outputDelta", "terminal/stalled", "terminal/started", "thread/deleted", "thread/queue/updated", "thread/renamed", "thread/resumed", "thread/runtimeChanged", "thread/started", "thread/statusChanged", "turn/cancelled", "turn/completed", "turn/diff/updated", "turn/failed", "turn/started", "workspace/configChanged"]

# method -> (params type name, result type name or None)
SERVER_NOTIFICATIONS: Dict[str, Tuple[str, Optional[str]]] = {
    "app/event": ("AppEventParams", None),
    "app/externalCall": ("AppExternalCallParams", None),
    "app/registered": ("AppRegisteredParams", None),
    "app/replayed": ("AppReplayedParams", None),
    "app/unregistered": ("AppUnregisteredParams", None),
    "automation/task/updated": ("AutomationTaskUpdatedParams", None),
    "cron/stateChanged": ("CronStateChangedParams", None),
    "item/agentMessage/delta": ("TextDeltaParams", None),
    "item/approval/resolved": ("ItemEventParams", None),
    "item/commandExecution/outputDelta": ("CommandExecutionOutputDeltaParams", None),
    "item/completed": ("ItemEventParams", None),
    "item/reasoning/delta": ("TextDeltaParams", None),
    "item/started": ("ItemEventParams", None),
    "item/toolCall/argumentsDelta": ("ToolCallArgumentsDeltaParams", None),
    "item/toolCall/progress": ("ToolCallProgressParams", None),
    "item/usage/delta": ("UsageDeltaParams", None),
    "mcp/status/updated": ("McpStatusUpdatedParams", None),
    "mcp/view/offered": ("McpViewOfferedParams", None),
    "plan/updated": ("PlanUpdatedParams", None),
    "subagent/graphChanged": ("SubAgentGraphChangedParams", None),
    "subagent/progress": ("SubAgentProgressParams", None),
    "system/event": ("SystemEventParams", None),
    "system/jobResult": ("JobResultParams", None),
    "terminal/cleaned": ("TerminalEventParams", None),
    "terminal/completed": ("TerminalEventParams", None),
    "terminal/outputDelta": ("TerminalEventParams", None),
    "terminal/stalled": ("TerminalEventParams", None),
    "terminal/started": ("TerminalEventParams", None),
    "thread/deleted": ("ThreadIdParams", None),
    "thread/queue/updated": ("ThreadQueueUpdatedParams", None),
    "thread/renamed": ("ThreadRenamedParams", None),
    "thread/resumed": ("ThreadResumedParams", None),
    "thread/runtimeChanged": ("ThreadRuntimeChangedParams", None),
    "thread/started": ("ThreadResult", None),
    "thread/statusChanged": ("ThreadStatusChangedParams", None),
    "turn/cancelled": ("TurnCancelledParams", None),
    "turn/completed": ("TurnResult", None),
    "turn/diff/updated": ("TurnDiffUpdatedParams", None),
    "turn/failed": ("TurnFailedParams", None),
    "turn/started": ("TurnResult", None),
    "workspace/configChanged": ("WorkspaceConfigChangedParams", None),
}

ServerRequestMethod = Literal["ext/acp/fs/readTextFile", "ext/acp/fs/writeTextFile", "ext/acp/terminal/create", "ext/acp/terminal/getOutput", "ext/acp/terminal/kill", "ext/acp/terminal/release", "ext/acp/terminal/waitForExit", "ext/app/command", "ext/app/query", "ext/channel/heartbeat", "ext/channel/send", "ext/channel/toolCall", "item/approval/request", "item/tool/call", "mcp/elicitation/request"]

# method -> (params type name, result type name or None)
SERVER_REQUESTS: Dict[str, Tuple[str, Optional[str]]] = {
    "ext/acp/fs/readTextFile": ("AcpReadTextFileParams", "AcpReadTextFileResult"),
    "ext/acp/fs/writeTextFile": ("AcpWriteTextFileParams", "EmptyResult"),
    "ext/acp/terminal/create": ("AcpTerminalCreateParams", "AcpTerminalCreateResult"),
    "ext/acp/terminal/getOutput": ("AcpTerminalParams", "AcpTerminalOutputResult"),
    "ext/acp/terminal/kill": ("AcpTerminalParams", "EmptyResult"),
    "ext/acp/terminal/release": ("AcpTerminalParams", "EmptyResult"),
    "ext/acp/terminal/waitForExit": ("AcpTerminalParams", "AcpTerminalExitStatus"),
    "ext/app/command": ("ExtAppCommandParams", "AppCommandResult"),
    "ext/app/query": ("ExtAppQueryParams", "AppQueryResult"),
    "ext/channel/heartbeat": ("ExtChannelHeartbeatParams", "EmptyResult"),
    "ext/channel/send": ("ExtChannelSendParams", "ExtChannelSendResult"),
    "ext/channel/toolCall": ("ExtChannelToolCallParams", "DynamicToolCallResult"),
    "item/approval/request": ("ApprovalRequestParams", "ApprovalDecisionResult"),
    "item/tool/call": ("DynamicToolCallParams", "DynamicToolCallResult"),
    "mcp/elicitation/request": ("McpElicitationRequestParams", "McpElicitationResult"),
}

class ClientRequests:
    """One typed coroutine per client request; `AppServerClient` implements `request`."""

    async def request(self, method: ClientRequestMethod, params: Any, timeout: Optional[float] = None) -> Any:
        raise NotImplementedError

    async def app_command(self, params: "AppCommandParams", timeout: Optional[float] = None) -> "AppCommandResult":
        return await self.request("app/command", params, timeout)

    async def app_descriptor_approve(self, params: "AppDescriptorApproveParams", timeout: Optional[float] = None) -> "AppDescriptorApproveResult":
        return await self.request("app/descriptor/approve", params, timeout)

    async def app_discover(self, params: "AppDiscoverParams", timeout: Optional[float] = None) -> "AppDiscoverResult":
        return await self.request("app/discover", params, timeout)

    async def app_emit(self, params: "AppEmitParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("app/emit", params, timeout)

    async def app_list(self, params: "AppListParams", timeout: Optional[float] = None) -> "AppListResult":
        return await self.request("app/list", params, timeout)

    async def app_log_read(self, params: "AppLogReadParams", timeout: Optional[float] = None) -> "AppLogReadResult":
        return await self.request("app/log/read", params, timeout)

    async def app_open(self, params: "AppOpenParams", timeout: Optional[float] = None) -> "AppOpenResult":
        return await self.request("app/open", params, timeout)

    async def app_query(self, params: "AppQueryParams", timeout: Optional[float] = None) -> "AppQueryResult":
        return await self.request("app/query", params, timeout)

    async def app_register(self, params: "AppRegisterParams", timeout: Optional[float] = None) -> "AppRegisterResult":
        return await self.request("app/register", params, timeout)

    async def app_unregister(self, params: "AppUnregisterParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("app/unregister", params, timeout)

    async def automation_task_create(self, params: "AutomationTaskCreateParams", timeout: Optional[float] = None) -> "AutomationTaskCreateResult":
        return await self.request("automation/task/create", params, timeout)

    async def automation_task_delete(self, params: "AutomationTaskIdParams", timeout: Optional[float] = None) -> "AutomationOkResult":
        return await self.request("automation/task/delete", params, timeout)

    async def automation_task_discardWorktree(self, params: "AutomationTaskIdParams", timeout: Optional[float] = None) -> "AutomationTaskResult":
        return await self.request("automation/task/discardWorktree", params, timeout)

    async def automation_task_list(self, params: "AutomationTaskListParams", timeout: Optional[float] = None) -> "AutomationTaskListResult":
        return await self.request("automation/task/list", params, timeout)

    async def automation_task_read(self, params: "AutomationTaskIdParams", timeout: Optional[float] = None) -> "AutomationTask":
        return await self.request("automation/task/read", params, timeout)

    async def automation_task_run(self, params: "AutomationTaskIdParams", timeout: Optional[float] = None) -> "AutomationTaskResult":
        return await self.request("automation/task/run", params, timeout)

    async def automation_task_updateBinding(self, params: "AutomationTaskUpdateBindingParams", timeout: Optional[float] = None) -> "AutomationTaskResult":
        return await self.request("automation/task/updateBinding", params, timeout)

    async def automation_template_delete(self, params: "AutomationTemplateIdParams", timeout: Optional[float] = None) -> "AutomationOkResult":
        return await self.request("automation/template/delete", params, timeout)

    async def automation_template_list(self, params: "AutomationTemplateListParams", timeout: Optional[float] = None) -> "AutomationTemplateListResult":
        return await self.request("automation/template/list", params, timeout)

    async def automation_template_save(self, params: "AutomationTemplateSaveParams", timeout: Optional[float] = None) -> "AutomationTemplateResult":
        return await self.request("automation/template/save", params, timeout)

    async def channel_list(self, params: "ChannelListParams", timeout: Optional[float] = None) -> "ChannelListResult":
        return await self.request("channel/list", params, timeout)

    async def channel_status(self, params: "ChannelStatusParams", timeout: Optional[float] = None) -> "ChannelStatusResult":
        return await self.request("channel/status", params, timeout)

    async def command_execute(self, params: "CommandExecuteParams", timeout: Optional[float] = None) -> "CommandResult":
        return await self.request("command/execute", params, timeout)

    async def command_list(self, params: "CommandListParams", timeout: Optional[float] = None) -> "CommandListResult":
        return await self.request("command/list", params, timeout)

    async def cron_enable(self, params: "CronEnableParams", timeout: Optional[float] = None) -> "CronJobResult":
        return await self.request("cron/enable", params, timeout)

    async def cron_list(self, params: "CronListParams", timeout: Optional[float] = None) -> "CronListResult":
        return await self.request("cron/list", params, timeout)

    async def cron_remove(self, params: "CronJobIdParams", timeout: Optional[float] = None) -> "RemovedResult":
        return await self.request("cron/remove", params, timeout)

    async def cron_run(self, params: "CronJobIdParams", timeout: Optional[float] = None) -> "CronRunResult":
        return await self.request("cron/run", params, timeout)

    async def ext_acp_session_mcpServers(self, params: "AcpSessionMcpServersParams", timeout: Optional[float] = None) -> "AcpSessionMcpServersResult":
        return await self.request("ext/acp/session/mcpServers", params, timeout)

    async def externalChannel_get(self, params: "ExternalChannelNameParams", timeout: Optional[float] = None) -> "ExternalChannelResult":
        return await self.request("externalChannel/get", params, timeout)

    async def externalChannel_list(self, params: "ExternalChannelListParams", timeout: Optional[float] = None) -> "ExternalChannelListResult":
        return await self.request("externalChannel/list", params, timeout)

    async def externalChannel_remove(self, params: "ExternalChannelNameParams", timeout: Optional[float] = None) -> "RemovedResult":
        return await self.request("externalChannel/remove", params, timeout)

    async def externalChannel_upsert(self, params: "ExternalChannelUpsertParams", timeout: Optional[float] = None) -> "ExternalChannelResult":
        return await self.request("externalChannel/upsert", params, timeout)

    async def heartbeat_trigger(self, params: "HeartbeatTriggerParams", timeout: Optional[float] = None) -> "HeartbeatTriggerResult":
        return await self.request("heartbeat/trigger", params, timeout)

    async def initialize(self, params: "InitializeParams", timeout: Optional[float] = None) -> "InitializeResult":
        return await self.request("initialize", params, timeout)

    async def mcp_get(self, params: "McpNameParams", timeout: Optional[float] = None) -> "McpServerResult":
        return await self.request("mcp/get", params, timeout)

    async def mcp_list(self, params: "McpListParams", timeout: Optional[float] = None) -> "McpListResult":
        return await self.request("mcp/list", params, timeout)

    async def mcp_remove(self, params: "McpNameParams", timeout: Optional[float] = None) -> "McpRemoveResult":
        return await self.request("mcp/remove", params, timeout)

    async def mcp_resources_list(self, params: "McpResourceListParams", timeout: Optional[float] = None) -> "McpResourceListResult":
        return await self.request("mcp/resources/list", params, timeout)

    async def mcp_resources_read(self, params: "McpResourceReadParams", timeout: Optional[float] = None) -> "McpResourceReadResult":
        return await self.request("mcp/resources/read", params, timeout)

    async def mcp_status_list(self, params: "McpListParams", timeout: Optional[float] = None) -> "McpStatusListResult":
        return await self.request("mcp/status/list", params, timeout)

    async def mcp_test(self, params: "McpServerParams", timeout: Optional[float] = None) -> "McpTestResult":
        return await self.request("mcp/test", params, timeout)

    async def mcp_upsert(self, params: "McpServerParams", timeout: Optional[float] = None) -> "McpServerResult":
        return await self.request("mcp/upsert", params, timeout)

    async def mcp_view_call(self, params: "McpViewCallParams", timeout: Optional[float] = None) -> "McpViewCallResult":
        return await self.request("mcp/view/call", params, timeout)

    async def mcp_view_context(self, params: "McpViewContextParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("mcp/view/context", params, timeout)

    async def mcp_view_storage_load(self, params: "McpViewStorageLoadParams", timeout: Optional[float] = None) -> "McpViewStorageLoadResult":
        return await self.request("mcp/view/storage/load", params, timeout)

    async def mcp_view_storage_save(self, params: "McpViewStorageSaveParams", timeout: Optional[float] = None) -> "McpViewStorageSaveResult":
        return await self.request("mcp/view/storage/save", params, timeout)

    async def mcp_view_tool(self, params: "McpViewToolParams", timeout: Optional[float] = None) -> "McpViewToolResult":
        return await self.request("mcp/view/tool", params, timeout)

    async def model_list(self, params: "ModelListParams", timeout: Optional[float] = None) -> "ModelListResult":
        return await self.request("model/list", params, timeout)

    async def plugin_install(self, params: "PluginInstallParams", timeout: Optional[float] = None) -> "PluginResult":
        return await self.request("plugin/install", params, timeout)

    async def plugin_list(self, params: "PluginListParams", timeout: Optional[float] = None) -> "PluginListResult":
        return await self.request("plugin/list", params, timeout)

    async def plugin_mcp_approve(self, params: "PluginMcpApproveParams", timeout: Optional[float] = None) -> "PluginResult":
        return await self.request("plugin/mcp/approve", params, timeout)

    async def plugin_remove(self, params: "PluginIdParams", timeout: Optional[float] = None) -> "PluginResult":
        return await self.request("plugin/remove", params, timeout)

    async def plugin_setEnabled(self, params: "PluginSetEnabledParams", timeout: Optional[float] = None) -> "PluginResult":
        return await self.request("plugin/setEnabled", params, timeout)

    async def plugin_view(self, params: "PluginIdParams", timeout: Optional[float] = None) -> "PluginResult":
        return await self.request("plugin/view", params, timeout)

    async def skills_list(self, params: "SkillsListParams", timeout: Optional[float] = None) -> "SkillsListResult":
        return await self.request("skills/list", params, timeout)

    async def skills_read(self, params: "SkillNameParams", timeout: Optional[float] = None) -> "SkillsReadResult":
        return await self.request("skills/read", params, timeout)

    async def skills_restoreOriginal(self, params: "SkillNameParams", timeout: Optional[float] = None) -> "SkillsRestoreResult":
        return await self.request("skills/restoreOriginal", params, timeout)

    async def skills_setEnabled(self, params: "SkillsSetEnabledParams", timeout: Optional[float] = None) -> "SkillResult":
        return await self.request("skills/setEnabled", params, timeout)

    async def skills_uninstall(self, params: "SkillNameParams", timeout: Optional[float] = None) -> "SkillsUninstallResult":
        return await self.request("skills/uninstall", params, timeout)

    async def skills_view(self, params: "SkillNameParams", timeout: Optional[float] = None) -> "SkillsViewResult":
        return await self.request("skills/view", params, timeout)

    async def subagent_children_list(self, params: "SubAgentChildrenListParams", timeout: Optional[float] = None) -> "SubAgentChildrenListResult":
        return await self.request("subagent/children/list", params, timeout)

    async def subagent_close(self, params: "SubAgentControlParams", timeout: Optional[float] = None) -> "SubAgentControlResult":
        return await self.request("subagent/close", params, timeout)

    async def subagent_profiles_list(self, params: "SubAgentProfilesListParams", timeout: Optional[float] = None) -> "SubAgentProfilesListResult":
        return await self.request("subagent/profiles/list", params, timeout)

    async def subagent_profiles_remove(self, params: "SubAgentProfileNameParams", timeout: Optional[float] = None) -> "RemovedResult":
        return await self.request("subagent/profiles/remove", params, timeout)

    async def subagent_profiles_setEnabled(self, params: "SubAgentProfileSetEnabledParams", timeout: Optional[float] = None) -> "SubAgentProfileResult":
        return await self.request("subagent/profiles/setEnabled", params, timeout)

    async def subagent_profiles_upsert(self, params: "SubAgentProfileUpsertParams", timeout: Optional[float] = None) -> "SubAgentProfileResult":
        return await self.request("subagent/profiles/upsert", params, timeout)

    async def subagent_resume(self, params: "SubAgentControlParams", timeout: Optional[float] = None) -> "SubAgentControlResult":
        return await self.request("subagent/resume", params, timeout)

    async def subagent_settings_update(self, params: "SubAgentSettingsUpdateParams", timeout: Optional[float] = None) -> "SubAgentSettingsResult":
        return await self.request("subagent/settings/update", params, timeout)

    async def terminal_clean(self, params: "TerminalCleanParams", timeout: Optional[float] = None) -> "TerminalListResult":
        return await self.request("terminal/clean", params, timeout)

    async def terminal_list(self, params: "TerminalListParams", timeout: Optional[float] = None) -> "TerminalListResult":
        return await self.request("terminal/list", params, timeout)

    async def terminal_read(self, params: "TerminalReadParams", timeout: Optional[float] = None) -> "TerminalResult":
        return await self.request("terminal/read", params, timeout)

    async def terminal_stop(self, params: "TerminalSessionParams", timeout: Optional[float] = None) -> "TerminalResult":
        return await self.request("terminal/stop", params, timeout)

    async def terminal_write(self, params: "TerminalWriteParams", timeout: Optional[float] = None) -> "TerminalResult":
        return await self.request("terminal/write", params, timeout)

    async def thread_archive(self, params: "ThreadIdParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/archive", params, timeout)

    async def thread_compact(self, params: "ThreadIdParams", timeout: Optional[float] = None) -> "ThreadCompactResult":
        return await self.request("thread/compact", params, timeout)

    async def thread_config_update(self, params: "ThreadConfigUpdateParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/config/update", params, timeout)

    async def thread_delete(self, params: "ThreadIdParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/delete", params, timeout)

    async def thread_list(self, params: "ThreadListParams", timeout: Optional[float] = None) -> "ThreadListResult":
        return await self.request("thread/list", params, timeout)

    async def thread_mode_set(self, params: "ThreadModeSetParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/mode/set", params, timeout)

    async def thread_pause(self, params: "ThreadIdParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/pause", params, timeout)

    async def thread_read(self, params: "ThreadReadParams", timeout: Optional[float] = None) -> "ThreadReadResult":
        return await self.request("thread/read", params, timeout)

    async def thread_rename(self, params: "ThreadRenameParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/rename", params, timeout)

    async def thread_resume(self, params: "ThreadResumeParams", timeout: Optional[float] = None) -> "ThreadResult":
        return await self.request("thread/resume", params, timeout)

    async def thread_rollback(self, params: "ThreadRollbackParams", timeout: Optional[float] = None) -> "ThreadResult":
        return await self.request("thread/rollback", params, timeout)

    async def thread_start(self, params: "ThreadStartParams", timeout: Optional[float] = None) -> "ThreadResult":
        return await self.request("thread/start", params, timeout)

    async def thread_subscribe(self, params: "ThreadSubscribeParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/subscribe", params, timeout)

    async def thread_unarchive(self, params: "ThreadIdParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/unarchive", params, timeout)

    async def thread_unsubscribe(self, params: "ThreadIdParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("thread/unsubscribe", params, timeout)

    async def turn_enqueue(self, params: "TurnEnqueueParams", timeout: Optional[float] = None) -> "TurnEnqueueResult":
        return await self.request("turn/enqueue", params, timeout)

    async def turn_interrupt(self, params: "TurnInterruptParams", timeout: Optional[float] = None) -> "EmptyResult":
        return await self.request("turn/interrupt", params, timeout)

    async def turn_queue_remove(self, params: "TurnQueueRemoveParams", timeout: Optional[float] = None) -> "QueuedInputsResult":
        return await self.request("turn/queue/remove", params, timeout)

    async def turn_start(self, params: "TurnStartParams", timeout: Optional[float] = None) -> "TurnResult":
        return await self.request("turn/start", params, timeout)

    async def turn_steer(self, params: "TurnSteerParams", timeout: Optional[float] = None) -> "TurnSteerResult":
        return await self.request("turn/steer", params, timeout)

    async def welcome_suggestions(self, params: "WelcomeSuggestionsParams", timeout: Optional[float] = None) -> "WelcomeSuggestionsResult":
        return await self.request("welcome/suggestions", params, timeout)

    async def workspace_commitMessage_suggest(self, params: "CommitMessageSuggestParams", timeout: Optional[float] = None) -> "CommitMessageSuggestResult":
        return await self.request("workspace/commitMessage/suggest", params, timeout)

    async def workspace_config_schema(self, params: "WorkspaceConfigSchemaParams", timeout: Optional[float] = None) -> "WorkspaceConfigSchemaResult":
        return await self.request("workspace/config/schema", params, timeout)

    async def workspace_config_update(self, params: "WorkspaceConfigValues", timeout: Optional[float] = None) -> "WorkspaceConfigValues":
        return await self.request("workspace/config/update", params, timeout)

    async def worktree_status(self, params: "WorktreeStatusParams", timeout: Optional[float] = None) -> "WorktreeStatusResult":
        return await self.request("worktree/status", params, timeout)
