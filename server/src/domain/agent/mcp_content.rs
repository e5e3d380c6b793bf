//! An MCP tool's result as the agent and the clients see it: every content block kept (text,
//! image, audio, resource link, embedded resource) as the `toolResult` item's `contentItems`;
//! the model reads the text blocks with the others described in place, and gets the images and
//! audio themselves as the provider's content parts (`image_url` data URLs, `input_audio`) in a
//! user message after the tool messages — where the model takes them (`model_client::modalities`),
//! described in text where it does not.

use appserver_protocol::ContentItem;
use serde_json::{Value, json};

use crate::infra::model_client::modalities::Modalities;

/// Most characters of an embedded text resource given to the model.
const MAX_RESOURCE_TEXT: usize = 20_000;
/// The first text of the user message that carries a tool's media (how it is recognised when a
/// model that does not take them is sent the history).
pub(crate) const MEDIA_LEAD: &str = "Media returned by the tool call";

fn text_at(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The result's content blocks (MCP's wire shape) as content items.
pub(crate) fn items(content: &Value) -> Vec<ContentItem> {
    let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
    blocks.iter().filter_map(item).collect()
}

fn item(block: &Value) -> Option<ContentItem> {
    let kind = block.get("type").and_then(Value::as_str)?;
    let mut item = ContentItem::default();
    match kind {
        "text" => {
            item.kind = "text".into();
            item.text = text_at(block, "text");
        }
        "image" | "audio" => {
            item.kind = kind.into();
            item.media_type = text_at(block, "mimeType");
            item.data_base64 = text_at(block, "data");
        }
        "resource_link" => {
            item.kind = "resourceLink".into();
            item.uri = text_at(block, "uri");
            item.name = text_at(block, "name");
            item.description = text_at(block, "description");
            item.media_type = text_at(block, "mimeType");
        }
        "resource" => {
            let resource = block.get("resource")?;
            item.kind = "resource".into();
            item.uri = text_at(resource, "uri");
            item.media_type = text_at(resource, "mimeType");
            item.text = text_at(resource, "text");
            item.data_base64 = text_at(resource, "blob");
        }
        _ => return None,
    }
    Some(item)
}

fn size(item: &ContentItem) -> usize {
    let data = item.data_base64.as_deref().unwrap_or("").trim_end();
    (data.len() / 4 * 3).saturating_sub(data.len() - data.trim_end_matches('=').len())
}

fn media_type(item: &ContentItem) -> &str {
    item.media_type.as_deref().unwrap_or("application/octet-stream")
}

/// What the model reads of the result: the text blocks, each other block described where it
/// stands (images and audio follow as themselves where the model takes them, [`media_message`]).
pub(crate) fn model_text(items: &[ContentItem]) -> String {
    let mut parts = Vec::new();
    for item in items {
        let part = match item.kind.as_str() {
            "text" => item.text.clone().unwrap_or_default(),
            "image" | "audio" => format!("[{} ({}, {} bytes)]", item.kind, media_type(item), size(item)),
            "resourceLink" => format!(
                "[resource link: {} <{}>{}{}]",
                item.name.as_deref().unwrap_or(""),
                item.uri.as_deref().unwrap_or(""),
                item.media_type.as_deref().map(|m| format!(" ({m})")).unwrap_or_default(),
                item.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
            ),
            "resource" => match &item.text {
                Some(text) => {
                    let shown: String = text.chars().take(MAX_RESOURCE_TEXT).collect();
                    let cut = if shown.len() < text.len() { "… (cut)" } else { "" };
                    format!("[resource <{}> ({})]\n{shown}{cut}", item.uri.as_deref().unwrap_or(""), media_type(item))
                }
                None => format!(
                    "[resource <{}> ({}, {} bytes of binary content)]",
                    item.uri.as_deref().unwrap_or(""),
                    media_type(item),
                    size(item)
                ),
            },
            _ => continue,
        };
        parts.push(part);
    }
    parts.join("\n")
}

/// The provider content part of an image or audio item the model takes; one it does not is
/// described in text.
fn part(item: &ContentItem, modalities: Modalities) -> Option<Value> {
    if !matches!(item.kind.as_str(), "image" | "audio") {
        return None;
    }
    if !modalities.takes(item) {
        let why = format!(
            "[the {} ({}) is not shown to you: this model does not take {} input in this form; the user sees it]",
            item.kind,
            media_type(item),
            item.kind
        );
        return Some(json!({ "type": "text", "text": why }));
    }
    let data = item.data_base64.as_deref()?;
    match item.kind.as_str() {
        "image" => Some(json!({ "type": "image_url",
            "image_url": { "url": format!("data:{};base64,{data}", media_type(item)) } })),
        "audio" => Some(json!({ "type": "input_audio",
            "input_audio": { "data": data, "format": Modalities::audio_format(media_type(item))? } })),
        _ => None,
    }
}

/// The user message that gives the model the images and audio of the tool calls `results`
/// (call id and items), each as itself or, where the model does not take it, described; `None`
/// when the results have none.
pub(crate) fn media_message(results: &[(String, Vec<ContentItem>)], modalities: Modalities) -> Option<Value> {
    let mut content = Vec::new();
    for (call_id, items) in results {
        let parts: Vec<Value> = items.iter().filter_map(|i| part(i, modalities)).collect();
        if !parts.is_empty() {
            content.push(json!({ "type": "text", "text": format!("{MEDIA_LEAD} {call_id}:") }));
            content.extend(parts);
        }
    }
    (!content.is_empty()).then(|| json!({ "role": "user", "content": content }))
}

/// Fits the tool media messages of a history (built with every part, [`ALL`]) to what the
/// model takes: a part it does not is described instead.
pub(crate) fn fit(messages: &mut [Value], modalities: Modalities) {
    for message in messages.iter_mut().filter(|m| m["role"] == "user") {
        let Some(parts) = message["content"].as_array_mut() else { continue };
        if !parts.first().and_then(|p| p["text"].as_str()).is_some_and(|t| t.starts_with(MEDIA_LEAD)) {
            continue;
        }
        for part in parts.iter_mut() {
            let kind = match part["type"].as_str() {
                Some("image_url") if !modalities.image => "image",
                Some("input_audio") if !modalities.audio => "audio",
                _ => continue,
            };
            let why =
                format!("[the {kind} is not shown to you: this model does not take {kind} input; the user sees it]");
            *part = json!({ "type": "text", "text": why });
        }
    }
}

/// Every modality: how a stored history gives media before [`fit`].
pub(crate) const ALL: Modalities = Modalities { image: true, audio: true };

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_kept_and_media_reach_a_model_that_takes_them() {
        let content = json!([
            { "type": "text", "text": "A tiny image:" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
            { "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain" },
            { "type": "resource", "resource": { "uri": "test://r/1", "mimeType": "text/plain", "text": "hello" } },
            { "type": "resource", "resource": { "uri": "test://r/2", "mimeType": "application/gzip", "blob": "H4sI" } },
        ]);
        let items = items(&content);
        assert_eq!(items.len(), 6);
        let kinds: Vec<&str> = items.iter().map(|i| i.kind.as_str()).collect();
        assert_eq!(kinds, ["text", "image", "audio", "resourceLink", "resource", "resource"]);
        let text_only = model_text(&items);
        assert!(text_only.contains("[image (image/png, 8 bytes)]"), "{text_only}");
        assert!(text_only.contains("[resource link: a.txt <file:///a.txt> (text/plain)]"), "{text_only}");
        assert!(text_only.contains("[resource <test://r/1> (text/plain)]\nhello"), "{text_only}");
        assert!(text_only.contains("application/gzip, 3 bytes of binary"), "{text_only}");
        let described = media_message(&[("c1".into(), items.clone())], Modalities::TEXT).unwrap();
        assert!(described["content"][1]["text"].as_str().unwrap().contains("is not shown to you"), "{described}");
        let both = Modalities { image: true, audio: true };
        let message = media_message(&[("c1".into(), items)], both).unwrap();
        assert_eq!(message["content"][0]["text"], "Media returned by the tool call c1:");
        assert_eq!(message["content"][1]["image_url"]["url"], "data:image/png;base64,iVBORw0KGgo=");
        assert_eq!(message["content"][2]["input_audio"]["format"], "wav");
        let mut messages = vec![message];
        fit(&mut messages, Modalities { image: false, audio: true });
        assert!(messages[0]["content"][1]["text"].as_str().unwrap().contains("image is not shown"));
        assert_eq!(messages[0]["content"][2]["type"], "input_audio");
    }
}
