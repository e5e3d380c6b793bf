//! The built-in task templates `automation/template/list` starts with: their ids are reserved
//! (a user template may not take one), and each carries a complete `workflow.md`.

use appserver_protocol::{AutomationSchedule, AutomationTemplate};

const WEEKLY_REPORT: &str = "\
---
max_turns: 20
---

# Weekly activity report

You are preparing a short report of the work done in this workspace during the last seven days.

1. Run `git log --since=\"7 days ago\" --no-merges --pretty=format:'%h %an %s'` to list the commits.
   If the workspace is not a Git repository, say so and stop.
2. Group the commits by area (the top-level folder they touch, or their subject's prefix).
3. For each area, write two or three sentences: what changed and why it matters.
4. List anything that looks unfinished: commits that mention TODO, WIP, revert or fixup.
5. End with the three most useful things to do next week, each one line.

Keep the report under 400 words. Do not change any file.
";

const DEPENDENCY_AUDIT: &str = "\
---
max_turns: 20
---

# Dependency audit

Review the third-party dependencies this workspace declares.

1. Find the manifests: `Cargo.toml`, `package.json`, `pyproject.toml`, `requirements*.txt`, `go.mod`.
2. For each dependency, note the version constraint. Flag any that are pinned to a pre-release,
   point at a Git branch or a local path, or are declared more than once with different versions.
3. Where a lock file exists, compare it with the manifest and flag entries the manifest no longer
   names.
4. Report the findings as a table: manifest, dependency, constraint, concern.

Do not upgrade, install or remove anything; this task only reports.
";

const TODO_SWEEP: &str = "\
---
max_turns: 15
---

# TODO sweep

Collect the open TODO, FIXME and XXX comments of this workspace.

1. Search the tracked source files for `TODO`, `FIXME` and `XXX` (skip vendored and generated
   folders such as `node_modules`, `target`, `dist` and `.git`).
2. For each hit, record the file, the line and the comment's text.
3. Sort them by file and mark the ones that name a person, an issue number or a date.
4. Summarize: how many there are, which files have the most, and the five that look most urgent.

Do not edit any file.
";

const THREAD_FOLLOW_UP: &str = "\
# Follow up in this conversation

Read the latest messages of this conversation. If a question asked of you is still unanswered,
or a task you agreed to do is unfinished, continue it now and say what you did. If nothing is
pending, reply with one line saying so.
";

fn template(id: &str, title: &str, description: &str, icon: &str, workflow: &str) -> AutomationTemplate {
    AutomationTemplate {
        id: id.to_owned(),
        title: title.to_owned(),
        description: Some(description.to_owned()),
        icon: Some(icon.to_owned()),
        category: Some("general".to_owned()),
        workflow_markdown: workflow.to_owned(),
        default_workspace_mode: Some("project".to_owned()),
        default_approval_policy: Some("workspaceScope".to_owned()),
        default_title: Some(title.to_owned()),
        default_description: Some(description.to_owned()),
        ..AutomationTemplate::default()
    }
}

fn weekly(day_hour: u32) -> AutomationSchedule {
    AutomationSchedule {
        kind: "cron".to_owned(),
        expr: Some(format!("0 {day_hour} * * 1")),
        ..AutomationSchedule::default()
    }
}

/// The built-in templates, in the picker's order.
pub(crate) fn templates() -> Vec<AutomationTemplate> {
    vec![
        AutomationTemplate {
            default_schedule: Some(weekly(9)),
            ..template(
                "weekly-report",
                "Weekly activity report",
                "Summarize the last seven days of commits, by area, with next steps.",
                "calendar",
                WEEKLY_REPORT,
            )
        },
        template(
            "dependency-audit",
            "Dependency audit",
            "Report risky or inconsistent dependency declarations without changing them.",
            "package",
            DEPENDENCY_AUDIT,
        ),
        AutomationTemplate {
            default_schedule: Some(AutomationSchedule {
                kind: "daily".to_owned(),
                daily_hour: Some(17),
                daily_minute: Some(0),
                ..AutomationSchedule::default()
            }),
            ..template("todo-sweep", "TODO sweep", "List the open TODO and FIXME comments.", "list-checks", TODO_SWEEP)
        },
        AutomationTemplate {
            needs_thread_binding: Some(true),
            ..template(
                "thread-follow-up",
                "Follow up in a conversation",
                "Continue whatever is still pending in a bound conversation.",
                "message-circle",
                THREAD_FOLLOW_UP,
            )
        },
    ]
}

/// Whether `id` is a built-in template's (case-insensitively, so no user template shadows one
/// on a case-insensitive file system).
pub(crate) fn is_builtin(id: &str) -> bool {
    templates().iter().any(|t| t.id.eq_ignore_ascii_case(id))
}
