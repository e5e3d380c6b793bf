//! `workspace/config/update` and `workspace/config/schema` (protocol section 25) over
//! `.appserver/config.toml`: which TOML key each wire field writes, the regions a change
//! announces, and when each key takes effect.

use appserver_protocol::{ConfigFieldSchema, ConfigSectionSchema, ReloadBehavior, WorkspaceConfigValues};
use toml_edit::{DocumentMut, Item, Value};

use super::WorkspaceError;
use crate::domain::policy::ApprovalPolicy;

/// Sets (or, with `None`, removes) `[table] key`, keeping the comments around it; a table left
/// empty is removed.
pub(crate) fn set_leaf(
    doc: &mut DocumentMut,
    table: &str,
    key: &str,
    value: Option<Value>,
) -> Result<(), WorkspaceError> {
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
pub(crate) fn apply(
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
pub(crate) fn welcome_suggestions_enabled(doc: &DocumentMut) -> bool {
    doc.get("welcome").and_then(|t| t.get("suggestions_enabled")).and_then(Item::as_bool).unwrap_or(true)
}

/// One key of the schema: (key, type, takes effect at once, the update field that writes it).
type FieldRow = (&'static str, &'static str, bool, Option<&'static str>);

/// Every table of the config file and its keys.
const SECTIONS: &[(&str, &str, &[FieldRow])] = &[
    (
        "Model",
        "model",
        &[
            ("model", "string", false, Some("model")),
            ("base_url", "string", false, Some("endPoint")),
            ("api_key", "password", false, Some("apiKey")),
            ("api_key_env", "string", false, None),
            ("max_steps", "integer", false, None),
            ("max_retries", "integer", false, None),
            ("idle_timeout_ms", "integer", false, None),
            ("instructions", "string", false, None),
        ],
    ),
    (
        "Approvals",
        "approvals",
        &[
            ("policy", "enum", false, Some("defaultApprovalPolicy")),
            ("timeout_ms", "integer", false, None),
            ("approver_channels", "stringList", false, None),
        ],
    ),
    ("Welcome", "welcome", &[("suggestions_enabled", "boolean", true, Some("welcomeSuggestionsEnabled"))]),
    (
        "Skills",
        "skills",
        &[
            ("self_learning_enabled", "boolean", false, Some("skillsSelfLearningEnabled")),
            ("disabled", "stringList", true, None),
        ],
    ),
    ("Memory", "memory", &[("auto_consolidate_enabled", "boolean", false, Some("memoryAutoConsolidateEnabled"))]),
    (
        "External channels",
        "external_channels",
        &[
            ("enabled", "boolean", true, None),
            ("transport", "enum", true, None),
            ("command", "string", true, None),
            ("args", "stringList", true, None),
            ("working_directory", "string", true, None),
            ("env", "table", true, None),
        ],
    ),
    (
        "Shell",
        "shell",
        &[
            ("sandbox_mode", "enum", false, None),
            ("timeout_ms", "integer", false, None),
            ("hidden_env", "stringList", false, None),
        ],
    ),
    ("Store", "store", &[("durability", "enum", false, None)]),
    (
        "Apps",
        "apps",
        &[
            ("max_windows", "integer", false, None),
            ("max_windows_per_connection", "integer", false, None),
            ("forget_after_ms", "integer", false, None),
        ],
    ),
    (
        "Server",
        "server",
        &[("allowed_hosts", "stringList", false, None), ("mcp_idle_timeout_ms", "integer", false, None)],
    ),
    (
        "Cluster",
        "cluster",
        &[
            ("url", "string", false, None),
            ("namespace", "string", false, None),
            ("lease_ttl_seconds", "integer", false, None),
            ("tls_ca_file", "string", false, None),
        ],
    ),
];

/// The allowed values of an `enum` key.
fn values(path: &str, key: &str) -> Vec<String> {
    let list: &[&str] = match (path, key) {
        ("approvals", "policy") => &["autoApprove", "onRequest", "untrusted", "never", "interrupt"],
        ("shell", "sandbox_mode") => &["readOnly", "workspaceWrite", "fullAccess"],
        ("store", "durability") => &["normal", "full"],
        ("external_channels", "transport") => &["subprocess", "websocket"],
        _ => &[],
    };
    list.iter().map(|v| (*v).to_owned()).collect()
}

/// The schema of the config file: every section and field, and when a change takes effect.
pub(crate) fn schema() -> Vec<ConfigSectionSchema> {
    SECTIONS
        .iter()
        .zip(0u32..)
        .map(|((name, path, fields), order)| ConfigSectionSchema {
            section: (*name).to_owned(),
            order,
            path: Some((*path).to_owned()),
            fields: fields
                .iter()
                .map(|(key, kind, hot, update)| ConfigFieldSchema {
                    key: (*key).to_owned(),
                    kind: (*kind).to_owned(),
                    sensitive: *kind == "password",
                    reload: if *hot { ReloadBehavior::Hot } else { ReloadBehavior::ProcessRestart },
                    subsystem_key: None,
                    values: values(path, key),
                    update_field: update.map(str::to_owned),
                })
                .collect(),
        })
        .collect()
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
