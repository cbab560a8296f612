//! An in-memory `ListerWatcher` of ConfigMaps for informer unit tests: a versioned map with an event history,
//! watchers fed through channels, and switches to lose events and expire watches.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use crate::cache::{EventStream, ListerWatcher};
use crate::client::params::{ListParams, WatchParams};
use crate::error::{Error, Result};
use crate::object::core::ConfigMap;
use crate::object::{ListMeta, ObjectMeta, Status};
use crate::watch::{Bookmark, WatchEvent};

type Tx = Sender<Result<WatchEvent<ConfigMap>>>;

#[derive(Default)]
struct State {
    rv: u64,
    objects: BTreeMap<String, ConfigMap>,
    history: Vec<(u64, WatchEvent<ConfigMap>)>,
    /// Watches from a resource version below this get 410.
    oldest_rv: u64,
    watchers: Vec<Tx>,
}

#[derive(Default)]
pub(crate) struct MemoryLw {
    state: Mutex<State>,
    interrupted: AtomicBool,
    pub(crate) lists: AtomicUsize,
    pub(crate) watches: AtomicUsize,
}

impl MemoryLw {
    fn emit(st: &mut State, ev: WatchEvent<ConfigMap>) {
        st.history.push((st.rv, ev.clone()));
        st.watchers.retain(|tx| tx.send(Ok(ev.clone())).is_ok());
    }

    fn next(st: &mut State, name: &str, value: &str) -> ConfigMap {
        st.rv += 1;
        let mut m = ObjectMeta::namespaced("ns", name);
        m.resource_version = Some(st.rv.to_string());
        ConfigMap::new(m).with("v", value)
    }

    pub(crate) fn put(&self, name: &str, value: &str) {
        let mut st = self.state.lock();
        let obj = Self::next(&mut st, name, value);
        let existed = st.objects.insert(name.to_owned(), obj.clone()).is_some();
        Self::emit(
            &mut st,
            if existed {
                WatchEvent::Modified(obj)
            } else {
                WatchEvent::Added(obj)
            },
        );
    }

    pub(crate) fn delete(&self, name: &str) {
        let mut st = self.state.lock();
        if let Some(mut obj) = st.objects.remove(name) {
            st.rv += 1;
            obj.metadata.resource_version = Some(st.rv.to_string());
            Self::emit(&mut st, WatchEvent::Deleted(obj));
        }
    }

    /// Deletes without telling anyone: a watch event lost while disconnected.
    pub(crate) fn delete_silently(&self, name: &str) {
        let mut st = self.state.lock();
        st.objects.remove(name);
        st.rv += 1;
    }

    /// Compacts the history and ends every watch with a 410 ERROR.
    pub(crate) fn expire_watches(&self) {
        let mut st = self.state.lock();
        st.oldest_rv = st.rv + 1;
        let gone = Status::failure(410, "Expired", "too old resource version");
        for tx in st.watchers.drain(..) {
            let _ = tx.send(Ok(WatchEvent::Error(Box::new(gone.clone()))));
        }
    }

    pub(crate) fn bookmark(&self) {
        let mut st = self.state.lock();
        let b = WatchEvent::Bookmark(Bookmark {
            resource_version: st.rv.to_string(),
            ..Default::default()
        });
        st.watchers.retain(|tx| tx.send(Ok(b.clone())).is_ok());
    }

    /// name → value of the current state.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, String> {
        self.state
            .lock()
            .objects
            .iter()
            .map(|(k, v)| (format!("ns/{k}"), v.data["v"].to_owned()))
            .collect()
    }

    pub(crate) fn watcher_count(&self) -> usize {
        self.state.lock().watchers.len()
    }
}

impl ListerWatcher<ConfigMap> for MemoryLw {
    fn list_page(&self, _params: &ListParams, on_item: &mut dyn FnMut(ConfigMap)) -> Result<ListMeta> {
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(Error::Stopped);
        }
        self.lists.fetch_add(1, Ordering::SeqCst);
        let (items, rv) = {
            let st = self.state.lock();
            (st.objects.values().cloned().collect::<Vec<_>>(), st.rv)
        };
        items.into_iter().for_each(on_item);
        Ok(ListMeta {
            resource_version: Some(rv.to_string()),
            ..Default::default()
        })
    }

    fn watch(&self, params: &WatchParams) -> Result<EventStream<ConfigMap>> {
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(Error::Stopped);
        }
        if params.send_initial_events {
            return Err(Error::Api(Box::new(Status::failure(
                422,
                "Invalid",
                "no streaming lists here",
            ))));
        }
        self.watches.fetch_add(1, Ordering::SeqCst);
        let from: u64 = params.resource_version.as_deref().unwrap_or("0").parse().unwrap_or(0);
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut st = self.state.lock();
        if from + 1 < st.oldest_rv {
            let gone = Status::failure(410, "Expired", "too old resource version");
            let _ = tx.send(Ok(WatchEvent::Error(Box::new(gone))));
        } else {
            for (rv, ev) in &st.history {
                if *rv > from {
                    let _ = tx.send(Ok(ev.clone()));
                }
            }
            st.watchers.push(tx);
        }
        Ok(Box::new(rx.into_iter()))
    }

    fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.state.lock().watchers.clear();
    }
}
