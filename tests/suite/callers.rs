//! Who may call an app, who may approve, and what a cancelled call does, driven as an adversary
//! would: an outside agent (rmcp's client over `/mcp`) whose consent must not cover another agent,
//! that opens a WebSocket of its own (with the outside agents' credential) to approve its calls, whose call a chat adapter bridging
//! other people must never be asked about, and that cancels (or ends its session) while its
//! approval is pending; a connected app that calls another window for itself.

use appserver_client::sheet::{SheetHost, SheetOptions};
use appserver_client::{Client, Event};
use appserver_tests::{ServerBuilder, ServerProcess};
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use super::apps::data_code;
use super::mcp::{McpClient, approval_request, call, connect_http_as, quiet_host, text_of, within};

/// An approval-capable client acting for the owner (the desktop's capabilities).
async fn desktop(server: &ServerProcess, name: &str) -> Client {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(
        &client,
        name,
        json!({ "approvalSupport": true, "extensions": { "appProtocol": true } }),
    )
    .await
    .unwrap();
    client
}

fn set_cells(window: &str, cell: &str, value: &str) -> Value {
    json!({ "windowId": window, "command": "setCells", "params": { "cells": { cell: value } } })
}

/// Starts `app_command` without waiting for it; the handle cancels it.
async fn start_command(agent: &McpClient, args: Value) -> rmcp::service::RequestHandle<rmcp::RoleClient> {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("app_command").with_arguments(args),
    ));
    within("tools/call sent", agent.peer().send_cancellable_request(request, PeerRequestOptions::no_options()))
        .await
        .expect("tools/call")
}

/// The events `client` gets until (and with) the next `app/externalCall`.
async fn until_external_call(client: &mut Client) -> (Vec<Event>, Value) {
    within("app/externalCall", async {
        let mut before = Vec::new();
        loop {
            let event = client.next_event().await.unwrap();
            if event.method() == Some("app/externalCall") {
                return (before, event.params().clone());
            }
            before.push(event);
        }
    })
    .await
}

/// The events `client` got so far: a round trip first, so whatever the server sent it before
/// that is in.
async fn drain(client: &mut Client) -> Vec<Event> {
    client.request_answer("app/list", json!({})).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = client.next_event_within(std::time::Duration::ZERO).await {
        events.push(event);
    }
    events
}

fn approval_requests(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::Request { method, .. } if method == "item/approval/request")).count()
}

#[tokio::test]
async fn consent_of_one_outside_agent_does_not_cover_another() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut owner = desktop(&server, "desktop").await;
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    let (agent_a, _) = connect_http_as(&server, None, "agent-a").await;
    let (agent_b, _) = connect_http_as(&server, None, "agent-b").await;

    // Agent A is accepted "always".
    let pending = start_command(&agent_a, set_cells(&w, "A1", "a")).await;
    let (id, params) = approval_request(&mut owner).await;
    assert_eq!(params["app"]["caller"]["declaredName"], "agent-a");
    owner.respond(&id, json!({ "decision": "acceptAlways" }));
    within("A's call", pending.await_response()).await.unwrap();
    until_external_call(&mut owner).await;
    // A again: not asked.
    let again = call(&agent_a, "app_command", set_cells(&w, "A2", "a")).await;
    assert_eq!(again.is_error, Some(false), "{}", text_of(&again));
    let (before, done) = until_external_call(&mut owner).await;
    assert_eq!((done["status"].as_str(), approval_requests(&before)), (Some("done"), 0));

    // Agent B, same command of the same app: asked, and declined.
    let pending = start_command(&agent_b, set_cells(&w, "B1", "b")).await;
    let (id, params) = approval_request(&mut owner).await;
    assert_eq!(params["app"]["caller"]["declaredName"], "agent-b");
    assert_eq!(params["scopeKey"], "app:sheet:setCells");
    owner.respond(&id, json!({ "decision": "decline" }));
    let refused = within("B's call", pending.await_response()).await.unwrap();
    let text = serde_json::to_string(&refused).unwrap();
    assert!(text.contains("DECLINED"), "{text}");
    assert_eq!(sheet.cells().keys().cloned().collect::<Vec<_>>(), ["A1", "A2"]);
    agent_a.cancel().await.ok();
    agent_b.cancel().await.ok();
}

#[tokio::test]
async fn a_channel_adapter_and_the_agents_own_websocket_never_decide_its_call() {
    let server = ServerBuilder::ws().arg("--ws-token").arg("s3cret").spawn().await.unwrap();
    let ws = |server: &ServerProcess, token: String| {
        let url = format!("{}?token={token}", server.ws_url());
        async move { Client::connect_ws(&url, appserver_tests::TIMEOUT).await.unwrap() }
    };
    let agent_token = super::roles::agent_token(&server);
    // A chat adapter bridging other people (mallory), and the agent's own WebSocket: it holds
    // the outside agents' credential (what its relay presents) and declares the desktop's name.
    let mut adapter = ws(&server, "s3cret".into()).await;
    let adapter_caps = json!({ "approvalSupport": true, "channelAdapter": { "channelName": "telegram" } });
    appserver_tests::initialize(&adapter, "telegram-adapter", adapter_caps).await.unwrap();
    let mut own = ws(&server, agent_token.clone()).await;
    appserver_tests::initialize(&own, "desktop", json!({ "approvalSupport": true })).await.unwrap();
    let host = ws(&server, "s3cret".into()).await;
    appserver_tests::initialize(&host, "sheet-host", json!({ "approvalSupport": false })).await.unwrap();
    let sheet = SheetHost::start(host, SheetOptions::default()).await.unwrap();
    let w = sheet.window_id.clone();
    let (agent, _) = connect_http_as(&server, Some(&agent_token), "evil-agent").await;

    // Nobody that may decide it is connected: the policy declines, nobody was asked.
    let refused = call(&agent, "app_command", set_cells(&w, "A1", "pwned")).await;
    assert!(text_of(&refused).contains("no client that may approve it is connected"), "{}", text_of(&refused));
    let (before, announced) = until_external_call(&mut adapter).await;
    assert_eq!((announced["status"].as_str(), approval_requests(&before)), (Some("declined"), 0));

    // With an owner's client connected, only it is asked — though it declares the agent's name:
    // a name neither grants nor takes anything away.
    let mut owner = ws(&server, "s3cret".into()).await;
    appserver_tests::initialize(&owner, "Evil-Agent", json!({ "approvalSupport": true })).await.unwrap();
    let pending = start_command(&agent, set_cells(&w, "A1", "approved")).await;
    let (id, _) = approval_request(&mut owner).await;
    owner.respond(&id, json!({ "decision": "accept" }));
    within("the call", pending.await_response()).await.unwrap();
    let (before, announced) = until_external_call(&mut adapter).await;
    assert_eq!((announced["status"].as_str(), approval_requests(&before)), (Some("done"), 0));
    // The agent's own connection is told of the app registry only (not of the calls), asked
    // nothing, and may not run a command itself.
    let refused = own.request_answer("app/command", set_cells(&w, "A2", "self-served")).await.unwrap();
    assert_eq!(refused.result.unwrap_err().code, appserver_protocol::jsonrpc::error_codes::ROLE_NOT_ALLOWED);
    let heard = drain(&mut own).await;
    assert_eq!(approval_requests(&heard), 0);
    assert!(heard.iter().all(|e| e.method() == Some("app/registered")), "{heard:?}");
    assert_eq!(sheet.cells().get("A1").map(String::as_str), Some("approved"));
    assert_eq!(sheet.cells().get("A2"), None);
    agent.cancel().await.ok();
}

#[tokio::test]
async fn a_cancelled_mcp_call_withdraws_its_approval_and_never_reaches_the_app() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut owner = desktop(&server, "desktop").await;
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    let (agent, _) = connect_http_as(&server, None, "agent").await;

    let pending = start_command(&agent, set_cells(&w, "A1", "cancelled")).await;
    let (id, params) = approval_request(&mut owner).await;
    within("notifications/cancelled", pending.cancel(Some("changed my mind".into()))).await.unwrap();
    let resolved = within("resolved", owner.wait_for("item/approval/resolved")).await.unwrap();
    let payload = &resolved.params()["item"]["payload"];
    assert_eq!(payload["requestId"], params["requestId"]);
    assert_eq!((payload["decision"].as_str(), payload["approved"].as_bool()), (Some("cancel"), Some(false)));
    // A late accept of the withdrawn request changes nothing.
    owner.respond(&id, json!({ "decision": "accept" }));
    let (_, announced) = until_external_call(&mut owner).await;
    assert_eq!(announced["status"], "cancelled");
    owner.request("app/command", set_cells(&w, "B1", "after")).await.unwrap();
    assert_eq!(sheet.received(), [("setCells".to_owned(), false)], "the app saw only the later command");
    let log = owner.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"].as_array().unwrap().len(), 1);
    assert_eq!(log["entries"][0]["params"], json!({ "cells": { "B1": "after" } }));
    agent.cancel().await.ok();
}

#[tokio::test]
async fn ending_the_mcp_session_withdraws_its_pending_approval() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut owner = desktop(&server, "desktop").await;
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let (agent, _) = connect_http_as(&server, None, "agent").await;
    let _pending = start_command(&agent, set_cells(&sheet.window_id, "A1", "gone")).await;
    let (id, params) = approval_request(&mut owner).await;
    // The agent ends its session (rmcp sends DELETE with its Mcp-Session-Id).
    within("the session's end", agent.cancel()).await.unwrap();
    let resolved = within("resolved", owner.wait_for("item/approval/resolved")).await.unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["requestId"], params["requestId"]);
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "cancel");
    owner.respond(&id, json!({ "decision": "accept" }));
    let (_, announced) = until_external_call(&mut owner).await;
    assert_eq!(announced["status"], "cancelled");
    assert!(sheet.received().is_empty(), "the app never saw the command");
}

/// A connected app (a host with its own connection) calling another window for its app.
async fn relay(server: &ServerProcess, call_apps: bool) -> (Client, String) {
    let client = server.ws_client().await.unwrap();
    appserver_tests::initialize(&client, "relay-host", json!({ "approvalSupport": false })).await.unwrap();
    let manifest = json!({ "appId": "relay", "name": "Relay", "permissions": { "callApps": call_apps } });
    let registered = client.request("app/register", json!({ "manifest": manifest })).await.unwrap();
    (client, registered["windowId"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn an_app_calls_another_window_with_its_permission_approval_and_is_withdrawn_when_it_leaves() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut owner = desktop(&server, "desktop").await;
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();

    let (plain, plain_w) = relay(&server, false).await;
    let as_app = |caller: &str| json!({ "windowId": w, "command": "setCells", "params": { "cells": { "A1": "x" } }, "callerWindowId": caller });
    for (method, params) in [
        ("app/command", as_app(&plain_w)),
        ("app/query", json!({ "windowId": w, "stateKey": "cells", "callerWindowId": plain_w })),
        ("app/list", json!({ "callerWindowId": plain_w })),
    ] {
        let err = plain.request(method, params).await.unwrap_err();
        assert_eq!(data_code(&err).1, "PERMISSION_DENIED", "{method}: {err}");
        assert!(err.to_string().contains("permissions.callApps"), "{err}");
    }
    // Another connection may not call as that app.
    let err = owner.request("app/command", as_app(&plain_w)).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED");
    assert!(err.to_string().contains("not hosted by this connection"), "{err}");
    // Nor may the window become another app.
    let spoof = json!({ "windowId": plain_w, "manifest": { "appId": "sheet", "name": "Sheet" } });
    let err = plain.request("app/register", spoof).await.unwrap_err();
    assert_eq!(data_code(&err).1, "PERMISSION_DENIED");
    assert!(err.to_string().contains("may not make it `sheet`"), "{err}");

    let (allowed, allowed_w) = relay(&server, true).await;
    let listed = allowed.request("app/list", json!({ "callerWindowId": allowed_w })).await.unwrap();
    assert_eq!(listed["apps"].as_array().unwrap().len(), 3);
    let answer = allowed.start_request("app/command", as_app(&allowed_w)).unwrap();
    let (id, params) = approval_request(&mut owner).await;
    assert_eq!(params["app"]["caller"], json!({ "kind": "app", "windowId": allowed_w, "appId": "relay" }));
    assert_eq!(params["threadId"], format!("app:{allowed_w}"));
    owner.respond(&id, json!({ "decision": "accept" }));
    let done = within("the app's command", answer).await.unwrap();
    assert!(done.result.is_ok(), "{:?}", done.result);
    let log = owner.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    assert_eq!(log["entries"][0]["caller"], params["app"]["caller"]);

    // A second call waits for approval; the calling app's connection goes: withdrawn.
    let _answer = allowed.start_request("app/command", as_app(&allowed_w)).unwrap();
    let (_, params) = approval_request(&mut owner).await;
    allowed.close();
    let resolved = within("resolved", owner.wait_for("item/approval/resolved")).await.unwrap();
    assert_eq!(resolved.params()["item"]["payload"]["requestId"], params["requestId"]);
    assert_eq!(resolved.params()["item"]["payload"]["decision"], "cancel");
    let (_, announced) = until_external_call(&mut owner).await;
    assert_eq!(announced["status"], "cancelled");
    assert_eq!(sheet.received().len(), 1, "only the approved command reached the app");
}

/// An app's read of another app's state is asked like a command — per caller app, target app and
/// state key, remembered as the user chooses — and recorded in the read window's log as a read,
/// with its caller; its manifest (what commands it has) is not asked.
#[tokio::test]
async fn an_apps_read_of_another_window_is_asked_and_logged_as_a_read() {
    let server = ServerBuilder::ws().spawn().await.unwrap();
    let mut owner = desktop(&server, "desktop").await;
    let sheet = quiet_host(&server, SheetOptions::default()).await;
    let w = sheet.window_id.clone();
    owner.request("app/command", set_cells(&w, "A1", "secret")).await.unwrap();
    let (reader, reader_w) = relay(&server, true).await;
    let read = |key: &str| json!({ "windowId": w, "stateKey": key, "callerWindowId": reader_w });
    reader.request("app/query", read("manifest")).await.unwrap();

    let answer = reader.start_request("app/query", read("cells")).unwrap();
    let (id, params) = approval_request(&mut owner).await;
    assert_eq!(params["scopeKey"], "appState:sheet:cells");
    assert!(params["reason"].as_str().unwrap().contains("read the state `cells` of app `sheet`"), "{params}");
    assert_eq!(params["app"]["caller"], json!({ "kind": "app", "windowId": reader_w, "appId": "relay" }));
    owner.respond(&id, json!({ "decision": "decline" }));
    let declined = within("the declined read", answer).await.unwrap().result.unwrap_err();
    assert_eq!(declined.data.unwrap()["code"], "PERMISSION_DENIED");

    let answer = reader.start_request("app/query", read("cells")).unwrap();
    let (id, _) = approval_request(&mut owner).await;
    owner.respond(&id, json!({ "decision": "acceptForSession" }));
    let data = within("the accepted read", answer).await.unwrap().result.unwrap();
    assert_eq!(data["data"]["A1"], "secret");
    // Remembered for this app's session and this key: read again without asking.
    within("the second read", reader.request("app/query", read("cells"))).await.unwrap();

    let log = owner.request("app/log/read", json!({ "windowId": w })).await.unwrap();
    let entries = log["entries"].as_array().unwrap();
    let reads: Vec<&Value> = entries.iter().filter(|e| e["command"] == "__query").collect();
    assert_eq!(reads.len(), 2, "{log}");
    assert_eq!(reads[0]["params"], json!({ "stateKey": "cells" }));
    assert_eq!(reads[0]["caller"], json!({ "kind": "app", "windowId": reader_w, "appId": "relay" }));
    assert_eq!(entries.len(), 3, "the command and the two reads; not the declined one nor the manifest");
}
