//! The envelope a thread event travels in between instances: a one-line header (`AS1`, origin,
//! sequence number, publish time, method) and the notification's exact text.
#![cfg_attr(not(feature = "cluster"), allow(dead_code))]

use bytes::{BufMut, Bytes, BytesMut};

use super::ClusterError;

const VERSION: &str = "AS1";

/// One thread event as it travels between instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterEvent {
    /// The instance that published it (its [`Cluster::instance_id`]); a receiver skips its own.
    pub(crate) origin: String,
    /// The thread's event sequence number (the store's record of the event).
    pub(crate) seq: u64,
    /// The notification's JSON-RPC method.
    pub(crate) method: String,
    /// The exact JSON-RPC notification text sent to clients.
    pub(crate) frame: String,
}

/// The envelope of an event, stamped with `published` (µs since the Unix epoch).
pub(super) fn encode(
    origin: &str,
    seq: u64,
    method: &str,
    frame: &[u8],
    published: u64,
) -> Result<Bytes, ClusterError> {
    let bad = |s: &str| s.is_empty() || s.bytes().any(|b| b.is_ascii_whitespace());
    if bad(origin) || bad(method) {
        return Err(ClusterError::InvalidEvent(format!(
            "origin `{origin}` and method `{method}` must be non-empty and hold no whitespace"
        )));
    }
    let header = format!("{VERSION} {origin} {seq} {published} {method}\n");
    let mut out = BytesMut::with_capacity(header.len() + frame.len());
    out.put_slice(header.as_bytes());
    out.put_slice(frame);
    Ok(out.freeze())
}

impl ClusterEvent {
    #[cfg(test)]
    /// The envelope, stamped with `published` (µs since the Unix epoch).
    pub(crate) fn encode(&self, published: u64) -> Result<Bytes, ClusterError> {
        encode(&self.origin, self.seq, &self.method, self.frame.as_bytes(), published)
    }

    /// The event and its publish time (µs since the Unix epoch) from an envelope.
    pub(crate) fn decode(payload: &[u8]) -> Result<(ClusterEvent, u64), ClusterError> {
        let invalid = |what: &str| ClusterError::InvalidEvent(what.to_owned());
        let newline = payload.iter().position(|b| *b == b'\n').ok_or_else(|| invalid("no header line"))?;
        let header = std::str::from_utf8(&payload[..newline]).map_err(|_| invalid("header is not UTF-8"))?;
        let fields: Vec<&str> = header.split(' ').collect();
        let [version, origin, seq, published, method] = fields[..] else {
            return Err(invalid("header does not have 5 fields"));
        };
        if version != VERSION {
            return Err(ClusterError::InvalidEvent(format!("unknown envelope version `{version}`")));
        }
        let seq = seq.parse().map_err(|_| invalid("seq is not a number"))?;
        let published = published.parse().map_err(|_| invalid("publish time is not a number"))?;
        let frame = std::str::from_utf8(&payload[newline + 1..]).map_err(|_| invalid("frame is not UTF-8"))?;
        let event = ClusterEvent { origin: origin.to_owned(), seq, method: method.to_owned(), frame: frame.to_owned() };
        Ok((event, published))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_round_trips_and_keeps_the_frame_byte_for_byte() {
        let frame = "{\"jsonrpc\":\"2.0\",\"method\":\"item/agentMessage/delta\",\"params\":{\"delta\":\"a\\nb é\"}}\n";
        let event = ClusterEvent {
            origin: "inst_abc".into(),
            seq: 42,
            method: "item/agentMessage/delta".into(),
            frame: frame.into(),
        };
        let bytes = event.encode(1_700_000_000_000_000).unwrap();
        assert!(bytes.starts_with(b"AS1 inst_abc 42 1700000000000000 item/agentMessage/delta\n{"));
        let (back, published) = ClusterEvent::decode(&bytes).unwrap();
        assert_eq!(back, event);
        assert_eq!(published, 1_700_000_000_000_000);
    }

    #[test]
    fn bad_envelopes_are_refused() {
        let event = ClusterEvent { origin: "a b".into(), seq: 1, method: "m".into(), frame: String::new() };
        assert!(event.encode(0).is_err());
        let event = ClusterEvent { origin: "a".into(), seq: 1, method: "".into(), frame: String::new() };
        assert!(event.encode(0).is_err());
        for bad in [&b"no header"[..], b"AS2 a 1 2 m\n{}", b"AS1 a x 2 m\n{}", b"AS1 a 1 2\n{}", b"AS1 a 1 2 m\n\xff"] {
            assert!(ClusterEvent::decode(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
