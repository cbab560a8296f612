//! What a user reads when something is wrong: each message pinned against a peer that really answers that way — the
//! embedded API server over HTTPS, scripted TCP and TLS peers sending what Go's servers and plain HTTP servers send,
//! a closed port.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use kube_informer::client::{Api, Client, Config};
use kube_informer::object::core::ConfigMap;
use kube_informer::{Error, TransportErrorKind};
use kube_informer_apiserver::ApiServer;

const TOKEN: &str = "messages-test-token-0123456789abcdef";

fn list_error(config: Config) -> Error {
    Api::<ConfigMap>::default_namespaced(Client::new(config).unwrap())
        .list(&Default::default())
        .unwrap_err()
}

fn kind(e: &Error) -> Option<TransportErrorKind> {
    match e {
        Error::Transport(t) => Some(t.kind),
        _ => None,
    }
}

fn https_server() -> ApiServer {
    ApiServer::builder().https().token(TOKEN, "alice").start().unwrap()
}

/// A client config for `server`'s URL, trusting `ca`.
fn config_with_ca(server: &ApiServer, ca: &str) -> Config {
    Config::new(server.url())
        .proxy(None)
        .token(TOKEN)
        .ca_pem(ca.as_bytes().to_vec())
}

/// `127.0.0.1:<port>` of a URL.
fn endpoint(url: &str) -> &str {
    url.split("://").nth(1).unwrap().trim_end_matches('/')
}

/// A one-connection peer: reads what the client sends first, writes `answer`, closes.
fn scripted_peer(answer: &'static [u8]) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let join = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut first = [0u8; 1024];
        let _ = conn.read(&mut first);
        let _ = conn.write_all(answer);
    });
    (addr, join)
}

#[test]
fn a_refused_connection_names_host_and_port_and_what_to_check() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = list_error(Config::new(format!("https://127.0.0.1:{port}")).proxy(None));
    assert_eq!(kind(&err), Some(TransportErrorKind::ConnectionRefused), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "connection refused: GET /api/v1/namespaces/default/configmaps on 127.0.0.1:{port}: "
        )),
        "{text}"
    );
    assert!(
        text.ends_with("nothing accepts connections there: is the API server running, and is the server URL right?"),
        "{text}"
    );
}

#[test]
fn an_unresolvable_host_is_named_with_its_port() {
    let config = Config::new("https://no-such-host.invalid:6443")
        .proxy(None)
        .connect_timeout(Duration::from_secs(3));
    let err = list_error(config);
    // Without a DNS server the lookup may time out instead of failing: either way the host and port are named.
    assert!(
        matches!(kind(&err), Some(TransportErrorKind::Dns | TransportErrorKind::Timeout)),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("GET /api/v1/namespaces/default/configmaps on no-such-host.invalid:6443: "),
        "{text}"
    );
    if kind(&err) == Some(TransportErrorKind::Dns) {
        assert!(text.ends_with(" — check the host name of the server URL"), "{text}");
    }
}

#[test]
fn a_certificate_from_an_unknown_authority_points_at_certificate_authority() {
    let server = https_server();
    let foreign_ca = std::fs::read_to_string(kube_informer_test_support::fixture_in(
        env!("CARGO_MANIFEST_DIR"),
        "tls/client-ca.pem",
    ))
    .unwrap();
    let err = list_error(config_with_ca(&server, &foreign_ca));
    assert_eq!(kind(&err), Some(TransportErrorKind::Tls), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "TLS error: GET /api/v1/namespaces/default/configmaps on {}: the server certificate of 127.0.0.1 is not \
             signed by a trusted certificate authority — check certificate-authority / certificate-authority-data \
             (unknown issuer)",
            endpoint(server.url())
        )
    );
}

/// kubeadm and kind name every cluster CA `kubernetes`: the CA of an earlier cluster of the same name, left in a
/// kubeconfig, names the right issuer but holds another key. rustls calls that a bad signature.
#[test]
fn the_ca_of_another_cluster_with_the_same_name_points_at_certificate_authority() {
    let server = https_server();
    let earlier = https_server();
    let err = list_error(config_with_ca(&server, earlier.ca_pem().unwrap()));
    assert_eq!(kind(&err), Some(TransportErrorKind::Tls), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(
            "the server certificate of 127.0.0.1 is not signed by the configured certificate authority (it names the \
             same issuer but was signed by another key: a certificate-authority / certificate-authority-data from an \
             earlier cluster?)"
        ),
        "{text}"
    );
    assert!(!text.contains("BadSignature"), "{text}");
}

#[test]
fn a_certificate_for_another_name_points_at_tls_server_name() {
    let server = https_server();
    let config = config_with_ca(&server, server.ca_pem().unwrap()).tls_server_name("api.example.com");
    let err = list_error(config);
    assert_eq!(kind(&err), Some(TransportErrorKind::Tls), "{err}");
    assert!(
        err.to_string().ends_with(
            "the server certificate is not valid for api.example.com — connect by a name the certificate carries, \
             or set tls-server-name"
        ),
        "{err}"
    );
}

#[test]
fn an_expired_server_certificate_is_called_expired() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_pem = ca_params.self_signed(&ca_key).unwrap().pem();
    let ca = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let cert = params.signed_by(&key, &ca).unwrap();
    let server_config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let peer = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut tls = rustls::ServerConnection::new(Arc::new(server_config)).unwrap();
        // The client refuses the certificate and hangs up: the handshake's error is expected.
        let _ = tls.complete_io(&mut conn);
    });
    let config = Config::new(format!("https://{addr}"))
        .proxy(None)
        .ca_pem(ca_pem.into_bytes());
    let err = list_error(config);
    peer.join().unwrap();
    assert_eq!(kind(&err), Some(TransportErrorKind::Tls), "{err}");
    assert!(
        err.to_string().ends_with(
            "the server certificate of 127.0.0.1 has expired — the server must renew it (check the clock of this \
             machine too)"
        ),
        "{err}"
    );
}

/// A plain-HTTP client pointed at a TLS server that answers with a TLS alert and hangs up, as rustls does (the
/// embedded server now answers as Go's listener does: the next test).
#[test]
fn http_to_an_https_port_is_told_to_use_https() {
    // A fatal `protocol_version` alert record (TLS 1.2 framing).
    let (addr, peer) = scripted_peer(b"\x15\x03\x03\x00\x02\x02\x46");
    let url = format!("http://{addr}");
    let err = list_error(Config::new(url.as_str()).proxy(None));
    peer.join().unwrap();
    let text = err.to_string();
    assert!(
        text.ends_with(&format!(
            " — {} may be an HTTPS port: the server URL says http://; try https://",
            endpoint(&url)
        )),
        "{text}"
    );
}

/// Go's TLS listener (kube-apiserver's) answers a plain HTTP request with a 400 of its own.
#[test]
fn http_to_a_go_https_server_is_told_to_use_https() {
    let (addr, peer) =
        scripted_peer(b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
    let err = list_error(Config::new(format!("http://{addr}")).proxy(None));
    peer.join().unwrap();
    assert_eq!(err.code(), Some(400), "{err}");
    assert_eq!(
        err.to_string(),
        "API error 400 BadRequest: the server speaks HTTPS and the server URL says http:// — use https:// (it \
         answered: Client sent an HTTP request to an HTTPS server.)"
    );
}

/// The reverse: an https:// URL pointed at a plain HTTP server.
#[test]
fn https_to_a_plain_http_server_is_told_so() {
    let (addr, peer) = scripted_peer(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    let err = list_error(Config::new(format!("https://{addr}")).proxy(None));
    peer.join().unwrap();
    assert_eq!(kind(&err), Some(TransportErrorKind::Tls), "{err}");
    assert!(
        err.to_string().ends_with(
            "127.0.0.1 did not answer in TLS (it may serve plain HTTP: the server URL says https://; check the scheme \
             and the port)"
        ),
        "{err}"
    );
}
