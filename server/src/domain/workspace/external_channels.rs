//! External channel configs (protocol section 23), kept in the workspace's config file as
//! `[external_channels.<name>]` tables: listed, read, replaced and removed by name (compared
//! case-insensitively), validated per transport.

use std::collections::BTreeMap;

use appserver_protocol::ExternalChannelConfig;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::WorkspaceError;
use crate::domain::origin_channels::{BUILTIN_CHANNELS, RESERVED_CHANNELS as RESERVED};

/// The config file's table of external channels.
pub(crate) const TABLE: &str = "external_channels";
/// Most external channels a workspace may configure.
pub(crate) const MAX_CHANNELS: usize = 64;
/// Most arguments and environment variables of one channel, and the longest string.
const MAX_LIST: usize = 64;
const MAX_TEXT: usize = 4096;

/// Every configured channel, by name (case-insensitively).
pub(crate) fn list(doc: &DocumentMut) -> Vec<ExternalChannelConfig> {
    let Some(table) = doc.get(TABLE).and_then(Item::as_table_like) else { return Vec::new() };
    let mut out: Vec<_> = table.iter().filter_map(|(name, item)| from_item(name, item)).collect();
    out.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then_with(|| a.name.cmp(&b.name)));
    out
}

/// One channel by name, compared case-insensitively.
pub(crate) fn get(doc: &DocumentMut, name: &str) -> Result<ExternalChannelConfig, WorkspaceError> {
    list(doc)
        .into_iter()
        .find(|c| c.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| WorkspaceError::ChannelNotFound(name.to_owned()))
}

fn from_item(name: &str, item: &Item) -> Option<ExternalChannelConfig> {
    let t = item.as_table_like()?;
    let text = |key: &str| t.get(key).and_then(Item::as_str).map(str::to_owned);
    let strings = |v: &Array| v.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect::<Vec<_>>();
    Some(ExternalChannelConfig {
        name: name.to_owned(),
        enabled: t.get("enabled").and_then(Item::as_bool).unwrap_or(true),
        transport: text("transport").unwrap_or_else(|| "subprocess".into()),
        command: text("command"),
        args: t.get("args").and_then(Item::as_array).map(strings),
        working_directory: text("working_directory"),
        env: t
            .get("env")
            .and_then(Item::as_table_like)
            .map(|env| env.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.to_owned(), v.to_owned()))).collect()),
    })
}

/// The channel with empty optional fields dropped, or why it is refused.
pub(crate) fn validate(mut c: ExternalChannelConfig) -> Result<ExternalChannelConfig, WorkspaceError> {
    let invalid = |why: String| Err(WorkspaceError::ChannelInvalid(why));
    c.name = c.name.trim().to_owned();
    if c.name.is_empty() || c.name.len() > 64 {
        return invalid("name: 1 to 64 characters".into());
    }
    if !c.name.chars().all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.')) {
        return invalid(format!("name `{}`: only letters, digits, `-`, `_` and `.`", c.name));
    }
    if BUILTIN_CHANNELS.iter().chain(RESERVED).any(|n| n.eq_ignore_ascii_case(&c.name)) {
        return Err(WorkspaceError::ChannelConflict(format!("`{}` is a channel of the server itself", c.name)));
    }
    c.command = c.command.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    c.working_directory = c.working_directory.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    c.args = c.args.filter(|a| !a.is_empty());
    c.env = c.env.map(|env| env.into_iter().filter(|(k, _)| !k.trim().is_empty()).collect::<BTreeMap<_, _>>());
    c.env = c.env.filter(|e| !e.is_empty());
    let texts = c.command.iter().chain(c.working_directory.iter()).chain(c.args.iter().flatten());
    if texts.chain(c.env.iter().flat_map(|e| e.keys().chain(e.values()))).any(|s| s.len() > MAX_TEXT) {
        return invalid(format!("a value is longer than {MAX_TEXT} bytes"));
    }
    if c.args.as_ref().is_some_and(|a| a.len() > MAX_LIST) || c.env.as_ref().is_some_and(|e| e.len() > MAX_LIST) {
        return invalid(format!("at most {MAX_LIST} args and {MAX_LIST} env entries"));
    }
    match c.transport.as_str() {
        "subprocess" if c.command.is_none() => invalid("transport `subprocess` needs a `command`".into()),
        "subprocess" => Ok(c),
        "websocket" => {
            let extra = [
                ("command", c.command.is_some()),
                ("args", c.args.is_some()),
                ("workingDirectory", c.working_directory.is_some()),
                ("env", c.env.is_some()),
            ];
            match extra.iter().find(|(_, set)| *set) {
                Some((field, _)) => invalid(format!("transport `websocket` does not take `{field}`")),
                None => Ok(c),
            }
        }
        other => invalid(format!("transport `{other}`: expected `subprocess` or `websocket`")),
    }
}

fn to_table(c: &ExternalChannelConfig) -> Table {
    let mut t = Table::new();
    t.insert("enabled", toml_edit::value(c.enabled));
    t.insert("transport", toml_edit::value(c.transport.as_str()));
    if let Some(command) = &c.command {
        t.insert("command", toml_edit::value(command.as_str()));
    }
    if let Some(args) = &c.args {
        t.insert("args", Item::Value(Value::Array(args.iter().map(String::as_str).collect())));
    }
    if let Some(dir) = &c.working_directory {
        t.insert("working_directory", toml_edit::value(dir.as_str()));
    }
    if let Some(env) = &c.env {
        let mut inline = InlineTable::new();
        for (k, v) in env {
            inline.insert(k, Value::from(v.as_str()));
        }
        t.insert("env", Item::Value(Value::InlineTable(inline)));
    }
    t
}

/// Replaces (or adds) the channel; an entry of the same name in another case is replaced too.
pub(crate) fn upsert(
    doc: &mut DocumentMut,
    channel: ExternalChannelConfig,
) -> Result<ExternalChannelConfig, WorkspaceError> {
    let channel = validate(channel)?;
    let item = doc.entry(TABLE).or_insert_with(toml_edit::table);
    let table = item
        .as_table_mut()
        .ok_or_else(|| WorkspaceError::InvalidParams(format!("`{TABLE}` in the config file is not a table")))?;
    table.set_implicit(true);
    let same: Vec<String> =
        table.iter().map(|(k, _)| k.to_owned()).filter(|k| k.eq_ignore_ascii_case(&channel.name)).collect();
    let position = same.first().and_then(|k| table.get_key_value(k)).and_then(|(_, item)| item.as_table()?.position());
    if same.is_empty() && table.len() >= MAX_CHANNELS {
        return Err(WorkspaceError::ChannelInvalid(format!("at most {MAX_CHANNELS} external channels")));
    }
    for key in &same {
        table.remove(key);
    }
    let mut new = to_table(&channel);
    if let Some(position) = position {
        new.set_position(position);
    }
    table.insert(&channel.name, Item::Table(new));
    Ok(channel)
}

/// Removes the channel (`ChannelNotFound` when there is none of that name).
pub(crate) fn remove(doc: &mut DocumentMut, name: &str) -> Result<(), WorkspaceError> {
    let table = doc.get_mut(TABLE).and_then(Item::as_table_like_mut);
    let key =
        table.as_ref().and_then(|t| t.iter().map(|(k, _)| k.to_owned()).find(|k| k.eq_ignore_ascii_case(name.trim())));
    match (table, key) {
        (Some(table), Some(key)) => {
            table.remove(&key);
            if table.is_empty() {
                doc.remove(TABLE);
            }
            Ok(())
        }
        _ => Err(WorkspaceError::ChannelNotFound(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(json: serde_json::Value) -> ExternalChannelConfig {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn validation_follows_the_transport() {
        let ws = |extra: serde_json::Value| {
            let mut v = serde_json::json!({ "name": "weixin", "enabled": true, "transport": "websocket" });
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            validate(channel(v))
        };
        assert!(ws(serde_json::json!({})).is_ok());
        // What DotCraft's desktop sends for a websocket channel: nulls are absent.
        assert!(ws(serde_json::json!({ "command": null, "workingDirectory": null, "env": null })).is_ok());
        assert!(matches!(ws(serde_json::json!({ "command": "x" })), Err(WorkspaceError::ChannelInvalid(_))));
        assert!(matches!(
            ws(serde_json::json!({ "transport": "carrierPigeon" })),
            Err(WorkspaceError::ChannelInvalid(_))
        ));
        assert!(matches!(ws(serde_json::json!({ "name": "CLI" })), Err(WorkspaceError::ChannelConflict(_))));
        assert!(matches!(ws(serde_json::json!({ "name": "a b" })), Err(WorkspaceError::ChannelInvalid(_))));
        let sub = channel(serde_json::json!({ "name": "tg", "enabled": true, "transport": "subprocess" }));
        assert!(matches!(validate(sub), Err(WorkspaceError::ChannelInvalid(_))));
    }

    #[test]
    fn upsert_replaces_by_name_case_insensitively_and_remove_prunes() {
        let mut doc: DocumentMut = "# keep me\n[model]\nmodel = \"m\"\n".parse().unwrap();
        let tg = channel(serde_json::json!({ "name": "telegram", "enabled": true, "transport": "subprocess",
            "command": "python", "args": ["-m", "tg"], "env": { "TOKEN": "t" } }));
        upsert(&mut doc, tg.clone()).unwrap();
        assert_eq!(list(&doc), vec![tg.clone()]);
        let again: DocumentMut = doc.to_string().parse().unwrap();
        assert_eq!(list(&again), vec![tg], "round-trips through the file");
        let ws = channel(serde_json::json!({ "name": "Telegram", "enabled": false, "transport": "websocket" }));
        upsert(&mut doc, ws.clone()).unwrap();
        assert_eq!(list(&doc), vec![ws]);
        assert_eq!(get(&doc, "TELEGRAM").unwrap().name, "Telegram");
        remove(&mut doc, "telegram").unwrap();
        assert!(matches!(remove(&mut doc, "telegram"), Err(WorkspaceError::ChannelNotFound(_))));
        assert_eq!(doc.to_string(), "# keep me\n[model]\nmodel = \"m\"\n");
    }
}
