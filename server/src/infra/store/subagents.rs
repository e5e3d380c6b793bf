//! Sub-agent edges: which thread is a child of which (protocol section 24.10), stored in
//! `subagent_edges` (deleting either thread deletes the edge).

use super::db::{Conn, Row, sql};
use super::{Store, StoreError};

/// One parent/child edge as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeRecord {
    pub(crate) parent_thread_id: String,
    pub(crate) child_thread_id: String,
    pub(crate) parent_turn_id: Option<String>,
    pub(crate) depth: u32,
    pub(crate) agent_nickname: Option<String>,
    pub(crate) agent_role: Option<String>,
    pub(crate) profile_name: String,
    pub(crate) runtime_type: String,
    /// `open` or `closed`.
    pub(crate) status: String,
    pub(crate) created_at: String,
}

/// Most children listed for one parent.
pub(crate) const MAX_CHILDREN_LISTED: u32 = 1000;

const COLUMNS: &str = "parent_thread_id, child_thread_id, parent_turn_id, depth, agent_nickname, agent_role, \
     profile_name, runtime_type, status, created_at";

fn edge_from_row(row: &Row) -> Result<EdgeRecord, StoreError> {
    Ok(EdgeRecord {
        parent_thread_id: row.text("parent_thread_id")?,
        child_thread_id: row.text("child_thread_id")?,
        parent_turn_id: row.opt_text("parent_turn_id")?,
        depth: row.int("depth")?.try_into().unwrap_or(1),
        agent_nickname: row.opt_text("agent_nickname")?,
        agent_role: row.opt_text("agent_role")?,
        profile_name: row.text("profile_name")?,
        runtime_type: row.text("runtime_type")?,
        status: row.text("status")?,
        created_at: row.text("created_at")?,
    })
}

/// Inserts an edge (fails if the child already has a parent).
pub(super) async fn insert(conn: &mut Conn<'_>, e: &EdgeRecord) -> Result<(), StoreError> {
    let q = sql(format!("INSERT INTO subagent_edges ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"))
        .bind(&e.parent_thread_id)
        .bind(&e.child_thread_id)
        .bind(&e.parent_turn_id)
        .bind(e.depth)
        .bind(&e.agent_nickname)
        .bind(&e.agent_role)
        .bind(&e.profile_name)
        .bind(&e.runtime_type)
        .bind(&e.status)
        .bind(&e.created_at);
    Ok(conn.run(q).await?)
}

/// Sets an existing edge's status (`open`, `closed`).
pub(super) async fn set_status(conn: &mut Conn<'_>, child: &str, status: &str) -> Result<(), StoreError> {
    let q = sql("UPDATE subagent_edges SET status = ? WHERE child_thread_id = ?").bind(status).bind(child);
    conn.run_one(q, "sub-agent edge").await
}

impl Store {
    /// The children of `parent`, oldest first (at most [`MAX_CHILDREN_LISTED`]); closed ones only
    /// when asked.
    pub(crate) async fn children(&self, parent: &str, include_closed: bool) -> Result<Vec<EdgeRecord>, StoreError> {
        let filter = if include_closed { "" } else { " AND status = 'open'" };
        let text = format!(
            "SELECT {COLUMNS} FROM subagent_edges WHERE parent_thread_id = ?{filter} \
             ORDER BY created_at, child_thread_id LIMIT ?"
        );
        let rows = self.reader.fetch_all(sql(text).bind(parent).bind(MAX_CHILDREN_LISTED)).await?;
        rows.iter().map(edge_from_row).collect()
    }

    /// The edge that makes `child` a sub-agent, if it is one.
    pub(crate) async fn parent_edge(&self, child: &str) -> Result<Option<EdgeRecord>, StoreError> {
        let text = format!("SELECT {COLUMNS} FROM subagent_edges WHERE child_thread_id = ?");
        let row = self.reader.fetch_optional(sql(text).bind(child)).await?;
        row.as_ref().map(edge_from_row).transpose()
    }
}
