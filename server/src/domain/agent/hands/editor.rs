//! The editor's hands: when the thread was started (or last resumed) by a client that fronts an
//! editor and declared `acpExtensions` (an ACP bridge), the file tools read and write through
//! the editor (`ext/acp/fs/*`: unsaved buffers are seen, edits land in the editor) and `Exec`
//! runs in the editor's terminal (`ext/acp/terminal/*`). Approvals are asked here first, as for
//! the server's own hands; without such a client, or once it has gone, the server's own tools
//! run as usual.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use appserver_protocol::{AcpExtensions, AcpReadTextFileParams, AcpReadTextFileResult, AcpWriteTextFileParams};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain::ports::{AcpCall, Client};
use crate::domain::turns::context::TurnContext;

/// How long the editor has to answer a file request.
const FS_TIMEOUT: Duration = Duration::from_secs(30);

/// The client that fronts the thread's editor, with what it declared it does.
#[derive(Debug, Clone)]
pub(crate) struct Editor {
    client: Arc<dyn Client>,
    offers: AcpExtensions,
    thread_id: String,
}

/// The thread's editor, if its client is connected (to this instance) and offers anything.
pub(crate) fn editor(ctx: &TurnContext) -> Option<Editor> {
    let id = ctx.handle.state().editor?;
    let client = ctx.turns().clients.client(id).filter(|c| !c.is_closed())?;
    let offers = client.acp_extensions()?;
    Some(Editor { client, offers, thread_id: ctx.thread_id.clone() })
}

impl Editor {
    pub(crate) fn reads(&self) -> bool {
        self.offers.reads()
    }

    pub(crate) fn writes(&self) -> bool {
        self.offers.writes()
    }

    pub(crate) fn terminals(&self) -> bool {
        self.offers.terminals()
    }

    pub(crate) fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// One request; `Err` is the message the model reads.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        call: AcpCall,
        params: Value,
        timeout: Duration,
    ) -> Result<T, String> {
        match self.client.acp_call(call, params, timeout).await {
            Ok(raw) => serde_json::from_str(raw.get()).map_err(|e| format!("the editor's answer is not valid: {e}")),
            Err(err) => Err(format!("the editor could not do it: {err}")),
        }
    }

    /// The file's text as the editor has it.
    pub(crate) async fn read(&self, path: &Path) -> Result<String, String> {
        let params = AcpReadTextFileParams {
            thread_id: self.thread_id.clone(),
            path: path.to_string_lossy().into_owned(),
            line: None,
            limit: None,
        };
        let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
        let read: AcpReadTextFileResult = self.call(AcpCall::ReadTextFile, params, FS_TIMEOUT).await?;
        Ok(read.content)
    }

    /// Writes the file through the editor.
    pub(crate) async fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        let params = AcpWriteTextFileParams {
            thread_id: self.thread_id.clone(),
            path: path.to_string_lossy().into_owned(),
            content: content.to_owned(),
        };
        let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
        self.call::<Value>(AcpCall::WriteTextFile, params, FS_TIMEOUT).await.map(|_| ())
    }
}

/// The text of a file before a change: through the editor when it reads (its unsaved buffer) and
/// the file exists, else from disk. `Ok(None)`: the file does not exist. The look at the disk
/// (whether the file exists, its text) runs on a blocking thread, bounded like every file
/// operation of the hands (`off_runtime`).
pub(crate) async fn text_before(editor: Option<&Editor>, path: &Path) -> Result<Option<String>, String> {
    if let Some(editor) = editor.filter(|e| e.reads()) {
        let probe = path.to_path_buf();
        if super::off_runtime(move || probe.is_file()).await? {
            return editor.read(path).await.map(Some);
        }
    }
    let owned = path.to_path_buf();
    let on_disk = super::off_runtime(move || crate::domain::shell::files::read_text(&owned).map_err(|e| e.to_string()));
    on_disk.await.and_then(|read| read.map_err(|e| format!("Error: {e}")))
}
