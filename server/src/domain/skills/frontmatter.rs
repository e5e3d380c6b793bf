//! A `SKILL.md`'s YAML frontmatter (the `---` block at its top), read as the flat key/value map
//! skills use (`name`, `description`, `bins`, `env`, `always`, ...), and the requirements it
//! declares.

use std::collections::BTreeMap;
use std::path::Path;

/// The frontmatter's top-level keys (`None` when there is no frontmatter) and the body after it.
/// A key's list items (`- x` lines) are joined with `, `; nested maps are kept as their raw text.
pub(crate) fn split(content: &str) -> (Option<BTreeMap<String, String>>, &str) {
    let text = content.strip_prefix('\u{feff}').unwrap_or(content);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, content);
    };
    let mut end = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = end else { return (None, content) };
    (Some(parse(&rest[..yaml_end])), &rest[body_start..])
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_owned();
        }
    }
    v.to_owned()
}

fn parse(yaml: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in yaml.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        match (indented, &current) {
            (true, Some(key)) => {
                let item = line.trim();
                let piece = item.strip_prefix("- ").map(unquote).unwrap_or_else(|| item.to_owned());
                let value: &mut String = map.entry(key.clone()).or_default();
                if !value.is_empty() {
                    value.push_str(", ");
                }
                value.push_str(&piece);
            }
            (false, _) => {
                let Some((key, value)) = line.split_once(':') else { continue };
                let key = key.trim().to_owned();
                let value = value.trim();
                let value = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                    Some(list) => list.split(',').map(unquote).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(", "),
                    None => unquote(value),
                };
                map.insert(key.clone(), value);
                current = Some(key);
            }
            (true, None) => {}
        }
    }
    map
}

fn names(list: Option<&String>) -> Vec<String> {
    list.map(|l| l.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn on_path(bin: &str) -> bool {
    if bin.contains('/') {
        return Path::new(bin).is_file();
    }
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(bin).is_file()))
}

/// Why the declared requirements (`bins`: programs on the `PATH`, `env`: variables that are
/// set) are not met here; `None` when they are.
pub(crate) fn unmet(metadata: &BTreeMap<String, String>) -> Option<String> {
    let bins: Vec<String> = names(metadata.get("bins")).into_iter().filter(|b| !on_path(b)).collect();
    let env: Vec<String> =
        names(metadata.get("env")).into_iter().filter(|v| std::env::var_os(v).is_none_or(|x| x.is_empty())).collect();
    let mut reasons = Vec::new();
    if !bins.is_empty() {
        reasons.push(format!("missing programs: {}", bins.join(", ")));
    }
    if !env.is_empty() {
        reasons.push(format!("missing environment variables: {}", env.join(", ")));
    }
    if reasons.is_empty() { None } else { Some(reasons.join("; ")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_keys_lists_and_body() {
        let text = "---\nname: review\ndescription: \"Review code: carefully\"\nbins:\n  - git\n  - sh\nenv: [A, 'B']\n---\n# Body\n";
        let (meta, body) = split(text);
        let meta = meta.unwrap();
        assert_eq!(meta["description"], "Review code: carefully");
        assert_eq!(meta["bins"], "git, sh");
        assert_eq!(meta["env"], "A, B");
        assert_eq!(body, "# Body\n");
        assert_eq!(split("# no frontmatter"), (None, "# no frontmatter"));
        assert_eq!(split("---\nunterminated: yes\n").0, None);
    }

    #[test]
    fn requirements() {
        let meta = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(unmet(&meta(&[("bins", "sh")])), None);
        let reason = unmet(&meta(&[("bins", "sh, no-such-program-xyz"), ("env", "NO_SUCH_VARIABLE_XYZ")])).unwrap();
        assert!(reason.contains("no-such-program-xyz") && reason.contains("NO_SUCH_VARIABLE_XYZ"), "{reason}");
    }
}
