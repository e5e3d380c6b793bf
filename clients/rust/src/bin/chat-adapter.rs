//! `chat-adapter`: an example chat-platform channel adapter that bridges a line-based chat on
//! stdin/stdout to appserver. It follows the sequence of docs/channels.md: initialize as a
//! channel adapter → find the user's thread (thread/list) or start one → send `/…` lines to
//! command/execute (and start a turn with a commandRef when a prompt comes back) → send other
//! lines with turn/start → print the reply when the turn completes. Approvals are asked as chat
//! prompts. Messages the server delivers (`ext/channel/send`: the results of jobs made in the
//! chat) are printed, and its health probe (`ext/channel/heartbeat`) is answered, at any time.
//!
//! ```text
//! cargo run -p appserver-client --bin chat-adapter -- ws://127.0.0.1:8080/ws [--user NAME] [--channel NAME] [--token T]
//! ```

use std::process::ExitCode;
use std::time::Duration;

use appserver_client::{Client, Event, RawConnection};
use appserver_protocol::jsonrpc::RequestId;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, Stdin};

struct Chat {
    client: Client,
    lines: Lines<BufReader<Stdin>>,
    out: tokio::io::Stdout,
}

impl Chat {
    async fn say(&mut self, text: &str) {
        let _ = self.out.write_all(format!("{text}\n").as_bytes()).await;
        let _ = self.out.flush().await;
    }

    /// The next line typed, answering the server's requests meanwhile.
    async fn read_line(&mut self) -> Option<String> {
        loop {
            tokio::select! {
                line = self.lines.next_line() => return line.ok().flatten(),
                event = self.client.next_event_blocking() => match event {
                    Ok(Event::Request { id, method, params, .. }) => self.answer(&id, &method, &params).await,
                    Ok(Event::Closed { .. }) | Err(_) => return None,
                    Ok(Event::Notification { .. }) => {}
                },
            }
        }
    }

    /// Answers what the server asks of a channel adapter (besides approvals).
    async fn answer(&mut self, id: &RequestId, method: &str, params: &Value) {
        match method {
            "ext/channel/heartbeat" => self.client.respond(id, json!({})),
            "ext/channel/send" => {
                let text = params["message"]["text"].as_str().unwrap_or_default().to_owned();
                self.say(&format!("bot: {text}")).await;
                self.client.respond(id, json!({ "delivered": true }));
            }
            _ => self.client.respond_error(id, -32601, "not supported by chat-adapter"),
        }
    }

    /// Starts a turn and relays it until it ends.
    async fn run_turn(&mut self, thread_id: &str, input: Value) -> Result<(), String> {
        let turn = self
            .client
            .request("turn/start", json!({ "threadId": thread_id, "input": input }))
            .await
            .map_err(|e| e.to_string())?;
        let turn_id = turn["turn"]["id"].as_str().unwrap_or_default().to_owned();
        loop {
            let event = self.client.next_event_blocking().await.map_err(|e| e.to_string())?;
            match &event {
                Event::Request { id, method, params, .. } if method == "item/approval/request" => {
                    let question = format!(
                        "approve {} {} on {}? [y]es / [s]ession / [a]lways / [n]o / [c]ancel",
                        params["approvalType"].as_str().unwrap_or(""),
                        params["operation"].as_str().unwrap_or(""),
                        params["target"].as_str().unwrap_or("")
                    );
                    self.say(&question).await;
                    let answer = self.read_line().await.unwrap_or_default();
                    let decision = match answer.trim().chars().next() {
                        Some('y' | 'Y') => "accept",
                        Some('s' | 'S') => "acceptForSession",
                        Some('a' | 'A') => "acceptAlways",
                        Some('c' | 'C') => "cancel",
                        _ => "decline",
                    };
                    self.client.respond(id, json!({ "decision": decision }));
                }
                Event::Request { id, method, params, .. } => self.answer(id, method, params).await,
                Event::Notification { method, params, .. } => {
                    let this_turn = params["turn"]["id"] == turn_id.as_str() || params["turnId"] == turn_id.as_str();
                    match method.as_str() {
                        "item/completed" if this_turn && params["item"]["type"] == "agentMessage" => {
                            let text = params["item"]["payload"]["text"].as_str().unwrap_or_default().to_owned();
                            self.say(&format!("bot: {text}")).await;
                        }
                        "turn/completed" if this_turn => return Ok(()),
                        "turn/failed" if this_turn => {
                            let error = params["error"].as_str().unwrap_or("unknown error").to_owned();
                            self.say(&format!("(the turn failed: {error})")).await;
                            return Ok(());
                        }
                        "turn/cancelled" if this_turn => {
                            self.say("(stopped)").await;
                            return Ok(());
                        }
                        _ => {}
                    }
                }
                Event::Closed { .. } => return Err("the server closed the connection".into()),
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut url, mut user, mut channel, mut token) = (None, "chat-user".to_owned(), "console".to_owned(), None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--user" => user = args.next().unwrap_or(user),
            "--channel" => channel = args.next().unwrap_or(channel),
            "--token" => token = args.next(),
            "-h" | "--help" => {
                eprintln!("usage: chat-adapter ws://HOST:PORT/ws [--user NAME] [--channel NAME] [--token T]");
                return ExitCode::SUCCESS;
            }
            other => url = Some(other.to_owned()),
        }
    }
    let Some(url) = url else {
        eprintln!("chat-adapter: give the server's WebSocket URL");
        return ExitCode::from(2);
    };
    match run(&url, &user, &channel, token).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("chat-adapter: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, user: &str, channel: &str, token: Option<String>) -> Result<(), String> {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let connection = RawConnection::connect_ws(url, &headers).await.map_err(|e| e.to_string())?;
    let client = Client::new(connection, Duration::from_secs(60));
    let capabilities = json!({
        "approvalSupport": true,
        "channelAdapter": { "channelName": channel, "deliveryCapabilities": { "structuredDelivery": true }, "channelTools": [] }
    });
    client.initialize("chat-adapter", capabilities).await.map_err(|e| e.to_string())?;
    let identity = json!({ "channelName": channel, "userId": user, "channelContext": format!("{channel}:{user}") });
    let list =
        client.request("thread/list", json!({ "identity": identity, "limit": 1 })).await.map_err(|e| e.to_string())?;
    let mut thread_id = match list["data"][0]["id"].as_str() {
        Some(id) => id.to_owned(),
        None => {
            client.request("thread/start", json!({ "identity": identity })).await.map_err(|e| e.to_string())?["thread"]
                ["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    eprintln!("chat-adapter: talking in {thread_id}");
    let mut chat = Chat { client, lines: BufReader::new(tokio::io::stdin()).lines(), out: tokio::io::stdout() };
    while let Some(line) = chat.read_line().await {
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('/') {
            let result =
                chat.client.request("command/execute", json!({ "threadId": thread_id, "command": line })).await;
            let result = match result {
                Ok(result) => result,
                Err(err) => {
                    chat.say(&format!("({err})")).await;
                    continue;
                }
            };
            if let Some(message) = result["message"].as_str() {
                chat.say(message).await;
            }
            if result["sessionReset"] == true {
                thread_id = result["thread"]["id"].as_str().unwrap_or(&thread_id).to_owned();
            }
            if result["expandedPrompt"].is_string() {
                let body = line.trim_start_matches('/');
                let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
                let input = json!([{ "type": "commandRef", "name": name, "argsText": args.trim(), "rawText": line }]);
                chat.run_turn(&thread_id, input).await?;
            }
        } else {
            chat.run_turn(&thread_id, json!([{ "type": "text", "text": line }])).await?;
        }
    }
    Ok(())
}
