//! The one integration-test binary: every test starts the real `appserver` binary and talks to it
//! exactly as a client would, over stdio or WebSocket. Modules live in `suite/`.

#![allow(clippy::unwrap_used)]

mod suite;
