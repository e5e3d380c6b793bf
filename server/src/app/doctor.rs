//! `appserver doctor`: what a user would otherwise learn from failures, checked and explained
//! before they happen — the workspace (writable, its state readable, a server already running),
//! the sandbox (what the kernel lets it enforce, and the limits' cgroup), the model endpoint
//! (reachable, TLS, key present and accepted), the token file, the listen ports, the open-file
//! limit against `--max-connections`, and in cluster mode PostgreSQL and NATS. One line per
//! check; the exit status is 1 when any check failed.

use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

use crate::infra::config::{ListenAddr, ServerConfig};
use crate::infra::store::StoreLocation;

/// How long a network check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    Warn,
    Fail,
}

/// The checks' lines.
#[derive(Debug, Default)]
struct Report {
    failed: bool,
}

impl Report {
    fn line(&mut self, verdict: Verdict, what: &str, detail: impl AsRef<str>) {
        let tag = match verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        };
        self.failed |= verdict == Verdict::Fail;
        let _ = writeln!(std::io::stdout().lock(), "{tag}  {what}: {}", detail.as_ref());
    }
}

/// Runs every check; the exit status (0: nothing failed).
pub async fn doctor(config: ServerConfig) -> u8 {
    let mut report = Report::default();
    let running = workspace(&config, &mut report);
    sandbox(&config, &mut report);
    model(&config, &mut report).await;
    token(&config, &mut report);
    if !running {
        ports(&config, &mut report);
    }
    open_files(&config, &mut report);
    cluster(&config, &mut report).await;
    u8::from(report.failed)
}

/// The workspace and its state; whether a server of it already runs.
fn workspace(config: &ServerConfig, report: &mut Report) -> bool {
    let ws = &config.workspace;
    if !ws.is_dir() {
        report.line(Verdict::Fail, "workspace", format!("{} does not exist or is not a folder", ws.display()));
        return false;
    }
    let probe = ws.join(".appserver").join(".doctor-probe");
    let writable = std::fs::create_dir_all(ws.join(".appserver")).and_then(|()| std::fs::write(&probe, b"x"));
    let _ = std::fs::remove_file(&probe);
    match writable {
        Ok(()) => report.line(Verdict::Ok, "workspace", format!("{} (its .appserver/ is writable)", ws.display())),
        Err(err) => report.line(Verdict::Fail, "workspace", format!("cannot write {}/.appserver: {err}", ws.display())),
    }
    match crate::infra::lock::locate(ws) {
        Ok(Some(info)) => {
            let url = info.ws_url.unwrap_or_else(|| "stdio".to_owned());
            report.line(Verdict::Ok, "server", format!("running (pid {}, {url})", info.pid));
            true
        }
        Ok(None) => {
            report.line(Verdict::Ok, "server", "none running on this workspace");
            false
        }
        Err(err) => {
            report.line(Verdict::Warn, "server", format!("cannot read the lock file: {err}"));
            false
        }
    }
}

/// What the sandbox enforces here.
fn sandbox(config: &ServerConfig, report: &mut Report) {
    let Ok(exe) = std::env::current_exe() else {
        report.line(Verdict::Fail, "sandbox", "cannot find this binary to run its sandbox helper");
        return;
    };
    let workspace = crate::domain::shell::canonical_workspace(&config.workspace.to_string_lossy());
    let confinement = crate::domain::shell::sandbox::Confinement {
        mode: crate::domain::policy::SandboxMode::WorkspaceWrite,
        workspace: workspace.clone(),
        writable: Vec::new(),
        hidden: vec![workspace.join(".appserver")],
        read_only: Vec::new(),
        network: crate::domain::shell::sandbox::Network::Off,
        limits: config.shell.sandbox.limits,
    };
    let status = crate::domain::shell::sandbox::probe(&exe, &confinement);
    match &status.reason {
        None => report.line(
            Verdict::Ok,
            "sandbox",
            "commands run confined (namespaces, Landlock, seccomp; the server's state hidden, no network)",
        ),
        Some(reason) => report.line(
            Verdict::Warn,
            "sandbox",
            format!("commands cannot be confined here, so every command is asked about, each time: {reason}"),
        ),
    }
    let limits = crate::domain::shell::sandbox::cgroup::describe();
    report.line(Verdict::Ok, "limits", limits);
}

/// The model endpoint: reachable, key accepted.
async fn model(config: &ServerConfig, report: &mut Report) {
    let Some(settings) = &config.model else {
        report.line(Verdict::Ok, "model", "none configured: the built-in agent answers (see docs/models.md)");
        return;
    };
    if settings.api_key.is_none() && !settings.base_url.starts_with("http://") {
        report.line(
            Verdict::Warn,
            "model",
            format!("no API key for {} (api_key, api_key_env, APPSERVER_API_KEY)", settings.base_url),
        );
    }
    let provider = match crate::infra::model_client::ModelProvider::new(settings.clone()) {
        Ok(provider) => provider,
        Err(err) => return report.line(Verdict::Fail, "model", format!("cannot make an HTTP client: {err}")),
    };
    let listed = tokio::time::timeout(CHECK_TIMEOUT, provider.list_models()).await;
    let what = format!("{} at {}", settings.model, settings.base_url);
    match listed {
        Err(_) => {
            report.line(Verdict::Fail, "model", format!("{what}: no answer within {} s", CHECK_TIMEOUT.as_secs()))
        }
        Ok(result) if result.success => {
            let known = result.models.iter().any(|m| m.id == settings.model);
            let note = if known || result.models.is_empty() { "" } else { " (the endpoint does not list this model)" };
            report.line(
                if note.is_empty() { Verdict::Ok } else { Verdict::Warn },
                "model",
                format!("{what}: reachable, key accepted{note}"),
            );
        }
        Ok(result) => {
            let message = result.error_message.unwrap_or_default();
            let why = match result.error_code.as_deref() {
                Some("Unauthorized") => format!("the key was refused: {message}"),
                Some("ProviderUnreachable") => format!("unreachable: {message}"),
                _ => message,
            };
            report.line(Verdict::Fail, "model", format!("{what}: {why}"));
        }
    }
}

/// The token file: readable, not empty, not readable by others.
fn token(config: &ServerConfig, report: &mut Report) {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = &config.ws_token_file else {
        let exposed = config.listen.iter().any(|l| matches!(l, ListenAddr::WebSocket(a) if !a.ip().is_loopback()));
        let (verdict, detail) = match (config.ws_token.is_some(), exposed) {
            (true, _) => (Verdict::Ok, "a token is set"),
            (false, false) => (Verdict::Ok, "none: loopback clients are trusted as the owner"),
            (false, true) => (Verdict::Fail, "none, on a non-loopback address"),
        };
        return report.line(verdict, "token", detail);
    };
    match std::fs::metadata(path) {
        Err(err) => report.line(Verdict::Fail, "token", format!("{}: {err}", path.display())),
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => report.line(
            Verdict::Warn,
            "token",
            format!(
                "{} can be read by other users (mode {:o}); chmod 600 it",
                path.display(),
                meta.permissions().mode() & 0o777
            ),
        ),
        Ok(_) => report.line(Verdict::Ok, "token", format!("{} (readable by its owner only)", path.display())),
    }
}

/// The listen addresses are free.
fn ports(config: &ServerConfig, report: &mut Report) {
    for listen in &config.listen {
        let ListenAddr::WebSocket(addr) = listen else { continue };
        if addr.port() == 0 {
            continue;
        }
        match TcpListener::bind(addr) {
            Ok(_) => report.line(Verdict::Ok, "listen", format!("ws://{addr} is free")),
            Err(err) => report.line(Verdict::Fail, "listen", format!("ws://{addr} cannot be used: {err}")),
        }
    }
}

/// The open-file limit against the connections allowed.
fn open_files(config: &ServerConfig, report: &mut Report) {
    let Ok((soft, _)) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE) else { return };
    let needed = config.max_connections as u64 + 128;
    if soft < needed {
        report.line(
            Verdict::Warn,
            "open files",
            format!(
                "the limit is {soft}, less than --max-connections ({}) + 128; raise it (ulimit -n)",
                config.max_connections
            ),
        );
    } else {
        report.line(Verdict::Ok, "open files", format!("limit {soft} for {} connections", config.max_connections));
    }
}

/// PostgreSQL and NATS, in cluster mode.
async fn cluster(config: &ServerConfig, report: &mut Report) {
    if let StoreLocation::Postgres(url) = &config.db {
        let connected = tokio::time::timeout(CHECK_TIMEOUT, crate::infra::store::check_postgres(url)).await;
        match connected {
            Ok(Ok(())) => report.line(Verdict::Ok, "postgres", "reachable"),
            Ok(Err(err)) => report.line(Verdict::Fail, "postgres", &err),
            Err(_) => report.line(Verdict::Fail, "postgres", format!("no answer within {} s", CHECK_TIMEOUT.as_secs())),
        }
    }
    if let Some(settings) = &config.cluster {
        #[cfg(feature = "cluster")]
        let connected = tokio::time::timeout(CHECK_TIMEOUT, async_nats::connect(settings.url.as_str())).await;
        #[cfg(not(feature = "cluster"))]
        let connected: Result<Result<(), crate::infra::cluster::ClusterError>, tokio::time::error::Elapsed> =
            Ok(Err(crate::infra::cluster::ClusterError::NotBuilt));
        match connected {
            Ok(Ok(_)) => report.line(Verdict::Ok, "nats", format!("{} reachable", settings.url)),
            Ok(Err(err)) => report.line(Verdict::Fail, "nats", format!("{}: {err}", settings.url)),
            Err(_) => report.line(
                Verdict::Fail,
                "nats",
                format!("{}: no answer within {} s", settings.url, CHECK_TIMEOUT.as_secs()),
            ),
        }
    }
}
