//! The server's PKI: a fresh CA, a server certificate for `localhost`/`127.0.0.1`, client certificates on demand,
//! and the rustls configuration (client certificates verified against the CA, optional).

use std::fmt;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls::server::{ServerConfig, WebPkiClientVerifier};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use kube_informer::Error;

/// A client certificate and its private key, PEM-encoded.
#[derive(Clone)]
pub struct ClientIdentity {
    /// The certificate (`CN` = user name), signed by the server's CA.
    pub cert_pem: String,
    /// The PKCS#8 private key.
    pub key_pem: String,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret.
        f.debug_struct("ClientIdentity")
            .field("key_pem", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// The CA (kept to sign client certificates) and the rustls server configuration.
pub(crate) struct Pki {
    pub(crate) ca_pem: String,
    ca: Issuer<'static, KeyPair>,
    pub(crate) config: Arc<ServerConfig>,
}

impl fmt::Debug for Pki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

fn tls_err(e: impl fmt::Display) -> Error {
    Error::InvalidInput(format!("embedded API server TLS setup: {e}"))
}

impl Pki {
    /// A new CA and a server certificate for `localhost` and `127.0.0.1`; client certificates are accepted when
    /// signed by the CA or by one of `extra_client_cas` (PEM bundles).
    #[cfg(test)]
    pub(crate) fn new(extra_client_cas: &[String]) -> Result<Pki, Error> {
        Pki::with_names(&["localhost".to_owned(), "127.0.0.1".to_owned()], extra_client_cas)
    }

    /// A new CA and a server certificate for `names` (DNS names and IP addresses); client certificates are accepted
    /// when signed by the CA or by one of `extra_client_cas` (PEM bundles).
    pub(crate) fn with_names(names: &[String], extra_client_cas: &[String]) -> Result<Pki, Error> {
        let ca_key = KeyPair::generate().map_err(tls_err)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
        ca_params.distinguished_name = DistinguishedName::new();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kube-informer-test-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(tls_err)?;
        let ca_pem = ca_cert.pem();
        let ca_der = ca_cert.der().clone();
        let ca = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().map_err(tls_err)?;
        let mut params = CertificateParams::new(names.to_vec()).map_err(tls_err)?;
        params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = params.signed_by(&server_key, &ca).map_err(tls_err)?;

        let provider = Arc::new(go_preference(rustls::crypto::ring::default_provider()));
        let mut roots = RootCertStore::empty();
        roots.add(ca_der.clone()).map_err(tls_err)?;
        for bundle in extra_client_cas {
            for cert in CertificateDer::pem_slice_iter(bundle.as_bytes()) {
                roots.add(cert.map_err(tls_err)?).map_err(tls_err)?;
            }
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated()
            .build()
            .map_err(tls_err)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![server_cert.der().clone(), ca_der], key)
            .map_err(tls_err)?;
        // The server's order decides, as in Go's crypto/tls (which kube-apiserver uses).
        config.ignore_client_order = true;
        Ok(Pki {
            ca_pem,
            ca,
            config: Arc::new(config),
        })
    }

    /// A client certificate for `user` (`CN`), with `groups` as `O` entries, as kube-apiserver reads them.
    pub(crate) fn issue_client(&self, user: &str, groups: &[&str]) -> Result<ClientIdentity, Error> {
        let key = KeyPair::generate().map_err(tls_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, user);
        for g in groups {
            params.distinguished_name.push(DnType::OrganizationName, *g);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.ca).map_err(tls_err)?;
        Ok(ClientIdentity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// One DER TLV: (tag, content, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The subject common name of a DER certificate (the user name kube-apiserver takes from a client certificate).
pub(crate) fn subject_common_name(der: &[u8]) -> Option<String> {
    subject_attributes(der, CN_OID)?.into_iter().next()
}

/// The subject organizations of a DER certificate (the groups kube-apiserver takes from a client certificate).
pub(crate) fn subject_organizations(der: &[u8]) -> Vec<String> {
    subject_attributes(der, O_OID).unwrap_or_default()
}

const CN_OID: &[u8] = &[0x55, 0x04, 0x03];
const O_OID: &[u8] = &[0x55, 0x04, 0x0a];

/// The values of the subject attributes `oid`, in order; `None` when the certificate cannot be read.
fn subject_attributes(der: &[u8], wanted: &[u8]) -> Option<Vec<String>> {
    const SEQUENCE: u8 = 0x30;
    const SET: u8 = 0x31;
    let (tag, cert, _) = tlv(der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, tbs, _) = tlv(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut rest = tbs;
    // [0] version (optional), serial, signature algorithm, issuer, validity, then the subject.
    let (tag, _, after) = tlv(rest)?;
    if tag == 0xa0 {
        rest = after;
    }
    for _ in 0..4 {
        rest = tlv(rest)?.2;
    }
    let (tag, mut subject, _) = tlv(rest)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut out = Vec::new();
    while !subject.is_empty() {
        let (tag, mut rdn, next) = tlv(subject)?;
        subject = next;
        if tag != SET {
            return None;
        }
        while !rdn.is_empty() {
            let (_, attr, next) = tlv(rdn)?;
            rdn = next;
            let (oid_tag, oid, value) = tlv(attr)?;
            if oid_tag == 0x06 && oid == wanted {
                let (vtag, v, _) = tlv(value)?;
                out.push(match vtag {
                    // BMPString: UTF-16BE.
                    0x1e => {
                        let units: Vec<u16> = v
                            .chunks(2)
                            .map(|c| Some(u16::from_be_bytes([c[0], *c.get(1)?])))
                            .collect::<Option<_>>()?;
                        String::from_utf16(&units).ok()?
                    }
                    _ => std::str::from_utf8(v).ok()?.to_owned(),
                });
            }
        }
    }
    Some(out)
}

/// `provider` with its cipher suites in the order Go's crypto/tls prefers on a machine with AES instructions:
/// AES-128-GCM before AES-256-GCM before ChaCha20-Poly1305. rustls lists AES-256 first, so a rustls client talking
/// to a rustls server would otherwise use AES-256, which kube-apiserver would not pick (and which costs both ends a
/// little more per byte).
fn go_preference(mut provider: rustls::crypto::CryptoProvider) -> rustls::crypto::CryptoProvider {
    let rank = |s: &rustls::SupportedCipherSuite| {
        let name = format!("{:?}", s.suite());
        if name.contains("AES_128_GCM") {
            0
        } else if name.contains("AES_256_GCM") {
            1
        } else {
            2
        }
    };
    // TLS 1.3 suites first, then TLS 1.2 ones, each group by that rank (the sort is stable).
    provider
        .cipher_suites
        .sort_by_key(|s| (matches!(s, rustls::SupportedCipherSuite::Tls12(_)), rank(s)));
    provider
}

/// A rustls client trusting `pki`'s CA, with rustls's default cipher-suite order.
#[cfg(test)]
pub(crate) fn client_for(pki: &Pki) -> rustls::ClientConnection {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    rustls::ClientConnection::new(Arc::new(config), name).unwrap()
}

#[cfg(test)]
mod tests {
    use kube_informer_test_support::tls::handshake;

    use super::*;

    #[test]
    fn picks_aes_128_gcm_as_kube_apiserver_does_whatever_the_client_prefers() {
        let pki = Pki::new(&[]).unwrap();
        let mut client = client_for(&pki);
        let mut server = rustls::ServerConnection::new(pki.config.clone()).unwrap();
        handshake(&mut client, &mut server);
        // rustls clients list TLS13_AES_256_GCM_SHA384 first.
        let suite = server.negotiated_cipher_suite().unwrap().suite();
        assert_eq!(suite, rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    }

    #[test]
    fn issues_client_certificates_whose_cn_is_the_user() {
        let pki = Pki::new(&[]).unwrap();
        assert!(pki.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let id = pki.issue_client("alice", &["system:masters"]).unwrap();
        let der = CertificateDer::from_pem_slice(id.cert_pem.as_bytes()).unwrap();
        assert_eq!(subject_common_name(&der).as_deref(), Some("alice"));
        assert!(!format!("{id:?}").contains("PRIVATE"));
    }

    #[test]
    fn garbage_certificates_have_no_name() {
        for bad in [
            &[][..],
            &[0x30],
            &[0x30, 0x85, 1, 1, 1, 1, 1],
            &[0x30, 0x02, 0x30, 0x00],
            &[0x04, 0x00],
        ] {
            assert_eq!(subject_common_name(bad), None);
        }
    }

    #[test]
    fn rejects_a_bad_extra_ca() {
        let bad = "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n".to_owned();
        assert!(Pki::new(&[bad]).is_err());
    }
}
