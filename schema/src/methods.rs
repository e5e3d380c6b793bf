//! The method table: every method of the protocol is listed once here, and the typed request,
//! notification and server-request enums, the method-name constants and the JSON Schema listing
//! are all generated from that one list.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::initialize::{InitializeParams, InitializeResult, InitializedParams};
use crate::jsonrpc::decode_params;

/// A method of the protocol, named by a marker type (`methods::Initialize`).
pub trait Method {
    const NAME: &'static str;
    type Params: Serialize + for<'de> Deserialize<'de> + JsonSchema;
    type Result: Serialize + for<'de> Deserialize<'de> + JsonSchema;
}

/// One entry of the generated schema listing.
#[derive(Debug)]
pub struct MethodSchema {
    pub method: &'static str,
    pub params: Schema,
    /// `None` for notifications.
    pub result: Option<Schema>,
}

/// Requests: a marker type per method, an enum of decoded requests, and a schema listing.
macro_rules! request_table {
    ($enum_name:ident, $schemas_fn:ident; $( $(#[$doc:meta])* $variant:ident => $method:literal ($params:ty) -> $result:ty; )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug)]
            pub enum $variant {}
            impl Method for $variant {
                const NAME: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )*

        #[derive(Debug, Clone)]
        pub enum $enum_name {
            $( $variant($params), )*
        }

        impl $enum_name {
            /// Every method name in the table, in table order.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            pub fn method(&self) -> &'static str {
                match self { $( Self::$variant(_) => $method, )* }
            }

            /// `None` when the method is not in the table; `Some(Err(..))` when its params do not
            /// match (the message names the field).
            pub fn decode(method: &str, params: Option<&RawValue>) -> Option<Result<Self, String>> {
                match method {
                    $( $method => Some(decode_params::<$params>(params).map(Self::$variant)), )*
                    _ => None,
                }
            }

            /// The params, serialized.
            pub fn params_json(&self) -> Result<serde_json::Value, serde_json::Error> {
                match self { $( Self::$variant(p) => serde_json::to_value(p), )* }
            }
        }

        pub fn $schemas_fn(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$( MethodSchema {
                method: $method,
                params: generator.subschema_for::<$params>(),
                result: Some(generator.subschema_for::<$result>()),
            }, )*]
        }
    };
}

/// Notifications: an enum of typed params and a schema listing.
macro_rules! notification_table {
    ($enum_name:ident, $schemas_fn:ident; $( $(#[$doc:meta])* $variant:ident => $method:literal ($params:ty); )*) => {
        #[derive(Debug, Clone)]
        pub enum $enum_name {
            $( $(#[$doc])* $variant($params), )*
        }

        impl $enum_name {
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            pub fn method(&self) -> &'static str {
                match self { $( Self::$variant(_) => $method, )* }
            }

            pub fn decode(method: &str, params: Option<&RawValue>) -> Option<Result<Self, String>> {
                match method {
                    $( $method => Some(decode_params::<$params>(params).map(Self::$variant)), )*
                    _ => None,
                }
            }

            /// The whole frame, `{"jsonrpc":"2.0","method":..,"params":..}`.
            pub fn to_frame(&self) -> Result<String, serde_json::Error> {
                match self { $( Self::$variant(p) => crate::jsonrpc::write_notification($method, p), )* }
            }
        }

        pub fn $schemas_fn(generator: &mut SchemaGenerator) -> Vec<MethodSchema> {
            vec![$( MethodSchema {
                method: $method,
                params: generator.subschema_for::<$params>(),
                result: None,
            }, )*]
        }
    };
}

request_table! { ClientRequest, client_request_schemas;
    /// The handshake: the first request on every connection.
    Initialize => "initialize" (InitializeParams) -> InitializeResult;
}

notification_table! { ClientNotification, client_notification_schemas;
    /// The client is ready to receive notifications.
    Initialized => "initialized" (InitializedParams);
}
