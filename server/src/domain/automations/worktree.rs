//! The managed Git worktrees of `worktree` tasks (DotCraft's automations-lifecycle, "Workspace
//! Modes"): one per task, `<workspace>/.appserver-worktrees/task-<id>` on the branch
//! `appserver/task-<id>`, made from the workspace's `HEAD` at the task's first run (uncommitted
//! changes of the workspace are not copied) and reused by later runs; removed with its branch by
//! `automation/task/discardWorktree`. A run's tools work in it (the thread's `workspaceOverride`,
//! judged as any thread folder is); its thread and history stay the workspace's. It is not under
//! `.appserver/`: that is the server's state, hidden from the agent's commands. Git runs with the
//! repository's hooks and fsmonitor off, and a folder on the way that is a symbolic link is never
//! followed (the agent may have made one to send the checkout elsewhere).

use std::path::{Path, PathBuf};

use crate::domain::workspace::commit_message::git;
use crate::infra::store::{TaskRecord, WorktreeRecord};

/// The folder of the worktrees, in the workspace.
pub(crate) const FOLDER: &str = ".appserver-worktrees";
/// Most bytes of git's answers read.
const ANSWER: usize = 4096;

/// The branch of a task's worktree.
pub(crate) fn branch_of(task_id: &str) -> String {
    format!("appserver/task-{task_id}")
}

/// Where a task's worktree is, in `workspace`.
pub(crate) fn path_of(workspace: &Path, task_id: &str) -> PathBuf {
    workspace.join(FOLDER).join(format!("task-{task_id}"))
}

/// Runs git in `dir`; its stdout, trimmed, when it exits 0. `Err`: why not, for the task's
/// `agentSummary` or the error's message.
async fn git_ok(dir: &Path, args: &[&str]) -> Result<String, String> {
    match git(dir, args, ANSWER).await {
        Ok((out, _, 0)) => Ok(out.trim().to_owned()),
        Ok((_, _, code)) => Err(format!("`git {}` exited with {code}", args.join(" "))),
        Err(err) => Err(err.to_string()),
    }
}

/// The worktree a run of `task` works in, made when there is none (or it was removed by hand),
/// and the folder its tools work in (the worktree's copy of the workspace when the workspace is
/// a folder inside its repository).
pub(crate) async fn ensure(workspace: &Path, task: &TaskRecord) -> Result<(WorktreeRecord, PathBuf), String> {
    let not_git = |_| "worktree mode needs the workspace to be a Git repository, and it is not one".to_owned();
    let top = git_ok(workspace, &["rev-parse", "--show-toplevel"]).await.map_err(not_git)?;
    let inside = relative_to(workspace, Path::new(&top))?;
    let path = path_of(workspace, &task.id);
    let branch = branch_of(&task.id);
    if let Some(recorded) = &task.worktree
        && Path::new(&recorded.path) == path
        && is_worktree_at(&path).await
    {
        return Ok((recorded.clone(), path.join(inside)));
    }
    let base = git_ok(workspace, &["rev-parse", "--verify", "HEAD"])
        .await
        .map_err(|_| "worktree mode needs a commit to start from, and the repository has none yet".to_owned())?;
    make_folder(&workspace.join(FOLDER)).await?;
    match tokio::fs::symlink_metadata(&path).await {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Ok(_) => {
            return Err(format!(
                "{} exists and is not this task's worktree; move it away, or discard the task's worktree",
                path.display()
            ));
        }
        Err(err) => return Err(format!("cannot look at {}: {err}", path.display())),
    }
    let _ = git_ok(workspace, &["worktree", "prune"]).await;
    let target = path.to_string_lossy().into_owned();
    let reference = format!("refs/heads/{branch}");
    let add = match git_ok(workspace, &["rev-parse", "--verify", "--quiet", &reference]).await {
        // The branch outlived its worktree (removed by hand): its work is checked out again.
        Ok(_) => git_ok(workspace, &["worktree", "add", &target, &branch]).await,
        Err(_) => git_ok(workspace, &["worktree", "add", "-b", &branch, &target, &base]).await,
    };
    add.map_err(|why| format!("cannot make the task's worktree: {why}"))?;
    let record = WorktreeRecord { branch, path: target, base };
    Ok((record, path.join(inside)))
}

/// Removes a task's worktree (changes and untracked files with it) and its branch.
pub(crate) async fn discard(workspace: &Path, task_id: &str, worktree: &WorktreeRecord) -> Result<(), String> {
    let expected = path_of(workspace, task_id);
    if Path::new(&worktree.path) != expected {
        return Err(format!(
            "the task's worktree {} is not in this server's workspace (another instance's?)",
            worktree.path
        ));
    }
    if tokio::fs::symlink_metadata(&expected).await.is_ok() {
        if !is_worktree_at(&expected).await {
            return Err(format!("{} is no longer a worktree; it was left as it is", expected.display()));
        }
        let target = expected.to_string_lossy().into_owned();
        git_ok(workspace, &["worktree", "remove", "--force", &target])
            .await
            .map_err(|why| format!("cannot remove the task's worktree: {why}"))?;
    }
    let _ = git_ok(workspace, &["worktree", "prune"]).await;
    let reference = format!("refs/heads/{}", worktree.branch);
    if git_ok(workspace, &["rev-parse", "--verify", "--quiet", &reference]).await.is_ok() {
        git_ok(workspace, &["branch", "-D", &worktree.branch])
            .await
            .map_err(|why| format!("cannot delete the branch {}: {why}", worktree.branch))?;
    }
    Ok(())
}

/// What a worktree holds now, for a review.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Review {
    pub(crate) exists: bool,
    pub(crate) is_git_worktree: bool,
    pub(crate) head: Option<String>,
    pub(crate) uncommitted: bool,
    /// Commits on its branch since `base`.
    pub(crate) ahead: u64,
}

/// Reads a worktree's state: whether it is one, its `HEAD`, changes not committed (untracked
/// files too), and commits since `base`.
pub(crate) async fn review(worktree: &WorktreeRecord) -> Review {
    let path = Path::new(&worktree.path);
    let exists = tokio::fs::symlink_metadata(path).await.is_ok_and(|m| m.is_dir());
    if !exists || !is_worktree_at(path).await {
        return Review { exists, ..Review::default() };
    }
    let head = git_ok(path, &["rev-parse", "--verify", "HEAD"]).await.ok();
    // One line of `git status` is enough to know (the answer is cut there).
    let uncommitted = match git(path, &["status", "--porcelain", "--untracked-files=normal"], 256).await {
        Ok((out, _, 0)) => !out.trim().is_empty(),
        _ => false,
    };
    let range = format!("{}..HEAD", worktree.base);
    let ahead = git_ok(path, &["rev-list", "--count", &range]).await.ok().and_then(|n| n.parse().ok()).unwrap_or(0);
    Review { exists, is_git_worktree: true, head, uncommitted, ahead }
}

/// Whether `path` is a real folder (not a link) at the top of a Git worktree.
async fn is_worktree_at(path: &Path) -> bool {
    let real_folder = tokio::fs::symlink_metadata(path).await.is_ok_and(|m| m.is_dir());
    if !real_folder {
        return false;
    }
    match git_ok(path, &["rev-parse", "--show-toplevel"]).await {
        Ok(top) => same_folder(Path::new(&top), path).await,
        Err(_) => false,
    }
}

async fn same_folder(a: &Path, b: &Path) -> bool {
    match (tokio::fs::canonicalize(a).await, tokio::fs::canonicalize(b).await) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `workspace` relative to the top of its repository (empty: the workspace is the top).
fn relative_to(workspace: &Path, top: &Path) -> Result<PathBuf, String> {
    let real = workspace.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", workspace.display()))?;
    let top = top.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", top.display()))?;
    real.strip_prefix(&top)
        .map(Path::to_path_buf)
        .map_err(|_| format!("{} is not inside its repository {}", real.display(), top.display()))
}

/// The worktrees' folder: made with a `.gitignore` that hides it from the workspace's `git
/// status`; refused when it is a link or not a folder.
async fn make_folder(folder: &Path) -> Result<(), String> {
    match tokio::fs::symlink_metadata(folder).await {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => return Err(format!("{} is not a folder (a link?); worktree mode will not use it", folder.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(format!("cannot look at {}: {err}", folder.display())),
    }
    tokio::fs::create_dir(folder).await.map_err(|e| format!("cannot make {}: {e}", folder.display()))?;
    tokio::fs::write(folder.join(".gitignore"), "# Worktrees of appserver's automation tasks.\n*\n")
        .await
        .map_err(|e| format!("cannot write {}/.gitignore: {e}", folder.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_task_id() {
        assert_eq!(branch_of("weekly-1a2b"), "appserver/task-weekly-1a2b");
        assert_eq!(path_of(Path::new("/w"), "weekly-1a2b"), Path::new("/w/.appserver-worktrees/task-weekly-1a2b"));
    }

    #[test]
    fn a_workspace_inside_its_repository_keeps_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("pkg/app");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(relative_to(&sub, dir.path()).unwrap(), Path::new("pkg/app"));
        assert_eq!(relative_to(dir.path(), dir.path()).unwrap(), Path::new(""));
        assert!(relative_to(dir.path(), &sub).is_err());
    }
}
