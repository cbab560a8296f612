//! The indexed store and listers: put (insert and update), get, delete, index maintenance, `by_index`, and a
//! lister's `list(selector)` over a cache of 10,000 ConfigMaps in 50 namespaces.
//!
//! Run: `cargo bench --bench store`. Objects are built once; each benchmark shares them as `Arc`s, as the informer
//! does, so the figures are the store's own costs (hashing, index updates, locking), not the objects'.

use std::sync::{Arc, OnceLock};

use divan::Bencher;
use divan::counter::ItemsCount;
use kube_informer::cache::{Indexers, Key, Lister, NAMESPACE_INDEX, Store};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{MetaAccessor, Object, ObjectMeta, key_of};
use kube_informer::selector::Selector;

const N: usize = 10_000;
const NAMESPACES: usize = 50;

fn main() {
    divan::main();
}

struct Data {
    /// Each object with its key.
    objects: Vec<(Key, Arc<ConfigMap>)>,
    /// Each object again (same key, a new resourceVersion): the updates.
    updates: Vec<(Key, Arc<ConfigMap>)>,
}

fn object(i: usize, rv: usize) -> ConfigMap {
    let mut meta = ObjectMeta::namespaced(format!("team-{:02}", i % NAMESPACES), format!("app-config-{i:06}"));
    meta.resource_version = Some(rv.to_string());
    meta.labels = [
        ("app.kubernetes.io/name", "shop".to_owned()),
        ("app.kubernetes.io/component", format!("component-{}", i % 7)),
        ("environment", "production".to_owned()),
    ]
    .into_iter()
    .collect();
    ConfigMap::new(meta).with("key", format!("value-{i}"))
}

fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let keyed = |o: ConfigMap| (Key::from(key_of(&o)), Arc::new(o));
        Data {
            objects: (0..N).map(|i| keyed(object(i, i + 1))).collect(),
            updates: (0..N).map(|i| keyed(object(i, N + i + 1))).collect(),
        }
    })
}

fn component(cm: &ConfigMap) -> Vec<String> {
    cm.meta()
        .labels()
        .get("app.kubernetes.io/component")
        .map(str::to_owned)
        .into_iter()
        .collect()
}

/// The informer's indexers (the namespace index), or those plus a label index.
fn indexers(with_label_index: bool) -> Indexers<ConfigMap> {
    let i = Indexers::namespace();
    if with_label_index {
        i.with("component", component)
    } else {
        i
    }
}

fn full(with_label_index: bool) -> Store<ConfigMap> {
    let store = Store::new(indexers(with_label_index));
    for (k, o) in &data().objects {
        store.put(k.clone(), o.clone());
    }
    store
}

/// Inserting N new objects into an empty store (the initial list).
#[divan::bench(args = [false, true])]
fn put_new(b: Bencher<'_, '_>, label_index: bool) {
    let d = data();
    b.counter(ItemsCount::new(N))
        .with_inputs(|| Store::new(indexers(label_index)))
        .bench_local_values(|store| {
            for (k, o) in &d.objects {
                store.put(k.clone(), o.clone());
            }
            store
        });
}

/// Replacing each of N objects with its next version (watch MODIFIED: index values unchanged).
#[divan::bench(args = [false, true])]
fn put_update(b: Bencher<'_, '_>, label_index: bool) {
    let d = data();
    b.counter(ItemsCount::new(N))
        .with_inputs(|| full(label_index))
        .bench_local_values(|store| {
            for (k, o) in &d.updates {
                store.put(k.clone(), o.clone());
            }
            store
        });
}

/// Deleting every object.
#[divan::bench(args = [false, true])]
fn delete(b: Bencher<'_, '_>, label_index: bool) {
    let d = data();
    b.counter(ItemsCount::new(N))
        .with_inputs(|| full(label_index))
        .bench_local_values(|store| {
            for (k, _) in &d.objects {
                store.delete(k);
            }
            store
        });
}

/// Looking up every object by key.
#[divan::bench]
fn get(b: Bencher<'_, '_>) {
    let d = data();
    let store = full(false);
    b.counter(ItemsCount::new(N)).bench(|| {
        for (k, _) in &d.objects {
            divan::black_box(store.get(k));
        }
    });
}

/// The objects of one namespace (N / 50 of them) through the namespace index.
#[divan::bench]
fn by_index_namespace(b: Bencher<'_, '_>) {
    let store = full(false);
    b.counter(ItemsCount::new(N / NAMESPACES))
        .bench(|| divan::black_box(store.by_index(NAMESPACE_INDEX, "team-07").unwrap()));
}

/// The objects of one label value (N / 7) through a label index.
#[divan::bench]
fn by_index_label(b: Bencher<'_, '_>) {
    let store = full(true);
    b.counter(ItemsCount::new(N / 7))
        .bench(|| divan::black_box(store.by_index("component", "component-3").unwrap()));
}

/// A lister's `list(selector)` over the whole cache (every object's labels matched).
#[divan::bench(args = ["", "app.kubernetes.io/component=component-3", "environment in (production),app.kubernetes.io/name=shop"])]
fn lister_list(b: Bencher<'_, '_>, selector: &str) {
    let lister = Lister::new(Arc::new(full(false)));
    let selector: Selector = selector.parse().unwrap();
    b.counter(ItemsCount::new(N))
        .bench(|| divan::black_box(lister.list(&selector)));
}

/// A namespace lister's `list(selector)` (the namespace index, then labels).
#[divan::bench]
fn namespace_lister_list(b: Bencher<'_, '_>) {
    let lister = Lister::new(Arc::new(full(false)));
    let selector: Selector = "app.kubernetes.io/component=component-3".parse().unwrap();
    b.counter(ItemsCount::new(N / NAMESPACES))
        .bench(|| divan::black_box(lister.namespace("team-07").list(&selector)));
}
