//! Medians and the printed tables of the sync, relist and burst runs.

use std::collections::HashMap;

use crate::burst::Burst;
use crate::child::num;
use crate::sync::{Mode, SyncRow};

pub(crate) fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Medians of each key over runs.
pub(crate) fn medians(runs: &[HashMap<String, String>]) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for k in runs[0].keys() {
        out.insert(k.clone(), median(runs.iter().map(|r| num(r, k)).collect()));
    }
    out
}

/// One run's figures, for the spread of the medians reported.
pub(crate) fn run_line(r: &HashMap<String, String>, n: usize) -> String {
    format!(
        "      RSS/object {:.0} B, CPU/object {:.1} µs, synced {:.2} s",
        num(r, "per_object"),
        num(r, "cpu") * 1e6 / n as f64,
        num(r, "synced")
    )
}

pub(crate) fn mb(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub(crate) fn report(
    rows: &[SyncRow],
    server_lines: &[String],
    bursts: &[Burst],
    events: usize,
    https: bool,
    runs: usize,
) {
    println!();
    println!(
        "kube-informer end-to-end (sync over {}; medians of {runs} runs; each figure measured in a process of its own; \
         load average at the end {})",
        if https { "HTTPS" } else { "HTTP" },
        load_average()
    );
    println!();
    println!("Initial sync (LIST resourceVersion=0, streamed into the cache; one no-op handler)");
    println!();
    println!(
        "| objects | type | queue | synced (s) | CPU (s) | CPU/object (µs) | peak RSS (MB) | steady RSS (MB) | peak ÷ steady | RSS/object (B) | ÷ JSON | server CPU (s) |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let m = &r.m;
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.1} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} |",
            r.n,
            r.mode.label(),
            r.fifo.name(),
            m["synced"],
            m["cpu"],
            m["cpu"] * 1e6 / r.n as f64,
            mb(m["peak"]),
            mb(m["steady"]),
            m["peak"] / m["steady"],
            m["per_object"],
            m["per_object"] / r.json,
            r.server_cpu,
        );
    }
    if let Some(json) = rows.first().map(|r| r.json) {
        println!();
        println!("JSON size per object as served: {json:.0} bytes (with managedFields).");
    }
    let relists: Vec<&SyncRow> = rows.iter().filter(|r| r.m.contains_key("relist_peak")).collect();
    if !relists.is_empty() {
        println!();
        println!("Relist after 410 (compacted and watch cut), cache already full");
        println!();
        println!(
            "| objects | type | queue | steady RSS (MB) | peak RSS during relist (MB) | peak ÷ steady | RSS after (MB) | CPU (s) |"
        );
        println!("|---:|---|---|---:|---:|---:|---:|---:|");
        for r in relists {
            let m = &r.m;
            println!(
                "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.2} |",
                r.n,
                r.mode.label(),
                r.fifo.name(),
                mb(m["steady"]),
                mb(m["relist_peak"]),
                m["relist_peak"] / m["steady"],
                mb(m["after_relist"]),
                m["relist_cpu"]
            );
        }
    }
    if !bursts.is_empty() {
        println!();
        println!(
            "Watch burst: {events} MODIFIED events (typed ConfigMap, ~2 KB) replayed from the server's history \
             (ratios taken within each run)"
        );
        println!();
        println!("| transport | path | events/s | CPU/event (µs) | ÷ decoder | server CPU (s) |");
        println!("|---|---|---:|---:|---:|---:|");
        for b in bursts {
            let t = if b.https { "HTTPS" } else { "HTTP" };
            println!(
                "| {t} | WatchDecoder alone, same bytes in memory | {:.0} | {:.2} | 1.00 | |",
                b.raw["decode_rate"],
                1e6 / b.raw["decode_rate"]
            );
            for (what, key) in [
                ("keeping the last object of each name", "live_rate"),
                ("and decoding into the object replaced", "live_recycling_rate"),
            ] {
                println!(
                    "| {t} | WatchDecoder alone, {what} | {:.0} | {:.2} | {:.2} | |",
                    b.raw[key],
                    1e6 / b.raw[key],
                    b.raw[key] / b.raw["decode_rate"]
                );
            }
            println!(
                "| {t} | `Api::watch` alone on one thread (read, decode, keep the latest of each name) | {:.0} | {:.2} | {:.2} | |",
                b.stream["rate"], b.stream["cpu_us"], b.stream["vs_decoder"]
            );
            for ((fifo, h), m) in &b.informer {
                println!(
                    "| {t} | informer ({}), {h} handler(s) | {:.0} | {:.2} | {:.2} | {:.2} |",
                    fifo.name(),
                    m["rate"],
                    m["cpu_us"],
                    m["vs_decoder"],
                    m["server_cpu"]
                );
            }
        }
    }
    println!();
    println!("Embedded API server alone (separate process; a client that only counts bytes)");
    println!();
    for l in server_lines {
        println!("{l}");
    }
    println!();
    println!("Targets");
    for r in rows.iter().filter(|r| r.mode != Mode::TypedWatchList) {
        let m = &r.m;
        let per_json = m["per_object"] / r.json;
        let limit = match r.mode {
            Mode::Typed => 1.5,
            Mode::Dynamic => 2.0,
            _ => 1.0,
        };
        println!(
            "  {:>6} {:<36} {:<9} CPU/object {:>5.1} µs (≤ 20) | RSS/object ÷ JSON {:.2} (≤ {limit}) | sync peak ÷ steady {:.2} (≤ 1.3){}",
            r.n,
            r.mode.label(),
            r.fifo.name(),
            m["cpu"] * 1e6 / r.n as f64,
            per_json,
            m["peak"] / m["steady"],
            m.get("relist_peak")
                .map(|p| format!(" | relist peak ÷ steady {:.2} (≤ 1.3)", p / m["steady"]))
                .unwrap_or_default()
        );
    }
    for b in bursts {
        for (fifo, four_vs_one) in &b.four_vs_one {
            let one = b
                .informer
                .iter()
                .find(|((f, h), _)| f == fifo && *h == 1)
                .map_or(f64::NAN, |(_, m)| m["vs_decoder"]);
            println!(
                "  watch burst over {} ({}): 1 handler ÷ decoder {one:.2} (≥ 0.7) | 4 handlers ÷ 1 handler {four_vs_one:.2} (≥ 0.8)",
                if b.https { "HTTPS" } else { "HTTP" },
                fifo.name(),
            );
        }
    }
}

/// Cost per object as the cache grows: the scale run's table.
pub(crate) fn report_scale(rows: &[SyncRow], http: bool) {
    println!();
    println!(
        "Scale: the same ConfigMaps from 10k to 1M objects over {} (cost per object should not grow with the cache)",
        if http { "HTTP" } else { "HTTPS" }
    );
    println!();
    println!(
        "| objects | type | synced (s) | CPU/object (µs) | RSS/object (B) | ÷ JSON | peak ÷ steady | steady RSS (MB) | server CPU (s) |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let m = &r.m;
        println!(
            "| {} | {} | {:.2} | {:.1} | {:.0} | {:.2} | {:.2} | {:.0} | {:.2} |",
            r.n,
            r.mode.label(),
            m["synced"],
            m["cpu"] * 1e6 / r.n as f64,
            m["per_object"],
            m["per_object"] / r.json,
            m["peak"] / m["steady"],
            mb(m["steady"]),
            r.server_cpu,
        );
    }
}
