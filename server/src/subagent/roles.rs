//! Sub-agent roles (Session Core 4.1.1.2): `agentRole` selects a child's tools. `default` has
//! every tool but `SpawnAgent`; `explorer` only reads (files, skills, apps, plans) and its
//! commands run read-only; `worker` has every tool, `SpawnAgent` included while the depth limit
//! allows. A child's role is kept in its configuration's `toolProfile` as `subagent-<role>`.

/// The spawn tool's name (DotCraft's).
pub const SPAWN_TOOL: &str = "SpawnAgent";
/// The built-in roles; the first is used when none is given.
pub const ROLES: &[&str] = &["default", "worker", "explorer"];
/// What `explorer` may call.
const READ_ONLY_TOOLS: &[&str] = &[
    "ReadFile",
    "GrepFiles",
    "FindFiles",
    "SkillView",
    "app_list",
    "app_query",
    "update_plan",
    "TodoWrite",
    "UpdateTodos",
];
const PREFIX: &str = "subagent-";

/// The `toolProfile` that marks a child of `role`.
pub fn tool_profile(role: &str) -> String {
    format!("{PREFIX}{role}")
}

/// The role of a thread with this `toolProfile`, if it is a sub-agent's.
pub fn role_of(tool_profile: Option<&str>) -> Option<&str> {
    tool_profile?.strip_prefix(PREFIX).filter(|r| ROLES.contains(r))
}

/// Whether a thread with this `toolProfile` may call `tool` (the depth limit is the spawn tool's
/// own check).
pub fn allows(tool_profile: Option<&str>, tool: &str) -> bool {
    match role_of(tool_profile) {
        None | Some("worker") => true,
        Some("explorer") => READ_ONLY_TOOLS.contains(&tool),
        Some(_) => tool != SPAWN_TOOL,
    }
}

/// The sandbox mode a role imposes on its commands, if any.
pub fn sandbox_mode(role: &str) -> Option<&'static str> {
    (role == "explorer").then_some("readOnly")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_decide_tools() {
        let (default, explorer, worker) = (tool_profile("default"), tool_profile("explorer"), tool_profile("worker"));
        assert!(allows(None, SPAWN_TOOL) && allows(Some("custom"), "Exec"));
        assert!(!allows(Some(&default), SPAWN_TOOL) && allows(Some(&default), "Exec"));
        assert!(allows(Some(&explorer), "ReadFile") && !allows(Some(&explorer), "Exec"));
        assert!(!allows(Some(&explorer), SPAWN_TOOL) && !allows(Some(&explorer), "WriteFile"));
        assert!(allows(Some(&worker), SPAWN_TOOL) && allows(Some(&worker), "Exec"));
        assert_eq!(role_of(Some("subagent-nope")), None);
        assert_eq!(sandbox_mode("explorer"), Some("readOnly"));
    }
}
