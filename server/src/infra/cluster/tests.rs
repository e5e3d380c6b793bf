//! Tests of cluster mode against a real NATS server (`APPSERVER_TEST_NATS`, e.g.
//! `nats://127.0.0.1:4222`); skipped with a `SKIPPED:` line on stderr when it is unset. Each test uses a namespace of
//! its own, so tests running at once never see each other's messages.

use std::time::Duration;

use bytes::Bytes;

use super::subject::events_subject;
use super::*;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The NATS server to test against, or `None` with `SKIPPED: <test>: needs APPSERVER_TEST_NATS`
/// on stderr, written past the test harness's capture (which takes only `eprintln!`).
fn nats(test: &str) -> Option<String> {
    use std::io::Write;
    let url = std::env::var("APPSERVER_TEST_NATS").ok().filter(|u| !u.is_empty());
    if url.is_none() {
        let line = format!("SKIPPED: {test}: needs APPSERVER_TEST_NATS (e.g. nats://127.0.0.1:4222)\n");
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
    url
}

fn namespace() -> String {
    format!("test{:016x}", fastrand::u64(..))
}

async fn connect(url: &str, namespace: &str) -> Cluster {
    Cluster::connect(url, namespace, new_instance_id(), TIMEOUT).await.expect("connect to APPSERVER_TEST_NATS")
}

fn event(origin: &str, seq: u64) -> ClusterEvent {
    ClusterEvent {
        origin: origin.to_owned(),
        seq,
        method: "item/agentMessage/delta".to_owned(),
        frame: format!(
            r#"{{"jsonrpc":"2.0","method":"item/agentMessage/delta","params":{{"seq":{seq},"d":"a b.c"}}}}"#
        ),
    }
}

async fn next(sub: &mut EventSubscription) -> ClusterEvent {
    tokio::time::timeout(TIMEOUT, sub.next()).await.expect("an event in time").expect("subscription open")
}

#[test]
fn instance_ids_are_random_and_subject_safe() {
    let (a, b) = (new_instance_id(), new_instance_id());
    assert_ne!(a, b);
    assert!(a.starts_with("inst_") && a.len() == 17, "{a}");
    assert_eq!(subject_token(&a), a);
}

#[test]
fn passwords_are_not_shown() {
    assert_eq!(redact("nats://u:secret@h:4222"), "nats://u:***@h:4222");
    assert_eq!(redact("nats://tok@h:4222, nats://h2:4222"), "nats://***@h:4222,nats://h2:4222");
    assert_eq!(redact("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
    assert!(check_url("nats://127.0.0.1:4222").is_ok());
    assert!(check_url("http://127.0.0.1:4222").is_err());
    assert!(check_url("127.0.0.1:4222").is_err());
}

#[tokio::test]
async fn connecting_to_nothing_fails_at_once_and_says_where() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("nats://127.0.0.1:{port}");
    let started = std::time::Instant::now();
    let err = Cluster::connect(&url, "ns", new_instance_id(), Duration::from_secs(3)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(err.to_string().contains(&format!("cannot connect to NATS at {url}")), "{err}");
    let err = Cluster::connect(&url, "bad ns", new_instance_id(), Duration::from_secs(3)).await.unwrap_err();
    assert!(matches!(err, ClusterError::InvalidSubject { .. }), "{err}");
}

#[tokio::test]
async fn a_thousand_events_arrive_in_publish_order() {
    let Some(url) = nats("a_thousand_events_arrive_in_publish_order") else { return };
    let ns = namespace();
    let (publisher, receiver) = (connect(&url, &ns).await, connect(&url, &ns).await);
    assert!(publisher.is_connected() && receiver.is_connected());
    let thread = "thr one.*>"; // an odd id: encoded in the subject
    let mut sub = receiver.subscribe_events(thread).await.unwrap();
    assert!(sub.subject().starts_with(&format!("{ns}.thread.~")), "{}", sub.subject());
    let mut other = receiver.subscribe_events("thr_other").await.unwrap();
    for seq in 0..1000 {
        publisher.publish_event(thread, &event(publisher.instance_id(), seq)).await.unwrap();
    }
    let seven = event(publisher.instance_id(), 7);
    publisher.publish_frame("thr_other", 7, &seven.method, seven.frame.as_bytes()).await.unwrap();
    for seq in 0..1000 {
        let got = next(&mut sub).await;
        assert_eq!(got, event(publisher.instance_id(), seq));
    }
    assert_eq!(sub.dropped(), 0);
    assert_eq!(next(&mut other).await, seven, "another thread's events stay on its subject");
    publisher.shutdown(TIMEOUT).await;
    receiver.shutdown(TIMEOUT).await;
    assert!(!receiver.is_connected());
}

#[tokio::test]
async fn a_slow_reader_loses_events_and_counts_them() {
    let Some(url) = nats("a_slow_reader_loses_events_and_counts_them") else { return };
    let ns = namespace();
    let cluster = connect(&url, &ns).await;
    let mut sub = cluster.subscribe_events_bounded("thr_slow", 10).await.unwrap();
    for seq in 0..100 {
        cluster.publish_event("thr_slow", &event(cluster.instance_id(), seq)).await.unwrap();
    }
    // Nobody reads: 10 wait, 90 are dropped and counted (the forwarding task runs as this one
    // yields; bounded by the test's timeout).
    let counted = async {
        while sub.dropped() < 90 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(TIMEOUT, counted).await.expect("90 drops counted");
    for seq in 0..10 {
        assert_eq!(next(&mut sub).await.seq, seq, "the first ones were kept, in order");
    }
    assert_eq!(sub.dropped(), 90);
    // Room again: the next one arrives.
    cluster.publish_event("thr_slow", &event(cluster.instance_id(), 100)).await.unwrap();
    assert_eq!(next(&mut sub).await.seq, 100);
    cluster.shutdown(TIMEOUT).await;
}

#[tokio::test]
async fn ask_and_serve_round_trip_to_one_instance() {
    let Some(url) = nats("ask_and_serve_round_trip_to_one_instance") else { return };
    let ns = namespace();
    let (asker, server) = (connect(&url, &ns).await, connect(&url, &ns).await);
    let suffix = format!("{}.approval", instance_subject(server.instance_id()));
    let mut requests = server.serve(&suffix).await.unwrap();
    let answering = tokio::spawn(async move {
        for _ in 0..2 {
            let (payload, responder) = requests.next().await.expect("a request");
            let mut answer = b"answer to ".to_vec();
            answer.extend_from_slice(&payload);
            responder.reply(Bytes::from(answer)).await.unwrap();
        }
    });
    for question in ["one", "two"] {
        let answer = asker.ask(&suffix, Bytes::from(question), TIMEOUT).await.unwrap();
        assert_eq!(answer, Bytes::from(format!("answer to {question}")));
    }
    tokio::time::timeout(TIMEOUT, answering).await.unwrap().unwrap();
    // Addressed to another instance: nobody serves it.
    let elsewhere = format!("{}.approval", instance_subject(asker.instance_id()));
    let err = server.ask(&elsewhere, Bytes::new(), TIMEOUT).await.unwrap_err();
    assert!(matches!(err, ClusterError::NoResponders { .. }), "{err}");
    assert!(asker.ask("bad suffix", Bytes::new(), TIMEOUT).await.is_err());
}

#[tokio::test]
async fn ask_without_a_responder_is_no_responders_at_once() {
    let Some(url) = nats("ask_without_a_responder_is_no_responders_at_once") else { return };
    let cluster = connect(&url, &namespace()).await;
    let started = std::time::Instant::now();
    let err = cluster.ask("nobody.here", Bytes::from_static(b"?"), TIMEOUT).await.unwrap_err();
    assert!(matches!(err, ClusterError::NoResponders { .. }), "{err}");
    assert!(started.elapsed() < TIMEOUT / 2, "{:?}", started.elapsed());
}

#[tokio::test]
async fn ask_times_out_when_the_server_does_not_answer() {
    let Some(url) = nats("ask_times_out_when_the_server_does_not_answer") else { return };
    let cluster = connect(&url, &namespace()).await;
    let mut requests = cluster.serve("silent").await.unwrap();
    let err = cluster.ask("silent", Bytes::new(), Duration::from_millis(300)).await.unwrap_err();
    assert!(matches!(err, ClusterError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("within 300 ms"), "{err}");
    // The request did arrive: it was only never answered.
    let got = tokio::time::timeout(TIMEOUT, requests.next()).await.unwrap();
    assert!(got.is_some());
}

#[tokio::test]
async fn a_dropped_subscription_unsubscribes() {
    let Some(url) = nats("a_dropped_subscription_unsubscribes") else { return };
    let ns = namespace();
    let cluster = connect(&url, &ns).await;
    let probe = connect(&url, &ns).await;
    let subject = events_subject(&ns, "thr_dropped");
    // A request to the events subject: nobody answers it while someone listens (time out); once
    // nobody listens, NATS answers "no responders".
    let listened = |timeout: Duration| {
        let (probe, subject) = (probe.clone(), subject.clone());
        async move {
            let request = async_nats::Request::new().payload(Bytes::new()).timeout(Some(timeout));
            match probe.client().send_request(subject, request).await {
                Err(err) if err.kind() == async_nats::RequestErrorKind::NoResponders => false,
                Err(err) if err.kind() == async_nats::RequestErrorKind::TimedOut => true,
                other => panic!("{other:?}"),
            }
        }
    };
    assert!(!listened(TIMEOUT).await, "nobody listens yet");
    let sub = cluster.subscribe_events("thr_dropped").await.unwrap();
    assert!(listened(Duration::from_millis(200)).await, "the subscription listens");
    drop(sub);
    // Unsubscribing is asynchronous (the forwarding task sees the drop, then tells NATS): ask
    // again until NATS says nobody listens, within the test's bound.
    let gone = async {
        while listened(Duration::from_millis(200)).await {
            cluster.flush(TIMEOUT).await.unwrap();
        }
    };
    tokio::time::timeout(TIMEOUT, gone).await.expect("the dropped subscription unsubscribed");
}
