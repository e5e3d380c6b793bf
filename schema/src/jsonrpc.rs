//! The JSON-RPC 2.0 envelope: parsing incoming frames (single or batch) and writing outgoing ones.
//!
//! Parsing keeps `params`, `result` and the request id as raw JSON text, so the payload is parsed
//! exactly once (into its typed params) and ids are echoed back byte for byte, whatever their type.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

/// The only protocol version this envelope speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// Standard and DotCraft error codes shared by every method.
pub mod error_codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The generic server error of JSON-RPC's implementation-defined range: an app's rejection
    /// (its own code in `data.code`), an editor bridge's failure.
    pub const SERVER_ERROR: i64 = -32000;
    pub const SERVER_OVERLOADED: i64 = -32001;
    pub const NOT_INITIALIZED: i64 = -32002;
    pub const ALREADY_INITIALIZED: i64 = -32003;
    /// The caller's role may not call this method, or may not ask it for what it asked (a setting
    /// that loosens safety, a thread of another channel): docs/security.md. The message names the
    /// role and the method; `data` has `role`, `method` and, for a setting, `field`.
    pub const ROLE_NOT_ALLOWED: i64 = -32004;
    pub const THREAD_NOT_FOUND: i64 = -32010;
    pub const THREAD_NOT_ACTIVE: i64 = -32011;
    pub const TURN_IN_PROGRESS: i64 = -32012;
    pub const TURN_NOT_FOUND: i64 = -32013;
    pub const TURN_NOT_RUNNING: i64 = -32014;
    pub const APPROVAL_TIMEOUT: i64 = -32020;
    pub const CRON_JOB_NOT_FOUND: i64 = -32031;
    pub const SKILL_NOT_FOUND: i64 = -32040;
    /// `automation/*`: no such task (of the caller's).
    pub const TASK_NOT_FOUND: i64 = -32051;
    /// `automation/*`: not valid in the task's status (it is running).
    pub const TASK_INVALID_STATUS: i64 = -32052;
    /// `automation/task/create`: a task with that id exists.
    pub const TASK_ALREADY_EXISTS: i64 = -32054;
    /// `automation/task/create` / `updateBinding`: the thread is missing or archived.
    pub const THREAD_BINDING_INVALID: i64 = -32055;
    pub const COMMAND_NOT_FOUND: i64 = -32060;
    pub const COMMAND_PERMISSION_DENIED: i64 = -32061;
    pub const COMMAND_SERVICE_UNAVAILABLE: i64 = -32062;
    /// App-level failures (appserver's extension); `data.code` says which (`APP_NOT_FOUND`,
    /// `TIMEOUT`, ...). It shares its number with section 22.11's McpServerNotFound, which an
    /// app error tells apart by its `data.code` (docs/protocol.md, Errors).
    pub const APP_ERROR: i64 = -32070;
    /// Section 22.11.
    pub const MCP_SERVER_NOT_FOUND: i64 = -32070;
    pub const MCP_SERVER_VALIDATION_FAILED: i64 = -32072;
    pub const MCP_SERVER_TEST_FAILED: i64 = -32073;
    pub const MCP_SERVER_NAME_CONFLICT: i64 = -32074;
    pub const MCP_SERVER_READ_ONLY: i64 = -32075;
    pub const EXTERNAL_CHANNEL_NOT_FOUND: i64 = -32080;
    pub const EXTERNAL_CHANNEL_VALIDATION_FAILED: i64 = -32081;
    pub const EXTERNAL_CHANNEL_NAME_CONFLICT: i64 = -32082;
    /// Section 24.9.
    pub const SUBAGENT_PROFILE_NOT_FOUND: i64 = -32083;
    pub const SUBAGENT_PROFILE_VALIDATION_FAILED: i64 = -32084;
    pub const SUBAGENT_PROFILE_PROTECTED: i64 = -32085;
}

/// A request id exactly as it appeared on the wire: the raw JSON text of a string, a number or
/// `null`. Responses echo it unchanged, so `7`, `"7"` and `7.0` stay distinct.
#[derive(Debug, Clone)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// The `null` id used when a message's own id could not be determined.
    pub fn null() -> Self {
        Self::from_raw_text("null".to_owned())
    }

    /// An integer id, as the server uses for its own requests.
    pub fn integer(n: i64) -> Self {
        Self::from_raw_text(n.to_string())
    }

    /// A string id.
    pub fn string(s: &str) -> Self {
        // A JSON string literal is always valid JSON text.
        Self::from_raw_text(serde_json::Value::from(s).to_string())
    }

    fn from_raw_text(text: String) -> Self {
        // Only called with literals built above (`null`, an integer, a serialized string).
        Self(RawValue::from_string(text).expect("a JSON literal is valid JSON"))
    }

    /// The raw JSON text of the id.
    pub fn as_raw(&self) -> &str {
        self.0.get()
    }

    /// The id as an integer, when it is one.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.get().parse().ok()
    }

    /// The id as a string, when it is one.
    pub fn as_str(&self) -> Option<String> {
        if self.0.get().starts_with('"') { serde_json::from_str(self.0.get()).ok() } else { None }
    }

    pub fn is_null(&self) -> bool {
        self.0.get() == "null"
    }

    fn is_valid_kind(raw: &RawValue) -> bool {
        matches!(raw.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9' | b'n'))
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}
impl Eq for RequestId {}

impl std::hash::Hash for RequestId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.get().hash(state);
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.get())
    }
}

impl Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if RequestId::is_valid_kind(&raw) {
            Ok(Self(raw))
        } else {
            Err(D::Error::custom("id must be a string, a number or null"))
        }
    }
}

/// The `error` member of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// A request: has an id and a method.
#[derive(Debug)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

/// A notification: a method without an id.
#[derive(Debug)]
pub struct Notification {
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

/// A response to a request the receiver sent earlier.
#[derive(Debug)]
pub struct Response {
    pub id: RequestId,
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// One well-formed JSON-RPC message.
#[derive(Debug)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// A message that was valid JSON but not a valid JSON-RPC message (-32600). `id` is the message's
/// own id when it could be read, `null` otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    pub id: RequestId,
    pub reason: String,
}

/// What one incoming frame (a line or a WebSocket text frame) holds.
#[derive(Debug)]
pub enum Frame {
    /// Not valid JSON at all (-32700, id null).
    ParseError(String),
    Single(Result<Message, InvalidMessage>),
    /// A JSON array: each element is judged on its own. Never empty: an empty array is a
    /// `Single(Err(..))`.
    Batch(Vec<Result<Message, InvalidMessage>>),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Box<RawValue>>,
}

/// Distinguishes a member that is present with the value `null` from an absent member.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

/// Parses one incoming frame.
pub fn parse_frame(text: &str) -> Frame {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let elements: Vec<&RawValue> = match serde_json::from_str(text) {
            Ok(elements) => elements,
            Err(err) => return Frame::ParseError(err.to_string()),
        };
        if elements.is_empty() {
            return Frame::Single(Err(InvalidMessage { id: RequestId::null(), reason: "empty batch".to_owned() }));
        }
        return Frame::Batch(elements.into_iter().map(|raw| parse_message(raw.get())).collect());
    }
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => Frame::Single(classify(envelope)),
        Err(err) if err.is_data() => {
            // Valid JSON but not an object: still decide between "not JSON" and "not a message".
            match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Frame::Single(Err(InvalidMessage {
                    id: RequestId::null(),
                    reason: "a message must be a JSON object".to_owned(),
                })),
                Err(err) => Frame::ParseError(err.to_string()),
            }
        }
        Err(err) => Frame::ParseError(err.to_string()),
    }
}

/// Parses one element of a batch (already known to be valid JSON).
fn parse_message(text: &str) -> Result<Message, InvalidMessage> {
    match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(envelope) => classify(envelope),
        Err(_) => Err(InvalidMessage { id: RequestId::null(), reason: "a message must be a JSON object".to_owned() }),
    }
}

fn classify(envelope: Envelope<'_>) -> Result<Message, InvalidMessage> {
    let id = match envelope.id {
        None => None,
        Some(raw) if RequestId::is_valid_kind(&raw) => Some(RequestId(raw)),
        Some(_) => {
            return Err(InvalidMessage {
                id: RequestId::null(),
                reason: "`id` must be a string, a number or null".to_owned(),
            });
        }
    };
    let known_id = id.clone().unwrap_or_else(RequestId::null);
    let invalid = |reason: &str| InvalidMessage { id: known_id.clone(), reason: reason.to_owned() };
    match envelope.jsonrpc {
        Some(v) if v.get() == "\"2.0\"" => {}
        Some(_) => return Err(invalid("`jsonrpc` must be exactly \"2.0\"")),
        None => return Err(invalid("missing `jsonrpc` member")),
    }
    if let Some(method) = envelope.method {
        let method: String = serde_json::from_str(method.get()).map_err(|_| invalid("`method` must be a string"))?;
        if envelope.result.is_some() || envelope.error.is_some() {
            return Err(invalid("a request cannot carry `result` or `error`"));
        }
        if let Some(params) = &envelope.params {
            if !matches!(params.get().as_bytes().first(), Some(b'{' | b'[')) {
                return Err(invalid("`params` must be an object or an array"));
            }
        }
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params: envelope.params }),
            None => Message::Notification(Notification { method, params: envelope.params }),
        });
    }
    let Some(id) = id else {
        return Err(invalid("a message needs a `method` or, for a response, an `id`"));
    };
    match (envelope.result, envelope.error) {
        (Some(result), None) => Ok(Message::Response(Response { id, outcome: Ok(result) })),
        (None, Some(error)) => {
            let error: ErrorObject =
                serde_json::from_str(error.get()).map_err(|_| invalid("`error` must have a code and a message"))?;
            Ok(Message::Response(Response { id, outcome: Err(error) }))
        }
        _ => Err(invalid("a response needs exactly one of `result` and `error`")),
    }
}

#[derive(Serialize)]
struct OutResponse<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: &'a ErrorObject,
}

#[derive(Serialize)]
struct OutRequest<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    params: &'a T,
}

#[derive(Serialize)]
struct OutNotification<'a, T: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a T,
}

/// Serializes a value that is known to be serializable (wire types, `Value`, raw JSON). A
/// failure here would be a bug in a wire type (e.g. a map with non-string keys).
fn to_json<T: Serialize>(value: &T) -> Result<String, serde_json::Error> {
    // Most frames are a few hundred bytes: start there rather than grow from 128 by copying.
    let mut out = Vec::with_capacity(512);
    serde_json::to_writer(&mut out, value)?;
    // serde_json writes only valid UTF-8.
    String::from_utf8(out).map_err(|err| serde::ser::Error::custom(err.utf8_error()))
}

/// `{"jsonrpc":"2.0","id":..,"result":..}`
pub fn write_response<T: Serialize>(id: &RequestId, result: &T) -> Result<String, serde_json::Error> {
    to_json(&OutResponse { jsonrpc: JSONRPC_VERSION, id, result })
}

/// `{"jsonrpc":"2.0","id":..,"error":{..}}`
pub fn write_error(id: &RequestId, error: &ErrorObject) -> String {
    // An ErrorObject always serializes: its members are a number, a string and a Value.
    to_json(&OutError { jsonrpc: JSONRPC_VERSION, id, error }).unwrap_or_else(|_| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":"internal error"}}}}"#,
            id.as_raw(),
            error.code
        )
    })
}

/// `{"jsonrpc":"2.0","id":..,"method":..,"params":..}`
pub fn write_request<T: Serialize>(id: &RequestId, method: &str, params: &T) -> Result<String, serde_json::Error> {
    to_json(&OutRequest { jsonrpc: JSONRPC_VERSION, id, method, params })
}

/// `{"jsonrpc":"2.0","method":..,"params":..}`
pub fn write_notification<T: Serialize>(method: &str, params: &T) -> Result<String, serde_json::Error> {
    to_json(&OutNotification { jsonrpc: JSONRPC_VERSION, method, params })
}

/// A notification's text (as [`write_notification`] writes it) with `"seq":seq` added as the
/// last member of its params object. `None` when the text does not end in a params object.
pub fn with_seq(frame: &str, seq: u64) -> Option<String> {
    let body = frame.strip_suffix("}}")?;
    let mut out = String::with_capacity(frame.len() + 28);
    out.push_str(body);
    if !body.ends_with('{') {
        out.push(',');
    }
    out.push_str("\"seq\":");
    out.push_str(&seq.to_string());
    out.push_str("}}");
    Some(out)
}

/// Decodes a method's params. Absent params decode as `{}`, so methods whose fields are all
/// optional accept omitted params. The error names the offending field (`identity.userId: ...`).
pub fn decode_params<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, String> {
    let text = params.map_or("{}", RawValue::get);
    if text.starts_with('[') {
        return Err("params must be an object (positional params are not supported)".to_owned());
    }
    // Valid params (nearly all) take the plain path; only a failure is decoded again with path
    // tracking, which is slower, to say which field is wrong.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = strip_position(&err.inner().to_string());
        if path == "." || path.is_empty() { inner } else { format!("{path}: {inner}") }
    })
}

/// serde_json appends " at line 1 column 42"; the field path is more useful than the column.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(pos) => message[..pos].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_is_the_last_member_of_the_params() {
        #[derive(Serialize)]
        struct P {
            a: u8,
        }
        #[derive(Serialize)]
        struct E {}
        let text = with_seq(&write_notification("x/y", &P { a: 1 }).unwrap(), 7).unwrap();
        assert_eq!(text, r#"{"jsonrpc":"2.0","method":"x/y","params":{"a":1,"seq":7}}"#);
        let text = with_seq(&write_notification("x/y", &E {}).unwrap(), 8).unwrap();
        assert_eq!(text, r#"{"jsonrpc":"2.0","method":"x/y","params":{"seq":8}}"#);
        assert_eq!(with_seq(r#"{"jsonrpc":"2.0","method":"x"}"#, 1), None);
    }

    fn single(text: &str) -> Result<Message, InvalidMessage> {
        match parse_frame(text) {
            Frame::Single(m) => m,
            other => panic!("expected a single message, got {other:?}"),
        }
    }

    #[test]
    fn request_ids_keep_their_raw_text() {
        for id in [r#""abc""#, "7", "-3", "1.5", "12345678901234567890", "null"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            let Ok(Message::Request(req)) = single(&text) else { panic!("{text}") };
            assert_eq!(req.id.as_raw(), id);
            let out = write_response(&req.id, &serde_json::json!({})).unwrap();
            assert!(out.contains(&format!(r#""id":{id}"#)), "{out}");
        }
    }

    #[test]
    fn absent_id_is_a_notification_but_null_id_is_a_request() {
        assert!(matches!(single(r#"{"jsonrpc":"2.0","method":"m"}"#), Ok(Message::Notification(_))));
        assert!(matches!(single(r#"{"jsonrpc":"2.0","method":"m","id":null}"#), Ok(Message::Request(_))));
    }

    #[test]
    fn invalid_messages_are_rejected_with_their_id_when_known() {
        let err = single(r#"{"jsonrpc":"1.0","method":"m","id":4}"#).unwrap_err();
        assert_eq!(err.id.as_raw(), "4");
        let err = single(r#"{"jsonrpc":"2.0","method":1,"id":"x"}"#).unwrap_err();
        assert_eq!(err.id.as_raw(), r#""x""#);
        let err = single(r#"{"jsonrpc":"2.0","method":"m","id":{"a":1}}"#).unwrap_err();
        assert!(err.id.is_null());
        let err = single(r#"{"jsonrpc":"2.0","method":"m","params":3,"id":1}"#).unwrap_err();
        assert!(err.reason.contains("params"));
        assert!(single("42").is_err());
        assert!(single(r#"{"jsonrpc":"2.0"}"#).is_err());
    }

    #[test]
    fn parse_errors_and_batches() {
        assert!(matches!(parse_frame("{not json"), Frame::ParseError(_)));
        assert!(matches!(parse_frame("[1,"), Frame::ParseError(_)));
        assert!(matches!(parse_frame("[]"), Frame::Single(Err(_))));
        let Frame::Batch(items) =
            parse_frame(r#"[{"jsonrpc":"2.0","method":"a","id":1}, 1, {"jsonrpc":"2.0","method":"n"}]"#)
        else {
            panic!()
        };
        assert_eq!(items.len(), 3);
        assert!(matches!(items[0], Ok(Message::Request(_))));
        assert!(items[1].is_err());
        assert!(matches!(items[2], Ok(Message::Notification(_))));
    }

    #[test]
    fn responses_are_recognized() {
        let Ok(Message::Response(r)) = single(r#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#) else { panic!() };
        assert_eq!(r.id.as_i64(), Some(3));
        assert!(r.outcome.is_ok());
        let Ok(Message::Response(r)) = single(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#) else {
            panic!()
        };
        assert_eq!(r.outcome.unwrap_err().code, -1);
    }

    #[test]
    fn decode_params_names_the_field() {
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct P {
            thread_id: String,
            inner: Inner,
        }
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct Inner {
            count: u32,
        }
        let raw = RawValue::from_string(r#"{"threadId":"t","inner":{"count":"x"}}"#.into()).unwrap();
        let err = decode_params::<P>(Some(&raw)).unwrap_err();
        assert!(err.starts_with("inner.count:"), "{err}");
        let err = decode_params::<P>(None).unwrap_err();
        assert!(err.contains("threadId"), "{err}");
    }
}
