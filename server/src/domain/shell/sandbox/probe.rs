//! Whether commands can be confined here, found by confining one: at start-up the server runs
//! `appserver sandbox-exec` on `exit 0` with the workspace's own policy (its state hidden, no
//! network); any layer the kernel refuses (user namespaces, mounts, Landlock, seccomp) makes it
//! fail and names why.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Confinement;

/// How long the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether commands can be confined on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxStatus {
    pub(crate) available: bool,
    /// Why not, when not.
    pub(crate) reason: Option<String>,
}

/// Confines `exit 0` with `confinement`, through `exe` (this binary).
pub(crate) fn probe(exe: &Path, confinement: &Confinement) -> SandboxStatus {
    let unavailable = |reason: String| SandboxStatus { available: false, reason: Some(reason) };
    let policy = match serde_json::to_string(confinement) {
        Ok(policy) => policy,
        Err(err) => return unavailable(err.to_string()),
    };
    let spawned = Command::new(exe)
        .args(["sandbox-exec", "--policy", &policy, "--shell", "/bin/sh", "--", "exit 0"])
        .current_dir(&confinement.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => return unavailable(format!("cannot run the sandbox helper: {err}")),
    };
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return unavailable("the sandbox helper did not finish within 10 s".to_owned());
            }
        }
    };
    if status.success() {
        return SandboxStatus { available: true, reason: None };
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let reason = stderr.trim().trim_start_matches("appserver sandbox-exec: ").to_owned();
    unavailable(if reason.is_empty() { format!("the sandbox helper failed ({status})") } else { reason })
}
