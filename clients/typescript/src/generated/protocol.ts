// Wire types of the appserver protocol. Generated from the Rust types by
// `cargo run -p appserver-protocol --bin appserver-schema`; do not edit.
/* eslint-disable */

export const PROTOCOL_VERSION = "1";

/** An environment variable of an editor terminal. */
export interface AcpEnvVariable {
  name: string;
  value: string;
}

/** `capabilities.acpExtensions` of `initialize`: which `ext/acp/*` requests the client handles. */
export interface AcpExtensions {
  /**
   * Custom extension families (`ext/acp/<family>/<method>`); accepted, none is used by this
   * server.
   */
  extensions?: string[];
  /** `ext/acp/fs/readTextFile`. */
  fsReadTextFile?: boolean | null;
  /** `ext/acp/fs/writeTextFile`. */
  fsWriteTextFile?: boolean | null;
  /** `ext/acp/terminal/*`. */
  terminalCreate?: boolean | null;
}

/**
 * Params of `ext/acp/fs/readTextFile` (server → client): the file's text as the editor has it
 * (unsaved changes included).
 */
export interface AcpReadTextFileParams {
  threadId: string;
  /** Absolute path. */
  path: string;
  /** Lines to read. */
  limit?: number | null;
  /** First line to read, 1-based. */
  line?: number | null;
}

export interface AcpReadTextFileResult {
  content: string;
}

/**
 * Params of `ext/acp/session/mcpServers` (appserver extension): the MCP servers an ACP editor
 * gave a session (`session/new`, `session/load`), connected for that thread while the calling
 * connection lasts; an empty list disconnects them.
 */
export interface AcpSessionMcpServersParams {
  threadId: string;
  servers: McpServerConfig[];
}

/** Result of `ext/acp/session/mcpServers`: each server's state once its first start settled. */
export interface AcpSessionMcpServersResult {
  servers: McpServerStatus[];
}

/**
 * Params of `ext/acp/terminal/create` (server → client): the editor starts `command` with
 * `args` (no shell in between) in `cwd`, in a terminal it shows.
 */
export interface AcpTerminalCreateParams {
  threadId: string;
  command: string;
  args?: string[];
  cwd?: string | null;
  env?: AcpEnvVariable[];
  /** The most output the editor keeps (its tail, cut at a character boundary). */
  outputByteLimit?: number | null;
}

export interface AcpTerminalCreateResult {
  terminalId: string;
}

/** How an editor terminal's command ended: its exit code, or the signal that ended it. */
export interface AcpTerminalExitStatus {
  exitCode?: number | null;
  signal?: string | null;
}

/** Result of `ext/acp/terminal/getOutput`. */
export interface AcpTerminalOutputResult {
  output: string;
  exitStatus?: AcpTerminalExitStatus | null;
  truncated?: boolean;
}

/** Params of `ext/acp/terminal/getOutput`, `…/waitForExit`, `…/kill` and `…/release`. */
export interface AcpTerminalParams {
  threadId: string;
  terminalId: string;
}

/**
 * Params of `ext/acp/fs/writeTextFile` (server → client): the editor writes the file (its
 * buffer, if open), creating it when absent. Result: `{}`.
 */
export interface AcpWriteTextFileParams {
  threadId: string;
  /** Absolute path. */
  path: string;
  content: string;
}

/**
 * Who made an app query or command. A name the caller gave itself is a *declared* name: the
 * server shows it, and never treats it as proof of who the caller is.
 */
export type AppCaller =
  | {
    kind: "agent";
    threadId: string;
  }
  | {
    kind: "mcp";
    declaredName: string;
    /** Empty in log entries written before sessions were recorded. */
    sessionId?: string;
  }
  | {
    kind: "app";
    windowId: string;
    appId: string;
  }
  | {
    kind: "client";
    connection: string;
    declaredName: string;
  };

/** The app command an approval is about. */
export interface AppCommandApproval {
  windowId: string;
  appId: string;
  command: string;
  params: unknown;
  /** Who asks to run it (appserver extension). */
  caller?: AppCaller | null;
}

export interface AppCommandDescriptor {
  description: string;
  /**
   * A descriptive shape of the params (the Robutler dialect, e.g. `{"index": "number"}`): shown
   * to agents, never validated.
   */
  args?: unknown;
  /** JSON Schema the params must match (checked by the server before the app is called). */
  params?: unknown;
  /** `false`: the command is logged but never replayed (a streaming render, a file import). */
  replay?: boolean | null;
  returns?: unknown;
  /** Event types this command emits while it runs (it may return a `runId` at once). */
  streams?: string[] | null;
}

export interface AppCommandParams {
  windowId: string;
  /** A declared command, or a built-in (`__describe`, `__getState`). */
  command: string;
  /**
   * The app window on whose behalf this connection calls (it must host it). On the window
   * itself the command runs as the app's own; on another window it needs
   * `permissions.callApps` and is approved like an agent's command, with the app as caller.
   */
  callerWindowId?: string | null;
  params?: unknown;
  timeoutMs?: number | null;
}

export interface AppCommandResult {
  result: unknown;
}

/**
 * Params of `app/descriptor/approve`: run the program of a descriptor app that is new or whose
 * descriptor changed (`needsApproval` in `app/list`).
 */
export interface AppDescriptorApproveParams {
  windowId: string;
}

/** What was approved and is now pinned: the app runs this program until its descriptor changes. */
export interface AppDescriptorApproveResult {
  windowId: string;
  /** The program, as started (a path, or a name looked up in `PATH`). */
  program: string;
  args: string[];
  /** The working directory. */
  cwd: string;
  /** SHA-256 (hex) of the descriptor file. */
  descriptorSha256: string;
}

/**
 * Params of `app/discover`: a web app by its URL (`https://host`), or by a name the user
 * confirmed before. With both, the name is remembered for the URL once the fetch succeeds.
 */
export interface AppDiscoverParams {
  name?: string | null;
  url?: string | null;
}

export interface AppDiscoverResult {
  /**
   * The window the web app is registered as: `web:<app.id>@<origin>` (the origin as `host`,
   * `host:port`, or `http:host[:port]` for plain http).
   */
  windowId: string;
  /** The app's origin, e.g. `https://notion.so`. */
  url: string;
  /** The descriptor as published. */
  descriptor: unknown;
  /** When it was fetched (ISO 8601). */
  fetchedAt: string;
  /** Until when it is served from the cache without a new fetch. */
  expiresAt: string;
  /** `true`: served from the cache without a fetch. */
  cached: boolean;
  /** `true`: the fetch failed and this is an expired copy. */
  stale: boolean;
}

/** Params of the `app/emit` notification (host → server): a progress event of a streaming command. */
export interface AppEmitParams {
  windowId: string;
  runId: string;
  type: string;
  payload?: unknown;
}

export interface AppEventDescriptor {
  description: string;
}

/** Params of `app/event`. */
export interface AppEventParams {
  windowId: string;
  runId: string;
  type: string;
  payload?: unknown;
}

/**
 * Params of `app/externalCall`: a caller that is neither a thread's agent nor a client acting
 * itself — an outside agent connected through the MCP server, or an app calling another app —
 * called a command on a window. Sent to every client once the call is decided, so a user sees
 * what was done to their app, and by whom.
 */
export interface AppExternalCallParams {
  windowId: string;
  command: string;
  params: unknown;
  /** Who called. */
  caller: AppCaller;
  /**
   * `done` (the app ran it; it is in the replay log), `declined` (no approval), `failed`, or
   * `cancelled` (withdrawn while its approval was pending: the app never saw it).
   */
  status: string;
  /** The app's result (`done`) or why it did not run. */
  detail?: unknown;
}

/** Params of the `app/interaction` notification (host → server): what the user did in the app. */
export interface AppInteractionParams {
  windowId: string;
  content: string;
}

/** The `interface` wrapper of a Robutler manifest. */
export interface AppInterface {
  commands?: { [key: string]: AppCommandDescriptor };
  description?: string | null;
  events?: { [key: string]: AppEventDescriptor } | null;
}

export interface AppListParams {
  /**
   * The app window on whose behalf this connection asks (it must host it): its manifest must
   * declare `permissions.callApps`.
   */
  callerWindowId?: string | null;
}

export interface AppListResult {
  apps: AppSummary[];
}

/** One replay-log entry: a command the app answered successfully. */
export interface AppLogEntry {
  seq: number;
  command: string;
  params: unknown;
  result: unknown;
  recordedAt: string;
  /** Who ran the command (absent on entries written before callers were recorded). */
  caller?: AppCaller | null;
  /** Why the app rejected this entry at its last replay, if it did. */
  replayError?: string | null;
}

export interface AppLogReadParams {
  windowId: string;
  /** Entries with a sequence number greater than this (default 0: from the start). */
  afterSeq?: number | null;
  /** At most this many entries (default 100, at most 1000). */
  limit?: number | null;
}

export interface AppLogReadResult {
  entries: AppLogEntry[];
  /** Pass as `afterSeq` to read on; absent at the end of the log. */
  nextSeq?: number | null;
}

/** What an app can do: its state keys and commands (and the events its streaming commands emit). */
export interface AppManifest {
  /** The app's id (`id` is accepted too, as in the Robutler manifests). */
  appId?: string;
  commands?: { [key: string]: AppCommandDescriptor };
  description?: string | null;
  events?: { [key: string]: AppEventDescriptor } | null;
  /**
   * The Robutler dialect: `description`, `commands` and `events` wrapped in `interface`. The
   * server moves them to the top level at registration, so a registered manifest never has it.
   */
  interface?: AppInterface | null;
  name?: string;
  /**
   * What the app may do beyond its own window (appserver extension). The web desktop takes it
   * from the app folder's `app.json`, never from the iframe.
   */
  permissions?: AppPermissions | null;
  state?: { [key: string]: AppStateDescriptor };
}

export interface AppOpenParams {
  /** A file inside the workspace (relative to it, or absolute). */
  path: string;
}

export interface AppOpenResult {
  windowId: string;
  command: string;
  result: unknown;
}

/** Permissions an app declares (`permissions` of its manifest). */
export interface AppPermissions {
  /**
   * The app may list, query and command *other* app windows (`app_list`, `app_query`,
   * `app_command` on another window). Its commands are then approved like an agent's, with the
   * app as their caller. Without it such calls are refused (`PERMISSION_DENIED`).
   */
  callApps?: boolean;
}

export interface AppQueryParams {
  windowId: string;
  /** A declared state key, or `"manifest"`. */
  stateKey: string;
  /**
   * The app window on whose behalf this connection asks (it must host it). Reading another
   * window needs `permissions.callApps` in that app's manifest.
   */
  callerWindowId?: string | null;
  timeoutMs?: number | null;
}

export interface AppQueryResult {
  data: unknown;
}

export interface AppRegisterParams {
  manifest: AppManifest;
  fileAssociations?: FileAssociation[];
  /** appserver extension: bind the window to this thread (its interactions go there). */
  threadId?: string | null;
  /** The window to (re-)register; a new id is assigned when omitted. */
  windowId?: string | null;
}

export interface AppRegisterResult {
  windowId: string;
  /** Log entries replayed successfully before this answer. */
  replayed: number;
  /** Log entries the app rejected during the replay (see `app/log/read`). */
  failed: number;
}

/** Params of `app/registered`. */
export interface AppRegisteredParams {
  windowId: string;
  appId: string;
  name: string;
}

/** One log entry the app rejected during a replay. */
export interface AppReplayError {
  seq: number;
  command: string;
  error: string;
}

/** Params of `app/replayed`. */
export interface AppReplayedParams {
  windowId: string;
  replayed: number;
  failed: number;
  errors: AppReplayError[];
}

export interface AppStateDescriptor {
  description: string;
  /** JSON Schema of the value. */
  schema?: unknown;
}

export interface AppSummary {
  windowId: string;
  appId: string;
  name: string;
  /** Whether the connection that registered it is still there (commands can run now). */
  live: boolean;
  commandCount: number;
  stateKeyCount: number;
  description?: string | null;
  /**
   * What hosts it: `window` (a connection that registered it), `stdio` (a program the server
   * runs, from an aai.json descriptor), `http` (a web service from a local aai.json
   * descriptor), `web` (a web service found with `app/discover`).
   */
  kind?: string;
  /**
   * The program its descriptor runs is new or changed and not approved yet: nothing runs
   * until `app/descriptor/approve`.
   */
  needsApproval?: boolean;
}

export interface AppUnregisterParams {
  windowId: string;
  /** Also delete the window's replay log. */
  forget?: boolean;
}

/** Params of `app/unregistered`. */
export interface AppUnregisteredParams {
  windowId: string;
  forgotten: boolean;
}

/** A client's decision. */
export type ApprovalDecision = "accept" | "acceptForSession" | "acceptAlways" | "decline" | "cancel";

/** The client's answer to `item/approval/request`. */
export interface ApprovalDecisionResult {
  decision: ApprovalDecision;
}

/** Params of `item/approval/request` (server → client request). */
export interface ApprovalRequestParams {
  threadId: string;
  turnId: string;
  /** The `approvalRequest` item. */
  itemId: string;
  /** Correlates the request with its `approvalResponse`. */
  requestId: string;
  /**
   * `shell` or `file` (the spec's values); `app` only for clients that declared the app
   * extension (`capabilities.extensions.appProtocol`).
   */
  approvalType: string;
  /** For `shell`: the command line. For `app`: the app command's name. */
  operation: string;
  /** For `shell`: the working directory. For `app`: the window id. */
  target: string;
  /** What `acceptForSession` / `acceptAlways` remember. */
  scopeKey: string;
  reason: string;
  /** The app command, for `approvalType: "app"` (clients that declared the app extension). */
  app?: AppCommandApproval | null;
}

export interface ApprovalRequestPayload {
  /** `shell`, `file`, `app`, `remoteResource`, ... */
  approvalType: string;
  operation: string;
  target: string;
  requestId: string;
  reason?: string | null;
  scopeKey?: string | null;
}

export interface ApprovalResponsePayload {
  requestId: string;
  approved: boolean;
  /** `accept`, `acceptForSession`, `acceptAlways`, `decline` or `cancel`. */
  decision?: string | null;
}

/** `{ ok: true }`. */
export interface AutomationOkResult {
  ok: boolean;
}

/**
 * When a task runs again: `CronSchedule`'s fields (`every`, `at`, `daily`, and appserver's
 * `cron` expressions); `once` (or no schedule) is a one-shot task.
 */
export interface AutomationSchedule {
  kind: string;
  atMs?: number | null;
  dailyHour?: number | null;
  dailyMinute?: number | null;
  everyMs?: number | null;
  expr?: string | null;
  initialDelayMs?: number | null;
  tz?: string | null;
}

/** One task (`AutomationTaskWire`). */
export interface AutomationTask {
  id: string;
  title: string;
  /** `pending`, `running`, `completed` or `failed`. */
  status: string;
  /**
   * `project` (runs in the workspace) or `worktree` (an unbound task runs in a managed Git
   * worktree of its own).
   */
  workspaceMode: string;
  /** The agent's last answer, or why the last run failed. */
  agentSummary?: string | null;
  /** `workspaceScope` (default) or `fullAuto`. */
  approvalPolicy?: string | null;
  /** ISO 8601 UTC. */
  createdAt?: string | null;
  description?: string | null;
  /** The next scheduled run, ISO 8601 UTC (absent without a schedule). */
  nextRunAt?: string | null;
  schedule?: AutomationSchedule | null;
  threadBinding?: AutomationThreadBinding | null;
  /** The thread of the task's last run (absent before its first). */
  threadId?: string | null;
  updatedAt?: string | null;
  /**
   * The managed worktree of a `worktree` task once provisioned; `null` otherwise (a
   * `project` or bound task, before the first run, after `automation/task/discardWorktree`).
   */
  worktree?: AutomationWorktree | null;
}

/** `automation/task/create`. */
export interface AutomationTaskCreateParams {
  approvalPolicy?: string | null;
  description?: string | null;
  schedule?: AutomationSchedule | null;
  /** A template whose defaults fill the fields not given. */
  templateId?: string | null;
  threadBinding?: AutomationThreadBinding | null;
  title?: string;
  /** The `workflow.md` the runs follow (default: the template's, or a generic one). */
  workflowTemplate?: string | null;
  workspaceMode?: string | null;
  workspacePath?: string | null;
}

/** The new task, and its id as DotCraft's server answers it. */
export interface AutomationTaskCreateResult {
  taskId: string;
  task: AutomationTask;
}

/** `automation/task/read`, `run` and `delete`. */
export interface AutomationTaskIdParams {
  taskId: string;
  workspacePath?: string | null;
}

/** `automation/task/list`. */
export interface AutomationTaskListParams {
  /** Accepted and ignored: the server's workspace is the one listed. */
  workspacePath?: string | null;
}

export interface AutomationTaskListResult {
  tasks: AutomationTask[];
}

/** `automation/task/run` and `updateBinding`. */
export interface AutomationTaskResult {
  task: AutomationTask;
}

/** `automation/task/updateBinding`: `threadBinding` absent or null unbinds. */
export interface AutomationTaskUpdateBindingParams {
  taskId: string;
  threadBinding?: AutomationThreadBinding | null;
  workspacePath?: string | null;
}

/** `automation/task/updated`: a task's status (or binding, or next run) changed. */
export interface AutomationTaskUpdatedParams {
  workspacePath: string;
  task: AutomationTask;
}

/** One template of the New Task dialog (`AutomationTemplateWire`). */
export interface AutomationTemplate {
  id: string;
  title: string;
  /** The complete `workflow.md` a task made from it runs. */
  workflowMarkdown: string;
  category?: string | null;
  /** ISO 8601 UTC, user templates only. */
  createdAt?: string | null;
  defaultApprovalPolicy?: string | null;
  defaultDescription?: string | null;
  defaultSchedule?: AutomationSchedule | null;
  defaultTitle?: string | null;
  defaultWorkspaceMode?: string | null;
  description?: string | null;
  icon?: string | null;
  /** A user template (editable, deletable); absent for built-ins. */
  isUser?: boolean;
  needsThreadBinding?: boolean | null;
  updatedAt?: string | null;
}

/** `automation/template/delete`. */
export interface AutomationTemplateIdParams {
  id?: string;
}

/** `automation/template/list`. */
export interface AutomationTemplateListParams {
  /** Accepted; the built-in templates are English only. */
  locale?: string | null;
}

export interface AutomationTemplateListResult {
  templates: AutomationTemplate[];
}

export interface AutomationTemplateResult {
  template: AutomationTemplate;
}

/** `automation/template/save`: an upsert of a user template (no `id`: a new `user-…` one). */
export interface AutomationTemplateSaveParams {
  category?: string | null;
  defaultApprovalPolicy?: string | null;
  defaultDescription?: string | null;
  defaultSchedule?: AutomationSchedule | null;
  defaultTitle?: string | null;
  defaultWorkspaceMode?: string | null;
  description?: string | null;
  icon?: string | null;
  id?: string | null;
  needsThreadBinding?: boolean;
  title?: string;
  workflowMarkdown?: string;
}

/** A task bound to an existing thread: its runs are turns of that thread. */
export interface AutomationThreadBinding {
  threadId: string;
  /** `run-in-thread` (the default, and the only mode). */
  mode?: string | null;
}

/** A task's managed Git worktree (`AutomationTaskWire.worktree`). */
export interface AutomationWorktree {
  /** `appserver/task-<taskId>`. */
  branchName: string;
  /** Absolute: `<workspace>/.appserver-worktrees/task-<taskId>`. */
  path: string;
}

/** A background terminal session (section 19A.2). */
export interface BackgroundTerminal {
  /** `term_…` */
  sessionId: string;
  threadId: string;
  command: string;
  workingDirectory: string;
  /** `host` or `sandbox`. */
  source: string;
  /** `running`, `completed`, `failed`, `killed`, `timedOut` or `lost`. */
  status: string;
  /**
   * Output: for `terminal/read` and `terminal/write` what arrived since the last of them
   * (its tail, at most `maxOutputChars`); elsewhere the tail of everything kept.
   */
  output: string;
  startedAt: string;
  wallTimeMs: number;
  /** Characters the process has written in all. */
  originalOutputChars: number;
  /** Whether `output` is only a part of what it covers. */
  truncated: boolean;
  backgroundReason?: string | null;
  callId?: string | null;
  completedAt?: string | null;
  exitCode?: number | null;
  outputPath?: string | null;
  turnId?: string | null;
}

/** `capabilities.channelAdapter`: the connection is the remote backend of one chat channel. */
export interface ChannelAdapterCapabilities {
  channelName: string;
  channelTools?: unknown[];
  deliveryCapabilities?: unknown;
}

/** One origin channel. */
export interface ChannelInfo {
  /** The `originChannel` string, in the case it is stored in. */
  name: string;
  /** `builtin`, `social`, `system` or `external`. */
  category: string;
}

/** Params of `channel/list`: an empty object (or omitted). */
export type ChannelListParams = { [key: string]: unknown };

/**
 * Result of `channel/list`: sorted by category (builtin, social, system, external), then by
 * name (case-insensitive).
 */
export interface ChannelListResult {
  channels: ChannelInfo[];
}

/**
 * Where a media payload's bytes come from; `kind` is authoritative (`hostPath`, `url`,
 * `dataBase64` or `artifactId`) and the adapter ignores the other fields.
 */
export interface ChannelMediaSource {
  kind: string;
  artifactId?: string | null;
  dataBase64?: string | null;
  hostPath?: string | null;
  url?: string | null;
}

/** A structured outbound message: `kind` is `text`, `file`, `audio`, `image` or `video`. */
export interface ChannelOutboundMessage {
  kind: string;
  caption?: string | null;
  fileName?: string | null;
  mediaType?: string | null;
  source?: ChannelMediaSource | null;
  text?: string | null;
}

/** One configured channel's state (protocol section 20.2). */
export interface ChannelStatusInfo {
  name: string;
  /** `social` or `external`. */
  category: string;
  /** Configured as enabled. */
  enabled: boolean;
  /** An adapter for it is connected now. */
  running: boolean;
}

/** `channel/status` params: an empty object (or omitted). */
export type ChannelStatusParams = { [key: string]: unknown };

export interface ChannelStatusResult {
  channels: ChannelStatusInfo[];
}

/** The chat a channel tool call happens in. */
export interface ChannelToolCallContext {
  channelName: string;
  channelContext?: string | null;
  groupId?: string | null;
  senderId?: string | null;
}

/** A history message sent by the client when the thread uses `historyMode = "client"`. */
export interface ChatMessage {
  /** `system`, `user`, `assistant` or `tool`. */
  role: string;
  /** Text, or a list of content parts. */
  content?: unknown;
  name?: string | null;
  toolCallId?: string | null;
  toolCalls?: unknown;
}

/**
 * What the client can handle. Every member is optional; absent members take the defaults of
 * section 3.2 of the protocol.
 */
export interface ClientCapabilities {
  /**
   * ACP tool proxy (section 11.3): the `ext/acp/*` requests the client handles for the
   * threads it starts or resumes.
   */
  acpExtensions?: AcpExtensions | null;
  /** Whether the client answers `item/approval/request`. Default `true`. */
  approvalSupport?: boolean | null;
  backgroundTerminals?: boolean | null;
  /** Desktop browser capability (accepted, not used by this server). */
  browserUse?: unknown;
  /** Present when the connection is a chat-platform channel adapter. */
  channelAdapter?: ChannelAdapterCapabilities | null;
  commandExecutionStreaming?: boolean | null;
  configChange?: boolean | null;
  /**
   * Extensions the client implements, keyed by name, like the server's
   * `capabilities.extensions`: `{"appProtocol": true}` asks for app approvals in their own
   * form (`approvalType: "app"` with the app's fields) instead of the spec's `shell` form.
   */
  extensions?: { [key: string]: unknown } | null;
  /**
   * The largest message this client accepts, in bytes (appserver extension). A response that
   * would be larger is replaced by an error, a larger notification is not sent.
   */
  maxMessageBytes?: number | null;
  /** Desktop Node REPL capability (accepted, not used by this server). */
  nodeRepl?: unknown;
  /** Exact notification method names this connection never receives. */
  optOutNotificationMethods?: string[];
  /** Whether the client consumes `item/*\/delta` notifications. Default `true`. */
  streamingSupport?: boolean | null;
  toolExecutionLifecycle?: boolean | null;
}

export interface ClientInfo {
  /** Machine-readable client identifier. */
  name: string;
  version: string;
  /** Human-readable client name. */
  title?: string | null;
}

export interface CommandExecuteParams {
  threadId: string;
  /** The slash command, e.g. `/stop` or `/query sheet-1 cells`. */
  command: string;
  /** Parsed arguments; when absent, the text after the command name is used. */
  arguments?: string[] | null;
  sender?: SenderContext | null;
}

/**
 * Params of `item/commandExecution/outputDelta`: the next piece of a `commandExecution` item's
 * output. The deltas concatenate to the completed item's `aggregatedOutput`.
 */
export interface CommandExecutionOutputDeltaParams {
  threadId: string;
  turnId: string;
  itemId: string;
  delta: string;
}

export interface CommandExecutionPayload {
  callId: string;
  command: string;
  workingDirectory: string;
  source: string;
  status: string;
  aggregatedOutput: string;
  /** `runInBackground` when the call asked for a background terminal. */
  backgroundReason?: string | null;
  durationMs?: number | null;
  exitCode?: number | null;
  /** Characters the command wrote, when `aggregatedOutput` kept only its head and tail. */
  originalOutputChars?: number | null;
  outputPath?: string | null;
  /** The background terminal (`terminal/*`) the command goes on in, when it outlived its call. */
  sessionId?: string | null;
  truncated?: boolean | null;
}

/** A command as `command/list` describes it. */
export interface CommandInfo {
  /** `/new`, `/code-review`, ... */
  name: string;
  aliases: string[];
  description: string;
  /** `builtin` or `custom`. */
  category: string;
  requiresAdmin: boolean;
}

export interface CommandListParams {
  /** Default `true`; `false` lists only custom commands (safe as `commandRef`). */
  includeBuiltins?: boolean | null;
  /** `en` (default) or `zh`. */
  language?: string | null;
}

export interface CommandListResult {
  commands: CommandInfo[];
}

/** `CommandResult` (section 19.4). */
export interface CommandResult {
  handled: boolean;
  archivedThreadIds?: string[] | null;
  createdLazily?: boolean | null;
  /** Set when the command expands to a prompt: start a turn with it (as a `commandRef`). */
  expandedPrompt?: string | null;
  isMarkdown?: boolean;
  message?: string | null;
  sessionReset?: boolean | null;
  thread?: Thread | null;
}

/** Params of `workspace/commitMessage/suggest`. */
export interface CommitMessageSuggestParams {
  /** The thread whose conversation gives the context. */
  threadId: string;
  /** Paths relative to the workspace root; not empty. */
  paths: string[];
  maxDiffChars?: number | null;
}

/** Result of `workspace/commitMessage/suggest`. */
export interface CommitMessageSuggestResult {
  /** Subject line, then optionally a blank line and a body. */
  message: string;
}

/** One field of the config file. */
export interface ConfigFieldSchema {
  /** The key inside its section (`model`, `api_key`, ...). */
  key: string;
  /** `string`, `password`, `boolean`, `integer`, `enum`, `stringList`. */
  type: string;
  reload: ReloadBehavior;
  sensitive?: boolean;
  /** Present only when `reload` is `subsystemRestart`. */
  subsystemKey?: string | null;
  /** The `workspace/config/update` field that writes it, when one does. */
  updateField?: string | null;
  /** The allowed values of an `enum` field. */
  values?: string[];
}

/** One section (TOML table) of the config file. */
export interface ConfigSectionSchema {
  section: string;
  order: number;
  fields: ConfigFieldSchema[];
  /** The TOML table (`model`, `approvals`, ...); `null` for the top level. */
  path?: string | null;
}

/** Rich content returned by dynamic, plugin and MCP tools. */
export interface ContentItem {
  /**
   * `text` or `image`; an MCP tool's result also `audio`, `resourceLink` and `resource` (an
   * embedded resource: `text`, or its bytes in `dataBase64`) (appserver extension).
   */
  type: string;
  dataBase64?: string | null;
  /** A resource link's description. */
  description?: string | null;
  mediaType?: string | null;
  /** A resource link's name. */
  name?: string | null;
  text?: string | null;
  /** A resource's URI (`resourceLink`, `resource`). */
  uri?: string | null;
}

/**
 * `contextUsage` (section 4.4): context-window occupancy for the desktop's token ring; not
 * billing usage.
 */
export interface ContextUsageSnapshot {
  /** Approximate input tokens currently occupying the context. */
  tokens: number;
  /** The effective context window (the denominator). */
  contextWindow: number;
  /** Where automatic compaction runs. */
  autoCompactThreshold: number;
  /** Where `compactWarning` starts firing. */
  warningThreshold: number;
  /** Where `compactError` starts firing. */
  errorThreshold: number;
  /** Fraction of the window still available (0.0 – 1.0). */
  percentLeft: number;
}

/**
 * A job's delivery target: a chat channel's adapter (`ext/channel/send`) and the platform's
 * target there (the chat or group the job was made in).
 */
export interface CronDelivery {
  channel: string;
  to: string;
}

export interface CronEnableParams {
  jobId: string;
  enabled: boolean;
}

export interface CronJobIdParams {
  jobId: string;
}

/** One job. */
export interface CronJobInfo {
  id: string;
  name: string;
  schedule: CronSchedule;
  enabled: boolean;
  createdAtMs: number;
  deleteAfterRun: boolean;
  state: CronJobState;
  /**
   * Where each run's result is also delivered (appserver extension; absent: nowhere but
   * `system/jobResult`).
   */
  delivery?: CronDelivery | null;
}

export interface CronJobResult {
  job: CronJobInfo;
}

export interface CronJobState {
  lastError?: string | null;
  /** The agent's answer, at most 500 characters. */
  lastResult?: string | null;
  lastRunAtMs?: number | null;
  /** `ok` or `error`. */
  lastStatus?: string | null;
  lastThreadId?: string | null;
  nextRunAtMs?: number | null;
}

export interface CronListParams {
  includeDisabled?: boolean;
}

export interface CronListResult {
  jobs: CronJobInfo[];
}

export interface CronRunResult {
  queued: boolean;
  job: CronJobInfo;
}

/**
 * When a job runs: `every` `everyMs` (after `initialDelayMs` the first time), once `at` `atMs`,
 * `daily` at `dailyHour:dailyMinute`, or on a `cron` expression (`expr`, five fields; an
 * appserver extension); `daily` and `cron` times are in the IANA zone `tz` (absent: UTC).
 */
export interface CronSchedule {
  kind: string;
  atMs?: number | null;
  dailyHour?: number | null;
  dailyMinute?: number | null;
  everyMs?: number | null;
  expr?: string | null;
  initialDelayMs?: number | null;
  tz?: string | null;
}

/** `cron/stateChanged`. */
export interface CronStateChangedParams {
  job: CronJobInfo;
  removed: boolean;
}

/**
 * Params of `item/tool/call` (server → client): run a dynamic tool the client declared on
 * `thread/start` (section 11.3).
 */
export interface DynamicToolCallParams {
  threadId: string;
  turnId: string;
  callId: string;
  tool: string;
  arguments: unknown;
  namespace?: string | null;
}

export interface DynamicToolCallPayload {
  toolName: string;
  callId: string;
  arguments?: unknown;
  contentItems?: ContentItem[];
  errorCode?: string | null;
  errorMessage?: string | null;
  namespace?: string | null;
  structuredResult?: unknown;
  success?: boolean | null;
}

/** The client's answer to `item/tool/call`. */
export interface DynamicToolCallResult {
  success: boolean;
  contentItems?: ContentItem[];
  errorCode?: string | null;
  errorMessage?: string | null;
  structuredResult?: unknown;
}

/** A runtime dynamic tool declared on `thread/start` (section 4.1.0). */
export interface DynamicToolSpec {
  name: string;
  description: string;
  inputSchema: unknown;
  approval?: unknown;
  deferLoading?: boolean | null;
  namespace?: string | null;
}

/** `{}`: the result of methods that return nothing. */
export type EmptyResult = { [key: string]: unknown };

export interface ErrorPayload {
  message: string;
  /** Machine-readable code, e.g. `agent_error`, `approval_timeout`, `server_restart`. */
  code: string;
  fatal: boolean;
}

/** Params of `ext/app/command` (server → host). */
export interface ExtAppCommandParams {
  windowId: string;
  command: string;
  params: unknown;
  /** `true` when the server replays the log after a re-registration. */
  replay: boolean;
}

/** Params of `ext/app/query` (server → host). */
export interface ExtAppQueryParams {
  windowId: string;
  stateKey: string;
}

/** Params of `ext/channel/heartbeat`: an empty object; the answer is `{}`. */
export type ExtChannelHeartbeatParams = { [key: string]: unknown };

/**
 * Params of `ext/channel/send`. appserver puts `deliveryId` (the same on every retry of one
 * message, so an adapter can drop a repeat), `origin` and, for a job's result, `jobId` and
 * `threadId` in `metadata`.
 */
export interface ExtChannelSendParams {
  /** The platform's delivery target (a chat or group id). */
  target: string;
  message: ChannelOutboundMessage;
  metadata?: unknown;
}

/**
 * The adapter's answer to `ext/channel/send`; `errorCode` is a stable string when
 * `delivered` is false (`UnsupportedDeliveryKind`, `AdapterDeliveryFailed`, ...).
 */
export interface ExtChannelSendResult {
  delivered: boolean;
  errorCode?: string | null;
  errorMessage?: string | null;
  remoteMediaId?: string | null;
  remoteMessageId?: string | null;
}

/**
 * Params of `ext/channel/toolCall`; the answer is a `DynamicToolCallResult`
 * (`{success, contentItems?, structuredResult?, errorCode?, errorMessage?}`).
 */
export interface ExtChannelToolCallParams {
  threadId: string;
  turnId: string;
  callId: string;
  /** The tool's declared name. */
  tool: string;
  arguments: unknown;
  context: ChannelToolCallContext;
}

/** An external channel's configuration (protocol section 23.2). */
export interface ExternalChannelConfig {
  /** The key, compared case-insensitively. */
  name: string;
  args?: string[] | null;
  /** Required for `subprocess`, refused for `websocket`. */
  command?: string | null;
  /** `true` when absent, as DotCraft's `ExternalChannelConfigWire` defaults it. */
  enabled?: boolean;
  env?: { [key: string]: string } | null;
  /**
   * `subprocess` or `websocket` (anything else is refused with -32081); `subprocess` when
   * absent, as DotCraft defaults it.
   */
  transport?: string;
  workingDirectory?: string | null;
}

/** `externalChannel/list` params: an empty object (or omitted). */
export type ExternalChannelListParams = { [key: string]: unknown };

export interface ExternalChannelListResult {
  channels: ExternalChannelConfig[];
}

/** Params of `externalChannel/get` and `externalChannel/remove`. */
export interface ExternalChannelNameParams {
  name: string;
}

/** Result of `externalChannel/get` and `externalChannel/upsert`. */
export interface ExternalChannelResult {
  channel: ExternalChannelConfig;
}

export interface ExternalChannelUpsertParams {
  channel: ExternalChannelConfig;
}

/**
 * Files an app opens: a file whose extension matches runs `command` with its content under
 * `paramKey`.
 */
export interface FileAssociation {
  extensions: string[];
  command: string;
  paramKey: string;
}

/**
 * One file a tool call changed (appserver extension of `toolResult`, shaped like DotCraft's
 * `fileChange` structured content).
 */
export interface FileChange {
  /** Workspace-relative (absolute when outside the workspace), `/`-separated. */
  path: string;
  /** `add` or `update`. */
  kind: string;
  /** Unified diff (`--- a/path`, `+++ b/path`, hunks). */
  diff: string;
  additions: number;
  deletions: number;
  /** Present (`true`) when the diff was cut to its size limit. */
  truncated?: boolean | null;
}

/** `heartbeat/trigger` params: an empty object (or omitted). */
export type HeartbeatTriggerParams = { [key: string]: unknown };

/**
 * Result of `heartbeat/trigger`: the agent's answer, or why the run failed; both `null` when
 * there is no `HEARTBEAT.md`.
 */
export interface HeartbeatTriggerResult {
  error?: string | null;
  result?: string | null;
}

/** `"server"` (the server keeps the history) or `"client"` (the client sends `messages`). */
export type HistoryMode = "server" | "client";

export interface ImageRef {
  path: string;
  fileName?: string | null;
  mimeType?: string | null;
}

/** Params of `initialize`. */
export interface InitializeParams {
  clientInfo: ClientInfo;
  capabilities?: ClientCapabilities;
}

/** Result of `initialize`. */
export interface InitializeResult {
  serverInfo: ServerInfo;
  capabilities: ServerCapabilities;
}

/** Params of the `initialized` notification: an empty object. */
export type InitializedParams = { [key: string]: unknown };

/** One part of the user's input (section 5.1), tagged by `type`. */
export type InputPart =
  | {
    type: "text";
    text: string;
  }
  | {
    type: "commandRef";
    name: string;
    argsText?: string | null;
    rawText?: string | null;
  }
  | {
    type: "skillRef";
    name: string;
  }
  | {
    type: "fileRef";
    path: string;
    displayPath?: string | null;
  }
  | {
    type: "image";
    url: string;
  }
  | {
    type: "localImage";
    path: string;
    fileName?: string | null;
    mimeType?: string | null;
  };

/** An item on the wire: `type` and `payload` come from [`ItemPayload`]. */
export type Item =
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "userMessage";
    payload: UserMessagePayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "agentMessage";
    payload: TextPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "reasoningContent";
    payload: TextPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "toolCall";
    payload: ToolCallPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "toolResult";
    payload: ToolResultPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "toolExecution";
    payload: ToolExecutionPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "commandExecution";
    payload: CommandExecutionPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "dynamicToolCall";
    payload: DynamicToolCallPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "pluginFunctionCall";
    payload: PluginFunctionCallPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "approvalRequest";
    payload: ApprovalRequestPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "approvalResponse";
    payload: ApprovalResponsePayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "error";
    payload: ErrorPayload;
  }
  | {
    /** `item_001` */
    id: string;
    turnId: string;
    status: ItemStatus;
    createdAt: string;
    completedAt?: string | null;
    type: "systemNotice";
    payload: SystemNoticePayload;
  };

/** `{ threadId, turnId, item }`: the params of `item/started` and `item/completed`. */
export interface ItemEventParams {
  threadId: string;
  turnId: string;
  item: Item;
}

export type ItemStatus = "started" | "streaming" | "completed";

/** `system/jobResult` (section 6.9). */
export interface JobResultParams {
  /** `cron`. */
  source: string;
  error?: string | null;
  jobId?: string | null;
  jobName?: string | null;
  result?: string | null;
  threadId?: string | null;
  tokenUsage?: JobTokenUsage | null;
}

export interface JobTokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * Params of `mcp/elicitation/request` (appserver extension; server → client request): an MCP
 * server asks, during the agent's call of one of its tools, for input from the user
 * (`elicitation/create`). Sent to the thread's clients that declared `approvalSupport`, like an
 * approval request; the first answer is the server's.
 */
export interface McpElicitationRequestParams {
  threadId: string;
  turnId: string;
  /** The agent's `mcp_call` during which the server asks. */
  callId: string;
  server: string;
  tool: string;
  /**
   * The MCP `elicitation/create` params as the server sent them (`mode`, `message`,
   * `requestedSchema` for a form, `url` and `elicitationId` for a URL).
   */
  request: unknown;
}

/**
 * The answer: MCP's `ElicitResult` — `action` `accept` (with `content` matching the requested
 * schema), `decline` or `cancel`.
 */
export interface McpElicitationResult {
  action: string;
  content?: unknown;
}

/** Params of `mcp/list` and `mcp/status/list`: none. */
export type McpListParams = { [key: string]: unknown };

export interface McpListResult {
  servers: McpServerConfig[];
}

/** Params of `mcp/get` and `mcp/remove`. */
export interface McpNameParams {
  name: string;
}

export interface McpRemoveResult {
  removed: boolean;
}

/**
 * Params of `mcp/resources/list` (appserver extension): one page of a running server's
 * resources (relayed for the server's MCP Apps views).
 */
export interface McpResourceListParams {
  server: string;
  cursor?: string | null;
}

/** The page as the MCP server gave it (`[{uri, name, mimeType, …}]`), and the next page's cursor. */
export interface McpResourceListResult {
  resources: unknown[];
  nextCursor?: string | null;
}

/**
 * Params of `mcp/resources/read` (appserver extension): a `ui://` resource of a server, the
 * HTML of an MCP Apps view.
 */
export interface McpResourceReadParams {
  server: string;
  uri: string;
}

/** The resource's contents as the MCP server gave them (`[{uri, mimeType, text | blob, _meta}]`). */
export interface McpResourceReadResult {
  contents: unknown[];
}

/**
 * One MCP server definition (section 22.2). Secrets are references: `bearerTokenEnvVar` and
 * `envHttpHeaders` name environment variables; `envVars` names variables passed through.
 */
export interface McpServerConfig {
  name: string;
  args?: string[] | null;
  bearerTokenEnvVar?: string | null;
  command?: string | null;
  cwd?: string | null;
  enabled?: boolean;
  env?: { [key: string]: string } | null;
  envHttpHeaders?: { [key: string]: string } | null;
  envVars?: string[] | null;
  httpHeaders?: { [key: string]: string } | null;
  origin?: McpServerOrigin | null;
  readOnly?: boolean | null;
  startupTimeoutSec?: number | null;
  toolTimeoutSec?: number | null;
  /** `stdio` when absent. */
  transport?: McpTransportKind;
  url?: string | null;
}

/** Where a server's definition comes from. */
export interface McpServerOrigin {
  /** `workspace`, `plugin` or `descriptor` (an aai.json descriptor's MCP server). */
  kind: string;
  declaredName?: string | null;
  pluginDisplayName?: string | null;
  pluginId?: string | null;
}

/** Params of `mcp/upsert` and `mcp/test`. */
export interface McpServerParams {
  server: McpServerConfig;
}

/** Result of `mcp/get` and `mcp/upsert`: the server as stored. */
export interface McpServerResult {
  server: McpServerConfig;
}

/** A server's runtime state (section 22.7). */
export interface McpServerStatus {
  name: string;
  enabled: boolean;
  /** `starting`, `ready`, `failed`, `disabled` or `stopped`. */
  startupState: string;
  toolCount: number;
  lastError?: string | null;
  /**
   * Where the definition comes from (capability `mcpServerOrigins`): the workspace's own, a
   * plugin's, or an app descriptor's.
   */
  origin?: McpServerOrigin | null;
  /**
   * Whether `mcp/upsert` and `mcp/remove` refuse it (`McpServerReadOnly`): every origin but the
   * workspace's. Omitted when false, as DotCraft writes it.
   */
  readOnly?: boolean;
  resourceCount?: number;
  resourceTemplateCount?: number;
  transport?: McpTransportKind;
}

export interface McpStatusListResult {
  servers: McpServerStatus[];
}

/** Params of `mcp/status/updated`. */
export interface McpStatusUpdatedParams {
  server: McpServerStatus;
}

/** Result of `mcp/test`: a failure is a successful response with `success: false`. */
export interface McpTestResult {
  success: boolean;
  errorCode?: string | null;
  errorMessage?: string | null;
  toolCount?: number | null;
}

/** How an MCP server is reached. */
export type McpTransportKind = "streamableHttp" | "stdio";

/**
 * Params of `mcp/view/call` (appserver extension): a view's `tools/call` of its own server's
 * tool, relayed by the client that renders the view.
 */
export interface McpViewCallParams {
  /** The tool call that created the view (`mcp/view/offered`'s `callId`). */
  callId: string;
  server: string;
  tool: string;
  arguments?: { [key: string]: unknown } | null;
}

/**
 * What became of a view's call: `status` `done` (`result`: the server's `CallToolResult`;
 * `seq`: its entry in the view's log, absent for a read-only tool), `declined` or `cancelled`
 * (not approved / withdrawn: it did not run; `error` says why), or `failed` (`error`).
 */
export interface McpViewCallResult {
  status: string;
  error?: string | null;
  result?: unknown;
  seq?: number | null;
}

/**
 * Params of `mcp/view/context` (appserver extension): a view's `ui/update-model-context`,
 * relayed by the client that renders it. The view's context (its `content` blocks and
 * `structuredContent`) is kept for the thread and put before the next turn's input to the
 * model; a later update of the same view replaces it; an update with neither clears it.
 */
export interface McpViewContextParams {
  threadId: string;
  /** The tool call that created the view (`mcp/view/offered`'s `callId`). */
  callId: string;
  content?: unknown[] | null;
  structuredContent?: unknown;
}

/**
 * Params of `mcp/view/offered` (appserver extension): a tool that declares an MCP Apps view
 * (`_meta.ui.resourceUri`) was called by the agent; a client may render the view for this call.
 */
export interface McpViewOfferedParams {
  threadId: string;
  turnId: string;
  /** The `mcp_call` tool call: one view instance per call. */
  callId: string;
  server: string;
  tool: string;
  resourceUri: string;
  /** The tool's input (for the view's `ui/notifications/tool-input`). */
  arguments: unknown;
  /** The tool's result as the MCP server gave it (for `ui/notifications/tool-result`). */
  result: unknown;
}

/** One change of a save: `value` absent or null removes the key. */
export interface McpViewStorageChange {
  key: string;
  value?: string | null;
}

/** Params of `mcp/view/storage/load`: the view instance, as the client rendering it assigned it. */
export interface McpViewStorageLoadParams {
  threadId: string;
  /** The tool call that opened the view (`mcp/view/offered`'s `callId`). */
  callId: string;
}

/** Result of `mcp/view/storage/load`: every key of the instance's storage, and its bound. */
export interface McpViewStorageLoadResult {
  items: { [key: string]: string };
  /** Characters of keys and values held. */
  used: number;
  /** The most characters of keys and values an instance may hold. */
  limit: number;
}

/**
 * Params of `mcp/view/storage/save`: changes to one instance's storage, applied together or
 * (past the bound: -32070 `LIMIT_REACHED`) not at all.
 */
export interface McpViewStorageSaveParams {
  threadId: string;
  callId: string;
  changes?: McpViewStorageChange[];
  /** Every key removed before the changes (`localStorage.clear()`). */
  clear?: boolean;
}

/** Result of `mcp/view/storage/save`. */
export interface McpViewStorageSaveResult {
  used: number;
  limit: number;
}

/**
 * Params of `mcp/view/tool` (appserver extension): a tool of a running server, for the view it
 * opened (its `hostContext.toolInfo.tool`).
 */
export interface McpViewToolParams {
  server: string;
  tool: string;
}

/**
 * Result of `mcp/view/tool`: the tool as the server's `tools/list` gave it (`name`,
 * `description`, `inputSchema`, and whatever else it declared).
 */
export interface McpViewToolResult {
  tool: unknown;
}

/** One model of the provider's catalog. */
export interface ModelCatalogItem {
  id: string;
  /** Provider-reported owner; may be empty. */
  ownedBy: string;
  /** Provider-reported creation time (ISO 8601 UTC); empty when unknown. */
  createdAt: string;
}

export type ModelListParams = { [key: string]: unknown };

/** Provider errors are reported in the result, not as JSON-RPC errors. */
export interface ModelListResult {
  success: boolean;
  models: ModelCatalogItem[];
  errorCode?: string | null;
  errorMessage?: string | null;
}

/** A complete plan snapshot. */
export interface Plan {
  title: string;
  todos: PlanTodo[];
  content?: string;
  overview?: string;
}

/** One task of a plan (section 6.8). */
export interface PlanTodo {
  id: string;
  content: string;
  /** `high`, `medium` or `low`. */
  priority: string;
  /** `pending`, `in_progress`, `completed` or `cancelled`. */
  status: string;
}

/** Params of `plan/updated`: the complete plan snapshot of a thread. */
export interface PlanUpdatedParams {
  /** The thread the plan belongs to. */
  threadId: string;
  title: string;
  todos: PlanTodo[];
  content?: string;
  overview?: string;
}

/** A problem found while discovering plugins (a plugin that could not be loaded, a field ignored). */
export interface PluginDiagnostic {
  /** `InvalidPluginManifest`, `UnsupportedPluginNativeTools`, `MissingPluginCapabilities`, ... */
  code: string;
  message: string;
  path?: string | null;
  pluginId?: string | null;
}

export interface PluginFunctionCallPayload {
  pluginId: string;
  functionName: string;
  callId: string;
  arguments?: unknown;
  contentItems?: ContentItem[];
  errorCode?: string | null;
  errorMessage?: string | null;
  namespace?: string | null;
  structuredResult?: unknown;
  success?: boolean | null;
}

/** A manifest-declared native function: always empty (manifests no longer declare tools). */
export interface PluginFunctionInfo {
  name: string;
}

export interface PluginIdParams {
  id: string;
}

/** One plugin. */
export interface PluginInfo {
  id: string;
  displayName: string;
  description: string;
  enabled: boolean;
  installed: boolean;
  installable: boolean;
  /** Installed by `plugin/install` (carries the `.installed` marker), so `plugin/remove` may delete it. */
  removable: boolean;
  /** `workspace`: found in `<workspace>/.appserver/plugins`. */
  source: string;
  functions: PluginFunctionInfo[];
  skills: PluginSkillInfo[];
  mcpServers: PluginMcpServerInfo[];
  /**
   * The plugin's folder (DotCraft's `rootPath`; `path` is read too, as earlier appserver
   * releases wrote it).
   */
  rootPath: string;
  /** appserver extension: the window ids (`aai:<app id>`) of the plugin's app descriptors. */
  apps?: string[];
  /** appserver extension: the plugin's custom commands (names, without `/`). */
  commands?: string[];
  interface?: PluginInterface | null;
  version?: string | null;
}

/** Params of `plugin/install`. */
export interface PluginInstallParams {
  /**
   * The plugin's id: without `path`, a plugin of the server's built-in catalog (listed with
   * `installable: true`); with it, the id its manifest declares.
   */
  id: string;
  /**
   * appserver extension: a plugin folder, or a `.zip` / `.tar.gz` / `.tgz` archive of one, on
   * the server's machine (absolute, or relative to the workspace).
   */
  path?: string | null;
}

/** A plugin's client-facing presentation metadata (the manifest's `interface`). */
export interface PluginInterface {
  brandColor?: string | null;
  capabilities?: string[];
  category?: string | null;
  defaultPrompt?: string | null;
  developerName?: string | null;
  displayName?: string | null;
  longDescription?: string | null;
  shortDescription?: string | null;
}

export interface PluginListParams {
  /** Default `true`; `false` leaves disabled plugins out. */
  includeDisabled?: boolean | null;
}

export interface PluginListResult {
  plugins: PluginInfo[];
  diagnostics: PluginDiagnostic[];
}

/** Params of `plugin/mcp/approve` (appserver extension). */
export interface PluginMcpApproveParams {
  /** The plugin's id. */
  id: string;
  /** The server's declared name (not its runtime name). */
  name: string;
}

/** An MCP server the plugin declares. */
export interface PluginMcpServerInfo {
  /** The name inside the plugin's MCP file. */
  name: string;
  /** `{pluginId}:{name}`: its name in `mcp/list`. */
  runtimeName: string;
  /** `stdio` or `streamableHttp`. */
  transport: string;
  enabled: boolean;
  /** Installed, enabled, declared enabled, not shadowed, and (appserver) approved. */
  active: boolean;
  /**
   * appserver extension: the program (or URL) is not yet approved by the workspace's owner
   * (`plugin/mcp/approve`), or changed since; it is not started until then.
   */
  needsApproval?: boolean;
  /** `workspace` or `plugin` when another server of the same runtime name wins. */
  shadowedBy?: string | null;
}

export interface PluginResult {
  plugin: PluginInfo;
}

export interface PluginSetEnabledParams {
  id: string;
  enabled: boolean;
}

/** A skill the plugin holds. */
export interface PluginSkillInfo {
  name: string;
  /** Not disabled with `skills/setEnabled` (a disabled plugin's skills are hidden whatever this says). */
  enabled: boolean;
  displayName?: string | null;
}

export type QueuedInputStatus = "queued" | "guidancePending";

export interface QueuedInputsResult {
  queuedInputs: QueuedTurnInput[];
}

/** Input waiting to become a turn (or guidance for the running one). */
export interface QueuedTurnInput {
  id: string;
  threadId: string;
  nativeInputParts: InputPart[];
  materializedInputParts: InputPart[];
  displayText: string;
  status: QueuedInputStatus;
  createdAt: string;
  readyAfterTurnId?: string | null;
  sender?: SenderContext | null;
}

/** When a changed field takes effect. */
export type ReloadBehavior = "processRestart" | "subsystemRestart" | "hot";

/** Result of `externalChannel/remove`. */
export interface RemovedResult {
  removed: boolean;
}

/**
 * `capabilities.sandbox`: whether commands can be confined here. When `available` is false,
 * every command outside `fullAccess` is asked about, each time.
 */
export interface SandboxCapability {
  /** `namespaces+landlock+seccomp` on Linux. */
  mechanism: string;
  available: boolean;
  /** The workspace's default mode: `readOnly`, `workspaceWrite` or `fullAccess`. */
  defaultMode: string;
  /** Why it is unavailable, when it is. */
  reason?: string | null;
}

/** Who sent a message in a group session. */
export interface SenderContext {
  senderId: string;
  groupId?: string | null;
  senderName?: string | null;
  senderRole?: string | null;
}

/** What the server implements. A capability that is absent is not implemented. */
export interface ServerCapabilities {
  approvalFlow?: boolean | null;
  /**
   * `automation/task/*`, `automation/template/*` and `automation/task/updated` (DotCraft's
   * automations-lifecycle §13).
   */
  automations?: boolean | null;
  /** `terminal/*` requests and notifications (section 19A). */
  backgroundTerminals?: boolean | null;
  /** `channel/status` (section 20). */
  channelStatus?: boolean | null;
  commandManagement?: boolean | null;
  configOverride?: boolean | null;
  /** `cron/*` (section 16). */
  cronManagement?: boolean | null;
  /** Extension registry keyed by extension name; `true` means its methods are available. */
  extensions?: { [key: string]: unknown };
  /** `externalChannel/*` (section 23). */
  externalChannelManagement?: boolean | null;
  /** `heartbeat/trigger` (section 17). */
  heartbeatManagement?: boolean | null;
  /** `mcp/list`, `mcp/get`, `mcp/upsert`, `mcp/remove` (section 22). */
  mcpManagement?: boolean | null;
  /** MCP definitions and statuses carry `origin` and `readOnly` (section 22.2). */
  mcpServerOrigins?: boolean | null;
  /** `mcp/status/list`, `mcp/test` and `mcp/status/updated` (section 22). */
  mcpStatus?: boolean | null;
  modeSwitch?: boolean | null;
  modelCatalogManagement?: boolean | null;
  /** `plugin/*` (section 18.10). */
  pluginManagement?: boolean | null;
  /** How `Exec` commands are confined on this host (appserver extension). */
  sandbox?: SandboxCapability | null;
  /** `skills/*` (section 18). */
  skillsManagement?: boolean | null;
  /** `subagent/profiles/*` and `subagent/settings/update` (section 24). */
  subAgentManagement?: boolean | null;
  /**
   * Sub-agent child threads: `subagent/children/list`, `subagent/close`, `subagent/resume`
   * (section 24.10).
   */
  subAgentSessions?: boolean | null;
  threadManagement?: boolean | null;
  threadSubscriptions?: boolean | null;
  /** `workspace/config/schema|update` and `workspace/configChanged` (section 25). */
  workspaceConfigManagement?: boolean | null;
}

export interface ServerInfo {
  /** Always `"appserver"`. */
  name: string;
  version: string;
  /** Wire protocol version, currently `"1"`. */
  protocolVersion: string;
  extensions?: string[] | null;
}

/** Who is asking: channel, user, context and workspace (Session Core 4.1.4). */
export interface SessionIdentity {
  channelName: string;
  channelContext?: string | null;
  userId?: string | null;
  /** Defaults to the server's workspace when omitted. */
  workspacePath?: string | null;
}

/** One installed skill. */
export interface SkillInfo {
  /** The skill's folder name. */
  name: string;
  /** Frontmatter `description` (the name when there is none). */
  description: string;
  /** `workspace`, `plugin` or `user`. */
  source: string;
  /** Whether the requirements (`bins`, `env`) are met here. */
  available: boolean;
  /** Not disabled with `skills/setEnabled`. */
  enabled: boolean;
  /** Absolute path of its `SKILL.md`. */
  path: string;
  /** The frontmatter's top-level keys. */
  metadata: { [key: string]: string };
  /** `interface.default_prompt` of `agents/openai.yaml`: a starter prompt. */
  defaultPrompt?: string | null;
  /** `interface.display_name` of the skill's `agents/openai.yaml`. */
  displayName?: string | null;
  /** Whether the skill is used through a workspace variant: never here (no variants). */
  hasVariant?: boolean;
  /** `interface.icon_large`, the same way. */
  iconLargeDataUrl?: string | null;
  /**
   * `interface.icon_small` of `agents/openai.yaml` as a `data:` URL (an image inside the
   * skill's folder, at most 256 KiB).
   */
  iconSmallDataUrl?: string | null;
  pluginDisplayName?: string | null;
  /** The plugin holding it (source `plugin`). */
  pluginId?: string | null;
  /** `interface.short_description` of `agents/openai.yaml`. */
  shortDescription?: string | null;
  unavailableReason?: string | null;
}

/** Params naming one skill. */
export interface SkillNameParams {
  name: string;
}

export interface SkillResult {
  skill: SkillInfo;
}

/** Params of `skills/list`. */
export interface SkillsListParams {
  /** Default `true`: list skills whose requirements are not met too. */
  includeUnavailable?: boolean | null;
}

export interface SkillsListResult {
  skills: SkillInfo[];
}

/** Result of `skills/read`: the raw `SKILL.md`. */
export interface SkillsReadResult {
  name: string;
  content: string;
  /** `null` when the file has no frontmatter. */
  metadata?: { [key: string]: string } | null;
}

/** Result of `skills/restoreOriginal`. */
export interface SkillsRestoreResult {
  name: string;
  /** Whether an adaptation was restored (never: this server makes none). */
  restored: boolean;
}

export interface SkillsSetEnabledParams {
  name: string;
  enabled: boolean;
}

/** Result of `skills/uninstall`. */
export interface SkillsUninstallResult {
  name: string;
  uninstalled: boolean;
  source: string;
  removedSourcePath: string;
  removedVariantCount: number;
}

/** Result of `skills/view`: the body the agent gets (frontmatter stripped). */
export interface SkillsViewResult {
  name: string;
  content: string;
}

/** One child. */
export interface SubAgentChild {
  edge: SubAgentEdge;
  thread?: Thread | null;
}

/** Params of `subagent/children/list`. */
export interface SubAgentChildrenListParams {
  parentThreadId: string;
  /** Also list closed edges. Default `false`. */
  includeClosed?: boolean;
  /** Include each child's thread (as `thread/read` returns it, without turns). Default `false`. */
  includeThreads?: boolean;
}

/** Result of `subagent/children/list`: oldest child first. */
export interface SubAgentChildrenListResult {
  data: SubAgentChild[];
}

/** Params of `subagent/close` and `subagent/resume`. */
export interface SubAgentControlParams {
  parentThreadId: string;
  childThreadId: string;
}

/**
 * Result of `subagent/close` and `subagent/resume`: the child and its edge's status now
 * (DotCraft's `SubAgentControlResult`, flat).
 */
export interface SubAgentControlResult {
  childThreadId: string;
  /** The edge's status: `closed` after `subagent/close`, `open` after `subagent/resume`. */
  status: string;
  supportsSendInput: boolean;
  supportsResume: boolean;
  supportsClose: boolean;
  agentNickname?: string | null;
  agentRole?: string | null;
  message?: string | null;
  profileName?: string | null;
  runtimeType?: string | null;
}

/** A parent/child edge. */
export interface SubAgentEdge {
  parentThreadId: string;
  childThreadId: string;
  depth: number;
  profileName: string;
  runtimeType: string;
  supportsSendInput: boolean;
  supportsResume: boolean;
  supportsClose: boolean;
  /** `open` or `closed`. */
  status: string;
  agentNickname?: string | null;
  agentRole?: string | null;
  parentTurnId?: string | null;
}

/**
 * `subagent/graphChanged`: a parent/child edge was made or changed; refresh the parent's
 * `subagent/children/list`.
 */
export interface SubAgentGraphChangedParams {
  parentThreadId: string;
  childThreadId: string;
}

/** Whether a profile is offered, and why not (section 24.3). */
export interface SubAgentProfileDiagnostic {
  enabled: boolean;
  binaryResolved: boolean;
  hiddenFromPrompt: boolean;
  warnings: string[];
  hiddenReason?: string | null;
}

/** One profile as listed (section 24.3). */
export interface SubAgentProfileEntry {
  name: string;
  isBuiltIn: boolean;
  isTemplate: boolean;
  hasWorkspaceOverride: boolean;
  isDefault: boolean;
  enabled: boolean;
  /** The effective definition (built-in defaults, then the workspace's override). */
  definition: SubAgentProfileWrite;
  diagnostic: SubAgentProfileDiagnostic;
  /** Only for built-in profiles. */
  builtInDefaults?: SubAgentProfileWrite | null;
}

/** Params of `subagent/profiles/remove`. */
export interface SubAgentProfileNameParams {
  name: string;
}

/** Result of `subagent/profiles/setEnabled` and `subagent/profiles/upsert`. */
export interface SubAgentProfileResult {
  profile: SubAgentProfileEntry;
}

/** Params of `subagent/profiles/setEnabled`. */
export interface SubAgentProfileSetEnabledParams {
  name: string;
  enabled: boolean;
}

/** Params of `subagent/profiles/upsert`. */
export interface SubAgentProfileUpsertParams {
  name: string;
  definition: SubAgentProfileWrite;
}

/**
 * A profile definition (section 24.2): the persisted shape of `SubAgentProfiles.<name>`, without
 * its name. Fields other than `runtime` and `workingDirectoryMode` are those of external CLI
 * runtimes.
 */
export interface SubAgentProfileWrite {
  args?: string[] | null;
  bin?: string | null;
  deleteOutputFileAfterRead?: boolean | null;
  env?: { [key: string]: string } | null;
  envPassthrough?: string[] | null;
  inputArgTemplate?: string | null;
  inputEnvKey?: string | null;
  inputFormat?: string | null;
  inputMode?: string | null;
  maxOutputBytes?: number | null;
  outputFileArgTemplate?: string | null;
  outputFormat?: string | null;
  outputInputTokensJsonPath?: string | null;
  outputJsonPath?: string | null;
  outputOutputTokensJsonPath?: string | null;
  outputTotalTokensJsonPath?: string | null;
  permissionModeMapping?: { [key: string]: string } | null;
  readOutputFile?: boolean | null;
  resumeArgTemplate?: string | null;
  resumeSessionIdJsonPath?: string | null;
  resumeSessionIdRegex?: string | null;
  /** `native` (a child thread run by this server's agent) or `cli-oneshot` (an external command). */
  runtime?: string;
  sanitizationRules?: unknown;
  supportsModelSelection?: boolean | null;
  supportsResume?: boolean | null;
  supportsStreaming?: boolean | null;
  /** Seconds; 0 is no limit. */
  timeout?: number | null;
  /** `trusted`, `prompt` or `restricted`. */
  trustLevel?: string | null;
  /** `workspace` (default) or `specified`. */
  workingDirectoryMode?: string;
}

/** Params of `subagent/profiles/list`: none. */
export type SubAgentProfilesListParams = { [key: string]: unknown };

/** Result of `subagent/profiles/list`. */
export interface SubAgentProfilesListResult {
  defaultName: string;
  settings: SubAgentSettings;
  profiles: SubAgentProfileEntry[];
}

/** One sub-agent in a `subagent/progress` snapshot. */
export interface SubAgentProgressEntry {
  /** The `agentNickname` given to `SpawnAgent` (else the child's id). */
  label: string;
  inputTokens: number;
  outputTokens: number;
  isCompleted: boolean;
  /** The tool the sub-agent is running; `null` while it waits for its model. */
  currentTool?: string | null;
}

/** `subagent/progress`: a complete snapshot of the sub-agents of a turn (section 6.5). */
export interface SubAgentProgressParams {
  /** The parent thread. */
  threadId: string;
  /** The parent's running turn. */
  turnId: string;
  entries: SubAgentProgressEntry[];
}

/** The workspace's sub-agent settings. */
export interface SubAgentSettings {
  externalCliSessionResumeEnabled: boolean;
  /** The model of native sub-agents; `null`: the parent thread's model. */
  model?: string | null;
}

/** Result of `subagent/settings/update`. */
export interface SubAgentSettingsResult {
  settings: SubAgentSettings;
}

/**
 * Params of `subagent/settings/update`: at least one field. `model: null` (or empty) clears it;
 * an absent field is left as it is.
 */
export interface SubAgentSettingsUpdateParams {
  externalCliSessionResumeEnabled?: boolean | null;
  /** Absent: unchanged; `null`, empty or whitespace: cleared. */
  model?: string | null;
}

/** `ThreadSource.subAgent`: where a sub-agent child comes from. */
export interface SubAgentThreadSource {
  parentThreadId: string;
  /** The top-level (user) thread of the chain. */
  rootThreadId: string;
  /** 1 for a child of a top-level thread. */
  depth: number;
  supportsSendInput: boolean;
  supportsResume: boolean;
  supportsClose: boolean;
  agentNickname?: string | null;
  agentRole?: string | null;
  /** The parent's turn that spawned the child. */
  parentTurnId?: string | null;
  profileName?: string | null;
  /** `native` or `cli-oneshot`. */
  runtimeType?: string | null;
  /** The `SpawnAgent` call that made the child. */
  spawnCallId?: string | null;
}

/**
 * `system/event` (section 6.7): a system-level event. appserver sends `channelRejected` to an
 * adapter whose channel is not accepted, just before it closes the connection.
 */
export interface SystemEventParams {
  kind: string;
  message?: string | null;
  percentLeft?: number | null;
  /** The thread it concerns (`null` for a connection-level event such as `channelRejected`). */
  threadId?: string | null;
  tokenCount?: number | null;
  turnId?: string | null;
}

/** A `systemNotice` item (Session Core, "SystemNotice"): a persistent marker in the timeline. */
export interface SystemNoticePayload {
  /** `compacted` or `memoryConsolidated`. */
  kind: string;
  clearedToolResults?: number | null;
  /** For `compacted`: `micro` or `partial`. */
  mode?: string | null;
  percentLeftAfter?: number | null;
  /**
   * For `compacted` (appserver extension): the summary that stands for everything before this
   * item in what the model is sent from now on. The items themselves stay in the log.
   */
  summary?: string | null;
  tokensAfter?: number | null;
  tokensBefore?: number | null;
  /** For `compacted`: `auto`, `reactive` or `manual`. */
  trigger?: string | null;
}

/** Params of `terminal/clean`. */
export interface TerminalCleanParams {
  threadId: string;
}

/**
 * Params of `terminal/started`, `terminal/outputDelta`, `terminal/completed`, `terminal/stalled`
 * and `terminal/cleaned` (section 19A.4): the terminal's snapshot, and for `outputDelta` the new
 * output.
 */
export interface TerminalEventParams {
  terminal: BackgroundTerminal;
  delta?: string | null;
}

/** Params of `terminal/list`. */
export interface TerminalListParams {
  threadId?: string | null;
}

/** Result of `terminal/list` and `terminal/clean`. */
export interface TerminalListResult {
  terminals: BackgroundTerminal[];
}

/** Params of `terminal/read`. */
export interface TerminalReadParams {
  sessionId: string;
  maxOutputChars?: number | null;
  /** Wait up to this long for output (or the end) when none is new. */
  waitMs?: number | null;
}

/** Result of `terminal/read`, `terminal/write` and `terminal/stop`. */
export interface TerminalResult {
  terminal: BackgroundTerminal;
}

/** Params of `terminal/stop`. */
export interface TerminalSessionParams {
  sessionId: string;
}

/** Params of `terminal/write`. */
export interface TerminalWriteParams {
  sessionId: string;
  input: string;
  maxOutputChars?: number | null;
  /** How long to wait for output after writing (default 1000). */
  yieldTimeMs?: number | null;
}

/** Params of `item/agentMessage/delta` and `item/reasoning/delta`. */
export interface TextDeltaParams {
  threadId: string;
  turnId: string;
  itemId: string;
  /** `agentMessage` or `reasoningContent`. */
  deltaKind: string;
  delta: string;
}

/** `agentMessage` and `reasoningContent`: the accumulated text. */
export interface TextPayload {
  text: string;
}

/** A thread on the wire. */
export interface Thread {
  /** `thread_YYYYMMDD_xxxxxx` */
  id: string;
  workspacePath: string;
  originChannel: string;
  status: ThreadStatus;
  createdAt: string;
  lastActiveAt: string;
  historyMode: HistoryMode;
  channelContext?: string | null;
  configuration?: ThreadConfiguration | null;
  /**
   * How full the model's context window is (section 4.4): the persisted snapshot, absent
   * when the server has none (no model configured, or a thread from before it kept one).
   */
  contextUsage?: ContextUsageSnapshot | null;
  displayName?: string | null;
  metadata?: { [key: string]: string };
  /** The thread's current plan (the latest `plan/updated` snapshot), if it has one. */
  plan?: Plan | null;
  queuedInputs?: QueuedTurnInput[];
  runtime?: ThreadRuntime | null;
  /**
   * Why the thread exists (Session Core 4.1.1): `{kind: "user"}` for a top-level
   * conversation, `{kind: "subagent", subAgent}` for a sub-agent child.
   */
  source?: ThreadSource;
  /** Populated by `thread/read` with `includeTurns`, `thread/rollback`, `thread/resume`. */
  turns?: Turn[];
  userId?: string | null;
}

/**
 * Result of `thread/compact` (appserver extension): whether the history was compacted, and the
 * thread's context usage after.
 */
export interface ThreadCompactResult {
  compacted: boolean;
  contextUsage: ContextUsageSnapshot;
}

export interface ThreadConfigUpdateParams {
  threadId: string;
  config: ThreadConfiguration;
}

/**
 * Per-thread agent configuration (section 4.1.1). Every field is optional; `thread/config/update`
 * replaces the thread's whole configuration (a field left out is cleared).
 */
export interface ThreadConfiguration {
  agentInstructions?: string | null;
  /** `default`, `autoApprove`, `interrupt` (DotCraft) or `never`, `onRequest`, `untrusted`. */
  approvalPolicy?: string | null;
  automationTaskDirectory?: string | null;
  customTools?: string[] | null;
  extensions?: string[] | null;
  mcpServers?: unknown[] | null;
  mode?: string | null;
  model?: string | null;
  requireApprovalOutsideWorkspace?: boolean | null;
  /**
   * How this thread's commands are confined: `readOnly`, `workspaceWrite` or `fullAccess`
   * (appserver extension; default: the workspace's).
   */
  sandboxMode?: string | null;
  toolProfile?: string | null;
  useToolProfileOnly?: boolean | null;
  workspaceOverride?: string | null;
}

export interface ThreadIdParams {
  threadId: string;
}

export interface ThreadListParams {
  identity: SessionIdentity;
  channelName?: string | null;
  crossChannelOrigins?: string[] | null;
  /** appserver extension: `nextCursor` of the previous page. */
  cursor?: string | null;
  includeArchived?: boolean;
  includeSubAgents?: boolean;
  /** appserver extension: page size (default 100, at most 1000). */
  limit?: number | null;
}

export interface ThreadListResult {
  data: ThreadSummary[];
  /** Present when more threads match: pass it as `cursor` for the next page. */
  nextCursor?: string | null;
}

export interface ThreadModeSetParams {
  threadId: string;
  mode: string;
}

export interface ThreadQueueUpdatedParams {
  threadId: string;
  queuedInputs: QueuedTurnInput[];
}

export interface ThreadReadParams {
  threadId: string;
  includeTurns?: boolean;
  /** appserver extension: `nextTurnsCursor` of the previous page, to read older turns. */
  turnsCursor?: string | null;
  /** appserver extension: return at most this many turns (the most recent ones). */
  turnsLimit?: number | null;
}

export interface ThreadReadResult {
  thread: Thread;
  /** Present when older turns were left out of this page. */
  nextTurnsCursor?: string | null;
  /**
   * appserver extension: the thread's last event `seq` when the read began; the result
   * reflects at least every event up to it, so `thread/subscribe` with this `afterSeq` misses
   * nothing.
   */
  seq?: number | null;
}

export interface ThreadRenameParams {
  threadId: string;
  displayName: string;
}

export interface ThreadRenamedParams {
  threadId: string;
  displayName: string;
}

/**
 * `{ thread }`: the result of `thread/start`, `thread/resume`, `thread/rollback`, and the params
 * of `thread/started`.
 */
export interface ThreadResult {
  thread: Thread;
}

export interface ThreadResumeParams {
  threadId: string;
  /**
   * appserver extension: also subscribe this connection to the thread, delivering every event
   * numbered after this `seq`, then the live ones (as `thread/subscribe` with `afterSeq`).
   */
  afterSeq?: number | null;
}

export interface ThreadResumedParams {
  thread: Thread;
  resumedBy: string;
}

export interface ThreadRollbackParams {
  threadId: string;
  numTurns: number;
}

/** Whether a thread is busy, for thread lists (section 6.1 `thread/runtimeChanged`). */
export interface ThreadRuntime {
  running: boolean;
  waitingOnApproval: boolean;
  waitingOnPlanConfirmation: boolean;
}

export interface ThreadRuntimeChangedParams {
  threadId: string;
  runtime: ThreadRuntime;
}

/** `Thread.source` and `ThreadSummary.source`: why the thread exists (Session Core 4.1.1). */
export interface ThreadSource {
  /**
   * `user` (a top-level conversation) or `subagent` (a child spawned from another thread's
   * turn).
   */
  kind: string;
  /** With `kind: "subagent"`: the child's parent, root and spawn metadata. */
  subAgent?: SubAgentThreadSource | null;
}

export interface ThreadStartParams {
  identity: SessionIdentity;
  config?: ThreadConfiguration | null;
  displayName?: string | null;
  dynamicTools?: DynamicToolSpec[];
  historyMode?: HistoryMode | null;
}

export type ThreadStatus = "active" | "paused" | "archived";

export interface ThreadStatusChangedParams {
  threadId: string;
  previousStatus: ThreadStatus;
  newStatus: ThreadStatus;
}

export interface ThreadSubscribeParams {
  threadId: string;
  /**
   * appserver extension: deliver every event of the thread numbered after this `seq` (from the
   * event log), then the live ones, with no gap and no duplicate.
   */
  afterSeq?: number | null;
  replayRecent?: boolean;
}

/** One row of `thread/list`. */
export interface ThreadSummary {
  id: string;
  status: ThreadStatus;
  originChannel: string;
  workspacePath: string;
  createdAt: string;
  lastActiveAt: string;
  channelContext?: string | null;
  displayName?: string | null;
  metadata?: { [key: string]: string };
  runtime?: ThreadRuntime | null;
  /** Why the thread exists, as on `Thread`. */
  source?: ThreadSource;
  /** How many turns the thread has (after a rollback, those left). */
  turnCount?: number;
  userId?: string | null;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** Params of `item/toolCall/argumentsDelta`. */
export interface ToolCallArgumentsDeltaParams {
  threadId: string;
  turnId: string;
  itemId: string;
  /** Always `toolCallArguments`. */
  deltaKind: string;
  delta: string;
  callId?: string | null;
  toolName?: string | null;
}

export interface ToolCallPayload {
  toolName: string;
  callId: string;
  /** Complete in `item/completed`; may be absent while arguments stream. */
  arguments?: unknown;
  /**
   * The MCP server of a call of one of its tools by its namespaced name
   * (`mcp__<server>__<tool>`), as the server is named (appserver extension).
   */
  mcpServer?: string | null;
  /** The MCP tool's own name, with `mcpServer` (appserver extension). */
  mcpTool?: string | null;
}

/**
 * Params of `item/toolCall/progress` (appserver extension): a progress notification of the MCP
 * server during the agent's call of its tool (`mcp_call`), as it comes; not kept.
 */
export interface ToolCallProgressParams {
  threadId: string;
  turnId: string;
  /** The `toolCall` item's `callId`. */
  callId: string;
  server: string;
  tool: string;
  progress: number;
  message?: string | null;
  total?: number | null;
}

export interface ToolExecutionPayload {
  callId: string;
  toolName: string;
  /** `inProgress`, `completed`, `failed` or `cancelled`. */
  status: string;
  durationMs?: number | null;
  errorMessage?: string | null;
  resultPreview?: string | null;
  success?: boolean | null;
}

export interface ToolResultPayload {
  callId: string;
  result: string;
  success: boolean;
  /**
   * Every content block of an MCP tool's result — text, images, audio, resource links and
   * embedded resources — as the server gave them (appserver extension).
   */
  contentItems?: ContentItem[];
  /**
   * The files this call changed, with their diffs (appserver extension: `WriteFile`,
   * `EditFile`); `thread/read` returns them with the item.
   */
  fileChanges?: FileChange[];
  /** An MCP tool's `structuredContent` (appserver extension). */
  structuredResult?: unknown;
}

/** A turn on the wire. */
export interface Turn {
  /** `turn_001` */
  id: string;
  threadId: string;
  status: TurnStatus;
  startedAt: string;
  completedAt?: string | null;
  error?: string | null;
  initiator?: TurnInitiator | null;
  items?: Item[];
  originChannel?: string | null;
  tokenUsage?: TokenUsage | null;
}

export interface TurnCancelledParams {
  turn: Turn;
  reason: string;
}

/** Params of `turn/diff/updated`: the turn's aggregate unified diff after each file change. */
export interface TurnDiffUpdatedParams {
  threadId: string;
  turnId: string;
  diff: string;
}

export interface TurnEnqueueParams {
  threadId: string;
  input: InputPart[];
  sender?: SenderContext | null;
}

export interface TurnEnqueueResult {
  queuedInput: QueuedTurnInput;
  queuedInputs: QueuedTurnInput[];
}

export interface TurnFailedParams {
  turn: Turn;
  error: string;
}

/** Durable actor metadata of a turn. */
export interface TurnInitiator {
  channelName: string;
  channelContext?: string | null;
  groupId?: string | null;
  userId?: string | null;
  userName?: string | null;
  userRole?: string | null;
}

export interface TurnInterruptParams {
  threadId: string;
  turnId: string;
}

export interface TurnQueueRemoveParams {
  threadId: string;
  queuedInputId: string;
}

/** `{ turn }`: the result of `turn/start` and the params of `turn/started` / `turn/completed`. */
export interface TurnResult {
  turn: Turn;
}

export interface TurnStartParams {
  threadId: string;
  input: InputPart[];
  /** Required when the thread uses `historyMode = "client"`, forbidden otherwise. */
  messages?: ChatMessage[] | null;
  sender?: SenderContext | null;
}

export type TurnStatus = "running" | "waitingApproval" | "completed" | "failed" | "cancelled";

export interface TurnSteerParams {
  threadId: string;
  expectedTurnId: string;
  queuedInputId: string;
  sender?: SenderContext | null;
}

export interface TurnSteerResult {
  turnId: string;
  queuedInputs: QueuedTurnInput[];
}

/** Params of `item/usage/delta` (section 6.6). */
export interface UsageDeltaParams {
  threadId: string;
  turnId: string;
  inputTokens: number;
  outputTokens: number;
  /** The snapshot matching `totalInputTokens`, with the thresholds (section 6.6). */
  contextUsage?: ContextUsageSnapshot | null;
  totalInputTokens?: number | null;
  totalOutputTokens?: number | null;
}

export interface UserMessagePayload {
  /** Display text derived from the native input parts. */
  text: string;
  channelContext?: string | null;
  channelName?: string | null;
  /** `normal`, `queued` or `guidance`. */
  deliveryMode?: string | null;
  groupId?: string | null;
  images?: ImageRef[];
  materializedInputParts?: InputPart[];
  nativeInputParts?: InputPart[];
  senderId?: string | null;
  senderName?: string | null;
  senderRole?: string | null;
  triggerKind?: string | null;
  triggerLabel?: string | null;
  triggerRefId?: string | null;
}

export interface WelcomeSuggestionItem {
  title: string;
  prompt: string;
  reason?: string | null;
}

/** Params of `welcome/suggestions`. */
export interface WelcomeSuggestionsParams {
  identity: SessionIdentity;
  maxItems?: number | null;
}

/** Result of `welcome/suggestions`. */
export interface WelcomeSuggestionsResult {
  items: WelcomeSuggestionItem[];
  /** `dynamic` or `none`. */
  source: string;
  generatedAt: string;
  fingerprint: string;
}

/** `workspace/configChanged`: something in the workspace's configuration was written. */
export interface WorkspaceConfigChangedParams {
  /** The method that wrote it. */
  source: string;
  /** Coarse tags of what changed (`workspace.model`, `externalChannel`, ...). */
  regions: string[];
  /** ISO 8601 UTC. */
  changedAt: string;
}

/** Params of `workspace/config/schema`: an empty object (or omitted). */
export type WorkspaceConfigSchemaParams = { [key: string]: unknown };

/** Result of `workspace/config/schema`. */
export interface WorkspaceConfigSchemaResult {
  sections: ConfigSectionSchema[];
}

/**
 * Params (and, echoing what was written, result) of `workspace/config/update`. An absent field
 * is left alone; `null` removes the key.
 */
export interface WorkspaceConfigValues {
  apiKey?: string | null;
  defaultApprovalPolicy?: string | null;
  endPoint?: string | null;
  memoryAutoConsolidateEnabled?: boolean | null;
  model?: string | null;
  skillsSelfLearningEnabled?: boolean | null;
  welcomeSuggestionsEnabled?: boolean | null;
}

/** A managed worktree as registered. */
export interface WorktreeInfo {
  /** `task-<taskId>`. */
  id: string;
  sourceThreadId: string;
  /** The worktree's folder (where its thread's tools work). */
  workspacePath: string;
  /** The server's workspace it was made from. */
  sourceWorkspacePath: string;
  path: string;
  branchName: string;
  /** `HEAD`: what it was made from. */
  baseRef: string;
  /** The commit it was made from. */
  baseHead: string;
  /** `automationTask`. */
  ownerKind: string;
  /** The task's id. */
  ownerId: string;
  head?: string | null;
}

/**
 * What a managed worktree holds now, for a review: changes not committed, and commits on its
 * branch since it was made. A thread without one answers `worktree: null`, `exists: false`.
 */
export interface WorktreeStatus {
  threadId: string;
  exists: boolean;
  isGitWorktree: boolean;
  hasUncommittedChanges: boolean;
  hasCommitsAheadOfBase: boolean;
  aheadCount: number;
  branchName?: string | null;
  /** The worktree's `HEAD` commit. */
  head?: string | null;
  path?: string | null;
  worktree?: WorktreeInfo | null;
}

/** `worktree/status`: the managed worktree a thread works in (an automation task's). */
export interface WorktreeStatusParams {
  threadId: string;
}

export interface WorktreeStatusResult {
  status: WorktreeStatus;
}

/** Requests a client sends: params and result. */
export interface ClientRequestMap {
  "app/command": { params: AppCommandParams; result: AppCommandResult };
  "app/descriptor/approve": { params: AppDescriptorApproveParams; result: AppDescriptorApproveResult };
  "app/discover": { params: AppDiscoverParams; result: AppDiscoverResult };
  "app/emit": { params: AppEmitParams; result: EmptyResult };
  "app/list": { params: AppListParams; result: AppListResult };
  "app/log/read": { params: AppLogReadParams; result: AppLogReadResult };
  "app/open": { params: AppOpenParams; result: AppOpenResult };
  "app/query": { params: AppQueryParams; result: AppQueryResult };
  "app/register": { params: AppRegisterParams; result: AppRegisterResult };
  "app/unregister": { params: AppUnregisterParams; result: EmptyResult };
  "automation/task/create": { params: AutomationTaskCreateParams; result: AutomationTaskCreateResult };
  "automation/task/delete": { params: AutomationTaskIdParams; result: AutomationOkResult };
  "automation/task/discardWorktree": { params: AutomationTaskIdParams; result: AutomationTaskResult };
  "automation/task/list": { params: AutomationTaskListParams; result: AutomationTaskListResult };
  "automation/task/read": { params: AutomationTaskIdParams; result: AutomationTask };
  "automation/task/run": { params: AutomationTaskIdParams; result: AutomationTaskResult };
  "automation/task/updateBinding": { params: AutomationTaskUpdateBindingParams; result: AutomationTaskResult };
  "automation/template/delete": { params: AutomationTemplateIdParams; result: AutomationOkResult };
  "automation/template/list": { params: AutomationTemplateListParams; result: AutomationTemplateListResult };
  "automation/template/save": { params: AutomationTemplateSaveParams; result: AutomationTemplateResult };
  "channel/list": { params: ChannelListParams; result: ChannelListResult };
  "channel/status": { params: ChannelStatusParams; result: ChannelStatusResult };
  "command/execute": { params: CommandExecuteParams; result: CommandResult };
  "command/list": { params: CommandListParams; result: CommandListResult };
  "cron/enable": { params: CronEnableParams; result: CronJobResult };
  "cron/list": { params: CronListParams; result: CronListResult };
  "cron/remove": { params: CronJobIdParams; result: RemovedResult };
  "cron/run": { params: CronJobIdParams; result: CronRunResult };
  "ext/acp/session/mcpServers": { params: AcpSessionMcpServersParams; result: AcpSessionMcpServersResult };
  "externalChannel/get": { params: ExternalChannelNameParams; result: ExternalChannelResult };
  "externalChannel/list": { params: ExternalChannelListParams; result: ExternalChannelListResult };
  "externalChannel/remove": { params: ExternalChannelNameParams; result: RemovedResult };
  "externalChannel/upsert": { params: ExternalChannelUpsertParams; result: ExternalChannelResult };
  "heartbeat/trigger": { params: HeartbeatTriggerParams; result: HeartbeatTriggerResult };
  "initialize": { params: InitializeParams; result: InitializeResult };
  "mcp/get": { params: McpNameParams; result: McpServerResult };
  "mcp/list": { params: McpListParams; result: McpListResult };
  "mcp/remove": { params: McpNameParams; result: McpRemoveResult };
  "mcp/resources/list": { params: McpResourceListParams; result: McpResourceListResult };
  "mcp/resources/read": { params: McpResourceReadParams; result: McpResourceReadResult };
  "mcp/status/list": { params: McpListParams; result: McpStatusListResult };
  "mcp/test": { params: McpServerParams; result: McpTestResult };
  "mcp/upsert": { params: McpServerParams; result: McpServerResult };
  "mcp/view/call": { params: McpViewCallParams; result: McpViewCallResult };
  "mcp/view/context": { params: McpViewContextParams; result: EmptyResult };
  "mcp/view/storage/load": { params: McpViewStorageLoadParams; result: McpViewStorageLoadResult };
  "mcp/view/storage/save": { params: McpViewStorageSaveParams; result: McpViewStorageSaveResult };
  "mcp/view/tool": { params: McpViewToolParams; result: McpViewToolResult };
  "model/list": { params: ModelListParams; result: ModelListResult };
  "plugin/install": { params: PluginInstallParams; result: PluginResult };
  "plugin/list": { params: PluginListParams; result: PluginListResult };
  "plugin/mcp/approve": { params: PluginMcpApproveParams; result: PluginResult };
  "plugin/remove": { params: PluginIdParams; result: PluginResult };
  "plugin/setEnabled": { params: PluginSetEnabledParams; result: PluginResult };
  "plugin/view": { params: PluginIdParams; result: PluginResult };
  "skills/list": { params: SkillsListParams; result: SkillsListResult };
  "skills/read": { params: SkillNameParams; result: SkillsReadResult };
  "skills/restoreOriginal": { params: SkillNameParams; result: SkillsRestoreResult };
  "skills/setEnabled": { params: SkillsSetEnabledParams; result: SkillResult };
  "skills/uninstall": { params: SkillNameParams; result: SkillsUninstallResult };
  "skills/view": { params: SkillNameParams; result: SkillsViewResult };
  "subagent/children/list": { params: SubAgentChildrenListParams; result: SubAgentChildrenListResult };
  "subagent/close": { params: SubAgentControlParams; result: SubAgentControlResult };
  "subagent/profiles/list": { params: SubAgentProfilesListParams; result: SubAgentProfilesListResult };
  "subagent/profiles/remove": { params: SubAgentProfileNameParams; result: RemovedResult };
  "subagent/profiles/setEnabled": { params: SubAgentProfileSetEnabledParams; result: SubAgentProfileResult };
  "subagent/profiles/upsert": { params: SubAgentProfileUpsertParams; result: SubAgentProfileResult };
  "subagent/resume": { params: SubAgentControlParams; result: SubAgentControlResult };
  "subagent/settings/update": { params: SubAgentSettingsUpdateParams; result: SubAgentSettingsResult };
  "terminal/clean": { params: TerminalCleanParams; result: TerminalListResult };
  "terminal/list": { params: TerminalListParams; result: TerminalListResult };
  "terminal/read": { params: TerminalReadParams; result: TerminalResult };
  "terminal/stop": { params: TerminalSessionParams; result: TerminalResult };
  "terminal/write": { params: TerminalWriteParams; result: TerminalResult };
  "thread/archive": { params: ThreadIdParams; result: EmptyResult };
  "thread/compact": { params: ThreadIdParams; result: ThreadCompactResult };
  "thread/config/update": { params: ThreadConfigUpdateParams; result: EmptyResult };
  "thread/delete": { params: ThreadIdParams; result: EmptyResult };
  "thread/list": { params: ThreadListParams; result: ThreadListResult };
  "thread/mode/set": { params: ThreadModeSetParams; result: EmptyResult };
  "thread/pause": { params: ThreadIdParams; result: EmptyResult };
  "thread/read": { params: ThreadReadParams; result: ThreadReadResult };
  "thread/rename": { params: ThreadRenameParams; result: EmptyResult };
  "thread/resume": { params: ThreadResumeParams; result: ThreadResult };
  "thread/rollback": { params: ThreadRollbackParams; result: ThreadResult };
  "thread/start": { params: ThreadStartParams; result: ThreadResult };
  "thread/subscribe": { params: ThreadSubscribeParams; result: EmptyResult };
  "thread/unarchive": { params: ThreadIdParams; result: EmptyResult };
  "thread/unsubscribe": { params: ThreadIdParams; result: EmptyResult };
  "turn/enqueue": { params: TurnEnqueueParams; result: TurnEnqueueResult };
  "turn/interrupt": { params: TurnInterruptParams; result: EmptyResult };
  "turn/queue/remove": { params: TurnQueueRemoveParams; result: QueuedInputsResult };
  "turn/start": { params: TurnStartParams; result: TurnResult };
  "turn/steer": { params: TurnSteerParams; result: TurnSteerResult };
  "welcome/suggestions": { params: WelcomeSuggestionsParams; result: WelcomeSuggestionsResult };
  "workspace/commitMessage/suggest": { params: CommitMessageSuggestParams; result: CommitMessageSuggestResult };
  "workspace/config/schema": { params: WorkspaceConfigSchemaParams; result: WorkspaceConfigSchemaResult };
  "workspace/config/update": { params: WorkspaceConfigValues; result: WorkspaceConfigValues };
  "worktree/status": { params: WorktreeStatusParams; result: WorktreeStatusResult };
}

/** Notifications a client sends. The value is the params. */
export interface ClientNotificationMap {
  "app/emit": AppEmitParams;
  "app/interaction": AppInteractionParams;
  "initialized": InitializedParams;
}

/** Notifications the server sends. The value is the params. */
export interface ServerNotificationMap {
  "app/event": AppEventParams;
  "app/externalCall": AppExternalCallParams;
  "app/registered": AppRegisteredParams;
  "app/replayed": AppReplayedParams;
  "app/unregistered": AppUnregisteredParams;
  "automation/task/updated": AutomationTaskUpdatedParams;
  "cron/stateChanged": CronStateChangedParams;
  "item/agentMessage/delta": TextDeltaParams;
  "item/approval/resolved": ItemEventParams;
  "item/commandExecution/outputDelta": CommandExecutionOutputDeltaParams;
  "item/completed": ItemEventParams;
  "item/reasoning/delta": TextDeltaParams;
  "item/started": ItemEventParams;
  "item/toolCall/argumentsDelta": ToolCallArgumentsDeltaParams;
  "item/toolCall/progress": ToolCallProgressParams;
  "item/usage/delta": UsageDeltaParams;
  "mcp/status/updated": McpStatusUpdatedParams;
  "mcp/view/offered": McpViewOfferedParams;
  "plan/updated": PlanUpdatedParams;
  "subagent/graphChanged": SubAgentGraphChangedParams;
  "subagent/progress": SubAgentProgressParams;
  "system/event": SystemEventParams;
  "system/jobResult": JobResultParams;
  "terminal/cleaned": TerminalEventParams;
  "terminal/completed": TerminalEventParams;
  "terminal/outputDelta": TerminalEventParams;
  "terminal/stalled": TerminalEventParams;
  "terminal/started": TerminalEventParams;
  "thread/deleted": ThreadIdParams;
  "thread/queue/updated": ThreadQueueUpdatedParams;
  "thread/renamed": ThreadRenamedParams;
  "thread/resumed": ThreadResumedParams;
  "thread/runtimeChanged": ThreadRuntimeChangedParams;
  "thread/started": ThreadResult;
  "thread/statusChanged": ThreadStatusChangedParams;
  "turn/cancelled": TurnCancelledParams;
  "turn/completed": TurnResult;
  "turn/diff/updated": TurnDiffUpdatedParams;
  "turn/failed": TurnFailedParams;
  "turn/started": TurnResult;
  "workspace/configChanged": WorkspaceConfigChangedParams;
}

/** Requests the server sends to a client: params and the result the client answers with. */
export interface ServerRequestMap {
  "ext/acp/fs/readTextFile": { params: AcpReadTextFileParams; result: AcpReadTextFileResult };
  "ext/acp/fs/writeTextFile": { params: AcpWriteTextFileParams; result: EmptyResult };
  "ext/acp/terminal/create": { params: AcpTerminalCreateParams; result: AcpTerminalCreateResult };
  "ext/acp/terminal/getOutput": { params: AcpTerminalParams; result: AcpTerminalOutputResult };
  "ext/acp/terminal/kill": { params: AcpTerminalParams; result: EmptyResult };
  "ext/acp/terminal/release": { params: AcpTerminalParams; result: EmptyResult };
  "ext/acp/terminal/waitForExit": { params: AcpTerminalParams; result: AcpTerminalExitStatus };
  "ext/app/command": { params: ExtAppCommandParams; result: AppCommandResult };
  "ext/app/query": { params: ExtAppQueryParams; result: AppQueryResult };
  "ext/channel/heartbeat": { params: ExtChannelHeartbeatParams; result: EmptyResult };
  "ext/channel/send": { params: ExtChannelSendParams; result: ExtChannelSendResult };
  "ext/channel/toolCall": { params: ExtChannelToolCallParams; result: DynamicToolCallResult };
  "item/approval/request": { params: ApprovalRequestParams; result: ApprovalDecisionResult };
  "item/tool/call": { params: DynamicToolCallParams; result: DynamicToolCallResult };
  "mcp/elicitation/request": { params: McpElicitationRequestParams; result: McpElicitationResult };
}

export type ClientRequestMethod = keyof ClientRequestMap;
export type ClientNotificationMethod = keyof ClientNotificationMap;
export type ServerNotificationMethod = keyof ServerNotificationMap;
export type ServerRequestMethod = keyof ServerRequestMap;
