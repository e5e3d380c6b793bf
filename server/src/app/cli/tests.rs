//! Unit tests of the command line: flags, environment variables and config file into ServerConfig.

use super::*;
use crate::infra::config::FileApprovals;
use clap::CommandFactory;

fn run_in(dir: &Path, args: &[&str], env: &dyn Fn(&str) -> Option<String>) -> Result<ServerConfig, String> {
    let argv = std::iter::once("appserver").chain(args.iter().copied());
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    match resolve(cli, dir, env).map_err(|e| e.to_string())? {
        Command::Run(c) => Ok(*c),
        other => panic!("{other:?}"),
    }
}

fn run(args: &[&str]) -> Result<ServerConfig, String> {
    run_in(Path::new("/work/ws"), args, &|_| None)
}

#[test]
fn the_command_line_is_consistent() {
    Cli::command().debug_assert();
    let _ = FileApprovals::default();
}

#[test]
fn defaults_are_stdio_and_workspace_db() {
    let c = run(&[]).unwrap();
    assert_eq!(c.listen, vec![ListenAddr::Stdio]);
    assert_eq!(c.db, StoreLocation::Sqlite(PathBuf::from("/work/ws/.appserver/state.db")));
    assert_eq!(c.max_in_flight, 32);
    assert!(c.web, "the web desktop is served unless --no-web");
    assert!(!run(&["--no-web"]).unwrap().web);
}

#[test]
fn listens_on_both_and_overrides_paths() {
    let c = run(&["--listen", "stdio://", "--listen=ws://127.0.0.1:0", "--workspace", "sub", "--db", "x.db"]).unwrap();
    assert_eq!(c.listen.len(), 2);
    assert_eq!(c.workspace, PathBuf::from("/work/ws/sub"));
    assert_eq!(c.db, StoreLocation::Sqlite(PathBuf::from("/work/ws/x.db")));
    #[cfg(feature = "cluster")]
    {
        let c = run(&["--db", "postgres://u@127.0.0.1/app"]).unwrap();
        assert_eq!(c.db, StoreLocation::Postgres("postgres://u@127.0.0.1/app".to_owned()));
    }
    assert!(run(&["--listen", "http://x"]).unwrap_err().contains("expected stdio:// or ws://"));
}

#[test]
fn public_bind_needs_a_token() {
    assert!(run(&["--listen", "ws://0.0.0.0:0"]).unwrap_err().contains("without a token"));
    assert!(run(&["--listen", "ws://0.0.0.0:0", "--ws-token", "s3cret"]).is_ok());
    // An empty token is no token.
    assert!(run(&["--listen", "ws://0.0.0.0:0", "--ws-token", ""]).is_err());
}

#[test]
fn model_settings_follow_flags_then_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::fs::write(
        config_file_path(dir.path()),
        "[model]\nmodel = \"file-model\"\nbase_url = \"http://file/v1/\"\napi_key_env = \"MY_KEY\"\nmax_steps = 5\n\n[approvals]\npolicy = \"untrusted\"\n",
    )
    .unwrap();
    let env = |name: &str| (name == "MY_KEY").then(|| "secret".to_owned());
    let c = run_in(dir.path(), &[], &env).unwrap();
    let model = c.model.unwrap();
    assert_eq!(model.model, "file-model");
    assert_eq!(model.base_url, "http://file/v1");
    assert_eq!(model.api_key.as_deref(), Some("secret"));
    assert_eq!(model.max_steps, 5);
    assert_eq!(c.approval_policy, ApprovalPolicy::Untrusted);
    let c = run_in(
        dir.path(),
        &["--model", "flag-model", "--base-url", "http://flag/v1", "--approval-policy", "never"],
        &env,
    )
    .unwrap();
    assert_eq!(c.model.as_ref().unwrap().model, "flag-model");
    assert_eq!(c.model.as_ref().unwrap().base_url, "http://flag/v1");
    assert_eq!(c.approval_policy, ApprovalPolicy::Never);
    std::fs::write(config_file_path(dir.path()), "[model]\nmodle = 1\n").unwrap();
    assert!(run_in(dir.path(), &[], &env).unwrap_err().contains("invalid configuration file"));
}

#[test]
fn an_unset_key_variable_is_named_unless_a_key_is_given() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::fs::write(config_file_path(dir.path()), "[model]\nmodel = \"m\"\napi_key_env = \"MY_KEY\"\n").unwrap();
    let err = run_in(dir.path(), &[], &|_| None).unwrap_err();
    assert!(err.contains("api_key_env = \"MY_KEY\"") && err.contains("not set"), "{err}");
    // Empty is unset too; a key on the command line makes the variable unneeded.
    assert!(run_in(dir.path(), &[], &|_| Some(" ".into())).is_err());
    let c = run_in(dir.path(), &["--api-key", "k"], &|_| None).unwrap();
    assert_eq!(c.model.unwrap().api_key.as_deref(), Some("k"));
}

#[test]
fn an_empty_token_file_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "\n").unwrap();
    for listen in ["ws://127.0.0.1:0", "ws://0.0.0.0:0"] {
        let err = run(&["--listen", listen, "--ws-token-file", file.to_str().unwrap()]).unwrap_err();
        assert!(err.contains("token file") && err.contains("empty"), "{err}");
    }
}

#[test]
fn bad_values_are_named() {
    assert!(run(&["--bogus"]).unwrap_err().contains("--bogus"));
    assert!(run(&["--db"]).unwrap_err().contains("--db"));
    assert!(run(&["--max-in-flight", "0"]).unwrap_err().contains("positive integer"));
    assert!(run(&["--max-queued-inputs", "-1"]).is_err());
    assert_eq!(run(&["--max-queued-inputs", "3"]).unwrap().max_queued_inputs, 3);
}

#[test]
fn durability_follows_the_flag_then_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| run_in(dir.path(), args, &|_| None);
    assert_eq!(run(&[]).unwrap().durability, Durability::Normal);
    assert_eq!(run(&["--durability", "full"]).unwrap().durability, Durability::Full);
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::fs::write(config_file_path(dir.path()), "[store]\ndurability = \"full\"\n").unwrap();
    assert_eq!(run(&[]).unwrap().durability, Durability::Full);
    assert_eq!(run(&["--durability", "normal"]).unwrap().durability, Durability::Normal);
    assert!(run(&["--durability", "fsync"]).unwrap_err().contains("normal or full"));
    std::fs::write(config_file_path(dir.path()), "[store]\ndurability = \"always\"\n").unwrap();
    assert!(run(&[]).unwrap_err().contains("store.durability"));
}

/// A build without the `cluster` feature refuses PostgreSQL and NATS at the command line,
/// naming the feature, rather than starting and failing later.
#[cfg(not(feature = "cluster"))]
#[test]
fn a_lean_build_refuses_postgres_and_cluster_naming_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| run_in(dir.path(), args, &|_| None);
    let err = run(&["--db", "postgres://u:pw@127.0.0.1/app"]).unwrap_err();
    assert!(err.contains("--db") && err.contains("--features cluster") && !err.contains("pw"), "{err}");
    let err = run(&["--cluster", "nats://127.0.0.1:4222"]).unwrap_err();
    assert!(err.contains("--cluster") && err.contains("--features cluster"), "{err}");
}

#[cfg(feature = "cluster")]
#[test]
fn cluster_mode_follows_the_flags_then_the_file_and_needs_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| run_in(dir.path(), args, &|_| None);
    let pg = ["--db", "postgres://u@127.0.0.1/app"];
    assert_eq!(run(&pg).unwrap().cluster, None);
    let c = run(&[&pg[..], &["--cluster", "nats://127.0.0.1:4222"]].concat()).unwrap();
    let settings = c.cluster.unwrap();
    assert_eq!(settings.url, "nats://127.0.0.1:4222");
    assert_eq!(settings.namespace, "appserver");
    assert_eq!(settings.lease_ttl, std::time::Duration::from_secs(10));
    let ttl = run(&[&pg[..], &["--cluster", "nats://h:1", "--cluster-lease-ttl", "3"]].concat()).unwrap();
    assert_eq!(ttl.cluster.unwrap().lease_ttl, std::time::Duration::from_secs(3));
    assert!(run(&[&pg[..], &["--cluster", "nats://h:1", "--cluster-lease-ttl", "0"]].concat()).is_err());
    let err = run(&["--cluster", "nats://127.0.0.1:4222"]).unwrap_err();
    assert!(err.contains("--cluster needs a PostgreSQL database") && err.contains("SQLite"), "{err}");
    let err = run(&[&pg[..], &["--cluster", "http://u:pw@h:1"]].concat()).unwrap_err();
    assert!(err.contains("--cluster") && !err.contains("pw"), "{err}");
    let err = run(&[&pg[..], &["--cluster", "nats://h:1", "--cluster-namespace", "a b"]].concat()).unwrap_err();
    assert!(err.contains("--cluster-namespace"), "{err}");

    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    let file = "[cluster]\nurl = \"nats://file:4222\"\nnamespace = \"prod\"\nlease_ttl_seconds = 30\n";
    std::fs::write(config_file_path(dir.path()), file).unwrap();
    let settings = run(&pg).unwrap().cluster.unwrap();
    assert_eq!((settings.url.as_str(), settings.namespace.as_str()), ("nats://file:4222", "prod"));
    assert_eq!(settings.lease_ttl, std::time::Duration::from_secs(30));
    let c = run(&[&pg[..], &["--cluster", "nats://flag:1", "--cluster-namespace", "dev"]].concat()).unwrap();
    let settings = c.cluster.unwrap();
    assert_eq!((settings.url.as_str(), settings.namespace.as_str()), ("nats://flag:1", "dev"));
    assert!(run(&[]).unwrap_err().contains("--cluster needs a PostgreSQL database"));
}

#[test]
fn window_bounds_and_approver_channels_follow_the_flags_then_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| run_in(dir.path(), args, &|_| None);
    let c = run(&[]).unwrap();
    assert_eq!((c.max_app_windows, c.max_app_windows_per_connection), (4096, 256));
    assert_eq!(c.app_window_forget_after, Duration::from_secs(600));
    assert!(c.approver_channels.is_empty());
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    let file = "[apps]\nmax_windows = 10\nmax_windows_per_connection = 2\nforget_after_ms = 500\n\
                [approvals]\napprover_channels = [\"telegram\"]\n";
    std::fs::write(config_file_path(dir.path()), file).unwrap();
    let c = run(&["--approver-channel", "matrix"]).unwrap();
    assert_eq!((c.max_app_windows, c.max_app_windows_per_connection), (10, 2));
    assert_eq!(c.app_window_forget_after, Duration::from_millis(500));
    assert_eq!(c.approver_channels, ["matrix", "telegram"]);
    let c =
        run(&["--max-app-windows", "7", "--max-app-windows-per-connection", "3", "--app-window-forget-after-ms", "9"])
            .unwrap();
    assert_eq!((c.max_app_windows, c.max_app_windows_per_connection), (7, 3));
    assert_eq!(c.app_window_forget_after, Duration::from_millis(9));
    assert!(run(&["--max-app-windows", "0"]).unwrap_err().contains("positive integer"));
}

#[test]
fn allowed_hosts_and_the_mcp_idle_timeout_follow_the_flags_then_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| run_in(dir.path(), args, &|_| None);
    let c = run(&[]).unwrap();
    assert!(c.allowed_hosts.is_empty());
    assert_eq!(c.mcp_idle_timeout, Duration::from_secs(600));
    let c = run(&["--allowed-host", "Box.LAN", "--allowed-host", "a.test:8080", "--mcp-idle-timeout-ms", "250"]);
    let c = c.unwrap();
    assert_eq!(c.allowed_hosts, ["box.lan", "a.test:8080"]);
    assert_eq!(c.mcp_idle_timeout, Duration::from_millis(250));
    assert!(run(&["--allowed-host", "http://x"]).unwrap_err().contains("expected a host name"));
    assert!(run(&["--allowed-host", "x:99999"]).is_err());
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    let file = "[server]\nallowed_hosts = [\"appserver.internal\"]\nmcp_idle_timeout_ms = 5000\n";
    std::fs::write(config_file_path(dir.path()), file).unwrap();
    let c = run(&[]).unwrap();
    assert_eq!((c.allowed_hosts, c.mcp_idle_timeout), (vec!["appserver.internal".into()], Duration::from_secs(5)));
    assert_eq!(run(&["--allowed-host", "flag.test"]).unwrap().allowed_hosts, ["flag.test"]);
    std::fs::write(config_file_path(dir.path()), "[server]\nallowed_hosts = [\"a/b\"]\n").unwrap();
    assert!(run(&[]).unwrap_err().contains("[server] allowed_hosts"));
}

#[test]
fn subcommands() {
    let cli = Cli::try_parse_from(["appserver", "locate", "--workspace", "w"]).unwrap();
    assert!(
        matches!(resolve(cli, Path::new("/x"), &|_| None), Ok(Command::Locate { workspace }) if workspace == Path::new("/x/w"))
    );
    let cli = Cli::try_parse_from(["appserver", "mcp", "--workspace", "w", "--approval-policy", "never"]).unwrap();
    assert!(matches!(
        resolve(cli, Path::new("/x"), &|_| None),
        Ok(Command::Mcp(config)) if config.workspace == Path::new("/x/w") && config.approval_policy == ApprovalPolicy::Never
    ));
    let cli = Cli::try_parse_from(["appserver", "completions", "bash"]).unwrap();
    assert!(matches!(resolve(cli, Path::new("/x"), &|_| None), Ok(Command::Completions(clap_complete::Shell::Bash))));
    let cli = Cli::try_parse_from(["appserver", "schema", "--out", "types"]).unwrap();
    assert!(
        matches!(resolve(cli, Path::new("/x"), &|_| None), Ok(Command::Schema { out }) if out == Path::new("/x/types"))
    );
    // The directory is a flag's value, never a first argument taken as one: `--help` is help.
    assert!(Cli::try_parse_from(["appserver", "schema"]).is_err(), "--out is required");
    assert!(Cli::try_parse_from(["appserver", "schema", "types"]).is_err());
    let help = Cli::try_parse_from(["appserver", "schema", "--help"]).unwrap_err();
    assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
}

#[test]
fn the_user_config_is_merged_under_the_workspaces() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let user = home.path().join("xdg/appserver/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        "[model]\nmodel = \"mine\"\napi_key = \"k\"\nmax_steps = 7\n[store]\ndurability = \"full\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".appserver")).unwrap();
    std::fs::write(config_file_path(dir.path()), "[model]\nmodel = \"theirs\"\n").unwrap();
    let xdg = home.path().join("xdg").to_string_lossy().into_owned();
    let env = move |name: &str| (name == "XDG_CONFIG_HOME").then(|| xdg.clone());
    let c = run_in(dir.path(), &[], &env).unwrap();
    let model = c.model.unwrap();
    assert_eq!((model.model.as_str(), model.api_key.as_deref(), model.max_steps), ("theirs", Some("k"), 7));
    assert_eq!(c.durability, Durability::Full);
    assert_eq!(c.user_config.as_deref(), Some(user.as_path()));
    // An error names the file it is in.
    std::fs::write(&user, "[model]\nmodle = 1\n").unwrap();
    let err = run_in(dir.path(), &[], &env).unwrap_err();
    assert!(err.contains("xdg/appserver/config.toml"), "{err}");
    // HOME's .config when XDG_CONFIG_HOME is unset or relative.
    let home_only = |name: &str| match name {
        "HOME" => Some("/home/u".to_owned()),
        "XDG_CONFIG_HOME" => Some("relative".to_owned()),
        _ => None,
    };
    assert_eq!(
        crate::infra::config::user_config_path(&home_only).unwrap(),
        std::path::Path::new("/home/u/.config/appserver/config.toml")
    );
}
