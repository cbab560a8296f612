//! The server under hostile clients: requests built to exhaust its stack, memory, threads and file descriptors.
//! Each test checks the answer kube-apiserver gives, that the process is still up and serving others, and (where
//! connections are held) that threads and file descriptors come back to where they were. Nothing here sleeps to
//! synchronise or asserts a duration: waits are for conditions, with deadlines.

mod common;
#[allow(unused_imports)]
#[path = "common/raw_http.rs"]
mod raw_http;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use kube_informer_apiserver::{ApiServer, Fault};
use raw_http::*;
use serde_json::json;

/// The tests of this file run one at a time: they count the process's threads and file descriptors.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Entries of a `/proc/self` folder (threads, file descriptors); `None` off Linux.
fn proc_count(dir: &str) -> Option<usize> {
    std::fs::read_dir(format!("/proc/self/{dir}")).ok().map(Iterator::count)
}

/// The process's threads and open file descriptors (off Linux: nothing to compare, always equal).
fn resources() -> (Option<usize>, Option<usize>) {
    (proc_count("task"), proc_count("fd"))
}

/// The process's threads and descriptors once `server` holds no connection.
fn settled(server: &ApiServer) -> (Option<usize>, Option<usize>) {
    eventually("the server to hold no connection", || server.connections() == 0);
    resources()
}

/// Waits until the process is back to `baseline` threads and descriptors.
fn back_to(baseline: (Option<usize>, Option<usize>)) {
    eventually("threads and file descriptors back to their baseline", || {
        resources() == baseline
    });
}

/// Opens `n` connections that each send `bytes` and then nothing.
fn stall(server: &ApiServer, n: usize, bytes: &[u8]) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr()).unwrap();
            s.write_all(bytes).unwrap();
            s
        })
        .collect()
}

/// What the server sent before it closed the connection (it must close it within the test's wait).
fn answer_then_close(mut s: TcpStream) -> String {
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => {}
        // Reset after the answer: what was read stands.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server did not close the connection: {e}"),
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One raw request on a fresh connection; the server's whole answer.
fn raw(server: &ApiServer, request: &[u8]) -> String {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(request).unwrap();
    answer_then_close(s)
}

/// The server still answers a plain request.
fn alive(server: &ApiServer) {
    let (code, v) = get(&format!("{}/api/v1/namespaces/default", server.url()));
    assert_eq!(code, 200, "{v}");
}

/// ~14 KB: 3,400 chained additions, the expression that aborted the server.
#[cfg(feature = "cel")]
fn chained_expression() -> String {
    format!("{} > 0", vec!["1"; 3_400].join(" + "))
}

#[cfg(feature = "cel")]
#[test]
fn a_policy_whose_expression_is_past_cel_gos_limits_is_refused_with_422() {
    let server = ApiServer::start().unwrap();
    let url = format!(
        "{}/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        server.url()
    );
    let nested = format!("{}true{}", "(".repeat(2_500), ")".repeat(2_500));
    for (expression, message) in [
        (
            chained_expression(),
            "ERROR: <input>:-1:0: max recursion depth exceeded",
        ),
        (nested, "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"),
    ] {
        let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "deep"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE"], "resources": ["configmaps"]}]},
                     "validations": [{"expression": expression}]}});
        let (code, st) = post(&url, &body);
        assert_eq!(code, 422, "{st}");
        let cause = &st["details"]["causes"][0];
        assert_eq!(cause["field"], "spec.validations[0].expression", "{st}");
        assert!(
            cause["message"]
                .as_str()
                .unwrap()
                .ends_with(&format!("compilation failed: {message}")),
            "{cause}"
        );
    }
    alive(&server);
}

#[cfg(feature = "cel")]
#[test]
fn a_crd_rule_past_cel_gos_limits_is_refused_with_422() {
    let server = ApiServer::start().unwrap();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "bombs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "bombs", "singular": "bomb", "kind": "Bomb"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "x-kubernetes-validations": [{"rule": chained_expression()}]}}}]}});
    let (code, st) = post(
        &format!(
            "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            server.url()
        ),
        &crd,
    );
    assert_eq!(code, 422, "{st}");
    let message = st["message"].as_str().unwrap();
    assert!(
        message.contains("compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"),
        "{message}"
    );
    alive(&server);
}

// ----- waits: every one has a deadline -----

#[test]
fn stalled_connections_are_dropped_at_the_read_header_timeout_while_others_are_served() {
    let _one = one_at_a_time();
    let server = ApiServer::builder()
        .read_header_timeout(Duration::from_secs(5))
        .start()
        .unwrap();
    alive(&server);
    let baseline = settled(&server);
    // Half a request line, then nothing: 300 of them.
    let stalled = stall(&server, 300, b"GET /api/v1/namesp");
    eventually("the server to hold the 300 stalled connections", || {
        server.connections() >= 300
    });
    // One descriptor a connection: the 300 client sockets of this process and the server's 300.
    if let (Some(before), (_, Some(now))) = (baseline.1, resources()) {
        assert_eq!(now - before, 600, "one file descriptor per connection on each side");
    }
    // A fresh client is served meanwhile.
    alive(&server);
    assert!(
        server.connections() >= 300,
        "still held while another client was served"
    );
    for s in stalled {
        // Go's server closes a connection whose head did not arrive in time without answering.
        assert_eq!(answer_then_close(s), "");
    }
    eventually("the stalled connections to be gone", || server.connections() == 0);
    back_to(baseline);
    alive(&server);
}

#[test]
fn stalled_tls_handshakes_are_dropped_at_the_handshake_timeout() {
    let _one = one_at_a_time();
    let server = ApiServer::builder()
        .https()
        .tls_handshake_timeout(Duration::from_secs(5))
        .start()
        .unwrap();
    let baseline = settled(&server);
    // A TLS record header announcing a ClientHello of 512 bytes, and the first few of them.
    let half_hello = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03];
    let stalled = stall(&server, 300, &half_hello);
    eventually("the server to hold the 300 handshakes", || server.connections() >= 300);
    // A TLS client is served meanwhile.
    let client = server.client().unwrap();
    let api = kube_informer::client::Api::<kube_informer::object::core::ConfigMap>::namespaced(client, "default");
    assert!(api.list(&Default::default()).is_ok());
    drop(api);
    for s in stalled {
        answer_then_close(s);
    }
    eventually("the stalled handshakes to be gone", || server.connections() == 0);
    back_to(baseline);
}

#[test]
fn idle_keep_alive_connections_and_stalled_bodies_are_dropped() {
    let _one = one_at_a_time();
    let server = ApiServer::builder()
        .idle_timeout(Duration::from_millis(300))
        .request_body_timeout(Duration::from_millis(300))
        .start()
        .unwrap();
    let baseline = settled(&server);
    // A whole request, answered, then nothing: closed at the idle timeout.
    let mut idle = TcpStream::connect(server.addr()).unwrap();
    idle.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let answer = answer_then_close(idle);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    // A body announced and never sent: kube-apiserver's request timeout answers 504.
    let answer = raw(
        &server,
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"metadata\":",
    );
    assert!(answer.starts_with("HTTP/1.1 504 "), "{answer}");
    assert!(
        answer.contains("Timeout: request did not complete within requested timeout - context deadline exceeded"),
        "{answer}"
    );
    back_to(baseline);
    alive(&server);
}

#[test]
fn connections_past_the_cap_are_refused_with_429_until_one_leaves() {
    let _one = one_at_a_time();
    let server = ApiServer::builder()
        .max_connections(5)
        .read_header_timeout(Duration::from_secs(600))
        .start()
        .unwrap();
    let baseline = settled(&server);
    let held = stall(&server, 5, b"GET /");
    eventually("five connections held", || server.connections() == 5);
    let answer = raw(&server, b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n");
    // The answer may be reset away by the close; when it arrives it is kube-apiserver's.
    if !answer.is_empty() {
        assert!(answer.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{answer}");
        assert!(answer.contains("\r\nRetry-After: 1\r\n"), "{answer}");
        assert!(
            answer.ends_with("\r\n\r\nToo many requests, please try again later.\n"),
            "{answer}"
        );
    }
    assert_eq!(server.connections(), 5);
    drop(held);
    eventually("the held connections to be gone", || server.connections() == 0);
    alive(&server);
    back_to(baseline);
}

#[test]
fn requests_past_the_in_flight_limits_get_429_but_system_masters_and_watches_do_not() {
    let _one = one_at_a_time();
    let server = ApiServer::builder()
        .rbac()
        .token("t", "someone")
        .user_groups("someone", &["system:masters"])
        .token("v", "viewer")
        .max_requests_in_flight(1)
        .max_mutating_requests_in_flight(1)
        .start()
        .unwrap();
    // One list held in flight by a stall, until the faults are cleared.
    server.inject(Fault::list("configmaps").stall());
    let url = format!("{}/api/v1/namespaces/default/configmaps", server.url());
    let stalled = {
        let a = agent();
        let url = url.clone();
        std::thread::spawn(move || {
            a.get(&url)
                .header("Authorization", "Bearer v")
                .call()
                .map(|r| r.status())
        })
    };
    eventually("the stalled list to be in flight", || server.pending_faults() == 0);
    let r = agent().get(&url).header("Authorization", "Bearer v").call().unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    assert_eq!(
        r.into_body().read_to_string().unwrap(),
        "Too many requests, please try again later.\n"
    );
    // A member of system:masters always gets an answer; mutating requests have their own limit.
    let r = agent().get(&url).header("Authorization", "Bearer t").call().unwrap();
    assert_eq!(r.status(), 200);
    let cm = json!({"metadata": {"name": "x"}}).to_string();
    let r = agent()
        .post(&url)
        .header("Authorization", "Bearer t")
        .header("Content-Type", "application/json")
        .send(&cm)
        .unwrap();
    assert_eq!(r.status(), 201);
    // Watches are long-running: not counted.
    let w = agent()
        .get(&format!("{url}?watch=1&timeoutSeconds=1"))
        .header("Authorization", "Bearer v")
        .call()
        .unwrap();
    assert_eq!(w.status(), 403, "the viewer may not watch, but was not throttled");
    server.clear_faults();
    assert_eq!(stalled.join().unwrap().unwrap(), 403);
    let r = agent().get(&url).header("Authorization", "Bearer t").call().unwrap();
    assert_eq!(r.status(), 200);
}

#[test]
fn abandoned_watches_free_their_threads() {
    let _one = one_at_a_time();
    let server = ApiServer::builder()
        .write_timeout(Duration::from_millis(300))
        .start()
        .unwrap();
    let baseline = settled(&server);
    // Watches whose clients never read, and watches whose clients leave.
    let readers_gone: Vec<TcpStream> = stall(
        &server,
        10,
        b"GET /api/v1/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    let left = stall(
        &server,
        10,
        b"GET /api/v1/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert!(server.wait_for_watchers("configmaps", 20, WAIT));
    drop(left);
    // Enough events to fill the socket buffers of those who do not read: writers never wait for them.
    let big = "x".repeat(100_000);
    for i in 0..200 {
        let name = format!("big-{}", i % 20);
        let body = json!({"metadata": {"name": name}, "data": {"v": format!("{i}{big}")}});
        if i < 20 {
            server.create_json(&cm(), Some("default"), body).unwrap();
        } else {
            server.replace_json(&cm(), Some("default"), body).unwrap();
        }
    }
    eventually("the abandoned watches to be dropped", || {
        server.watchers("configmaps") == 0
    });
    drop(readers_gone);
    eventually("their connections to be gone", || server.connections() == 0);
    back_to(baseline);
    alive(&server);
}

// ----- malformed requests: answered as Go's server and kube-apiserver answer them -----

#[test]
fn malformed_heads_get_gos_answers() {
    let _one = one_at_a_time();
    let server = ApiServer::start().unwrap();
    for (request, answer) in [
        (
            &b"GET /version HTTP/1.1\r\n\r\n"[..],
            "400 Bad Request: missing required Host header",
        ),
        (
            b"GET /version HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "400 Bad Request: too many Host headers",
        ),
        (
            b"GET /version HTTP/1.1\r\nHost: a\x00b\r\n\r\n",
            "400 Bad Request: invalid header value",
        ),
        (
            b"GET /version HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n",
            "400 Bad Request: invalid header value",
        ),
        (
            b"GET /version HTTP/1.1\r\nHost: x\r\nX: \x1b[31m\r\n\r\n",
            "400 Bad Request: invalid header value",
        ),
        (
            b"GET /version HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n",
            "400 Bad Request: invalid header name",
        ),
    ] {
        let got = raw(&server, request);
        assert_eq!(
            got,
            format!(
                "HTTP/1.1 {answer}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{answer}"
            ),
            "{request:?}"
        );
    }
    // HTTP/1.0 needs no Host.
    assert!(raw(&server, b"GET /version HTTP/1.0\r\n\r\n").starts_with("HTTP/1.1 200 "));
    // A path that is not UTF-8 names nothing: 404, raw or escaped.
    for path in [
        &b"/api/v1/namespaces/\xff\xfe/configmaps"[..],
        b"/api/v1/namespaces/%ff/configmaps",
    ] {
        let mut request = b"GET ".to_vec();
        request.extend_from_slice(path);
        request.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let got = raw(&server, &request);
        assert!(got.starts_with("HTTP/1.1 404 "), "{path:?}: {got}");
    }
    alive(&server);
}

#[test]
fn plain_http_to_the_tls_port_gets_gos_400() {
    let _one = one_at_a_time();
    let server = ApiServer::builder().https().start().unwrap();
    let got = raw(&server, b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(
        got,
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    // The server carries on.
    let api = kube_informer::client::Api::<kube_informer::object::core::ConfigMap>::namespaced(
        server.client().unwrap(),
        "default",
    );
    assert!(api.list(&Default::default()).is_ok());
}

#[test]
fn bodies_past_the_limit_get_kube_apiservers_413() {
    let _one = one_at_a_time();
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    for ct in [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    ] {
        let (code, st) = send("POST", &url, ct, &"x".repeat(3 * 1024 * 1024 + 1));
        assert_eq!(code, 413, "{ct}: {st}");
        assert_eq!(st["message"], "Request entity too large: limit is 3145728", "{ct}");
        assert_eq!(st["reason"], "RequestEntityTooLarge");
    }
    alive(&server);
}

// ----- bodies built to exhaust the stack or the memory -----

/// A PATCH of `cm` in `default` with `content_type`: (status, answer).
fn patch_cm(server: &ApiServer, cm_name: &str, content_type: &str, body: &str) -> (u16, serde_json::Value) {
    send(
        "PATCH",
        &format!("{}/{cm_name}", cms(server, "default")),
        content_type,
        body,
    )
}

#[test]
fn json_patches_past_kube_apiservers_limits_are_refused() {
    let _one = one_at_a_time();
    let server = ApiServer::start().unwrap();
    make(&server, "default", "target", json!({}));
    // 10,001 operations: 413.
    let ops = vec![r#"{"op":"test","path":"/kind","value":"ConfigMap"}"#; 10_001].join(",");
    let (code, st) = patch_cm(&server, "target", "application/json-patch+json", &format!("[{ops}]"));
    assert_eq!(code, 413, "{st}");
    assert_eq!(
        st["message"],
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
    // 1.9 KB of copies, each doubling the object: stopped at 3 MiB copied (it grew the process by 100 MB).
    let seed = json!([{"op": "add", "path": "/data/seed", "value": "x".repeat(100_000)}]);
    assert_eq!(
        patch_cm(&server, "target", "application/json-patch+json", &seed.to_string()).0,
        200
    );
    let copies: Vec<serde_json::Value> = (0..16)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/c{i}")}))
        .collect();
    let (code, st) = patch_cm(
        &server,
        "target",
        "application/json-patch+json",
        &serde_json::Value::Array(copies).to_string(),
    );
    assert_eq!(code, 422, "{st}");
    let message = st["message"].as_str().unwrap();
    assert!(
        message.starts_with("Unable to complete the copy, the accumulated size increase of copy is ")
            && message.ends_with("exceeding the limit 3145728"),
        "{message}"
    );
    alive(&server);
}

#[test]
fn bodies_nested_ten_times_past_each_parsers_limit_are_refused() {
    let _one = one_at_a_time();
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    // JSON: serde_json stops at 128 levels.
    let deep_json = format!(
        r#"{{"metadata":{{"name":"deep"}},"data":{}1{}}}"#,
        "[".repeat(1_280),
        "]".repeat(1_280)
    );
    make(&server, "default", "patched", json!({}));
    for ct in [
        "application/json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ] {
        let (code, st) = if ct == "application/json" {
            send("POST", &url, ct, &deep_json)
        } else {
            patch_cm(&server, "patched", ct, &deep_json)
        };
        assert_eq!(code, 400, "{ct}: {st}");
    }
    // YAML: serde-saphyr's budget stops at 64 levels.
    let deep_yaml = format!(
        "metadata: {{name: deep}}\ndata: {}1{}\n",
        "[".repeat(640),
        "]".repeat(640)
    );
    let (code, st) = send("POST", &url, "application/yaml", &deep_yaml);
    assert_eq!(code, 400, "{st}");
    let (code, st) = send(
        "PATCH",
        &format!("{}/patched?fieldManager=hostile", cms(&server, "default")),
        "application/apply-patch+yaml",
        &deep_yaml,
    );
    assert_eq!(code, 400, "{st}");
    // A JSON patch building depth operation by operation: refused as soon as it would pass a body's 127 levels.
    let deep_value = (0..100).fold(json!("v"), |v, _| json!({"a": v}));
    let ops: Vec<serde_json::Value> = (0..13)
        .map(|i| json!({"op": "add", "path": format!("/metadata/annotations{}", "/a".repeat(i * 100)), "value": deep_value}))
        .collect();
    let (code, st) = patch_cm(
        &server,
        "patched",
        "application/json-patch+json",
        &serde_json::Value::Array(ops).to_string(),
    );
    assert_eq!(code, 422, "{st}");
    // Protobuf: groups nested 640 deep in an unknown field are skipped without recursion.
    let (code, st) = send_bytes(
        &url,
        "application/vnd.kubernetes.protobuf",
        &protobuf_with_nested_groups(640),
    );
    assert!(matches!(code, 201 | 400), "{code}: {st}");
    alive(&server);
}

/// A protobuf ConfigMap named `groups` whose unknown field 999 holds `n` groups nested in one another.
fn protobuf_with_nested_groups(n: usize) -> Vec<u8> {
    fn varint(mut v: usize, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn bytes_field(field: usize, data: &[u8], out: &mut Vec<u8>) {
        varint(field << 3 | 2, out);
        varint(data.len(), out);
        out.extend_from_slice(data);
    }
    let mut meta = Vec::new();
    bytes_field(1, b"groups", &mut meta);
    let mut cm = Vec::new();
    bytes_field(1, &meta, &mut cm);
    for _ in 0..n {
        varint(999 << 3 | 3, &mut cm);
    }
    for _ in 0..n {
        varint(999 << 3 | 4, &mut cm);
    }
    let mut type_meta = Vec::new();
    bytes_field(1, b"v1", &mut type_meta);
    bytes_field(2, b"ConfigMap", &mut type_meta);
    let mut unknown = Vec::new();
    bytes_field(1, &type_meta, &mut unknown);
    bytes_field(2, &cm, &mut unknown);
    let mut body = b"k8s\0".to_vec();
    body.extend_from_slice(&unknown);
    body
}

fn send_bytes(url: &str, content_type: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let r = agent()
        .post(url)
        .header("Content-Type", content_type)
        .send(body)
        .unwrap();
    let code = r.status().as_u16();
    let text = r.into_body().read_to_string().unwrap();
    (
        code,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
    )
}

#[test]
fn a_key_repeated_200000_times_is_one_warning() {
    let _one = one_at_a_time();
    let server = ApiServer::start().unwrap();
    let repeated = vec![r#""k":"v""#; 200_000].join(",");
    let body = format!(r#"{{"metadata":{{"name":"dups"}},"data":{{{repeated}}}}}"#);
    let r = agent()
        .post(&cms(&server, "default"))
        .header("Content-Type", "application/json")
        .send(&body)
        .unwrap();
    assert_eq!(r.status(), 201);
    let warnings: Vec<String> = r
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(warnings, [r#"299 - "duplicate field \"data.k\"""#]);
    // Strict: the decoder's problem once.
    let body = body.replace("\"dups\"", "\"dups2\"");
    let (code, st) = send(
        "POST",
        &format!("{}?fieldValidation=Strict", cms(&server, "default")),
        "application/json",
        &body,
    );
    assert_eq!(code, 400);
    assert_eq!(
        st["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.k""#
    );
    alive(&server);
}

#[test]
fn selectors_nested_or_chained_past_any_limit_are_answered() {
    let _one = one_at_a_time();
    let server = ApiServer::builder().sharded_list_and_watch(true).start().unwrap();
    let path = "/api/v1/namespaces/default/configmaps";
    // The status of a GET of `path` with `query`, sent raw (a head of up to 64 KiB is read).
    let status = |query: &str| {
        let answer = raw(
            &server,
            format!("GET {path}?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        answer.get(9..12).unwrap_or("").to_owned()
    };
    let range = "shardRange(object.metadata.uid,'0x0','0x8000000000000000')";
    for selector in [
        format!("{}{range}{}", "(".repeat(8_000), ")".repeat(8_000)),
        format!("{}{range}", "!".repeat(20_000)),
        vec![range; 700].join("||"),
        format!("{}==1", vec!["1"; 15_000].join("-")),
    ] {
        let code = status(&format!("shardSelector={}", percent_encode(&selector)));
        assert!(matches!(code.as_str(), "200" | "400"), "{code}: {}", &selector[..40]);
    }
    // Label and field selectors are read without recursion.
    let labels = vec!["a=b"; 5_000].join(",");
    assert_eq!(status(&format!("labelSelector={}", percent_encode(&labels))), "200");
    let fields = vec!["metadata.name=x"; 2_000].join(",");
    assert_eq!(status(&format!("fieldSelector={}", percent_encode(&fields))), "200");
    alive(&server);
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~()!'=,|".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

// ----- objects at the limit go through every path -----

fn message_of(st: &serde_json::Value) -> &str {
    st["message"].as_str().unwrap_or_default()
}

/// A value nested `n` objects deep (`{"a": {"a": … 1}}`).
fn nested(n: usize) -> serde_json::Value {
    (0..n).fold(json!(1), |v, _| json!({"a": v}))
}

/// A CRD whose `spec` keeps anything, with a CEL rule on it and printer columns reading deep into it.
const DEEP_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "deeps.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "deeps", "singular": "deep", "kind": "Deep"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "additionalPrinterColumns": [{"name": "Deepest", "type": "string", "jsonPath": "..a"}],
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                 "x-kubernetes-validations": [{"rule": "has(self.a)"}]}}}}}]}}"#;

#[test]
fn objects_nested_as_deep_as_a_body_may_go_through_every_path_on_a_connection_thread() {
    let _one = one_at_a_time();
    let server = ApiServer::builder().crd(DEEP_CRD).start().unwrap();
    let url = format!("{}/apis/example.com/v1/namespaces/default/deeps", server.url());
    // What is stored nests 127 levels at most, its managed fields included: their `fieldsV1` name a field of
    // `spec` 4 levels deeper than the object holds it. So `spec` may hold 121 levels.
    let too_deep_stored =
        json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"}, "spec": nested(122)});
    let (code, st) = post(&url, &too_deep_stored);
    assert_eq!(code, 422, "{st}");
    assert!(message_of(&st).contains("its managed fields included"), "{st}");
    let deep = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"}, "spec": nested(121)});
    let (code, st) = post(&url, &deep);
    assert_eq!(code, 201, "{st}");
    // A client with serde_json's limit reads it back.
    let client = server.client().unwrap();
    let api = kube_informer::client::Api::<kube_informer::object::DynamicObject>::namespaced_with(
        client,
        "default",
        &kube_informer::object::ApiResource::new("example.com", "v1", "Deep", "deeps", true),
    );
    assert_eq!(api.list(&Default::default()).unwrap().items.len(), 1);
    let (code, _) = get(&format!("{url}/d"));
    assert_eq!(code, 200);
    assert_eq!(get(&url).0, 200);
    let table = agent()
        .get(&url)
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .call()
        .unwrap();
    assert_eq!(table.status(), 200);
    // A watch from the start streams it.
    let mut w = TcpStream::connect(server.addr()).unwrap();
    w.write_all(
        b"GET /apis/example.com/v1/deeps?watch=1&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert!(answer_then_close(w).contains("\"ADDED\""));
    // Patches of every kind, at the limit.
    let merge = json!({"spec": {"b": nested(120)}});
    let (code, st) = send(
        "PATCH",
        &format!("{url}/d"),
        "application/merge-patch+json",
        &merge.to_string(),
    );
    assert_eq!(code, 200, "{st}");
    let json_patch = json!([{"op": "replace", "path": "/spec/a", "value": nested(120)}]);
    assert_eq!(
        send(
            "PATCH",
            &format!("{url}/d"),
            "application/json-patch+json",
            &json_patch.to_string()
        )
        .0,
        200
    );
    let apply = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"},
                       "spec": {"a": nested(120), "c": nested(120)}});
    let (code, st) = send(
        "PATCH",
        &format!("{url}/d?fieldManager=deep"),
        "application/apply-patch+yaml",
        &apply.to_string(),
    );
    assert_eq!(code, 200, "{st}");
    // A body past serde_json's limit no parser reads.
    let too_deep =
        json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "e"}, "spec": nested(127)});
    assert_eq!(post(&url, &too_deep).0, 400);
    // And a built-in kind's deepest shape, every patch type too.
    let cm = json!({"metadata": {"name": "deep", "annotations": {"a": "b"}}, "data": {"k": "v"}});
    assert_eq!(post(&cms(&server, "default"), &cm).0, 201);
    alive(&server);
}

#[test]
fn the_deepest_objects_need_a_quarter_of_a_connection_threads_stack() {
    let _one = one_at_a_time();
    let server = ApiServer::builder().crd(DEEP_CRD).start().unwrap();
    let ar = kube_informer::object::ApiResource::new("example.com", "v1", "Deep", "deeps", true);
    // The same writes through the Rust calls, on a thread of 512 KiB (connection threads have 2 MiB).
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn_scoped(s, || {
                let obj = json!({"metadata": {"name": "d"}, "spec": nested(121)});
                server.create_json(&ar, Some("default"), obj).unwrap();
                server
                    .patch_json(&ar, Some("default"), "d", &json!({"spec": {"b": nested(120)}}))
                    .unwrap();
                let back = server.get_json(&ar, Some("default"), "d").unwrap();
                assert_eq!(back["spec"]["b"], nested(120));
            })
            .unwrap()
            .join()
            .unwrap();
    });
}
