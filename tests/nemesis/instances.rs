//! The three instances under test, the database and the NATS server they share, and what the
//! nemesis does to them: kill and start again, pause and resume, restart NATS, kill the
//! database's sessions, cut one instance off the database (each reaches it through a TCP proxy
//! of its own: reset, or black hole). Clients find each instance's current address in [`Addrs`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use appserver_tests::nats::NatsServer;
use appserver_tests::postgres::{Database, database_for};
use appserver_tests::tcp_proxy::{Mode, TcpProxy};
use appserver_tests::{ServerBuilder, ServerProcess};
use sqlx::{Connection, PgConnection};

/// How many instances.
pub const COUNT: usize = 3;
/// Their lease (seconds): a paused instance is taken over after it.
pub const LEASE_SECONDS: u64 = 2;

/// Where each instance listens now (`None` while it is down).
#[derive(Debug, Default)]
pub struct Addrs(Mutex<Vec<Option<SocketAddr>>>);

impl Addrs {
    fn set(&self, n: usize, addr: Option<SocketAddr>) {
        let mut addrs = self.0.lock().unwrap();
        if addrs.len() < COUNT {
            addrs.resize(COUNT, None);
        }
        addrs[n] = addr;
    }

    /// Instance `n`'s address, or the next one up.
    pub fn preferring(&self, n: usize) -> Option<SocketAddr> {
        let addrs = self.0.lock().unwrap();
        (0..addrs.len()).map(|i| (n + i) % addrs.len()).find_map(|i| addrs[i])
    }
}

pub struct Instances {
    pub db: Database,
    pub nats: NatsServer,
    namespace: String,
    dirs: Vec<tempfile::TempDir>,
    running: Vec<Option<ServerProcess>>,
    addrs: Arc<Addrs>,
    /// Each instance's way to the database.
    proxies: Vec<TcpProxy>,
    /// What killed instances logged (warnings and errors), for a failed run's context.
    logs: Vec<String>,
}

impl Instances {
    /// A database and a NATS server of the check's own, and three instances on them.
    pub async fn start(base: &str) -> Result<Instances> {
        let first = tempfile::tempdir()?;
        let db = database_for(base, first.path()).await?;
        let nats = NatsServer::start(&[]).await?;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
        let mut dirs = vec![first];
        for _ in 1..COUNT {
            dirs.push(tempfile::tempdir()?);
        }
        let target = TcpProxy::target_of(&db.url)?;
        let mut proxies = Vec::new();
        for _ in 0..COUNT {
            proxies.push(TcpProxy::start(target).await?);
        }
        let mut instances = Instances {
            db,
            nats,
            namespace: format!("nemesis{nanos}"),
            dirs,
            running: (0..COUNT).map(|_| None).collect(),
            addrs: Arc::default(),
            proxies,
            logs: Vec::new(),
        };
        for n in 0..COUNT {
            instances.up(n).await?;
        }
        Ok(instances)
    }

    pub fn addrs(&self) -> Arc<Addrs> {
        self.addrs.clone()
    }

    /// Starts instance `n` (again).
    pub async fn up(&mut self, n: usize) -> Result<()> {
        let lease = LEASE_SECONDS.to_string();
        let db = self.proxies[n].url_for(&self.db.url);
        let process = ServerBuilder::ws()
            .workspace(self.dirs[n].path())
            .args(["--db", &db, "--cluster", &self.nats.url(), "--cluster-namespace", &self.namespace])
            .args(["--cluster-lease-ttl", &lease, "--enable-debug-methods", "--approval-timeout-ms", "3000"])
            .args(["--shutdown-grace", "0"])
            // Not the harness's debug level: its log is kept in memory for the whole run.
            .env("APPSERVER_LOG", "warn,appserver::domain::turns::ownership=debug")
            .spawn()
            .await?;
        self.addrs.set(n, Some(process.ws_addr()));
        self.running[n] = Some(process);
        Ok(())
    }

    /// SIGKILL of instance `n`.
    pub async fn kill(&mut self, n: usize) -> Result<()> {
        self.addrs.set(n, None);
        if let Some(mut process) = self.running[n].take() {
            process.kill().await?;
            self.logs.push(format!("== instance {n}, killed ==\n{}", process.stderr()));
        }
        Ok(())
    }

    /// Everything the instances logged (the killed ones' and the running ones').
    pub fn logs(&self) -> String {
        let running = self.running.iter().enumerate().filter_map(|(n, process)| {
            process.as_ref().map(|p| format!("== instance {n}, running ==\n{}", p.stderr()))
        });
        self.logs.iter().cloned().chain(running).collect::<Vec<_>>().join("\n")
    }

    /// SIGSTOP (`true`) or SIGCONT of instance `n`.
    pub fn pause(&self, n: usize, paused: bool) -> Result<()> {
        match &self.running[n] {
            Some(process) => process.signal(if paused { "STOP" } else { "CONT" }),
            None => Ok(()),
        }
    }

    pub fn is_up(&self, n: usize) -> bool {
        self.running[n].is_some()
    }

    /// Kills every database session of the instances (`pg_terminate_backend`); how many.
    pub async fn kill_database_sessions(&self) -> Result<u64> {
        let mut conn = PgConnection::connect(&self.db.url).await?;
        let killed: Vec<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND application_name LIKE 'appserver%'",
        )
        .fetch_all(&mut conn)
        .await?;
        let _ = conn.close().await;
        Ok(killed.into_iter().filter(|k| *k).count() as u64)
    }

    /// Cuts instance `n` off the database (`Mode::Reset`, `Mode::BlackHole`) or lets it reach
    /// it again (`Mode::Pass`).
    pub fn cut_database(&self, n: usize, mode: Mode) {
        self.proxies[n].set(mode);
    }

    /// Every instance running and resumed, reaching the database, NATS up.
    pub async fn heal(&mut self) -> Result<()> {
        for n in 0..COUNT {
            self.cut_database(n, Mode::Pass);
            if self.is_up(n) {
                self.pause(n, false)?;
            } else {
                self.up(n).await?;
            }
        }
        Ok(())
    }

    /// An initialized client of instance `n`.
    pub async fn client(&self, n: usize) -> Result<appserver_client::Client> {
        match &self.running[n] {
            Some(process) => process.ws_client_initialized().await,
            None => anyhow::bail!("instance {n} is down"),
        }
    }

    /// Stops everything and drops the database.
    pub async fn stop(mut self) {
        for n in 0..COUNT {
            let _ = self.kill(n).await;
        }
        let _ = self.nats.stop().await;
        self.db.drop_now();
    }
}
