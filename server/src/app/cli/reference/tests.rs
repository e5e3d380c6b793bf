//! docs/config.md and the README's flag table agree with the code, and every key of the config
//! file has its notes.

use super::*;

fn repo_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

#[test]
fn every_key_has_notes_and_every_note_a_key() {
    let keys: Vec<String> = file_keys().into_iter().map(|k| k.0).collect();
    let noted: Vec<&str> = NOTES.iter().map(|n| n.0).collect();
    let unnoted: Vec<&String> = keys.iter().filter(|k| !noted.contains(&k.as_str())).collect();
    let stale: Vec<&&str> = noted.iter().filter(|n| !keys.iter().any(|k| k == *n)).collect();
    assert!(unnoted.is_empty() && stale.is_empty(), "keys without notes: {unnoted:?}; notes without a key: {stale:?}");
}

#[test]
fn every_flag_a_note_names_exists() {
    let flags: Vec<String> =
        flags().into_iter().map(|f| f.0.split(' ').next().unwrap_or_default().to_owned()).collect();
    for (key, _, flag, _, _) in NOTES {
        for part in flag.split(", ").filter(|p| p.starts_with("--")) {
            assert!(flags.iter().any(|f| f == part), "{key}: no flag {part}");
        }
    }
}

#[test]
fn what_workspace_config_schema_says_takes_effect_agrees() {
    for section in crate::domain::workspace::settings::schema() {
        for field in section.fields {
            let path = section.path.clone().unwrap_or_default();
            let key = if path == "external_channels" {
                format!("{path}.<name>.{}", field.key)
            } else {
                format!("{path}.{}", field.key)
            };
            let Some(note) = NOTES.iter().find(|n| n.0 == key) else { panic!("{key} is not a key of the file") };
            let live = matches!(field.reload, appserver_protocol::ReloadBehavior::Hot);
            assert_eq!(live, note.3 == Effect::Live, "{key}");
        }
    }
}

#[test]
fn docs_config_md_is_what_the_code_renders() {
    let path = repo_file("docs/config.md");
    let rendered = render();
    if std::env::var_os("APPSERVER_WRITE_DOCS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/config.md is out of date: APPSERVER_WRITE_DOCS=1 cargo test -p appserver --lib cli::reference"
    );
}

#[test]
fn the_readme_flag_table_names_every_flag_and_no_other() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let table: Vec<&str> =
        readme.lines().filter_map(|l| l.strip_prefix("| `--")).filter_map(|l| l.split([' ', '`']).next()).collect();
    let flags: Vec<String> =
        flags().into_iter().map(|f| f.0[2..].split(' ').next().unwrap_or_default().to_owned()).collect();
    let missing: Vec<&String> = flags.iter().filter(|f| !table.contains(&f.as_str())).collect();
    let unknown: Vec<&&str> = table.iter().filter(|t| !flags.iter().any(|f| f == **t)).collect();
    assert!(missing.is_empty() && unknown.is_empty(), "README lacks {missing:?}; README names unknown {unknown:?}");
}
