//! What a replica of a sharded informer spends to sync its shard, with the API server filtering (`ShardedListAndWatch`
//! on) and without it (gate off: every replica receives and decodes everything, and drops the other shards itself).
//!
//! `cargo bench -p kube-informer --bench sharding` (`SHARD_BENCH_OBJECTS` objects, 100,000 by default): one embedded
//! server per gate setting holding that many ConfigMaps (about 1 KB of JSON each) in one namespace; then 1, 2 and 4
//! replicas — each a child process running one informer of shard `split(n, i)` (1 replica: no shard) — start
//! together and sync (a streaming list, the reflector's default). Per replica: bytes received from the server
//! (counted by a relay in the parent process that each replica connects through), and, read from `/proc/self` once
//! synced, CPU (utime + stime), peak RSS (VmHWM), objects cached and seconds to sync. The table gives the mean over
//! the replicas of a run.
//!
//! A second table runs the same replicas as a **sharded controller** (`ControllerBuilder::sharded`, 32 slots,
//! Leases of 3 s): the replicas start together and share the slots over Leases; once the parent sees every slot
//! held and the shares balanced, each replica reports what it spent so far — its cache's sync, the relists of the
//! hand-overs while the slots were balanced, the Lease traffic — and the time from its start to that moment.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use kube_informer::client::{Client, Config};
use kube_informer::informer::{FactoryOptions, SharedInformerFactory};
use kube_informer::object::ApiResource;
use kube_informer::object::core::ConfigMap;
use kube_informer::selector::{ShardField, ShardSelector};
use kube_informer_apiserver::ApiServer;
use serde_json::json;

fn proc_field(file: &str, field: &str) -> u64 {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// User + system CPU seconds of this process.
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0) + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    ticks as f64 / 100.0
}

/// A child: one informer of shard `index` of `count`, synced; prints its figures.
fn replica(url: &str, count: u32, index: u32) {
    let started = Instant::now();
    let client = Client::new(Config::new(url).no_rate_limit()).unwrap();
    let mut options = FactoryOptions::default().namespace("bench");
    if count > 1 {
        options = options.shard(ShardSelector::split(ShardField::Uid, count, index).unwrap());
    }
    let factory = SharedInformerFactory::new(client, options);
    let informer = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    factory.wait_for_cache_sync(Duration::from_secs(900)).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let m = informer.metrics();
    println!(
        "synced objects={} cpu={:.2} peak_rss={} secs={:.2} dropped={}",
        informer.lister().len(),
        cpu(),
        proc_field("/proc/self/status", "VmHWM:") * 1024,
        secs,
        m.reflector.shard_filtered_client_side,
    );
    factory.shutdown();
}

fn parse_kv(line: &str) -> HashMap<String, f64> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| Some((k.to_owned(), v.parse().ok()?)))
        .collect()
}

/// A child: a sharded controller's replica `index` of `count`; reports when asked on stdin, once its cache holds
/// exactly its slots' objects and a watch is open (its last relist done).
fn controller_replica(url: &str, count: u32, index: u32) {
    use kube_informer::controller::{Action, Controller, ShardingConfig};
    use kube_informer::leaderelection::LeaderElectionConfig;
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).try_init();
    let started = Instant::now();
    let client = Client::new(Config::new(url).no_rate_limit()).unwrap();
    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default().namespace("bench"));
    let informer = factory.informer::<ConfigMap>();
    let election = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(400));
    let sharding = ShardingConfig::new("bench", format!("r{index}-of-{count}")).election(election);
    let controller = Controller::builder(informer.clone(), ())
        .sharded(&client, sharding)
        .build(|_, _| Ok::<_, kube_informer::Error>(Action::await_change()))
        .unwrap();
    controller.start().unwrap();
    // The parent says how many objects this replica's slots hold on the server.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let expected: usize = line.trim().parse().unwrap();
    let asked = Instant::now();
    let mut told = 0;
    loop {
        let m = controller.sharding_metrics().unwrap();
        let held: usize = m.objects_per_slot.values().sum();
        let cached = informer.lister().len();
        let watching = informer.metrics().reflector.watch_age.is_some();
        if held == expected && cached == expected && watching {
            break;
        }
        if asked.elapsed().as_secs() / 10 > told {
            told += 1;
            eprintln!(
                "replica {index} of {count}: {cached} cached, {held} in its slots {:?}, {expected} expected",
                m.owned
            );
        }
        thread::sleep(Duration::from_millis(200));
    }
    let m = controller.sharding_metrics().unwrap();
    println!(
        "synced objects={} cpu={:.2} peak_rss={} secs={:.2} slots={} lists={}",
        informer.lister().len(),
        cpu(),
        proc_field("/proc/self/status", "VmHWM:") * 1024,
        started.elapsed().as_secs_f64(),
        m.owned.len(),
        informer.metrics().reflector.lists,
    );
    // Stopping releases the slots, which the replicas still reporting would take: all stop together.
    std::io::stdin().read_line(&mut line).unwrap();
    controller.stop();
    factory.shutdown();
}

/// Copies `from` to `to`, adding what it copied to `counted`.
fn pump(mut from: TcpStream, mut to: TcpStream, counted: Option<Arc<AtomicU64>>) {
    let mut buf = vec![0; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                if let Some(c) = &counted {
                    c.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// A relay to `upstream` on a port of its own: its URL, and the bytes it has carried from the server to clients.
fn relay(upstream: SocketAddr) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let counted = Arc::new(AtomicU64::new(0));
    let c = counted.clone();
    thread::spawn(move || {
        for down in listener.incoming().map_while(Result::ok) {
            let Ok(up) = TcpStream::connect(upstream) else { continue };
            let (down2, up2) = (down.try_clone().unwrap(), up.try_clone().unwrap());
            let c = c.clone();
            thread::spawn(move || pump(down, up, None));
            thread::spawn(move || pump(up2, down2, Some(c)));
        }
    });
    (url, counted)
}

fn run(server: &ApiServer, count: u32) -> Vec<HashMap<String, f64>> {
    let relays: Vec<(String, Arc<AtomicU64>)> = (0..count).map(|_| relay(server.addr())).collect();
    let children: Vec<Child> = (0..count)
        .map(|i| {
            Command::new(std::env::current_exe().unwrap())
                .args(["replica", &relays[i as usize].0, &count.to_string(), &i.to_string()])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("re-executing the bench binary")
        })
        .collect();
    children
        .into_iter()
        .zip(relays)
        .map(|(mut c, (_, bytes))| {
            let out = BufReader::new(c.stdout.take().unwrap());
            let line = out
                .lines()
                .map_while(Result::ok)
                .find(|l| l.starts_with("synced "))
                .expect("the replica synced");
            let _ = c.wait();
            let mut row = parse_kv(&line);
            row.insert("bytes".into(), bytes.load(Ordering::Relaxed) as f64);
            row
        })
        .collect()
}

/// `count` sharded-controller replicas; their figures once the slots are balanced.
fn run_controllers(server: &ApiServer, count: u32) -> Vec<HashMap<String, f64>> {
    let relays: Vec<(String, Arc<AtomicU64>)> = (0..count).map(|_| relay(server.addr())).collect();
    let mut children: Vec<Child> = (0..count)
        .map(|i| {
            Command::new(std::env::current_exe().unwrap())
                .args(["controller", &relays[i as usize].0, &count.to_string(), &i.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("re-executing the bench binary")
        })
        .collect();
    // Balanced: every slot held by a replica of this run, each holding ⌊32/n⌋ or ⌈32/n⌉.
    let deadline = Instant::now() + Duration::from_secs(300);
    let owners = loop {
        let leases = server
            .list::<kube_informer::leaderelection::Lease>(Some("bench"))
            .unwrap();
        let mut owners: HashMap<u32, String> = HashMap::new();
        for l in &leases {
            let slot = l
                .metadata
                .name
                .as_deref()
                .and_then(|n| n.rsplit_once("-slot-"))
                .and_then(|(_, i)| i.parse().ok());
            let holder = l.spec.holder_identity.clone().unwrap_or_default();
            if let Some(slot) = slot
                && holder.ends_with(&format!("-of-{count}"))
            {
                owners.insert(slot, holder);
            }
        }
        let mut per: HashMap<&String, u32> = HashMap::new();
        for h in owners.values() {
            *per.entry(h).or_default() += 1;
        }
        let fair = per.len() == count as usize && per.values().all(|n| *n == 32 / count || *n == 32u32.div_ceil(count));
        if owners.len() == 32 && fair {
            break owners;
        }
        assert!(Instant::now() < deadline, "the slots did not settle: {per:?}");
        thread::sleep(Duration::from_millis(50));
    };
    // What each replica's slots hold on the server: it reports once its cache holds exactly that.
    let mut expected: HashMap<String, usize> = HashMap::new();
    for cm in server.list::<ConfigMap>(Some("bench")).unwrap() {
        let hash = ShardSelector::hash(cm.metadata.uid.as_deref().unwrap_or(""));
        let slot = ShardSelector::slot_of(hash, 32).unwrap();
        *expected.entry(owners[&slot].clone()).or_default() += 1;
    }
    for (i, c) in children.iter_mut().enumerate() {
        let n = expected.get(&format!("r{i}-of-{count}")).copied().unwrap_or(0);
        c.stdin
            .as_mut()
            .unwrap()
            .write_all(format!("{n}\n").as_bytes())
            .unwrap();
    }
    let rows = children
        .iter_mut()
        .zip(relays)
        .map(|(c, (_, bytes))| {
            let out = BufReader::new(c.stdout.take().unwrap());
            let line = out
                .lines()
                .map_while(Result::ok)
                .find(|l| l.starts_with("synced "))
                .expect("the replica reported");
            let mut row = parse_kv(&line);
            row.insert("bytes".into(), bytes.load(Ordering::Relaxed) as f64);
            row
        })
        .collect();
    for c in &mut children {
        c.stdin.as_mut().unwrap().write_all(b"stop\n").unwrap();
    }
    for mut c in children {
        let _ = c.wait();
    }
    rows
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("replica") => return replica(&args[2], args[3].parse().unwrap(), args[4].parse().unwrap()),
        Some("controller") => {
            return controller_replica(&args[2], args[3].parse().unwrap(), args[4].parse().unwrap());
        }
        _ => {}
    }
    // `cargo bench` passes `--bench`; anything else that looks like a filter is ignored.
    let objects: usize = std::env::var("SHARD_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let ar = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    println!("sharding: {objects} ConfigMaps of about 1 KB; per replica, the mean of the replicas of each run");
    println!(
        "{:<9} {:>8} {:>12} {:>14} {:>9} {:>12} {:>9} {:>12}",
        "gate", "replicas", "objects", "bytes recv", "CPU s", "peak RSS", "sync s", "dropped"
    );
    let mut coordinated = Vec::new();
    for gate in [true, false] {
        let server = ApiServer::builder()
            .sharded_list_and_watch(gate)
            .namespace("bench")
            .compaction_interval(None)
            .start()
            .unwrap();
        let filler = "x".repeat(800);
        for i in 0..objects {
            server
                .create_json(
                    &ar,
                    Some("bench"),
                    json!({"metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench"}},
                           "data": {"v": format!("{i}"), "filler": filler}}),
                )
                .unwrap();
        }
        for count in [1u32, 2, 4] {
            if std::env::var_os("SHARD_BENCH_ONLY_CONTROLLERS").is_some() {
                break;
            }
            let rows = run(&server, count);
            let mean = |k: &str| rows.iter().map(|r| r[k]).sum::<f64>() / rows.len() as f64;
            println!(
                "{:<9} {:>8} {:>12.0} {:>11.1} MB {:>9.2} {:>9.1} MB {:>9.2} {:>12.0}",
                if gate { "on" } else { "off" },
                count,
                mean("objects"),
                mean("bytes") / 1e6,
                mean("cpu"),
                mean("peak_rss") / 1e6,
                mean("secs"),
                mean("dropped"),
            );
        }
        for count in [1u32, 2, 4] {
            coordinated.push((gate, count, run_controllers(&server, count)));
        }
        server.shutdown();
    }
    println!("\nsharded controller (32 slots over Leases): per replica, once the slots are balanced");
    println!(
        "{:<9} {:>8} {:>7} {:>12} {:>14} {:>9} {:>12} {:>9} {:>6}",
        "gate", "replicas", "slots", "objects", "bytes recv", "CPU s", "peak RSS", "secs", "lists"
    );
    for (gate, count, rows) in coordinated {
        let mean = |k: &str| rows.iter().map(|r| r[k]).sum::<f64>() / rows.len() as f64;
        println!(
            "{:<9} {:>8} {:>7.1} {:>12.0} {:>11.1} MB {:>9.2} {:>9.1} MB {:>9.2} {:>6.1}",
            if gate { "on" } else { "off" },
            count,
            mean("slots"),
            mean("objects"),
            mean("bytes") / 1e6,
            mean("cpu"),
            mean("peak_rss") / 1e6,
            mean("secs"),
            mean("lists"),
        );
    }
}
