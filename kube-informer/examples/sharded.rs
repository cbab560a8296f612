//! sharded: one controller, several replicas, each reconciling its share of the objects.
//!
//! Every replica runs the same sharded controller over the ConfigMaps of `--namespace`: the objects' uid hashes
//! into 32 slots, each slot owned by one replica through its Lease in `--lease-namespace`, and a replica's
//! informer caches only its slots' objects (asked of the API server with `shardSelector` where it has the
//! `ShardedListAndWatch` gate, filtered by the informer where not). Each replica prints the slots it holds as they
//! change. Kill one: its slots are taken over once its Leases expire. Start another: the others hand it slots.
//! Stop one (SIGTERM, Ctrl-C): it finishes its reconciles and releases its slots at once.
//!
//! ```text
//! cargo run --example sharded        # embedded API server, three replica processes, one killed and restarted
//! cargo run --example sharded -- --kubeconfig FILE [--namespace NS] [--lease-namespace NS] [--identity ID]
//! ```
//!
//! The reconcile only records its work (`--journal FILE` appends `begin`/`end` lines per reconcile, which the
//! tests read to check that no key is ever reconciled by two replicas at once); a real controller writes to the
//! cluster there, through `ctx.client()` — fenced by the term of the key's slot, so that nothing it sends lands
//! once the slot may be another replica's. Each replica also prints (and journals, as `handover <slot> <ms> <id>`)
//! the outage of every slot handed over to it: from the previous owner's last renewal it saw to its first reconcile
//! of the slot. RBAC: list/watch configmaps in `--namespace`; get/list/watch/create/update/delete leases in
//! `--lease-namespace`.

use std::io::Write;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kube_informer::client::{Client, Config};
use kube_informer::controller::{Action, Context, Controller, ShardingConfig};
use kube_informer::informer::FactoryOptions;
use kube_informer::leaderelection::{LeaderElectionConfig, Lease};
use kube_informer::manager::{Manager, ManagerOptions};
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;
use kube_informer_apiserver::ApiServer;
use parking_lot::Mutex;

#[derive(Default)]
struct Args {
    kubeconfig: Option<String>,
    namespace: String,
    lease_namespace: String,
    identity: Option<String>,
    journal: Option<String>,
    /// The Leases' duration in seconds (renew deadline ⅔ of it, retry period 2/15, as client-go's 15/10/2).
    lease_seconds: u64,
    /// Stop when stdin closes (how the demo stops its replicas gracefully), besides SIGTERM and Ctrl-C.
    until_stdin_closes: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        namespace: "default".into(),
        lease_namespace: "default".into(),
        lease_seconds: 15,
        ..Args::default()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--kubeconfig" => a.kubeconfig = Some(value()),
            "--namespace" => a.namespace = value(),
            "--lease-namespace" => a.lease_namespace = value(),
            "--identity" => a.identity = Some(value()),
            "--journal" => a.journal = Some(value()),
            "--lease-seconds" => a.lease_seconds = value().parse().unwrap_or_else(|_| usage()),
            "--until-stdin-closes" => a.until_stdin_closes = true,
            _ => usage(),
        }
    }
    a
}

fn usage() -> ! {
    eprintln!(
        "usage: sharded [--kubeconfig FILE [--namespace NS] [--lease-namespace NS] [--identity ID] [--journal FILE]\n\
         \x20              [--lease-seconds N] [--until-stdin-closes]]"
    );
    std::process::exit(2)
}

/// What each reconcile has: who we are, and where to write down the work.
struct Replica {
    identity: String,
    journal: Option<Mutex<std::fs::File>>,
}

impl Replica {
    /// One line, appended in one write (lines of several processes never mix).
    fn note(&self, line: String) {
        if let Some(journal) = &self.journal {
            let _ = journal.lock().write_all(format!("{line}\n").as_bytes());
        }
    }
}

fn reconcile(key: &str, ctx: &Context<'_, ConfigMap, Replica>) -> kube_informer::Result<Action> {
    let Some(cm) = ctx.object() else {
        return Ok(Action::await_change());
    };
    let me = ctx.data();
    me.note(format!("begin {key} {}", me.identity));
    let round = cm.data.get("round").unwrap_or("-");
    me.note(format!("end {key} {} {round}", me.identity));
    Ok(Action::await_change())
}

fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = parse_args();
    let Some(kubeconfig) = &args.kubeconfig else {
        demo()?;
        return Ok(ExitCode::SUCCESS);
    };
    let lease = Duration::from_secs(args.lease_seconds.max(2));
    let election = LeaderElectionConfig::default()
        .lease_duration(lease)
        .renew_deadline(lease * 2 / 3)
        .retry_period(lease * 2 / 15);
    let options = ManagerOptions::default().factory(FactoryOptions::default().namespace(&args.namespace));
    let manager = Manager::new(Client::new(Config::from_kubeconfig_file(kubeconfig, None)?)?, options)?;
    let client = manager.client().clone();
    let journal = match &args.journal {
        Some(path) => Some(Mutex::new(
            std::fs::OpenOptions::new().create(true).append(true).open(path)?,
        )),
        None => None,
    };
    let mut sharding = ShardingConfig::with_default_identity(&args.lease_namespace)
        .name("sharded")
        .election(election);
    if let Some(id) = &args.identity {
        sharding.identity = id.clone();
    }
    let identity = sharding.identity.clone();
    let controller = Controller::builder(manager.factory().informer::<ConfigMap>(), Replica { identity, journal })
        .sharded(&client, sharding)
        .build(reconcile)?;
    let controller = manager.add_controller(controller)?;
    if args.until_stdin_closes {
        let stop = manager.stop_handle();
        std::thread::Builder::new().name("stdin".into()).spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            stop.stop();
        })?;
    }
    // Prints the slots held whenever they change, and each hand-over's outage once measured.
    let done = Arc::new(AtomicBool::new(false));
    let printer = {
        let (controller, done) = (controller.clone(), done.clone());
        std::thread::Builder::new().name("slots".into()).spawn(move || {
            let mut last = None;
            let mut handovers = std::collections::BTreeMap::new();
            while !done.load(Ordering::Relaxed) {
                let m = controller.sharding_metrics().expect("sharded");
                for (slot, outage) in &m.handovers {
                    if handovers.insert(*slot, *outage) != Some(*outage) {
                        println!("{} took slot {slot} over: {outage:?} without reconciles", m.identity);
                        controller
                            .data()
                            .note(format!("handover {slot} {} {}", outage.as_millis(), m.identity));
                    }
                }
                if last.as_ref() != Some(&m.owned) {
                    println!("{} holds {} slots: {:?}", m.identity, m.owned.len(), m.owned);
                    last = Some(m.owned);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })?
    };
    manager.start()?;
    let report = manager.run()?;
    done.store(true, Ordering::Relaxed);
    let _ = printer.join();
    println!("{report}");
    Ok(report.exit_code()) // 0 when everything stopped cleanly, 1 otherwise
}

/// Without a kubeconfig: an embedded server with the gate on, 300 ConfigMaps, three replicas of this program; one
/// is killed (SIGKILL) and started again; then all stop gracefully. Each step waits until every slot's Lease is
/// held by a live replica, each holding some.
fn demo() -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::builder()
        .sharded_list_and_watch(true)
        .namespaces(["demo"])
        .start()?;
    for i in 0..300 {
        server.create(&ConfigMap::new(ObjectMeta::namespaced("demo", format!("cm-{i}"))).with("round", "0"))?;
    }
    let me = std::env::current_exe()?;
    let kubeconfig = server.kubeconfig_path().to_string_lossy().into_owned();
    let replica = |id: &str| -> std::io::Result<(String, Child)> {
        let child = Command::new(&me)
            .args([
                "--kubeconfig",
                &kubeconfig,
                "--namespace",
                "demo",
                "--lease-namespace",
                "demo",
            ])
            .args(["--identity", id, "--lease-seconds", "3", "--until-stdin-closes"])
            .stdin(Stdio::piped())
            .spawn()?;
        Ok((id.to_owned(), child))
    };
    let settled = |what: &str, replicas: &[(String, Child)]| -> Result<(), Box<dyn std::error::Error>> {
        let started = Instant::now();
        loop {
            let holders: Vec<String> = server
                .list::<Lease>(Some("demo"))?
                .into_iter()
                .filter(|l| {
                    l.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("sharded-slot-"))
                })
                .filter_map(|l| l.spec.holder_identity)
                .collect();
            let live = |h: &String| replicas.iter().any(|(id, _)| id == h);
            let every_slot = holders.iter().filter(|h| live(h)).count() == 32;
            if every_slot && replicas.iter().all(|(id, _)| holders.contains(id)) {
                println!(
                    "--- {what}: every slot owned after {:.1} s",
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(format!("{what}: the slots did not settle").into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let mut replicas = vec![replica("replica-0")?, replica("replica-1")?, replica("replica-2")?];
    settled("three replicas share the slots", &replicas)?;
    let (_, mut killed) = replicas.remove(1);
    killed.kill()?; // SIGKILL: no release; its Leases expire after 3 s
    killed.wait()?;
    settled(
        "replica-1 killed (SIGKILL): the others took its slots once its Leases expired",
        &replicas,
    )?;
    replicas.push(replica("replica-1")?);
    settled("replica-1 started again: the others handed it slots", &replicas)?;
    for (_, mut r) in replicas {
        drop(r.stdin.take()); // a graceful stop: reconciles finished, slots released
        if !r.wait()?.success() {
            return Err("a replica did not stop cleanly".into());
        }
    }
    Ok(())
}
