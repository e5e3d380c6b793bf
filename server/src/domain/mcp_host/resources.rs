//! An MCP server's resources as its MCP Apps views reach them (`mcp/resources/read`,
//! `mcp/resources/list`, relayed by the client that renders the view, always for the view's own
//! server): any URI the server serves, its answer bounded in size so that neither a hostile
//! server nor a view asking for too much can grow the host's or the client's memory without end.

use serde_json::Value;

use super::connection::{CallError, Connection};

/// Most bytes of one read's contents (the `text` and base64 `blob` of every entry).
pub(crate) const MAX_READ_BYTES: usize = 8 * 1024 * 1024;
/// Most resources in one page of a list (more: the list is refused, not cut silently).
pub(crate) const MAX_LIST_ENTRIES: usize = 1000;
/// Most bytes of one page of a list, as JSON.
pub(crate) const MAX_LIST_BYTES: usize = 1024 * 1024;
/// Longest cursor passed on.
pub(crate) const MAX_CURSOR_CHARS: usize = 4096;

/// Why a resource could not be read or listed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResourceError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("{0}")]
    TooLarge(String),
}

/// Reads `uri`: its contents as the server gave them.
pub(crate) async fn read(connection: &Connection, uri: &str) -> Result<Vec<Value>, ResourceError> {
    let (peer, after) = connection.peer()?;
    let params = rmcp::model::ReadResourceRequestParams::new(uri.to_owned());
    let read = match tokio::time::timeout(after, peer.read_resource(params)).await {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => return Err(failed(connection, e.to_string())),
        Err(_) => return Err(CallError::Timeout { server: connection.name().to_owned(), after }.into()),
    };
    let contents: Vec<Value> = read.contents.iter().filter_map(|c| serde_json::to_value(c).ok()).collect();
    let size: usize = contents.iter().map(content_bytes).sum();
    if size > MAX_READ_BYTES {
        return Err(ResourceError::TooLarge(format!(
            "the resource `{uri}` is {size} bytes, over the {MAX_READ_BYTES} bytes a view may read"
        )));
    }
    Ok(contents)
}

/// One page of the server's resources, from `cursor`, and the next page's cursor.
pub(crate) async fn list(
    connection: &Connection,
    cursor: Option<String>,
) -> Result<(Vec<Value>, Option<String>), ResourceError> {
    if cursor.as_ref().is_some_and(|c| c.chars().count() > MAX_CURSOR_CHARS) {
        return Err(ResourceError::TooLarge(format!("the cursor is over {MAX_CURSOR_CHARS} characters")));
    }
    let (peer, after) = connection.peer()?;
    let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
    let page = match tokio::time::timeout(after, peer.list_resources(Some(params))).await {
        Ok(Ok(page)) => page,
        Ok(Err(e)) => return Err(failed(connection, e.to_string())),
        Err(_) => return Err(CallError::Timeout { server: connection.name().to_owned(), after }.into()),
    };
    if page.resources.len() > MAX_LIST_ENTRIES {
        return Err(ResourceError::TooLarge(format!(
            "the server listed {} resources in one page, over {MAX_LIST_ENTRIES}",
            page.resources.len()
        )));
    }
    let resources: Vec<Value> = page.resources.iter().filter_map(|r| serde_json::to_value(r).ok()).collect();
    let size: usize = resources.iter().map(|r| r.to_string().len()).sum();
    if size > MAX_LIST_BYTES {
        return Err(ResourceError::TooLarge(format!("the list is {size} bytes, over {MAX_LIST_BYTES}")));
    }
    Ok((resources, page.next_cursor.filter(|c| c.chars().count() <= MAX_CURSOR_CHARS)))
}

fn failed(connection: &Connection, message: String) -> ResourceError {
    CallError::Failed { server: connection.name().to_owned(), message }.into()
}

/// The bytes of one entry's `text` or `blob`.
fn content_bytes(content: &Value) -> usize {
    ["text", "blob"].iter().filter_map(|k| content.get(k).and_then(Value::as_str)).map(str::len).sum()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn an_entrys_size_is_its_text_and_blob() {
        assert_eq!(super::content_bytes(&json!({ "uri": "x", "text": "abc" })), 3);
        assert_eq!(super::content_bytes(&json!({ "uri": "x", "blob": "AAAA" })), 4);
        assert_eq!(super::content_bytes(&json!({ "uri": "x" })), 0);
    }
}
