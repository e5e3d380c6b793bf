//! The method and tool table (docs/security.md), cell by cell on the real binary: every
//! client→server request and notification of the table is sent by a client in every role, and
//! every agent tool is offered to (or refused to) every role that can reach a tool, each answer
//! checked against the table itself. A method or tool added without its row fails here (or does
//! not build).
//!
//! The roles' connections: the owner's (the workspace token), a channel adapter
//! (`capabilities.channelAdapter`), an outside agent (a WebSocket opened with the outside agents'
//! credential, `.appserver/agent.token`, and declaring the desktop's name: a name changes
//! nothing), an ACP editor (`capabilities.acpExtensions`), and an app (the owner's connection
//! relaying an app's call: `callerWindowId`). The thread's own agent calls no method: its column
//! is empty by the table (checked), and it calls the tools offered to the model.

use appserver_client::Client;
use appserver_protocol::jsonrpc::error_codes::ROLE_NOT_ALLOWED;
use appserver_protocol::tools::AGENT_TOOLS;
use appserver_protocol::{ClientNotification, ClientRequest, Role};
use appserver_tests::mock_model::{MockModel, Reply, text_reply};
use appserver_tests::{ServerBuilder, ServerProcess, TIMEOUT, start_thread, text};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::mcp::{connect_http_as, within};

pub(super) const TOKEN: &str = "matrix-token";

/// The outside agents' credential the server wrote for its relay.
pub(super) fn agent_token(server: &ServerProcess) -> String {
    let path = server.workspace.join(".appserver").join("agent.token");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).trim().to_owned()
}

/// A WebSocket client let in with `token`, initialized with `capabilities`, declaring `name`.
pub(super) async fn connect(server: &ServerProcess, token: &str, name: &str, capabilities: Value) -> Client {
    let url = format!("{}?token={token}", server.ws_url());
    let client = Client::connect_ws(&url, TIMEOUT).await.unwrap();
    appserver_tests::initialize(&client, name, capabilities).await.unwrap();
    client
}

/// One connection per role that has one.
pub(super) struct Callers {
    pub(super) owner: Client,
    pub(super) adapter: Client,
    pub(super) outside: Client,
    pub(super) editor: Client,
}

pub(super) async fn callers(server: &ServerProcess) -> Callers {
    let adapter_caps = json!({ "approvalSupport": true, "channelAdapter": { "channelName": "matrix" } });
    Callers {
        owner: connect(server, TOKEN, "desktop", json!({ "approvalSupport": true })).await,
        adapter: connect(server, TOKEN, "matrix-adapter", adapter_caps).await,
        outside: connect(server, &agent_token(server), "desktop", json!({ "approvalSupport": true })).await,
        editor: connect(server, TOKEN, "appserver-acp", json!({ "acpExtensions": {} })).await,
    }
}

impl Callers {
    /// The connection a role calls on (`None`: the agent, which has none).
    fn of(&self, role: Role) -> Option<&Client> {
        match role {
            Role::Owner | Role::App => Some(&self.owner),
            Role::ChannelAdapter => Some(&self.adapter),
            Role::OutsideAgent => Some(&self.outside),
            Role::Editor => Some(&self.editor),
            Role::Agent => None,
        }
    }
}

/// `{}`, or an app's call relayed by its page.
fn params(role: Role) -> Value {
    if role == Role::App { json!({ "callerWindowId": "win_matrix" }) } else { json!({}) }
}

/// Checks one answer against its cell: a refusal is -32004 naming the role and the method; an
/// acceptance is anything else (the handler may still refuse the params, `{}`, its own way).
pub(super) fn check_cell(
    method: &str,
    role: Role,
    allowed: bool,
    answer: &Result<Value, appserver_protocol::jsonrpc::ErrorObject>,
) {
    let refused = matches!(answer, Err(e) if e.code == ROLE_NOT_ALLOWED);
    assert_eq!(!refused, allowed, "{method} × {role}: {answer:?}");
    if let (Err(error), true) = (answer, refused) {
        let (role_name, data) = (role.as_str(), error.data.clone().unwrap_or_default());
        assert!(error.message.contains(&format!("`{role_name}`")) && error.message.contains(method), "{error:?}");
        assert_eq!((data["role"].as_str(), data["method"].as_str()), (Some(role_name), Some(method)), "{error:?}");
    }
}

#[tokio::test]
async fn every_request_answers_every_role_as_the_table_says() {
    let server = ServerBuilder::ws().args(["--ws-token", TOKEN]).spawn().await.unwrap();
    let callers = callers(&server).await;
    let mut cells = 0;
    for (method, roles) in ClientRequest::ROLES {
        assert!(!roles.allows(Role::Agent), "{method}: the agent calls tools, not methods");
        for role in Role::ALL {
            let Some(client) = callers.of(role) else { continue };
            let answer = client.request_answer(method, params(role)).await.unwrap();
            check_cell(method, role, roles.allows(role), &answer.result);
            cells += 1;
        }
    }
    assert_eq!(cells, ClientRequest::METHODS.len() * (Role::ALL.len() - 1));
    // Every connection is still open and in its role (a refusal closes nothing).
    for role in [Role::Owner, Role::ChannelAdapter, Role::OutsideAgent, Role::Editor] {
        let answer = callers.of(role).unwrap().request_answer("workspace/config/schema", json!({})).await.unwrap();
        check_cell("workspace/config/schema", role, role == Role::Owner, &answer.result);
    }
}

/// The server's log lines that refused a notification: `(method, role)`.
fn refused_notifications(stderr: &str) -> Vec<(String, String)> {
    let field = |line: &str, key: &str| {
        line.split_whitespace().find_map(|w| w.strip_prefix(key)).map(|v| v.trim_matches('"').to_owned())
    };
    stderr
        .lines()
        .filter(|l| l.contains("notification refused: not for this role"))
        .filter_map(|l| Some((field(l, "method=")?, field(l, "role=")?)))
        .collect()
}

#[tokio::test]
async fn every_notification_is_dropped_or_handled_as_the_table_says() {
    let server = ServerBuilder::ws().args(["--ws-token", TOKEN]).spawn().await.unwrap();
    let callers = callers(&server).await;
    for role in Role::ALL {
        let Some(client) = callers.of(role) else { continue };
        for method in ClientNotification::METHODS {
            client.notify(method, params(role));
        }
        // Handled in order: once this one is logged, every notification before it was judged.
        client.notify(&format!("roles/marker/{role}"), json!({}));
    }
    let markers = within("the markers in the log", async {
        loop {
            let stderr = server.stderr();
            if Role::ALL.iter().filter(|r| **r != Role::Agent).all(|r| stderr.contains(&format!("roles/marker/{r}"))) {
                return stderr;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    let refused = refused_notifications(&markers);
    for (method, roles) in ClientNotification::ROLES {
        assert!(!roles.allows(Role::Agent), "{method}");
        for role in Role::ALL.into_iter().filter(|r| *r != Role::Agent) {
            let was_refused = refused.iter().any(|(m, r)| m == method && r == role.as_str());
            assert_eq!(was_refused, !roles.allows(role), "{method} × {role}: refused {refused:?}");
        }
    }
}

/// The model is offered exactly the tools the table gives the agent (a client's own tools, the
/// `<dynamic tool>` family, among them); an outside agent (MCP) is offered exactly its column and
/// refused every other tool by name; no other role has a way to call a tool.
#[tokio::test]
async fn every_tool_is_offered_or_refused_to_every_role_as_the_table_says() {
    let mock = MockModel::start(vec![Reply::Sse(text_reply(&["done"], (1, 1)))]).await;
    let server = ServerBuilder::ws()
        .args(["--ws-token", TOKEN, "--enable-debug-methods"])
        .mock_model(&mock)
        .spawn()
        .await
        .unwrap();
    let mut owner = connect(&server, TOKEN, "desktop", json!({})).await;
    let dynamic =
        json!({ "dynamicTools": [{ "name": "MyOwnTool", "description": "d", "inputSchema": { "type": "object" } }] });
    let thread = start_thread(&owner, dynamic).await.unwrap();
    let thread_id = thread["id"].as_str().unwrap();
    appserver_tests::run_turn(&mut owner, thread_id, text("hi")).await.unwrap();
    let offered: Vec<String> = mock.requests()[0].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    for row in AGENT_TOOLS {
        for role in Role::ALL.into_iter().filter(|r| !matches!(r, Role::Agent | Role::OutsideAgent)) {
            assert!(!row.roles.allows(role), "{} × {role}: no such role calls tools", row.name);
        }
        match row.name {
            "<dynamic tool>" => assert!(offered.iter().any(|t| t == "MyOwnTool"), "{offered:?}"),
            // Offered on the threads of an adapter's channel: suite::channel_delivery.
            "<channel tool>" => assert!(row.roles.allows(Role::Agent)),
            // Offered when MCP servers are (by name, or the search above their budget):
            // suite::mcp_tools.
            "<mcp tool>" | "mcp_tool_search" => assert!(row.roles.allows(Role::Agent)),
            name => assert_eq!(offered.iter().any(|t| t == name), row.roles.allows(Role::Agent), "{name} × agent"),
        }
    }
    assert_eq!(offered.len(), AGENT_TOOLS.len() - 3, "no tool offered without a row: {offered:?}");

    let (agent, _) = connect_http_as(&server, Some(&agent_token(&server)), "desktop").await;
    let listed: Vec<String> =
        within("tools/list", agent.list_all_tools()).await.unwrap().iter().map(|t| t.name.to_string()).collect();
    let column: Vec<&str> = AGENT_TOOLS.iter().filter(|t| t.roles.allows(Role::OutsideAgent)).map(|t| t.name).collect();
    assert_eq!(listed, column);
    for row in AGENT_TOOLS.iter().filter(|t| !t.name.starts_with('<')) {
        let called = within(row.name, agent.call_tool(CallToolRequestParams::new(row.name))).await;
        match (&called, row.roles.allows(Role::OutsideAgent)) {
            (Err(rmcp::service::ServiceError::McpError(e)), false) => {
                assert_eq!(i64::from(e.code.0), ROLE_NOT_ALLOWED, "{e:?}");
                assert!(e.message.contains("`outsideAgent`") && e.message.contains(row.name), "{e:?}");
            }
            (Err(rmcp::service::ServiceError::McpError(e)), true) => {
                assert_ne!(i64::from(e.code.0), ROLE_NOT_ALLOWED, "{} × outsideAgent: {e:?}", row.name);
            }
            (other, allowed) => assert!(allowed, "{} × outsideAgent: {other:?}", row.name),
        }
    }
    agent.cancel().await.ok();
}

fn refusal(answer: appserver_client::Answer) -> appserver_protocol::jsonrpc::ErrorObject {
    match answer.result {
        Err(error) if error.code == ROLE_NOT_ALLOWED => error,
        other => panic!("expected a refusal by role, got {other:?}"),
    }
}

/// What a hostile chat user behind an adapter tried (issue 47's "Why"), refused: loosening the
/// owner's thread or its own, rewriting the workspace's config (approval policy, endpoint), the
/// owner's threads and shell; what the adapter's own users need still works.
#[tokio::test]
async fn a_channel_adapter_cannot_loosen_settings_nor_reach_the_owners_threads_or_shell() {
    let server = ServerBuilder::ws().args(["--ws-token", TOKEN]).spawn().await.unwrap();
    let Callers { owner, adapter, .. } = callers(&server).await;
    let desktop = owner.request("thread/start", json!({ "identity": appserver_tests::identity("desktop", "me") }));
    let desktop_thread = desktop.await.unwrap()["thread"]["id"].as_str().unwrap().to_owned();
    let config_file = server.workspace.join(".appserver").join("config.toml");
    let config_before = std::fs::read_to_string(&config_file).unwrap_or_default();

    let loosen =
        json!({ "threadId": desktop_thread, "config": { "approvalPolicy": "never", "sandboxMode": "fullAccess" } });
    let refused = refusal(adapter.request_answer("thread/config/update", loosen).await.unwrap());
    assert!(refused.message.contains("its own channel's threads"), "{refused:?}");
    for (method, params) in [
        ("thread/read", json!({ "threadId": desktop_thread })),
        ("thread/subscribe", json!({ "threadId": desktop_thread })),
        ("turn/start", json!({ "threadId": desktop_thread, "input": text("hi") })),
        ("thread/list", json!({ "identity": appserver_tests::identity("desktop", "me") })),
        ("workspace/config/update", json!({ "defaultApprovalPolicy": "never", "endPoint": "https://evil.example/v1" })),
        ("terminal/list", json!({})),
        ("terminal/write", json!({ "threadId": desktop_thread, "sessionId": "t1", "chars": "rm -rf ~\n" })),
    ] {
        let refused = refusal(adapter.request_answer(method, params).await.unwrap());
        assert_eq!(refused.data.unwrap()["method"], method);
    }
    assert_eq!(std::fs::read_to_string(&config_file).unwrap_or_default(), config_before, "config.toml untouched");
    let read = owner.request("thread/read", json!({ "threadId": desktop_thread })).await.unwrap();
    assert!(read["thread"]["configuration"]["approvalPolicy"].is_null(), "{read}");

    // Its own thread: what loosens safety is refused, field by field; what tightens is not.
    let identity = appserver_tests::identity("matrix", "u1");
    let start = json!({ "identity": identity, "config": { "approvalPolicy": "never" } });
    assert_eq!(
        refusal(adapter.request_answer("thread/start", start).await.unwrap()).data.unwrap()["field"],
        "approvalPolicy"
    );
    let own = adapter.request("thread/start", json!({ "identity": identity })).await.unwrap();
    let own = own["thread"]["id"].as_str().unwrap().to_owned();
    for (config, field) in [
        (json!({ "approvalPolicy": "never" }), "approvalPolicy"),
        (json!({ "approvalPolicy": "autoApprove" }), "approvalPolicy"),
        (json!({ "sandboxMode": "fullAccess" }), "sandboxMode"),
        (json!({ "requireApprovalOutsideWorkspace": false }), "requireApprovalOutsideWorkspace"),
        (json!({ "workspaceOverride": "/" }), "workspaceOverride"),
    ] {
        let update = json!({ "threadId": own, "config": config });
        let refused = refusal(adapter.request_answer("thread/config/update", update).await.unwrap());
        assert_eq!(refused.data.unwrap()["field"], field);
    }
    let tighten = json!({ "threadId": own, "config": { "approvalPolicy": "untrusted", "sandboxMode": "readOnly" } });
    adapter.request("thread/config/update", tighten).await.unwrap();
    // A replacement that leaves them out keeps them: clearing them would loosen safety.
    let model_only = json!({ "threadId": own, "config": { "model": "m1" } });
    adapter.request("thread/config/update", model_only).await.unwrap();
    let read = adapter.request("thread/read", json!({ "threadId": own })).await.unwrap();
    let kept = json!({ "model": "m1", "approvalPolicy": "untrusted", "sandboxMode": "readOnly" });
    assert_eq!(read["thread"]["configuration"], kept);
    let listed = adapter.request("thread/list", json!({ "identity": identity })).await.unwrap();
    assert_eq!(listed["data"][0]["id"], own.as_str());
    // The channel is no filter for the owner's clients (Session Core §9.5), but an adapter's
    // listing stays in its channel, whichever user id and origins it names.
    let as_owner = json!({ "identity": appserver_tests::identity("matrix", "me"), "crossChannelOrigins": ["desktop"] });
    let listed = adapter.request("thread/list", as_owner).await.unwrap();
    assert!(!listed.to_string().contains(&desktop_thread), "{listed}");
    adapter.request("thread/read", json!({ "threadId": own })).await.unwrap();
    // A chat user cannot run the workspace's heartbeat through a slash command either.
    let heartbeat = json!({ "threadId": own, "command": "/heartbeat" });
    let refused = adapter.request_answer("command/execute", heartbeat).await.unwrap();
    assert_eq!(refused.result.err().map(|e| e.code), Some(-32061));
    // A chat's user names no file of the workspace for the server to inline into the turn.
    let secret = json!([{ "type": "fileRef", "path": ".appserver/agent.token" }]);
    let refused =
        refusal(adapter.request_answer("turn/start", json!({ "threadId": own, "input": secret })).await.unwrap());
    assert_eq!(refused.data.unwrap()["field"], "input");
}

/// The outside agents' credential (what `appserver mcp`'s relay presents) opens `/mcp`, and `/ws`
/// only as an outside agent, whatever name the connection declares; nothing else of the
/// listener. It is in the lock file for the relay, readable by its owner only.
#[tokio::test]
async fn the_outside_agents_credential_opens_mcp_and_an_outside_agents_socket_only() {
    let server = ServerBuilder::ws().args(["--ws-token", TOKEN]).spawn().await.unwrap();
    let agent = agent_token(&server);
    assert_ne!(agent, TOKEN);
    let bearer = format!("Bearer {agent}");
    for path in ["/metrics", "/", "/api/apps"] {
        let (status, _) =
            appserver_tests::http_get(server.ws_addr(), path, &[("Authorization", &bearer)]).await.unwrap();
        assert_eq!(status, 401, "{path}");
    }
    let lock = std::fs::read_to_string(server.workspace.join(".appserver").join("server.lock")).unwrap();
    let lock: Value = serde_json::from_str(&lock).unwrap();
    let file = std::path::PathBuf::from(lock["agentTokenFile"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), agent);
    #[cfg(unix)]
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions()) & 0o777,
        0o600
    );
    // Declaring the owner's desktop, with the owner's capabilities: still an outside agent.
    let outside = connect(&server, &agent, "appserver-desktop", json!({ "approvalSupport": true })).await;
    outside.request("app/list", json!({})).await.unwrap();
    for method in ["thread/list", "workspace/config/update", "mcp/upsert", "plugin/install", "app/descriptor/approve"] {
        let refused = refusal(outside.request_answer(method, json!({})).await.unwrap());
        assert_eq!(refused.data.unwrap()["role"], "outsideAgent", "{method}");
    }
}
