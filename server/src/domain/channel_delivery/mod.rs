//! Delivery to chat channels (protocol section 11.2): a message for a channel (a cron job's
//! result when the job was made in a chat) is stored first (`channel_deliveries`), then sent with
//! `ext/channel/send` by the instance its adapter is connected to — at once when it is, when it
//! connects otherwise. A channel's messages go out oldest first, one at a time; each carries a
//! `deliveryId` in its `metadata` that stays the same on every try, so the adapter can drop a
//! repeat (delivery is at least once). A failed delivery is tried again after a growing delay,
//! then given up; a message that waited past its time to live is dropped; both are reported with
//! `system/event` `deliveryFailed`. Each connected adapter is also probed with
//! `ext/channel/heartbeat` and disconnected when it does not answer.

pub(crate) mod adapter;
mod send;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use appserver_protocol::{ChannelOutboundMessage, ServerNotification, SystemEventParams};
use serde_json::{Map, Value};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::domain::ports::{Broadcast, CallError, ChannelCall};
use crate::domain::threads::broadcast;
use crate::infra::config::ChannelSettings;
use crate::infra::store::{DeliveryRecord, DeliveryWrite, Store, StoreError};

/// How often each instance looks for messages its adapters can take, when nothing wakes it.
const TICK: Duration = Duration::from_secs(1);
/// Expired messages dropped per look.
const EXPIRED_PER_TICK: u32 = 100;

/// Why a message was not queued.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeliveryError {
    #[error("channel `{0}` already has {1} messages waiting")]
    Full(String, i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The queue of every channel and its senders on this instance.
#[derive(Debug)]
pub(crate) struct DeliveryService {
    store: Store,
    clients: Arc<dyn Broadcast>,
    settings: ChannelSettings,
    /// This instance's name on the leases it takes.
    owner: String,
    wake: Notify,
    /// Channels whose sender runs now.
    sending: Mutex<HashSet<String>>,
}

fn now_ms() -> i64 {
    crate::infra::clock::UtcTime::now().unix_millis
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl DeliveryService {
    pub(crate) fn new(store: Store, clients: Arc<dyn Broadcast>, settings: ChannelSettings) -> Arc<DeliveryService> {
        Arc::new(DeliveryService {
            store,
            clients,
            settings,
            owner: format!("{:016x}", fastrand::u64(..)),
            wake: Notify::new(),
            sending: Mutex::new(HashSet::new()),
        })
    }

    /// Looks for messages to send now (a message was queued, an adapter connected).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Keeps `message` for `channel`'s adapter, to `target`; returns its `deliveryId`.
    /// `metadata` is sent along, with `deliveryId` added.
    pub(crate) async fn enqueue(
        &self,
        channel: &str,
        target: &str,
        message: &ChannelOutboundMessage,
        mut metadata: Map<String, Value>,
        thread_id: Option<String>,
    ) -> Result<String, DeliveryError> {
        let channel = channel.trim().to_lowercase();
        let queued = self.store.queued_deliveries(&channel).await?;
        if queued >= self.settings.max_queued {
            return Err(DeliveryError::Full(channel, queued));
        }
        let now = now_ms();
        let id = format!("dlv_{now:013}_{:08x}", fastrand::u32(..));
        metadata.insert("deliveryId".into(), Value::String(id.clone()));
        let record = DeliveryRecord {
            id: id.clone(),
            channel,
            target: target.to_owned(),
            message: serde_json::to_string(message).unwrap_or_default(),
            metadata: Value::Object(metadata).to_string(),
            thread_id,
            created_at_ms: now,
            expires_at_ms: now.saturating_add(millis(self.settings.message_ttl)),
            attempts: 0,
            next_attempt_at_ms: now,
            last_error: None,
        };
        self.store.write(DeliveryWrite::Insert(Box::new(record))).await?;
        self.wake();
        Ok(id)
    }

    /// Sends what the adapters connected here can take, and probes them, until `stop`.
    pub(crate) async fn serve(self: Arc<Self>, stop: CancellationToken) {
        let mut tasks = JoinSet::new();
        let mut next_probe = tokio::time::Instant::now() + self.settings.probe_interval;
        loop {
            self.expire().await;
            for channel in self.local_channels() {
                let fresh = self.sending.lock().unwrap_or_else(|p| p.into_inner()).insert(channel.clone());
                if fresh {
                    tasks.spawn(self.clone().send_queued(channel));
                }
            }
            if tokio::time::Instant::now() >= next_probe {
                next_probe = tokio::time::Instant::now() + self.settings.probe_interval;
                self.probe_all(&mut tasks);
            }
            tokio::select! {
                _ = tokio::time::sleep(TICK) => {}
                _ = self.wake.notified() => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = stop.cancelled() => {
                    tasks.abort_all();
                    return;
                }
            }
        }
    }

    /// The channels of the adapters connected here that take `ext/channel/send`.
    fn local_channels(&self) -> HashSet<String> {
        self.clients
            .all()
            .into_iter()
            .filter(|client| !client.is_closed())
            .filter_map(|client| client.channel_declaration())
            .filter(|adapter| adapter.structured_delivery)
            .map(|adapter| adapter.channel.to_lowercase())
            .collect()
    }

    /// Probes each adapter connected here; one that does not answer in time is disconnected.
    fn probe_all(&self, tasks: &mut JoinSet<()>) {
        let timeout = self.settings.request_timeout;
        for client in self.clients.all() {
            if client.is_closed() || client.channel_declaration().is_none() {
                continue;
            }
            tasks.spawn(async move {
                let answer = client.channel_call(ChannelCall::Heartbeat, Value::Object(Map::new()), timeout).await;
                if let Err(CallError::Timeout(_)) = answer {
                    tracing::warn!(conn = %client.id(), "a channel adapter did not answer ext/channel/heartbeat; disconnecting it");
                    client.close_unresponsive();
                }
            });
        }
    }

    /// Drops the messages that waited too long, reporting each once.
    async fn expire(&self) {
        let expired = match self.store.expired_deliveries(now_ms(), EXPIRED_PER_TICK).await {
            Ok(expired) => expired,
            Err(err) => return tracing::warn!(error = %err, "cannot look for expired channel messages"),
        };
        for message in expired {
            if self.store.write(DeliveryWrite::Drop(message.id.clone())).await.is_ok() {
                self.report(&message, "expired before its channel's adapter took it");
            }
        }
    }

    /// `system/event` `deliveryFailed` for a message given up.
    fn report(&self, message: &DeliveryRecord, why: &str) {
        tracing::warn!(id = %message.id, channel = %message.channel, why, "a channel message was given up");
        let params = SystemEventParams {
            thread_id: message.thread_id.clone(),
            turn_id: None,
            kind: "deliveryFailed".into(),
            message: Some(format!(
                "The message {} for channel `{}` ({}) was not delivered: {why}",
                message.id, message.channel, message.target
            )),
            percent_left: None,
            token_count: None,
        };
        broadcast(self.clients.as_ref(), &ServerNotification::SystemEvent(params));
    }
}
