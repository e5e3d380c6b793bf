//! Cron (protocol section 16) and job results (section 6.9): `CronJobInfo`, `cron/*` and their
//! notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// When a job runs: `every` `everyMs` (after `initialDelayMs` the first time), once `at` `atMs`,
/// `daily` at `dailyHour:dailyMinute`, or on a `cron` expression (`expr`, five fields; an
/// appserver extension); `daily` and `cron` times are in the IANA zone `tz` (absent: UTC).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronSchedule {
    pub kind: String,
    #[serde(default)]
    pub every_ms: Option<i64>,
    #[serde(default)]
    pub at_ms: Option<i64>,
    #[serde(default)]
    pub initial_delay_ms: Option<i64>,
    #[serde(default)]
    pub daily_hour: Option<u32>,
    #[serde(default)]
    pub daily_minute: Option<u32>,
    #[serde(default)]
    pub tz: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expr: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobState {
    pub next_run_at_ms: Option<i64>,
    pub last_run_at_ms: Option<i64>,
    /// `ok` or `error`.
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    pub last_thread_id: Option<String>,
    /// The agent's answer, at most 500 characters.
    pub last_result: Option<String>,
}

/// One job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobInfo {
    pub id: String,
    pub name: String,
    pub schedule: CronSchedule,
    pub enabled: bool,
    pub created_at_ms: i64,
    pub delete_after_run: bool,
    pub state: CronJobState,
    /// Where each run's result is also delivered (appserver extension; absent: nowhere but
    /// `system/jobResult`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<CronDelivery>,
}

/// A job's delivery target: a chat channel's adapter (`ext/channel/send`) and the platform's
/// target there (the chat or group the job was made in).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronDelivery {
    pub channel: String,
    pub to: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronListParams {
    #[serde(default)]
    pub include_disabled: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronListResult {
    pub jobs: Vec<CronJobInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobIdParams {
    pub job_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronEnableParams {
    pub job_id: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronJobResult {
    pub job: CronJobInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronRunResult {
    pub queued: bool,
    pub job: CronJobInfo,
}

/// `cron/stateChanged`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronStateChangedParams {
    pub job: CronJobInfo,
    pub removed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobTokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// `heartbeat/trigger` params: an empty object (or omitted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeartbeatTriggerParams {}

/// Result of `heartbeat/trigger`: the agent's answer, or why the run failed; both `null` when
/// there is no `HEARTBEAT.md`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeartbeatTriggerResult {
    pub result: Option<String>,
    pub error: Option<String>,
}

/// `system/jobResult` (section 6.9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobResultParams {
    /// `cron`.
    pub source: String,
    pub job_id: Option<String>,
    pub job_name: Option<String>,
    pub thread_id: Option<String>,
    pub result: Option<String>,
    pub error: Option<String>,
    pub token_usage: Option<JobTokenUsage>,
}
