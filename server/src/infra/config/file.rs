//! The workspace's config file, `<workspace>/.appserver/config.toml`: one type per section,
//! unknown keys refused.

use std::path::PathBuf;

/// `<workspace>/.appserver/config.toml`.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    #[serde(default)]
    pub(crate) model: Option<FileModel>,
    #[serde(default)]
    pub(crate) approvals: Option<FileApprovals>,
    #[serde(default)]
    pub(crate) store: Option<FileStore>,
    #[serde(default)]
    pub(crate) cluster: Option<FileCluster>,
    #[serde(default)]
    pub(crate) apps: Option<FileApps>,
    #[serde(default)]
    pub(crate) server: Option<FileServer>,
    /// `[sandbox]`: what the agent's commands may read, write and reach, and their limits.
    #[serde(default)]
    pub(crate) sandbox: Option<super::sandbox::FileSandbox>,
    #[serde(default)]
    pub(crate) shell: Option<FileShell>,
    /// `workspace/config/update`'s switches (read where they are used, not at start-up).
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) welcome: Option<FileWelcome>,
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) skills: Option<FileSkills>,
    /// `[plugins] disabled`: plugins disabled with `plugin/setEnabled`.
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) plugins: Option<FilePlugins>,
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) memory: Option<FileMemory>,
    /// `[heartbeat] interval_ms`: run HEARTBEAT.md periodically.
    #[serde(default)]
    pub(crate) heartbeat: Option<FileHeartbeat>,
    /// `externalChannel/*` (protocol section 23): `[external_channels.<name>]`.
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) external_channels: Option<std::collections::BTreeMap<String, FileExternalChannel>>,
    /// Sub-agent settings (protocol section 24): `[subagent]`.
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) subagent: Option<FileSubAgent>,
    /// Workspace sub-agent profiles and overrides of built-in ones: `[subagent_profiles.<name>]`,
    /// each a profile definition in its wire shape (camelCase keys).
    #[allow(dead_code, reason = "checked at start-up; read where used")]
    #[serde(default)]
    pub(crate) subagent_profiles: Option<std::collections::BTreeMap<String, appserver_protocol::SubAgentProfileWrite>>,
}

/// `[subagent]`: DotCraft's `SubAgent.*` settings.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "read only to check the file at start-up and before each write; the code that uses it reads the file itself"
)]
pub(crate) struct FileSubAgent {
    pub(crate) model: Option<String>,
    pub(crate) external_cli_session_resume_enabled: Option<bool>,
    pub(crate) disabled_profiles: Option<Vec<String>>,
    pub(crate) max_depth: Option<u32>,
    pub(crate) max_concurrent: Option<u32>,
}

/// `[welcome]`: personalized `welcome/suggestions` (default on).
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "read only to check the file at start-up and before each write; the code that uses it reads the file itself"
)]
pub(crate) struct FileWelcome {
    pub(crate) suggestions_enabled: Option<bool>,
}

/// `[skills]`: skill self-learning (DotCraft's `Skills.SelfLearning.Enabled`).
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "read only to check the file at start-up and before each write; the code that uses it reads the file itself"
)]
pub(crate) struct FileSkills {
    pub(crate) self_learning_enabled: Option<bool>,
    /// Skills disabled with `skills/setEnabled`.
    pub(crate) disabled: Option<Vec<String>>,
}

/// `[plugins]`: DotCraft's `Plugins.DisabledPlugins`.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "read only to check the file; plugins::service reads the file itself")]
pub(crate) struct FilePlugins {
    pub(crate) disabled: Option<Vec<String>>,
}

/// `[memory]`: long-term memory consolidation (DotCraft's `Memory.AutoConsolidateEnabled`).
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "read only to check the file at start-up and before each write; the code that uses it reads the file itself"
)]
pub(crate) struct FileMemory {
    pub(crate) auto_consolidate_enabled: Option<bool>,
    /// Consolidate after every this many turns of a thread (default 10).
    pub(crate) consolidate_every_turns: Option<u32>,
}

/// `[heartbeat]`: how often `.appserver/HEARTBEAT.md` runs on its own.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileHeartbeat {
    pub(crate) interval_ms: Option<u64>,
}

/// `[external_channels.<name>]`: one external channel adapter's config.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(
    dead_code,
    reason = "read only to check the file at start-up and before each write; the code that uses it reads the file itself"
)]
pub(crate) struct FileExternalChannel {
    pub(crate) enabled: Option<bool>,
    pub(crate) transport: Option<String>,
    pub(crate) command: Option<String>,
    pub(crate) args: Option<Vec<String>>,
    pub(crate) working_directory: Option<String>,
    pub(crate) env: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileShell {
    pub(crate) sandbox_mode: Option<String>,
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(crate) hidden_env: Vec<String>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileApps {
    pub(crate) max_windows: Option<usize>,
    pub(crate) max_windows_per_connection: Option<usize>,
    pub(crate) forget_after_ms: Option<u64>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileServer {
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) mcp_idle_timeout_ms: Option<u64>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileCluster {
    pub(crate) url: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) lease_ttl_seconds: Option<u64>,
    pub(crate) tls_ca_file: Option<PathBuf>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileStore {
    pub(crate) durability: Option<String>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileModel {
    pub(crate) model: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<String>,
    pub(crate) api_key_env: Option<String>,
    pub(crate) max_steps: Option<u32>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) idle_timeout_ms: Option<u64>,
    pub(crate) instructions: Option<String>,
    pub(crate) context_window: Option<u64>,
    pub(crate) output_reserve: Option<u64>,
    pub(crate) auto_compact: Option<bool>,
    pub(crate) input_modalities: Option<Vec<String>>,
    pub(crate) mcp_tools_budget: Option<u64>,
}

#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileApprovals {
    pub(crate) policy: Option<String>,
    pub(crate) timeout_ms: Option<u64>,
    #[serde(default)]
    pub(crate) approver_channels: Vec<String>,
}
