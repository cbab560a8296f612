//! `burst` and `stream`: a watch replaying the server's history through the informer to 1 or 4 handlers, and
//! through `Api::watch` alone.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::cache::{EventStream, Fifo, ListWatch, ListerWatcher};
use kube_informer::client::Api;
use kube_informer::client::params::{ListParams, VersionMatch, WatchParams};
use kube_informer::informer::{InformerOptions, Notification, SharedIndexInformer};
use kube_informer::object::ListMeta;
use kube_informer::object::core::ConfigMap;
use kube_informer::unstable::{SpareObjects, WatchHooks};
use kube_informer::watch::WatchEvent;

use crate::child::{Server, num};
use crate::corpus::BURST_OBJECTS;
use crate::procfs;
use crate::report::{median, medians};
use crate::sync::{client, fifo_arg, fifo_name, reflector_config};

/// Lists at an exact past revision, so that the watch after it replays every event written since.
pub(crate) struct FromRevision {
    pub(crate) inner: ListWatch<ConfigMap>,
    pub(crate) rv0: String,
    /// When and at what process CPU the first watch opened.
    pub(crate) opened: parking_lot::Mutex<Option<(Instant, f64)>>,
}

impl ListerWatcher<ConfigMap> for FromRevision {
    fn list_page(&self, params: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> kube_informer::Result<ListMeta> {
        let mut p = params.clone();
        if p.continue_token.is_none() {
            p.resource_version = Some(self.rv0.clone());
            p.resource_version_match = Some(VersionMatch::Exact);
        }
        self.inner.list_page(&p, on_item)
    }

    fn watch(&self, params: &WatchParams) -> kube_informer::Result<EventStream<ConfigMap>> {
        self.opened
            .lock()
            .get_or_insert_with(|| (Instant::now(), procfs::cpu()));
        self.inner.watch(params)
    }

    fn interrupt(&self) {
        self.inner.interrupt();
    }

    fn unstable_hooks(&self) -> Option<&dyn WatchHooks<ConfigMap>> {
        Some(self)
    }
}

impl WatchHooks<ConfigMap> for FromRevision {
    fn watch_recycling(
        &self,
        params: &WatchParams,
        spares: Arc<dyn SpareObjects<ConfigMap>>,
    ) -> kube_informer::Result<EventStream<ConfigMap>> {
        self.opened
            .lock()
            .get_or_insert_with(|| (Instant::now(), procfs::cpu()));
        let hooks = self.inner.unstable_hooks().expect("a ListWatch recycles");
        hooks.watch_recycling(params, spares)
    }
}

pub(crate) fn burst_child(args: &[String]) {
    let kubeconfig = &args[0];
    let rv0 = args[1].clone();
    let events: usize = args[2].parse().unwrap();
    let handlers: usize = args[3].parse().unwrap();
    let fifo = args.get(4).map_or(Fifo::default(), |f| fifo_arg(f));
    let api = Api::<ConfigMap>::all(client(kubeconfig));
    let lw = Arc::new(FromRevision {
        inner: ListWatch::new(&api),
        rv0,
        opened: parking_lot::Mutex::new(None),
    });
    let informer = SharedIndexInformer::from_arc(
        lw.clone(),
        InformerOptions::default().reflector(reflector_config(false)).fifo(fifo),
    );
    let (tx, rx) = crossbeam_channel::unbounded();
    for _ in 0..handlers {
        let tx = tx.clone();
        let mut updates = 0;
        informer
            .add_event_handler(move |ev: &Notification<ConfigMap>| {
                if let Notification::Update { .. } = ev {
                    updates += 1;
                    if updates == events {
                        let _ = tx.send(Instant::now());
                    }
                }
            })
            .unwrap();
    }
    informer.start().unwrap();
    let mut last = Instant::now();
    for _ in 0..handlers {
        last = last.max(rx.recv_timeout(Duration::from_secs(600)).expect("burst timed out"));
    }
    let cpu_end = procfs::cpu();
    let (opened, cpu0) = lw.opened.lock().expect("a watch opened");
    let secs = last.duration_since(opened).as_secs_f64();
    println!(
        "RESULT secs={secs:.4} rate={:.1} cpu_us={:.3}",
        events as f64 / secs,
        (cpu_end - cpu0) * 1e6 / events as f64
    );
    std::io::stdout().flush().unwrap();
    std::process::exit(0);
}

/// `stream`: the same replay through `Api::watch` alone, on this one thread — reading and decoding as the reflector
/// does, keeping the latest object of each name as a cache would, without the informer's queue, threads or handlers.
pub(crate) fn stream_child(args: &[String]) {
    let kubeconfig = &args[0];
    let rv0 = args[1].clone();
    let events: usize = args[2].parse().unwrap();
    let api = Api::<ConfigMap>::all(client(kubeconfig));
    let mut live: HashMap<String, Arc<ConfigMap>> = HashMap::with_capacity(BURST_OBJECTS);
    let (t, cpu0) = (Instant::now(), procfs::cpu());
    let params = WatchParams {
        resource_version: Some(rv0),
        timeout_seconds: Some(600),
        ..Default::default()
    };
    let mut n = 0;
    for ev in api.watch(&params).unwrap() {
        if let WatchEvent::Modified(cm) = ev.unwrap() {
            let name = cm.metadata.name.as_deref().unwrap_or_default();
            match live.get_mut(name) {
                Some(slot) => *slot = Arc::new(cm),
                None => {
                    live.insert(name.to_owned(), Arc::new(cm));
                }
            }
            n += 1;
            if n == events {
                break;
            }
        }
    }
    assert_eq!(n, events, "the watch ended early");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "RESULT secs={secs:.4} rate={:.1} cpu_us={:.3}",
        events as f64 / secs,
        (procfs::cpu() - cpu0) * 1e6 / events as f64
    );
    std::io::stdout().flush().unwrap();
    std::process::exit(0);
}

/// The watch burst over one transport: per run, the raw client and the decoder, then the informer with 1 and with
/// 4 handlers, interleaved so that a change of load on the machine touches every figure alike.
pub(crate) struct Burst {
    pub(crate) https: bool,
    /// Medians of the raw client's runs (`read_rate`, `decode_rate`, `bytes_per_event`, `server_cpu`).
    pub(crate) raw: HashMap<String, f64>,
    /// Medians per queue and handler count (`rate`, `cpu_us`, `server_cpu`, and `vs_decoder`: the ratio within each
    /// run).
    pub(crate) informer: Vec<((Fifo, usize), HashMap<String, f64>)>,
    /// Per queue, the median over runs of (4 handlers ÷ 1 handler), within each run.
    pub(crate) four_vs_one: Vec<(Fifo, f64)>,
    /// Medians of `Api::watch` read alone on one thread (`rate`, `cpu_us`, `vs_decoder`).
    pub(crate) stream: HashMap<String, f64>,
}

pub(crate) fn run_burst(
    events: usize,
    runs: usize,
    https: bool,
    fifos: &[Fifo],
    server_lines: &mut Vec<String>,
) -> Burst {
    let transport = if https { "HTTPS" } else { "HTTP" };
    eprintln!("== watch burst over {transport}: writing {events} updates of {BURST_OBJECTS} objects");
    let mut server = Server::start(BURST_OBJECTS, events, https);
    eprintln!("   setup {:.1} s", num(&server.ready, "setup"));
    let rv0 = server.ready["rv0"].clone();
    let mut raws = Vec::new();
    // Per (queue, handler count), in that order: each run's results.
    let slots: Vec<(Fifo, usize)> = fifos.iter().flat_map(|&f| [(f, 1usize), (f, 4)]).collect();
    let mut per_slot: Vec<Vec<HashMap<String, String>>> = vec![Vec::new(); slots.len()];
    let mut four_vs_one: Vec<Vec<f64>> = vec![Vec::new(); fifos.len()];
    let mut streams = Vec::new();
    for run in 0..runs {
        eprintln!("   run {}", run + 1);
        let (url, kubeconfig) = (server.url.clone(), server.kubeconfig.clone());
        let raw = server.measure(&["raw".into(), "watch".into(), url, rv0.clone(), events.to_string()]);
        let decode_rate = num(&raw, "decode_rate");
        raws.push(raw);
        let mut st = server.measure(&["stream".into(), kubeconfig.clone(), rv0.clone(), events.to_string()]);
        let rate = num(&st, "rate");
        st.insert("vs_decoder".into(), format!("{}", rate / decode_rate));
        streams.push(st);
        let mut rates = Vec::new();
        for (slot, &(fifo, handlers)) in slots.iter().enumerate() {
            let mut r = server.measure(&[
                "burst".into(),
                kubeconfig.clone(),
                rv0.clone(),
                events.to_string(),
                handlers.to_string(),
                fifo_name(fifo).into(),
            ]);
            let rate = num(&r, "rate");
            r.insert("vs_decoder".into(), format!("{}", rate / decode_rate));
            rates.push(rate);
            per_slot[slot].push(r);
        }
        for (q, ratios) in four_vs_one.iter_mut().enumerate() {
            ratios.push(rates[2 * q + 1] / rates[2 * q]);
        }
    }
    server.proc.send("quit");
    server.proc.finish();
    let raw = medians(&raws);
    server_lines.push(format!(
        "| WATCH replay of {events} events (~{:.0} B) over {transport}, raw client | {:.0} events/s | server CPU {:.1} µs/event |",
        raw["bytes_per_event"],
        raw["read_rate"],
        // The raw client reads the replay twice (once counting, once keeping the bytes for the decoder).
        raw["server_cpu"] * 1e6 / (2 * events) as f64
    ));
    Burst {
        https,
        raw,
        informer: slots.into_iter().zip(per_slot.iter().map(|r| medians(r))).collect(),
        four_vs_one: fifos.iter().copied().zip(four_vs_one.into_iter().map(median)).collect(),
        stream: medians(&streams),
    }
}
