//! A cgroup per command, where the kernel lets the server make one under its own (cgroup v2
//! with the controllers delegated, or the v1 `pids` and `memory` hierarchies): the command's
//! process limit and memory limit then hold for all of its processes together, and the kernel
//! counts the forks it refused and the processes it killed for memory, so the helper can name
//! the limit. Where none can be made, the rlimits alone apply (docs/security.md says which).

use std::path::{Path, PathBuf};

use super::limits::{Hits, Limits};

/// Names of the cgroups made for commands: `appserver-cmd-<helper pid>`.
const PREFIX: &str = "appserver-cmd-";

/// The cgroups this helper made and joined (one per hierarchy).
#[derive(Debug, Default)]
pub(super) struct Cgroup {
    groups: Vec<Group>,
    /// Whether one of them limits memory (then the kernel, not an rlimit, stops the command, and
    /// the helper can name the limit).
    pub(super) limits_memory: bool,
}

#[derive(Debug)]
struct Group {
    /// The command's cgroup, and the one this process came from.
    dir: PathBuf,
    parent: PathBuf,
    v2: bool,
}

/// One cgroup hierarchy this process belongs to: its mount point, this process's cgroup in
/// it, and the controllers it has.
#[derive(Debug, Clone, PartialEq)]
struct Hierarchy {
    dir: PathBuf,
    v2: bool,
    controllers: Vec<String>,
}

impl Cgroup {
    /// Makes the command's cgroup in each hierarchy where a limit needs it and the kernel lets
    /// us, writes the limits and moves this process in. Best effort: what cannot be made is left
    /// to the rlimits.
    pub(super) fn join(limits: &Limits) -> Cgroup {
        let mut cgroup = Cgroup::default();
        if limits.processes.is_none() && limits.memory_bytes.is_none() {
            return cgroup;
        }
        let name = format!("{PREFIX}{}", std::process::id());
        for hierarchy in hierarchies() {
            let wanted = limit_files(&hierarchy, limits);
            if wanted.is_empty() {
                continue;
            }
            let dir = hierarchy.dir.join(&name);
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            let group = Group { dir, parent: hierarchy.dir.clone(), v2: hierarchy.v2 };
            let written = wanted.iter().all(|(file, value)| write_limit(&group.dir, file, value));
            if written && std::fs::write(group.dir.join("cgroup.procs"), std::process::id().to_string()).is_ok() {
                cgroup.limits_memory |= wanted.iter().any(|(file, _)| file.starts_with("memory."));
                cgroup.groups.push(group);
            } else {
                let _ = std::fs::remove_dir(&group.dir);
            }
        }
        cgroup
    }

    /// What the kernel counted in the command's cgroups.
    pub(super) fn hits(&self) -> Hits {
        let mut hits = Hits::default();
        for group in &self.groups {
            hits.processes += counter(&group.dir.join("pids.events"), "max");
            let memory = if group.v2 { "memory.events" } else { "memory.oom_control" };
            hits.memory += counter(&group.dir.join(memory), "oom_kill");
        }
        hits
    }

    /// Moves this process back where it came from and removes the command's cgroups (killing
    /// anything still in them).
    pub(super) fn leave(self) {
        for group in self.groups {
            let _ = std::fs::write(group.parent.join("cgroup.procs"), std::process::id().to_string());
            remove(&group.dir);
        }
    }
}

/// How commands' process and memory limits are enforced here, as `appserver doctor` says it.
pub(crate) fn describe() -> String {
    let found: Vec<String> = hierarchies()
        .iter()
        .map(|h| format!("{} (cgroup {})", h.controllers.join(", "), if h.v2 { "v2" } else { "v1" }))
        .collect();
    if found.is_empty() {
        return "per process only (rlimits): no cgroup here lets the server limit a command as a whole".to_owned();
    }
    format!("per command: {}; the rest per process (rlimits)", found.join(", "))
}

/// At the server's start: removes the command cgroups that helpers of a previous server left
/// (a helper killed with SIGKILL cannot remove its own), killing what is still in them.
pub(crate) fn sweep() -> usize {
    let mut removed = 0;
    for hierarchy in hierarchies() {
        let Ok(entries) = std::fs::read_dir(&hierarchy.dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix(PREFIX).and_then(|p| p.parse::<u32>().ok()) else { continue };
            if Path::new(&format!("/proc/{pid}")).exists() {
                continue; // Its helper still runs (a command of this server, or of another).
            }
            if remove(&entry.path()) {
                removed += 1;
            }
        }
    }
    removed
}

/// Removes a cgroup, killing its processes first if it has any (they leave it once they are
/// gone, which takes the kernel a moment). Whether it is gone.
fn remove(dir: &Path) -> bool {
    for _ in 0..200 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return true;
        }
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// The limit files a command's cgroup in `hierarchy` gets, with their values.
fn limit_files(hierarchy: &Hierarchy, limits: &Limits) -> Vec<(&'static str, String)> {
    let has = |c: &str| hierarchy.controllers.iter().any(|h| h == c);
    let mut files = Vec::new();
    if let (Some(max), true) = (limits.processes, has("pids")) {
        files.push(("pids.max", max.to_string()));
    }
    if let (Some(bytes), true) = (limits.memory_bytes, has("memory")) {
        if hierarchy.v2 {
            files.push(("memory.max", bytes.to_string()));
            files.push(("memory.swap.max", "0".to_owned()));
        } else {
            files.push(("memory.limit_in_bytes", bytes.to_string()));
        }
    }
    files
}

/// Writes a limit; a file the kernel does not have (no swap accounting) is not an error.
fn write_limit(dir: &Path, file: &str, value: &str) -> bool {
    let path = dir.join(file);
    std::fs::write(&path, value).is_ok() || (file == "memory.swap.max" && !path.exists())
}

/// `NAME N` in a flat-keyed cgroup file, 0 when absent.
fn counter(path: &Path, name: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == name).then(|| value.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

/// The hierarchies this process is in, with the folder of its cgroup in each; v2 only when
/// its cgroup lets children use controllers.
fn hierarchies() -> Vec<Hierarchy> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    parse_hierarchies(&own, &mounts, &|dir: &Path| std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok())
}

fn parse_hierarchies(own: &str, mounts: &str, subtree: &dyn Fn(&Path) -> Option<String>) -> Vec<Hierarchy> {
    // (mount point, file system type, super options) of every cgroup mount.
    let cgroup_mounts: Vec<(PathBuf, &str, Vec<&str>)> = mounts
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = left.split_whitespace().nth(4)?;
            let mut right = right.split_whitespace();
            let fs_type = right.next()?;
            let options = right.nth(1).unwrap_or("").split(',').collect();
            matches!(fs_type, "cgroup" | "cgroup2").then(|| (PathBuf::from(mount_point), fs_type, options))
        })
        .collect();
    let mut out = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let relative = path.trim_start_matches('/');
        if controllers.is_empty() {
            let Some((mount, _, _)) = cgroup_mounts.iter().find(|(_, t, _)| *t == "cgroup2") else { continue };
            let dir = mount.join(relative);
            let delegated: Vec<String> =
                subtree(&dir).unwrap_or_default().split_whitespace().map(str::to_owned).collect();
            if !delegated.is_empty() {
                out.push(Hierarchy { dir, v2: true, controllers: delegated });
            }
            continue;
        }
        let names: Vec<&str> = controllers.split(',').filter(|c| matches!(*c, "pids" | "memory")).collect();
        if names.is_empty() {
            continue;
        }
        let mount =
            cgroup_mounts.iter().find(|(_, t, options)| *t == "cgroup" && names.iter().all(|n| options.contains(n)));
        if let Some((mount, _, _)) = mount {
            out.push(Hierarchy {
                dir: mount.join(relative),
                v2: false,
                controllers: names.iter().map(|n| (*n).to_owned()).collect(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
36 25 0:31 / /sys/fs/cgroup/pids rw,nosuid shared:11 - cgroup cgroup rw,pids
37 25 0:32 / /sys/fs/cgroup/memory rw,nosuid shared:12 - cgroup cgroup rw,memory
38 25 0:33 / /sys/fs/cgroup/cpu rw,nosuid shared:13 - cgroup cgroup rw,cpu
";

    #[test]
    fn hierarchies_are_read_from_proc() {
        let own = "8:pids:/\n4:memory:/svc/a\n1:cpu:/\n0::/user.slice\n";
        let none = |_: &Path| Some(String::new());
        let found = parse_hierarchies(own, MOUNTS, &none);
        assert_eq!(
            found,
            vec![
                Hierarchy { dir: "/sys/fs/cgroup/pids".into(), v2: false, controllers: vec!["pids".into()] },
                Hierarchy { dir: "/sys/fs/cgroup/memory/svc/a".into(), v2: false, controllers: vec!["memory".into()] },
            ],
            "v2 without delegated controllers is skipped, cpu is not ours"
        );
        let delegated = |_: &Path| Some("memory pids\n".to_owned());
        let v2 = parse_hierarchies("0::/app\n", MOUNTS, &delegated);
        assert_eq!(v2[0].dir, PathBuf::from("/sys/fs/cgroup/unified/app"));
        assert!(v2[0].v2 && v2[0].controllers == ["memory", "pids"]);
    }

    #[test]
    fn limits_map_to_each_version_s_files() {
        let limits = Limits { processes: Some(10), memory_bytes: Some(1 << 20), ..Limits::default() };
        let v1 = Hierarchy { dir: "/x".into(), v2: false, controllers: vec!["memory".into()] };
        assert_eq!(limit_files(&v1, &limits), vec![("memory.limit_in_bytes", "1048576".to_owned())]);
        let v2 = Hierarchy { dir: "/x".into(), v2: true, controllers: vec!["pids".into(), "memory".into()] };
        let files = limit_files(&v2, &limits);
        assert_eq!(files[0], ("pids.max", "10".to_owned()));
        assert_eq!(files[1], ("memory.max", "1048576".to_owned()));
    }

    #[test]
    fn counters_are_read_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("memory.events"), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 2\n").unwrap();
        assert_eq!(counter(&dir.path().join("memory.events"), "oom_kill"), 2);
        assert_eq!(counter(&dir.path().join("memory.events"), "max"), 4);
        assert_eq!(counter(&dir.path().join("missing"), "max"), 0);
    }
}
