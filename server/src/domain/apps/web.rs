//! Web apps found on demand (`app/discover`, the agent tool `app_discover`): the descriptor a
//! site publishes at `/.well-known/aai.json`, fetched (10 s at most, only http(s), never from or
//! through a loopback or private address unless `--allow-private-discovery`, read in chunks and
//! dropped as soon as it passes 1 MiB), cached (the descriptor's `cache_ttl_secs`, else the
//! answer's `Cache-Control: max-age`, else 24 h), served stale when a new fetch fails, and
//! registered as an app whose tools are HTTP calls. Names the user confirmed for a URL are
//! remembered in the store.
//!
//! A web app is identified by its origin as well as its `app.id`: its app id is
//! `<app.id>@<origin>` and its window `web:<app.id>@<origin>`, so another origin publishing the
//! same `app.id` is another app — it cannot take the window, its log or the consents given to it.

use std::time::Duration;

use appserver_protocol::{AppDiscoverParams, AppDiscoverResult, AppRegisterParams};
use reqwest::Url;

use crate::domain::policy::is_public;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::AppError;
use super::descriptors::format::{Descriptor, Execution, MAX_DESCRIPTOR_BYTES};
use super::descriptors::host_for;
use super::service::{self, AppService};
use super::web_cache::Cached;
use crate::infra::clock::UtcTime;
use crate::infra::store::AppWrite;

/// Longest a fetch (with its redirects) may take.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a descriptor is used without fetching it again, unless it or the answer says.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);
const MAX_REDIRECTS: usize = 5;
/// Longest window id a registration accepts.
const MAX_WINDOW_ID: usize = 200;

fn invalid(message: String) -> AppError {
    AppError::InvalidParams(message)
}

/// The origin as it appears in a web app's id: `host` (https, its default port), `host:port`,
/// `http:host[:port]` for plain http.
fn origin_tag(origin: &Url) -> String {
    let host = origin.host_str().unwrap_or_default();
    let port = origin.port().map(|p| format!(":{p}")).unwrap_or_default();
    match origin.scheme() {
        "https" => format!("{host}{port}"),
        scheme => format!("{scheme}:{host}{port}"),
    }
}

/// The app id of a web descriptor's app published at `origin`.
pub(crate) fn web_app_id(descriptor: &Descriptor, origin: &Url) -> String {
    format!("{}@{}", descriptor.app.id, origin_tag(origin))
}

/// The window of a web descriptor's app published at `origin`.
pub(crate) fn web_window_id(descriptor: &Descriptor, origin: &Url) -> String {
    format!("web:{}", web_app_id(descriptor, origin))
}

/// `https://host[:port]` of a URL; only http(s).
fn origin_of(url: &str) -> Result<Url, AppError> {
    let with_scheme = if url.contains("://") { url.to_owned() } else { format!("https://{url}") };
    let parsed = Url::parse(&with_scheme).map_err(|e| invalid(format!("url: `{url}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(invalid(format!("url: `{url}` is not an http(s) URL")));
    }
    let mut origin = parsed;
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    // A credential in a URL the agent passed is never sent (reqwest would send it as Basic auth).
    let _ = origin.set_username("");
    let _ = origin.set_password(None);
    Ok(origin)
}

/// The origin `url` would be fetched from, as an approval shows it (without credentials); the
/// text itself when it is not a URL (the call then fails on it).
pub(crate) fn shown_origin(url: &str) -> String {
    origin_of(url).map(|o| o.as_str().trim_end_matches('/').to_owned()).unwrap_or_else(|_| url.to_owned())
}

/// Why a descriptor was not fetched.
#[derive(Debug)]
enum FetchError {
    /// Refused by the address rules: never tried.
    Refused(String),
    /// Tried, and failed.
    Failed(String),
}

impl From<String> for FetchError {
    fn from(reason: String) -> Self {
        FetchError::Failed(reason)
    }
}

/// Refuses a URL whose host resolves to a non-public address (unless allowed).
async fn check_address(url: &Url, allow_private: bool) -> Result<(), FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Refused(format!("{url}: only http(s) is followed")));
    }
    if allow_private {
        return Ok(());
    }
    let host = url.host_str().ok_or_else(|| FetchError::Refused(format!("{url}: no host")))?;
    let port = url.port_or_known_default().unwrap_or(443);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = tokio::net::lookup_host((host, port)).await.map_err(|e| format!("{host}: {e}"))?;
    for addr in addrs {
        if !is_public(addr.ip()) {
            let reason = format!("{host} is a non-public address ({}); see --allow-private-discovery", addr.ip());
            return Err(FetchError::Refused(reason));
        }
    }
    Ok(())
}

/// `max-age` of a `Cache-Control` header.
fn max_age(cache_control: Option<&str>) -> Option<Duration> {
    cache_control?.split(',').find_map(|part| {
        let value = part.trim().strip_prefix("max-age=")?;
        value.trim().parse::<u64>().ok().map(Duration::from_secs)
    })
}

/// Fetches `<origin>/.well-known/aai.json`, following redirects only to allowed addresses.
async fn fetch(origin: &Url, allow_private: bool) -> Result<(String, Option<Duration>), FetchError> {
    let client = crate::infra::tls::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|e| e.to_string())?;
    let mut url = origin.join("/.well-known/aai.json").map_err(|e| e.to_string())?;
    for _ in 0..=MAX_REDIRECTS {
        check_address(&url, allow_private).await?;
        let response = client.get(url.clone()).send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or("");
            url = url.join(location).map_err(|e| format!("{url}: bad redirect `{location}`: {e}"))?;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Failed(format!("{url}: HTTP {status}")));
        }
        let ttl = max_age(response.headers().get("cache-control").and_then(|v| v.to_str().ok()));
        let body = read_capped(response, &url).await?;
        return Ok((String::from_utf8_lossy(&body).into_owned(), ttl));
    }
    Err(FetchError::Failed(format!("{origin}: more than {MAX_REDIRECTS} redirects")))
}

/// The body, read a chunk at a time and given up (the connection dropped) as soon as it passes
/// [`MAX_DESCRIPTOR_BYTES`], or at once when its announced length does.
async fn read_capped(mut response: reqwest::Response, url: &Url) -> Result<Vec<u8>, FetchError> {
    let over = || FetchError::Failed(format!("{url}: the descriptor is over {MAX_DESCRIPTOR_BYTES} bytes"));
    if response.content_length().is_some_and(|n| n > MAX_DESCRIPTOR_BYTES) {
        return Err(over());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if (body.len() + chunk.len()) as u64 > MAX_DESCRIPTOR_BYTES {
            return Err(over());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn answer(origin: &Url, entry: &Cached, cached: bool, stale: bool) -> AppDiscoverResult {
    AppDiscoverResult {
        window_id: entry.window_id.clone(),
        url: origin.as_str().trim_end_matches('/').to_owned(),
        descriptor: serde_json::from_str(&entry.text).unwrap_or(Value::Null),
        fetched_at: UtcTime { unix_millis: entry.fetched_at }.rfc3339(),
        expires_at: UtcTime { unix_millis: entry.expires_at }.rfc3339(),
        cached,
        stale,
    }
}

/// The URL `app/discover` is about: the given one, or the one a confirmed name stands for.
async fn target(apps: &AppService, p: &AppDiscoverParams) -> Result<Url, AppError> {
    match (&p.url, &p.name) {
        (Some(url), _) => origin_of(url),
        (None, Some(name)) => {
            let url = apps.store.app_name_url(&name.trim().to_lowercase()).await?.ok_or_else(|| {
                AppError::NotFound(format!("no web app is known by the name `{name}`; discover it by its URL"))
            })?;
            origin_of(&url)
        }
        (None, None) => Err(invalid("url or name: one of them is required".into())),
    }
}

/// `app/discover`: the web app at a URL (or a remembered name), fetched or from the cache, and
/// registered.
pub(crate) async fn discover(apps: &AppService, p: AppDiscoverParams) -> Result<AppDiscoverResult, AppError> {
    let origin = target(apps, &p).await?;
    let key = origin.as_str().to_owned();
    let now = apps.web.clock.now().unix_millis;
    let cached = apps.web.cached(&key);
    if let Some(entry) = &cached {
        if now < entry.expires_at && apps.registry.get(&entry.window_id).is_some() {
            return Ok(answer(&origin, entry, true, false));
        }
    }
    let fetched =
        tokio::time::timeout(FETCH_TIMEOUT, fetch(&origin, apps.config.allow_private_discovery)).await.unwrap_or_else(
            |_| Err(FetchError::Failed(format!("{origin}: no answer within {} s", FETCH_TIMEOUT.as_secs()))),
        );
    let (text, header_ttl) = match fetched {
        Ok(fetched) => fetched,
        Err(FetchError::Refused(reason)) => return Err(AppError::PermissionDenied(reason)),
        Err(FetchError::Failed(reason)) => {
            return match cached {
                Some(entry) => {
                    tracing::warn!(url = %origin, error = %reason, "web descriptor not fetched; serving the cached copy");
                    Ok(answer(&origin, &entry, true, true))
                }
                None => Err(AppError::App { code: "APP_NOT_FOUND".into(), message: reason }),
            };
        }
    };
    let descriptor = Descriptor::parse(&text)
        .map_err(|e| AppError::InvalidManifest(format!("{origin}.well-known/aai.json: {e}")))?;
    let ttl = descriptor.cache_ttl_secs.map(Duration::from_secs).or(header_ttl).unwrap_or(DEFAULT_TTL);
    let unchanged = cached.as_ref().filter(|c| c.text == text && apps.registry.get(&c.window_id).is_some());
    let host_token = match unchanged {
        Some(entry) => entry.host_token.clone(),
        None => register(apps, &descriptor, &origin).await?,
    };
    let ttl_millis = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    let entry = Cached {
        text,
        window_id: web_window_id(&descriptor, &origin),
        fetched_at: now,
        expires_at: now.saturating_add(ttl_millis),
        host_token,
    };
    apps.web.store(key.clone(), entry.clone());
    if let (Some(name), Some(_)) = (&p.name, &p.url) {
        let name = name.trim().to_lowercase();
        if !name.is_empty() {
            let url = key.trim_end_matches('/').to_owned();
            apps.store.write(AppWrite::SaveAppName { name, url, at: crate::infra::clock::now_rfc3339() }).await?;
        }
    }
    Ok(answer(&origin, &entry, false, false))
}

/// Registers a web descriptor's app published at `origin`. Only `http` execution, with a public
/// `base_url` (unless private addresses are allowed) and no `auth`: a remote descriptor may not
/// name local secrets.
async fn register(apps: &AppService, descriptor: &Descriptor, origin: &Url) -> Result<CancellationToken, AppError> {
    let window_id = web_window_id(descriptor, origin);
    if window_id.len() > MAX_WINDOW_ID {
        return Err(AppError::InvalidManifest(format!(
            "app.id: `{}` at {origin} makes a window id over {MAX_WINDOW_ID} characters",
            descriptor.app.id
        )));
    }
    let Execution::Http { base_url, auth, .. } = &descriptor.execution else {
        return Err(AppError::InvalidManifest("execution.type: a web descriptor must be `http`".into()));
    };
    if auth.is_some() {
        return Err(AppError::InvalidManifest(
            "execution.auth: a web descriptor may not name a local token (environment variable or file)".into(),
        ));
    }
    let base = Url::parse(base_url).map_err(|e| AppError::InvalidManifest(format!("execution.base_url: {e}")))?;
    if let Err(FetchError::Refused(reason) | FetchError::Failed(reason)) =
        check_address(&base, apps.config.allow_private_discovery).await
    {
        return Err(AppError::PermissionDenied(format!("execution.base_url: {reason}")));
    }
    let token = CancellationToken::new();
    let host = host_for(descriptor, &apps.config.workspace, "web", token.clone()).map_err(AppError::InvalidManifest)?;
    let mut manifest = descriptor.manifest();
    manifest.app_id = web_app_id(descriptor, origin);
    let params =
        AppRegisterParams { window_id: Some(window_id), manifest, file_associations: Vec::new(), thread_id: None };
    let registration = service::register(apps, host, params).await?;
    service::announce_registered(apps, &registration);
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for ip in ["127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "169.254.1.1", "100.64.0.1", "::1", "fd00::1"]
        {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
        assert!(!is_public("::ffff:127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn origins_and_max_age() {
        assert_eq!(origin_of("notion.so").unwrap().as_str(), "https://notion.so/");
        assert_eq!(origin_of("http://127.0.0.1:8/x?y").unwrap().as_str(), "http://127.0.0.1:8/");
        assert!(origin_of("ftp://example.com").is_err());
        assert_eq!(max_age(Some("public, max-age=60")), Some(Duration::from_secs(60)));
        assert_eq!(max_age(Some("no-store")), None);
    }

    #[test]
    fn a_web_apps_identity_includes_its_origin() {
        let text =
            r#"{"app":{"id":"com.example.notes","name":"Notes"},"execution":{"type":"http","base_url":"https://x"}}"#;
        let descriptor = Descriptor::parse(text).unwrap();
        let https = origin_of("notes.example.com").unwrap();
        let http = origin_of("http://127.0.0.1:8080").unwrap();
        assert_eq!(web_window_id(&descriptor, &https), "web:com.example.notes@notes.example.com");
        assert_eq!(web_app_id(&descriptor, &http), "com.example.notes@http:127.0.0.1:8080");
        assert_ne!(
            web_window_id(&descriptor, &origin_of("https://other.example").unwrap()),
            web_window_id(&descriptor, &https)
        );
    }
}
