//! A channel adapter's declaration (`capabilities.channelAdapter`, protocol section 11.2),
//! checked once per connection: whether it takes `ext/channel/send`
//! (`deliveryCapabilities.structuredDelivery`) and which of its `channelTools` are kept — each a
//! valid, distinct name with a bounded description and input schema, at most [`MAX_TOOLS`] — and
//! how the domain finds the adapter connected here for a channel.

use std::sync::Arc;

use appserver_protocol::{ChannelAdapterCapabilities, DynamicToolSpec};
use serde_json::{Value, json};

use crate::domain::ports::{Broadcast, ChannelAdapter, Client};

/// Most channel tools kept per adapter; the rest are ignored.
pub(crate) const MAX_TOOLS: usize = 64;
/// Longest tool name (ASCII letters, digits, `_` and `-`, starting with a letter).
const MAX_NAME: usize = 64;
/// Longest description kept (longer ones are cut).
const MAX_DESCRIPTION: usize = 2048;
/// Largest input schema, serialized.
const MAX_SCHEMA_BYTES: usize = 32 * 1024;

/// The declaration as kept for the connection.
pub(crate) fn validate(declared: &ChannelAdapterCapabilities) -> ChannelAdapter {
    let structured_delivery = declared
        .delivery_capabilities
        .as_ref()
        .and_then(|d| d.get("structuredDelivery"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut tools: Vec<DynamicToolSpec> = Vec::new();
    let mut ignored = 0usize;
    for raw in &declared.channel_tools {
        match tool(raw) {
            Some(spec) if tools.len() < MAX_TOOLS && !tools.iter().any(|t| t.name.eq_ignore_ascii_case(&spec.name)) => {
                tools.push(spec);
            }
            _ => ignored += 1,
        }
    }
    if ignored > 0 {
        tracing::warn!(channel = %declared.channel_name, ignored, kept = tools.len(), "channel tools ignored");
    }
    ChannelAdapter { channel: declared.channel_name.trim().to_owned(), structured_delivery, tools }
}

fn valid_name(name: &str) -> bool {
    name.len() <= MAX_NAME
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One declared tool, or `None` when it is not a valid one.
fn tool(raw: &Value) -> Option<DynamicToolSpec> {
    let name = raw.get("name")?.as_str()?;
    if !valid_name(name) {
        return None;
    }
    let description: String =
        raw.get("description").and_then(Value::as_str).unwrap_or_default().chars().take(MAX_DESCRIPTION).collect();
    let input_schema = match raw.get("inputSchema") {
        None | Some(Value::Null) => json!({ "type": "object" }),
        Some(schema @ Value::Object(_)) if schema.to_string().len() <= MAX_SCHEMA_BYTES => schema.clone(),
        Some(_) => return None,
    };
    let approval = match raw.get("approval") {
        None | Some(Value::Null) => None,
        Some(approval @ Value::Object(_)) if approval.to_string().len() <= 1024 => Some(approval.clone()),
        Some(_) => return None,
    };
    Some(DynamicToolSpec {
        namespace: None,
        name: name.to_owned(),
        description,
        input_schema,
        defer_loading: None,
        approval,
    })
}

/// The open connection here whose adapter serves `channel` (compared case-insensitively), the
/// one that connected last when there are several.
pub(crate) fn connected(clients: &dyn Broadcast, channel: &str) -> Option<(Arc<dyn Client>, Arc<ChannelAdapter>)> {
    clients
        .all()
        .into_iter()
        .filter(|client| !client.is_closed())
        .filter_map(|client| client.channel_declaration().map(|adapter| (client, adapter)))
        .filter(|(_, adapter)| adapter.channel.eq_ignore_ascii_case(channel))
        .max_by_key(|(client, _)| client.id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(tools: Vec<Value>) -> ChannelAdapterCapabilities {
        ChannelAdapterCapabilities {
            channel_name: " telegram ".into(),
            delivery_capabilities: Some(json!({ "structuredDelivery": true })),
            channel_tools: tools,
        }
    }

    #[test]
    fn invalid_duplicate_and_surplus_tools_are_ignored() {
        let mut tools = vec![
            json!({ "name": "SendDoc", "description": "d", "inputSchema": { "type": "object" } }),
            json!({ "name": "senddoc" }),
            json!({ "name": "1bad" }),
            json!({ "name": "has space" }),
            json!({ "name": "x".repeat(65) }),
            json!({ "name": "Schema", "inputSchema": "not an object" }),
            json!({ "name": "Huge", "inputSchema": { "description": "y".repeat(40_000) } }),
            json!("not an object"),
        ];
        tools.extend((0..10_000).map(|i| json!({ "name": format!("t{i}") })));
        let adapter = validate(&declared(tools));
        assert_eq!(adapter.channel, "telegram");
        assert!(adapter.structured_delivery);
        assert_eq!(adapter.tools.len(), MAX_TOOLS);
        assert_eq!(adapter.tools[0].name, "SendDoc");
        assert_eq!(adapter.tools[1].name, "t0");
        assert_eq!(adapter.tools[1].input_schema, json!({ "type": "object" }));
        let long = validate(&declared(vec![json!({ "name": "Long", "description": "z".repeat(5000) })]));
        assert_eq!(long.tools[0].description.len(), MAX_DESCRIPTION);
        let plain = validate(&ChannelAdapterCapabilities { channel_name: "c".into(), ..Default::default() });
        assert!(!plain.structured_delivery && plain.tools.is_empty());
    }
}
