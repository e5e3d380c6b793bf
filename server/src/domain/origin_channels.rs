//! `channel/list` (protocol section 4.3.1): the origin channel names a client may find on threads —
//! the built-in origins, every `originChannel` of a stored thread, and the channel of every
//! connected channel adapter (`capabilities.channelAdapter.channelName`).

use std::cmp::Ordering;

use appserver_protocol::ChannelInfo;

/// Origins of DotCraft's own clients: the terminal client, the desktop client, and IDEs over ACP.
pub(crate) const BUILTIN_CHANNELS: &[&str] = &["acp", "cli", "desktop"];

/// Origins the server uses itself, refused as external channel names besides the built-ins.
/// The origin channel of the threads the server makes for the workspace owner's automation tasks.
pub(crate) const AUTOMATION: &str = "automation";

pub(crate) const RESERVED_CHANNELS: &[&str] =
    &["automation", "commit-message", "cron", "heartbeat", "system", "subagent"];

/// Whether `name` can be a chat channel an adapter serves (not a built-in or reserved origin).
pub(crate) fn is_adapter_channel(name: &str) -> bool {
    let name = name.trim();
    !name.is_empty()
        && !BUILTIN_CHANNELS.iter().chain(RESERVED_CHANNELS).any(|reserved| reserved.eq_ignore_ascii_case(name))
}

/// Most distinct stored origins listed (the rest are left out).
pub(crate) const MAX_STORED_ORIGINS: u32 = 1000;

/// The category order of the result.
const CATEGORIES: &[&str] = &["builtin", "social", "system", "external"];

/// Reserved origins that are internal only, never offered for discovery (section 4.3.1 lets a
/// server omit them): the commit-message suggester's threads.
const INTERNAL_ONLY: &[&str] = &["commit-message"];

/// The built-ins plus `seen` names: one entry per name (compared case-insensitively, the first
/// spelling kept), each built-in as `builtin`, the server's own origins (`cron`, `heartbeat`,
/// `subagent`, `system`) as `system`, internal-only ones left out, and everything else as
/// `external`, sorted by category then name.
pub(crate) fn catalog(seen: impl IntoIterator<Item = String>) -> Vec<ChannelInfo> {
    let mut out: Vec<ChannelInfo> = BUILTIN_CHANNELS
        .iter()
        .map(|name| ChannelInfo { name: (*name).to_owned(), category: "builtin".into() })
        .collect();
    for name in seen {
        let name = name.trim().to_owned();
        let listed = out.iter().any(|c| c.name.eq_ignore_ascii_case(&name));
        if name.is_empty() || listed || INTERNAL_ONLY.iter().any(|i| i.eq_ignore_ascii_case(&name)) {
            continue;
        }
        let server_own = RESERVED_CHANNELS.iter().any(|r| r.eq_ignore_ascii_case(&name));
        out.push(ChannelInfo { name, category: if server_own { "system" } else { "external" }.into() });
    }
    out.sort_by(order);
    out
}

fn order(a: &ChannelInfo, b: &ChannelInfo) -> Ordering {
    let rank = |c: &ChannelInfo| CATEGORIES.iter().position(|k| *k == c.category).unwrap_or(CATEGORIES.len());
    rank(a)
        .cmp(&rank(b))
        .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
        .then_with(|| a.name.cmp(&b.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_first_then_names_case_insensitively_once_each() {
        let names =
            |list: &[ChannelInfo]| list.iter().map(|c| format!("{}:{}", c.category, c.name)).collect::<Vec<_>>();
        let seen = ["telegram", "CLI", "subagent", "Matrix", "heartbeat", "discord", "commit-message", "telegram", ""];
        let list = catalog(seen.map(str::to_owned));
        assert_eq!(
            names(&list),
            [
                "builtin:acp",
                "builtin:cli",
                "builtin:desktop",
                "system:heartbeat",
                "system:subagent",
                "external:discord",
                "external:Matrix",
                "external:telegram"
            ]
        );
    }
}
