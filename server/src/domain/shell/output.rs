//! A command's output: bytes decoded as UTF-8 across read boundaries, kept as head and tail
//! (what is in between is counted, not kept), and handed on as deltas that concatenate to exactly
//! what is kept.

/// Decodes a byte stream as UTF-8, holding a character split across reads until it is whole;
/// invalid bytes become U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match err.error_len() {
                        // An incomplete character at the end: keep it for the next read.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// The end of the stream: an incomplete character left is U+FFFD.
    pub(crate) fn finish(&mut self) -> String {
        if self.pending.is_empty() {
            String::new()
        } else {
            self.pending.clear();
            "\u{FFFD}".to_owned()
        }
    }
}

/// Output kept as its first `head_max` and last `tail_max` bytes (at character boundaries).
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    head: String,
    head_max: usize,
    tail: String,
    tail_max: usize,
    /// Characters written in all.
    total_chars: u64,
    /// Whether anything went past the head.
    overflowed: bool,
}

impl OutputBuffer {
    pub(crate) fn new(head_max: usize, tail_max: usize) -> Self {
        OutputBuffer { head: String::new(), head_max, tail: String::new(), tail_max, total_chars: 0, overflowed: false }
    }

    /// Adds text; returns the part that is part of the head (what may be streamed now: the rest
    /// is only known to be kept once the output ends).
    pub(crate) fn push(&mut self, text: &str) -> String {
        self.total_chars += text.chars().count() as u64;
        if self.overflowed {
            self.push_tail(text);
            return String::new();
        }
        let room = self.head_max - self.head.len();
        if text.len() <= room {
            self.head.push_str(text);
            return text.to_owned();
        }
        let cut = floor_boundary(text, room);
        self.head.push_str(&text[..cut]);
        self.overflowed = true;
        self.push_tail(&text[cut..]);
        text[..cut].to_owned()
    }

    fn push_tail(&mut self, text: &str) {
        self.tail.push_str(text);
        if self.tail.len() > 2 * self.tail_max.max(1) {
            self.trim_tail();
        }
    }

    fn trim_tail(&mut self) {
        if self.tail.len() > self.tail_max {
            let cut = ceil_boundary(&self.tail, self.tail.len() - self.tail_max);
            self.tail.drain(..cut);
        }
    }

    pub(crate) fn truncated(&self) -> bool {
        self.overflowed && self.total_chars > (self.head.chars().count() + self.tail.chars().count()) as u64
    }

    pub(crate) fn total_chars(&self) -> u64 {
        self.total_chars
    }

    /// What follows the head once the output has ended: the omission marker (when something was
    /// dropped) and the tail. `head + rest()` is [`OutputBuffer::kept`].
    pub(crate) fn rest(&mut self) -> String {
        self.trim_tail();
        if !self.overflowed {
            return String::new();
        }
        if !self.truncated() {
            return self.tail.clone();
        }
        let omitted = self.total_chars - (self.head.chars().count() + self.tail.chars().count()) as u64;
        format!("\n… [{omitted} characters omitted] …\n{}", self.tail)
    }

    /// Everything kept: the head, then (after a marker when something was dropped) the tail.
    pub(crate) fn kept(&mut self) -> String {
        let rest = self.rest();
        format!("{}{rest}", self.head)
    }
}

/// The last `max_chars` characters of `text`.
pub(crate) fn tail_chars(text: &str, max_chars: usize) -> &str {
    let count = text.chars().count();
    if count <= max_chars {
        return text;
    }
    let skip = text.char_indices().nth(count - max_chars).map_or(text.len(), |(i, _)| i);
    &text[skip..]
}

/// `text` cut to `max_chars` characters, keeping its first and last halves around a marker.
pub(crate) fn head_and_tail(text: &str, max_chars: usize) -> (String, bool) {
    let count = text.chars().count();
    if count <= max_chars {
        return (text.to_owned(), false);
    }
    let half = max_chars / 2;
    let head: String = text.chars().take(half).collect();
    let tail = tail_chars(text, max_chars - half);
    (format!("{head}\n… [{} characters omitted] …\n{tail}", count - max_chars), true)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Collects streamed text into deltas: one is due once `max_bytes` are waiting or the first of
/// them has waited `max_wait`.
#[derive(Debug)]
pub(crate) struct Coalescer {
    pending: String,
    since: Option<tokio::time::Instant>,
    max_bytes: usize,
    max_wait: std::time::Duration,
}

impl Coalescer {
    pub(crate) fn new(max_bytes: usize, max_wait: std::time::Duration) -> Self {
        Coalescer { pending: String::new(), since: None, max_bytes, max_wait }
    }

    pub(crate) fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.pending.is_empty() {
            self.since = Some(tokio::time::Instant::now());
        }
        self.pending.push_str(text);
    }

    /// When the waiting text is due (`None`: nothing waits).
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.since.map(|since| since + self.max_wait)
    }

    pub(crate) fn is_full(&self) -> bool {
        self.pending.len() >= self.max_bytes
    }

    /// Takes the waiting text.
    pub(crate) fn take(&mut self) -> Option<String> {
        self.since = None;
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_split_across_reads_are_whole() {
        let mut d = Utf8Decoder::default();
        let bytes = "é→ü".as_bytes();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&d.push(&[*b]));
        }
        assert_eq!(out, "é→ü");
        assert_eq!(d.push(&[0xff, b'a']), "\u{FFFD}a");
        assert_eq!(d.push(&[0xe2]), "");
        assert_eq!(d.finish(), "\u{FFFD}");
    }

    #[test]
    fn deltas_concatenate_to_what_is_kept() {
        let mut buffer = OutputBuffer::new(10, 8);
        let mut streamed = String::new();
        for piece in ["hello ", "wörld, ", "this is long ", "and longer still", " end"] {
            streamed.push_str(&buffer.push(piece));
        }
        streamed.push_str(&buffer.rest());
        assert!(buffer.truncated());
        assert_eq!(streamed, buffer.kept());
        assert!(streamed.starts_with("hello wör"));
        assert!(streamed.ends_with("ill end"), "{streamed}");
        let total: usize =
            ["hello ", "wörld, ", "this is long ", "and longer still", " end"].iter().map(|s| s.chars().count()).sum();
        assert_eq!(buffer.total_chars(), total as u64);
        let mut small = OutputBuffer::new(100, 100);
        assert_eq!(small.push("abc"), "abc");
        assert_eq!(small.rest(), "");
        assert!(!small.truncated());
    }

    #[test]
    fn head_and_tail_keep_both_ends() {
        let (cut, truncated) = head_and_tail("abcdefghij", 4);
        assert!(truncated);
        assert!(cut.starts_with("ab") && cut.ends_with("ij"));
        assert_eq!(head_and_tail("abc", 4), ("abc".to_owned(), false));
        assert_eq!(tail_chars("héllo", 3), "llo");
    }
}
