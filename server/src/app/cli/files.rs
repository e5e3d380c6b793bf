//! The files a run's command line names: the config files (the workspace's over the user's) and
//! the WebSocket token file.

use std::path::PathBuf;

use crate::infra::config::{ConfigError, FileConfig, ServerConfig, read_config_file};

/// The workspace's config file over the user's. Before it is read, a workspace that exists but
/// is no folder is named as such (a missing one is named by the server as it starts).
pub(super) fn read(config: &mut ServerConfig, env: &dyn Fn(&str) -> Option<String>) -> Result<FileConfig, ConfigError> {
    if let Some(reason) =
        config.workspace.exists().then(|| crate::infra::config::unusable_workspace(&config.workspace)).flatten()
    {
        return Err(ConfigError::Workspace { path: config.workspace.display().to_string(), reason });
    }
    config.user_config = crate::infra::config::user_config_path(env);
    read_config_file(&config.workspace, config.user_config.as_deref())
}

/// The WebSocket token (`--ws-token`, or read from `--ws-token-file`, which is remembered
/// absolute) and the file it came from. An empty token disables authentication (protocol
/// section 15.4).
pub(super) fn ws_token(
    token: Option<String>,
    file: Option<PathBuf>,
    absolute: impl Fn(PathBuf) -> PathBuf,
) -> Result<(Option<String>, Option<PathBuf>), ConfigError> {
    let (token, file) = match file {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|err| ConfigError::TokenFile { path: path.display().to_string(), reason: err.to_string() })?;
            if text.trim().is_empty() {
                let reason = "the file is empty; it must hold the token (an unset variable written into it?)";
                return Err(ConfigError::TokenFile { path: path.display().to_string(), reason: reason.into() });
            }
            (Some(text.trim().to_owned()), Some(absolute(path)))
        }
        None => (token, None),
    };
    Ok((token.filter(|t| !t.is_empty()), file))
}
