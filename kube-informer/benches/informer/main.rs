//! End-to-end informer figures against the embedded API server: initial sync (time, CPU, peak and steady RSS, RSS
//! per cached object against the objects' JSON size), a relist after 410, and a watch burst through 1 and 4
//! handlers compared with the decoder alone.
//!
//! Also the memory of a cache of Secrets (TLS certificates, ~6 KB of data each) held whole and as
//! `PartialObjectMetadata` (a metadata-only informer): RSS per Secret; and of a cache of Pods (a Deployment's pods
//! of ~8 KB of JSON each, with the managedFields of the ReplicaSet controller and the kubelet) as this crate's
//! `Pod`, `DynamicObject`, metadata only and — built with `--features k8s-openapi,k8s-openapi/latest` —
//! k8s-openapi's `Pod`, with and without managedFields.
//!
//! Run: `cargo bench --bench informer` (prints a table; `harness = false`). Environment knobs:
//! `INFORMER_BENCH_SIZES` (default `10000,50000,100000`; empty for none), `INFORMER_BENCH_SECRETS` (default 10000;
//! 0 for none), `INFORMER_BENCH_PODS` (default 100000; 0 for none), `INFORMER_BENCH_POD_MODES` (the Pod caches
//! measured, by name: `pod,dynamic,metadata,k8s-openapi,pod-stripped,metadata-stripped,k8s-openapi-stripped`; default
//! all), `INFORMER_BENCH_SCALE` (the scale run: typed
//! ConfigMaps at each size given, e.g. `10000,100000,1000000`; default none), `INFORMER_BENCH_RUNS` (default 3;
//! medians are reported),
//! `INFORMER_BENCH_EVENTS` (default 200000), `INFORMER_BENCH_RELIST_AT` (default 50000), `INFORMER_BENCH_HTTP=1`
//! (initial syncs over plain HTTP instead of HTTPS), `INFORMER_BENCH_BURST=https|http|none` (default: the watch burst
//! over both), `INFORMER_BENCH_FIFOS` (default `real,delta`: the informers' queue, `Fifo::Real` and `Fifo::Delta`,
//! each measured; one of them alone halves the syncs' and bursts' time), `INFORMER_BENCH_LEAN` (default 1: the scale
//! and Pod runs read from the lean server, see below; 0: from the embedded API server, over HTTPS unless
//! `INFORMER_BENCH_HTTP=1`), `INFORMER_BENCH_SYNC_TIMEOUT` (default 600: seconds a `sync` child waits for its cache;
//! more for a child under callgrind).
//!
//! Every measurement runs in a process of its own, so RSS and CPU are the informer's alone: this binary re-executes
//! itself as `serve` (the embedded API server, driven over stdin/stdout), `sync` (one informer's initial sync and
//! relist), `burst` (the watch burst), `stream` (the same replay through `Api::watch` alone, on one thread: what
//! reading and decoding cost without the informer) and `raw` (the server's own list and watch rates read by a client that only
//! counts bytes, and the decoder's own rate on the same bytes: dropping each object, keeping the latest of each name as
//! a cache does, and decoding into the object replaced as the informer does); `serve-lean` runs the lean server alone,
//! for a child run by hand (`tools/bench-callgrind/informer-scale.py` counts a `sync` child's instructions with it). RSS and CPU come from `/proc/self/status` (VmRSS,
//! VmHWM, reset between phases through `/proc/self/clear_refs`) and `/proc/self/stat` (utime + stime).
//!
//! The sync table, the relist, the watch burst and the Secrets read from the embedded API server: they measure its
//! path too (its list and watch encoding, TLS, compaction and the 410 of a relist). The scale run (up to 1M objects)
//! and the Pod corpus (100k Pods) read from the *lean server* ([`lean`]): a few hundred lines of HTTP/1.1 in this
//! (parent) process that generates each object's JSON from its index while writing a list — the embedded server
//! would hold gigabytes for them (5.2 GB for 20,000 Pods) and take ~11 s per 1,000 Pods to populate here. It serves
//! the bytes the embedded server would (checked at its start against a small embedded server holding a few of the
//! same objects), over plain HTTP; what its scope leaves out is in its module's docs. Its CPU is the parent's, so the
//! informer's figures stay the child's alone.

mod burst;
mod child;
mod corpus;
mod lean;
mod ordered;
mod pods;
mod procfs;
mod raw;
mod report;
mod secrets;
mod sync;

use kube_informer::cache::Fifo;

use burst::{Burst, burst_child, run_burst, stream_child};
use child::serve;
use lean::serve_lean;
use pods::{pods_child, report_pods, run_pods, serve_pods};
use raw::raw_child;
use report::{env_or, report, report_scale};
use secrets::{report_secrets, run_secrets, secrets_child, serve_secrets};
use sync::{Mode, fifo_arg, run_scale_lean, run_sizes, sync_child};
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => return serve(&args[1..]),
        Some("sync") => return sync_child(&args[1..]),
        Some("burst") => return burst_child(&args[1..]),
        Some("stream") => return stream_child(&args[1..]),
        Some("raw") => return raw_child(&args[1..]),
        Some("serve-secrets") => return serve_secrets(&args[1..]),
        Some("secrets") => return secrets_child(&args[1..]),
        Some("serve-pods") => return serve_pods(&args[1..]),
        Some("pods") => return pods_child(&args[1..]),
        Some("serve-lean") => return serve_lean(&args[1..]),
        _ => {}
    }
    // `cargo test --benches` runs bench binaries without `--bench`: keep that quick.
    if !args.iter().any(|a| a == "--bench") {
        println!("informer bench: run with `cargo bench --bench informer`");
        return;
    }
    let sizes: Vec<usize> = std::env::var("INFORMER_BENCH_SIZES")
        .unwrap_or_else(|_| "10000,50000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs: usize = env_or("INFORMER_BENCH_RUNS", 3);
    let events: usize = env_or("INFORMER_BENCH_EVENTS", 200_000);
    let relist_at: usize = env_or("INFORMER_BENCH_RELIST_AT", 50_000);
    let https = env_or("INFORMER_BENCH_HTTP", 0) == 0;
    let fifos: Vec<Fifo> = std::env::var("INFORMER_BENCH_FIFOS")
        .unwrap_or_else(|_| "real,delta".into())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| fifo_arg(s.trim()))
        .collect();

    let (rows, mut server_lines) = run_sizes(&sizes, &Mode::all(), runs, relist_at, https, &fifos);

    // Watch burst, over each transport.
    let transports: Vec<bool> = match std::env::var("INFORMER_BENCH_BURST").as_deref() {
        Ok("https") => vec![true],
        Ok("http") => vec![false],
        Ok("none") => vec![],
        _ if events > 0 => vec![true, false],
        _ => vec![],
    };
    let bursts: Vec<Burst> = transports
        .into_iter()
        .map(|https| run_burst(events, runs, https, &fifos, &mut server_lines))
        .collect();

    report(&rows, &server_lines, &bursts, events, https, runs);

    let secrets: usize = env_or("INFORMER_BENCH_SECRETS", 10_000);
    if secrets > 0 {
        report_secrets(secrets, &run_secrets(secrets, runs, https));
    }

    // The scale and Pod runs read from the lean server unless told otherwise.
    let lean = env_or("INFORMER_BENCH_LEAN", 1) != 0;
    let scale: Vec<usize> = std::env::var("INFORMER_BENCH_SCALE")
        .unwrap_or_default()
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    if !scale.is_empty() {
        let rows = if lean {
            run_scale_lean(&scale, runs)
        } else {
            run_sizes(&scale, &[Mode::Typed], runs, 0, https, &[Fifo::Real]).0
        };
        report_scale(&rows, lean || !https);
    }

    let pods: usize = env_or("INFORMER_BENCH_PODS", 100_000);
    if pods > 0 {
        report_pods(pods, &run_pods(pods, runs, https, lean));
    }
}
