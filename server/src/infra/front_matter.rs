//! YAML front matter (the `---` block at the top of a Markdown file, as skills and custom
//! commands have), parsed by a YAML parser (`yaml_serde`) into a flat key/value map; a YAML
//! document read into a serde type; and a Markdown file written with a front matter.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use yaml_serde::Value;

/// A front matter's top-level keys and their values as text.
pub(crate) type Metadata = BTreeMap<String, String>;

/// The frontmatter's top-level keys (`None` when there is none, or when it is not valid YAML:
/// `parse` says why) and the body after it. A key's list items are joined with `, `; nested
/// maps are kept as their YAML text.
pub(crate) fn split(content: &str) -> (Option<BTreeMap<String, String>>, &str) {
    match block(content) {
        (Some(yaml), body) => (to_map(yaml).ok(), body),
        (None, body) => (None, body),
    }
}

/// As `split`, but a frontmatter that is not a valid YAML map is an error naming the cause
/// (the YAML parser's message, with its line and column in the block).
pub(crate) fn parse(content: &str) -> Result<(Option<Metadata>, &str), String> {
    match block(content) {
        (Some(yaml), body) => Ok((Some(to_map(yaml)?), body)),
        (None, body) => Ok((None, body)),
    }
}

/// A YAML document read into a serde type; the error is the parser's (or the type's) message.
/// The caller names the file.
pub(crate) fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    yaml_serde::from_str(text).map_err(|e| format!("invalid YAML: {e}"))
}

/// A Markdown file: `meta` as its YAML front matter, then `body`.
pub(crate) fn render<T: serde::Serialize>(meta: &T, body: &str) -> Result<String, String> {
    let mut yaml = yaml_serde::to_string(meta).map_err(|e| format!("cannot write YAML: {e}"))?;
    if !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    Ok(format!("---\n{yaml}---\n\n{body}"))
}

/// The text of the `---` block (`None` when there is none or it is not closed) and the body.
fn block(content: &str) -> (Option<&str>, &str) {
    let text = content.strip_prefix('\u{feff}').unwrap_or(content);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, content);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..offset]), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, content)
}

/// The block's top-level keys with their values as text.
fn to_map(yaml: &str) -> Result<BTreeMap<String, String>, String> {
    let map = match from_yaml::<Value>(yaml)? {
        Value::Null => return Ok(BTreeMap::new()),
        Value::Mapping(map) => map,
        _ => return Err("the front matter is not a map of keys".to_owned()),
    };
    Ok(map.into_iter().map(|(key, value)| (text(key), text(value))).collect())
}

/// A scalar as its text (a string trimmed: a block scalar's last line break is not part of a
/// description), a list as its items joined with `, `, a map as its YAML text.
fn text(value: Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.trim().len() == s.len() => s,
        Value::String(s) => s.trim().to_owned(),
        Value::Sequence(items) => items.into_iter().map(text).collect::<Vec<_>>().join(", "),
        Value::Tagged(tagged) => text(tagged.value),
        map @ Value::Mapping(_) => yaml_serde::to_string(&map).unwrap_or_default().trim_end().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_forms() {
        let text = "---\ndescription: >\n  Folded over\n  two lines.\nsummary: |\n  kept\n  lines\nurl: 'http://x:1/a'\n\
                    note: \"a: b\"\nbins: [git, \"sh\"]\nenv:\n  - A\n  - B\nalways: true\nlimits:\n  cpu: 2\n---\nbody\n";
        let (meta, body) = parse(text).unwrap();
        let meta = meta.unwrap();
        assert_eq!(meta["description"], "Folded over two lines.");
        assert_eq!(meta["summary"], "kept\nlines");
        assert_eq!(meta["url"], "http://x:1/a");
        assert_eq!(meta["note"], "a: b");
        assert_eq!((meta["bins"].as_str(), meta["env"].as_str(), meta["always"].as_str()), ("git, sh", "A, B", "true"));
        assert_eq!(meta["limits"], "cpu: 2");
        assert_eq!(body, "body\n");
        assert_eq!(parse("---\n---\nbody").unwrap(), (Some(BTreeMap::new()), "body"));
    }

    #[test]
    fn malformed_frontmatter_is_an_error_naming_the_cause() {
        let text = "---\ndescription: Review code: carefully\n---\nbody\n";
        let error = parse(text).unwrap_err();
        assert!(error.contains("invalid YAML") && error.contains("mapping values"), "{error}");
        assert_eq!(split(text), (None, "body\n"), "split keeps the body");
        let error = parse("---\n- a\n- b\n---\n").unwrap_err();
        assert!(error.contains("not a map"), "{error}");
        let error = parse("---\nname: [unclosed\n---\n").unwrap_err();
        assert!(error.contains("invalid YAML"), "{error}");
    }
}
