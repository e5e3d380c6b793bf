//! Windows nobody comes back for: a window whose host is gone and whose replay log is empty
//! holds nothing a later registration would get back, so once it has had no host for
//! `--app-window-forget-after-ms` (ten minutes by default) it is forgotten — removed from the
//! registry and the store, and `app/unregistered` is announced. A window with log entries is
//! kept (its state is in them); so is one hosted on another instance (cluster mode).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::service::{self, AppService};
use crate::infra::store::AppWrite;

/// Runs until `token` is cancelled, looking a few times per period.
pub(crate) async fn forget_idle_windows(apps: Arc<AppService>, token: CancellationToken) {
    let after = apps.config.app_window_forget_after;
    let every = (after / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
    let mut hostless_since: HashMap<String, Instant> = HashMap::new();
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let now = Instant::now();
        let windows = apps.registry.all();
        hostless_since.retain(|id, _| windows.iter().any(|w| w.window_id == *id));
        for window in windows {
            let id = window.window_id.clone();
            if window.live_owner().is_some() || hosted_elsewhere(&apps, &id).await {
                hostless_since.remove(&id);
                continue;
            }
            let since = *hostless_since.entry(id.clone()).or_insert(now);
            if now.duration_since(since) < after {
                continue;
            }
            match apps.store.app_log_position(&id).await {
                // No entry at all, pending or done: nothing to replay.
                Ok((0, _)) => forget(&apps, &id).await,
                Ok(_) => {}
                Err(err) => tracing::warn!(window = %id, error = %err, "cannot read the log of an idle window"),
            }
            hostless_since.remove(&id);
        }
    }
}

async fn hosted_elsewhere(apps: &AppService, window_id: &str) -> bool {
    match &apps.cluster {
        Some(cluster) => super::remote::host_elsewhere(cluster, window_id).await.is_some(),
        None => false,
    }
}

async fn forget(apps: &AppService, window_id: &str) {
    if !apps.registry.remove_if_hostless(window_id) {
        return;
    }
    // The log is empty: only the window's record goes (entries of a host that registers it
    // again meanwhile are its own, and stay).
    let delete = AppWrite::DeleteWindow { window_id: window_id.to_owned(), forget_log: false };
    if let Err(err) = apps.store.write(delete).await {
        tracing::warn!(window = %window_id, error = %err, "idle window not deleted from the store");
        return;
    }
    tracing::info!(window = %window_id, "app window forgotten: no host and an empty log");
    service::announce_unregistered(apps, window_id, true);
}
