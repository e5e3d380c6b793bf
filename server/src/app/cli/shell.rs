//! The command settings of a run: the `--sandbox-mode`, `--exec-timeout-ms` and
//! `--exec-hide-env` flags over the config file's `[shell]`, and its `[sandbox]` section.

use std::time::Duration;

use super::RunArgs;
use crate::domain::policy::SandboxMode;
use crate::infra::config::sandbox::FileSandbox;
use crate::infra::config::{ConfigError, FileShell, ServerConfig, ShellSettings, config_file_path};

/// The command settings: flags, then the config file's `[shell]` and `[sandbox]`. The model
/// key's variable is hidden from commands too.
pub(super) fn settings(
    a: &RunArgs,
    (file, sandbox): (FileShell, FileSandbox),
    model_key_env: Option<String>,
    config: &ServerConfig,
) -> Result<ShellSettings, ConfigError> {
    let mut shell = ShellSettings::default();
    shell.sandbox_mode = match (a.sandbox_mode, file.sandbox_mode) {
        (Some(mode), _) => mode,
        (None, Some(mode)) => SandboxMode::parse(&mode).ok_or_else(|| ConfigError::ConfigFile {
            path: config_file_path(&config.workspace).display().to_string(),
            reason: format!("shell.sandbox_mode: expected readOnly, workspaceWrite or fullAccess, not `{mode}`"),
        })?,
        (None, None) => shell.sandbox_mode,
    };
    let timeout = a.exec_timeout_ms.map(|ms| ms as u64).or(file.timeout_ms.filter(|t| *t > 0));
    if let Some(ms) = timeout {
        shell.exec_timeout = Duration::from_millis(ms);
    }
    shell.hidden_env = a.exec_hide_env.iter().cloned().chain(file.hidden_env).chain(model_key_env).collect();
    shell.sandbox = sandbox.settings(&config.workspace).map_err(|reason| ConfigError::ConfigFile {
        path: config_file_path(&config.workspace).display().to_string(),
        reason,
    })?;
    Ok(shell)
}
