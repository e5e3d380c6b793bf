//! The command line's value parsers: each flag's text checked and turned into its type, with
//! the message clap shows when it does not parse.

use crate::domain::policy::ApprovalPolicy;
use crate::infra::config::{ListenAddr, parse_listen};
use crate::infra::store::Durability;

/// A host name (or `name:port`) as `Host` carries it: letters, digits, `.`, `-`, one `:PORT`.
pub(super) fn host_value(value: &str) -> Result<String, String> {
    let value = value.trim().to_ascii_lowercase();
    let (name, port) = value.split_once(':').unwrap_or((&value, "1"));
    let name_ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
    if name_ok && port.parse::<u16>().is_ok() {
        Ok(value)
    } else {
        Err("expected a host name, or NAME:PORT".to_owned())
    }
}

pub(super) fn listen_value(value: &str) -> Result<ListenAddr, String> {
    parse_listen(value).map_err(|err| err.to_string())
}

pub(super) fn positive(value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("expected a positive integer".to_owned()),
    }
}

pub(super) fn durability_value(value: &str) -> Result<Durability, String> {
    Durability::parse(value).ok_or_else(|| "expected normal or full".to_owned())
}

pub(super) fn sandbox_value(value: &str) -> Result<crate::domain::policy::SandboxMode, String> {
    crate::domain::policy::SandboxMode::parse(value)
        .ok_or_else(|| "expected readOnly, workspaceWrite or fullAccess".to_owned())
}

pub(super) fn policy_value(value: &str) -> Result<ApprovalPolicy, String> {
    ApprovalPolicy::parse(value)
        .ok_or_else(|| "expected onRequest, untrusted, never, autoApprove or interrupt".to_owned())
}
