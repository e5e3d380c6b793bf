//! `workspace/config/update` and `workspace/config/schema` (protocol section 25) over
//! `.appserver/config.toml`: which TOML key each wire field writes, the regions a change
//! announces, and when each key takes effect.

use appserver_protocol::{ConfigFieldSchema, ConfigSectionSchema, ReloadBehavior, WorkspaceConfigValues};
use toml_edit::{DocumentMut, Item, Value};

use super::WorkspaceError;
use crate::policy::ApprovalPolicy;

/// Sets (or, with `None`, removes) `[table] key`, keeping the comments around it; a table left
/// empty is removed.
pub fn set_leaf(doc: &mut DocumentMut, table: &str, key: &str, value: Option<Value>) -> Result<(), WorkspaceError> {
    match value {
        Some(mut value) => {
            let item = doc.entry(table).or_insert_with(toml_edit::table);
            let table_like = item
                .as_table_like_mut()
                .ok_or_else(|| WorkspaceError::InvalidParams(format!("`{table}` in the config file is not a table")))?;
            // Replaced in place, so the key keeps its comments and the value its trailing one.
            match table_like.get_mut(key) {
                Some(slot) if slot.is_value() => {
                    if let Some(old) = slot.as_value() {
                        *value.decor_mut() = old.decor().clone();
                    }
                    *slot = Item::Value(value);
                }
                _ => {
                    table_like.insert(key, Item::Value(value));
                }
            }
        }
        None => {
            let Some(table_like) = doc.get_mut(table).and_then(Item::as_table_like_mut) else { return Ok(()) };
            table_like.remove(key);
            if table_like.is_empty() {
                doc.remove(table);
            }
        }
    }
    Ok(())
}

/// A string that is blank (or one of `blank_words`) means "remove".
fn text_or_remove(value: &Option<String>, blank_words: &[&str]) -> Option<String> {
    let text = value.as_deref()?.trim();
    if text.is_empty() || blank_words.iter().any(|w| w.eq_ignore_ascii_case(text)) {
        None
    } else {
        Some(text.to_owned())
    }
}

/// The update applied to `doc`: what the result echoes, and the regions it touched.
pub fn apply(
    doc: &mut DocumentMut,
    u: &WorkspaceConfigValues,
) -> Result<(WorkspaceConfigValues, Vec<String>), WorkspaceError> {
    let mut echo = WorkspaceConfigValues::default();
    let mut regions = Vec::new();
    if let Some(model) = &u.model {
        let model = text_or_remove(model, &["Default"]);
        set_leaf(doc, "model", "model", model.clone().map(Value::from))?;
        echo.model = Some(model);
        regions.push("workspace.model");
    }
    if let Some(key) = &u.api_key {
        let key = text_or_remove(key, &[]);
        set_leaf(doc, "model", "api_key", key.clone().map(Value::from))?;
        echo.api_key = Some(key);
        regions.push("workspace.apiKey");
    }
    if let Some(end_point) = &u.end_point {
        let end_point = text_or_remove(end_point, &[]);
        if let Some(url) = &end_point
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(WorkspaceError::InvalidParams(format!("endPoint: `{url}` is not an http(s) URL")));
        }
        set_leaf(doc, "model", "base_url", end_point.clone().map(Value::from))?;
        echo.end_point = Some(end_point);
        regions.push("workspace.endpoint");
    }
    let flags = [
        (&u.welcome_suggestions_enabled, "welcome", "suggestions_enabled", "welcomeSuggestions"),
        (&u.skills_self_learning_enabled, "skills", "self_learning_enabled", "skills"),
        (&u.memory_auto_consolidate_enabled, "memory", "auto_consolidate_enabled", "memory"),
    ];
    for (flag, table, key, region) in flags {
        if let Some(flag) = flag {
            set_leaf(doc, table, key, flag.map(Value::from))?;
            regions.push(region);
        }
    }
    echo.welcome_suggestions_enabled = u.welcome_suggestions_enabled;
    echo.skills_self_learning_enabled = u.skills_self_learning_enabled;
    echo.memory_auto_consolidate_enabled = u.memory_auto_consolidate_enabled;
    if let Some(policy) = &u.default_approval_policy {
        let written = text_or_remove(policy, &["default"]);
        if let Some(name) = &written
            && ApprovalPolicy::parse(name).is_none()
        {
            return Err(WorkspaceError::InvalidParams(format!(
                "defaultApprovalPolicy: `{name}` is not one of default, autoApprove, onRequest, untrusted, never, interrupt"
            )));
        }
        set_leaf(doc, "approvals", "policy", written.map(Value::from))?;
        echo.default_approval_policy = Some(policy.as_deref().map(str::trim).map(str::to_owned));
        regions.push("workspace.defaultApprovalPolicy");
    }
    if regions.is_empty() {
        return Err(WorkspaceError::InvalidParams(
            "at least one of model, apiKey, endPoint, welcomeSuggestionsEnabled, skillsSelfLearningEnabled, \
             memoryAutoConsolidateEnabled or defaultApprovalPolicy must be provided"
                .into(),
        ));
    }
    Ok((echo, regions.into_iter().map(str::to_owned).collect()))
}

/// Whether personalized welcome suggestions are on (`[welcome] suggestions_enabled`, default on).
pub fn welcome_suggestions_enabled(doc: &DocumentMut) -> bool {
    doc.get("welcome").and_then(|t| t.get("suggestions_enabled")).and_then(Item::as_bool).unwrap_or(true)
}

fn field(key: &str, kind: &str, reload: ReloadBehavior, update_field: Option<&str>) -> ConfigFieldSchema {
    ConfigFieldSchema {
        key: key.to_owned(),
        kind: kind.to_owned(),
        sensitive: kind == "password",
        reload,
        subsystem_key: None,
        values: Vec::new(),
        update_field: update_field.map(str::to_owned),
    }
}

/// The schema of the config file: every section and field, and when a change takes effect.
pub fn schema() -> Vec<ConfigSectionSchema> {
    use ReloadBehavior::{Hot, ProcessRestart as Restart};
    let section = |order: u32, name: &str, path: &str, fields: Vec<ConfigFieldSchema>| ConfigSectionSchema {
        section: name.to_owned(),
        order,
        path: Some(path.to_owned()),
        fields,
    };
    let mut policy = field("policy", "enum", Restart, Some("defaultApprovalPolicy"));
    policy.values = ["autoApprove", "onRequest", "untrusted", "never", "interrupt"].map(str::to_owned).to_vec();
    let mut sandbox = field("sandbox_mode", "enum", Restart, None);
    sandbox.values = ["readOnly", "workspaceWrite", "fullAccess"].map(str::to_owned).to_vec();
    vec![
        section(
            0,
            "Model",
            "model",
            vec![
                field("model", "string", Restart, Some("model")),
                field("base_url", "string", Restart, Some("endPoint")),
                field("api_key", "password", Restart, Some("apiKey")),
                field("api_key_env", "string", Restart, None),
                field("max_steps", "integer", Restart, None),
                field("max_retries", "integer", Restart, None),
                field("idle_timeout_ms", "integer", Restart, None),
                field("instructions", "string", Restart, None),
            ],
        ),
        section(
            1,
            "Approvals",
            "approvals",
            vec![
                policy,
                field("timeout_ms", "integer", Restart, None),
                field("approver_channels", "stringList", Restart, None),
            ],
        ),
        section(
            2,
            "Welcome",
            "welcome",
            vec![field("suggestions_enabled", "boolean", Hot, Some("welcomeSuggestionsEnabled"))],
        ),
        section(
            3,
            "Skills",
            "skills",
            vec![field("self_learning_enabled", "boolean", Restart, Some("skillsSelfLearningEnabled"))],
        ),
        section(
            4,
            "Memory",
            "memory",
            vec![field("auto_consolidate_enabled", "boolean", Restart, Some("memoryAutoConsolidateEnabled"))],
        ),
        section(
            5,
            "External channels",
            "external_channels",
            vec![
                field("enabled", "boolean", Hot, None),
                field("transport", "enum", Hot, None),
                field("command", "string", Hot, None),
                field("args", "stringList", Hot, None),
                field("working_directory", "string", Hot, None),
                field("env", "table", Hot, None),
            ],
        ),
        section(
            6,
            "Shell",
            "shell",
            vec![
                sandbox,
                field("timeout_ms", "integer", Restart, None),
                field("hidden_env", "stringList", Restart, None),
            ],
        ),
        section(7, "Store", "store", vec![field("durability", "enum", Restart, None)]),
        section(
            8,
            "Apps",
            "apps",
            vec![
                field("max_windows", "integer", Restart, None),
                field("max_windows_per_connection", "integer", Restart, None),
                field("forget_after_ms", "integer", Restart, None),
            ],
        ),
        section(
            9,
            "Server",
            "server",
            vec![
                field("allowed_hosts", "stringList", Restart, None),
                field("mcp_idle_timeout_ms", "integer", Restart, None),
            ],
        ),
        section(
            10,
            "Cluster",
            "cluster",
            vec![
                field("url", "string", Restart, None),
                field("namespace", "string", Restart, None),
                field("lease_ttl_seconds", "integer", Restart, None),
                field("tls_ca_file", "string", Restart, None),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(json: &str) -> WorkspaceConfigValues {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn fields_map_to_keys_and_null_removes_and_prunes() {
        let mut doc: DocumentMut = "# top\n[model]\n# which\nmodel = \"a\" # why\n".parse().unwrap();
        let (echo, regions) = apply(
            &mut doc,
            &update(r#"{"model":"b","welcomeSuggestionsEnabled":false,"defaultApprovalPolicy":"autoApprove"}"#),
        )
        .unwrap();
        assert_eq!(regions, ["workspace.model", "welcomeSuggestions", "workspace.defaultApprovalPolicy"]);
        assert_eq!(serde_json::to_value(&echo).unwrap()["model"], "b");
        let text = doc.to_string();
        assert!(text.contains("# which\nmodel = \"b\" # why") && text.contains("# top"), "{text}");
        assert!(!welcome_suggestions_enabled(&doc));
        let (echo, _) = apply(&mut doc, &update(r#"{"model":"Default","welcomeSuggestionsEnabled":null}"#)).unwrap();
        assert_eq!(
            serde_json::to_value(&echo).unwrap(),
            serde_json::json!({ "model": null, "welcomeSuggestionsEnabled": null })
        );
        assert!(!doc.to_string().contains("[model]") && !doc.to_string().contains("[welcome]"), "{doc}");
        assert!(apply(&mut doc, &update("{}")).is_err());
        assert!(apply(&mut doc, &update(r#"{"defaultApprovalPolicy":"yolo"}"#)).is_err());
        assert!(apply(&mut doc, &update(r#"{"endPoint":"file:///etc"}"#)).is_err());
    }
}
