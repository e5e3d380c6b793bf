//! Handlers of `cron/list|remove|enable|run` (protocol section 16) and `heartbeat/trigger`
//! (section 17).

use appserver_protocol::{
    CronEnableParams, CronJobIdParams, CronJobResult, CronListParams, CronListResult, CronRunResult,
    HeartbeatTriggerParams, HeartbeatTriggerResult, RemovedResult,
};

use crate::domain::cron::CronError;
use crate::edge::rpc::RequestCtx;

pub(crate) async fn handle_list(ctx: &RequestCtx, p: CronListParams) -> Result<CronListResult, CronError> {
    Ok(CronListResult { jobs: ctx.state.cron.list(p.include_disabled).await? })
}

pub(crate) async fn handle_remove(ctx: &RequestCtx, p: CronJobIdParams) -> Result<RemovedResult, CronError> {
    ctx.state.cron.remove(&p.job_id).await?;
    Ok(RemovedResult { removed: true })
}

pub(crate) async fn handle_enable(ctx: &RequestCtx, p: CronEnableParams) -> Result<CronJobResult, CronError> {
    Ok(CronJobResult { job: ctx.state.cron.enable(&p.job_id, p.enabled).await? })
}

pub(crate) async fn handle_heartbeat(
    ctx: &RequestCtx,
    _: HeartbeatTriggerParams,
) -> Result<HeartbeatTriggerResult, CronError> {
    let (result, error) = ctx.state.cron.heartbeat().await;
    Ok(HeartbeatTriggerResult { result, error })
}

pub(crate) async fn handle_run(ctx: &RequestCtx, p: CronJobIdParams) -> Result<CronRunResult, CronError> {
    Ok(CronRunResult { queued: true, job: ctx.state.cron.run_now(&p.job_id).await? })
}
