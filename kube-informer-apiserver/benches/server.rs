//! Embedded API server throughput: LIST of 50,000 ~2 KB objects, and WATCH events per second, read with a raw TCP
//! client (and ureq for the list), independent of the informer.
//!
//! Run: `cargo bench --bench server` (prints a table; `harness = false`).
//!
//! `cargo bench --bench server -- --bench writes KIND N` only does N store writes of one kind (after the same
//! fixed setup whatever N is), for counting instructions per write under callgrind:
//! `tools/bench-callgrind/server-writes.py` runs it with N and with 0 and divides the difference by N.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use kube_informer::object::ApiResource;
use kube_informer_apiserver::ApiServer;
use serde_json::json;

const OBJECTS: usize = 50_000;
const EVENTS: usize = 200_000;

fn cm() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

/// Opens a raw HTTP/1.1 GET and returns the reader positioned at the body, with the Content-Length if any.
fn open(server: &ApiServer, path: &str) -> (BufReader<TcpStream>, Option<usize>) {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.set_nodelay(true).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut r = BufReader::with_capacity(256 * 1024, s);
    let mut line = String::new();
    let mut len = None;
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().ok();
        }
    }
    (r, len)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bench_list(server: &ApiServer) {
    let mut raw = Vec::new();
    let mut bytes = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let (mut r, len) = open(server, "/api/v1/configmaps");
        let mut body = vec![0; len.unwrap()];
        r.read_exact(&mut body).unwrap();
        raw.push(start.elapsed().as_secs_f64());
        bytes = body.len();
    }
    let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().proxy(None).build());
    let url = format!("{}/api/v1/configmaps", server.url());
    let mut with_ureq = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let mut body = Vec::with_capacity(bytes);
        agent
            .get(&url)
            .call()
            .unwrap()
            .into_body()
            .into_reader()
            .read_to_end(&mut body)
            .unwrap();
        with_ureq.push(start.elapsed().as_secs_f64());
        assert_eq!(body.len(), bytes);
    }
    let mut paged = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let mut token = String::new();
        let mut items = 0;
        loop {
            let q = if token.is_empty() {
                String::new()
            } else {
                format!("&continue={token}")
            };
            let text = agent
                .get(&format!("{url}?limit=500{q}"))
                .call()
                .unwrap()
                .into_body()
                .read_to_string()
                .unwrap();
            let page: serde_json::Value = serde_json::from_str(&text).unwrap();
            items += page["items"].as_array().unwrap().len();
            match page["metadata"]["continue"].as_str() {
                Some(t) => token = t.to_owned(),
                None => break,
            }
        }
        assert_eq!(items, OBJECTS);
        paged.push(start.elapsed().as_secs_f64());
    }
    let mb = bytes as f64 / 1e6;
    println!("LIST {OBJECTS} objects, {mb:.1} MB in one response");
    for (what, times) in [("raw TCP reader", raw), ("ureq reader", with_ureq)] {
        let t = median(times);
        println!("  {what:<28} {t:>8.3} s {:>10.0} MB/s", mb / t);
    }
    let t = median(paged);
    println!(
        "  {:<28} {t:>8.3} s {:>10.0} MB/s  (ureq + serde_json parse)",
        "100 pages of 500",
        mb / t
    );
}

/// Reads a chunked watch stream, counting events (lines) until `want`; returns (events, bytes).
fn count_events(r: &mut BufReader<TcpStream>, want: usize) -> (usize, usize) {
    let (mut events, mut bytes) = (0, 0);
    let mut size = String::new();
    let mut data = Vec::new();
    while events < want {
        size.clear();
        if r.read_line(&mut size).unwrap() == 0 {
            break;
        }
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        data.resize(n + 2, 0);
        r.read_exact(&mut data).unwrap();
        events += memchr::memchr_iter(b'\n', &data[..n]).count();
        bytes += n;
    }
    (events, bytes)
}

fn update(server: &ApiServer, i: usize, payload: &str) {
    let name = format!("w-{}", i % 1000);
    let obj = json!({"metadata": {"name": name}, "data": {"i": i.to_string(), "payload": payload}});
    server.replace_json(&cm(), Some("watch"), obj).unwrap();
}

fn bench_watch() {
    let server = ApiServer::builder()
        .history_size(EVENTS + 10)
        .compaction_interval(None)
        .namespace("watch")
        .start()
        .unwrap();
    let payload = "p".repeat(400);
    for i in 0..1000 {
        server
            .create_json(
                &cm(),
                Some("watch"),
                json!({"metadata": {"name": format!("w-{i}")}, "data": {}}),
            )
            .unwrap();
    }
    let start_rv = server.revision();
    let t = Instant::now();
    for i in 0..EVENTS {
        update(&server, i, &payload);
    }
    let write_rate = EVENTS as f64 / t.elapsed().as_secs_f64();

    // Replay: the whole history streamed to one watcher as fast as the server can send it.
    let t = Instant::now();
    let (mut r, _) = open(
        &server,
        &format!("/api/v1/namespaces/watch/configmaps?watch=1&resourceVersion={start_rv}"),
    );
    let (events, bytes) = count_events(&mut r, EVENTS);
    let replay = t.elapsed().as_secs_f64();
    assert_eq!(events, EVENTS);
    drop(r);

    // Live: a writer thread as fast as it can, one and then four watchers reading as events arrive.
    let mut live = Vec::new();
    for watchers in [1usize, 4] {
        let from = server.revision();
        let readers: Vec<_> = (0..watchers)
            .map(|_| {
                open(
                    &server,
                    &format!("/api/v1/namespaces/watch/configmaps?watch=1&resourceVersion={from}"),
                )
                .0
            })
            .collect();
        assert!(server.wait_for_watchers("configmaps", watchers, Duration::from_secs(30)));
        let t = Instant::now();
        let handles: Vec<_> = readers
            .into_iter()
            .map(|mut r| thread::spawn(move || count_events(&mut r, EVENTS).0))
            .collect();
        for i in 0..EVENTS {
            update(&server, i, &payload);
        }
        for h in handles {
            assert_eq!(h.join().unwrap(), EVENTS);
        }
        live.push((watchers, EVENTS as f64 / t.elapsed().as_secs_f64()));
        assert!(server.wait_for_watchers("configmaps", 0, Duration::from_secs(1)));
    }
    println!("WATCH {EVENTS} events of ~{} bytes", bytes / events);
    println!(
        "  {:<28} {replay:>8.3} s {:>10.0} events/s {:>6.0} MB/s",
        "replay from history",
        EVENTS as f64 / replay,
        bytes as f64 / 1e6 / replay
    );
    for (w, rate) in live {
        println!(
            "  {:<28} {:>19.0} events/s per watcher, {:.0} delivered (writer-bound)",
            format!("live, {w} watcher(s)"),
            rate,
            rate * w as f64
        );
    }
    println!(
        "  {:<28} {write_rate:>19.0} writes/s (direct replace_json)",
        "store writes"
    );
}

/// N store writes of one kind through the direct API (as "store writes" does), after a setup that does not depend
/// on N: a server with one namespace and 1,000 ConfigMaps. The kinds: `cm-update` (the "store writes" line's
/// replace of a ConfigMap with a 400-byte value), `cm-create`, `pod-create` and `deploy-create` (defaulted by the
/// server: a Pod's and a Deployment's spec gain their kube defaults before they are stored).
fn writes(kind: &str, n: usize) {
    let server = ApiServer::builder()
        .history_size(n + 2000)
        .compaction_interval(None)
        .namespace("watch")
        .start()
        .unwrap();
    for i in 0..1000 {
        let obj = json!({"metadata": {"name": format!("w-{i}")}, "data": {}});
        server.create_json(&cm(), Some("watch"), obj).unwrap();
    }
    let payload = "p".repeat(400);
    let pod = ApiResource::new("", "v1", "Pod", "pods", true);
    let deploy = ApiResource::new("apps", "v1", "Deployment", "deployments", true);
    let container = json!({"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}});
    for i in 0..n {
        match kind {
            "cm-update" => update(&server, i, &payload),
            "cm-create" => {
                let obj = json!({"metadata": {"name": format!("c-{i}"), "labels": {"app": "bench"}},
                    "data": {"i": i.to_string(), "payload": payload}});
                server.create_json(&cm(), Some("watch"), obj).unwrap();
            }
            "pod-create" => {
                let obj = json!({"metadata": {"name": format!("p-{i}"), "labels": {"app": "web"}},
                    "spec": {"containers": [container]}});
                server.create_json(&pod, Some("watch"), obj).unwrap();
            }
            "deploy-create" => {
                let obj = json!({"metadata": {"name": format!("d-{i}")},
                    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}});
                server.create_json(&deploy, Some("watch"), obj).unwrap();
            }
            _ => panic!("unknown kind of write {kind:?}: cm-update, cm-create, pod-create or deploy-create"),
        };
    }
    println!("{n} {kind} writes, revision {}", server.revision());
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        println!("server bench: run with `cargo bench --bench server`");
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "writes") {
        let n = args.get(at + 2).and_then(|n| n.parse().ok()).unwrap_or(1000);
        writes(args.get(at + 1).map_or("cm-update", String::as_str), n);
        return;
    }
    let namespaces: Vec<String> = (0..10).map(|i| format!("ns-{i}")).collect();
    let server = ApiServer::builder()
        .compaction_interval(None)
        .namespaces(namespaces.iter().map(String::as_str))
        .start()
        .unwrap();
    let t = Instant::now();
    let value = "x".repeat(100);
    for i in 0..OBJECTS {
        let data: serde_json::Map<String, serde_json::Value> =
            (0..16).map(|k| (format!("key-{k:02}"), json!(value))).collect();
        let obj = json!({
            "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench", "shard": (i % 16).to_string()}},
            "data": data,
        });
        server.create_json(&cm(), Some(&format!("ns-{}", i % 10)), obj).unwrap();
    }
    println!("setup: {OBJECTS} objects created in {:.2} s", t.elapsed().as_secs_f64());
    bench_list(&server);
    drop(server);
    bench_watch();
}
