//! The `appserver` binary: parse the command line, set up logging on stderr, run the server (or
//! `locate` / `schema` / `completions`, or MCP on stdio with `mcp`, or ACP on stdio with `acp`). Exit status: 0 after a clean shutdown,
//! 1 when the server fails (start-up included: a stderr it cannot write the listening address
//! to is one), 2 for a bad command line.

use std::process::ExitCode;

use appserver::{Cli, CliError, Command, Front};

fn main() -> ExitCode {
    // Before any other thread allocates.
    appserver::limit_arenas();
    // One TLS crypto provider for the whole process (ring; the only one compiled in), before
    // anything makes a TLS connection (NATS, the model's endpoint, MCP servers).
    appserver::install_crypto_provider();
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(err) => {
            report(format_args!("appserver: error: cannot read the current directory: {err}"));
            return ExitCode::from(2);
        }
    };
    let (config, front) = match appserver::parse_command_line(std::env::args_os().skip(1), &cwd) {
        Ok(Command::Run(config)) => (*config, Front::Server),
        Ok(Command::Mcp(config)) => (*config, Front::Mcp),
        Ok(Command::Acp(config)) => (*config, Front::Acp),
        Ok(Command::Locate { workspace }) => return locate(&workspace),
        Ok(Command::Schema { out }) => return schema(&out),
        Ok(Command::SandboxExec(spec)) => return appserver::sandbox_exec(*spec),
        Ok(Command::Exec(request)) => return exec(*request),
        Ok(Command::Doctor(config)) => return doctor(*config),
        Ok(Command::ConfigReference(page)) => {
            print!("{page}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Completions(shell)) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "appserver", &mut std::io::stdout());
            return ExitCode::SUCCESS;
        }
        // Usage errors (exit 2), and --help / --version (printed on stdout, exit 0).
        Err(CliError::Clap(err)) => err.exit(),
        Err(CliError::Config(err)) => {
            report(format_args!("appserver: error: {err}"));
            return ExitCode::from(2);
        }
    };
    appserver::init_logging(config.log_format);
    match appserver::run_front(front, config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            report(format_args!("appserver: error: {err}"));
            ExitCode::FAILURE
        }
    }
}

fn exec(request: appserver::ExecRequest) -> ExitCode {
    appserver::init_logging(request_log_format(&request));
    match appserver::exec_blocking(request) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            report(format_args!("appserver exec: error: {err}"));
            ExitCode::FAILURE
        }
    }
}

fn doctor(config: appserver::ServerConfig) -> ExitCode {
    match appserver::doctor_blocking(config) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            report(format_args!("appserver: error: {err}"));
            ExitCode::FAILURE
        }
    }
}

fn request_log_format(request: &appserver::ExecRequest) -> appserver::LogFormat {
    request.log_format()
}

/// `appserver locate`: the lock file of the workspace's running server on stdout, as JSON.
fn locate(workspace: &std::path::Path) -> ExitCode {
    match appserver::locate(workspace) {
        Ok(Some(info)) => {
            let mut value = serde_json::to_value(&info).unwrap_or_default();
            value["running"] = serde_json::Value::Bool(true);
            println!("{value}");
            ExitCode::SUCCESS
        }
        Ok(None) => {
            println!("{}", serde_json::json!({ "running": false, "workspace": workspace }));
            report(format_args!("appserver: no server is running on {}", workspace.display()));
            ExitCode::from(1)
        }
        Err(err) => {
            report(format_args!("appserver: error: {err}"));
            ExitCode::from(2)
        }
    }
}

/// `appserver schema --out DIR`: the generated protocol files (JSON Schema, TypeScript, Python)
/// written into `dir`, each path on stderr.
fn schema(dir: &std::path::Path) -> ExitCode {
    match appserver_protocol::codegen::write_into(dir) {
        Ok(written) => {
            for path in written {
                report(format_args!("wrote {}", path.display()));
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            report(format_args!("appserver: error: cannot write the schema files into {}: {err}", dir.display()));
            ExitCode::FAILURE
        }
    }
}

/// A line on stderr. Never panics (`eprintln!` would, with exit status 101, when stderr is a
/// full device or a closed pipe): what cannot be written is lost, and the exit status says
/// what happened (1 for a failure, as for every start-up error).
fn report(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
