//! The method table's handlers: one match arm per client request, each calling a plain handler
//! function of its domain module and serializing its result.

use std::sync::Arc;

use appserver_protocol::ClientRequest;
use appserver_protocol::jsonrpc::RequestId;

use super::RpcError;
use super::peer::Peer;
use crate::server::ServerState;

/// Runs the handler of an initialized connection's request; returns the response frame.
pub async fn handle(
    state: &Arc<ServerState>,
    peer: &Arc<Peer>,
    id: &RequestId,
    request: ClientRequest,
) -> Result<String, RpcError> {
    let _ = (state, peer, id);
    match request {
        // Answered inline by the dispatcher before any other request can run.
        ClientRequest::Initialize(_) => Err(RpcError::already_initialized()),
    }
}
