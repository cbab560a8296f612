//! Reflector tests over a RealFIFO, the informer's default queue (the other reflector tests use a DeltaFIFO): what
//! the reflector queues keeps the order the server sent it in, every change its own entry.

use super::*;
use crate::cache::{RealFifo, Store};

/// Pops everything queued: `"<type> <name> <rv>"`, a relist's deletion as `"Tombstone <name> <rv>"`.
fn drain_real(fifo: &RealFifo<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        out.push(
            fifo.pop(|_, d, _| {
                let what = match &d {
                    Delta::Deleted(gone) if gone.is_final_state_unknown() => "Tombstone".to_owned(),
                    other => format!("{:?}", other.delta_type()),
                };
                let meta = &d.object().metadata;
                format!(
                    "{what} {} {}",
                    meta.name.as_deref().unwrap_or_default(),
                    meta.resource_version.as_deref().unwrap_or_default()
                )
            })
            .unwrap(),
        );
    }
    out
}

#[test]
fn a_real_fifo_gets_every_change_in_the_order_sent_a_burst_under_one_lock_and_a_relists_deletions_last() {
    let script = Arc::new(Script::default());
    let store: Arc<Store<ConfigMap>> = Arc::new(Store::default());
    let fifo = Arc::new(RealFifo::new(store));
    let config = ReflectorConfig {
        streaming_list: false,
        relist_jitter: Duration::ZERO,
        ..Default::default()
    };
    let lw: Arc<dyn ListerWatcher<ConfigMap>> = script.clone();
    let mut r = Reflector::new("test".into(), lw, fifo.clone(), config, Arc::new(StopSignal::new()));
    script.page(vec![cm("a", "1"), cm("b", "1")], "1", None);
    let (tx, rx) = unbounded();
    script.watches.lock().push_back(Ok(Box::new(Bursts {
        current: VecDeque::new(),
        rx,
    })));
    assert!(r.step(), "listed");
    assert!(r.step(), "watch opened");

    // A, C, A: three entries, in that order, queued under one lock and woken for once.
    tx.send(vec![
        Ok(WatchEvent::Modified(cm("a", "2"))),
        Ok(WatchEvent::Added(cm("c", "3"))),
        Ok(WatchEvent::Modified(cm("a", "4"))),
        bookmark("5"),
    ])
    .unwrap();
    assert!(r.step());
    assert_eq!(fifo.batches_pushed(), 1, "the burst's changes under one lock");
    assert!(!fifo.has_unwoken(), "the burst ended: woken");
    let keys: Vec<_> = fifo.list_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, ["ns/a", "ns/b", "ns/a", "ns/c", "ns/a"]);

    // The watch expires; the relist lacks b and c (deleted while away): their deletions come after the list.
    tx.send(vec![Ok(WatchEvent::Error(Box::new(Status::failure(
        410, "Expired", "too old",
    ))))])
    .unwrap();
    assert!(r.step());
    assert_eq!(r.state_name(), "List");
    script.page(vec![cm("a", "6")], "6", None);
    assert!(r.step(), "relisted");
    assert_eq!(
        drain_real(&fifo),
        [
            "Replaced a 1",
            "Replaced b 1",
            "Updated a 2",
            "Added c 3",
            "Updated a 4",
            "Replaced a 6",
            "Tombstone b 1",
            "Tombstone c 3",
        ]
    );
    assert!(fifo.has_synced());
}
