//! Wire types of the appserver protocol (DotCraft AppServer protocol v1 plus the app protocol
//! extension). Only serde + schemars types live here; the server converts them at its edge.

pub mod acp;
pub mod app;
pub mod approval;
pub mod automation;
pub mod caller;
pub mod channel;
pub mod codegen;
pub mod command;
pub mod cron;
pub mod delivery;
pub mod initialize;
pub mod item;
pub mod jsonrpc;
pub mod mcp;
pub mod methods;
pub mod model;
pub mod plugin;
pub mod roles;
pub mod schema;
pub mod skill;
pub mod subagent;
pub mod terminal;
pub mod thread;
pub mod tools;
pub mod turn;
pub mod view_storage;
pub mod workspace;

pub use acp::*;
pub use app::*;
pub use approval::*;
pub use automation::*;
pub use caller::*;
pub use channel::*;
pub use command::*;
pub use cron::*;
pub use delivery::*;
pub use initialize::*;
pub use item::*;
pub use mcp::*;
pub use methods::{ClientNotification, ClientRequest, Method, MethodSchema, ServerNotification, ServerRequest};
pub use model::*;
pub use plugin::*;
pub use roles::{Role, Roles};
pub use skill::*;
pub use subagent::*;
pub use terminal::*;
pub use thread::*;
pub use turn::*;
pub use view_storage::*;
pub use workspace::*;

/// `serverInfo.protocolVersion`.
pub const PROTOCOL_VERSION: &str = "1";
/// `serverInfo.name`: DotCraft's specification (section 3, `initialize`) fixes it as `"dotcraft"`
/// for every server of the protocol, so its clients recognise one; appserver tells itself apart by
/// `serverInfo.version` and its `extensions`.
pub const SERVER_NAME: &str = "dotcraft";
