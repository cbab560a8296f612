//! The embedded server's admin API over HTTP (`/kube-informer/admin/`): faults, compaction, restart, the request
//! log, watchers, settings, and who may use it. Plus the standalone face's other library pieces: the kubeconfig
//! written where asked, the address and port.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};

use kube_informer_apiserver::{ADMIN_PREFIX, ApiServer, Fault};
use raw_http::*;
use serde_json::{Value, json};

fn admin_server() -> ApiServer {
    ApiServer::builder()
        .admin_api()
        .compaction_interval(None)
        .start()
        .unwrap()
}

fn admin(server: &ApiServer, path: &str) -> String {
    format!("{}{ADMIN_PREFIX}{path}", server.url())
}

fn delete(url: &str) -> (u16, Value) {
    send("DELETE", url, "", "")
}

/// As curl -d sends it: a form content type on a JSON body.
fn post_text(url: &str, body: &str) -> (u16, Value) {
    send("POST", url, "application/x-www-form-urlencoded", body)
}

#[test]
fn the_admin_api_is_off_unless_asked_for() {
    let server = ApiServer::start().unwrap();
    assert_eq!(get(&admin(&server, "")).0, 404);
    assert_eq!(post_text(&admin(&server, "faults"), r#"{"error":500}"#).0, 404);
    assert_eq!(server.pending_faults(), 0);
}

#[test]
fn faults_injected_over_http_shape_the_next_matching_requests() {
    let server = admin_server();
    let faults = admin(&server, "faults");
    let (code, body) = post_text(
        &faults,
        r#"{"verb":"list","resource":"configmaps","error":429,"retryAfter":1,"times":2}"#,
    );
    assert_eq!((code, &body), (201, &json!({"added": 1, "pendingFaults": 1})));
    let (code, pending) = get(&faults);
    assert_eq!(code, 200);
    assert_eq!(
        pending["items"],
        json!([{"verb": "list", "resource": "configmaps", "error": 429, "retryAfter": 1, "times": 2}])
    );
    let list = cms(&server, "default");
    for _ in 0..2 {
        let r = agent().get(&list).call().unwrap();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "1");
    }
    assert_eq!(get(&list).0, 200, "the fault is used up");

    // An array queues several, in order; DELETE drops them.
    let (code, body) = post(
        &faults,
        &json!([{"error": 503}, {"verb": "watch", "cutAfterEvents": 0}]),
    );
    assert_eq!((code, body["added"].as_u64()), (201, Some(2)));
    assert_eq!(server.pending_faults(), 2);
    assert_eq!(delete(&faults), (200, json!({"pendingFaults": 0})));
    assert_eq!(get(&list).0, 200);
}

#[test]
fn admin_requests_escape_faults_and_the_request_log() {
    let server = admin_server();
    let mark = server.requests().mark();
    // Every request stalls until the faults are cleared — every Kubernetes request, that is.
    assert_eq!(
        post_text(&admin(&server, "faults"), r#"{"stall":true,"times":100}"#).0,
        201
    );
    let list = cms(&server, "default");
    let stalled = std::thread::spawn(move || get(&list).0);
    // The list took the fault (it serves 99 more) and stalls; admin requests do not.
    eventually("the list stalls", || {
        get(&admin(&server, "faults")).1["items"][0]["times"] == 99
    });
    assert_eq!(delete(&admin(&server, "faults")).0, 200, "the clear ends the stall");
    assert_eq!(stalled.join().unwrap(), 200);
    let logged: Vec<String> = server.requests().since(mark).iter().map(|r| r.path.clone()).collect();
    assert_eq!(logged, ["/api/v1/namespaces/default/configmaps"]);
}

#[test]
fn malformed_faults_are_refused_with_the_reason_and_queue_nothing() {
    let server = admin_server();
    let faults = admin(&server, "faults");
    let cases = [
        ("", "must be a fault"),
        ("{", "not JSON"),
        (r#"{"verb":"list"}"#, "needs one action"),
        (r#"{"error":500,"cutAfterBytes":1}"#, "not error and cutAfterBytes"),
        (r#"{"stall":true,"lasting":"5"}"#, "missing unit"),
        (
            r#"[{"error":500},{"error":500,"colour":1}]"#,
            "fault 1: unknown field `colour`",
        ),
        ("7", "invalid type"),
    ];
    for (body, want) in cases {
        let (code, st) = post_text(&faults, body);
        assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")), "{body}");
        let message = st["message"].as_str().unwrap();
        assert!(message.contains(want), "{body}: {message}");
    }
    assert_eq!(server.pending_faults(), 0);
}

#[test]
fn compaction_over_http_expires_older_revisions() {
    let server = admin_server();
    let first = rv_of(&make(&server, "default", "a", json!({})));
    make(&server, "default", "b", json!({}));
    let exact = |rv: u64| {
        format!(
            "{}?resourceVersion={rv}&resourceVersionMatch=Exact",
            cms(&server, "default")
        )
    };
    assert_eq!(get(&exact(first)).0, 200);
    let compact = admin(&server, "compact");
    assert_eq!(
        post(&compact, &json!({"revision": first})),
        (200, json!({"revision": first}))
    );
    assert_eq!(
        get(&exact(first)).0,
        200,
        "the compaction revision itself stays readable"
    );
    let (code, body) = post_text(&compact, "");
    assert_eq!((code, body["revision"].as_u64()), (200, Some(server.revision())));
    let (code, st) = get(&exact(first));
    assert_eq!((code, st["reason"].as_str()), (410, Some("Expired")));
    let (code, st) = post(&compact, &json!({"revision": "soon"}));
    assert_eq!(code, 400, "{st}");
    assert_eq!(post(&compact, &json!({"until": 3})).0, 400);
    let status = get(&admin(&server, "status")).1;
    assert_eq!(status["compactedRevision"].as_u64(), Some(server.revision()));
}

#[test]
fn a_restart_over_http_cuts_every_other_connection_and_answers_once_listening_again() {
    let server = admin_server();
    make(&server, "default", "kept", json!({}));
    let mut watch = Raw::watch(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0",
    );
    assert_eq!(summary(&watch.change()), ev("ADDED", "kept"));
    let idle = agent();
    assert_eq!(send_with(&idle, "GET", &cms(&server, "default"), "", "").0, 200);

    let mut restart = Raw::request(server.addr(), "POST", &format!("{ADMIN_PREFIX}restart"));
    assert_eq!(restart.code, 200);
    assert_eq!(restart.header("connection"), Some("close"));
    assert_eq!(restart.json(), json!({"restarted": true}));
    assert!(matches!(watch.next(), Next::Cut(_)), "the watch was cut");
    // The answer came once the server listened again: a new connection is served at once, the state kept.
    let (code, list) = get(&cms(&server, "default"));
    assert_eq!(
        (code, list["items"][0]["metadata"]["name"].as_str()),
        (200, Some("kept"))
    );
    assert_eq!(post(&admin(&server, "restart"), &json!({"later": 1})).0, 400);
}

#[test]
fn a_restart_over_http_may_refuse_connections_for_a_while() {
    let server = admin_server();
    let (code, body) = post(&admin(&server, "restart"), &json!({"refuseFor": "3s"}));
    assert_eq!((code, body), (200, json!({"restarted": true, "refusingFor": "3s"})));
    // Down now (the answer came after the listener closed)…
    let refused = TcpStream::connect(server.addr()).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    // …and back by itself.
    eventually("the server listens again", || TcpStream::connect(server.addr()).is_ok());
    assert_eq!(get(&cms(&server, "default")).0, 200);
}

#[test]
fn the_request_log_over_http() {
    let server = admin_server();
    let start = get(&admin(&server, "status")).1["requestLogMark"].as_u64().unwrap();
    assert_eq!(get(&cms(&server, "default")).0, 200);
    assert_eq!(
        post(&cms(&server, "default"), &json!({"metadata": {"name": "x"}})).0,
        201
    );
    assert_eq!(get(&format!("{}/api/v1/namespaces", server.url())).0, 200);
    let (code, log) = get(&admin(&server, &format!("requests?since={start}")));
    assert_eq!(code, 200);
    assert_eq!(log["mark"].as_u64(), Some(start + 3));
    let items = log["items"].as_array().unwrap();
    let verbs: Vec<&str> = items.iter().map(|r| r["verb"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["list", "create", "list"]);
    let create = &items[1];
    assert_eq!(create["index"].as_u64(), Some(start + 1));
    assert_eq!(create["method"], "POST");
    assert_eq!(create["path"], "/api/v1/namespaces/default/configmaps");
    assert_eq!(create["resource"], "configmaps");
    assert_eq!(create["namespace"], "default");
    assert_eq!(create["code"], 201);
    assert_eq!(create["fault"], Value::Null);
    assert!(create["time"].as_str().unwrap().ends_with('Z'));

    let filtered = get(&admin(
        &server,
        &format!("requests?since={start}&verb=list&resource=configmaps"),
    ))
    .1;
    assert_eq!(filtered["items"].as_array().unwrap().len(), 1);
    assert_eq!(filtered["mark"], log["mark"], "the mark counts every request");
    let later = get(&admin(&server, &format!("requests?since={}", start + 3))).1;
    assert_eq!(later["items"], json!([]));
    assert_eq!(get(&admin(&server, "requests?since=x")).0, 400);
    assert_eq!(get(&admin(&server, "requests?limit=1")).0, 400);

    // A fault's description shows in the record it shaped.
    server.inject(Fault::list("configmaps").error(500));
    get(&cms(&server, "default"));
    let last = get(&admin(&server, &format!("requests?since={}", start + 3))).1;
    assert_eq!(last["items"][0]["code"], 500);
    assert!(last["items"][0]["fault"].as_str().unwrap().contains("Error(500"));
}

#[test]
fn watchers_over_http_wait_for_watches() {
    let server = admin_server();
    assert_eq!(
        get(&admin(&server, "watchers?resource=configmaps")),
        (200, json!({"resource": "configmaps", "watchers": 0}))
    );
    let url = admin(&server, "watchers?resource=leases&count=1&timeout=20s");
    let waiter = std::thread::spawn(move || get(&url));
    let _watch = Raw::watch(&server, "/apis/coordination.k8s.io/v1/leases?watch=1");
    assert_eq!(
        waiter.join().unwrap(),
        (200, json!({"resource": "leases.coordination.k8s.io", "watchers": 1}))
    );
    let (code, st) = get(&admin(&server, "watchers?resource=configmaps&count=2&timeout=1ms"));
    assert_eq!((code, st["reason"].as_str()), (504, Some("Timeout")));
    assert_eq!(st["message"], "2 watches of configmaps wanted, 0 after 1ms");
    assert_eq!(get(&admin(&server, "watchers?resource=widgets")).0, 400);
    assert_eq!(get(&admin(&server, "watchers")).0, 400);
    assert_eq!(get(&admin(&server, "watchers?resource=pods&timeout=soon")).0, 400);
    assert_eq!(
        get(&admin(&server, "status")).1["watchers"],
        json!({"leases.coordination.k8s.io": 1})
    );
}

#[test]
fn shutdown_ends_a_waiting_watchers_request() {
    let server = admin_server();
    let url = admin(&server, "watchers?resource=configmaps&count=1&timeout=10m");
    let waiter = std::thread::spawn(move || agent().get(&url).call().map(|r| r.status().as_u16()).unwrap_or(0));
    let status = admin(&server, "status");
    eventually("the watchers request waits", || {
        get(&status).1["waitingAdminRequests"] == 1
    });
    // Joins the waiting connection's thread: returns only because the wait ends.
    server.shutdown();
    let code = waiter.join().unwrap();
    assert!(code == 504 || code == 0, "{code}");
}

#[test]
fn settings_over_http() {
    let server = admin_server();
    let settings = admin(&server, "settings");
    assert_eq!(
        get(&settings),
        (
            200,
            json!({"bookmarkInterval": "60s", "watchList": true, "shardedListAndWatch": false})
        )
    );
    assert_eq!(
        put(&settings, &json!({"bookmarkInterval": "250ms", "watchList": false})),
        (
            200,
            json!({"bookmarkInterval": "250ms", "watchList": false, "shardedListAndWatch": false})
        )
    );
    let streaming = format!(
        "{}/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        server.url()
    );
    assert_eq!(get(&streaming).0, 422, "streaming lists are off");
    for bad in [
        json!({"bookmarkInterval": "0s"}),
        json!({"bookmarkInterval": 5}),
        json!({"watchList": "yes"}),
        json!({"history": 1}),
    ] {
        assert_eq!(put(&settings, &bad).0, 400, "{bad}");
    }
    assert_eq!(get(&settings).1["bookmarkInterval"], "250ms");
}

#[test]
fn with_authentication_only_admins_may_use_it() {
    let server = ApiServer::builder()
        .token("root-token", "root")
        .token("viewer-token", "viewer")
        .admin_user("root")
        .compaction_interval(None)
        .start()
        .unwrap();
    let url = admin(&server, "status");
    let call = |token: Option<&str>| {
        let mut req = agent().get(&url);
        if let Some(t) = token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let r = req.call().unwrap();
        let code = r.status().as_u16();
        let body: Value = serde_json::from_str(&r.into_body().read_to_string().unwrap()).unwrap();
        (code, body)
    };
    assert_eq!(call(None).0, 401);
    assert_eq!(call(Some("wrong")).0, 401);
    let (code, st) = call(Some("viewer-token"));
    assert_eq!((code, st["reason"].as_str()), (403, Some("Forbidden")));
    assert_eq!(
        st["message"],
        "user \"viewer\" may not use the admin API (/kube-informer/admin/)"
    );
    assert_eq!(call(Some("root-token")).0, 200);
}

#[test]
fn unknown_admin_paths_and_methods() {
    let server = admin_server();
    assert_eq!(get(&admin(&server, "nope")).0, 404);
    assert_eq!(get(&admin(&server, "faults/1")).0, 404);
    assert_eq!(send("PUT", &admin(&server, "restart"), "application/json", "{}").0, 405);
    assert_eq!(get(&admin(&server, "compact")).0, 405);
    let index = get(&format!("{}/kube-informer/admin", server.url()));
    assert_eq!(index.0, 200);
    assert!(index.1["endpoints"].as_array().unwrap().len() >= 7);
    assert_eq!(index.1["revision"].as_u64(), Some(server.revision()));
}

// ----- the kubeconfig where asked, the address and port -----

#[test]
fn the_kubeconfig_is_written_where_asked_and_stays_after_stop() {
    let dir = common::TempDir::new("kubeconfig-out");
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, "stale").unwrap();
    let server = ApiServer::builder()
        .https()
        .token("t0ken", "alice")
        .kubeconfig_out(&path)
        .start()
        .unwrap();
    assert_eq!(server.kubeconfig_path(), path);
    let client = server.client().unwrap();
    let api = kube_informer::client::Api::<kube_informer::object::core::ConfigMap>::namespaced(client, "default");
    assert!(api.list(&Default::default()).unwrap().items.is_empty());
    drop(server);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("certificate-authority-data") && text.contains("t0ken"));
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["kubeconfig"]);

    let missing = dir.0.join("no/such/dir/kubeconfig");
    let err = ApiServer::builder().kubeconfig_out(&missing).start().unwrap_err();
    assert!(err.to_string().contains("no/such/dir/kubeconfig"), "{err}");
}

#[test]
fn address_and_port_are_chosen_by_the_builder() {
    // A free port, found by binding it and letting it go.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = ApiServer::builder().port(port).start().unwrap();
    assert_eq!(server.url(), format!("http://127.0.0.1:{port}"));
    let err = ApiServer::builder().port(port).start().unwrap_err();
    assert!(err.to_string().contains("bind"), "{err}");
    drop(server);

    let any = ApiServer::builder()
        .address(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
        .insecure_allow_unauthenticated_remote_access()
        .https()
        .start()
        .unwrap();
    assert!(any.listen_addr().ip().is_unspecified());
    assert_eq!(any.addr().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert!(any.url().starts_with("https://127.0.0.1:"));
    let client = any.client().unwrap();
    let api = kube_informer::client::Api::<kube_informer::object::core::ConfigMap>::all(client);
    assert!(
        api.list(&Default::default()).is_ok(),
        "the certificate names the loopback address"
    );
    any.restart().unwrap();
    assert!(
        api.list(&Default::default()).is_ok(),
        "listening again on every interface"
    );
}
