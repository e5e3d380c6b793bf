//! A skill's face in clients (protocol section 18.2): the `interface` block of its
//! `agents/openai.yaml` (Codex's format) — display name, short description, default prompt —
//! and its icons as data URLs, read only from image files inside the skill's folder, each at
//! most [`MAX_ICON_BYTES`].

use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use yaml_serde::Value;

/// Largest `agents/openai.yaml` read.
const MAX_INTERFACE_BYTES: u64 = 64 * 1024;
/// Largest icon file turned into a data URL; a larger one is left out.
pub(crate) const MAX_ICON_BYTES: u64 = 256 * 1024;
/// Longest text field kept (a longer one is left out).
const MAX_TEXT_CHARS: usize = 4096;

/// What `agents/openai.yaml` says of a skill; every field is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SkillInterface {
    pub(crate) display_name: Option<String>,
    pub(crate) short_description: Option<String>,
    pub(crate) default_prompt: Option<String>,
    pub(crate) icon_small_data_url: Option<String>,
    pub(crate) icon_large_data_url: Option<String>,
}

/// Reads `dir/agents/openai.yaml`; nothing when it is missing, too large, a link or not YAML.
pub(crate) fn read(dir: &Path) -> SkillInterface {
    let Some(path) = confined(dir, Path::new("agents/openai.yaml"), MAX_INTERFACE_BYTES) else {
        return SkillInterface::default();
    };
    let Ok(text) = std::fs::read_to_string(&path) else { return SkillInterface::default() };
    let fields = match yaml_serde::from_str::<Value>(&text) {
        Ok(value) => value.get("interface").cloned().unwrap_or(Value::Null),
        Err(err) => {
            tracing::debug!(path = %path.display(), error = %err, "agents/openai.yaml is not YAML; ignored");
            return SkillInterface::default();
        }
    };
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.chars().count() <= MAX_TEXT_CHARS)
            .map(str::to_owned)
    };
    let icon = |key: &str| text(key).and_then(|rel| icon_data_url(dir, &rel));
    SkillInterface {
        display_name: text("display_name"),
        short_description: text("short_description"),
        default_prompt: text("default_prompt"),
        icon_small_data_url: icon("icon_small"),
        icon_large_data_url: icon("icon_large"),
    }
}

/// The image at `rel` (relative to the skill's folder) as a `data:` URL, when it is an image
/// type a client shows, inside the folder and small enough.
fn icon_data_url(dir: &Path, rel: &str) -> Option<String> {
    let mime = image_type(rel)?;
    let path = confined(dir, Path::new(rel), MAX_ICON_BYTES)?;
    let bytes = std::fs::read(&path).ok()?;
    // Checked again: the file may have grown since its metadata was read.
    if bytes.len() as u64 > MAX_ICON_BYTES {
        return None;
    }
    Some(format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes)))
}

/// The media type of an icon file by its extension; other files are not icons.
fn image_type(rel: &str) -> Option<&'static str> {
    let extension = Path::new(rel).extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// `dir/rel` when `rel` is relative, stays inside `dir` once `.` and `..` are resolved and once
/// links are followed, and names a regular file of at most `max` bytes.
fn confined(dir: &Path, rel: &Path, max: u64) -> Option<PathBuf> {
    let mut inside = PathBuf::new();
    for component in rel.components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => inside.push(part),
            Component::ParentDir if inside.pop() => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    let root = dir.canonicalize().ok()?;
    let path = root.join(inside).canonicalize().ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    (path.starts_with(&root) && meta.is_file() && meta.len() <= max).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, bytes: &[u8]) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn reads_the_interface_and_only_confined_small_images() {
        let root = tempfile::tempdir().unwrap();
        let skill = root.path().join("skill");
        write(root.path(), "outside.png", b"secret");
        write(&skill, "assets/a.svg", b"<svg/>");
        write(&skill, "assets/big.png", &vec![0; MAX_ICON_BYTES as usize + 1]);
        write(&skill, "notes.txt", b"text");
        let yaml = "interface:\n  display_name: \"Browser Use\"\n  short_description: Automate\n  default_prompt: Use $browser\n  icon_small: ./assets/x/../a.svg\n  icon_large: ../outside.png\n";
        write(&skill, "agents/openai.yaml", yaml.as_bytes());
        let read = read(&skill);
        assert_eq!(read.display_name.as_deref(), Some("Browser Use"));
        assert_eq!(read.short_description.as_deref(), Some("Automate"));
        assert_eq!(read.default_prompt.as_deref(), Some("Use $browser"));
        assert_eq!(read.icon_small_data_url.as_deref(), Some("data:image/svg+xml;base64,PHN2Zy8+"));
        assert_eq!(read.icon_large_data_url, None, "outside the skill's folder");
        for refused in ["assets/big.png", "notes.txt", "/etc/hostname", "../outside.png"] {
            assert_eq!(icon_data_url(&skill, refused), None, "{refused}");
        }
        write(&skill, "agents/openai.yaml", b"interface: [unclosed");
        assert_eq!(super::read(&skill), SkillInterface::default());
    }
}
