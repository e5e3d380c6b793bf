//! `GET /api/apps`: the apps the desktop can open, one per `<workspace>/.appserver/apps/<id>/`
//! folder holding an `app.json` (`name`, `icon`, `description`, `entry`, `dialect`,
//! `fileAssociations`, `permissions`). A folder whose `app.json` is missing or malformed is left out
//! of `apps` (and logged), so one broken app does not hide the others, and listed under `problems`
//! with what is wrong, so the desktop can say so instead of the app vanishing.

use std::path::Path;

use appserver_protocol::AppPermissions;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Response;
use super::files::{apps_dir, confined, valid_id};

/// What is escaped in a URL path segment.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'.').remove(b'-').remove(b'_').remove(b'~');
/// At most this many apps are listed.
const MAX_APPS: usize = 256;
/// Largest `app.json` read.
const MAX_APP_JSON: u64 = 64 * 1024;

/// `app.json` as written by an app's author.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AppJson {
    name: String,
    #[serde(default)]
    icon: Option<String>,
    #[serde(default)]
    description: Option<String>,
    /// The page the iframe opens, relative to the app's folder.
    #[serde(default)]
    entry: Option<String>,
    /// `appserver` (our SDK, the default) or `mcp-apps` (the MCP Apps postMessage dialect).
    #[serde(default)]
    dialect: Option<String>,
    #[serde(default)]
    file_associations: Vec<Value>,
    /// What the app may do beyond its window (`{"callApps": true}`): the page registers the
    /// window with these, whatever the iframe's own manifest says.
    #[serde(default)]
    permissions: Option<AppPermissions>,
}

/// One app of the catalog, as the page gets it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CatalogEntry {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) icon: Option<String>,
    pub(crate) description: Option<String>,
    /// The iframe's URL: `/apps/<id>/<entry>`.
    pub(crate) entry: String,
    pub(crate) dialect: String,
    pub(crate) file_associations: Vec<Value>,
    pub(crate) permissions: Option<AppPermissions>,
}

/// An app folder that could not be listed, and why.
#[derive(Debug, Serialize)]
pub(crate) struct CatalogProblem {
    pub(crate) id: String,
    pub(crate) error: String,
}

/// `key`: the server's app key (it has a token): entries are `/apps/~KEY/<id>/…`.
pub(crate) async fn response(workspace: &Path, key: Option<&str>) -> Response {
    let (mut apps, problems) = list(workspace).await;
    if let Some(key) = key {
        for app in &mut apps {
            app.entry = app.entry.replacen("/apps/", &format!("/apps/~{key}/"), 1);
        }
    }
    let body = serde_json::json!({ "apps": apps, "problems": problems }).to_string().into_bytes();
    Response::ok("application/json", body)
}

/// Every app with a readable `app.json`, sorted by id, and the folders that have none (or a
/// malformed one), with why.
pub(crate) async fn list(workspace: &Path) -> (Vec<CatalogEntry>, Vec<CatalogProblem>) {
    let dir = apps_dir(workspace);
    let Ok(mut entries) = tokio::fs::read_dir(&dir).await else {
        return (Vec::new(), Vec::new());
    };
    let mut apps = Vec::new();
    let mut problems = Vec::new();
    while let Ok(Some(entry)) = entries.next_entry().await {
        let id = entry.file_name().to_string_lossy().into_owned();
        if !valid_id(&id) {
            continue;
        }
        match read_app(workspace, &id).await {
            Ok(app) => apps.push(app),
            Err(reason) => {
                tracing::warn!(app = %id, %reason, "app left out of the desktop's catalog");
                problems.push(CatalogProblem { id, error: reason });
            }
        }
        if apps.len() + problems.len() >= MAX_APPS {
            break;
        }
    }
    apps.sort_by(|a, b| a.id.cmp(&b.id));
    problems.sort_by(|a, b| a.id.cmp(&b.id));
    (apps, problems)
}

async fn read_app(workspace: &Path, id: &str) -> Result<CatalogEntry, String> {
    let path = confined(workspace, id, &["app.json".to_owned()])
        .await
        .ok_or("no app.json in the folder (or the folder is a symlink)")?;
    let meta = tokio::fs::metadata(&path).await.map_err(|e| e.to_string())?;
    if meta.len() > MAX_APP_JSON {
        return Err(format!("app.json is larger than {MAX_APP_JSON} bytes"));
    }
    let text = tokio::fs::read_to_string(&path).await.map_err(|e| e.to_string())?;
    let app: AppJson = serde_json::from_str(&text).map_err(|e| format!("app.json: {e}"))?;
    let entry = app.entry.unwrap_or_else(|| "index.html".to_owned());
    if entry.split('/').any(|s| s.is_empty() || s == "." || s == "..") || entry.contains('\\') {
        return Err(format!("app.json: entry `{entry}` must be a relative path inside the app's folder"));
    }
    let dialect = app.dialect.unwrap_or_else(|| "appserver".to_owned());
    if dialect != "appserver" && dialect != "mcp-apps" {
        return Err(format!("app.json: dialect `{dialect}` is neither `appserver` nor `mcp-apps`"));
    }
    let encoded: Vec<String> =
        entry.split('/').map(|s| percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()).collect();
    Ok(CatalogEntry {
        id: id.to_owned(),
        name: app.name,
        icon: app.icon,
        description: app.description,
        entry: format!("/apps/{id}/{}", encoded.join("/")),
        dialect,
        file_associations: app.file_associations,
        permissions: app.permissions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(valid_id("sheet") && valid_id("my-app_2.0"));
        assert!(!valid_id("") && !valid_id(".hidden") && !valid_id("..") && !valid_id("a/b") && !valid_id("a b"));
    }

    #[tokio::test]
    async fn lists_good_apps_and_skips_broken_ones() {
        let ws = tempfile::tempdir().unwrap();
        let dir = apps_dir(ws.path());
        for (id, json) in [
            ("sheet", r#"{"name":"Sheet","icon":"📊","entry":"index.html"}"#),
            ("broken", "{not json"),
            ("escape", r#"{"name":"X","entry":"../x.html"}"#),
            ("mcp", r#"{"name":"Counter","dialect":"mcp-apps","entry":"view page.html"}"#),
        ] {
            std::fs::create_dir_all(dir.join(id)).unwrap();
            std::fs::write(dir.join(id).join("app.json"), json).unwrap();
        }
        let (apps, problems) = list(ws.path()).await;
        let ids: Vec<&str> = apps.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["mcp", "sheet"]);
        assert_eq!(apps[0].entry, "/apps/mcp/view%20page.html");
        assert_eq!(apps[1].dialect, "appserver");
        // The folders left out are named, with why.
        let broken: Vec<(&str, &str)> = problems.iter().map(|p| (p.id.as_str(), p.error.as_str())).collect();
        assert_eq!(broken.len(), 2, "{broken:?}");
        assert_eq!(broken[0].0, "broken");
        assert!(broken[0].1.starts_with("app.json: key must be a string"), "{broken:?}");
        assert_eq!(broken[1].0, "escape");
    }
}
