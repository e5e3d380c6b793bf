//! The program a stdio descriptor app runs is pinned when the workspace's owner approves it: the
//! program, its arguments and working directory as started, a SHA-256 of the descriptor file and
//! one of the code the program runs (`hosts::code`: the program next to the descriptor and the
//! scripts its arguments name, or a plugin's whole folder). A descriptor that is new,
//! or whose pin no longer matches (a `git pull` changed it), is registered with a [`HeldHost`]:
//! listed with `needsApproval`, its manifest readable, but nothing is spawned — not even for the
//! replay of its log — until an owner's client calls `app/descriptor/approve` for its window.
//! Then the pin is stored, the watcher loads the descriptor again, and the program runs (and
//! replays) as any approved one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::{AppDescriptorApproveResult, ExtAppCommandParams, ExtAppQueryParams};
use sha2::{Digest, Sha256};

use super::super::hosts::code::{self, Code};
use super::super::hosts::process::StdioSpec;
use super::super::hosts::{app_rejection, no_state_key};
use super::super::pin_approvals::lock;
use super::super::service::AppService;
use super::super::{AppError, READY_WAIT};
use crate::domain::ports::{AppHost, BoxFuture, CallError, HostId, PendingAnswer};
use crate::infra::store::{AppWrite, DescriptorPin};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The program file a pin covers by its digest: one given as a path, next to the descriptor in
/// `dir` (a pull may change it as well as the descriptor).
pub(crate) fn pinned_program(dir: &Path, spec: &StdioSpec) -> Option<PathBuf> {
    spec.program.starts_with(dir).then(|| spec.program.clone())
}

/// What approving the descriptor at `path` (whose text is `text`) to run `spec` pins, and the
/// code its digest covers (`code.rs`: the scripts it runs, or its plugin's whole folder).
pub(crate) async fn pin_for(
    workspace: &Path,
    path: &Path,
    text: &str,
    window_id: &str,
    spec: &StdioSpec,
) -> (DescriptorPin, Code) {
    let dir = path.parent().unwrap_or(Path::new("."));
    let code = code::code_of(workspace, dir, &spec.program, &spec.args, &spec.cwd);
    let pin = DescriptorPin {
        path: path.display().to_string(),
        window_id: window_id.to_owned(),
        program: spec.program.display().to_string(),
        args: spec.args.clone(),
        cwd: spec.cwd.display().to_string(),
        descriptor_sha256: hex(&Sha256::digest(text.as_bytes())),
        program_sha256: code::sha256_async(&code).await,
    };
    (pin, code)
}

/// `app/descriptor/approve`: pins the program the held window's descriptor runs now (refused if
/// the file changed since it was listed), has the watcher load it again, and answers once the
/// app runs (its log replayed).
pub(crate) async fn approve(apps: &AppService, window_id: &str) -> Result<AppDescriptorApproveResult, AppError> {
    let held = lock(apps.descriptors.held()).get(window_id).cloned().ok_or_else(|| {
        AppError::InvalidParams(format!("windowId: {window_id} has no descriptor program waiting for approval"))
    })?;
    let path = PathBuf::from(&held.path);
    let now = super::read_stdio(apps, &path).await.map_err(AppError::InvalidManifest)?;
    if now.as_ref() != Some(&held) {
        return Err(AppError::PermissionDenied(format!(
            "the descriptor {} changed since it was listed: read app/list again",
            held.path
        )));
    }
    let pin = Box::new(held.clone());
    apps.store.write(AppWrite::PinDescriptor { pin, at: crate::infra::clock::now_rfc3339() }).await?;
    tracing::info!(window = %window_id, program = %held.program, "descriptor program approved and pinned");
    // An MCP server's descriptor has no window to wait for: the server starts in the background
    // (`mcp/status/list`).
    let is_mcp = super::describes_mcp(&path).await;
    lock(apps.descriptors.reloads()).insert(path);
    apps.descriptors.wake.notify_one();
    if !is_mcp {
        let window = running(apps, window_id).await?;
        window.host_or_reregistration().await?;
    }
    Ok(AppDescriptorApproveResult {
        window_id: window_id.to_owned(),
        program: held.program,
        args: held.args,
        cwd: held.cwd,
        descriptor_sha256: held.descriptor_sha256,
    })
}

/// Waits (at most [`READY_WAIT`]) until the watcher registered the window with its program.
async fn running(apps: &AppService, window_id: &str) -> Result<Arc<super::super::AppWindow>, AppError> {
    let mut changes = apps.registry.watch_changes();
    let deadline = tokio::time::Instant::now() + READY_WAIT;
    loop {
        let window = apps.registry.get(window_id);
        if let Some(window) = window.filter(|w| w.live_owner().is_some_and(|h| h.held().is_none())) {
            return Ok(window);
        }
        if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
            return Err(AppError::Timeout(format!(
                "window {window_id}: the approved program was not loaded within {} s",
                READY_WAIT.as_secs()
            )));
        }
    }
}

/// The host of a descriptor app whose program is not approved: it runs nothing.
#[derive(Debug)]
pub(crate) struct HeldHost {
    app_id: String,
    reason: String,
    /// Cancelled when the descriptor is removed or replaced: the window is then gone (so the
    /// watcher may unregister it).
    token: tokio_util::sync::CancellationToken,
}

impl HeldHost {
    pub(crate) fn new(
        app_id: &str,
        window_id: &str,
        new: bool,
        token: tokio_util::sync::CancellationToken,
    ) -> Arc<HeldHost> {
        let what = if new { "is new" } else { "changed" };
        let reason = format!(
            "the descriptor of {window_id} {what}: its program runs once the workspace's owner approves it (app/descriptor/approve)"
        );
        Arc::new(HeldHost { app_id: app_id.to_owned(), reason, token })
    }
}

impl AppHost for HeldHost {
    fn host_id(&self) -> HostId {
        HostId::Managed(format!("stdio:{}", self.app_id))
    }

    fn kind(&self) -> &'static str {
        "stdio"
    }

    fn is_gone(&self) -> bool {
        self.token.is_cancelled()
    }

    fn held(&self) -> Option<String> {
        Some(self.reason.clone())
    }

    fn query<'a>(&'a self, params: &'a ExtAppQueryParams, _timeout: Duration) -> PendingAnswer<'a> {
        no_state_key(params)
    }

    fn send_command<'a>(
        &'a self,
        _params: ExtAppCommandParams,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<PendingAnswer<'a>, CallError>> {
        let refused = app_rejection("PERMISSION_DENIED", &self.reason);
        Box::pin(std::future::ready(Err(refused)))
    }
}
