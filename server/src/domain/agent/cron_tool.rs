//! `Cron`: the agent schedules (lists, removes) jobs that run a prompt as a turn on the current
//! thread later or repeatedly (protocol section 16; DotCraft's agent tool of the same name).
//!
//! A job is a standing order: it runs turns long after the user stopped watching, and survives
//! restarts. So adding one is gated like a command (docs/security.md, "Settings that loosen
//! safety"): the user is asked with the job's name, schedule and prompt in front of them, and a
//! declined job is not stored. The consent covers that very job (its scope key is a digest of
//! name, schedule and prompt), never "any job". The agent sees and removes only its thread's jobs.

use std::sync::{Arc, OnceLock};

use appserver_protocol::CronSchedule;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::cron::CronService;
use crate::domain::policy::ApprovalSpec;
use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolEnv, ToolOutput};

/// Longest part of the prompt shown in the approval's reason.
const SHOWN_PROMPT: usize = 2000;

/// The tool; the service is set once the server is assembled (it runs turns, which use tools).
#[derive(Debug, Default)]
pub(crate) struct CronTool {
    pub(crate) service: Arc<OnceLock<Arc<CronService>>>,
}

fn text(args: &Value, key: &str) -> String {
    args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// `s` cut at `max` characters, with an ellipsis when cut.
fn cut(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// What adding the job in `args` asks: the schedule and the prompt, shown; scope key
/// `cron:add:<digest of name, schedule and prompt>`.
pub(crate) fn add_spec(args: &Value, workspace: &str) -> ApprovalSpec {
    let (name, message) = (text(args, "name"), text(args, "message"));
    let schedule = args.get("schedule").map(Value::to_string).unwrap_or_else(|| "(none)".into());
    let once = if args.get("deleteAfterRun").and_then(Value::as_bool) == Some(true) { ", once" } else { "" };
    let rendered = cut(&format!("cron add \"{name}\" {schedule}{once}: {message}"), 300);
    let mut spec = ApprovalSpec::new("shell", &rendered, workspace, "");
    let digest = Sha256::digest(format!("{name}\n{schedule}\n{once}\n{message}").as_bytes());
    spec.scope_key = format!("cron:add:{}", digest.iter().take(8).map(|b| format!("{b:02x}")).collect::<String>());
    spec.reason = format!(
        "The agent wants to schedule the job `{name}` on the schedule {schedule}{once}: each run submits this prompt \
         as a turn of this thread, also after a restart, until the job is removed:\n{}",
        cut(&message, SHOWN_PROMPT)
    );
    spec
}

impl Tool for CronTool {
    fn name(&self) -> &str {
        "Cron"
    }

    fn description(&self) -> &str {
        "Schedule a prompt to run later or repeatedly as a turn in this conversation. action `add` needs name, \
         message and schedule ({kind: every, everyMs} | {kind: at, atMs (Unix ms)} | {kind: daily, dailyHour, \
         dailyMinute} | {kind: cron, expr (five fields)}; daily and cron take an optional tz, an IANA time zone, \
         default UTC), optional deleteAfterRun; the user approves each job. `list` shows this conversation's \
         jobs; `remove` needs jobId. A job made in a chat also sends each result to that chat."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": {
            "action": { "enum": ["add", "list", "remove"] },
            "name": { "type": "string" },
            "message": { "type": "string" },
            "schedule": { "type": "object" },
            "deleteAfterRun": { "type": "boolean" },
            "jobId": { "type": "string" }
        }, "required": ["action"] })
    }

    /// Adding a job is asked; listing and removing this thread's jobs are not.
    fn approval(&self, arguments: &Value, env: &ToolEnv) -> Option<ApprovalSpec> {
        (arguments.get("action").and_then(Value::as_str) == Some("add"))
            .then(|| add_spec(arguments, &env.apps.config.workspace.display().to_string()))
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(service) = self.service.get() else { return ToolOutput::error("cron is not available") };
            let args = &call.arguments;
            let done = match args.get("action").and_then(Value::as_str) {
                Some("add") => {
                    let schedule: CronSchedule = match serde_json::from_value(args["schedule"].clone()) {
                        Ok(schedule) => schedule,
                        Err(err) => return ToolOutput::error(format!("schedule: {err}")),
                    };
                    let once = args.get("deleteAfterRun").and_then(Value::as_bool).unwrap_or(false);
                    let delivery = service.delivery_for(call.thread_id, call.turn_id).await;
                    let (name, message) = (text(args, "name"), text(args, "message"));
                    let added = service.add(&name, &message, call.thread_id, schedule, once, delivery).await;
                    added.map(|job| json!({ "added": job }))
                }
                Some("list") => service.list_of_thread(call.thread_id).await.map(|jobs| json!({ "jobs": jobs })),
                Some("remove") => {
                    let removed = service.remove_of_thread(&text(args, "jobId"), call.thread_id).await;
                    removed.map(|()| json!({ "removed": true }))
                }
                _ => return ToolOutput::error("action: add, list or remove"),
            };
            match done {
                Ok(value) => ToolOutput::json(&value),
                Err(err) => ToolOutput::error(err.to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approval_shows_the_schedule_and_the_prompt_and_covers_that_job_only() {
        let args = json!({ "action": "add", "name": "ping", "message": "say hi to everyone",
            "schedule": { "kind": "every", "everyMs": 1000 } });
        let spec = add_spec(&args, "/w");
        assert!(spec.operation.contains("{\"everyMs\":1000,\"kind\":\"every\"}") || spec.operation.contains("everyMs"));
        assert!(spec.operation.contains("say hi to everyone") && spec.reason.contains("say hi to everyone"));
        assert!(spec.reason.contains("`ping`") && spec.scope_key.starts_with("cron:add:"));
        assert!(!spec.read_only && spec.kind == "shell");
        let other = json!({ "action": "add", "name": "ping", "message": "say hi to everyone",
            "schedule": { "kind": "every", "everyMs": 1 } });
        assert_ne!(add_spec(&other, "/w").scope_key, spec.scope_key, "another schedule is another consent");
    }
}
