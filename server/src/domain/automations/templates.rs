//! Task templates (`automation/template/*`): the built-in ones (`builtin.rs`), then the
//! workspace's user templates, each `<workspace>/.appserver/automations/templates/<id>/template.md`
//! (DotCraft's `<CraftPath>/automations/templates/…`): YAML front matter with the template's
//! fields, then its whole `workflow.md`. Ids, sizes and the number of user templates are bounded;
//! a symbolic link in the folder is never followed.

use std::path::{Path, PathBuf};

use appserver_protocol::{AutomationSchedule, AutomationTemplate, AutomationTemplateSaveParams};
use serde::{Deserialize, Serialize};

use super::AutomationError;
use super::builtin;
use crate::infra::clock::UtcTime;
use crate::infra::front_matter;

/// Most user templates kept (and listed).
pub(crate) const MAX_USER_TEMPLATES: usize = 100;
/// Longest `title` (characters), as DotCraft.
pub(crate) const MAX_TITLE: usize = 200;
/// Longest description (characters), as DotCraft's tasks.
pub(crate) const MAX_DESCRIPTION: usize = 10_000;
/// Longest workflow (bytes).
pub(crate) const MAX_WORKFLOW: usize = 64 * 1024;
/// Longest short field (icon, category, a default's name), in characters.
const MAX_SHORT: usize = 200;
/// Largest `template.md` read.
const MAX_FILE: u64 = 128 * 1024;

/// Whether `id` has the shape `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$`.
pub(crate) fn valid_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

/// The folder of the user templates.
pub(crate) fn root(workspace: &Path) -> PathBuf {
    workspace.join(".appserver").join("automations").join("templates")
}

/// A schedule in the file, DotCraft's snake_case keys.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ScheduleYaml {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    every_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    initial_delay_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    daily_hour: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    daily_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tz: Option<String>,
}

impl From<AutomationSchedule> for ScheduleYaml {
    fn from(s: AutomationSchedule) -> Self {
        let AutomationSchedule { kind, at_ms, every_ms, initial_delay_ms, daily_hour, daily_minute, expr, tz } = s;
        ScheduleYaml { kind, at_ms, every_ms, initial_delay_ms, daily_hour, daily_minute, expr, tz }
    }
}

impl From<ScheduleYaml> for AutomationSchedule {
    fn from(s: ScheduleYaml) -> Self {
        let ScheduleYaml { kind, at_ms, every_ms, initial_delay_ms, daily_hour, daily_minute, expr, tz } = s;
        AutomationSchedule { kind, at_ms, every_ms, initial_delay_ms, daily_hour, daily_minute, expr, tz }
    }
}

/// The front matter of `template.md`.
#[derive(Debug, Serialize)]
struct TemplateFile<'a> {
    id: &'a str,
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    icon: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_schedule: Option<ScheduleYaml>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_workspace_mode: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_approval_policy: Option<&'a str>,
    needs_thread_binding: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_description: Option<&'a str>,
    created_at: &'a str,
    updated_at: &'a str,
}

/// Every template: the built-ins, then the user templates by id.
pub(crate) async fn list(workspace: &Path) -> Vec<AutomationTemplate> {
    let mut out = builtin::templates();
    out.extend(user_templates(workspace).await);
    out
}

/// A template by id, built-in or the user's.
pub(crate) async fn find(workspace: &Path, id: &str) -> Option<AutomationTemplate> {
    if let Some(found) = builtin::templates().into_iter().find(|t| t.id == id) {
        return Some(found);
    }
    if !valid_id(id) {
        return None;
    }
    read(&root(workspace).join(id)).await
}

async fn user_templates(workspace: &Path) -> Vec<AutomationTemplate> {
    let Ok(mut entries) = tokio::fs::read_dir(root(workspace)).await else { return Vec::new() };
    let mut ids = Vec::new();
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name().to_string_lossy().into_owned();
        if valid_id(&name) {
            ids.push(name);
        }
        if ids.len() >= MAX_USER_TEMPLATES * 2 {
            break;
        }
    }
    ids.sort();
    let mut out = Vec::new();
    for id in ids {
        if let Some(template) = read(&root(workspace).join(&id)).await.filter(|t| t.id == id) {
            out.push(template);
        }
        if out.len() >= MAX_USER_TEMPLATES {
            break;
        }
    }
    out
}

/// A user template's folder, read: `None` when it is missing, a link, too large or not one.
async fn read(dir: &Path) -> Option<AutomationTemplate> {
    if !tokio::fs::symlink_metadata(dir).await.ok()?.is_dir() {
        return None;
    }
    let file = dir.join("template.md");
    let meta = tokio::fs::symlink_metadata(&file).await.ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    let text = tokio::fs::read_to_string(&file).await.ok()?;
    let (meta, body) = front_matter::parse(&text).ok()?;
    let meta = meta?;
    let get = |key: &str| meta.get(key).filter(|v| !v.is_empty()).cloned();
    let schedule = get("default_schedule").and_then(|y| front_matter::from_yaml::<ScheduleYaml>(&y).ok());
    Some(AutomationTemplate {
        id: get("id")?,
        title: get("title")?,
        description: get("description"),
        icon: get("icon"),
        category: get("category"),
        workflow_markdown: body.trim_start_matches(['\r', '\n']).to_owned(),
        default_schedule: schedule.map(Into::into),
        default_workspace_mode: get("default_workspace_mode"),
        default_approval_policy: get("default_approval_policy"),
        needs_thread_binding: get("needs_thread_binding").map(|v| v == "true"),
        default_title: get("default_title"),
        default_description: get("default_description"),
        is_user: true,
        created_at: get("created_at"),
        updated_at: get("updated_at"),
    })
}

/// Checks a save's fields (DotCraft's rules, and appserver's bounds); the id it saves under.
fn check(p: &AutomationTemplateSaveParams) -> Result<String, AutomationError> {
    let invalid = |why: String| Err(AutomationError::Invalid(why));
    if p.title.trim().is_empty() {
        return invalid("'title' is required.".into());
    }
    if p.title.chars().count() > MAX_TITLE {
        return invalid(format!("'title' must be {MAX_TITLE} characters or less."));
    }
    if p.workflow_markdown.trim().is_empty() {
        return invalid("'workflowMarkdown' is required.".into());
    }
    if p.workflow_markdown.len() > MAX_WORKFLOW {
        return invalid(format!("'workflowMarkdown' must be {MAX_WORKFLOW} bytes or less."));
    }
    let long = |v: &Option<String>, max: usize| v.as_deref().is_some_and(|v| v.chars().count() > max);
    if long(&p.description, MAX_DESCRIPTION) || long(&p.default_description, MAX_DESCRIPTION) {
        return invalid(format!("descriptions must be {MAX_DESCRIPTION} characters or less."));
    }
    let short = [&p.icon, &p.category, &p.default_title, &p.default_workspace_mode, &p.default_approval_policy];
    if short.into_iter().any(|v| long(v, MAX_SHORT)) {
        return invalid(format!("icon, category and the defaults must be {MAX_SHORT} characters or less."));
    }
    if let Some(schedule) = p.default_schedule.clone().filter(|s| s.kind != "once") {
        crate::domain::cron::schedule::check(&schedule.into()).map_err(AutomationError::Invalid)?;
    }
    let id = match p.id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
        Some(id) => id.to_owned(),
        None => format!("user-{:010x}", fastrand::u64(..) & 0xff_ffff_ffff),
    };
    if !valid_id(&id) {
        return invalid("'id' must match ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$.".into());
    }
    if builtin::is_builtin(&id) {
        return invalid(format!("Template id '{id}' is reserved by a built-in template."));
    }
    Ok(id)
}

/// Creates or replaces a user template.
pub(crate) async fn save(
    workspace: &Path,
    p: AutomationTemplateSaveParams,
) -> Result<AutomationTemplate, AutomationError> {
    let id = check(&p)?;
    let dir = root(workspace).join(&id);
    let existing = match tokio::fs::symlink_metadata(&dir).await {
        Ok(meta) if meta.is_dir() => read(&dir).await,
        Ok(_) => return Err(AutomationError::Invalid(format!("'{id}' is not a template folder"))),
        Err(_) => None,
    };
    if existing.is_none() && user_templates(workspace).await.len() >= MAX_USER_TEMPLATES {
        return Err(AutomationError::Invalid(format!("at most {MAX_USER_TEMPLATES} user templates")));
    }
    let now = UtcTime::now().rfc3339();
    let created = existing.and_then(|t| t.created_at).unwrap_or_else(|| now.clone());
    let schedule = p.default_schedule.clone().filter(|s| s.kind != "once");
    let file = TemplateFile {
        id: &id,
        title: p.title.trim(),
        description: p.description.as_deref(),
        icon: p.icon.as_deref(),
        category: p.category.as_deref(),
        default_schedule: schedule.map(Into::into),
        default_workspace_mode: p.default_workspace_mode.as_deref(),
        default_approval_policy: p.default_approval_policy.as_deref(),
        needs_thread_binding: p.needs_thread_binding,
        default_title: p.default_title.as_deref(),
        default_description: p.default_description.as_deref(),
        created_at: &created,
        updated_at: &now,
    };
    let text = front_matter::render(&file, &p.workflow_markdown).map_err(AutomationError::Io)?;
    write(&dir, &text).await.map_err(|e| AutomationError::Io(format!("cannot save the template: {e}")))?;
    read(&dir).await.ok_or_else(|| AutomationError::Io("the saved template cannot be read back".into()))
}

/// Writes `template.md` in `dir` (made if need be) through a temporary file and a rename.
async fn write(dir: &Path, text: &str) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    let temp = dir.join(format!(".template.md.{:08x}", fastrand::u32(..)));
    tokio::fs::write(&temp, text).await?;
    match tokio::fs::rename(&temp, dir.join("template.md")).await {
        Ok(()) => Ok(()),
        Err(err) => {
            let _ = tokio::fs::remove_file(&temp).await;
            Err(err)
        }
    }
}

/// Deletes a user template; a missing one is no error. Built-in ids and bad shapes are refused.
pub(crate) async fn delete(workspace: &Path, id: &str) -> Result<(), AutomationError> {
    if id.trim().is_empty() {
        return Err(AutomationError::Invalid("'id' is required.".into()));
    }
    if builtin::is_builtin(id) {
        return Err(AutomationError::Invalid(format!(
            "Template id '{id}' is a built-in template and cannot be deleted."
        )));
    }
    if !valid_id(id) {
        return Err(AutomationError::Invalid("'id' has an invalid shape.".into()));
    }
    let dir = root(workspace).join(id);
    let removed = match tokio::fs::symlink_metadata(&dir).await {
        Ok(meta) if meta.is_dir() => tokio::fs::remove_dir_all(&dir).await,
        Ok(_) => tokio::fs::remove_file(&dir).await,
        Err(_) => Ok(()),
    };
    removed.map_err(|e| AutomationError::Io(format!("cannot delete the template: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_specified_shape() {
        for ok in ["a", "A9", "user-0123456789", "x_y-z", &"a".repeat(64)] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in ["", "-a", "_a", "../x", "a/b", "a.b", "a b", &"a".repeat(65), "é"] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_saved_template_reads_back_with_its_fields_and_keeps_its_creation_time() {
        let dir = tempfile::tempdir().unwrap();
        let params = AutomationTemplateSaveParams {
            id: Some("mine".into()),
            title: "Mine".into(),
            workflow_markdown: "---\nmax_turns: 3\n---\n\nDo it.\n".into(),
            default_schedule: Some(AutomationSchedule {
                kind: "daily".into(),
                daily_hour: Some(9),
                daily_minute: Some(0),
                ..Default::default()
            }),
            needs_thread_binding: true,
            ..Default::default()
        };
        let saved = save(dir.path(), params.clone()).await.unwrap();
        assert!(saved.is_user);
        assert_eq!(saved.workflow_markdown, params.workflow_markdown);
        assert_eq!(saved.default_schedule.as_ref().unwrap().daily_hour, Some(9));
        assert_eq!(saved.needs_thread_binding, Some(true));
        let again = save(dir.path(), AutomationTemplateSaveParams { title: "Renamed".into(), ..params }).await.unwrap();
        assert_eq!((again.title.as_str(), &again.created_at), ("Renamed", &saved.created_at));
        let listed = list(dir.path()).await;
        assert_eq!(listed.iter().filter(|t| t.is_user).count(), 1);
        delete(dir.path(), "mine").await.unwrap();
        delete(dir.path(), "mine").await.unwrap();
        assert!(find(dir.path(), "mine").await.is_none());
    }
}
