//! `appserver exec [FLAGS] PROMPT`: the command line of a one-shot turn. The server flags
//! configure the server started when none runs; `--approval-policy`, `--sandbox-mode`
//! (`--sandbox`) and `--model`, when given, also configure the turn's thread.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use serde_json::{Map, Value, json};

use super::{RunArgs, run_config};
use crate::domain::policy::ApprovalPolicy;
use crate::infra::config::{ConfigError, ServerConfig};

/// The flags of `appserver exec`.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// What to ask the agent (`-` reads it from stdin).
    prompt: String,
    /// Print the turn's notifications as JSON lines on stdout instead of the agent's answer.
    #[arg(long)]
    json: bool,
    /// Continue this thread rather than starting a new one.
    #[arg(long, value_name = "THREAD_ID")]
    thread: Option<String>,
    /// Interrupt the turn after this many seconds (exit status 3).
    #[arg(long, value_name = "SECONDS", value_parser = super::values::positive)]
    timeout: Option<usize>,
    #[command(flatten)]
    run: Box<RunArgs>,
}

/// A one-shot turn to run.
#[derive(Debug)]
pub struct ExecRequest {
    pub(crate) config: ServerConfig,
    pub(crate) prompt: String,
    pub(crate) json: bool,
    pub(crate) thread: Option<String>,
    pub(crate) timeout: Option<Duration>,
    /// The thread configuration the flags ask for (`approvalPolicy`, `sandboxMode`, `model`).
    pub(crate) thread_config: Value,
}

impl ExecRequest {
    /// The log format of the server flags.
    pub fn log_format(&self) -> crate::infra::config::LogFormat {
        self.config.log_format
    }
}

impl ExecArgs {
    pub(crate) fn resolve(self, cwd: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<ExecRequest, ConfigError> {
        let mut thread_config = Map::new();
        if let Some(policy) = self.run.approval_policy {
            thread_config.insert("approvalPolicy".into(), json!(policy_name(policy)));
        }
        if let Some(mode) = self.run.sandbox_mode {
            thread_config.insert("sandboxMode".into(), json!(mode.as_str()));
        }
        if let Some(model) = &self.run.model {
            thread_config.insert("model".into(), json!(model));
        }
        Ok(ExecRequest {
            config: run_config(*self.run, cwd, env)?,
            prompt: self.prompt,
            json: self.json,
            thread: self.thread,
            timeout: self.timeout.map(|s| Duration::from_secs(s as u64)),
            thread_config: Value::Object(thread_config),
        })
    }
}

/// The policy's name in a thread's configuration.
fn policy_name(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Never => "never",
        ApprovalPolicy::OnRequest => "onRequest",
        ApprovalPolicy::Untrusted => "untrusted",
        ApprovalPolicy::Interrupt => "interrupt",
    }
}
