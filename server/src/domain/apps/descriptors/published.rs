//! Tests: the descriptors the AAI project published (copies in
//! tests/fixtures/aai_gateway/published, licence in its NOTICE.md), each of its shapes read as
//! an app or refused naming the field at fault, and the requests the HTTP ones make.

use std::path::Path;

use serde_json::json;

use super::format::{Descriptor, Execution};
use crate::domain::apps::hosts::request::{self, Endpoint};

fn published(name: &str) -> Result<Descriptor, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/aai_gateway/published").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Descriptor::parse_named(&text, Some("folder"))
}

fn endpoint(d: &Descriptor, tool: &str) -> Endpoint {
    let tool = d.tools.iter().find(|t| t.name == tool).unwrap();
    let method = reqwest::Method::from_bytes(tool.http_method().unwrap_or("POST").as_bytes()).unwrap();
    let path = tool.http_path().unwrap().to_owned();
    Endpoint { method, path, headers: Vec::new(), body_template: tool.http_body_template().cloned() }
}

#[test]
fn the_http_descriptors_load_with_their_headers_and_auth() {
    for (file, id, header, auth_env) in [
        ("notion-api-snake-1.0.json", "com.notion.api", Some("Notion-Version"), "AAI_COM_NOTION_API_TOKEN"),
        ("notion-api-platforms-web.json", "com.notion.api", Some("Notion-Version"), "AAI_COM_NOTION_API_TOKEN"),
        ("notion-1.x.json", "com.notion.api", Some("Notion-Version"), "AAI_COM_NOTION_API_TOKEN"),
        ("feishu-1.x.json", "com.feishu.api", None, "AAI_COM_FEISHU_API_TOKEN"),
        ("yuque-1.x.json", "com.yuque.api", None, "AAI_COM_YUQUE_API_TOKEN"),
    ] {
        let d = published(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(d.app.id, id, "{file}");
        let Execution::Http { default_headers, auth, .. } = &d.execution else { panic!("{file}: not http") };
        if let Some(header) = header {
            assert!(default_headers.contains_key(header), "{file}: {default_headers:?}");
        }
        let auth = auth.clone().unwrap_or_else(|| panic!("{file}: no auth")).for_app(&d.app.id);
        assert_eq!(auth.source, super::super::hosts::auth::Source::Env(auth_env.into()), "{file}");
    }
}

#[test]
fn their_calls_put_path_parameters_and_body_templates_in() {
    let feishu = published("feishu-1.x.json").unwrap();
    let call = request::build(&endpoint(&feishu, "getUserInfo"), &json!({"userId": "ou_7", "userIdType": "openId"}));
    let call = call.unwrap();
    assert_eq!(call.path, "/contact/v3/users/ou_7");
    assert_eq!(call.query, vec![("userIdType".to_owned(), "openId".to_owned())]);
    let notion = published("notion-api-snake-1.0.json").unwrap();
    let call = request::build(&endpoint(&notion, "create_page"), &json!({"database_id": "db", "title": "T"})).unwrap();
    assert_eq!(call.path, "/pages");
    assert_eq!(call.body.unwrap()["parent"], json!({"database_id": "db"}));
    let call = request::build(&endpoint(&notion, "get_page"), &json!({"page_id": "p 1"})).unwrap();
    assert_eq!(call.path, "/pages/p%201");
    let old = published("notion-api-platforms-web.json").unwrap();
    let call = request::build(&endpoint(&old, "search"), &json!({"query": "q"})).unwrap();
    assert_eq!(call.body, Some(json!({"query": "q"})));
}

#[test]
fn what_cannot_run_is_refused_naming_the_field() {
    for (file, field) in [
        ("claude-code-2.0-acp-agent.json", "access.protocol: `acp-agent`"),
        ("claude-code-agent-start.json", "start: `acp-agent`"),
        ("gemini-cli-1.x-acp.json", "execution.type: `acp`"),
        ("apple-mail-1.0-ipc.json", "execution.type: `ipc`"),
        ("apple-finder-platforms-macos.json", "platforms.macos.automation: `applescript`"),
    ] {
        let err = published(file).unwrap_err();
        assert!(err.starts_with(field), "{file}: {err}");
    }
}
