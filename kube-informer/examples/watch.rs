//! `kubectl get -w` as an informer: prints one line per event of any resource.
//!
//! ```sh
//! cargo run --release --example watch -- RESOURCE [-n NAMESPACE | -A] [-l SELECTOR] [--kubeconfig FILE]
//!     [--context NAME] [--strip-managed-fields] [--sync-only]
//! ```
//!
//! RESOURCE is a plural (`configmaps`, `pods`), `plural.group` (`deployments.apps`) or `group/version/plural`.
//! Lines: `ADDED ns/name rv=…`, `MODIFIED …`, `DELETED …`, `DELETED_UNKNOWN …` (a deletion missed while
//! disconnected), and `SYNCED objects=N seconds=S` once the cache holds the server's state. With `--sync-only` it
//! prints one JSON line `{"objects":N,"seconds_to_synced":S,"cpu_seconds":C,"peak_rss_kb":K}` after syncing and
//! exits 0: a quick way to measure an initial sync against a real cluster.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kube_informer::cache::ListWatch;
use kube_informer::client::{Api, Client, Config};
use kube_informer::informer::{InformerOptions, Notification, SharedIndexInformer, strip_managed_fields};
use kube_informer::object::{DynamicObject, key_of};

const USAGE: &str = "usage: watch RESOURCE [-n NAMESPACE | -A] [-l SELECTOR] [--kubeconfig FILE] [--context NAME] \
                     [--strip-managed-fields] [--sync-only]";

#[derive(Default)]
struct Args {
    resource: String,
    namespace: Option<String>,
    all_namespaces: bool,
    selector: Option<String>,
    kubeconfig: Option<String>,
    context: Option<String>,
    strip: bool,
    sync_only: bool,
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args::default();
    let value =
        |flag: &str, argv: &mut dyn Iterator<Item = String>| argv.next().ok_or_else(|| format!("{flag} needs a value"));
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "-n" | "--namespace" => a.namespace = Some(value(&arg, &mut argv)?),
            "-A" | "--all-namespaces" => a.all_namespaces = true,
            "-l" | "--selector" => a.selector = Some(value(&arg, &mut argv)?),
            "--kubeconfig" => a.kubeconfig = Some(value(&arg, &mut argv)?),
            "--context" => a.context = Some(value(&arg, &mut argv)?),
            "--strip-managed-fields" => a.strip = true,
            "--sync-only" => a.sync_only = true,
            "-h" | "--help" => return Err(USAGE.into()),
            flag if flag.starts_with('-') => return Err(format!("unknown flag {flag}\n{USAGE}")),
            resource if a.resource.is_empty() => a.resource = resource.to_owned(),
            extra => return Err(format!("unexpected argument {extra}\n{USAGE}")),
        }
    }
    if a.resource.is_empty() {
        return Err(USAGE.into());
    }
    if a.all_namespaces && a.namespace.is_some() {
        return Err("-n and -A exclude each other".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    // Logs on stderr: the library's warnings and recoveries by default, everything with RUST_LOG=debug.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match parse(std::env::args().skip(1)).and_then(|a| run(a).map_err(|e| e.to_string())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let config = match &args.kubeconfig {
        Some(path) => Config::from_kubeconfig_file(path, args.context.as_deref())?,
        None if args.context.is_some() => Config::from_kubeconfig(args.context.as_deref())?,
        None => Config::infer()?,
    };
    let namespace = args.namespace.clone().unwrap_or_else(|| config.namespace().to_owned());
    let client = Client::new(config)?;
    let resource = client.resolve(&args.resource)?;
    let api = if resource.namespaced && !args.all_namespaces {
        Api::<DynamicObject>::namespaced_with(client, &namespace, &resource)
    } else {
        Api::<DynamicObject>::all_with(client, &resource)
    };
    let mut lw = ListWatch::new(&api);
    if let Some(sel) = &args.selector {
        lw = lw.labels(sel);
    }
    let mut options = InformerOptions::default().name(resource.qualified_name());
    if args.strip {
        options = options.transform(strip_managed_fields::<DynamicObject>);
    }
    let informer = SharedIndexInformer::new(lw, options);
    if !args.sync_only {
        informer.add_event_handler(print_event)?;
    }
    informer.start()?;
    informer.wait_for_cache_sync(Duration::from_secs(3600))?; // names what is missing if it does not fill
    let seconds = started.elapsed().as_secs_f64();
    let objects = informer.lister().len();
    if args.sync_only {
        println!(
            "{{\"objects\":{objects},\"seconds_to_synced\":{seconds:.3},\"cpu_seconds\":{:.3},\"peak_rss_kb\":{}}}",
            cpu_seconds(),
            peak_rss_kb()
        );
        informer.stop();
        return Ok(());
    }
    println!("SYNCED objects={objects} seconds={seconds:.3}");
    loop {
        std::thread::park();
    }
}

fn print_event(ev: &Notification<DynamicObject>) {
    let rv = |o: &DynamicObject| o.metadata.resource_version.clone().unwrap_or_default();
    match ev {
        Notification::Add { obj, .. } => println!("ADDED {} rv={}", key_of(&**obj), rv(obj)),
        Notification::Update { new, .. } => println!("MODIFIED {} rv={}", key_of(&**new), rv(new)),
        Notification::Delete(d) => {
            let kind = if d.is_final_state_unknown() {
                "DELETED_UNKNOWN"
            } else {
                "DELETED"
            };
            println!("{kind} {} rv={}", key_of(&**d.object()), rv(d.object()));
        }
    }
}

/// User + system CPU seconds of this process (Linux `/proc/self/stat`, USER_HZ = 100); 0 elsewhere.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Peak resident set size in KiB (Linux `VmHWM`); 0 elsewhere.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
