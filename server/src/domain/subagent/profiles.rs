//! Sub-agent profiles and settings (protocol section 24) in the workspace's config file: the
//! built-in `native` profile, workspace profiles and overrides as `[subagent_profiles.<name>]`
//! (each a definition in its wire shape), and `[subagent]` (`model`,
//! `external_cli_session_resume_enabled`, `disabled_profiles`, `max_depth`, `max_concurrent`).
//! Pure edits of the document; the handlers write it through `ConfigFile::edit`.

use std::collections::BTreeMap;
use std::path::Path;

use appserver_protocol::{SubAgentProfileDiagnostic, SubAgentProfileEntry, SubAgentProfileWrite, SubAgentSettings};
use serde_json::Value as Json;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::SubAgentError;
use crate::infra::config::{FileConfig, FileSubAgent};

/// The config file's table of profiles and of settings.
pub(crate) const PROFILES_TABLE: &str = "subagent_profiles";
pub(crate) const SETTINGS_TABLE: &str = "subagent";
/// The built-in profile: a child thread run by this server's agent. Protected.
pub(crate) const NATIVE: &str = "native";
/// The runtime of [`NATIVE`]; the only one this server runs.
pub(crate) const NATIVE_RUNTIME: &str = "native";
/// An external command run once per task (DotCraft's CLI profiles); stored and listed, not run here.
pub(crate) const CLI_ONESHOT_RUNTIME: &str = "cli-oneshot";
/// Most workspace profiles, and the longest value or list in one.
pub(crate) const MAX_PROFILES: usize = 64;
const MAX_TEXT: usize = 4096;
const MAX_LIST: usize = 64;
/// Defaults of the depth limit (a root's children are depth 1) and of children running at once.
pub(crate) const DEFAULT_MAX_DEPTH: u32 = 1;
pub(crate) const DEFAULT_MAX_CONCURRENT: u32 = 4;
/// Largest configurable depth and concurrency.
pub(crate) const MAX_DEPTH_LIMIT: u32 = 8;
pub(crate) const MAX_CONCURRENT_LIMIT: u32 = 32;

/// What the config file says about sub-agents.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    pub(crate) settings: SubAgentSettings,
    pub(crate) disabled: Vec<String>,
    pub(crate) max_depth: u32,
    pub(crate) max_concurrent: u32,
    /// Workspace definitions by name.
    pub(crate) profiles: BTreeMap<String, SubAgentProfileWrite>,
}

/// Reads the sub-agent part of the document (which the server could start with).
pub(crate) fn read(doc: &DocumentMut) -> Result<Config, SubAgentError> {
    let file: FileConfig = toml::from_str(&doc.to_string()).map_err(|e| SubAgentError::Config(e.to_string()))?;
    let sub = file.subagent.unwrap_or_default();
    let FileSubAgent { model, external_cli_session_resume_enabled, disabled_profiles, max_depth, max_concurrent } = sub;
    Ok(Config {
        settings: SubAgentSettings {
            external_cli_session_resume_enabled: external_cli_session_resume_enabled.unwrap_or(false),
            model: model.filter(|m| !m.trim().is_empty()),
        },
        disabled: disabled_profiles.unwrap_or_default(),
        max_depth: max_depth.unwrap_or(DEFAULT_MAX_DEPTH).min(MAX_DEPTH_LIMIT),
        max_concurrent: max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT).clamp(1, MAX_CONCURRENT_LIMIT),
        profiles: file.subagent_profiles.unwrap_or_default(),
    })
}

/// The built-in definition of `name`, if it is a built-in profile.
pub(crate) fn built_in(name: &str) -> Option<SubAgentProfileWrite> {
    (name == NATIVE).then(SubAgentProfileWrite::default)
}

impl Config {
    fn enabled(&self, name: &str) -> bool {
        name == NATIVE || !self.disabled.iter().any(|d| d == name)
    }

    /// Every profile, built-in first, then workspace ones by name.
    pub(crate) fn entries(&self, workspace: &Path) -> Vec<SubAgentProfileEntry> {
        let mut names = vec![NATIVE.to_owned()];
        names.extend(self.profiles.keys().filter(|n| built_in(n).is_none()).cloned());
        names.iter().filter_map(|n| self.entry(n, workspace)).collect()
    }

    /// One profile as listed, if it exists.
    pub(crate) fn entry(&self, name: &str, workspace: &Path) -> Option<SubAgentProfileEntry> {
        let defaults = built_in(name);
        let own = self.profiles.get(name);
        let definition = own.cloned().or_else(|| defaults.clone())?;
        let enabled = self.enabled(name);
        let diagnostic = diagnose(&definition, enabled, workspace);
        Some(SubAgentProfileEntry {
            name: name.to_owned(),
            is_built_in: defaults.is_some(),
            is_template: false,
            has_workspace_override: own.is_some(),
            is_default: name == NATIVE,
            enabled,
            definition,
            built_in_defaults: defaults,
            diagnostic,
        })
    }

    /// The profile a spawn may use: it exists, is enabled and runs here.
    pub(crate) fn runnable(&self, name: &str, workspace: &Path) -> Result<SubAgentProfileEntry, String> {
        let entry = self.entry(name, workspace).ok_or_else(|| format!("there is no sub-agent profile `{name}`"))?;
        if !entry.enabled {
            return Err(format!("the sub-agent profile `{name}` is disabled"));
        }
        if let Some(reason) = &entry.diagnostic.hidden_reason {
            return Err(format!("the sub-agent profile `{name}` cannot run: {reason}"));
        }
        Ok(entry)
    }
}

/// Whether a profile can be offered, and why not.
fn diagnose(definition: &SubAgentProfileWrite, enabled: bool, workspace: &Path) -> SubAgentProfileDiagnostic {
    let mut warnings = Vec::new();
    let native = definition.runtime == NATIVE_RUNTIME;
    let known = native || definition.runtime == CLI_ONESHOT_RUNTIME;
    let binary_resolved = native || definition.bin.as_deref().is_some_and(|b| resolve_binary(b, workspace));
    if !native && !binary_resolved {
        warnings.push(format!("`{}` was not found", definition.bin.as_deref().unwrap_or_default()));
    }
    let hidden_reason = if !enabled {
        Some("disabled in this workspace".to_owned())
    } else if !known {
        Some(format!(
            "this server runs `{NATIVE_RUNTIME}` and `{CLI_ONESHOT_RUNTIME}` sub-agents, not `{}`",
            definition.runtime
        ))
    } else if !binary_resolved {
        Some(format!("`{}` was not found", definition.bin.as_deref().unwrap_or_default()))
    } else {
        None
    };
    SubAgentProfileDiagnostic {
        enabled,
        binary_resolved,
        hidden_from_prompt: hidden_reason.is_some(),
        hidden_reason,
        warnings,
    }
}

/// Whether `bin` names an existing file: a path (relative to the workspace), or a name on `PATH`.
fn resolve_binary(bin: &str, workspace: &Path) -> bool {
    let path = Path::new(bin);
    if path.components().count() > 1 || path.is_absolute() {
        return workspace.join(path).is_file();
    }
    std::env::var_os("PATH").is_some_and(|dirs| std::env::split_paths(&dirs).any(|d| d.join(bin).is_file()))
}

/// A profile name: 1 to 64 letters, digits, `-`, `_`, `.`.
pub(crate) fn check_name(name: &str) -> Result<(), SubAgentError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SubAgentError::Invalid(format!("name `{name}`: 1 to 64 letters, digits, `-`, `_`, `.`")))
    }
}

/// Refuses a definition the server could not use or store.
pub(crate) fn validate(name: &str, d: &SubAgentProfileWrite) -> Result<(), SubAgentError> {
    let invalid = |why: String| Err(SubAgentError::Invalid(format!("profile `{name}`: {why}")));
    match d.runtime.as_str() {
        NATIVE_RUNTIME if d.bin.is_some() => return invalid("a `native` profile has no `bin`".into()),
        NATIVE_RUNTIME => {}
        CLI_ONESHOT_RUNTIME if d.bin.as_deref().is_none_or(|b| b.trim().is_empty()) => {
            return invalid("a `cli-oneshot` profile needs `bin`".into());
        }
        CLI_ONESHOT_RUNTIME => {}
        other => return invalid(format!("runtime `{other}`: `native` or `cli-oneshot`")),
    }
    if !matches!(d.working_directory_mode.as_str(), "workspace" | "specified") {
        return invalid("workingDirectoryMode: `workspace` or `specified`".into());
    }
    if let Some(level) = &d.trust_level
        && !matches!(level.as_str(), "trusted" | "prompt" | "restricted")
    {
        return invalid("trustLevel: `trusted`, `prompt` or `restricted`".into());
    }
    let json = serde_json::to_value(d).map_err(|e| SubAgentError::Invalid(e.to_string()))?;
    if !within_limits(&json) {
        return invalid(format!("at most {MAX_LIST} entries per list or map, {MAX_TEXT} bytes per value"));
    }
    Ok(())
}

fn within_limits(v: &Json) -> bool {
    match v {
        Json::String(s) => s.len() <= MAX_TEXT,
        Json::Array(a) => a.len() <= MAX_LIST && a.iter().all(within_limits),
        Json::Object(o) => {
            o.len() <= MAX_LIST.max(40) && o.iter().all(|(k, v)| k.len() <= MAX_TEXT && within_limits(v))
        }
        _ => true,
    }
}

/// Stores `definition` as the workspace's profile `name` (a built-in's override, or a custom one).
pub(crate) fn upsert(
    doc: &mut DocumentMut,
    name: &str,
    definition: &SubAgentProfileWrite,
) -> Result<(), SubAgentError> {
    let config = read(doc)?;
    if !config.profiles.contains_key(name) && config.profiles.len() >= MAX_PROFILES {
        return Err(SubAgentError::Invalid(format!("at most {MAX_PROFILES} workspace profiles")));
    }
    let json = serde_json::to_value(definition).map_err(|e| SubAgentError::Invalid(e.to_string()))?;
    let Json::Object(fields) = json else { return Err(SubAgentError::Invalid("not an object".into())) };
    let mut table = Table::new();
    for (key, value) in fields {
        if let Some(value) = to_toml(&value) {
            table.insert(&key, Item::Value(value));
        }
    }
    let profiles = table_of(doc, PROFILES_TABLE);
    profiles.insert(name, Item::Table(table));
    Ok(())
}

/// Removes the workspace's profile `name` (for a built-in, its override).
pub(crate) fn remove(doc: &mut DocumentMut, name: &str) -> Result<(), SubAgentError> {
    let removed = doc.get_mut(PROFILES_TABLE).and_then(Item::as_table_like_mut).and_then(|t| t.remove(name));
    if removed.is_none() {
        return Err(SubAgentError::NotFound(name.to_owned()));
    }
    if doc.get(PROFILES_TABLE).and_then(Item::as_table_like).is_some_and(|t| t.is_empty()) {
        doc.remove(PROFILES_TABLE);
    }
    Ok(())
}

/// Enables or disables `name` (`[subagent] disabled_profiles`).
pub(crate) fn set_enabled(doc: &mut DocumentMut, name: &str, enabled: bool) -> Result<(), SubAgentError> {
    let mut disabled = read(doc)?.disabled;
    disabled.retain(|d| d != name);
    if !enabled {
        disabled.push(name.to_owned());
    }
    let settings = table_of(doc, SETTINGS_TABLE);
    if disabled.is_empty() {
        settings.remove("disabled_profiles");
    } else {
        settings.insert("disabled_profiles", Item::Value(Value::Array(disabled.iter().collect::<Array>())));
    }
    Ok(())
}

/// `subagent/settings/update`: sets what is given (`Some(None)` clears the model).
pub(crate) fn update_settings(
    doc: &mut DocumentMut,
    resume: Option<bool>,
    model: Option<Option<String>>,
) -> Result<(), SubAgentError> {
    let settings = table_of(doc, SETTINGS_TABLE);
    if let Some(resume) = resume {
        settings.insert("external_cli_session_resume_enabled", toml_edit::value(resume));
    }
    match model.map(|m| m.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty())) {
        Some(Some(model)) if model.len() > MAX_TEXT => return Err(SubAgentError::Invalid("model: too long".into())),
        Some(Some(model)) => {
            settings.insert("model", toml_edit::value(model));
        }
        Some(None) => {
            settings.remove("model");
        }
        None => {}
    }
    Ok(())
}

/// The table `key` of the document, made when missing.
fn table_of<'a>(doc: &'a mut DocumentMut, key: &str) -> &'a mut Table {
    if !doc.get(key).is_some_and(Item::is_table) {
        let mut table = Table::new();
        table.set_implicit(key == PROFILES_TABLE);
        doc.insert(key, Item::Table(table));
    }
    doc[key].as_table_mut().unwrap_or_else(|| unreachable!("made above"))
}

/// A JSON value as TOML (`null`s, which TOML lacks, are dropped).
fn to_toml(v: &Json) -> Option<Value> {
    Some(match v {
        Json::Null => return None,
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64()?),
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(a) => Value::Array(a.iter().filter_map(to_toml).collect()),
        Json::Object(o) => {
            let mut t = InlineTable::new();
            for (k, v) in o {
                if let Some(v) = to_toml(v) {
                    t.insert(k, v);
                }
            }
            Value::InlineTable(t)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_round_trip_through_the_document() {
        let mut doc = DocumentMut::new();
        let mut def: SubAgentProfileWrite =
            serde_json::from_value(serde_json::json!({ "runtime": "cli-oneshot", "bin": "my-agent",
                "env": { "A": "1" }, "sanitizationRules": { "drop": [1, null] }, "timeout": 30 }))
            .unwrap();
        validate("mine", &def).unwrap();
        upsert(&mut doc, "mine", &def).unwrap();
        set_enabled(&mut doc, "mine", false).unwrap();
        update_settings(&mut doc, Some(true), Some(Some(" gpt ".into()))).unwrap();
        let config = read(&doc).unwrap();
        def.sanitization_rules = Some(serde_json::json!({ "drop": [1] }));
        assert_eq!(config.profiles["mine"], def);
        assert_eq!(config.disabled, ["mine"]);
        assert_eq!(config.settings.model.as_deref(), Some("gpt"));
        let entries = config.entries(Path::new("/"));
        assert_eq!(entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["native", "mine"]);
        assert!(entries[1].diagnostic.hidden_from_prompt && !entries[1].enabled);
        assert!(config.runnable("mine", Path::new("/")).is_err());
        assert!(config.runnable("native", Path::new("/")).is_ok());
        update_settings(&mut doc, None, Some(None)).unwrap();
        remove(&mut doc, "mine").unwrap();
        assert!(matches!(remove(&mut doc, "mine"), Err(SubAgentError::NotFound(_))));
        assert!(read(&doc).unwrap().settings.model.is_none());
    }

    #[test]
    fn definitions_are_checked() {
        let def = |v: Json| serde_json::from_value::<SubAgentProfileWrite>(v).unwrap();
        assert!(validate("x", &def(serde_json::json!({ "runtime": "cli-oneshot" }))).is_err());
        assert!(validate("x", &def(serde_json::json!({ "runtime": "weird" }))).is_err());
        assert!(validate("x", &def(serde_json::json!({ "bin": "x" }))).is_err());
        assert!(validate("x", &def(serde_json::json!({ "workingDirectoryMode": "elsewhere" }))).is_err());
        assert!(validate("x", &def(serde_json::json!({}))).is_ok());
        assert!(check_name("a b").is_err() && check_name("").is_err() && check_name("ok-1.x").is_ok());
    }
}
