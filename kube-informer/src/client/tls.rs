//! TLS: the rustls client configuration built from a [`Config`].
//!
//! * Trust: the configured certificate authorities only (`certificate-authority(-data)`), or the Mozilla roots
//!   (webpki-roots) when none is configured — never both, so a cluster CA cannot be bypassed by a public one.
//! * Insecure (`insecure-skip-tls-verify`) only on explicit opt-in, with a `warn!` naming the server.
//! * Client certificates are served by [`ClientCertSlot`], which an exec plugin can refill with the certificates it
//!   issues; a key that does not match its certificate is a configuration error, never a panic.
//! * `tls-server-name` replaces the URL's host for SNI and verification.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use log::warn;
use parking_lot::RwLock;
use rustls::client::ResolvesClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::config::Config;
use super::secret::Secret;
use crate::Result;

/// The crypto provider: ring.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Everything the TLS connector needs.
pub(crate) struct TlsSetup {
    /// For the API server.
    pub(crate) config: Arc<ClientConfig>,
    /// The name the server certificate must carry (`tls-server-name`, else the URL's host).
    pub(crate) server_name: ServerName<'static>,
    /// The host of the API server URL: connections to any other host (an `https://` proxy) use `other_hosts`.
    pub(crate) cluster_host: String,
    /// For other hosts: Mozilla roots, no client certificate.
    pub(crate) other_hosts: Arc<ClientConfig>,
    /// The client certificate presented to the API server (exec plugins refill it).
    pub(crate) identity: Arc<ClientCertSlot>,
}

impl fmt::Debug for TlsSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSetup")
            .field("server_name", &self.server_name)
            .field("client_certificate", &self.identity.has_certs())
            .finish()
    }
}

/// Parses the certificates of a PEM bundle.
pub(crate) fn parse_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a valid PEM certificate bundle ({})", pem_error(&e)))?;
    if certs.is_empty() {
        return Err("no PEM certificate found (expected -----BEGIN CERTIFICATE-----)".into());
    }
    Ok(certs)
}

/// Describes a PEM error without quoting the input.
fn pem_error(e: &rustls::pki_types::pem::Error) -> &'static str {
    use rustls::pki_types::pem::Error as E;
    match e {
        E::MissingSectionEnd { .. } => "a section has no END line",
        E::IllegalSectionStart { .. } => "malformed BEGIN line",
        E::Base64Decode(_) => "bad base64 inside a PEM section",
        E::NoItemsFound => "no PEM section found",
        _ => "unreadable PEM",
    }
}

/// The root store from a CA bundle.
fn root_store(pem: &[u8]) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    let certs = parse_certificates(pem)?;
    let n = certs.len();
    let (added, _ignored) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!("none of the {n} PEM certificates is a usable CA certificate"));
    }
    Ok(store)
}

/// A certificate chain with its private key, checked to match.
pub(crate) fn certified_key(
    cert_pem: &[u8],
    key_pem: &Secret,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, String> {
    let chain = parse_certificates(cert_pem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.expose()).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => "no private key found (expected a PEM RSA, EC or PKCS#8 \
                                                        private key; encrypted keys are not supported)"
            .to_owned(),
        e => format!("unreadable private key ({})", pem_error(&e)),
    })?;
    match CertifiedKey::from_der(chain, key, provider) {
        Ok(k) => Ok(Arc::new(k)),
        Err(rustls::Error::InconsistentKeys(_)) => {
            Err("the client certificate and the client key do not match (the key is not the certificate's)".into())
        }
        Err(e) => Err(format!("unusable client certificate or key: {e}")),
    }
}

/// Parses the TLS material of `config` (the CA bundle, the client certificate and key) and reports the first
/// problem at its origin.
pub(crate) fn check_material(config: &Config) -> Result<()> {
    if let Some(ca) = &config.ca_pem {
        root_store(&ca.value).map_err(|m| config.error_at(&ca.origin, m))?;
    }
    if let Some(id) = &config.client_identity {
        parse_certificates(&id.cert_pem.value).map_err(|m| config.error_at(&id.cert_pem.origin, m))?;
        certified_key(&id.cert_pem.value, &id.key_pem.value, &provider())
            .map_err(|m| config.error_at(&id.key_pem.origin, m))?;
    }
    if let Some(name) = &config.tls_server_name {
        ServerName::try_from(name.value.clone())
            .map_err(|_| config.error_at(&name.origin, format!("{:?} is not a valid server name", name.value)))?;
    }
    Ok(())
}

/// Builds the TLS setup for `config`, whose URL host is `host`.
pub(crate) fn build(config: &Config, host: &str) -> Result<TlsSetup> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::Error::InvalidInput(format!("TLS setup: {e}")))?;
    let builder = if config.insecure.is_some() {
        warn!(
            "TLS certificate verification is disabled for {} (insecure-skip-tls-verify): anyone on the network path \
             can impersonate the API server",
            config.cluster_url()
        );
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert(Arc::clone(&provider))))
    } else {
        let roots = match &config.ca_pem {
            Some(ca) => root_store(&ca.value).map_err(|m| config.error_at(&ca.origin, m))?,
            None => webpki_roots_store(),
        };
        builder.with_root_certificates(roots)
    };
    let identity = Arc::new(ClientCertSlot::default());
    if let Some(id) = &config.client_identity {
        let key = certified_key(&id.cert_pem.value, &id.key_pem.value, &provider)
            .map_err(|m| config.error_at(&id.key_pem.origin, m))?;
        identity.set(Some(key));
    }
    let mut tls = builder.with_client_cert_resolver(Arc::clone(&identity) as Arc<dyn ResolvesClientCert>);
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];

    let bare_host = super::transport::bare_host(host);
    let server_name = match &config.tls_server_name {
        Some(name) => ServerName::try_from(name.value.clone())
            .map_err(|_| config.error_at(&name.origin, format!("{:?} is not a valid server name", name.value)))?,
        None => ServerName::try_from(bare_host.to_owned()).map_err(|_| {
            config.error_at(
                &config.cluster_url.origin,
                format!("{bare_host:?} cannot be used as a TLS server name"),
            )
        })?,
    };
    let mut other = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| crate::Error::InvalidInput(format!("TLS setup: {e}")))?
        .with_root_certificates(webpki_roots_store())
        .with_no_client_auth();
    other.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsSetup {
        config: Arc::new(tls),
        server_name,
        cluster_host: bare_host.to_ascii_lowercase(),
        other_hosts: Arc::new(other),
        identity,
    })
}

fn webpki_roots_store() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// The client certificate to present; replaced when an exec plugin issues a new one.
#[derive(Default)]
pub(crate) struct ClientCertSlot {
    key: RwLock<Option<Arc<CertifiedKey>>>,
    /// Incremented by every `set`: transports compare it to know when their pooled connections carry an old
    /// identity.
    version: AtomicU64,
}

impl ClientCertSlot {
    pub(crate) fn set(&self, key: Option<Arc<CertifiedKey>>) {
        let mut slot = self.key.write();
        *slot = key;
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// How many times the certificate was set.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// True when `key` is the certificate already presented.
    pub(crate) fn holds(&self, key: &Arc<CertifiedKey>) -> bool {
        self.key.read().as_ref().is_some_and(|k| Arc::ptr_eq(k, key))
    }
}

impl fmt::Debug for ClientCertSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertSlot")
            .field("present", &self.key.read().is_some())
            .finish()
    }
}

impl ResolvesClientCert for ClientCertSlot {
    fn resolve(&self, _root_hint_subjects: &[&[u8]], _sigschemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.key.read().clone()
    }

    fn has_certs(&self) -> bool {
        self.key.read().is_some()
    }
}

/// Accepts any server certificate (`insecure-skip-tls-verify`). Handshake signatures are still checked, so the
/// connection is at least encrypted to whoever holds the presented certificate's key.
#[derive(Debug)]
struct AcceptAnyServerCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A readable explanation of a TLS failure, with the kubeconfig field to look at.
pub(crate) fn explain(e: &rustls::Error, server_name: &str) -> String {
    use rustls::{CertificateError, Error as E};
    match e {
        E::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
            "the server certificate of {server_name} is not signed by a trusted certificate authority — check \
             certificate-authority / certificate-authority-data (unknown issuer)"
        ),
        E::InvalidCertificate(CertificateError::NotValidForName)
        | E::InvalidCertificate(CertificateError::NotValidForNameContext { .. }) => format!(
            "the server certificate is not valid for {server_name} — connect by a name the certificate carries, or \
             set tls-server-name"
        ),
        // The configured CA has the issuer's name but not its key: typically the CA of an earlier cluster of the same
        // name (kubeadm and kind name every CA `kubernetes`) left in the kubeconfig.
        E::InvalidCertificate(CertificateError::BadSignature) => format!(
            "the server certificate of {server_name} is not signed by the configured certificate authority (it names \
             the same issuer but was signed by another key: a certificate-authority / certificate-authority-data \
             from an earlier cluster?) — check certificate-authority / certificate-authority-data"
        ),
        E::InvalidCertificate(CertificateError::Expired)
        | E::InvalidCertificate(CertificateError::ExpiredContext { .. }) => format!(
            "the server certificate of {server_name} has expired — the server must renew it (check the clock of \
             this machine too)"
        ),
        // The first bytes back were not a TLS record: an HTTP server answering in plain text.
        E::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => format!(
            "{server_name} did not answer in TLS (it may serve plain HTTP: the server URL says https://; check the \
             scheme and the port)"
        ),
        E::InvalidCertificate(CertificateError::NotValidYet)
        | E::InvalidCertificate(CertificateError::NotValidYetContext { .. }) => {
            format!("the server certificate of {server_name} is not valid yet (check the clock)")
        }
        E::AlertReceived(alert) => format!(
            "{server_name} refused the TLS handshake ({alert:?}) — a missing, expired or untrusted client \
             certificate is the usual cause"
        ),
        other => format!("TLS handshake with {server_name} failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bundles_without_certificates() {
        assert!(
            parse_certificates(b"")
                .unwrap_err()
                .contains("no PEM certificate found")
        );
        assert!(
            parse_certificates(b"-----BEGIN CERTIFICATE-----\nAAAA\n")
                .unwrap_err()
                .contains("END")
        );
    }

    #[test]
    fn key_errors_never_quote_the_key() {
        let key =
            Secret::from("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END PRIVATE KEY-----\n");
        let cert = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let err = certified_key(cert, &key, &provider()).unwrap_err();
        assert!(!err.contains("c2VjcmV0"), "{err}");
        let err = certified_key(cert, &Secret::from("nothing"), &provider()).unwrap_err();
        assert!(err.contains("no private key found"), "{err}");
    }
}
