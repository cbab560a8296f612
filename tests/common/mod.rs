//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, unbounded};
use kube_informer::cache::DeletedObject;
use kube_informer::informer::ResourceEventHandler;
use kube_informer::object::ObjectMeta;
use kube_informer::object::core::ConfigMap;

/// How long a test waits for something that should happen at once.
pub const WAIT: Duration = Duration::from_secs(20);

/// What a handler saw, compactly: name and the `v` data value(s).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    Add(String, String, bool),
    Update(String, String, String),
    Delete(String, String, bool),
}

pub fn value(cm: &ConfigMap) -> String {
    cm.data.get("v").map(str::to_owned).unwrap_or_default()
}

pub fn name(cm: &ConfigMap) -> String {
    cm.metadata.name.clone().unwrap_or_default()
}

/// A handler forwarding what it sees to a channel.
pub struct Recorder(pub Sender<Seen>);

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&mut self, obj: &Arc<ConfigMap>, initial: bool) {
        let _ = self.0.send(Seen::Add(name(obj), value(obj), initial));
    }
    fn on_update(&mut self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let _ = self.0.send(Seen::Update(name(new), value(old), value(new)));
    }
    fn on_delete(&mut self, obj: &DeletedObject<ConfigMap>) {
        let o = obj.object();
        let _ = self
            .0
            .send(Seen::Delete(name(o), value(o), obj.is_final_state_unknown()));
    }
}

pub fn recorder() -> (Recorder, Receiver<Seen>) {
    let (tx, rx) = unbounded();
    (Recorder(tx), rx)
}

pub fn recv(rx: &Receiver<Seen>) -> Seen {
    rx.recv_timeout(WAIT).expect("an event within the deadline")
}

/// Receives events until one satisfies `pred`, returning it.
pub fn recv_until(rx: &Receiver<Seen>, pred: impl Fn(&Seen) -> bool) -> Seen {
    let deadline = Instant::now() + WAIT;
    loop {
        let ev = rx
            .recv_deadline(deadline)
            .expect("the awaited event within the deadline");
        if pred(&ev) {
            return ev;
        }
    }
}

/// Polls `cond` until it holds; fails naming `what` at the deadline.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        // A condition, polled; the sleep only keeps the poll off the CPU the awaited threads need.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A ConfigMap `ns/name` with data `v=value`.
pub fn cm(ns: &str, name: &str, value: &str) -> ConfigMap {
    ConfigMap::new(ObjectMeta::namespaced(ns, name)).with("v", value)
}
