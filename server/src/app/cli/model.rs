//! The model settings of a run: `--model`, `--base-url`, `--api-key`, `--model-idle-timeout-ms`
//! over the config file's `[model]` (its key from `api_key_env` when given), and its context
//! window (`context_window`, `output_reserve`, `auto_compact`), what it takes besides text
//! (`input_modalities`) and the MCP tools' share of the window (`mcp_tools_budget`).

use std::time::Duration;

use super::RunArgs;
use crate::infra::config::{ConfigError, DEFAULT_BASE_URL, DEFAULT_MODEL_IDLE_MS, FileModel, ModelSettings};

/// The share of the context window (percent) the MCP tools may take as tools of their own.
const DEFAULT_MCP_TOOLS_BUDGET: u64 = 10;

/// The model settings, or none without a model; a key named by `api_key_env` that is needed
/// (no `--api-key`, no `api_key`) but unset is refused, naming the variable.
pub(super) fn settings(
    a: &RunArgs,
    file_model: FileModel,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ModelSettings>, ConfigError> {
    let Some(model) = a.model.clone().or(file_model.model).filter(|m| !m.trim().is_empty()) else {
        return Ok(None);
    };
    let api_key = match (a.api_key.clone().or(file_model.api_key), file_model.api_key_env.as_deref()) {
        (Some(key), _) => Some(key),
        (None, Some(name)) => match env(name).filter(|v| !v.trim().is_empty()) {
            Some(key) => Some(key),
            None => return Err(ConfigError::ApiKeyEnvUnset(name.to_owned())),
        },
        (None, None) => None,
    };
    Ok(Some(ModelSettings {
        model,
        base_url: a
            .base_url
            .clone()
            .or(file_model.base_url)
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned())
            .trim_end_matches('/')
            .to_owned(),
        api_key,
        max_steps: file_model.max_steps.unwrap_or(20).max(1),
        max_retries: file_model.max_retries.unwrap_or(3),
        idle_timeout: Duration::from_millis(
            a.model_idle_timeout_ms
                .map(|n| n as u64)
                .or(file_model.idle_timeout_ms)
                .filter(|ms| *ms > 0)
                .unwrap_or(DEFAULT_MODEL_IDLE_MS),
        ),
        instructions: file_model.instructions,
        context: crate::infra::config::ContextSettings {
            window: file_model.context_window.filter(|w| *w > 0),
            output_reserve: file_model.output_reserve,
            auto_compact: file_model.auto_compact.unwrap_or(true),
        },
        input_modalities: file_model.input_modalities,
        mcp_tools_budget: file_model.mcp_tools_budget.unwrap_or(DEFAULT_MCP_TOOLS_BUDGET).min(100),
    }))
}
