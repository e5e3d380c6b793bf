//! The model client's connection errors name their cause (refused, an untrusted certificate, no
//! answer in time) rather than reqwest's "error sending request for url".

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::infra::config::ContextSettings;

fn provider(base_url: String) -> ModelProvider {
    ModelProvider::new(ModelSettings {
        model: "m".into(),
        base_url,
        api_key: None,
        max_steps: 1,
        max_retries: 0,
        idle_timeout: Duration::from_millis(300),
        instructions: None,
        context: ContextSettings { window: None, output_reserve: None, auto_compact: false },
        input_modalities: None,
        mcp_tools_budget: 10,
    })
    .unwrap()
}

async fn connect_error(base_url: String) -> String {
    match provider(base_url).stream_chat(&json!({ "model": "m", "messages": [] })).await {
        Err(err @ ModelError::Connect { .. }) => err.to_string(),
        Err(other) => panic!("not a connection error: {other}"),
        Ok(_) => panic!("the request succeeded"),
    }
}

#[tokio::test]
async fn a_refused_connection_says_so() {
    // Bound and not listening: refused, and no other test's server can take the port meanwhile
    // (a port freed right after binding it can be).
    let held = tokio::net::TcpSocket::new_v4().unwrap();
    held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let closed = held.local_addr().unwrap();
    let err = connect_error(format!("http://{closed}/v1")).await;
    assert!(err.contains("Connection refused"), "{err}");
}

#[tokio::test]
async fn an_untrusted_certificate_says_so() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().self_signed(&key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()))
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // One handshake, which the client abandons on the certificate.
    std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut tls = rustls::ServerConnection::new(Arc::new(config)).unwrap();
        let mut stream = rustls::Stream::new(&mut tls, &mut socket);
        let _ = stream.read(&mut [0; 64]);
    });
    let err = connect_error(format!("https://{addr}/v1")).await;
    assert!(err.contains("certificate") && err.contains("UnknownIssuer"), "{err}");
}

#[tokio::test]
async fn no_answer_in_time_says_how_long_was_waited() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts and reads, never answers; holds the socket until the test is done.
    let (done, wait) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let _ = socket.read(&mut [0; 4096]);
        let _ = wait.recv();
        let _ = socket.write_all(b"");
    });
    let err = connect_error(format!("http://{addr}/v1")).await;
    drop(done);
    assert!(err.contains("no response within 0.3 s"), "{err}");
}
