//! The binary's entry points as plain functions: each starts the async runtime, runs one front
//! (the server, `mcp`, `acp`, `exec`, `doctor`) to its end and stops the runtime. Here rather
//! than in `main.rs` so the fronts' futures are compiled once, in this crate: awaited from the
//! binary, every async function they reach was compiled a second time there (release builds
//! share no generic code between crates), about 40 s of a cold release build on 2 cores.

use std::time::Duration;

use crate::app::cli::ExecRequest;
use crate::infra::config::{LogFormat, ServerConfig};

/// Which front a configuration runs.
#[derive(Debug, Clone, Copy)]
pub enum Front {
    /// The server itself.
    Server,
    /// `appserver mcp`: the MCP relay on stdio.
    Mcp,
    /// `appserver acp`: the ACP bridge on stdio.
    Acp,
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))
}

/// Runs `front` until it ends; the error as the binary reports it.
pub fn run_front(front: Front, config: ServerConfig) -> Result<(), String> {
    let runtime = runtime()?;
    let result = match front {
        Front::Mcp => runtime.block_on(crate::app::startup::mcp_stdio(config)).map_err(|e| e.to_string()),
        Front::Acp => runtime.block_on(crate::app::acp::acp_stdio(config)).map_err(|e| e.to_string()),
        Front::Server => runtime.block_on(crate::app::startup::run(config)).map_err(|e| e.to_string()),
    };
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

/// `appserver exec`: its exit status, or why it could not run.
pub fn exec_blocking(request: ExecRequest) -> Result<u8, String> {
    let runtime = runtime()?;
    let result = runtime.block_on(crate::app::exec::exec_once(request)).map_err(|e| e.to_string());
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

/// `appserver doctor`: its exit status.
pub fn doctor_blocking(config: ServerConfig) -> Result<u8, String> {
    let runtime = runtime()?;
    let code = runtime.block_on(crate::app::doctor::doctor(config));
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(code)
}

/// Logs go to stderr (stdout belongs to the protocol on stdio). Level from `APPSERVER_LOG` (an
/// `EnvFilter` directive such as `debug` or `appserver=trace`), default `info` (the MCP SDK at
/// `warn`); text or JSON lines.
pub fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("APPSERVER_LOG").unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .log_internal_errors(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
