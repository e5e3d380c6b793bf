//! The `update_plan` tool: the agent records its plan (title, overview, Markdown body, the
//! complete todo list); the server keeps the latest snapshot per thread and broadcasts
//! `plan/updated` (protocol section 6.8).

use appserver_protocol::{Plan, PlanTodo, PlanUpdatedParams, ServerNotification};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::domain::ports::BoxFuture;
use crate::domain::threads::broadcast;
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput};
use crate::infra::store::ThreadWrite;

pub(crate) const PRIORITIES: &[&str] = &["high", "medium", "low"];
pub(crate) const STATUSES: &[&str] = &["pending", "in_progress", "completed", "cancelled"];

#[derive(Debug)]
pub(crate) struct UpdatePlanTool;

#[derive(Deserialize)]
struct Args {
    title: String,
    #[serde(default)]
    overview: String,
    #[serde(default)]
    content: String,
    todos: Vec<TodoArg>,
}

#[derive(Deserialize)]
struct TodoArg {
    id: String,
    content: String,
    #[serde(default)]
    priority: Option<String>,
    status: String,
}

/// Checks and normalizes the arguments into a plan (priority defaults to `medium`).
pub(crate) fn parse_plan(arguments: Value) -> Result<Plan, String> {
    let args: Args = serde_json::from_value(arguments).map_err(|e| format!("invalid plan: {e}"))?;
    if args.title.trim().is_empty() {
        return Err("invalid plan: title must not be empty".into());
    }
    let mut todos = Vec::with_capacity(args.todos.len());
    for (i, todo) in args.todos.into_iter().enumerate() {
        let priority = todo.priority.unwrap_or_else(|| "medium".to_owned());
        if !PRIORITIES.contains(&priority.as_str()) {
            return Err(format!("invalid plan: todos[{i}].priority must be one of {}", PRIORITIES.join(", ")));
        }
        if !STATUSES.contains(&todo.status.as_str()) {
            return Err(format!("invalid plan: todos[{i}].status must be one of {}", STATUSES.join(", ")));
        }
        if todo.id.trim().is_empty() {
            return Err(format!("invalid plan: todos[{i}].id must not be empty"));
        }
        todos.push(PlanTodo { id: todo.id, content: todo.content, priority, status: todo.status });
    }
    Ok(Plan { title: args.title, overview: args.overview, content: args.content, todos })
}

impl Tool for UpdatePlanTool {
    fn name(&self) -> &str {
        "update_plan"
    }

    fn description(&self) -> &str {
        "Create or replace the plan of this conversation: a title, a short overview, a Markdown body, and the \
         complete todo list (each todo has an id, content, priority high|medium|low and status \
         pending|in_progress|completed|cancelled). Every call replaces the whole plan."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "title": { "type": "string" },
                "overview": { "type": "string" },
                "content": { "type": "string" },
                "todos": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "content": { "type": "string" },
                        "priority": { "enum": PRIORITIES },
                        "status": { "enum": STATUSES }
                    },
                    "required": ["id", "content", "status"]
                }}
            },
            "required": ["title", "todos"]
        })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let plan = match parse_plan(call.arguments.clone()) {
                Ok(plan) => plan,
                Err(message) => return ToolOutput::error(message),
            };
            let done = plan.todos.iter().filter(|t| t.status == "completed").count();
            let summary = format!("Plan \"{}\" saved: {} todos, {done} completed.", plan.title, plan.todos.len());
            match save_plan(&call, plan).await {
                Ok(()) => ToolOutput::ok(summary),
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

/// The thread's current plan, if it has one.
pub(crate) fn current_plan(call: &ToolCall<'_>) -> Option<Plan> {
    call.env.threads.loaded(call.thread_id).and_then(|handle| handle.state().plan.clone())
}

/// Saves a thread's plan (its latest snapshot, fenced by the thread's lease) and broadcasts
/// `plan/updated` with the complete snapshot.
pub(crate) async fn save_plan(call: &ToolCall<'_>, plan: Plan) -> Result<(), String> {
    let write = ThreadWrite::SavePlan { thread_id: call.thread_id.to_owned(), plan: plan.clone() };
    let written = match call.env.threads.loaded(call.thread_id) {
        Some(handle) => handle.fence.write(&call.env.store, write).await,
        None => call.env.store.write(write).await,
    };
    written.map_err(|err| format!("cannot save the plan: {err}"))?;
    let updated =
        ServerNotification::PlanUpdated(PlanUpdatedParams { thread_id: call.thread_id.to_owned(), plan: plan.clone() });
    match call.env.threads.loaded(call.thread_id) {
        Some(handle) => {
            handle.state().plan = Some(plan);
            handle.broadcast(call.env.clients.as_ref(), &updated);
        }
        None => broadcast(call.env.clients.as_ref(), &updated),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_validated_and_normalized() {
        let plan = parse_plan(json!({ "title": "T", "todos": [{ "id": "a", "content": "do", "status": "pending" }] }))
            .unwrap();
        assert_eq!(plan.todos[0].priority, "medium");
        assert!(
            parse_plan(json!({ "title": "T", "todos": [{ "id": "a", "content": "x", "status": "done" }] })).is_err()
        );
        assert!(parse_plan(json!({ "title": " ", "todos": [] })).is_err());
        assert!(parse_plan(json!({ "todos": [] })).is_err());
    }
}
