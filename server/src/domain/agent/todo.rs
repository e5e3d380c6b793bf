//! DotCraft's plan tools, so DotCraft's clients render the plan as theirs: `TodoWrite {todos,
//! merge?}` (replace the todo list, or merge into it by id), `UpdateTodos {updates}` (statuses by
//! id) and `CreatePlan {plan, todos}` (a Markdown plan: its H1 the title, its first paragraph the
//! overview). Each saves the thread's plan and sends `plan/updated` with the complete snapshot
//! (section 6.8), like `update_plan`.

use appserver_protocol::{Plan, PlanTodo};
use serde::Deserialize;
use serde_json::{Value, json};

use super::plan::{STATUSES, current_plan, save_plan};
use crate::domain::ports::BoxFuture;
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput};

/// The title of a plan that only `TodoWrite` made.
const TASK_TRACKING: &str = "Task Tracking";

#[derive(Deserialize)]
struct TodoInput {
    #[serde(default)]
    id: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    status: String,
}

/// `status` normalized (`""` when it is not a known status).
fn status(raw: &str) -> String {
    let s = raw.trim().to_lowercase();
    if STATUSES.contains(&s.as_str()) { s } else { String::new() }
}

fn todo(input: &TodoInput) -> PlanTodo {
    let status = status(&input.status);
    PlanTodo {
        id: input.id.trim().to_owned(),
        content: input.content.trim().to_owned(),
        priority: "medium".to_owned(),
        status: if status.is_empty() { "pending".to_owned() } else { status },
    }
}

/// `TodoWrite`'s result: the list replaced (`merge` false, or no plan yet) or merged by id.
fn todo_write(existing: Option<Plan>, todos: &[TodoInput], merge: bool) -> Result<Plan, String> {
    let valid: Vec<&TodoInput> =
        todos.iter().filter(|t| !t.id.trim().is_empty() && !t.content.trim().is_empty()).collect();
    if valid.is_empty() {
        return Err("Error: No valid todo items provided.".to_owned());
    }
    match existing {
        Some(mut plan) if merge => {
            for input in valid {
                match plan.todos.iter_mut().find(|t| t.id == input.id.trim()) {
                    Some(found) => {
                        found.content = input.content.trim().to_owned();
                        let status = status(&input.status);
                        if !status.is_empty() {
                            found.status = status;
                        }
                    }
                    None => plan.todos.push(todo(input)),
                }
            }
            Ok(plan)
        }
        existing => {
            let (title, overview, content) = match existing {
                Some(plan) => (plan.title, plan.overview, plan.content),
                None => (TASK_TRACKING.to_owned(), String::new(), String::new()),
            };
            Ok(Plan { title, overview, content, todos: valid.into_iter().map(todo).collect() })
        }
    }
}

macro_rules! plan_tool {
    ($tool:ident, $name:literal, $description:expr, $schema:expr, $apply:expr) => {
        #[derive(Debug)]
        pub(crate) struct $tool;

        impl Tool for $tool {
            fn name(&self) -> &str {
                $name
            }
            fn description(&self) -> &str {
                $description
            }
            fn input_schema(&self) -> Value {
                $schema
            }
            fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
                Box::pin(async move {
                    let apply: fn(Option<Plan>, Value) -> Result<Plan, String> = $apply;
                    let plan = match apply(current_plan(&call), call.arguments.clone()) {
                        Ok(plan) => plan,
                        Err(message) => return ToolOutput::error(message),
                    };
                    match save_plan(&call, plan).await {
                        Ok(()) => ToolOutput::ok("Plan updated"),
                        Err(message) => ToolOutput::error(format!("Error: {message}")),
                    }
                })
            }
        }
    };
}

fn todos_schema(with_status: bool) -> Value {
    let mut properties = json!({ "id": { "type": "string" }, "content": { "type": "string" } });
    let mut required = vec!["id", "content"];
    if with_status {
        properties["status"] = json!({ "enum": STATUSES });
        required.push("status");
    }
    json!({ "type": "array", "items": { "type": "object", "properties": properties, "required": required } })
}

plan_tool!(
    TodoWriteTool,
    "TodoWrite",
    "Create or update a structured task list for the current conversation, for complex multi-step work. \
     merge false (default) replaces the whole list; merge true updates items by id and adds new ones. Task \
     states: pending, in_progress, completed, cancelled. Mark a task completed as soon as it is done; only one \
     task in_progress at a time.",
    json!({
        "type": "object",
        "properties": {
            "todos": todos_schema(true),
            "merge": { "type": "boolean", "description": "When false (default), replace the entire todo list. When true, merge updates into the existing list by id." }
        },
        "required": ["todos"]
    }),
    |existing, arguments| {
        #[derive(Deserialize)]
        struct Args {
            todos: Vec<TodoInput>,
            #[serde(default)]
            merge: bool,
        }
        let args: Args = serde_json::from_value(arguments).map_err(|e| format!("Error: invalid arguments: {e}"))?;
        todo_write(existing, &args.todos, args.merge)
    }
);

plan_tool!(
    UpdateTodosTool,
    "UpdateTodos",
    "Update the status of one or more tasks of the current plan: mark them in_progress when you start and \
     completed when done.",
    json!({
        "type": "object",
        "properties": { "updates": { "type": "array", "items": {
            "type": "object",
            "properties": { "id": { "type": "string" }, "status": { "enum": STATUSES } },
            "required": ["id", "status"]
        }}},
        "required": ["updates"]
    }),
    |existing, arguments| {
        #[derive(Deserialize)]
        struct Args {
            updates: Vec<TodoInput>,
        }
        let args: Args = serde_json::from_value(arguments).map_err(|e| format!("Error: invalid arguments: {e}"))?;
        let mut plan = existing.ok_or("Error: No plan exists for this conversation yet.")?;
        if args.updates.is_empty() {
            return Err("Error: No updates provided.".to_owned());
        }
        for update in &args.updates {
            let status = status(&update.status);
            match plan.todos.iter_mut().find(|t| t.id == update.id.trim()) {
                Some(found) if !status.is_empty() => found.status = status,
                Some(_) => return Err(format!("Error: invalid status '{}' for {}", update.status, update.id)),
                None => return Err(format!("Error: no task {} in the plan", update.id)),
            }
        }
        Ok(plan)
    }
);

plan_tool!(
    CreatePlanTool,
    "CreatePlan",
    "Create or replace the structured plan of this conversation: one complete Markdown document (an H1 title, \
     then sections) and 3-7 high-level tasks (id, content).",
    json!({
        "type": "object",
        "properties": { "plan": { "type": "string" }, "todos": todos_schema(false) },
        "required": ["plan", "todos"]
    }),
    |_existing, arguments| {
        #[derive(Deserialize)]
        struct Args {
            plan: String,
            #[serde(default)]
            todos: Vec<TodoInput>,
        }
        let args: Args = serde_json::from_value(arguments).map_err(|e| format!("Error: invalid arguments: {e}"))?;
        if args.plan.trim().is_empty() {
            return Err("Error: CreatePlan.plan must contain the complete Markdown plan.".to_owned());
        }
        let (title, overview, content) = parse_markdown(&args.plan);
        let todos = args
            .todos
            .iter()
            .filter(|t| !t.id.trim().is_empty())
            .map(|t| PlanTodo { status: "pending".to_owned(), ..todo(t) });
        Ok(Plan { title, overview, content, todos: todos.collect() })
    }
);

/// A Markdown plan's title (its first H1, else its first line), overview (the first paragraph
/// after it) and content (the rest, without the title line).
pub(crate) fn parse_markdown(markdown: &str) -> (String, String, String) {
    let text = markdown.replace("\r\n", "\n");
    let lines: Vec<&str> = text.trim().lines().collect();
    let title_at = lines.iter().position(|l| l.trim_start().starts_with("# "));
    let title = match title_at {
        Some(i) => lines[i].trim_start().trim_start_matches('#').trim().to_owned(),
        None => lines.iter().find(|l| !l.trim().is_empty()).map_or("Plan".to_owned(), |l| l.trim().to_owned()),
    };
    let body: Vec<&str> = lines.iter().enumerate().filter(|(i, _)| Some(*i) != title_at).map(|(_, l)| *l).collect();
    let overview = body
        .iter()
        .skip_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        .take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ");
    (title, overview, body.join("\n").trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(id: &str, content: &str, status: &str) -> TodoInput {
        TodoInput { id: id.into(), content: content.into(), status: status.into() }
    }

    #[test]
    fn todo_write_replaces_or_merges() {
        let plan = todo_write(None, &[input("a", "A", "in_progress"), input("b", "B", "bogus")], false).unwrap();
        assert_eq!(plan.title, TASK_TRACKING);
        assert_eq!(plan.todos.iter().map(|t| t.status.as_str()).collect::<Vec<_>>(), ["in_progress", "pending"]);
        let merged =
            todo_write(Some(plan.clone()), &[input("a", "A", "completed"), input("c", "C", "")], true).unwrap();
        assert_eq!(merged.todos.len(), 3);
        assert_eq!(merged.todos[0].status, "completed");
        let replaced = todo_write(Some(plan), &[input("z", "Z", "pending")], false).unwrap();
        assert_eq!(replaced.todos.len(), 1);
        assert!(todo_write(None, &[input("", "x", "pending")], false).is_err());
    }

    #[test]
    fn markdown_plans_have_a_title_and_overview() {
        let (title, overview, content) = parse_markdown("# Ship it\n\nAdd the thing.\nQuickly.\n\n## Steps\n1. a");
        assert_eq!((title.as_str(), overview.as_str()), ("Ship it", "Add the thing. Quickly."));
        assert!(content.starts_with("Add the thing.") && content.ends_with("1. a"));
    }
}
