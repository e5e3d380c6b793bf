//! Outgoing WebSocket text messages, framed here (RFC 6455 section 5.2) and written straight to
//! the TCP socket in vectored writes: each frame's payload goes from the shared `OutFrame` bytes
//! to the kernel without a copy into a write buffer, and no buffer outlives a write (tungstenite
//! copies every frame into its write buffer, which keeps the capacity of the largest backlog for
//! the connection's life; see docs/architecture.md). Reading, pings, pongs and the close frame
//! stay with tungstenite; its buffer is flushed before these writes, so frames never interleave.

use std::io::IoSlice;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;

use crate::edge::rpc::OutFrame;

/// Messages larger than this go out as fragments (RFC 6455 section 5.4) ...
const FRAGMENT_ABOVE: usize = 256 * 1024;
/// ... of about this size, each a slice of the message's bytes, so a large reply does not hold
/// the socket for one long write while nothing else can be framed.
const FRAGMENT: usize = 64 * 1024;

/// Frames written per vectored write, at most (two slices each: header and payload; the kernel
/// takes up to 1,024).
const FRAMES_PER_WRITE: usize = 256;

/// Frames this small in all are copied into one buffer (freed after the write) and written as
/// one slice.
const COPY_BELOW: usize = 4 * 1024;

const OPCODE_CONTINUATION: u8 = 0x0;
const OPCODE_TEXT: u8 = 0x1;
const FIN: u8 = 0x80;

/// One frame: its header (2 to 10 bytes; a server's frames are not masked) and its payload.
struct Frame {
    header: [u8; 10],
    header_len: usize,
    payload: Bytes,
}

impl Frame {
    fn new(opcode: u8, fin: bool, payload: Bytes) -> Frame {
        let mut header = [0u8; 10];
        header[0] = if fin { FIN | opcode } else { opcode };
        let len = payload.len();
        let header_len = match len {
            0..=125 => {
                header[1] = len as u8;
                2
            }
            126..=0xFFFF => {
                header[1] = 126;
                header[2..4].copy_from_slice(&(len as u16).to_be_bytes());
                4
            }
            _ => {
                header[1] = 127;
                header[2..10].copy_from_slice(&(len as u64).to_be_bytes());
                10
            }
        };
        Frame { header, header_len, payload }
    }

    fn len(&self) -> usize {
        self.header_len + self.payload.len()
    }

    /// The frame's bytes from `offset` on, as at most two slices.
    fn slices(&self, offset: usize) -> impl Iterator<Item = IoSlice<'_>> {
        let header = &self.header[..self.header_len];
        let (header, payload) = match offset.checked_sub(self.header_len) {
            None => (&header[offset..], &self.payload[..]),
            Some(into_payload) => (&header[..0], &self.payload[into_payload..]),
        };
        [header, payload].into_iter().filter(|s| !s.is_empty()).map(IoSlice::new)
    }
}

/// The frames of one text message: one frame, or fragments of [`FRAGMENT`] bytes that each end
/// on a UTF-8 character boundary.
fn frames_of(message: &OutFrame, out: &mut Vec<Frame>) {
    let bytes = message.bytes();
    if bytes.len() <= FRAGMENT_ABOVE {
        out.push(Frame::new(OPCODE_TEXT, true, bytes.clone()));
        return;
    }
    let mut start = 0;
    while start < bytes.len() {
        let end = fragment_end(bytes, start);
        let opcode = if start == 0 { OPCODE_TEXT } else { OPCODE_CONTINUATION };
        out.push(Frame::new(opcode, end == bytes.len(), bytes.slice(start..end)));
        start = end;
    }
}

/// Where the fragment starting at `start` ends: [`FRAGMENT`] bytes on, moved back to the start
/// of a UTF-8 character so every fragment is whole text.
fn fragment_end(bytes: &[u8], start: usize) -> usize {
    let mut end = (start + FRAGMENT).min(bytes.len());
    while end < bytes.len() && end > start + 1 && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    end
}

/// Writes `messages` as text messages, in order, completely (a cancelled write leaves the
/// stream mid-frame: the caller must not write to it again).
pub(super) async fn write_messages<W>(stream: &mut W, messages: &[OutFrame]) -> std::io::Result<()>
where
    W: AsyncWriteExt + Unpin,
{
    let mut frames = Vec::with_capacity(messages.len().min(FRAMES_PER_WRITE));
    for message in messages {
        frames_of(message, &mut frames);
    }
    let total: usize = frames.iter().map(Frame::len).sum();
    if total <= COPY_BELOW {
        // A few small frames (a reply): one contiguous write costs less than gathering them.
        let mut bytes = Vec::with_capacity(total);
        for frame in &frames {
            bytes.extend_from_slice(&frame.header[..frame.header_len]);
            bytes.extend_from_slice(&frame.payload);
        }
        return stream.write_all(&bytes).await;
    }
    // The next byte to write: a frame and an offset into it.
    let (mut next, mut offset) = (0, 0);
    let mut slices = Vec::with_capacity(2 * FRAMES_PER_WRITE);
    while next < frames.len() {
        slices.clear();
        for (n, frame) in frames[next..].iter().take(FRAMES_PER_WRITE).enumerate() {
            slices.extend(frame.slices(if n == 0 { offset } else { 0 }));
        }
        let mut written = stream.write_vectored(&slices).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let left = frames[next].len() - offset;
            if written < left {
                offset += written;
                written = 0;
            } else {
                written -= left;
                next += 1;
                offset = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::protocol::{Message, Role, WebSocket};

    /// Writes the messages through a socket pair that accepts at most `chunk` bytes a write,
    /// then reads them back with tungstenite as a client would.
    async fn round_trip(messages: &[String], chunk: usize) -> Vec<String> {
        let (mut ours, mut theirs) = tokio::io::duplex(chunk);
        let frames: Vec<OutFrame> = messages.iter().cloned().map(OutFrame::from).collect();
        let writer = tokio::spawn(async move {
            write_messages(&mut ours, &frames).await.unwrap();
        });
        let mut raw = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut theirs, &mut raw).await.unwrap();
        writer.await.unwrap();
        let mut client = WebSocket::from_raw_socket(std::io::Cursor::new(raw), Role::Client, None);
        let mut read = Vec::new();
        while read.len() < messages.len() {
            match client.read().unwrap() {
                Message::Text(text) => read.push(text.as_str().to_owned()),
                other => panic!("not a text message: {other:?}"),
            }
        }
        read
    }

    #[tokio::test]
    async fn messages_of_every_length_encoding_arrive_whole_and_in_order_through_short_writes() {
        // Every payload length encoding and its edges, a fragmented message of multi-byte
        // characters, and more small messages than one vectored write takes.
        let messages: Vec<String> = [0, 1, 125, 126, 65_535, 65_536, FRAGMENT_ABOVE, FRAGMENT_ABOVE + 1]
            .iter()
            .map(|&n| "x".repeat(n))
            .chain(std::iter::once("é😀a".repeat(100_000)))
            .chain((0..600).map(|n| format!("{{\"n\":{n}}}")))
            .collect();
        for chunk in [509, 4096, 1 << 20] {
            assert_eq!(round_trip(&messages, chunk).await, messages, "writes of at most {chunk} bytes");
            // A few small ones: copied into one buffer rather than gathered.
            let small = &messages[..3];
            assert_eq!(round_trip(small, chunk).await, small, "small messages, writes of at most {chunk} bytes");
        }
    }

    #[test]
    fn fragments_are_whole_utf8_and_cover_the_message() {
        let text = "é😀a".repeat(40_000);
        let bytes = text.as_bytes();
        let mut start = 0;
        let mut rebuilt = String::new();
        while start < bytes.len() {
            let end = fragment_end(bytes, start);
            assert!(end > start && end - start <= FRAGMENT);
            rebuilt.push_str(std::str::from_utf8(&bytes[start..end]).expect("a fragment splits a character"));
            start = end;
        }
        assert_eq!(rebuilt, text);
    }
}
