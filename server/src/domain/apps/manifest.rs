//! Manifest validation at registration, and the compiled JSON Schemas that check command params
//! before an app is called. Both dialects are accepted: ours (`commands` with JSON Schema
//! `params`) and the Robutler one (`interface.commands` with descriptive `args`), which is moved
//! to the top level here.

use std::collections::HashMap;

use appserver_protocol::{AppManifest, FileAssociation};
use serde_json::Value;

/// Names reserved for the server's built-in commands.
pub(crate) const BUILTIN_COMMANDS: &[&str] = &["__describe", "__getState"];

/// A manifest that passed validation, with a validator per command that declares `params`.
#[derive(Debug)]
pub(crate) struct CheckedManifest {
    pub(crate) manifest: AppManifest,
    validators: HashMap<String, jsonschema::Validator>,
}

impl CheckedManifest {
    /// Checks command params against the command's schema; the error says where and why.
    pub(crate) fn check_params(&self, command: &str, params: &Value) -> Result<(), String> {
        let Some(validator) = self.validators.get(command) else { return Ok(()) };
        let errors: Vec<String> = validator
            .iter_errors(params)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { format!("params: {e}") } else { format!("params{at}: {e}") }
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }

    /// Whether a logged `command` is sent again on replay (not when declared `replay: false`).
    pub(crate) fn replays(&self, command: &str) -> bool {
        // `__query`: a read of another app, logged as such; never a command of this app.
        !command.starts_with("__") && self.manifest.commands.get(command).is_none_or(|c| c.replay != Some(false))
    }

    /// Whether `event_type` is declared: a key of `events` or a name in some command's `streams`.
    pub(crate) fn declares_event(&self, event_type: &str) -> bool {
        self.manifest.events.as_ref().is_some_and(|events| events.contains_key(event_type))
            || self.manifest.commands.values().any(|c| c.streams.iter().flatten().any(|s| s == event_type))
    }

    /// The declared event types, for error messages.
    pub(crate) fn declared_events(&self) -> Vec<String> {
        let mut all: Vec<String> = self.manifest.events.iter().flat_map(|e| e.keys().cloned()).collect();
        all.extend(self.manifest.commands.values().flat_map(|c| c.streams.iter().flatten().cloned()));
        all.sort();
        all.dedup();
        all
    }
}

/// Moves a Robutler `interface` (description, commands, events) to the top level. Refused when
/// the same member is declared in both places.
fn unwrap_interface(mut manifest: AppManifest) -> Result<AppManifest, String> {
    let Some(interface) = manifest.interface.take() else { return Ok(manifest) };
    if !interface.commands.is_empty() {
        if !manifest.commands.is_empty() {
            return Err("manifest.interface.commands: commands are declared both here and at the top level".into());
        }
        manifest.commands = interface.commands;
    }
    if interface.events.is_some() {
        if manifest.events.is_some() {
            return Err("manifest.interface.events: events are declared both here and at the top level".into());
        }
        manifest.events = interface.events;
    }
    if manifest.description.is_none() {
        manifest.description = interface.description;
    }
    if manifest.name.trim().is_empty() {
        // Robutler manifests may carry only an id: the app is named by it.
        manifest.name = manifest.app_id.clone();
    }
    Ok(manifest)
}

/// Validates a manifest (and file associations); errors name the bad field, e.g.
/// `manifest.commands.setCells.params: ...`.
pub(crate) fn check(manifest: AppManifest, associations: &[FileAssociation]) -> Result<CheckedManifest, String> {
    let manifest = unwrap_interface(manifest)?;
    if manifest.app_id.trim().is_empty() {
        return Err("manifest.appId: must not be empty".into());
    }
    if manifest.name.trim().is_empty() {
        return Err("manifest.name: must not be empty".into());
    }
    for (key, state) in &manifest.state {
        if key.trim().is_empty() {
            return Err("manifest.state: a state key must not be empty".into());
        }
        if key == "manifest" {
            return Err("manifest.state.manifest: `manifest` is reserved (it returns the manifest)".into());
        }
        if let Some(schema) = &state.schema {
            jsonschema::validator_for(schema).map_err(|e| format!("manifest.state.{key}.schema: {e}"))?;
        }
    }
    let mut validators = HashMap::new();
    for (name, command) in &manifest.commands {
        let field = format!("manifest.commands.{name}");
        if name.trim().is_empty() {
            return Err("manifest.commands: a command name must not be empty".into());
        }
        if name.starts_with("__") {
            return Err(format!("{field}: names starting with `__` are reserved for built-in commands"));
        }
        if command.description.trim().is_empty() {
            return Err(format!("{field}.description: must not be empty"));
        }
        if let Some(schema) = &command.params {
            if !schema.is_object() && !schema.is_boolean() {
                return Err(format!("{field}.params: must be a JSON Schema (an object)"));
            }
            let validator = jsonschema::validator_for(schema).map_err(|e| format!("{field}.params: {e}"))?;
            validators.insert(name.clone(), validator);
        }
        if let Some(schema) = &command.returns {
            if !schema.is_object() && !schema.is_boolean() && !schema.is_string() {
                return Err(format!("{field}.returns: must be a JSON Schema or a description"));
            }
        }
        if let Some(args) = &command.args {
            if !args.is_object() && !args.is_string() {
                return Err(format!("{field}.args: must be an object describing the arguments, or a description"));
            }
        }
        if let Some(streams) = &command.streams {
            if streams.iter().any(|s| s.trim().is_empty()) {
                return Err(format!("{field}.streams: event names must not be empty"));
            }
        }
    }
    for (i, association) in associations.iter().enumerate() {
        let field = format!("fileAssociations[{i}]");
        if association.extensions.is_empty()
            || association.extensions.iter().any(|e| e.trim_start_matches('.').is_empty())
        {
            return Err(format!("{field}.extensions: at least one non-empty extension"));
        }
        if !manifest.commands.contains_key(&association.command) {
            return Err(format!("{field}.command: `{}` is not a command of the manifest", association.command));
        }
        if association.param_key.trim().is_empty() {
            return Err(format!("{field}.paramKey: must not be empty"));
        }
    }
    Ok(CheckedManifest { manifest, validators })
}

/// Whether a file name matches an association's extensions (case-insensitive, dot optional).
pub(crate) fn matches_extension(association: &FileAssociation, path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    association.extensions.iter().any(|ext| {
        let ext = ext.trim_start_matches('.').to_ascii_lowercase();
        lower.ends_with(&format!(".{ext}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sheet() -> AppManifest {
        serde_json::from_value(json!({
            "appId": "sheet", "name": "Sheet",
            "state": { "cells": { "description": "All cells" } },
            "commands": { "setCells": { "description": "Set cells", "params": {
                "type": "object", "properties": { "cells": { "type": "object", "additionalProperties": { "type": "string" } } },
                "required": ["cells"] } } }
        }))
        .unwrap()
    }

    #[test]
    fn params_are_checked_against_the_schema() {
        let checked = check(sheet(), &[]).unwrap();
        assert!(checked.check_params("setCells", &json!({ "cells": { "A1": "1" } })).is_ok());
        let err = checked.check_params("setCells", &json!({ "cells": { "A1": 1 } })).unwrap_err();
        assert!(err.contains("/cells/A1"), "{err}");
        assert!(checked.check_params("setCells", &json!({})).unwrap_err().contains("cells"));
    }

    #[test]
    fn bad_manifests_name_the_field() {
        let mut m = sheet();
        m.app_id = " ".into();
        assert!(check(m, &[]).unwrap_err().starts_with("manifest.appId"));
        let mut m = sheet();
        m.commands.get_mut("setCells").unwrap().params = Some(json!({ "type": 12 }));
        assert!(check(m, &[]).unwrap_err().starts_with("manifest.commands.setCells.params"));
        let mut m = sheet();
        m.commands.insert("__describe".into(), Default::default());
        assert!(check(m, &[]).unwrap_err().contains("reserved"));
        let assoc =
            FileAssociation { extensions: vec![".csv".into()], command: "nope".into(), param_key: "content".into() };
        assert!(check(sheet(), &[assoc]).unwrap_err().starts_with("fileAssociations[0].command"));
    }

    #[test]
    fn a_robutler_interface_is_moved_to_the_top_level() {
        let m: AppManifest = serde_json::from_value(json!({ "id": "deck", "interface": {
            "description": "Slides",
            "commands": { "goTo": { "description": "Jump", "args": { "index": "number" } },
                          "render": { "description": "Render", "replay": false, "streams": ["render.done"] } },
            "events": { "deck.slide_view": { "description": "Viewed" } } } }))
        .unwrap();
        let checked = check(m, &[]).unwrap();
        let m = &checked.manifest;
        assert_eq!((m.app_id.as_str(), m.name.as_str(), m.description.as_deref()), ("deck", "deck", Some("Slides")));
        assert!(m.interface.is_none());
        assert_eq!(m.commands["goTo"].args, Some(json!({ "index": "number" })));
        assert!(checked.replays("goTo") && !checked.replays("render"));
        assert!(checked.declares_event("deck.slide_view") && checked.declares_event("render.done"));
        assert!(!checked.declares_event("deck.other"));
        assert_eq!(checked.declared_events(), ["deck.slide_view", "render.done"]);
    }

    #[test]
    fn extensions_match_case_insensitively() {
        let assoc = FileAssociation {
            extensions: vec![".CSV".into(), "tsv".into()],
            command: "c".into(),
            param_key: "k".into(),
        };
        assert!(matches_extension(&assoc, "data/Report.csv"));
        assert!(matches_extension(&assoc, "a.TSV"));
        assert!(!matches_extension(&assoc, "a.csv.bak"));
    }
}
