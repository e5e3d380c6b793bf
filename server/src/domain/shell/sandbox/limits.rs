//! A command's resource limits: processes, memory, CPU time, file size and open files, applied
//! as rlimits to the helper's confined process (and so to everything the command starts) and,
//! where the kernel lets the server make a cgroup, to the command as a whole (`cgroup.rs`). When
//! the command ends past a limit, the helper says which one on the command's output.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

pub(crate) use crate::infra::config::sandbox::Limits;

/// What the command's cgroup (`cgroup.rs`) counted: forks refused at the process limit,
/// processes killed at the memory limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hits {
    pub(crate) processes: u64,
    pub(crate) memory: u64,
}

/// Applies the rlimits to this process. `own_user_namespace`: it runs in a user namespace made
/// for it, where `RLIMIT_NPROC` counts only its own processes (outside, it would count every
/// process of the user, and root is exempt). `cgroup_memory`: a cgroup limits the command's
/// memory, so no per-process `RLIMIT_DATA` is set (the kernel stops the command at the limit,
/// and the helper names it, where an rlimit would only make an allocation fail).
pub(super) fn apply(limits: &Limits, own_user_namespace: bool, cgroup_memory: bool) -> Result<(), String> {
    let set = |resource: Resource, soft: u64, hard: u64, name: &str| -> Result<(), String> {
        // Never above the current hard limit (only a privileged process may raise it).
        let (_, current_hard) = getrlimit(resource).map_err(|e| format!("cannot read the {name} limit: {e}"))?;
        let hard = hard.min(current_hard);
        setrlimit(resource, soft.min(hard), hard).map_err(|e| format!("cannot set the {name} limit: {e}"))
    };
    if let (Some(bytes), false) = (limits.memory_bytes, cgroup_memory) {
        set(Resource::RLIMIT_DATA, bytes, bytes, "memory")?;
    }
    if let Some(seconds) = limits.cpu_seconds {
        set(Resource::RLIMIT_CPU, seconds, seconds.saturating_add(5), "CPU time")?;
    }
    if let Some(bytes) = limits.file_size_bytes {
        set(Resource::RLIMIT_FSIZE, bytes, bytes, "file size")?;
    }
    if let Some(files) = limits.open_files {
        set(Resource::RLIMIT_NOFILE, files, files, "open files")?;
    }
    if let (Some(processes), true) = (limits.processes, own_user_namespace) {
        set(Resource::RLIMIT_NPROC, processes, processes, "processes")?;
    }
    Ok(())
}

/// SIGXCPU and SIGXFSZ, as a shell reports a child killed by them (128 + the signal).
const EXIT_CPU: u8 = 128 + 24;
const EXIT_FILE_SIZE: u8 = 128 + 25;

/// What the command is told when it ended at a limit: its exit status `code`, and what the
/// cgroup counted.
pub(super) fn explain(code: u8, limits: &Limits, hits: &Hits) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(max), true) = (limits.processes, hits.processes > 0) {
        out.push(format!(
            "the command reached its process limit ({max} processes; [sandbox] max_processes): {} fork(s) refused",
            hits.processes
        ));
    }
    if let (Some(max), true) = (limits.memory_bytes, hits.memory > 0) {
        out.push(format!(
            "the command reached its memory limit ({}; [sandbox] max_memory_mb) and was killed by the kernel",
            mebibytes(max)
        ));
    }
    if let (Some(max), EXIT_FILE_SIZE) = (limits.file_size_bytes, code) {
        out.push(format!(
            "the command was stopped at its file-size limit ({}; [sandbox] max_file_size_mb)",
            mebibytes(max)
        ));
    }
    if let (Some(max), EXIT_CPU) = (limits.cpu_seconds, code) {
        out.push(format!("the command was stopped at its CPU-time limit ({max} s; [sandbox] max_cpu_seconds)"));
    }
    out
}

fn mebibytes(bytes: u64) -> String {
    if bytes.is_multiple_of(1024 * 1024) { format!("{} MiB", bytes / (1024 * 1024)) } else { format!("{bytes} bytes") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_named_when_a_command_ends_at_one() {
        let limits = Limits {
            processes: Some(64),
            memory_bytes: Some(256 * 1024 * 1024),
            cpu_seconds: Some(10),
            file_size_bytes: Some(1024 * 1024),
            open_files: Some(256),
        };
        let none = Hits::default();
        assert!(explain(0, &limits, &none).is_empty());
        assert!(explain(1, &limits, &none).is_empty());
        assert!(explain(EXIT_FILE_SIZE, &limits, &none)[0].contains("file-size limit (1 MiB"));
        assert!(explain(EXIT_CPU, &limits, &none)[0].contains("CPU-time limit (10 s"));
        let forks = Hits { processes: 3, ..Hits::default() };
        assert!(explain(1, &limits, &forks)[0].contains("process limit (64 processes"));
        let oom = Hits { memory: 1, ..Hits::default() };
        assert!(explain(137, &limits, &oom)[0].contains("memory limit (256 MiB"));
        assert!(explain(EXIT_FILE_SIZE, &Limits::default(), &none).is_empty(), "no limit, nothing named");
    }
}
