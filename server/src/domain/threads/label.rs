//! The label a notification is delivered (and logged, and relayed between instances) under: its
//! method, and for what only clients that declared a capability get, the [`Gate`] too, written
//! `method@capability`. This module alone writes and reads that form; recipients
//! (`rpc::session`) get the method and a typed [`Gate`] from [`parse`].

use appserver_protocol::ServerNotification;

/// A client capability without which a notification is not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// `capabilities.commandExecutionStreaming`: `commandExecution` items and their output.
    CommandExecutionStreaming,
    /// `capabilities.backgroundTerminals`: `terminal/*`.
    BackgroundTerminals,
    /// `capabilities.toolExecutionLifecycle`: `toolExecution` items.
    ToolExecutionLifecycle,
    /// `capabilities.configChange` (on unless declared off): `workspace/configChanged`.
    ConfigChange,
}

impl Gate {
    const ALL: [Gate; 4] =
        [Gate::CommandExecutionStreaming, Gate::BackgroundTerminals, Gate::ToolExecutionLifecycle, Gate::ConfigChange];

    /// The capability's name in `initialize`.
    pub(crate) fn capability(self) -> &'static str {
        match self {
            Gate::CommandExecutionStreaming => "commandExecutionStreaming",
            Gate::BackgroundTerminals => "backgroundTerminals",
            Gate::ToolExecutionLifecycle => "toolExecutionLifecycle",
            Gate::ConfigChange => "configChange",
        }
    }
}

/// A label read back: the method, and the gate when it has one. `Err` for a gate this build
/// does not know (a label from a newer instance): such a notification is for nobody here.
pub(crate) fn parse(label: &str) -> Result<(&str, Option<Gate>), &str> {
    match label.split_once('@') {
        None => Ok((label, None)),
        Some((method, name)) => match Gate::ALL.into_iter().find(|gate| gate.capability() == name) {
            Some(gate) => Ok((method, Some(gate))),
            None => Err(method),
        },
    }
}

/// `method@capability`, as a `&'static str` (labels travel with every event).
macro_rules! gated {
    ($method:literal, $gate:ident) => {{
        const _: Gate = Gate::$gate;
        concat!($method, "@", gated!(@name $gate))
    }};
    (@name CommandExecutionStreaming) => { "commandExecutionStreaming" };
    (@name BackgroundTerminals) => { "backgroundTerminals" };
    (@name ToolExecutionLifecycle) => { "toolExecutionLifecycle" };
    (@name ConfigChange) => { "configChange" };
}

/// The label `notification` is delivered under.
pub(crate) fn of(notification: &ServerNotification) -> &'static str {
    use appserver_protocol::ItemPayload::{CommandExecution, ToolExecution};
    match notification {
        ServerNotification::ItemStarted(p) if matches!(p.item.payload, ToolExecution(_)) => {
            gated!("item/started", ToolExecutionLifecycle)
        }
        ServerNotification::ItemCompleted(p) if matches!(p.item.payload, ToolExecution(_)) => {
            gated!("item/completed", ToolExecutionLifecycle)
        }
        ServerNotification::ItemStarted(p) if matches!(p.item.payload, CommandExecution(_)) => {
            gated!("item/started", CommandExecutionStreaming)
        }
        ServerNotification::ItemCompleted(p) if matches!(p.item.payload, CommandExecution(_)) => {
            gated!("item/completed", CommandExecutionStreaming)
        }
        ServerNotification::CommandExecutionOutputDelta(_) => {
            gated!("item/commandExecution/outputDelta", CommandExecutionStreaming)
        }
        ServerNotification::TerminalStarted(_) => gated!("terminal/started", BackgroundTerminals),
        ServerNotification::TerminalOutputDelta(_) => gated!("terminal/outputDelta", BackgroundTerminals),
        ServerNotification::TerminalCompleted(_) => gated!("terminal/completed", BackgroundTerminals),
        ServerNotification::TerminalStalled(_) => gated!("terminal/stalled", BackgroundTerminals),
        ServerNotification::TerminalCleaned(_) => gated!("terminal/cleaned", BackgroundTerminals),
        ServerNotification::WorkspaceConfigChanged(_) => gated!("workspace/configChanged", ConfigChange),
        other => other.method(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_written_is_read_back() {
        for gate in Gate::ALL {
            let label = format!("m/x@{}", gate.capability());
            assert_eq!(parse(&label), Ok(("m/x", Some(gate))));
        }
        assert_eq!(
            parse(gated!("terminal/started", BackgroundTerminals)),
            Ok(("terminal/started", Some(Gate::BackgroundTerminals)))
        );
        assert_eq!(parse("turn/started"), Ok(("turn/started", None)));
        assert_eq!(parse("item/started@fromTheFuture"), Err("item/started"));
    }
}
