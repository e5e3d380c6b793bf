//! A job made in a chat delivers its results there: the job keeps the chat's channel and the
//! platform target (the turn's `sender.groupId`, else its sender, else the thread's
//! `channelContext` or user) when it is made, and each run's result — or why it failed — is
//! queued for that channel's adapter (`ext/channel/send`, see `delivery`).

use appserver_protocol::{ChannelOutboundMessage, CronDelivery, JobResultParams};
use serde_json::{Map, Value};

use super::CronService;
use crate::domain::origin_channels::is_adapter_channel;
use crate::infra::store::{CronRecord, parse_seq};

impl CronService {
    /// Where a job made by the turn `turn_id` of `thread_id` delivers its results: the chat the
    /// turn came from, when the thread belongs to a chat channel.
    pub(crate) async fn delivery_for(&self, thread_id: &str, turn_id: &str) -> Option<CronDelivery> {
        let thread = self.store.thread(thread_id).await.ok().flatten()?;
        if !is_adapter_channel(&thread.origin_channel) {
            return None;
        }
        let initiator = match parse_seq(turn_id, "turn_") {
            Some(seq) => self.store.turn(thread_id, seq).await.ok().flatten().and_then(|t| t.initiator),
            None => None,
        };
        let to = initiator
            .as_ref()
            .and_then(|i| i.group_id.clone().or_else(|| i.user_id.clone()))
            .or_else(|| thread.channel_context.clone())
            .or_else(|| thread.user_id.clone())
            .filter(|to| !to.trim().is_empty())?;
        Some(CronDelivery { channel: thread.origin_channel.clone(), to })
    }

    /// Queues a run's result for the job's chat, if it has one.
    pub(super) async fn deliver(&self, job: &CronRecord, result: &JobResultParams) {
        let (Some(channel), Some(to)) = (&job.deliver_channel, &job.deliver_to) else { return };
        let text = match (&result.result, &result.error) {
            (_, Some(error)) => format!("Scheduled job \"{}\" failed: {error}", job.name),
            (Some(text), None) => text.clone(),
            (None, None) => return,
        };
        let message = ChannelOutboundMessage { kind: "text".into(), text: Some(text), ..Default::default() };
        let mut metadata = Map::new();
        metadata.insert("origin".into(), Value::from("cron"));
        metadata.insert("jobId".into(), Value::from(job.id.clone()));
        metadata.insert("jobName".into(), Value::from(job.name.clone()));
        metadata.insert("threadId".into(), Value::from(job.thread_id.clone()));
        let queued = self.delivery.enqueue(channel, to, &message, metadata, Some(job.thread_id.clone())).await;
        if let Err(err) = queued {
            tracing::warn!(job = %job.id, %channel, error = %err, "cannot queue a cron result for its channel");
        }
    }
}
