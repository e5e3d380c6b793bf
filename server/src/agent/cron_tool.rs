//! `Cron`: the agent schedules (lists, removes) jobs that run a prompt as a turn on the current
//! thread later or repeatedly (protocol section 16; DotCraft's agent tool of the same name).

use std::sync::{Arc, OnceLock};

use appserver_protocol::CronSchedule;
use serde_json::{Value, json};

use crate::cron::CronService;
use crate::ports::BoxFuture;
use crate::turns::tools::{Tool, ToolCall, ToolOutput};

/// The tool; the service is set once the server is assembled (it runs turns, which use tools).
#[derive(Debug, Default)]
pub(crate) struct CronTool {
    pub(crate) service: Arc<OnceLock<Arc<CronService>>>,
}

impl Tool for CronTool {
    fn name(&self) -> &str {
        "Cron"
    }

    fn description(&self) -> &str {
        "Schedule a prompt to run later or repeatedly as a turn in this conversation. action `add` needs name, \
         message and schedule ({kind: every, everyMs} | {kind: at, atMs (Unix ms)} | {kind: daily, dailyHour, \
         dailyMinute} | {kind: cron, expr (five fields)}; daily and cron take an optional tz, an IANA time zone, \
         default UTC), optional deleteAfterRun; `list` shows the jobs; `remove` needs jobId. A job made in a chat \
         also sends each result to that chat."
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

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(service) = self.service.get() else { return ToolOutput::error("cron is not available") };
            let args = &call.arguments;
            let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            let done = match args.get("action").and_then(Value::as_str) {
                Some("add") => {
                    let schedule: CronSchedule = match serde_json::from_value(args["schedule"].clone()) {
                        Ok(schedule) => schedule,
                        Err(err) => return ToolOutput::error(format!("schedule: {err}")),
                    };
                    let once = args.get("deleteAfterRun").and_then(Value::as_bool).unwrap_or(false);
                    let delivery = service.delivery_for(call.thread_id, call.turn_id).await;
                    let (name, message) = (text("name"), text("message"));
                    let added = service.add(&name, &message, call.thread_id, schedule, once, delivery).await;
                    added.map(|job| json!({ "added": job }))
                }
                Some("list") => service.list(true).await.map(|jobs| json!({ "jobs": jobs })),
                Some("remove") => service.remove(&text("jobId")).await.map(|()| json!({ "removed": true })),
                _ => return ToolOutput::error("action: add, list or remove"),
            };
            match done {
                Ok(value) => ToolOutput::json(&value),
                Err(err) => ToolOutput::error(err.to_string()),
            }
        })
    }
}
