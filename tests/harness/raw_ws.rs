//! A WebSocket client at the byte level, for tests that need to control what goes on the wire:
//! several frames in one TCP write, unmasked or malformed frames, a socket that stops reading.

use std::net::SocketAddr;

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::TIMEOUT;

/// The opening handshake's request (RFC 6455 section 4.1), for `/ws` at `addr`.
pub fn upgrade_request(addr: SocketAddr) -> String {
    format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// Connects to `addr` and completes the opening handshake; fails unless the answer is 101.
pub async fn connect(addr: SocketAddr) -> Result<TcpStream> {
    tokio::time::timeout(TIMEOUT, async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(upgrade_request(addr).as_bytes()).await?;
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await?;
            head.push(byte[0]);
        }
        if !head.starts_with(b"HTTP/1.1 101") {
            bail!("not upgraded: {}", String::from_utf8_lossy(&head));
        }
        Ok(stream)
    })
    .await
    .context("the opening handshake")?
}

/// A client-to-server text frame (clients must mask).
pub fn masked_text_frame(payload: &[u8]) -> Vec<u8> {
    let mask = [0x11u8, 0x22, 0x33, 0x44];
    let mut frame = vec![0x81];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= u16::MAX as usize => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

/// The next server frame, whole (servers do not mask): its opcode and payload.
pub async fn read_frame(stream: &mut (impl AsyncRead + Unpin)) -> Result<(u8, Vec<u8>)> {
    tokio::time::timeout(TIMEOUT, async {
        let mut header = [0u8; 2];
        stream.read_exact(&mut header).await?;
        let len = match header[1] & 0x7f {
            126 => {
                let mut len = [0u8; 2];
                stream.read_exact(&mut len).await?;
                u64::from(u16::from_be_bytes(len))
            }
            127 => {
                let mut len = [0u8; 8];
                stream.read_exact(&mut len).await?;
                u64::from_be_bytes(len)
            }
            len => u64::from(len),
        };
        let mut payload = vec![0u8; usize::try_from(len)?];
        stream.read_exact(&mut payload).await?;
        Ok((header[0] & 0x0f, payload))
    })
    .await
    .context("a frame from the server")?
}
