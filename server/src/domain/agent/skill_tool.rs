//! `SkillView`: the agent loads one skill's instructions (its `SKILL.md` without frontmatter) by
//! name, on demand — the agent's instructions list only the names and descriptions.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::domain::ports::BoxFuture;
use crate::domain::skills::SkillCatalog;
use crate::domain::turns::tools::{Tool, ToolCall, ToolOutput};

#[derive(Debug)]
pub(crate) struct SkillViewTool {
    pub(crate) skills: Arc<SkillCatalog>,
}

impl Tool for SkillViewTool {
    fn name(&self) -> &str {
        "SkillView"
    }

    fn description(&self) -> &str {
        "Load the instructions of one of the skills listed in your instructions, by its name."
    }

    fn input_schema(&self) -> Value {
        json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] })
    }

    fn run<'a>(&'a self, call: ToolCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(name) = call.arguments.get("name").and_then(Value::as_str) else {
                return ToolOutput::error("SkillView needs the skill's `name`");
            };
            match self.skills.find(name).await {
                Ok(skill) if !skill.enabled => ToolOutput::error(format!("the skill `{name}` is disabled")),
                Ok(skill) => ToolOutput::ok(skill.body().to_owned()),
                Err(err) => ToolOutput::error(err.to_string()),
            }
        })
    }
}
