//! How much an MCP server may ask of the user: its `elicitation/create` requests reach a person,
//! so a hostile or broken server could flood them with questions. Each server may ask at most
//! [`PER_CALL`] questions during one call of the agent and [`PER_MINUTE`] within any minute;
//! past either bound the question is refused and the call fails, saying which bound it passed
//! (`agent::mcp_tools`).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Most questions a server may put to the user during one call of one of its tools.
pub(crate) const PER_CALL: u32 = 5;
/// Most questions a server may put to the user within a minute, across its calls.
pub(crate) const PER_MINUTE: usize = 10;
const MINUTE: Duration = Duration::from_secs(60);

/// The questions each server asked in the last minute.
#[derive(Debug, Default)]
pub(crate) struct ElicitationBudget(Mutex<HashMap<String, VecDeque<Instant>>>);

impl ElicitationBudget {
    /// Takes one question of `server` asked during a call that already asked `in_call`; `Err`
    /// says which bound refuses it.
    pub(crate) fn take(&self, server: &str, in_call: u32, now: Instant) -> Result<(), String> {
        if in_call >= PER_CALL {
            return Err(format!(
                "the MCP server `{server}` asked the user more than {PER_CALL} questions (elicitation/create) during one call"
            ));
        }
        let mut asked = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let times = asked.entry(server.to_ascii_lowercase()).or_default();
        while times.front().is_some_and(|t| now.duration_since(*t) >= MINUTE) {
            times.pop_front();
        }
        if times.len() >= PER_MINUTE {
            return Err(format!(
                "the MCP server `{server}` asked the user more than {PER_MINUTE} questions (elicitation/create) within a minute"
            ));
        }
        times.push_back(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_per_call_and_per_minute() {
        let budget = ElicitationBudget::default();
        let start = Instant::now();
        for n in 0..PER_CALL {
            assert!(budget.take("fs", n, start).is_ok());
        }
        assert!(budget.take("fs", PER_CALL, start).unwrap_err().contains("during one call"));
        for n in 0..(PER_MINUTE as u32 - PER_CALL) {
            assert!(budget.take("FS", n, start).is_ok(), "names compared without case");
        }
        assert!(budget.take("fs", 0, start).unwrap_err().contains("within a minute"));
        assert!(budget.take("other", 0, start).is_ok(), "per server");
        assert!(budget.take("fs", 0, start + MINUTE).is_ok(), "a minute later");
    }
}
