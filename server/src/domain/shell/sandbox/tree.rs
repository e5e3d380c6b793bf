//! A process tree, read from `/proc`, and killed whole: every descendant of a process, found by
//! their parent links, signalled with SIGKILL until none is left (a process with SIGKILL pending
//! cannot complete a fork, so a few rounds end even a fork loop). The helper is a sub-reaper, so
//! nothing a command starts leaves its tree while the helper lives.

use std::collections::HashMap;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Rounds of killing before giving up on a tree that keeps growing.
const ROUNDS: usize = 16;

/// Kills (SIGKILL) every live descendant of `root`, not `root` itself. Returns how many signals
/// were sent.
pub(crate) fn kill_descendants(root: i32) -> usize {
    let mut sent = 0;
    for _ in 0..ROUNDS {
        let family = descendants(root);
        if family.is_empty() {
            break;
        }
        for pid in family {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                sent += 1;
            }
        }
    }
    sent
}

/// The live (not zombie) descendants of `root`, parents before children.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, parent) in processes() {
        children.entry(parent).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut next = vec![root];
    while let Some(pid) = next.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            out.push(*child);
            next.push(*child);
        }
    }
    out
}

/// Every live process as (pid, parent pid).
fn processes() -> Vec<(i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (state, parent) = parse_stat(&stat)?;
            (state != 'Z' && state != 'X').then_some((pid, parent))
        })
        .collect()
}

/// The state and parent pid of a `/proc/PID/stat` line (the command name may hold spaces and
/// parentheses, so the fields are read after its last `)`).
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_are_read() {
        assert_eq!(parse_stat("12 (a) b (c)) S 7 12 12 0"), Some(('S', 7)));
        assert_eq!(parse_stat("12 (sh) Z 1 0"), Some(('Z', 1)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_tree_is_killed_whole() {
        use std::io::BufRead;
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg("sleep 300 & setsid sleep 300 & echo ready; wait")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        let root = child.id() as i32;
        assert_eq!(descendants(root).len(), 2);
        kill_descendants(root);
        assert!(descendants(root).is_empty());
        let _ = child.kill();
        let _ = child.wait();
    }
}
