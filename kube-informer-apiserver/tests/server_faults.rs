//! The embedded API server over real HTTP: auth, discovery, the kubeconfig it writes, fault injection,
//! connections, restart and shutdown. Storage, list, watch and writes are in `server.rs`.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::object::ApiResource;
use kube_informer_apiserver::{AccessRule, ApiServer, Fault, ResourceSpec, Verb};
use raw_http::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

// ----- auth, discovery, kubeconfig -----

#[test]
fn tokens_authenticate_and_rules_authorize() {
    let server = ApiServer::builder()
        .token("alice-token", "alice")
        .token("bob-token", "bob")
        .rule(AccessRule::user("alice"))
        .rule(
            AccessRule::user("bob")
                .verbs(&["list", "watch"])
                .resources(&["configmaps"]),
        )
        .start()
        .unwrap();
    let url = cms(&server, "default");
    let call = |token: Option<&str>, method: &str, url: &str| -> (u16, Value) {
        let a = agent();
        let auth = token.map(|t| format!("Bearer {t}"));
        let r = if method == "GET" {
            let mut b = a.get(url);
            if let Some(h) = &auth {
                b = b.header("Authorization", h);
            }
            b.call()
        } else {
            let mut b = a.post(url).header("Content-Type", "application/json");
            if let Some(h) = &auth {
                b = b.header("Authorization", h);
            }
            b.send(r#"{"metadata":{"name":"x"}}"#)
        }
        .unwrap();
        (
            r.status().as_u16(),
            serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap(),
        )
    };
    let (code, st) = call(None, "GET", &url);
    assert_eq!((code, st["reason"].as_str()), (401, Some("Unauthorized")));
    assert_eq!(call(Some("wrong"), "GET", &url).0, 401);
    assert_eq!(call(Some("alice-token"), "GET", &url).0, 200);
    assert_eq!(call(Some("bob-token"), "GET", &url).0, 200);
    let (code, st) = call(Some("bob-token"), "POST", &url);
    assert_eq!((code, st["reason"].as_str()), (403, Some("Forbidden")));
    assert_eq!(
        st["message"],
        "configmaps is forbidden: User \"bob\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(
        call(Some("bob-token"), "GET", &format!("{}/api/v1/secrets", server.url())).0,
        403
    );
    assert_eq!(call(Some("alice-token"), "POST", &url).0, 201);
    let users: Vec<_> = server
        .requests()
        .records()
        .into_iter()
        .map(|r| (r.user, r.code))
        .collect();
    assert!(users.contains(&(Some("bob".into()), 403)));
    // The kubeconfig carries the first user's token.
    let cfg: Value = serde_saphyr::from_str(&std::fs::read_to_string(server.kubeconfig_path()).unwrap()).unwrap();
    assert_eq!(cfg["users"][0]["user"]["token"], "alice-token");
    assert_eq!(
        (server.kubeconfig_user(), server.token_for("bob")),
        ("alice", Some("bob-token"))
    );
    assert_eq!(cfg["clusters"][0]["cluster"]["server"], server.url());
    assert_eq!(cfg["current-context"], cfg["contexts"][0]["name"]);
}

fn tls_agent(server: &ApiServer, identity: Option<&kube_informer_apiserver::ClientIdentity>) -> ureq::Agent {
    use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};
    let ca = Certificate::from_pem(server.ca_pem().unwrap().as_bytes()).unwrap();
    let mut tls = TlsConfig::builder().root_certs(RootCerts::new_with_certs(&[ca]));
    if let Some(id) = identity {
        let cert = Certificate::from_pem(id.cert_pem.as_bytes()).unwrap();
        let key = PrivateKey::from_pem(id.key_pem.as_bytes()).unwrap();
        tls = tls.client_cert(Some(ClientCert::new_with_certs(&[cert], key)));
    }
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(WAIT))
            .tls_config(tls.build())
            .build(),
    )
}

#[test]
fn https_with_client_certificates_and_tokens() {
    let server = ApiServer::builder()
        .https()
        .client_cert("carol")
        .token("dave-token", "dave")
        .start()
        .unwrap();
    assert!(server.url().starts_with("https://"));
    let url = cms(&server, "default");
    let carol = tls_agent(&server, server.client_identity("carol"));
    let mark = server.requests().mark();
    assert_eq!(send_with(&carol, "GET", &url, "", "").0, 200);
    assert_eq!(server.requests().since(mark)[0].user.as_deref(), Some("carol"));
    let anonymous = tls_agent(&server, None);
    assert_eq!(send_with(&anonymous, "GET", &url, "", "").0, 401);
    let r = anonymous
        .get(&url)
        .header("Authorization", "Bearer dave-token")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A certificate issued later for another user works too; kubeconfigs embed the CA and a user's identity.
    let erin = server.issue_client_cert("erin", &["devs"]).unwrap();
    assert_eq!(send_with(&tls_agent(&server, Some(&erin)), "GET", &url, "", "").0, 200);
    let read = |p: &std::path::Path| -> Value { serde_saphyr::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let cfg = read(server.kubeconfig_path());
    assert!(cfg["clusters"][0]["cluster"]["certificate-authority-data"].is_string());
    assert_eq!(
        cfg["users"][0]["user"]["token"], "dave-token",
        "the first token's user by default"
    );
    let cfg = read(&server.kubeconfig_for("carol").unwrap());
    assert!(cfg["users"][0]["user"]["client-certificate-data"].is_string());
    assert!(cfg["users"][0]["user"]["client-key-data"].is_string());
    assert!(
        ApiServer::builder().client_cert("x").start().is_err(),
        "client certificates need HTTPS"
    );
}

#[test]
fn discovery_resolves_plurals() {
    let widgets = ApiResource::new("example.com", "v1alpha1", "Widget", "widgets", false);
    let server = ApiServer::builder()
        .resource(ResourceSpec::new(widgets.clone()).short_name("wd"))
        .namespace("x")
        .start()
        .unwrap();
    let (_, api) = get(&format!("{}/api", server.url()));
    assert_eq!(api["versions"], json!(["v1"]));
    let (_, apis) = get(&format!("{}/apis", server.url()));
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(
        groups.contains(&"example.com") && groups.contains(&"coordination.k8s.io"),
        "{groups:?}"
    );
    let (_, core) = get(&format!("{}/api/v1", server.url()));
    let cm = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "configmaps")
        .unwrap()
        .clone();
    assert_eq!(
        (cm["kind"].as_str(), cm["namespaced"].as_bool()),
        (Some("ConfigMap"), Some(true))
    );
    let (code, list) = get(&format!("{}/apis/example.com/v1alpha1", server.url()));
    assert_eq!((code, list["resources"][0]["kind"].as_str()), (200, Some("Widget")));
    assert_eq!(
        get(&format!("{}/apis/example.com", server.url())).1["preferredVersion"]["version"],
        "v1alpha1"
    );
    assert_eq!(get(&format!("{}/apis/nope.io/v1", server.url())).0, 404);
    assert_eq!(get(&format!("{}/version", server.url())).1["major"], "1");
    assert_eq!(
        get(&format!("{}/healthz", server.url())),
        (200, Value::String("ok".into()))
    );
    // The custom resource is served, cluster-scoped.
    let (code, _) = post(
        &format!("{}/apis/example.com/v1alpha1/widgets", server.url()),
        &json!({"metadata": {"name": "w"}}),
    );
    assert_eq!(code, 201);
    assert_eq!(server.get_json(&widgets, None, "w").unwrap()["kind"], "Widget");
    // A resource registered while running is served and discovered at once.
    server.register(ApiResource::new("example.com", "v1", "Gadget", "gadgets", true));
    let (code, _) = post(
        &format!("{}/apis/example.com/v1/namespaces/x/gadgets", server.url()),
        &json!({"metadata": {"name": "g"}}),
    );
    assert_eq!(code, 201);
    let (_, group) = get(&format!("{}/apis/example.com", server.url()));
    assert_eq!(group["versions"].as_array().unwrap().len(), 2);
}

#[test]
fn kubeconfig_is_removed_with_the_server() {
    let server = ApiServer::start().unwrap();
    let path = server.kubeconfig_path().to_owned();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(server.url()));
    drop(server);
    assert!(!path.exists());
}

// ----- faults -----

#[test]
fn error_faults_answer_the_next_matching_requests() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    server.inject(Fault::list("configmaps").error(429).retry_after(2).times(2));
    server.inject(Fault::watch("secrets").error(500));
    server.inject(Fault::any_request().error(503));
    for _ in 0..2 {
        let r = agent().get(&url).call().unwrap();
        assert_eq!(r.status().as_u16(), 429);
        assert_eq!(r.headers()["retry-after"], "2");
        let st: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
        assert_eq!(
            (st["reason"].as_str(), st["details"]["retryAfterSeconds"].as_u64()),
            (Some("TooManyRequests"), Some(2))
        );
    }
    assert_eq!(get(&url).0, 503, "the next fault in line");
    assert_eq!(get(&url).0, 200);
    assert_eq!(server.pending_faults(), 1, "the watch fault waits for a watch");
    let (code, st) = get(&format!("{}/api/v1/secrets?watch=1", server.url()));
    assert_eq!((code, st["reason"].as_str()), (500, Some("InternalError")));
    let faulted: Vec<_> = server
        .requests()
        .records()
        .into_iter()
        .filter(|r| r.fault.is_some())
        .collect();
    assert_eq!(faulted.len(), 4);
}

#[test]
fn watch_cuts_tears_and_garbage() {
    let server = ApiServer::start().unwrap();
    for n in ["a", "b", "c"] {
        make(&server, "default", n, json!({}));
    }
    let path = "/api/v1/configmaps?watch=1";
    server.inject(Fault::watch("configmaps").cut_after_events(2));
    let mut w = Raw::watch(&server, path);
    w.event();
    w.event();
    assert!(matches!(w.next(), Next::Cut(p) if p.is_empty()));

    server.inject(Fault::watch("configmaps").close_mid_object_after_events(1));
    let mut w = Raw::watch(&server, path);
    assert_eq!(summary(&w.event()), ev("ADDED", "a"));
    match w.next() {
        Next::Cut(torn) => {
            assert!(
                !torn.is_empty() && torn.starts_with(br#"{"type":"ADDED","object":"#),
                "{torn:?}"
            );
            assert!(serde_json::from_slice::<Value>(&torn).is_err());
        }
        other => panic!("expected a torn event, got {other:?}"),
    }

    server.inject(Fault::watch("configmaps").garbage_after_events(1, b"}{ not json\n"));
    let mut w = Raw::watch(&server, path);
    w.event();
    assert!(matches!(w.next(), Next::Line(l) if l == b"}{ not json"));
    assert_eq!(
        summary(&w.event()),
        ev("ADDED", "b"),
        "the stream goes on after the garbage"
    );

    // Cut after bytes, on a list: the body stops short of its Content-Length.
    server.inject(Fault::list("configmaps").cut_after_bytes(100));
    let mut r = Raw::request(server.addr(), "GET", "/api/v1/configmaps");
    let full: usize = r.header("content-length").unwrap().parse().unwrap();
    assert_eq!(r.body().len(), 100);
    assert!(full > 100);
    server.inject(Fault::any_request().cut_after_events(0));
    assert_eq!(
        Raw::request(server.addr(), "GET", "/api/v1/configmaps").code,
        0,
        "cut before any answer"
    );
}

#[test]
fn stalls_last_until_cleared() {
    let server = ApiServer::start().unwrap();
    make(&server, "default", "a", json!({}));
    server.inject(Fault::list("configmaps").stall());
    let url = cms(&server, "default");
    let client = std::thread::spawn(move || get(&url).0);
    eventually("the stall to begin", || server.pending_faults() == 0);
    server.clear_faults();
    assert_eq!(client.join().unwrap(), 200);
    // A stall for a time ends by itself.
    server.inject(Fault::any_request().stall().lasting(Duration::from_millis(10)));
    assert_eq!(get(&cms(&server, "default")).0, 200);
    assert_eq!(server.pending_faults(), 0);

    // A watch that stalls after one event delivers the rest once released.
    server.inject(Fault::watch("configmaps").stall_after_events(1));
    let mut w = Raw::watch(&server, "/api/v1/configmaps?watch=1");
    assert_eq!(summary(&w.event()), ev("ADDED", "a"));
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    make(&server, "default", "b", json!({}));
    server.clear_faults();
    assert_eq!(summary(&w.event()), ev("ADDED", "b"));
}

#[test]
fn a_stalled_write_whose_client_hangs_up_is_dropped_not_served_late() {
    // As kube-apiserver cancels a request's context when its client goes away: a write aborted by its client while
    // the server held it is never applied.
    let server = ApiServer::start().unwrap();
    server.inject(Fault::on(Some(Verb::Create), Some("configmaps")).stall());
    let mark = server.requests().mark();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}).to_string();
    let mut conn = TcpStream::connect(server.addr()).unwrap();
    write!(
        conn,
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    eventually("the server holds the write", || server.pending_faults() == 0);
    drop(conn); // the client gives up
    assert!(
        server.requests().wait_for(mark, WAIT, |records| records
            .iter()
            .any(|r| r.is(Verb::Create, "configmaps"))),
        "the dropped write is logged"
    );
    let logged = server.requests().since(mark);
    assert_eq!((logged.len(), logged[0].code), (1, 0), "{logged:?}");
    server.clear_faults();
    assert_eq!(
        get(&format!("{}/late", cms(&server, "default"))).0,
        404,
        "never applied"
    );
}

// ----- connections, restart, shutdown -----

#[test]
fn keep_alive_connections_are_reused() {
    let server = ApiServer::start().unwrap();
    let a = agent();
    let mark = server.requests().mark();
    for _ in 0..3 {
        assert_eq!(send_with(&a, "GET", &cms(&server, "default"), "", "").0, 200);
    }
    let conns: BTreeSet<u64> = server.requests().since(mark).iter().map(|r| r.connection).collect();
    assert_eq!(conns.len(), 1, "three requests on one connection");
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 3);
    assert_eq!(server.requests().watches_since(mark, "configmaps"), 0);
}

#[test]
fn malformed_requests_get_400_and_the_server_carries_on() {
    let server = ApiServer::start().unwrap();
    for bad in [
        "GARBAGE\r\n\r\n",
        "GET /api HTTP/9.9\r\n\r\n",
        "GET /api HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ] {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        s.write_all(bad.as_bytes()).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 400 "), "{bad:?} → {answer:?}");
    }
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(format!("GET /api HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(70_000)).as_bytes())
        .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer:?}");
    assert_eq!(get(&format!("{}/version", server.url())).0, 200);
}

#[test]
fn restart_cuts_connections_and_keeps_state() {
    let server = ApiServer::start().unwrap();
    make(&server, "default", "kept", json!({}));
    let rev = server.revision();
    let mut w = Raw::watch(&server, &format!("/api/v1/configmaps?watch=1&resourceVersion={rev}"));
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    server.restart().unwrap();
    assert!(matches!(w.next(), Next::Cut(_)));
    assert_eq!(server.watchers("configmaps"), 0);
    let (code, v) = get(&format!("{}/kept", cms(&server, "default")));
    assert_eq!((code, rv_of(&v)), (200, rev));
    assert_eq!(server.revision(), rev);

    server.stop_listening();
    let refused = TcpStream::connect(server.addr()).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    server.start_listening().unwrap();
    assert_eq!(get(&format!("{}/kept", cms(&server, "default"))).0, 200);

    // Down for a while, back by itself on the same port.
    server.restart_refusing_for(Duration::from_millis(50)).unwrap();
    eventually("the server to listen again", || {
        TcpStream::connect(server.addr()).is_ok()
    });
    assert_eq!(get(&format!("{}/kept", cms(&server, "default"))).0, 200);
    // Down for long: refused now, and shutdown does not wait for the timer.
    server.restart_refusing_for(Duration::from_secs(3600)).unwrap();
    assert!(TcpStream::connect(server.addr()).is_err());
    server.shutdown();
}

#[test]
fn shutdown_returns_while_a_watch_is_stalled_forever() {
    let server = ApiServer::start().unwrap();
    server.inject(Fault::watch("configmaps").stall_after_events(0));
    let mut w = Raw::watch(&server, "/api/v1/configmaps?watch=1");
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    // An idle keep-alive connection too.
    let mut idle = Raw::request(server.addr(), "GET", "/version");
    idle.json();
    server.shutdown();
    assert!(matches!(w.next(), Next::Cut(_)));
    let mut rest = Vec::new();
    assert_eq!(
        idle.r.read_to_end(&mut rest).unwrap_or(0),
        0,
        "the idle connection is closed"
    );
    assert!(TcpStream::connect(server.addr()).is_err());
}

#[test]
fn request_log_counts_relists_and_waits() {
    let server = ApiServer::start().unwrap();
    let mark = server.requests().mark();
    let url = cms(&server, "default");
    get(&url);
    let mut w = Raw::watch(
        &server,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={}",
            server.revision()
        ),
    );
    assert!(
        server
            .requests()
            .wait_for_count(mark, Verb::Watch, "configmaps", 1, WAIT)
    );
    assert_eq!(server.requests().lists_since(mark, "configmaps"), 1);
    let rec = &server.requests().since(mark)[1];
    assert_eq!(
        (rec.verb, rec.namespace.as_deref(), rec.code),
        (Verb::Watch, Some("default"), 200)
    );
    make(&server, "default", "x", json!({}));
    assert_eq!(summary(&w.event()), ev("ADDED", "x"));
    assert_eq!(
        server.requests().lists_since(mark, "configmaps"),
        1,
        "no relist happened"
    );
}

/// A request is in the log before anyone can observe what it did: two writers create objects over HTTP while a
/// reader watches the store directly (the quickest observer there is) and a watch streams the events; whenever
/// either has seen n objects, the log already holds n creates, each with its final code. With the log written
/// after the commit, the direct reader catches the gap between the two within a few hundred creates.
#[test]
fn the_request_log_never_lags_what_clients_can_see() {
    const PER_WRITER: usize = 400;
    let server = ApiServer::builder().compaction_interval(None).start().unwrap();
    let mark = server.requests().mark();
    let logged_creates = || {
        let records = server.requests().since(mark);
        let creates: Vec<_> = records.iter().filter(|r| r.is(Verb::Create, "configmaps")).collect();
        assert!(
            creates.iter().all(|r| r.code == 201),
            "a create logged with a provisional code: {creates:?}"
        );
        creates.len()
    };
    let mut watch = Raw::watch(
        &server,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={}",
            server.revision()
        ),
    );
    let total = 2 * PER_WRITER;
    std::thread::scope(|s| {
        for w in 0..2 {
            let server = &server;
            s.spawn(move || {
                let agent = agent();
                for i in 0..PER_WRITER {
                    let body = json!({"metadata": {"name": format!("w{w}-{i}")}});
                    let (code, obj) = send_with(
                        &agent,
                        "POST",
                        &cms(server, "default"),
                        "application/json",
                        &body.to_string(),
                    );
                    assert_eq!(code, 201, "{obj}");
                }
            });
        }
        // The direct reader: objects it can see, then the creates logged — never fewer.
        let direct = s.spawn(|| {
            loop {
                let visible = server.list_json(&cm(), Some("default")).unwrap().len();
                let logged = logged_creates();
                assert!(
                    logged >= visible,
                    "{visible} objects visible but only {logged} creates logged"
                );
                if visible == total {
                    return;
                }
            }
        });
        for seen in 1..=total {
            assert_eq!(watch.event()["type"], "ADDED");
            let logged = logged_creates();
            assert!(
                logged >= seen,
                "the watch delivered {seen} objects but only {logged} creates are logged"
            );
        }
        direct.join().unwrap();
    });
    assert_eq!(logged_creates(), total);
}

/// A watch is logged before the server counts it as established: whoever saw `wait_for_watchers` return finds it.
#[test]
fn a_watch_is_logged_before_it_is_established() {
    let server = ApiServer::builder().compaction_interval(None).start().unwrap();
    let path = "/api/v1/namespaces/default/configmaps?watch=1";
    let mark = server.requests().mark();
    let mut watches = Vec::new();
    std::thread::scope(|s| {
        for n in 1..=100 {
            let opened = s.spawn(|| Raw::watch(&server, path));
            assert!(server.wait_for_watchers("configmaps", n, WAIT));
            let logged = server.requests().watches_since(mark, "configmaps");
            assert!(logged >= n, "{n} watches established, {logged} logged");
            watches.push(opened.join().unwrap());
        }
    });
}

#[test]
fn http10_streams_and_expect_continue() {
    let server = ApiServer::start().unwrap();
    // HTTP/1.0 has no chunking: the watch body runs until the connection closes.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "GET /api/v1/configmaps?watch=1&resourceVersion={} HTTP/1.0\r\n\r\n",
        server.revision()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        r.read_line(&mut head).unwrap();
    }
    assert!(
        head.starts_with("HTTP/1.1 200") && !head.to_ascii_lowercase().contains("transfer-encoding"),
        "{head}"
    );
    assert!(server.wait_for_watchers("configmaps", 1, WAIT));
    make(&server, "default", "a", json!({}));
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let e: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(summary(&e), ev("ADDED", "a"));

    // Expect: 100-continue gets its interim answer before the body is sent.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let body = r#"{"metadata":{"name":"b"}}"#;
    write!(
        s,
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut interim = String::new();
    r.read_line(&mut interim).unwrap();
    assert!(interim.starts_with("HTTP/1.1 100 Continue"), "{interim}");
    r.read_line(&mut interim).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 201"), "{status}");
}
