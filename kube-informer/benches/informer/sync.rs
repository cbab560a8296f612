//! `sync`: one informer's initial sync (and relist), measured in its own process; the sync runs over sizes.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube_informer::cache::{Fifo, ReflectorConfig};
use kube_informer::client::{Api, Client, Config};
use kube_informer::informer::{InformerOptions, Notification, SharedIndexInformer, strip_managed_fields};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{DynamicObject, Object};

use crate::child::{Proc, Server, num};
use crate::corpus::configmaps;
use crate::lean::{Kind, LeanServer};
use crate::procfs;
use crate::report::{env_or, medians, run_line};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Typed,
    Dynamic,
    Stripped,
    /// Typed, initial state from a streaming list (`sendInitialEvents`) instead of LIST.
    TypedWatchList,
}

impl Mode {
    pub(crate) fn all() -> [Mode; 4] {
        [Mode::Typed, Mode::Dynamic, Mode::Stripped, Mode::TypedWatchList]
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Typed => "typed",
            Mode::Dynamic => "dynamic",
            Mode::Stripped => "stripped",
            Mode::TypedWatchList => "typed-watchlist",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Mode::Typed => "ConfigMap",
            Mode::Dynamic => "DynamicObject",
            Mode::Stripped => "ConfigMap, managedFields stripped",
            Mode::TypedWatchList => "ConfigMap, streaming list",
        }
    }

    pub(crate) fn parse(s: &str) -> Mode {
        Mode::all().into_iter().find(|m| m.name() == s).expect("mode")
    }
}

pub(crate) fn client(kubeconfig: &str) -> Client {
    Client::new(Config::from_kubeconfig_file(kubeconfig, None).unwrap()).unwrap()
}

pub(crate) fn reflector_config(streaming: bool) -> ReflectorConfig {
    ReflectorConfig {
        streaming_list: streaming,
        relist_jitter: Duration::ZERO,
        ..Default::default()
    }
}

/// `real` or `delta`: the queue of a `sync` or `burst` child.
pub(crate) fn fifo_arg(name: &str) -> Fifo {
    match name {
        "real" => Fifo::Real,
        "delta" => Fifo::Delta,
        other => panic!("queue {other:?}: real or delta"),
    }
}

pub(crate) fn fifo_name(fifo: Fifo) -> &'static str {
    match fifo {
        Fifo::Real => "real",
        Fifo::Delta => "delta",
    }
}

pub(crate) fn sync_child(args: &[String]) {
    let mode = Mode::parse(&args[0]);
    let kubeconfig = &args[1];
    let n: usize = args[2].parse().unwrap();
    let relist = args[3] == "relist";
    let fifo = args.get(4).map_or(Fifo::default(), |f| fifo_arg(f));
    let client = client(kubeconfig);
    let opts = |o: InformerOptions<ConfigMap>| o.reflector(reflector_config(mode == Mode::TypedWatchList));
    match mode {
        Mode::Typed | Mode::TypedWatchList => run_sync(
            Api::<ConfigMap>::all(client),
            opts(InformerOptions::default()),
            n,
            relist,
            fifo,
        ),
        Mode::Stripped => run_sync(
            Api::<ConfigMap>::all(client),
            opts(InformerOptions::default()).transform(strip_managed_fields),
            n,
            relist,
            fifo,
        ),
        Mode::Dynamic => run_sync(
            Api::<DynamicObject>::all_with(client, &configmaps()),
            InformerOptions::default().reflector(reflector_config(false)),
            n,
            relist,
            fifo,
        ),
    }
}

pub(crate) fn run_sync<K: Object>(api: Api<K>, opts: InformerOptions<K>, n: usize, relist: bool, fifo: Fifo) {
    let base = procfs::rss();
    procfs::reset_peak();
    let (t0, cpu0) = (Instant::now(), procfs::cpu());
    let informer = SharedIndexInformer::for_api(&api, opts.fifo(fifo));
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    informer
        .add_event_handler(move |_: &Notification<K>| {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    informer.start().unwrap();
    // Ten minutes, or longer for a run under callgrind (~50 times slower): `INFORMER_BENCH_SYNC_TIMEOUT` seconds.
    let timeout = Duration::from_secs(env_or("INFORMER_BENCH_SYNC_TIMEOUT", 600));
    assert!(informer.wait_for_cache_sync(timeout).is_ok(), "sync timed out");
    let (synced, cpu) = (t0.elapsed().as_secs_f64(), procfs::cpu() - cpu0);
    let peak = procfs::peak();
    assert_eq!(informer.lister().len(), n);
    assert_eq!(seen.load(Ordering::Relaxed), n);
    // Steady state: the watch is idle; give the allocator's deferred work a moment.
    std::thread::sleep(Duration::from_millis(500));
    let steady = procfs::rss();
    let mut out = format!(
        "RESULT synced={synced:.4} cpu={cpu:.4} base={base} peak={peak} steady={steady} per_object={:.1}",
        (steady.saturating_sub(base)) as f64 / n as f64
    );
    if relist {
        let before = informer.metrics().reflector;
        procfs::reset_peak();
        let cpu0 = procfs::cpu();
        println!("NEED relist");
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
        // Done: a new list ran, the watch after it is open, and everything it queued reached the store and the
        // handler.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let m = informer.metrics();
            if m.reflector.lists > before.lists
                && m.reflector.watches >= before.watches + 2
                && m.fifo_depth == 0
                && m.handlers.iter().all(|h| h.pending == 0)
            {
                break;
            }
            assert!(Instant::now() < deadline, "relist timed out: {m:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
        let m = informer.metrics();
        assert_eq!(m.reflector.relists_gone, before.relists_gone + 1, "{m:?}");
        assert_eq!(informer.lister().len(), n);
        let relist_peak = procfs::peak();
        let relist_cpu = procfs::cpu() - cpu0;
        out += &format!(
            " relist_peak={relist_peak} relist_cpu={relist_cpu:.4} after_relist={}",
            procfs::rss()
        );
    }
    println!("{out}");
    std::io::stdout().flush().unwrap();
    // Tearing down 100k objects is not what is measured.
    std::process::exit(0);
}

pub(crate) struct SyncRow {
    pub(crate) n: usize,
    pub(crate) mode: Mode,
    pub(crate) fifo: Fifo,
    pub(crate) json: f64,
    pub(crate) m: HashMap<String, f64>,
    pub(crate) server_cpu: f64,
}

pub(crate) fn run_sizes(
    sizes: &[usize],
    modes: &[Mode],
    runs: usize,
    relist_at: usize,
    https: bool,
    fifos: &[Fifo],
) -> (Vec<SyncRow>, Vec<String>) {
    let mut rows = Vec::new();
    let mut server_lines = Vec::new();
    for &n in sizes {
        eprintln!("== {n} objects: populating the server");
        let mut server = Server::start(n, 0, https);
        let json = num(&server.ready, "json");
        let stripped = num(&server.ready, "stripped");
        eprintln!(
            "   {:.0} bytes of JSON per object ({stripped:.0} without managedFields), setup {:.1} s",
            json,
            num(&server.ready, "setup")
        );
        // The server alone: a LIST at resourceVersion=0 read by a client that only counts bytes.
        let mut raw = Vec::new();
        for _ in 0..runs {
            let url = server.url.clone();
            let r = server.measure(&["raw".into(), "list".into(), url]);
            raw.push(r);
        }
        let r = medians(&raw);
        server_lines.push(format!(
            "| LIST rv=0, {n} objects ({:.0} MB), raw client | {:.3} s | {:.0} objects/s | {:.0} MB/s | server CPU {:.2} s, client CPU {:.2} s |",
            r["bytes"] / 1e6,
            r["secs"],
            n as f64 / r["secs"],
            r["bytes"] / 1e6 / r["secs"],
            r["server_cpu"],
            r["cpu"],
        ));
        for &mode in modes {
            if mode == Mode::TypedWatchList && n != relist_at {
                continue;
            }
            let relist = n == relist_at && mode != Mode::TypedWatchList;
            // Each run measures every queue in turn, so that a change of load on the machine touches them alike.
            let mut results: Vec<Vec<HashMap<String, String>>> = vec![Vec::new(); fifos.len()];
            for run in 0..runs {
                for (&fifo, results) in fifos.iter().zip(&mut results) {
                    eprintln!("   {} {} run {}", mode.name(), fifo.name(), run + 1);
                    let cpu0 = server.cpu();
                    let mut p = Proc::spawn(&[
                        "sync".into(),
                        mode.name().into(),
                        server.kubeconfig.clone(),
                        n.to_string(),
                        if relist { "relist" } else { "no" }.into(),
                        fifo_name(fifo).into(),
                    ]);
                    if relist {
                        p.expect("NEED ");
                        server.proc.send("relist");
                        server.proc.expect("OK");
                        p.send("go");
                    }
                    let mut r = p.expect("RESULT ");
                    p.finish();
                    r.insert("server_cpu".into(), format!("{}", server.cpu() - cpu0));
                    results.push(r);
                }
            }
            for (&fifo, results) in fifos.iter().zip(&results) {
                let m = medians(results);
                rows.push(SyncRow {
                    n,
                    mode,
                    fifo,
                    json,
                    server_cpu: m["server_cpu"],
                    m,
                });
            }
        }
        server.proc.send("quit");
        server.proc.finish();
    }
    (rows, server_lines)
}

/// The scale run against the lean server: typed ConfigMaps, RealFIFO, at each size (the server's CPU is this
/// process's while the child syncs).
pub(crate) fn run_scale_lean(sizes: &[usize], runs: usize) -> Vec<SyncRow> {
    let mut rows = Vec::new();
    for &n in sizes {
        eprintln!("== {n} objects: the lean server");
        let lean = LeanServer::start(Kind::ConfigMaps, n);
        eprintln!("   {:.0} bytes of JSON per object", lean.json);
        let mut results = Vec::new();
        for run in 0..runs {
            eprintln!("   {} real run {}", Mode::Typed.name(), run + 1);
            let cpu0 = procfs::cpu();
            let mut p = Proc::spawn(&[
                "sync".into(),
                Mode::Typed.name().into(),
                lean.kubeconfig.clone(),
                n.to_string(),
                "no".into(),
                fifo_name(Fifo::Real).into(),
            ]);
            let mut r = p.expect("RESULT ");
            p.finish();
            r.insert("server_cpu".into(), format!("{}", procfs::cpu() - cpu0));
            eprintln!("{}", run_line(&r, n));
            results.push(r);
        }
        let m = medians(&results);
        rows.push(SyncRow {
            n,
            mode: Mode::Typed,
            fifo: Fifo::Real,
            json: lean.json,
            server_cpu: m["server_cpu"],
            m,
        });
    }
    rows
}
