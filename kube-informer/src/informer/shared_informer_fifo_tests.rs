//! Informer tests of the queue between the reflector and the cache: the order handlers see changes to different
//! objects in with each queue, and what holds whichever it is.

use super::*;
use crate::cache::Fifo;

/// Says when it holds an event, then takes it only once let through (or once its gate is dropped).
struct Held {
    entered: Sender<()>,
    gate: Receiver<()>,
    inner: Recorder,
}

impl ResourceEventHandler<ConfigMap> for Held {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let _ = self.entered.send(());
        let _ = self.gate.recv();
        self.inner.handle(ev);
    }
}

fn add(name: &str, value: &str) -> Seen {
    Seen::Add(name.into(), value.into(), false)
}

#[test]
fn handlers_see_changes_to_different_objects_in_the_order_they_happened_with_the_default_queue() {
    let update_a = Seen::Update("a".into(), "1".into(), "2".into());
    let in_order = vec![add("a", "1"), add("b", "1"), update_a.clone(), add("c", "1")];
    for (fifo, expected) in [
        (None, in_order.clone()),
        (Some(Fifo::Real), in_order.clone()),
        // A DeltaFIFO's documented order: a's second change waits at the place of its first, ahead of b's.
        (
            Some(Fifo::Delta),
            vec![add("a", "1"), update_a.clone(), add("b", "1"), add("c", "1")],
        ),
    ] {
        let lw = Arc::new(MemoryLw::default());
        let options = match fifo {
            Some(f) => InformerOptions::default().fifo(f),
            None => InformerOptions::default(),
        };
        let inf = informer(&lw, options);
        let (entered_tx, entered) = unbounded();
        let (open, gate) = unbounded::<()>();
        let (inner, rx) = recorder();
        let held = Held {
            entered: entered_tx,
            gate,
            inner,
        };
        let reg = inf
            .add_event_handler_with(
                held,
                HandlerOptions::default().queue(QueuePolicy::Block { capacity: 1 }),
            )
            .unwrap();
        inf.start().unwrap();
        eventually("cache synced", || inf.has_synced());
        // Hold the processing thread: the handler holds x, its queue (of one) holds y, and the processing thread,
        // having popped everything, waits to hand it z.
        lw.put("x", "1");
        entered.recv_timeout(WAIT).expect("the handler holds x");
        lw.put("y", "1");
        eventually("y queued for the handler", || reg.pending() == 1);
        lw.put("z", "1");
        eventually("the processing thread waits to hand over z", || reg.pending() == 2);
        // What happens now waits in the informer's queue until the handler lets go.
        lw.put("a", "1");
        lw.put("b", "1");
        lw.put("a", "2");
        lw.put("c", "1");
        // The last change queued (c) was pushed after the others: a RealFIFO holds 4 changes, a DeltaFIFO 3 objects.
        let queued = if fifo == Some(Fifo::Delta) { 3 } else { 4 };
        eventually("every change queued", || inf.metrics().fifo_depth == queued);
        drop(open);
        let seen: Vec<Seen> = (0..7).map(|_| recv(&rx)).collect();
        assert_eq!(seen[..3], [add("x", "1"), add("y", "1"), add("z", "1")]);
        assert_eq!(seen[3..], expected, "{fifo:?}");
        inf.stop();
    }
}

/// Records the transform count of every object a handler is given.
struct Counts(Sender<(String, String)>);

impl ResourceEventHandler<ConfigMap> for Counts {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let send = |what: &str, cm: &ConfigMap| {
            let t = cm.data.get("t").unwrap_or("none").to_owned();
            let _ = self.0.send((format!("{what} {}", n(cm)), t));
        };
        match ev {
            Notification::Add { obj, .. } => send("add", obj),
            Notification::Update { old, new } => {
                send("update-old", old);
                send("update", new);
            }
            Notification::Delete(d) => send("delete", d.object()),
        }
    }
}

#[test]
fn the_transform_runs_once_per_object_with_either_queue() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        lw.put("a", "1");
        lw.put("b", "1");
        let inf = informer(
            &lw,
            InformerOptions::default().fifo(fifo).transform(|cm: &mut ConfigMap| {
                let t: u32 = cm.data.get("t").map_or(0, |t| t.parse().unwrap());
                cm.data.insert("t".into(), (t + 1).to_string());
            }),
        );
        let (tx, rx) = unbounded();
        inf.add_event_handler(Counts(tx)).unwrap();
        inf.start().unwrap();
        assert!(inf.wait_synced(WAIT));
        eventually("watching", || lw.watcher_count() == 1);
        lw.put("a", "2");
        // A deletion missed while away, then a relist: b's tombstone carries its last known (transformed) state.
        lw.delete_silently("b");
        lw.expire_watches();
        eventually("relisted and watching", || {
            lw.lists.load(Ordering::SeqCst) == 2 && lw.watcher_count() == 1
        });
        lw.delete("a");
        let mut seen = Vec::new();
        while !seen.iter().any(|(what, _): &(String, String)| what == "delete a") {
            seen.push(rx.recv_timeout(WAIT).expect("events up to a's deletion"));
        }
        assert!(seen.iter().any(|(what, _)| what == "delete b"), "{fifo:?}: {seen:?}");
        for (what, t) in &seen {
            assert_eq!(t, "1", "{fifo:?}: {what} transformed once: {seen:?}");
        }
        inf.stop();
    }
}

/// Holds the events of the objects named in `hold_on`: says which it holds, then waits to be let go (or for its gate
/// to be dropped).
struct HoldOn {
    hold_on: &'static [&'static str],
    entered: Sender<String>,
    go: Receiver<()>,
    inner: Recorder,
}

impl ResourceEventHandler<ConfigMap> for HoldOn {
    fn handle(&mut self, ev: &Notification<ConfigMap>) {
        let name = match ev {
            Notification::Add { obj, .. } => n(obj),
            Notification::Update { new, .. } => n(new),
            Notification::Delete(d) => n(d.object()),
        };
        if self.hold_on.contains(&name.as_str()) {
            let _ = self.entered.send(name);
            let _ = self.go.recv();
        }
        self.inner.handle(ev);
    }
}

#[test]
fn a_batch_is_in_the_cache_and_its_indexes_whole_before_handlers_hear_of_its_first_change() {
    for fifo in Fifo::ALL {
        let lw = Arc::new(MemoryLw::default());
        let inf = informer(
            &lw,
            InformerOptions::default()
                .fifo(fifo)
                .indexer("by-v", |cm: &ConfigMap| vec![v(cm)]),
        );
        let (entered_tx, entered) = unbounded();
        let (go, go_rx) = unbounded::<()>();
        let (inner, rx) = recorder();
        let handler = HoldOn {
            hold_on: &["x", "a"],
            entered: entered_tx,
            go: go_rx,
            inner,
        };
        let reg = inf
            .add_event_handler_with(
                handler,
                HandlerOptions::default().queue(QueuePolicy::Block { capacity: 1 }),
            )
            .unwrap();
        inf.start().unwrap();
        eventually("cache synced", || inf.has_synced());
        // Hold the processing thread (as above) while a, b, a again and c are queued: they are popped as one batch.
        lw.put("x", "0");
        assert_eq!(entered.recv_timeout(WAIT).as_deref(), Ok("x"));
        lw.put("y", "0");
        eventually("y queued for the handler", || reg.pending() == 1);
        lw.put("z", "0");
        eventually("the processing thread waits to hand over z", || reg.pending() == 2);
        lw.put("a", "1");
        lw.put("b", "1");
        lw.put("a", "2");
        lw.put("c", "1");
        let queued = if fifo == Fifo::Delta { 3 } else { 4 };
        eventually("every change queued", || inf.metrics().fifo_depth == queued);
        go.send(()).unwrap();
        // The handler holds the batch's first notification (a's add); the processing thread, having handed the next
        // to the handler's queue, waits to hand over the one after. Applying and notifying change by change, it would
        // wait there with c not yet in the cache.
        assert_eq!(entered.recv_timeout(WAIT).as_deref(), Ok("a"), "{fifo:?}");
        eventually("the processing thread waits to hand over the third", || {
            reg.pending() == 2
        });
        let lister = inf.lister();
        let cached = |name| lister.namespace("ns").get(name).map(|cm| v(&cm));
        assert_eq!(
            (cached("a"), cached("b"), cached("c")),
            (Some("2".into()), Some("1".into()), Some("1".into())),
            "{fifo:?}: the whole batch is in the cache"
        );
        let by_v = |value| {
            let mut names: Vec<String> = lister.by_index("by-v", value).unwrap().iter().map(|cm| n(cm)).collect();
            names.sort();
            names
        };
        assert_eq!(
            (by_v("1"), by_v("2")),
            (vec!["b".to_owned(), "c".to_owned()], vec!["a".to_owned()])
        );
        drop(go);
        let seen: Vec<Seen> = (0..7).map(|_| recv(&rx)).collect();
        let update_a = Seen::Update("a".into(), "1".into(), "2".into());
        let expected = match fifo {
            Fifo::Real => [add("a", "1"), add("b", "1"), update_a, add("c", "1")],
            Fifo::Delta => [add("a", "1"), update_a, add("b", "1"), add("c", "1")],
        };
        assert_eq!(seen[3..], expected, "{fifo:?}: one notification per change");
        inf.stop();
    }
}
