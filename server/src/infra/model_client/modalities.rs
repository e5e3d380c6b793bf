//! What a model takes besides text: images (`image_url` content parts) and audio
//! (`input_audio`), as the config says (`[model] input_modalities`) or, without it, as the
//! model's family is known to (OpenAI's GPT-4o, GPT-4.1, GPT-5 and o-series, Claude and Gemini
//! take images; audio only a model named for it, and Gemini).

use appserver_protocol::ContentItem;

/// The input kinds beyond text a model takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Modalities {
    pub(crate) image: bool,
    pub(crate) audio: bool,
}

/// Families that take images, by the start of the model's name.
const IMAGE_FAMILIES: [&str; 9] = ["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "claude", "gemini", "llava"];

impl Modalities {
    /// Text only.
    #[cfg(test)]
    pub(crate) const TEXT: Modalities = Modalities { image: false, audio: false };

    /// What `model` takes: `configured` (the config's list: `text`, `image`, `audio`) when given,
    /// else what its family is known to take.
    pub(crate) fn of(model: &str, configured: Option<&[String]>) -> Modalities {
        if let Some(list) = configured {
            let has = |kind: &str| list.iter().any(|m| m.eq_ignore_ascii_case(kind));
            return Modalities { image: has("image"), audio: has("audio") };
        }
        let name = model.to_ascii_lowercase();
        let family = name.rsplit('/').next().unwrap_or(&name);
        Modalities {
            image: IMAGE_FAMILIES.iter().any(|f| family.starts_with(f)),
            audio: family.contains("audio") || family.starts_with("gemini"),
        }
    }

    /// Whether the model takes this image or audio item as itself (audio only in a format the
    /// chat API names).
    pub(crate) fn takes(self, item: &ContentItem) -> bool {
        match item.kind.as_str() {
            "image" => self.image,
            "audio" => self.audio && Self::audio_format(item.media_type.as_deref().unwrap_or("")).is_some(),
            _ => false,
        }
    }

    /// The chat API's `input_audio.format` of a media type (`wav`, `mp3`).
    pub(crate) fn audio_format(media_type: &str) -> Option<&'static str> {
        match media_type.to_ascii_lowercase().as_str() {
            "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
            "audio/mpeg" | "audio/mp3" => Some("mp3"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_or_known_by_family() {
        assert_eq!(Modalities::of("gpt-4o-mini", None), Modalities { image: true, audio: false });
        assert_eq!(Modalities::of("openai/gpt-4o-audio-preview", None), Modalities { image: true, audio: true });
        assert_eq!(Modalities::of("mock-model", None), Modalities::TEXT);
        let listed = ["text".to_owned(), "image".to_owned()];
        assert_eq!(Modalities::of("mock-model", Some(&listed)), Modalities { image: true, audio: false });
        assert_eq!(Modalities::of("gpt-4o", Some(&["text".to_owned()])), Modalities::TEXT);
    }
}
