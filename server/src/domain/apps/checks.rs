//! What is checked of an app command before it runs, and before anyone is asked to approve it:
//! the command is one the window's app declared, and its params fit the command's schema.

use serde_json::Value;

use super::AppError;
use super::manifest::{BUILTIN_COMMANDS, CheckedManifest};

/// Whether `command` is one the window's app declared and `params` fit its schema: the check
/// every run makes, and the one made before anyone is asked to approve a call (a call that
/// would fail is not put to the user). Built-ins pass.
pub(super) fn check_declared(
    checked: &CheckedManifest,
    window_id: &str,
    command: &str,
    params: &Value,
) -> Result<(), AppError> {
    if BUILTIN_COMMANDS.contains(&command) {
        return Ok(());
    }
    if !checked.manifest.commands.contains_key(command) {
        let mut available: Vec<String> = checked.manifest.commands.keys().cloned().collect();
        available.extend(BUILTIN_COMMANDS.iter().map(|b| (*b).to_owned()));
        return Err(AppError::UnknownCommand {
            window: window_id.to_owned(),
            command: command.to_owned(),
            available: available.join(", "),
        });
    }
    checked.check_params(command, params).map_err(AppError::InvalidParams)
}
