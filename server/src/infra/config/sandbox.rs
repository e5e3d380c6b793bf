//! The owner's sandbox settings: the `[sandbox]` section of `.appserver/config.toml` (what
//! commands may read, write and reach, their limits, the folders threads may work in), with the
//! defaults a single user's machine needs. Only the owner edits this file: the agent's tools and
//! commands can neither read nor write it, and no method lets another caller change these keys.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The limits of one command; `None`: not limited by us.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Limits {
    /// Processes (and threads) at once: the cgroup's `pids.max`, else `RLIMIT_NPROC` inside the
    /// command's own user namespace.
    pub(crate) processes: Option<u64>,
    /// Memory: the cgroup's memory limit for the whole command, and `RLIMIT_DATA` per process.
    pub(crate) memory_bytes: Option<u64>,
    /// CPU seconds per process (`RLIMIT_CPU`: SIGXCPU, then SIGKILL five seconds later).
    pub(crate) cpu_seconds: Option<u64>,
    /// Largest file a process may write (`RLIMIT_FSIZE`: SIGXFSZ).
    pub(crate) file_size_bytes: Option<u64>,
    /// Open files per process (`RLIMIT_NOFILE`).
    pub(crate) open_files: Option<u64>,
}

/// Default `deny_read`: the usual places of a user's secrets, the `.env` files outside the
/// workspace, and the sockets of services that act for the user.
pub(crate) const DEFAULT_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.config/appserver",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials.toml",
    "~/.env*",
    "../.env*",
    "$SSH_AUTH_SOCK",
    "/run/docker.sock",
    "/var/run/docker.sock",
];

/// Default `read_only`: inside the writable roots, what would run code the next time the user
/// (not the sandbox) runs git or opens an editor.
pub(crate) const DEFAULT_READ_ONLY: &[&str] = &[".git", ".gitmodules", ".vscode", ".idea", ".mcp.json"];

/// Default limits: a test suite or a small build fits; a fork bomb, a runaway allocation or a
/// disk filler does not (a large build may need `max_memory_mb` raised; the command's output
/// then names the key).
pub(crate) const DEFAULT_LIMITS: Limits = Limits {
    processes: Some(256),
    memory_bytes: Some(1024 * 1024 * 1024),
    cpu_seconds: Some(3600),
    file_size_bytes: Some(512 * 1024 * 1024),
    open_files: Some(4096),
};

/// The port of the proxy bridge inside a command's network namespace.
pub(crate) const PROXY_PORT: u16 = 3128;

/// The sandbox settings in effect.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SandboxSettings {
    /// Paths hidden from confined commands and refused to the file tools (`~/`, `$VAR`, `../`
    /// for each folder above the workspace, `*` in the last part).
    pub(crate) deny_read: Vec<String>,
    /// Paths relative to each writable root that stay read-only.
    pub(crate) read_only: Vec<String>,
    /// Writable folders besides the workspace and the temp folders (`workspaceWrite`).
    pub(crate) writable_roots: Vec<PathBuf>,
    /// `/tmp`, `/var/tmp` and `$TMPDIR` are writable too (`workspaceWrite`).
    pub(crate) writable_temp: bool,
    /// Commands reach the network (through the allowlisting proxy) at all.
    pub(crate) network: bool,
    /// The domains the proxy lets through (`*`, `example.com`, `*.example.com`).
    pub(crate) allowed_domains: Vec<String>,
    pub(crate) limits: Limits,
    /// Folders (besides the server's workspace) a thread's `workspacePath` may be in.
    pub(crate) workspace_roots: Vec<PathBuf>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            deny_read: DEFAULT_DENY_READ.iter().map(|s| (*s).to_owned()).collect(),
            read_only: DEFAULT_READ_ONLY.iter().map(|s| (*s).to_owned()).collect(),
            writable_roots: Vec::new(),
            writable_temp: true,
            network: false,
            allowed_domains: vec!["*".to_owned()],
            limits: DEFAULT_LIMITS,
            workspace_roots: Vec::new(),
        }
    }
}

/// `[sandbox]` as written in the config file. A limit of 0 turns that limit off.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSandbox {
    /// Replaces the default list.
    pub(crate) deny_read: Option<Vec<String>>,
    /// Added to the list (default or replaced).
    #[serde(default)]
    pub(crate) extra_deny_read: Vec<String>,
    pub(crate) read_only: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) writable_roots: Vec<PathBuf>,
    pub(crate) writable_temp: Option<bool>,
    pub(crate) network: Option<bool>,
    pub(crate) allowed_domains: Option<Vec<String>>,
    pub(crate) max_processes: Option<u64>,
    pub(crate) max_memory_mb: Option<u64>,
    pub(crate) max_cpu_seconds: Option<u64>,
    pub(crate) max_file_size_mb: Option<u64>,
    pub(crate) max_open_files: Option<u64>,
    #[serde(default)]
    pub(crate) workspace_roots: Vec<PathBuf>,
}

impl FileSandbox {
    /// The settings this section gives (relative paths are relative to the workspace). `Err`
    /// names the key at fault.
    pub(crate) fn settings(self, workspace: &Path) -> Result<SandboxSettings, String> {
        let defaults = SandboxSettings::default();
        let absolute = |p: PathBuf| if p.is_absolute() { p } else { workspace.join(p) };
        let mut deny_read = self.deny_read.unwrap_or(defaults.deny_read);
        deny_read.extend(self.extra_deny_read);
        let read_only = self.read_only.unwrap_or(defaults.read_only);
        if let Some(bad) = read_only.iter().find(|p| Path::new(p).is_absolute() || p.split('/').any(|c| c == "..")) {
            return Err(format!("sandbox.read_only: `{bad}` must be relative to the workspace, without `..`"));
        }
        let allowed_domains = self.allowed_domains.unwrap_or(defaults.allowed_domains);
        if let Some(bad) = allowed_domains.iter().find(|d| !valid_domain_pattern(d)) {
            return Err(format!("sandbox.allowed_domains: `{bad}` is not `*`, a host name or `*.` and a host name"));
        }
        let limit = |value: Option<u64>, default: Option<u64>, scale: u64| match value {
            Some(0) => None,
            Some(n) => Some(n.saturating_mul(scale)),
            None => default,
        };
        let mib = 1024 * 1024;
        let limits = Limits {
            processes: limit(self.max_processes, defaults.limits.processes, 1),
            memory_bytes: limit(self.max_memory_mb, defaults.limits.memory_bytes, mib),
            cpu_seconds: limit(self.max_cpu_seconds, defaults.limits.cpu_seconds, 1),
            file_size_bytes: limit(self.max_file_size_mb, defaults.limits.file_size_bytes, mib),
            open_files: limit(self.max_open_files, defaults.limits.open_files, 1),
        };
        Ok(SandboxSettings {
            deny_read,
            read_only,
            writable_roots: self.writable_roots.into_iter().map(absolute).collect(),
            writable_temp: self.writable_temp.unwrap_or(defaults.writable_temp),
            network: self.network.unwrap_or(defaults.network),
            allowed_domains,
            limits,
            workspace_roots: self.workspace_roots.into_iter().map(absolute).collect(),
        })
    }
}

/// `*`, a host name, or `*.` followed by a host name.
fn valid_domain_pattern(pattern: &str) -> bool {
    let host = pattern.strip_prefix("*.").unwrap_or(pattern);
    pattern == "*"
        || (!host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_replaces_or_extends_the_defaults() {
        let file: FileSandbox = toml::from_str(
            "extra_deny_read = ['~/private']\nmax_processes = 0\nmax_file_size_mb = 2\nnetwork = true\n\
             allowed_domains = ['*.github.com', 'crates.io']\nworkspace_roots = ['/srv/projects', 'sub']\n",
        )
        .unwrap();
        let settings = file.settings(Path::new("/w")).unwrap();
        assert!(
            settings.deny_read.contains(&"~/.ssh".to_owned()) && settings.deny_read.contains(&"~/private".to_owned())
        );
        assert_eq!(settings.limits.processes, None, "0 turns a limit off");
        assert_eq!(settings.limits.file_size_bytes, Some(2 * 1024 * 1024));
        assert_eq!(settings.limits.open_files, DEFAULT_LIMITS.open_files);
        assert!(settings.network);
        assert_eq!(settings.workspace_roots, vec![PathBuf::from("/srv/projects"), PathBuf::from("/w/sub")]);
        let replaced: FileSandbox = toml::from_str("deny_read = ['/secret']").unwrap();
        assert_eq!(replaced.settings(Path::new("/w")).unwrap().deny_read, vec!["/secret".to_owned()]);
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad: FileSandbox = toml::from_str("allowed_domains = ['http://x.com']").unwrap();
        assert!(bad.settings(Path::new("/w")).unwrap_err().starts_with("sandbox.allowed_domains"));
        let bad: FileSandbox = toml::from_str("read_only = ['../up']").unwrap();
        assert!(bad.settings(Path::new("/w")).unwrap_err().starts_with("sandbox.read_only"));
        assert!(toml::from_str::<FileSandbox>("network = 'yes'").is_err());
        assert!(toml::from_str::<FileSandbox>("unknown = 1").is_err());
    }
}
