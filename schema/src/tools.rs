//! The agent tool table: every tool the server's agents call, with the roles allowed to call it
//! (`roles.rs`). The thread's own agent calls them in its turns; an outside agent calls the app
//! tools through the MCP server. The server registers no tool without a row here, and its MCP
//! server offers exactly the tools the outside agents' column allows.

use crate::roles::{Role, Roles};

/// One row of the tool table.
#[derive(Debug, Clone, Copy)]
pub struct ToolRow {
    /// The tool's name as the model sees it; a family in angle brackets (`<dynamic tool>`).
    pub name: &'static str,
    pub roles: Roles,
}

const AGENT: Roles = Roles::of(&[Role::Agent]);
const AGENT_AND_OUTSIDE: Roles = Roles::of(&[Role::Agent, Role::OutsideAgent]);

const fn row(name: &'static str, roles: Roles) -> ToolRow {
    ToolRow { name, roles }
}

/// Every agent tool, and who may call it.
pub const AGENT_TOOLS: &[ToolRow] = &[
    row("update_plan", AGENT),
    row("TodoWrite", AGENT),
    row("UpdateTodos", AGENT),
    row("CreatePlan", AGENT),
    row("Exec", AGENT),
    row("WriteStdin", AGENT),
    row("ReadFile", AGENT),
    row("WriteFile", AGENT),
    row("EditFile", AGENT),
    row("GrepFiles", AGENT),
    row("FindFiles", AGENT),
    row("app_list", AGENT_AND_OUTSIDE),
    row("app_query", AGENT_AND_OUTSIDE),
    row("app_command", AGENT_AND_OUTSIDE),
    row("app_discover", AGENT_AND_OUTSIDE),
    row("mcp_servers", AGENT),
    row("mcp_tool", AGENT),
    row("mcp_call", AGENT),
    row("mcp_tool_search", AGENT),
    row("<mcp tool>", AGENT),
    row("SkillView", AGENT),
    row("Cron", AGENT),
    row("SpawnAgent", AGENT),
    row("SendInput", AGENT),
    row("WaitAgent", AGENT),
    row("ResumeAgent", AGENT),
    row("CloseAgent", AGENT),
    row("debug_block", AGENT),
    row("debug_gated", AGENT),
    row("<dynamic tool>", AGENT),
    row("<channel tool>", AGENT),
];

/// The roles allowed to call the tool `name` (`None`: not in the table).
pub fn tool_roles(name: &str) -> Option<Roles> {
    AGENT_TOOLS.iter().find(|t| t.name == name).map(|t| t.roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_every_tool_is_the_agents() {
        for (i, tool) in AGENT_TOOLS.iter().enumerate() {
            assert!(AGENT_TOOLS[..i].iter().all(|t| t.name != tool.name), "{} twice", tool.name);
            assert!(tool.roles.allows(Role::Agent), "{}", tool.name);
        }
        assert_eq!(tool_roles("app_query"), Some(AGENT_AND_OUTSIDE));
        assert_eq!(tool_roles("nope"), None);
    }
}
