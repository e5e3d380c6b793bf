//! A `SKILL.md`'s YAML frontmatter (the `---` block at its top, read by `infra::front_matter`)
//! as the flat key/value map skills use (`name`, `description`, `bins`, `env`, `always`, ...),
//! and the requirements it declares.

use std::collections::BTreeMap;
use std::path::Path;

use crate::infra::front_matter;

/// The frontmatter's top-level keys (`None` when there is none, or when it is not valid YAML:
/// `parse` says why) and the body after it. A key's list items are joined with `, `; nested
/// maps are kept as their YAML text.
pub(crate) fn split(content: &str) -> (Option<BTreeMap<String, String>>, &str) {
    front_matter::split(content)
}

/// As `split`, but a frontmatter that is not a valid YAML map is an error naming the cause
/// (the YAML parser's message, with its line and column in the block).
pub(crate) fn parse(content: &str) -> Result<(Option<front_matter::Metadata>, &str), String> {
    front_matter::parse(content)
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
