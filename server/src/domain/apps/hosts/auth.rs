//! A descriptor's `auth`: how an `http` app's requests carry a credential, and where the
//! credential comes from — never the descriptor itself. Read from every published spelling:
//! appserver's `{type: "bearer" | "api_key" | "basic", token_env | token_file}`, the AAI spec's
//! `{type: "apiKey", apiKey {location, name, prefix}}`, and `oauth2` / `appCredential` (whose
//! token the user obtains: sent as a bearer token). The credential is an environment variable
//! (`token_env`), a file (`token_file`, in the descriptor's directory: no absolute path, no
//! `..`) or, when the descriptor names neither (the published ones never do), the variable
//! `AAI_<APP_ID>_TOKEN`.

use serde::Deserialize;
use serde_json::Value;

/// How the credential goes into a request, and where it is read from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct HttpAuth {
    pub(crate) scheme: Scheme,
    pub(crate) source: Source,
}

/// How the credential is sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scheme {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `<name>: <prefix> <token>` as a header, or `?<name>=<token>` in the query.
    ApiKey { name: String, in_query: bool, prefix: Option<String> },
    /// `Authorization: Basic base64(<username>:<token>)`.
    Basic { username: String },
}

/// Where the credential is read from, at each request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    Env(String),
    /// Relative to the descriptor's directory.
    File(String),
    /// `AAI_<APP_ID>_TOKEN`: resolved with the app's id by [`HttpAuth::for_app`].
    Default,
}

impl HttpAuth {
    /// The auth with its default source named after the app.
    pub(crate) fn for_app(mut self, app_id: &str) -> HttpAuth {
        if self.source == Source::Default {
            self.source = Source::Env(default_env(app_id));
        }
        self
    }
}

/// `AAI_<APP_ID>_TOKEN`, the app id upper-cased with every other character than a letter or a
/// digit made `_` (`com.notion.api`: `AAI_COM_NOTION_API_TOKEN`).
pub(crate) fn default_env(app_id: &str) -> String {
    let id: String =
        app_id.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("AAI_{id}_TOKEN")
}

impl TryFrom<Value> for HttpAuth {
    type Error = String;

    fn try_from(value: Value) -> Result<HttpAuth, String> {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        // The AAI spec nests a type's fields under its name (`apiKey {…}`).
        let inner = value.get(&kind).filter(|v| v.is_object()).unwrap_or(&value);
        let text =
            |field: &str| inner.get(field).or_else(|| value.get(field)).and_then(Value::as_str).map(str::to_owned);
        let scheme = match kind.as_str() {
            "bearer" | "oauth2" | "appCredential" | "app_credential" => Scheme::Bearer,
            "apiKey" | "api_key" => {
                let name = text("name").ok_or("apiKey.name: missing: the header or query parameter to send")?;
                let in_query = match text("location").as_deref() {
                    None | Some("header") => false,
                    Some("query") => true,
                    Some(other) => return Err(format!("apiKey.location: `{other}` is neither `header` nor `query`")),
                };
                Scheme::ApiKey { name, in_query, prefix: text("prefix").filter(|p| !p.is_empty()) }
            }
            "basic" => Scheme::Basic { username: text("username").ok_or("username: missing for basic auth")? },
            "" => return Err("type: missing (bearer, apiKey, basic, oauth2 or appCredential)".into()),
            other => {
                return Err(format!(
                    "type: `{other}` is not an auth appserver sends (bearer, apiKey, basic, oauth2 or appCredential)"
                ));
            }
        };
        let source = match (text("token_env"), text("token_file")) {
            (Some(_), Some(_)) => return Err("token_env and token_file: name one".into()),
            (Some(var), None) => Source::Env(var),
            (None, Some(file)) if file.starts_with('/') || file.split(['/', '\\']).any(|c| c == "..") => {
                return Err(format!("token_file: `{file}` must be a file in the descriptor's folder"));
            }
            (None, Some(file)) => Source::File(file),
            (None, None) => Source::Default,
        };
        Ok(HttpAuth { scheme, source })
    }
}

/// Reads a published `auth` value (at `field`), the error naming the field.
pub(crate) fn read(value: Value, field: &str) -> Result<HttpAuth, String> {
    HttpAuth::try_from(value).map_err(|e| format!("{field}.{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_published_spelling_reads() {
        let notion = json!({"type": "apiKey", "apiKey": {"location": "header", "name": "Authorization", "prefix": "Bearer", "obtainUrl": "x"}});
        let auth = read(notion, "auth").unwrap().for_app("com.notion.api");
        assert_eq!(auth.source, Source::Env("AAI_COM_NOTION_API_TOKEN".into()));
        assert_eq!(
            auth.scheme,
            Scheme::ApiKey { name: "Authorization".into(), in_query: false, prefix: Some("Bearer".into()) }
        );
        let ours = json!({"type": "api_key", "name": "key", "location": "query", "token_file": "k.txt"});
        let auth = read(ours, "auth").unwrap();
        assert_eq!(
            (auth.scheme, auth.source),
            (Scheme::ApiKey { name: "key".into(), in_query: true, prefix: None }, Source::File("k.txt".into()))
        );
        let feishu = json!({"type": "appCredential", "appCredential": {"tokenEndpoint": "https://x", "tokenType": "tenantAccessToken"}});
        assert_eq!(read(feishu, "auth").unwrap().scheme, Scheme::Bearer);
        let basic = json!({"type": "basic", "username": "ann", "token_env": "PW"});
        assert_eq!(read(basic, "auth").unwrap().scheme, Scheme::Basic { username: "ann".into() });
        let err = read(json!({"type": "cookie", "cookie": {}}), "auth").unwrap_err();
        assert!(err.starts_with("auth.type: `cookie`"), "{err}");
        let err = read(json!({"type": "bearer", "token_file": "../../.ssh/id_rsa"}), "auth").unwrap_err();
        assert!(err.starts_with("auth.token_file"), "{err}");
        let err = read(json!({"type": "apiKey", "apiKey": {}}), "auth").unwrap_err();
        assert!(err.starts_with("auth.apiKey.name"), "{err}");
    }
}
