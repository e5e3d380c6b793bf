//! NATS subjects of cluster mode: `<namespace>.thread.<token>.events` for a thread's events and
//! `<namespace>.rpc.<suffix>` for requests. Thread ids can be client-chosen strings, so no byte of
//! one reaches a subject unchecked: an id made only of `[A-Za-z0-9_-]` (128 bytes at most) is its
//! own token, any other is `~` + its bytes in lowercase hex (up to 128 bytes), and a longer one is
//! `#` + the SHA-256 of its bytes in hex. `~` and `#` never occur in a plain token, so the three
//! forms cannot collide, and none of them holds `.`, `*`, `>` or whitespace.
#![cfg_attr(not(feature = "cluster"), allow(dead_code))]

use sha2::{Digest, Sha256};

use super::ClusterError;

/// The longest thread id used as its own token (and the longest one hex-encoded).
const MAX_PLAIN: usize = 128;

/// `true` for the bytes a plain token may hold.
fn plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The subject token standing for `id` (a thread id, an instance id).
pub(crate) fn token(id: &str) -> String {
    let bytes = id.as_bytes();
    if !bytes.is_empty() && bytes.len() <= MAX_PLAIN && bytes.iter().all(|b| plain_byte(*b)) {
        return id.to_owned();
    }
    if bytes.len() <= MAX_PLAIN {
        return format!("~{}", hex(bytes));
    }
    format!("#{}", hex(&Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// `<namespace>.thread.<token>.events`
pub(crate) fn events_subject(namespace: &str, thread_id: &str) -> String {
    format!("{namespace}.thread.{}.events", token(thread_id))
}

/// `<namespace>.rpc.<suffix>`, the suffix checked by [`check_suffix`].
pub(crate) fn rpc_subject(namespace: &str, suffix: &str) -> Result<String, ClusterError> {
    check_suffix(suffix)?;
    Ok(format!("{namespace}.rpc.{suffix}"))
}

/// The subject suffix addressed to one instance (`instance.<token>`); append `.<what>` for a
/// particular service of it, e.g. `format!("{}.approval", instance_subject(id))`.
pub(crate) fn instance_subject(instance_id: &str) -> String {
    format!("instance.{}", token(instance_id))
}

/// A namespace: one or more dot-separated tokens of `[A-Za-z0-9_-]`.
pub(crate) fn check_namespace(namespace: &str) -> Result<(), ClusterError> {
    let ok = namespace.split('.').all(|t| !t.is_empty() && t.bytes().all(plain_byte));
    if ok {
        Ok(())
    } else {
        Err(ClusterError::InvalidSubject {
            subject: namespace.to_owned(),
            reason: "a namespace is dot-separated tokens of letters, digits, '_' and '-'".to_owned(),
        })
    }
}

/// A request subject suffix: dot-separated non-empty tokens without whitespace, `*` or `>`
/// (no wildcards: a suffix names one service).
pub(crate) fn check_suffix(suffix: &str) -> Result<(), ClusterError> {
    let bad_token = |t: &str| t.is_empty() || t.chars().any(|c| c.is_whitespace() || c == '*' || c == '>');
    if suffix.split('.').any(bad_token) {
        return Err(ClusterError::InvalidSubject {
            subject: suffix.to_owned(),
            reason: "expected dot-separated non-empty tokens without whitespace, '*' or '>'".to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject_safe(token: &str) -> bool {
        !token.is_empty() && !token.chars().any(|c| c == '.' || c == '*' || c == '>' || c.is_whitespace())
    }

    #[test]
    fn plain_thread_ids_are_their_own_token() {
        assert_eq!(token("thr_0123abcDEF-x"), "thr_0123abcDEF-x");
        assert_eq!(events_subject("appserver", "thr_1"), "appserver.thread.thr_1.events");
        assert_eq!(events_subject("a.b", "t"), "a.b.thread.t.events");
    }

    #[test]
    fn odd_thread_ids_never_reach_a_subject_raw() {
        let odd = ["a.b", "*", ">", "a b", "tab\there", "", "é", "line\nbreak", "a.>", "..", "~61", "#x"];
        for id in odd {
            let t = token(id);
            assert!(subject_safe(&t), "{id:?} -> {t:?}");
            assert!(t.starts_with('~'), "{id:?} -> {t:?}");
        }
        assert_eq!(token("a.b"), "~612e62");
        assert_eq!(token(""), "~");
        assert_eq!(token("*"), "~2a");
        // An id that looks like an encoding is encoded itself, so it cannot collide with one.
        assert_ne!(token("~612e62"), token("a.b"));
        let long = "x".repeat(MAX_PLAIN + 1);
        let t = token(&long);
        assert!(t.starts_with('#') && t.len() == 65 && subject_safe(&t), "{t}");
        assert_ne!(token(&"y".repeat(MAX_PLAIN + 1)), t);
        let long_odd = ".".repeat(MAX_PLAIN + 1);
        assert!(token(&long_odd).starts_with('#'));
        assert_eq!(token(&"z".repeat(MAX_PLAIN)), "z".repeat(MAX_PLAIN));
    }

    #[test]
    fn namespaces_and_suffixes_are_checked() {
        assert!(check_namespace("appserver").is_ok());
        assert!(check_namespace("prod.eu-1").is_ok());
        for bad in ["", "a..b", "a b", "a.*", ">", "a.", ".a", "é"] {
            assert!(check_namespace(bad).is_err(), "{bad:?}");
        }
        assert!(check_suffix("approval").is_ok());
        assert!(check_suffix("instance.inst_abc.approval").is_ok());
        for bad in ["", "a..b", "a b", "a.*", "a.>", ".a", "a."] {
            assert!(check_suffix(bad).is_err(), "{bad:?}");
        }
        assert_eq!(rpc_subject("ns", "x.y").unwrap(), "ns.rpc.x.y");
        assert_eq!(instance_subject("inst_abc123"), "instance.inst_abc123");
        assert_eq!(instance_subject("a.b"), "instance.~612e62");
    }
}
