//! A plugin's manifest, `<plugin>/.craft-plugin/plugin.json` (schema version 1, as DotCraft's
//! plugins have it): parsed and checked, every error naming its field. Manifest-relative paths
//! (`skills`, `mcpServers`, and appserver's `commands` and `apps`) start with `./`, hold no `..`
//! and stay inside the plugin's folder.

use std::path::{Path, PathBuf};

use appserver_protocol::PluginInterface;
use serde_json::Value;

/// Where a plugin's manifest is, relative to its folder.
pub(crate) const MANIFEST_PATH: &str = ".craft-plugin/plugin.json";
/// Largest manifest read.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 64 * 1024;
/// Legacy native-tool fields: ignored, with a diagnostic.
const LEGACY_FIELDS: [&str; 3] = ["tools", "functions", "processes"];

/// A parsed manifest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Manifest {
    pub(crate) id: String,
    pub(crate) version: Option<String>,
    pub(crate) display_name: String,
    pub(crate) description: String,
    pub(crate) interface: Option<PluginInterface>,
    /// Manifest-relative folders and files, resolved against the plugin's folder.
    pub(crate) skills: Option<PathBuf>,
    pub(crate) mcp_servers: Option<PathBuf>,
    pub(crate) commands: Option<PathBuf>,
    pub(crate) apps: Option<PathBuf>,
    /// Non-fatal findings: `(code, message)`.
    pub(crate) warnings: Vec<(String, String)>,
}

/// A plugin id: 1 to 64 lowercase letters, digits, `-` or `_`, starting with a letter or digit
/// (it names a folder, an MCP prefix and a config entry).
pub(crate) fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// A manifest-relative path (`./x/y`) under `root`; the error names `field`.
pub(crate) fn relative(root: &Path, field: &str, value: &str) -> Result<PathBuf, String> {
    let bad = |why: &str| Err(format!("{field}: `{value}` {why}"));
    let Some(rest) = value.strip_prefix("./") else { return bad("must start with `./`") };
    if value.contains('\\') || value.contains('\0') {
        return bad("must use `/` separators");
    }
    let mut path = root.to_path_buf();
    for part in rest.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return bad("must not contain `..`");
        }
        path.push(part);
    }
    Ok(path)
}

fn string(object: &serde_json::Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{field}: must be a string")),
    }
}

fn interface(value: Option<&Value>) -> Result<Option<PluginInterface>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::Object(_)) => {
            serde_json::from_value(value.clone()).map(Some).map_err(|e| format!("interface: {e}"))
        }
        Some(_) => Err("interface: must be an object".into()),
    }
}

/// Parses the manifest `text` of the plugin in `root`.
pub(crate) fn parse(root: &Path, text: &str) -> Result<Manifest, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("plugin.json: not JSON: {e}"))?;
    let Value::Object(object) = value else { return Err("plugin.json: must be an object".into()) };
    match object.get("schemaVersion") {
        Some(v) if v.as_u64() == Some(1) => {}
        Some(_) => return Err("schemaVersion: only version 1 is supported".into()),
        None => return Err("schemaVersion: required (1)".into()),
    }
    let id = string(&object, "id")?.ok_or("id: required")?;
    if !valid_id(&id) {
        return Err(format!(
            "id: `{id}` is not a safe name (1 to 64 lowercase letters, digits, `-` or `_`, starting with a letter or digit)"
        ));
    }
    let interface = interface(object.get("interface"))?;
    let path = |field: &str| -> Result<Option<PathBuf>, String> {
        string(&object, field)?.map(|v| relative(root, field, &v)).transpose()
    };
    let (skills, commands, apps) = (path("skills")?, path("commands")?, path("apps")?);
    let declared_mcp = path("mcpServers")?;
    let default_mcp = root.join(".mcp.json");
    let mcp_servers = declared_mcp.or_else(|| default_mcp.is_file().then_some(default_mcp));
    let mut warnings = Vec::new();
    for field in LEGACY_FIELDS.iter().filter(|f| object.contains_key(**f)) {
        warnings.push((
            "UnsupportedPluginNativeTools".to_owned(),
            format!("{field}: manifests do not declare native tools; ignored"),
        ));
    }
    if skills.is_none() && mcp_servers.is_none() && interface.is_none() && commands.is_none() && apps.is_none() {
        return Err(
            "skills: the plugin contributes nothing (no skills, mcpServers, interface, commands or apps)".into()
        );
    }
    let display_name = string(&object, "displayName")?
        .or_else(|| interface.as_ref().and_then(|i| i.display_name.clone()))
        .unwrap_or_else(|| id.clone());
    let description = string(&object, "description")?
        .or_else(|| interface.as_ref().and_then(|i| i.short_description.clone()))
        .unwrap_or_default();
    Ok(Manifest {
        id,
        version: string(&object, "version")?,
        display_name,
        description,
        interface,
        skills,
        mcp_servers,
        commands,
        apps,
        warnings,
    })
}

/// Reads and parses `<root>/.craft-plugin/plugin.json` (not through a symlink, at most
/// [`MAX_MANIFEST_BYTES`]).
pub(crate) fn read(root: &Path) -> Result<Manifest, String> {
    let path = root.join(MANIFEST_PATH);
    let meta = std::fs::symlink_metadata(&path).map_err(|_| format!("{MANIFEST_PATH}: missing"))?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return Err(format!("{MANIFEST_PATH}: not a file of at most {MAX_MANIFEST_BYTES} bytes"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{MANIFEST_PATH}: {e}"))?;
    parse(root, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_checked_and_named() {
        let root = Path::new("/p");
        let ok = parse(root, r#"{"schemaVersion":1,"id":"review-tools","skills":"./skills/","tools":[]}"#).unwrap();
        assert_eq!(ok.skills, Some(PathBuf::from("/p/skills")));
        assert_eq!(ok.display_name, "review-tools");
        assert_eq!(ok.warnings[0].0, "UnsupportedPluginNativeTools");
        let err = |text: &str| parse(root, text).unwrap_err();
        assert!(err(r#"{"schemaVersion":1,"id":"../x","skills":"./s"}"#).starts_with("id: "));
        assert!(err(r#"{"schemaVersion":1,"id":"Upper","skills":"./s"}"#).starts_with("id: "));
        assert!(err(r#"{"schemaVersion":2,"id":"x"}"#).starts_with("schemaVersion: "));
        assert!(err(r#"{"schemaVersion":1,"id":"x","skills":"../s"}"#).starts_with("skills: "));
        assert!(err(r#"{"schemaVersion":1,"id":"x","skills":"./a/../../s"}"#).starts_with("skills: "));
        assert!(err(r#"{"schemaVersion":1,"id":"x","commands":"/etc"}"#).starts_with("commands: "));
        assert!(err(r#"{"schemaVersion":1,"id":"x"}"#).contains("contributes nothing"));
        assert!(err(r#"{"schemaVersion":1,"id":"x","interface":3}"#).starts_with("interface: "));
    }
}
