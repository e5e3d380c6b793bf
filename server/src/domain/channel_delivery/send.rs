//! One channel's sender on this instance: leases the channel's oldest message, sends it with
//! `ext/channel/send` to the adapter connected here, and settles it — gone once delivered,
//! released untried when the adapter left, tried again later after a failure, given up after
//! the last try. It stops when the queue is empty, its head is not due, another instance holds
//! the lease, or no adapter for the channel is connected here.

use std::sync::Arc;

use appserver_protocol::{ChannelOutboundMessage, ExtChannelSendParams, ExtChannelSendResult};
use serde_json::Value;

use super::{DeliveryService, adapter, millis, now_ms};
use crate::domain::ports::{CallError, ChannelCall};
use crate::infra::store::{DeliveryRecord, DeliveryWrite, StoreError};

/// Longest retry delay.
const MAX_BACKOFF_MS: i64 = 60_000;

/// How one try ended.
#[derive(Debug)]
enum Outcome {
    Delivered,
    /// The adapter went away before it answered: tried again when one is connected.
    Gone,
    Failed(String),
    /// Cannot ever be sent (too large for the adapter): given up at once.
    Hopeless(String),
}

/// The delay before try `attempts + 1`: the base doubled per failed try, at most a minute.
pub(super) fn backoff(base_ms: i64, attempts: i64) -> i64 {
    let factor = 1i64 << attempts.clamp(0, 20);
    base_ms.saturating_mul(factor).min(MAX_BACKOFF_MS)
}

impl DeliveryService {
    /// Sends `channel`'s messages while it can; then lets the next look start it again.
    pub(super) async fn send_queued(self: Arc<Self>, channel: String) {
        if let Err(err) = self.send_while_due(&channel).await {
            tracing::warn!(%channel, error = %err, "cannot send a channel's messages");
        }
        self.sending.lock().unwrap_or_else(|p| p.into_inner()).remove(&channel);
    }

    async fn send_while_due(&self, channel: &str) -> Result<(), StoreError> {
        let lease_ms = millis(self.settings.request_timeout).saturating_add(5_000);
        loop {
            let Some(message) = self.store.oldest_delivery(channel).await? else { return Ok(()) };
            let now = now_ms();
            if message.expires_at_ms <= now {
                return Ok(());
            }
            if message.next_attempt_at_ms > now {
                // A retry due soon is waited for here; a later one on a later look.
                let wait = message.next_attempt_at_ms - now;
                if wait > millis(super::TICK) {
                    return Ok(());
                }
                tokio::time::sleep(std::time::Duration::from_millis(wait.unsigned_abs())).await;
                continue;
            }
            let Some((client, declared)) = adapter::connected(self.clients.as_ref(), channel) else { return Ok(()) };
            if !declared.structured_delivery {
                return Ok(());
            }
            let lease = DeliveryWrite::Lease {
                id: message.id.clone(),
                channel: channel.to_owned(),
                owner: self.owner.clone(),
                now,
                until: now.saturating_add(lease_ms),
            };
            match self.store.write(lease).await {
                Ok(()) => {}
                Err(StoreError::Stale(_)) => return Ok(()),
                Err(err) => return Err(err),
            }
            let params = params(&message);
            let answer = client.channel_call(ChannelCall::Send, params, self.settings.request_timeout).await;
            if !self.settle(&message, outcome(answer)).await? {
                return Ok(());
            }
        }
    }

    /// Records how a try ended; whether to go on with the next message.
    async fn settle(&self, message: &DeliveryRecord, outcome: Outcome) -> Result<bool, StoreError> {
        let owner = self.owner.clone();
        let release = |next: i64, failed: bool, error: Option<String>| DeliveryWrite::Release {
            id: message.id.clone(),
            owner: owner.clone(),
            next_attempt_at_ms: next,
            failed,
            error,
        };
        match outcome {
            Outcome::Delivered => {
                match self.store.write(DeliveryWrite::Delivered { id: message.id.clone(), owner }).await {
                    Ok(()) | Err(StoreError::Stale(_)) => Ok(true),
                    Err(err) => Err(err),
                }
            }
            Outcome::Gone => {
                self.store.write(release(now_ms(), false, None)).await?;
                Ok(false)
            }
            Outcome::Failed(why) if message.attempts + 1 < self.settings.max_attempts => {
                let delay = backoff(millis(self.settings.retry_base), message.attempts);
                tracing::info!(id = %message.id, channel = %message.channel, %why, delay, "channel delivery failed; trying again later");
                self.store.write(release(now_ms().saturating_add(delay), true, Some(why))).await?;
                Ok(false)
            }
            Outcome::Failed(why) | Outcome::Hopeless(why) => {
                let attempts = message.attempts + 1;
                if self.store.write(DeliveryWrite::Drop(message.id.clone())).await.is_ok() {
                    self.report(message, &format!("{why} (after {attempts} tries)"));
                }
                Ok(true)
            }
        }
    }
}

/// The request's params: the stored message and metadata as they were queued.
fn params(message: &DeliveryRecord) -> Value {
    let params = ExtChannelSendParams {
        target: message.target.clone(),
        message: serde_json::from_str::<ChannelOutboundMessage>(&message.message).unwrap_or_default(),
        metadata: serde_json::from_str(&message.metadata).ok(),
    };
    serde_json::to_value(params).unwrap_or_default()
}

fn outcome(answer: crate::domain::ports::Answer) -> Outcome {
    match answer {
        Ok(raw) => match serde_json::from_str::<ExtChannelSendResult>(raw.get()) {
            Ok(result) if result.delivered => Outcome::Delivered,
            Ok(result) => Outcome::Failed(format!(
                "{}: {}",
                result.error_code.as_deref().unwrap_or("AdapterDeliveryFailed"),
                result.error_message.as_deref().unwrap_or("the adapter did not deliver it")
            )),
            Err(err) => Outcome::Failed(format!("AdapterProtocolViolation: invalid answer to ext/channel/send: {err}")),
        },
        Err(CallError::Closed) => Outcome::Gone,
        Err(CallError::Serialize(why)) => Outcome::Hopeless(why),
        Err(err) => Outcome::Failed(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_up_to_a_minute() {
        assert_eq!([0, 1, 2, 3].map(|n| backoff(1000, n)), [1000, 2000, 4000, 8000]);
        assert_eq!(backoff(1000, 10), MAX_BACKOFF_MS);
        assert_eq!(backoff(1000, 500), MAX_BACKOFF_MS);
    }

    #[test]
    fn answers_are_read_strictly() {
        let raw = |text: &str| Ok(serde_json::value::RawValue::from_string(text.to_owned()).unwrap());
        assert!(matches!(outcome(raw(r#"{"delivered":true}"#)), Outcome::Delivered));
        assert!(
            matches!(outcome(raw(r#"{"delivered":false,"errorCode":"MediaTooLarge"}"#)), Outcome::Failed(w) if w.starts_with("MediaTooLarge"))
        );
        assert!(
            matches!(outcome(raw(r#""garbage""#)), Outcome::Failed(w) if w.starts_with("AdapterProtocolViolation"))
        );
        assert!(matches!(outcome(Err(CallError::Closed)), Outcome::Gone));
        assert!(matches!(outcome(Err(CallError::Timeout(std::time::Duration::from_secs(1)))), Outcome::Failed(_)));
    }
}
