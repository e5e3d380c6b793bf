//! Unit tests of the hub: numbering, order, holding, replay, the inline path, catching up.

use super::*;
use crate::domain::ports::fake::{NoClients, RecordingClient};
use crate::domain::threads::event_log::LoggedEvent;

/// A client as the hub holds it, and the same client for reading what it received.
fn ready_peer(id: u64) -> (Arc<dyn Client>, Arc<RecordingClient>) {
    let client = RecordingClient::new(id);
    (client.clone(), client)
}

fn text(n: u32) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"m","params":{{"n":{n}}}}}"#)
}

/// The `n` of each frame received since the last call, with its `seq`.
fn drain(client: &Arc<RecordingClient>) -> Vec<(u64, u64)> {
    client
        .take()
        .iter()
        .map(|f| {
            let v: serde_json::Value = serde_json::from_str(f).unwrap();
            (v["params"]["n"].as_u64().unwrap(), v["params"]["seq"].as_u64().unwrap())
        })
        .collect()
}

fn ns(frames: Vec<(u64, u64)>) -> Vec<u64> {
    frames.into_iter().map(|(n, _)| n).collect()
}

#[tokio::test]
async fn a_subscribed_starter_gets_each_frame_once_numbered() {
    let hub = EventHub::default();
    let (a, rx) = ready_peer(1);
    hub.subscribe(&a, false, None).unwrap();
    hub.release(a.id(), Vec::new());
    hub.begin_turn(Some(&a));
    hub.publish("turn/started", text(1));
    hub.publish("item/started", text(2));
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(1, 1), (2, 2)]);
}

#[tokio::test]
async fn held_frames_follow_the_replay_in_order() {
    let hub = EventHub::default();
    let (a, rx) = ready_peer(1);
    hub.begin_turn(None);
    hub.publish("turn/started", text(1));
    hub.publish("item/started", text(2));
    hub.flush().await;
    hub.subscribe(&a, true, None).unwrap();
    hub.publish("item/completed", text(3));
    hub.flush().await;
    assert!(rx.take().is_empty(), "nothing before the subscribe response");
    hub.release(a.id(), Vec::new());
    hub.publish("turn/completed", text(4));
    hub.flush().await;
    assert_eq!(ns(drain(&rx)), vec![1, 2, 3, 4]);
    assert_eq!(hub.subscribe(&a, true, None).unwrap(), Subscribed::Already, "no second replay");
}

#[tokio::test]
async fn after_seq_names_what_to_catch_up_and_skips_what_the_client_has() {
    let hub = EventHub::new("t", Arc::new(AnnounceGate::default()), Arc::new(Unlogged), 10);
    hub.publish("m", text(11));
    hub.publish("m", text(12));
    hub.flush().await;
    let (a, rx) = ready_peer(1);
    assert_eq!(hub.subscribe(&a, true, Some(9)).unwrap(), Subscribed::New { catch_up: Some((9, 12)) });
    hub.publish("m", text(13));
    hub.flush().await;
    hub.release(a.id(), Vec::new());
    assert_eq!(drain(&rx), vec![(13, 13)], "held events after the catch-up range");
    let (b, rx) = ready_peer(2);
    assert_eq!(hub.subscribe(&b, false, Some(13)).unwrap(), Subscribed::New { catch_up: None });
    hub.release(b.id(), Vec::new());
    hub.publish("m", text(14));
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(14, 14)]);
    let (c, _) = ready_peer(3);
    assert!(hub.subscribe(&c, false, Some(15)).is_err(), "afterSeq past the last event");
}

#[test]
fn the_replay_buffer_is_bounded_in_bytes() {
    let hub = EventHub::default();
    hub.shared.begin_turn(None);
    let big = "x".repeat(RECENT_MAX_BYTES / 4 + 1);
    for seq in 1..=10 {
        hub.shared.deliver(seq, "item/agentMessage/delta".into(), OutFrame::from(big.clone()));
    }
    hub.shared.deliver(11, "turn/completed".into(), OutFrame::from("last".to_owned()));
    let inner = hub.shared.inner();
    assert!(inner.recent_bytes <= RECENT_MAX_BYTES);
    assert_eq!(inner.recent_bytes, inner.recent.iter().map(|(_, _, f)| f.bytes().len()).sum::<usize>());
    assert_eq!(inner.recent.back().map(|(_, m, _)| m.as_ref()), Some("turn/completed"), "the newest are kept");
    assert_eq!(inner.recent.len(), 4);
}

#[tokio::test]
async fn a_turn_that_ends_before_its_thread_is_announced_still_reaches_its_starter() {
    let hub = EventHub::default();
    hub.gate().hold();
    let (starter, rx) = ready_peer(1);
    hub.begin_turn(Some(&starter));
    hub.publish("turn/started", text(1));
    hub.publish("turn/completed", text(2));
    hub.end_turn();
    hub.flush().await;
    assert!(rx.take().is_empty(), "nothing before the announcement");
    hub.announce(&NoClients, "thread/started", OutFrame::from(text(0)));
    assert_eq!(drain(&rx), vec![(1, 1), (2, 2)], "the turn's boundaries were held with its events");
    let (late, late_rx) = ready_peer(2);
    hub.subscribe(&late, true, None).unwrap();
    hub.release(late.id(), Vec::new());
    assert!(late_rx.take().is_empty(), "the turn has ended: nothing to replay");
}

#[tokio::test]
async fn nothing_goes_out_before_the_announcement() {
    let connections = NoClients;
    let hub = EventHub::default();
    hub.gate().hold();
    let (a, rx) = ready_peer(1);
    hub.subscribe(&a, false, None).unwrap();
    hub.release(a.id(), Vec::new());
    hub.begin_turn(None);
    hub.publish("turn/started", text(1));
    hub.flush().await;
    assert!(rx.take().is_empty());
    hub.announce(&connections, "thread/started", OutFrame::from(text(0)));
    hub.publish("turn/completed", text(2));
    hub.flush().await;
    assert_eq!(ns(drain(&rx)), vec![1, 2]);
}

#[tokio::test]
async fn an_ended_turn_is_not_replayed() {
    let hub = EventHub::default();
    let (a, rx) = ready_peer(1);
    hub.begin_turn(None);
    hub.publish("turn/started", text(1));
    hub.end_turn();
    hub.flush().await;
    hub.subscribe(&a, true, None).unwrap();
    hub.release(a.id(), Vec::new());
    assert!(rx.take().is_empty());
}

#[tokio::test]
async fn the_inline_path_closes_after_the_turns_last_event() {
    let hub = EventHub::default();
    let (a, rx) = ready_peer(1);
    hub.begin_turn(Some(&a));
    hub.publish("turn/started", text(1));
    hub.publish("turn/completed", text(2));
    hub.end_turn();
    hub.publish("thread/x", text(3));
    hub.flush().await;
    assert_eq!(ns(drain(&rx)), vec![1, 2], "the starter gets its whole turn, inline only");
}

/// A SQLite store with thread `t` and its events 1..=`events` logged.
async fn store_with_events(dir: &std::path::Path, events: u64) -> crate::infra::store::Store {
    use crate::infra::store::{EventWrite, Store, ThreadRecord, ThreadWrite};
    let store = Store::open(&dir.join("state.db"), crate::infra::store::Durability::Normal).await.unwrap();
    let record = ThreadRecord {
        id: "t".to_owned(),
        workspace_path: "/w".to_owned(),
        user_id: None,
        origin_channel: "cli".to_owned(),
        channel_context: None,
        display_name: None,
        status: appserver_protocol::ThreadStatus::Active,
        history_mode: appserver_protocol::HistoryMode::Server,
        created_at: "2026-01-01T00:00:00.000Z".to_owned(),
        last_active_at: "2026-01-01T00:00:00.000Z".to_owned(),
        metadata: Default::default(),
        configuration: None,
        next_turn_seq: 1,
        context_usage: None,
    };
    store.write(ThreadWrite::CreateThread(Box::new(record))).await.unwrap();
    for seq in 1..=events {
        let body = appserver_protocol::jsonrpc::with_seq(&text(seq as u32), seq).unwrap();
        store.write(EventWrite::Append { thread_id: "t".into(), events: vec![(seq, "m", body.into())] }).await.unwrap();
    }
    store
}

fn remote(seq: u64) -> LoggedEvent {
    let body = appserver_protocol::jsonrpc::with_seq(&text(seq as u32), seq).unwrap();
    LoggedEvent { seq, method: "m".into(), frame: OutFrame::from(body) }
}

#[tokio::test]
async fn a_mirror_fills_a_gap_from_the_log_and_skips_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_events(dir.path(), 6).await;
    let hub = EventHub::new("t", Arc::new(AnnounceGate::default()), Arc::new(Unlogged), 1);
    let (a, rx) = ready_peer(1);
    hub.subscribe(&a, false, None).unwrap();
    hub.release(a.id(), Vec::new());
    hub.deliver_remote(&store, remote(2)).await.unwrap();
    hub.deliver_remote(&store, remote(5)).await.unwrap();
    hub.deliver_remote(&store, remote(3)).await.unwrap();
    hub.deliver_remote(&store, remote(6)).await.unwrap();
    assert_eq!(ns(drain(&rx)), vec![2, 3, 4, 5, 6], "in order, the gap read from the log, nothing twice");
    store.close().await;
}

#[tokio::test]
async fn adopting_a_thread_delivers_the_log_first_then_numbers_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_events(dir.path(), 4).await;
    let hub = EventHub::new("t", Arc::new(AnnounceGate::default()), Arc::new(Unlogged), 2);
    let (a, rx) = ready_peer(1);
    hub.subscribe(&a, false, None).unwrap();
    hub.release(a.id(), Vec::new());
    hub.adopt(&store).await.unwrap();
    hub.publish("m", text(5));
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(3, 3), (4, 4), (5, 5)]);
    store.close().await;
}

#[tokio::test]
async fn fast_forward_moves_an_idle_mirror_on_and_a_listened_one_only_its_numbering() {
    let idle = EventHub::default();
    idle.fast_forward(7);
    assert_eq!(idle.delivered_seq(), 7);
    let listened = EventHub::default();
    let (a, _) = ready_peer(1);
    listened.subscribe(&a, false, None).unwrap();
    listened.fast_forward(7);
    assert_eq!(listened.delivered_seq(), 0, "its subscribers get 1..=7 delivered, not skipped");
    let (b, _) = ready_peer(2);
    assert_eq!(listened.subscribe(&b, false, Some(7)).unwrap(), Subscribed::New { catch_up: None });
}

fn turn_record(seq: u32) -> crate::infra::store::TurnRecord {
    crate::infra::store::TurnRecord {
        thread_id: "t".to_owned(),
        seq,
        id: crate::infra::store::turn_id(seq),
        status: appserver_protocol::TurnStatus::Running,
        started_at: "2026-01-01T00:00:00.000Z".to_owned(),
        completed_at: None,
        error: None,
        token_usage: None,
        origin_channel: None,
        initiator: None,
    }
}

/// A write that commits: thread `t`'s turn 1 starts.
fn starting_turn_one() -> WriteOp {
    crate::infra::store::ThreadWrite::CreateTurn(Box::new(turn_record(1))).into()
}

/// A write whose unit fails: finishing a turn that was never started finds no row.
fn failing_write() -> WriteOp {
    crate::infra::store::ThreadWrite::FinishTurn(Box::new(turn_record(7))).into()
}

/// The `seq`s of thread `t`'s logged events up to `through`.
async fn logged_seqs(store: &crate::infra::store::Store, through: u64) -> Vec<u64> {
    store.events_between("t", 0, through, 10).await.unwrap().iter().map(|e| e.seq).collect()
}

/// A hub of thread `t` logging to a fresh store, and a live subscriber's frames.
async fn logged_hub_with_a_subscriber(
    dir: &std::path::Path,
) -> (crate::infra::store::Store, EventHub, Arc<RecordingClient>) {
    let store = store_with_events(dir, 0).await;
    let hub = EventHub::new("t", Arc::new(AnnounceGate::default()), Arc::new(store.clone()), 0);
    let (a, rx) = ready_peer(1);
    hub.subscribe(&a, false, None).unwrap();
    hub.release(a.id(), Vec::new());
    (store, hub, rx)
}

/// Yields to the hub's drain (tests run on one thread) until `client` has received a frame.
async fn first_frames(client: &Arc<RecordingClient>) -> Vec<(u64, u64)> {
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            let frames = drain(client);
            if !frames.is_empty() {
                return frames;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("a frame arrives")
}

#[tokio::test]
async fn an_event_with_its_own_write_commits_in_one_unit_and_a_held_one_waits_for_its_release() {
    let dir = tempfile::tempdir().unwrap();
    let (store, hub, rx) = logged_hub_with_a_subscriber(dir.path()).await;
    hub.publish("m", text(1));
    let write = starting_turn_one();
    let mut held = hub.publish_with("m", text(2), write, true);
    hub.publish("m", text(3));
    held.committed().await.unwrap();
    assert!(store.turn("t", 1).await.unwrap().is_some(), "the write committed");
    assert_eq!(logged_seqs(&store, 3).await, vec![1, 2, 3], "with the event, and the events around it in order");
    // The drain hands event 1 on and stops at the held event 2 (on this one-thread runtime it
    // yields only there), so event 1 arriving alone shows that 2 and 3 wait.
    assert_eq!(first_frames(&rx).await, vec![(1, 1)]);
    held.release(true);
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(2, 2), (3, 3)]);
    store.close().await;
}

#[tokio::test]
async fn an_event_whose_own_write_fails_is_never_sent_nor_logged_and_its_publisher_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let (store, hub, rx) = logged_hub_with_a_subscriber(dir.path()).await;
    hub.publish("m", text(1));
    let write = failing_write();
    let mut failed = hub.publish_with("m", text(2), write, false);
    hub.publish("m", text(3));
    assert!(failed.committed().await.is_err());
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(1, 1), (3, 3)]);
    assert_eq!(logged_seqs(&store, 3).await, vec![1, 3]);
    store.close().await;
}

#[tokio::test]
async fn a_turns_opening_events_commit_with_its_start_and_wait_for_its_release() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_events(dir.path(), 0).await;
    let hub = EventHub::new("t", Arc::new(AnnounceGate::default()), Arc::new(store.clone()), 0);
    let (starter, rx) = ready_peer(1);
    let write = starting_turn_one();
    let (mut start, _begun) =
        hub.start_turn(Some(&starter), write, ("m", text(1)), vec![("m", text(2)), ("m", text(3))]);
    hub.publish("m", text(4));
    start.committed().await.unwrap();
    assert!(store.turn("t", 1).await.unwrap().is_some(), "the start committed");
    // The round's units are all committed before its publishers are told, so event 4 is logged
    // too; still nothing reaches the starter (the inline path): event 1 waits for its release,
    // and every event after it.
    assert_eq!(logged_seqs(&store, 4).await, vec![1, 2, 3, 4], "the opening events are logged with it");
    assert!(rx.take().is_empty(), "held until released");
    start.release(true);
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(1, 1), (2, 2), (3, 3), (4, 4)]);
    store.close().await;
}

#[tokio::test]
async fn a_turn_whose_start_fails_sends_and_logs_none_of_its_opening_events() {
    let dir = tempfile::tempdir().unwrap();
    let (store, hub, rx) = logged_hub_with_a_subscriber(dir.path()).await;
    let (starter, inline) = ready_peer(2);
    hub.begin_turn(None);
    hub.publish("m", text(1));
    let write = failing_write();
    let (mut start, begun) = hub.start_turn(Some(&starter), write, ("m", text(2)), vec![("m", text(3))]);
    assert!(start.committed().await.is_err());
    start.release(false);
    hub.abandon_turn(begun);
    hub.publish("m", text(4));
    hub.flush().await;
    assert_eq!(drain(&rx), vec![(1, 1), (4, 4)]);
    assert!(inline.take().is_empty(), "the failed turn's starter gets nothing inline");
    assert_eq!(logged_seqs(&store, 4).await, vec![1, 4]);
    store.close().await;
}
