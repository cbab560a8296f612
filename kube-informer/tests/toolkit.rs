//! The controller toolkit's helpers against the embedded API server: `create_or_update` reading the cache (no
//! request when nothing changed, the server read when the cache is behind, fields the cached copy lacks left alone,
//! orphans refused unless adopted), the index by controller behind `Context::owned`, delete preconditions by
//! builder, and `Lister::list_all`.

mod common;

use std::sync::Arc;

use kube_informer::cache::{CONTROLLER_INDEX, Indexers, Lister, Store};
use kube_informer::client::params::{DeleteParams, PostParams};
use kube_informer::client::{Api, Committed};
use kube_informer::controller::{Action, Context, Controller, create_or_update};
use kube_informer::informer::SharedInformerFactory;
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, OwnerReferenceError, adopt, is_controlled_by, set_controller_reference};
use kube_informer::{Error, Result};
use kube_informer_apiserver::{ApiServer, Fault, Verb};

use common::eventually;

/// A cache holding exactly `objects`, as an informer's would.
fn cache_of(objects: Vec<ConfigMap>) -> Lister<ConfigMap> {
    let store = Arc::new(Store::new(Indexers::namespace()));
    for o in objects {
        store.add(Arc::new(o));
    }
    Lister::new(store)
}

fn set(key: &str, value: &str) -> impl FnMut(&mut ConfigMap) -> Result<()> {
    let (key, value) = (key.to_owned(), value.to_owned());
    move |cm| {
        cm.data.insert(key.clone(), value.clone());
        Ok(())
    }
}

#[test]
fn create_or_update_reads_the_cache_and_sends_nothing_when_nothing_changed() {
    let server = ApiServer::start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    // Not cached: created.
    assert_eq!(
        create_or_update(&api, &cache_of(vec![]), "a", set("k", "v")).unwrap(),
        Committed::Created
    );
    let stored = api.get("a").unwrap();
    assert_eq!(stored.data.get("k"), Some("v"));
    // Cached and already as wanted: no request at all.
    let cache = cache_of(vec![stored.clone()]);
    let mark = server.requests().mark();
    assert_eq!(
        create_or_update(&api, &cache, "a", set("k", "v")).unwrap(),
        Committed::Unchanged
    );
    assert!(
        server.requests().since(mark).is_empty(),
        "{:?}",
        server.requests().since(mark)
    );
    // Cached and changed: one patch.
    assert_eq!(
        create_or_update(&api, &cache, "a", set("k", "w")).unwrap(),
        Committed::Updated
    );
    assert_eq!(server.requests().count_since(mark, Verb::Patch, "configmaps"), 1);
    assert_eq!(server.requests().since(mark).len(), 1);
    assert_eq!(api.get("a").unwrap().data.get("k"), Some("w"));
}

#[test]
fn create_or_update_reads_the_server_when_the_cache_is_behind() {
    let server = ApiServer::start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let first = api
        .create(&PostParams::default(), &common::cm("default", "a", "1"))
        .unwrap();
    // Someone wrote since the cache saw it: the patch's resourceVersion conflicts, the server's copy is used.
    let mut theirs = first.clone();
    theirs.data.insert("theirs".into(), "kept".into());
    api.replace("a", &PostParams::default(), &theirs).unwrap();
    let stale = cache_of(vec![first.clone()]);
    assert_eq!(
        create_or_update(&api, &stale, "a", set("mine", "x")).unwrap(),
        Committed::Updated
    );
    let now = api.get("a").unwrap();
    assert_eq!(
        (now.data.get("theirs"), now.data.get("mine")),
        (Some("kept"), Some("x"))
    );

    // The cache has not seen it yet: the create meets AlreadyExists, the server's copy is updated.
    assert_eq!(
        create_or_update(&api, &cache_of(vec![]), "a", set("mine", "y")).unwrap(),
        Committed::Updated
    );
    assert_eq!(api.get("a").unwrap().data.get("mine"), Some("y"));

    // Deleted since the cache saw it: the patch meets 404, and it is created again.
    api.delete("a", &DeleteParams::default()).unwrap();
    assert_eq!(
        create_or_update(&api, &stale, "a", set("mine", "z")).unwrap(),
        Committed::Created
    );
    assert_eq!(api.get("a").unwrap().data.get("mine"), Some("z"));

    // Conflicts every time: five writes, then the conflict is the caller's (the controller retries the key).
    server.inject(Fault::on(Some(Verb::Patch), Some("configmaps")).error(409).times(5));
    let cached = cache_of(vec![api.get("a").unwrap()]);
    let e = create_or_update(&api, &cached, "a", set("mine", "never")).unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(api.get("a").unwrap().data.get("mine"), Some("z"));
}

#[test]
fn create_or_update_leaves_alone_what_the_cached_copy_lacks() {
    let server = ApiServer::start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let mut full = common::cm("default", "a", "1");
    full.binary_data.insert("blob".into(), "AAEC".into());
    full.metadata.annotations.insert("note".into(), "keep".into());
    let stored = api.create(&PostParams::default(), &full).unwrap();
    // A cache whose transform dropped annotations and binary data.
    let mut trimmed = stored.clone();
    trimmed.binary_data = Default::default();
    trimmed.metadata.annotations = Default::default();
    let cache = cache_of(vec![trimmed]);
    assert_eq!(
        create_or_update(&api, &cache, "a", set("v", "2")).unwrap(),
        Committed::Updated
    );
    let now = api.get("a").unwrap();
    assert_eq!(now.data.get("v"), Some("2"));
    assert_eq!(now.binary_data.get("blob"), Some("AAEC"));
    assert_eq!(now.metadata.annotations.get("note"), Some("keep"));
}

#[test]
fn create_or_update_refuses_an_orphan_unless_adopting() {
    let server = ApiServer::start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let owner = api
        .create(&PostParams::default(), &common::cm("default", "owner", ""))
        .unwrap();
    let orphan = api
        .create(&PostParams::default(), &common::cm("default", "theirs", "data"))
        .unwrap();
    let cache = cache_of(vec![orphan]);
    let e = create_or_update(&api, &cache, "theirs", |cm: &mut ConfigMap| -> Result<()> {
        set_controller_reference(&owner, cm)?;
        cm.data.insert("v".into(), "overwritten".into());
        Ok(())
    })
    .unwrap_err();
    assert!(
        matches!(&e, Error::OwnerReference(o) if matches!(**o, OwnerReferenceError::WouldAdopt { .. })),
        "{e}"
    );
    assert_eq!(
        api.get("theirs").unwrap().data.get("v"),
        Some("data"),
        "nothing written"
    );
    // Adopting is a choice made in code.
    let outcome = create_or_update(&api, &cache, "theirs", |cm: &mut ConfigMap| -> Result<()> {
        adopt(&owner, cm)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(outcome, Committed::Updated);
    assert!(is_controlled_by(&api.get("theirs").unwrap(), &owner));
    // An Api of every namespace cannot say where a namespaced object goes.
    let all: Api<ConfigMap> = Api::all(server.client().unwrap());
    let e = create_or_update(&all, &cache, "x", set("k", "v")).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
}

/// ConfigMaps `<owner>-copy-<i>` controlled by the ConfigMap `<owner>`, as many as its `n`.
fn reconcile(_key: &str, ctx: &Context<'_, ConfigMap, Api<ConfigMap>>) -> Result<Action> {
    let Some(owner) = ctx.object() else {
        return Ok(Action::await_change());
    };
    if ctx.name().contains("-copy-") {
        return Ok(Action::await_change());
    }
    let n: usize = owner.data.get("n").and_then(|n| n.parse().ok()).unwrap_or(0);
    for i in 0..n {
        // The controller reference is the context's to set.
        let done = ctx.create_or_update(ctx.data(), &format!("{}-copy-{i}", ctx.name()), |_| {})?;
        assert!(!done.is_refused());
    }
    // What the cache holds of them so far (the writes above come back through the watch), and nothing else.
    let owned = ctx.owned::<ConfigMap>()?;
    assert!(owned.len() <= n && owned.iter().all(|cm| is_controlled_by(&**cm, &*owner)));
    Ok(Action::await_change())
}

#[test]
fn owned_objects_are_found_through_the_index_by_controller() {
    let server = ApiServer::start().unwrap();
    let client = server.client().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let factory = SharedInformerFactory::new(client, Default::default());
    let configmaps = factory.informer::<ConfigMap>();
    // The primary is its own secondary here: ConfigMaps owning ConfigMaps.
    let controller = Controller::builder(configmaps.clone(), api.clone())
        .owns(configmaps.clone())
        .build(reconcile)
        .unwrap();
    assert!(
        configmaps.lister().by_index(CONTROLLER_INDEX, "no-such-uid").is_ok(),
        "owns() adds the index by controller"
    );
    controller.start().unwrap();
    let owner = api
        .create(&PostParams::default(), &common::cm("default", "a", "").with("n", "3"))
        .unwrap();
    api.create(&PostParams::default(), &common::cm("default", "b", "").with("n", "1"))
        .unwrap();
    eventually("three copies of a, one of b", || {
        configmaps.lister().list_all().len() == 2 + 3 + 1
    });
    let uid = owner.metadata.uid.clone().unwrap();
    let mut by_index: Vec<String> = configmaps
        .lister()
        .by_index(CONTROLLER_INDEX, &uid)
        .unwrap()
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    by_index.sort();
    assert_eq!(by_index, ["a-copy-0", "a-copy-1", "a-copy-2"]);
    assert_eq!(configmaps.lister().controlled_by(&owner).len(), 3);
    assert_eq!(configmaps.lister().namespace("default").list_all().len(), 6);
    controller.stop();
    factory.shutdown();
}

#[test]
fn delete_preconditions_by_builder_spare_a_re_created_object() {
    let server = ApiServer::start().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let old = api
        .create(&PostParams::default(), &common::cm("default", "a", "1"))
        .unwrap();
    api.delete("a", &DeleteParams::default()).unwrap();
    let new = api
        .create(
            &PostParams::default(),
            &ConfigMap::new(ObjectMeta::namespaced("default", "a")),
        )
        .unwrap();
    let stale = DeleteParams::default().precondition_uid(old.metadata.uid.clone().unwrap());
    let e = api.delete("a", &stale).unwrap_err();
    assert!(e.is_conflict(), "{e}");
    let stale_rv = DeleteParams::default().precondition_resource_version(old.metadata.resource_version.unwrap());
    assert!(api.delete("a", &stale_rv).unwrap_err().is_conflict());
    assert!(api.get_opt("a").unwrap().is_some());
    let dry = DeleteParams::default()
        .precondition_uid(new.metadata.uid.clone().unwrap())
        .dry_run();
    api.delete("a", &dry).unwrap();
    assert!(api.get_opt("a").unwrap().is_some(), "a dry run deletes nothing");
    api.delete(
        "a",
        &DeleteParams::default()
            .precondition_uid(new.metadata.uid.unwrap())
            .grace_period_seconds(0),
    )
    .unwrap();
    assert!(api.get_opt("a").unwrap().is_none());
}

#[test]
fn waits_return_when_the_condition_holds_and_time_out_when_it_does_not() {
    use kube_informer::wait::{self, WaitError};
    let server = ApiServer::start().unwrap();
    let client = server.client().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let factory = SharedInformerFactory::new(client, Default::default());
    let configmaps = factory.informer::<ConfigMap>();
    factory.start().unwrap();
    // Not there: the cache wait and the object wait give up at their deadline.
    let short = std::time::Duration::from_millis(200);
    let e = wait::until_timeout(&configmaps, short, |c| c.get("default/a").is_some()).unwrap_err();
    assert!(matches!(e, WaitError::Timeout), "{e}");
    let e = wait::object_timeout(&api, "a", short, |cm| cm.is_some()).unwrap_err();
    assert!(matches!(e, WaitError::Timeout), "{e}");
    // Created from another thread while both wait: each returns with it.
    let creator = {
        let api = api.clone();
        std::thread::spawn(move || api.create(&PostParams::default(), &common::cm("default", "a", "1")))
    };
    let got = wait::object_timeout(&api, "a", common::WAIT, |cm| cm.is_some()).unwrap();
    assert_eq!(got.unwrap().data.get("v"), Some("1"));
    wait::until_timeout(&configmaps, common::WAIT, |c| c.get("default/a").is_some()).unwrap();
    creator.join().unwrap().unwrap();
    // A deletion, awaited as the object's absence.
    api.delete("a", &DeleteParams::default()).unwrap();
    assert_eq!(
        wait::object_timeout(&api, "a", common::WAIT, |cm| cm.is_none()).unwrap(),
        None
    );
    wait::until_timeout(&configmaps, common::WAIT, |c| c.is_empty()).unwrap();
    // A stopped informer ends a wait without a deadline.
    factory.shutdown();
    let e = wait::until(&configmaps, |c| c.get("default/never").is_some()).unwrap_err();
    assert!(matches!(e, WaitError::Stopped), "{e}");
}

/// What the reconcile of `p` deletes, and where it reports.
struct Deletions {
    targets: Vec<ConfigMap>,
    report: crossbeam_channel::Sender<Vec<bool>>,
}

#[test]
fn context_delete_takes_that_very_object_and_counts_gone_or_replaced_as_done() {
    let server = ApiServer::start().unwrap();
    let client = server.client().unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    // Replaced: deleted and made again under its name since it was read.
    let replaced = api.create(&pp, &common::cm("default", "replaced", "old")).unwrap();
    api.delete("replaced", &DeleteParams::default()).unwrap();
    api.create(&pp, &common::cm("default", "replaced", "new")).unwrap();
    // Gone already.
    let gone = api.create(&pp, &common::cm("default", "gone", "")).unwrap();
    api.delete("gone", &DeleteParams::default()).unwrap();
    // Live: this one goes.
    let live = api.create(&pp, &common::cm("default", "live", "")).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    let factory = SharedInformerFactory::new(client, Default::default());
    let data = Deletions {
        targets: vec![replaced, gone, live],
        report: tx,
    };
    let controller = Controller::builder(factory.informer::<ConfigMap>(), data)
        .build(|_key, ctx: &Context<'_, ConfigMap, Deletions>| {
            if ctx.name() == "p" {
                let done: Result<Vec<bool>> = ctx.data().targets.iter().map(|cm| ctx.delete(cm)).collect();
                let _ = ctx.data().report.send(done?);
            }
            Ok::<_, Error>(Action::await_change())
        })
        .unwrap();
    controller.start().unwrap();
    api.create(&pp, &common::cm("default", "p", "")).unwrap();
    assert_eq!(rx.recv_timeout(common::WAIT).unwrap(), [false, false, true]);
    assert_eq!(
        api.get("replaced").unwrap().data.get("v"),
        Some("new"),
        "the new one is left alone"
    );
    assert!(api.get_opt("live").unwrap().is_none());
    controller.stop();
    factory.shutdown();
}
