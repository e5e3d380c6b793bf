//! A NATS server of the test's own (Debian's `nats-server`, or `APPSERVER_TEST_NATS_SERVER`),
//! on a port it picks itself, that a test can stop and start again on the same port (a NATS
//! outage) or run with TLS. Only tests that run against NATS at all (`APPSERVER_TEST_NATS` set)
//! start one.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, anyhow};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::TIMEOUT;

/// A running `nats-server`; killed when dropped.
#[derive(Debug)]
pub struct NatsServer {
    child: Option<Child>,
    /// `127.0.0.1:PORT`
    pub addr: String,
    args: Vec<String>,
}

/// The `nats-server` binary.
fn binary() -> PathBuf {
    std::env::var_os("APPSERVER_TEST_NATS_SERVER")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH")
                .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join("nats-server")).find(|p| p.is_file()))
        })
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/nats-server"))
}

impl NatsServer {
    /// Starts one on a free port (`-p -1`), with `extra` arguments (e.g. TLS).
    pub async fn start(extra: &[&str]) -> Result<NatsServer> {
        let args: Vec<String> = extra.iter().map(|a| (*a).to_owned()).collect();
        let (child, addr) = spawn(&args, "-1").await?;
        Ok(NatsServer { child: Some(child), addr, args })
    }

    /// Starts one with TLS (`--tls`), the certificate and key from `dir` (`cert.pem`,
    /// `key.pem`).
    pub async fn start_tls(dir: &Path) -> Result<NatsServer> {
        let cert = dir.join("cert.pem").display().to_string();
        let key = dir.join("key.pem").display().to_string();
        NatsServer::start(&["--tls", "--tlscert", &cert, "--tlskey", &key]).await
    }

    /// `nats://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("nats://{}", self.addr)
    }

    /// Kills it (an outage).
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.start_kill()?;
            tokio::time::timeout(TIMEOUT, child.wait()).await??;
        }
        Ok(())
    }

    /// Starts it again on the same port.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        let port = self.addr.rsplit(':').next().unwrap_or_default().to_owned();
        let (child, addr) = spawn(&self.args, &port).await?;
        self.child = Some(child);
        self.addr = addr;
        Ok(())
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// Spawns `nats-server -a 127.0.0.1 -p PORT ARGS` and reads the client address it listens on
/// from its log.
async fn spawn(args: &[String], port: &str) -> Result<(Child, String)> {
    let mut child = Command::new(binary())
        .args(["-a", "127.0.0.1", "-p", port])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} (install Debian's nats-server)", binary().display()))?;
    let stderr = child.stderr.take().context("nats-server's stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let listening = async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.split("Listening for client connections on ").nth(1) {
                return Ok::<_, anyhow::Error>(rest.trim().to_owned());
            }
        }
        Err(anyhow!("nats-server exited before it listened"))
    };
    let addr = tokio::time::timeout(TIMEOUT, listening).await.context("nats-server did not start")??;
    // Keep reading its log, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, addr))
}
