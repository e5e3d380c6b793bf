//! An outside agent over MCP (streamable HTTP, the official Rust SDK's client): it opens a
//! session on one instance, runs a few `app_command`s on the shared window (hosted wherever its
//! host could register), then opens the next session on another instance. Its calls need the
//! owner's approval, which the followers give from whichever instance they are connected to
//! (declining the values that start with [`DENY`]): an acknowledged call must be in the log once,
//! a declined one never.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::instances::Addrs;
use crate::record::Record;
use crate::workload::{DENY, Setup};

/// The agent's wait for one answer (its approval included).
const ANSWER: Duration = Duration::from_secs(15);

/// The outside agent until `stop`.
pub async fn agent(addrs: Arc<Addrs>, setup: Setup, record: Record, seed: u64, stop: CancellationToken) {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x000a_9e47);
    let (mut counter, mut n) = (0u64, 0usize);
    while !stop.is_cancelled() {
        n += 1;
        let Some(addr) = addrs.preferring(n) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(
            format!("http://{addr}/mcp"),
        ));
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("nemesis-agent", "1.0"));
        let Ok(Ok(client)) = tokio::time::timeout(ANSWER, info.serve(transport)).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        for _ in 0..rng.usize(3..8) {
            if stop.is_cancelled() {
                break;
            }
            counter += 1;
            let value = if rng.u32(0..3) == 0 { format!("{DENY}mcp-{counter}") } else { format!("mcp-{counter}") };
            let args =
                json!({ "windowId": setup.window, "command": "setCells", "params": { "cells": { "C1": value } } });
            let Value::Object(args) = args else { continue };
            let call = client.call_tool(CallToolRequestParams::new("app_command").with_arguments(args));
            let answered = match tokio::time::timeout(ANSWER, call).await {
                Ok(Ok(result)) if result.is_error != Some(true) => {
                    record.command(&value);
                    Ok(())
                }
                Ok(Ok(result)) => {
                    let text = serde_json::to_value(&result.content).unwrap_or_default()[0]["text"].clone();
                    // A tool error (declined, the app not live): not a JSON-RPC error.
                    Err((1, text.as_str().unwrap_or_default().chars().take(160).collect::<String>()))
                }
                Ok(Err(rmcp::ServiceError::McpError(error))) => {
                    Err((i64::from(error.code.0), error.message.to_string()))
                }
                Ok(Err(_)) | Err(_) => Err((0, "no answer: the session is gone".to_owned())),
            };
            let gone = matches!(&answered, Err((0, _)));
            record.tried("mcp app_command", answered);
            if gone {
                break;
            }
            tokio::time::sleep(Duration::from_millis(rng.u64(50..200))).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), client.cancel()).await;
    }
}
