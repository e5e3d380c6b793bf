//! `welcome/suggestions` (protocol section 5.4): follow-ups grounded in the workspace's own recent
//! threads (the identity's, newest first), derived from the store on each call — no model call on
//! the request path — and off when `[welcome] suggestions_enabled = false`.

use std::path::Path;

use appserver_protocol::{WelcomeSuggestionItem, WelcomeSuggestionsParams, WelcomeSuggestionsResult};
use sha2::{Digest, Sha256};

use super::WorkspaceError;
use crate::infra::store::{Store, ThreadQuery, ThreadRecord};

/// Default and largest `maxItems`.
pub(crate) const DEFAULT_ITEMS: usize = 4;
pub(crate) const MAX_ITEMS: usize = 10;
/// Recent threads looked at.
const EVIDENCE_THREADS: u32 = 20;
/// Longest title, in characters.
const TITLE_CHARS: usize = 60;

fn same_place(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canonical(a) == canonical(b)
}

fn clip(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

fn item(thread: &ThreadRecord) -> Option<WelcomeSuggestionItem> {
    let name = thread.display_name.as_deref()?.split_whitespace().collect::<Vec<_>>().join(" ");
    if name.is_empty() {
        return None;
    }
    Some(WelcomeSuggestionItem {
        title: clip(&format!("Continue: {name}"), TITLE_CHARS),
        prompt: format!("Let's pick up \"{name}\" again: summarize where we left off and do the next step."),
        reason: Some(format!("recent thread {} (last active {})", thread.id, thread.last_active_at)),
    })
}

/// The suggestions for `p.identity`, or `source: "none"` when they are switched off or there is
/// nothing to go on.
pub(crate) async fn suggestions(
    store: &Store,
    workspace: &Path,
    enabled: bool,
    now: String,
    p: WelcomeSuggestionsParams,
) -> Result<WelcomeSuggestionsResult, WorkspaceError> {
    let asked = p.identity.workspace_path.as_deref().map(str::trim).filter(|w| !w.is_empty());
    let asked = asked.ok_or_else(|| WorkspaceError::InvalidParams("identity.workspacePath: required".into()))?;
    if !same_place(Path::new(asked), workspace) {
        return Err(WorkspaceError::InvalidParams(format!(
            "identity.workspacePath: `{asked}` is not this server's workspace"
        )));
    }
    let max = match p.max_items {
        None => DEFAULT_ITEMS,
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(MAX_ITEMS).min(MAX_ITEMS),
        Some(n) => return Err(WorkspaceError::InvalidParams(format!("maxItems: {n} is not a positive number"))),
    };
    let none = |fingerprint: &str| WelcomeSuggestionsResult {
        items: Vec::new(),
        source: "none".into(),
        generated_at: now.clone(),
        fingerprint: fingerprint.to_owned(),
    };
    if !enabled {
        return Ok(none("disabled"));
    }
    let query = ThreadQuery {
        // The string the threads were started with (the same folder as the server's).
        workspace_path: asked.to_owned(),
        user_id: p.identity.user_id.clone(),
        channel_context: p.identity.channel_context.clone(),
        cross_channel_origins: Vec::new(),
        cross_any_user: false,
        channel_name: None,
        include_archived: false,
        include_sub_agents: false,
        after: None,
        limit: EVIDENCE_THREADS,
    };
    let (threads, _) = store.list_threads(&query).await?;
    let evidence: Vec<&ThreadRecord> = threads.iter().filter(|t| item(t).is_some()).take(max).collect();
    let mut hash = Sha256::new();
    for t in &evidence {
        hash.update(t.id.as_bytes());
        hash.update(b"\0");
        hash.update(t.last_active_at.as_bytes());
        hash.update(t.display_name.as_deref().unwrap_or_default().as_bytes());
        hash.update(b"\n");
    }
    let fingerprint: String = hash.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    if evidence.is_empty() {
        return Ok(none(&fingerprint));
    }
    Ok(WelcomeSuggestionsResult {
        items: evidence.into_iter().filter_map(item).collect(),
        source: "dynamic".into(),
        generated_at: now,
        fingerprint,
    })
}
