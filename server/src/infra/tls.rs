//! The process's one TLS crypto provider (rustls on ring) and the HTTP client builder that relies
//! on it: reqwest and rmcp are compiled without a provider of their own (no aws-lc-rs C build), so
//! every client is built after ring is installed, in the binary as in unit tests.

/// Installs ring as the process-wide rustls provider; already installed is fine.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A `reqwest` client builder, with the crypto provider installed first (reqwest panics at
/// `build()` when none is).
pub(crate) fn http_client() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_builds_with_only_ring_compiled_in() {
        let client = super::http_client().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
