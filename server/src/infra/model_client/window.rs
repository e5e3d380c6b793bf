//! A model's context window and how full a request makes it: the window (configured, or known
//! from the model's name), the thresholds DotCraft's token ring and compaction use (warning at
//! 88 % of the effective window, auto-compaction at 90 %, error at 97 %), the snapshot sent as
//! `contextUsage`, and a token estimate of a request, calibrated by what the provider reported
//! for the last one.

use appserver_protocol::ContextUsageSnapshot;
use serde_json::Value;

use crate::infra::config::ContextSettings;

/// A window when neither the config nor the model's name says.
const DEFAULT_WINDOW: u64 = 128_000;
/// The largest answer reserve taken by default.
const MAX_DEFAULT_RESERVE: u64 = 16_384;

/// Thresholds as fractions of the effective window (DotCraft's 176k / 180k / 194k of 200k).
const WARNING: f64 = 0.88;
const AUTO_COMPACT: f64 = 0.90;
const ERROR: f64 = 0.97;

/// Characters per token of an uncalibrated estimate (English prose and JSON average about 4).
const CHARS_PER_TOKEN: f64 = 4.0;
/// Tokens a message costs beyond its text (role, separators).
const PER_MESSAGE: u64 = 4;

/// The window one thread's requests are judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ContextWindow {
    /// The model's window less the answer reserve: the denominator of the ring.
    pub(crate) effective: u64,
    pub(crate) auto_compact: bool,
}

impl ContextWindow {
    /// The window of `model` under `settings`.
    pub(crate) fn of(model: &str, settings: &ContextSettings) -> Self {
        let window = settings.window.unwrap_or_else(|| known_window(model));
        let reserve = settings.output_reserve.unwrap_or((window / 8).min(MAX_DEFAULT_RESERVE));
        ContextWindow { effective: window.saturating_sub(reserve).max(1), auto_compact: settings.auto_compact }
    }

    fn at(&self, fraction: f64) -> u64 {
        (self.effective as f64 * fraction) as u64
    }

    pub(crate) fn warning_threshold(&self) -> u64 {
        self.at(WARNING)
    }

    pub(crate) fn auto_compact_threshold(&self) -> u64 {
        self.at(AUTO_COMPACT)
    }

    pub(crate) fn error_threshold(&self) -> u64 {
        self.at(ERROR)
    }

    /// Fraction of the window left with `tokens` in it.
    pub(crate) fn percent_left(&self, tokens: u64) -> f64 {
        let left = 1.0 - tokens as f64 / self.effective as f64;
        (left.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0
    }

    /// The `contextUsage` snapshot for `tokens`.
    pub(crate) fn snapshot(&self, tokens: u64) -> ContextUsageSnapshot {
        ContextUsageSnapshot {
            tokens,
            context_window: self.effective,
            auto_compact_threshold: self.auto_compact_threshold(),
            warning_threshold: self.warning_threshold(),
            error_threshold: self.error_threshold(),
            percent_left: self.percent_left(tokens),
        }
    }
}

/// The window of well-known model families, by name; [`DEFAULT_WINDOW`] otherwise.
fn known_window(model: &str) -> u64 {
    let name = model.to_ascii_lowercase();
    let family = name.rsplit('/').next().unwrap_or(&name);
    let table: [(&str, u64); 9] = [
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("claude", 200_000),
        ("gemini", 1_048_576),
        ("gpt-3.5", 16_385),
    ];
    table.iter().find(|(prefix, _)| family.starts_with(prefix)).map_or(DEFAULT_WINDOW, |(_, w)| *w)
}

/// Estimates the input tokens of a request's messages and tools, calibrated: `ratio` is what the
/// provider reported for the last request over what this estimate said for it (1.0 before any).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimator {
    ratio: f64,
}

impl Default for Estimator {
    fn default() -> Self {
        Estimator { ratio: 1.0 }
    }
}

impl Estimator {
    /// The raw (uncalibrated) estimate of `messages` and `tools`.
    pub(crate) fn raw(messages: &[Value], tools: &[Value]) -> u64 {
        let chars: usize = messages.iter().chain(tools).map(text_chars).sum();
        (chars as f64 / CHARS_PER_TOKEN).ceil() as u64 + PER_MESSAGE * messages.len() as u64
    }

    /// The calibrated estimate.
    pub(crate) fn estimate(&self, messages: &[Value], tools: &[Value]) -> u64 {
        (Self::raw(messages, tools) as f64 * self.ratio).ceil() as u64
    }

    /// Learns from the provider's count of a request whose raw estimate was `raw` (bounded, so
    /// one odd answer cannot make later estimates absurd).
    pub(crate) fn calibrate(&mut self, raw: u64, reported: u64) {
        if raw > 0 && reported > 0 {
            self.ratio = (reported as f64 / raw as f64).clamp(0.25, 4.0);
        }
    }
}

/// Characters of the text in a message (strings anywhere in it; an image or audio part counts as
/// a fixed 3,000 characters, about what providers charge for an image, not its base64 data).
fn text_chars(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(text_chars).sum(),
        Value::Object(map) if matches!(map.get("type").and_then(Value::as_str), Some("image_url" | "input_audio")) => {
            3000
        }
        Value::Object(map) => map.values().map(text_chars).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_and_thresholds() {
        let auto = ContextSettings { window: None, output_reserve: None, auto_compact: true };
        assert_eq!(ContextWindow::of("gpt-4o-mini", &auto).effective, 128_000 - 16_000);
        assert_eq!(ContextWindow::of("anthropic/claude-sonnet-4", &auto).effective, 200_000 - 16_384);
        assert_eq!(ContextWindow::of("some-local-model", &auto).effective, 128_000 - 16_000);
        let small = ContextSettings { window: Some(8192), output_reserve: Some(1024), auto_compact: true };
        let w = ContextWindow::of("mock-model", &small);
        assert_eq!(w.effective, 7168);
        let s = w.snapshot(3584);
        assert_eq!((s.warning_threshold, s.auto_compact_threshold, s.error_threshold), (6307, 6451, 6952));
        assert_eq!(s.percent_left, 0.5);
        assert_eq!(w.percent_left(100_000), 0.0);
    }

    #[test]
    fn estimates_learn_from_the_provider() {
        let messages = vec![json!({"role": "user", "content": "x".repeat(400)})];
        let raw = Estimator::raw(&messages, &[]);
        assert_eq!(raw, 101 + 4, "the text (role included) and the per-message cost");
        let mut e = Estimator::default();
        assert_eq!(e.estimate(&messages, &[]), raw);
        e.calibrate(raw, raw * 2);
        assert_eq!(e.estimate(&messages, &[]), raw * 2);
        e.calibrate(raw, raw * 100);
        assert_eq!(e.estimate(&messages, &[]), raw * 4, "bounded");
    }
}
