//! The server under stalled connections: how many it holds, what each costs (memory, threads, descriptors), how long
//! past its read-header timeout it drops them, and how a fresh client is served meanwhile.
//!
//! Run: `cargo bench -p kube-informer-apiserver --bench hostile` (prints a table; `harness = false`; Linux, where
//! /proc tells the process's memory, threads and descriptors).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use kube_informer_apiserver::ApiServer;

/// Stalled connections held at once (within the default cap of 1,024).
const STALLED: usize = 1_000;
/// The read-header timeout of the run (kube-apiserver's is 32 s; shorter here so the run is short, long enough that
/// every stalled connection is open before the first is dropped on a busy machine).
const TIMEOUT: Duration = Duration::from_secs(10);

/// A line of /proc/self/status, in kB (or a count).
fn status(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(Iterator::count).unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One GET on a fresh connection; its time.
fn fresh_get(server: &ApiServer) -> f64 {
    let start = Instant::now();
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(out.starts_with(b"HTTP/1.1 200 "));
    start.elapsed().as_secs_f64()
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("hostile bench: run with `cargo bench --bench hostile`");
        return;
    }
    let server = ApiServer::builder().read_header_timeout(TIMEOUT).start().unwrap();
    let idle: Vec<f64> = (0..200).map(|_| fresh_get(&server)).collect();
    wait_until("no connection", || server.connections() == 0);
    let (rss0, threads0, fds0) = (status("VmRSS:"), status("Threads:"), fds());

    let opened = Instant::now();
    let stalled: Vec<(TcpStream, Instant)> = (0..STALLED)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr()).unwrap();
            s.write_all(b"GET /api/v1/namespaces/default HTTP/1.1\r\nHo").unwrap();
            (s, Instant::now())
        })
        .collect();
    wait_until("every stalled connection held", || server.connections() == STALLED);
    let held_after = opened.elapsed();
    let (rss1, threads1, fds1) = (status("VmRSS:"), status("Threads:"), fds());
    let busy: Vec<f64> = (0..200).map(|_| fresh_get(&server)).collect();

    // Each stalled connection is dropped by the server: how long after its first bytes.
    let readers: Vec<_> = stalled
        .into_iter()
        .map(|(mut s, sent)| {
            thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
                let mut sink = Vec::new();
                let _ = s.read_to_end(&mut sink);
                sent.elapsed().as_secs_f64()
            })
        })
        .collect();
    let dropped: Vec<f64> = readers.into_iter().map(|h| h.join().unwrap()).collect();
    wait_until("every connection gone", || server.connections() == 0);
    wait_until("threads back", || status("Threads:") == threads0);
    let (rss2, fds2) = (status("VmRSS:"), fds());

    let per_conn_kib = (rss1.saturating_sub(rss0)) as f64 / STALLED as f64;
    println!("{STALLED} stalled connections (half a request head each), read-header timeout {TIMEOUT:?}");
    println!(
        "  held at once                  {} (opened and accepted in {:.0} ms)",
        STALLED,
        held_after.as_secs_f64() * 1e3
    );
    println!(
        "  process RSS                   {:.1} MiB -> {:.1} MiB: {per_conn_kib:.0} KiB per held connection",
        rss0 as f64 / 1024.0,
        rss1 as f64 / 1024.0
    );
    println!(
        "  threads / file descriptors    {threads0}/{fds0} -> {threads1}/{fds1} (the test's own {STALLED} client sockets included) -> back to {}/{fds2}",
        status("Threads:")
    );
    let (min, med, max) = (
        dropped.iter().copied().fold(f64::MAX, f64::min),
        median(dropped.clone()),
        dropped.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "  dropped after                 min {:.3} s, median {:.3} s, max {:.3} s (timeout {:.3} s)",
        min,
        med,
        max,
        TIMEOUT.as_secs_f64()
    );
    println!(
        "  fresh GET, median of 200      {:.2} ms idle, {:.2} ms with {STALLED} held",
        median(idle) * 1e3,
        median(busy) * 1e3
    );
    println!("  RSS once they are gone        {:.1} MiB", rss2 as f64 / 1024.0);
}
