//! What an `http` descriptor app's tool call sends: the path with its parameters put in
//! (`/users/{userId}` or `/pages/${page_id}`, the value percent-encoded as one path segment), the
//! `body_template` filled (a string that is exactly `"${name}"` becomes the param's JSON value,
//! and is left out when the param is not given; `${name}` inside a longer string is replaced by
//! its text), and the params neither of them used as the query string (GET, HEAD) or as the JSON
//! body (other methods, when there is no template).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

/// Everything but RFC 3986's unreserved characters is encoded in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// One tool's call, from its descriptor.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub(crate) method: reqwest::Method,
    /// The path under `base_url`, with its `{name}` / `${name}` placeholders.
    pub(crate) path: String,
    /// The tool's own headers, after the descriptor's default headers.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body_template: Option<Value>,
}

/// A call ready to send.
#[derive(Debug, PartialEq)]
pub(crate) struct Call {
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) body: Option<Value>,
}

/// The names a path's placeholders use, in order.
pub(crate) fn placeholders(path: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        names.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    names
}

/// A param's text: a string as it is, anything else as JSON.
fn text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// Builds the call of `endpoint` with `params`; the error says which param is missing.
pub(crate) fn build(endpoint: &Endpoint, params: &Value) -> Result<Call, String> {
    let mut rest: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    let mut path = String::new();
    let mut tail = endpoint.path.as_str();
    while let Some(open) = tail.find('{') {
        let Some(close) = tail[open..].find('}').map(|c| open + c) else { break };
        let name = &tail[open + 1..close];
        let value = match rest.remove(name) {
            Some(Value::Null) | None => {
                return Err(format!("`{name}` is required: the path {} uses it", endpoint.path));
            }
            Some(value) => value,
        };
        let literal = tail[..open].strip_suffix('$').unwrap_or(&tail[..open]);
        path.push_str(literal);
        path.extend(utf8_percent_encode(&text(&value), SEGMENT));
        tail = &tail[close + 1..];
    }
    path.push_str(tail);
    let body = match &endpoint.body_template {
        Some(template) => fill(template, &mut rest),
        None => None,
    };
    let mut call = Call { path, query: Vec::new(), body };
    if matches!(endpoint.method, reqwest::Method::GET | reqwest::Method::HEAD) {
        call.query = rest.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, text(&v))).collect();
    } else if endpoint.body_template.is_none() {
        call.body = Some(Value::Object(rest));
    }
    Ok(call)
}

/// The template with the params put in (each one used is taken out of `params`); `None` when a
/// whole value's param is not given.
fn fill(template: &Value, params: &mut Map<String, Value>) -> Option<Value> {
    match template {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("${").and_then(|n| n.strip_suffix('}')).filter(|n| !n.contains('}')) {
                return params.remove(name).filter(|v| !v.is_null());
            }
            let mut out = String::new();
            let mut tail = s.as_str();
            while let Some(open) = tail.find("${") {
                let Some(close) = tail[open..].find('}').map(|c| open + c) else { break };
                out.push_str(&tail[..open]);
                let name = &tail[open + 2..close];
                if let Some(value) = params.remove(name) {
                    out.push_str(&text(&value));
                }
                tail = &tail[close + 1..];
            }
            out.push_str(tail);
            Some(Value::String(out))
        }
        Value::Array(items) => Some(Value::Array(items.iter().filter_map(|v| fill(v, params)).collect())),
        Value::Object(map) => {
            Some(Value::Object(map.iter().filter_map(|(k, v)| fill(v, params).map(|v| (k.clone(), v))).collect()))
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn endpoint(method: &str, path: &str, body_template: Option<Value>) -> Endpoint {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        Endpoint { method, path: path.into(), headers: Vec::new(), body_template }
    }

    #[test]
    fn path_params_are_encoded_and_leave_the_query() {
        let e = endpoint("GET", "/contact/v3/users/{userId}", None);
        let call = build(&e, &json!({"userId": "ou_1/../x y", "userIdType": "openId"})).unwrap();
        assert_eq!(call.path, "/contact/v3/users/ou_1%2F..%2Fx%20y");
        assert_eq!(call.query, vec![("userIdType".to_owned(), "openId".to_owned())]);
        assert_eq!(call.body, None);
        let e = endpoint("PATCH", "/pages/${page_id}", None);
        let call = build(&e, &json!({"page_id": 7, "archived": true})).unwrap();
        assert_eq!((call.path.as_str(), call.body), ("/pages/7", Some(json!({"archived": true}))));
        let err = build(&e, &json!({})).unwrap_err();
        assert!(err.starts_with("`page_id` is required"), "{err}");
        assert_eq!(placeholders("/repos/{namespace}/docs/{slug}"), vec!["namespace", "slug"]);
    }

    #[test]
    fn a_body_template_takes_the_params_it_names() {
        let template = json!({
            "parent": {"database_id": "${database_id}"},
            "properties": {"title": {"title": [{"text": {"content": "${title}"}}]}},
            "page_size": "${page_size}",
            "note": "made by ${who}"
        });
        let e = endpoint("POST", "/pages", Some(template));
        let call = build(&e, &json!({"database_id": "db1", "title": "Hi", "who": "me", "extra": 1})).unwrap();
        assert_eq!(
            call.body,
            Some(json!({
                "parent": {"database_id": "db1"},
                "properties": {"title": {"title": [{"text": {"content": "Hi"}}]}},
                "note": "made by me"
            }))
        );
        let e = endpoint("POST", "/search", Some(json!({"filter": "${filter}"})));
        let call = build(&e, &json!({"filter": {"value": "page"}})).unwrap();
        assert_eq!(call.body, Some(json!({"filter": {"value": "page"}})));
    }
}
