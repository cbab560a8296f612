//! The write rules of `strategy`: creates, updates, patches (the apply checks among them), finalizers, deletes and
//! dry runs, on a deployments resource with a status subresource.

use super::*;
use kube_informer::object::ApiResource;
use serde_json::json;

/// A patch of `name` in namespace `ns` by the manager `test`, admitting everything, not dry run.
fn patch_ns(
    store: &Store,
    spec: &ResourceSpec,
    name: &str,
    kind: PatchType,
    doc: &Value,
    status_only: bool,
) -> Result<Written, Failure> {
    patch(
        Target::new(store, spec, Some("ns"), name),
        kind,
        doc,
        status_only,
        &tester(),
        &mut |_| Ok(()),
        &mut |_| {},
    )
}

fn tester() -> Writer {
    Writer {
        manager: "test".into(),
        force: false,
    }
}

fn setup() -> (Store, ResourceSpec) {
    let spec =
        ResourceSpec::new(ApiResource::new("apps", "v1", "Deployment", "deployments", true)).with_status_subresource();
    (Store::new(1, 100, vec![spec.clone()], crate::admission::HOOKS), spec)
}

fn value(o: &StoredObject) -> Value {
    o.to_value()
}

#[test]
fn create_sets_system_fields_and_drops_status() {
    let (store, spec) = setup();
    let w = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d"},"spec":{"r":1},"status":{"x":1}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    let v = value(&w.object);
    assert_eq!(v["apiVersion"], "apps/v1");
    assert_eq!(v["kind"], "Deployment");
    assert_eq!(v["metadata"]["namespace"], "ns");
    assert_eq!(v["metadata"]["generation"], 1);
    assert_eq!(v["metadata"]["resourceVersion"], "2");
    assert!(v["metadata"]["uid"].as_str().unwrap().len() == 36);
    assert!(v.get("status").is_none());
    let again = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d"}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));
}

#[test]
fn create_validates_input() {
    let (store, spec) = setup();
    let cases = [
        (json!({"metadata":{"name":"Bad_Name"}}), 422),
        (json!({"metadata":{}}), 422),
        (json!({"metadata":{"name":"a","labels":{"bad key!":"v"}}}), 422),
        (json!({"metadata":{"name":"a","labels":{"k":1}}}), 400),
        (json!({"metadata":{"name":"a","namespace":"other"}}), 400),
        (json!({"kind":"Pod","metadata":{"name":"a"}}), 400),
        (json!({"metadata":{"name":"a","resourceVersion":"5"}}), 500),
    ];
    for (body, code) in cases {
        let err = create(&store, &spec, Some("ns"), body.clone(), false, "test", &mut |_| {}).unwrap_err();
        assert_eq!(err.code, code, "{body}");
    }
    let w = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"generateName":"web-"}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    assert!(w.object.name.starts_with("web-") && w.object.name.len() == 9);
}

#[test]
fn update_checks_versions_and_counts_generations() {
    let (store, spec) = setup();
    let w = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d"},"spec":{"r":1}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    let mut v = value(&w.object);
    // A label change keeps the generation.
    v["metadata"]["labels"] = json!({"a":"b"});
    let u1 = update(
        Target::new(&store, &spec, Some("ns"), "d"),
        v.clone(),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(value(&u1.object)["metadata"]["generation"], 1);
    // The same body again carries a stale resourceVersion.
    let stale = update(
        Target::new(&store, &spec, Some("ns"), "d"),
        v.clone(),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap_err();
    assert_eq!((stale.code, stale.reason.as_str()), (409, "Conflict"));
    // A spec change bumps it; the status sent with it is ignored.
    let mut v = value(&u1.object);
    v["spec"]["r"] = json!(2);
    v["status"] = json!({"ready": true});
    let u2 = update(
        Target::new(&store, &spec, Some("ns"), "d"),
        v,
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(value(&u2.object)["metadata"]["generation"], 2);
    assert!(value(&u2.object).get("status").is_none());
    // Status writes touch only the status.
    let mut v = value(&u2.object);
    v["status"] = json!({"ready": true});
    v["spec"]["r"] = json!(99);
    let u3 = update(
        Target::new(&store, &spec, Some("ns"), "d"),
        v,
        true,
        "test",
        &mut |_| {},
    )
    .unwrap();
    let got = value(&u3.object);
    assert_eq!(
        (got["status"]["ready"].clone(), got["spec"]["r"].clone()),
        (json!(true), json!(2))
    );
    // A write that changes nothing makes no new revision.
    let before = store.lock().rev();
    let same = update(
        Target::new(&store, &spec, Some("ns"), "d"),
        value(&u3.object),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((same.object.rev, store.lock().rev()), (u3.object.rev, before));
    // Name mismatch and missing object.
    assert_eq!(
        update(
            Target::new(&store, &spec, Some("ns"), "x"),
            value(&u3.object),
            false,
            "test",
            &mut |_| {}
        )
        .unwrap_err()
        .code,
        400
    );
    let mut ghost = value(&u3.object);
    ghost["metadata"]["name"] = json!("ghost");
    assert_eq!(
        update(
            Target::new(&store, &spec, Some("ns"), "ghost"),
            ghost,
            false,
            "test",
            &mut |_| {}
        )
        .unwrap_err()
        .code,
        404
    );
}

#[test]
fn finalizers_hold_deletion_until_removed() {
    let (store, spec) = setup();
    let w = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d","finalizers":["x/y"]}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    let Deleted::Finalizing(marked) =
        delete(&store, &spec, Some("ns"), "d", &DeleteOptions::default(), &mut |_| {}).unwrap()
    else {
        panic!("expected finalizing");
    };
    let mut v = value(&marked);
    assert!(v["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(v["metadata"]["generation"], 2);
    assert!(marked.rev > w.object.rev);
    // No new finalizer may be added now.
    v["metadata"]["finalizers"] = json!(["x/y", "new"]);
    assert_eq!(
        update(
            Target::new(&store, &spec, Some("ns"), "d"),
            v.clone(),
            false,
            "test",
            &mut |_| {}
        )
        .unwrap_err()
        .code,
        422
    );
    v["metadata"]["finalizers"] = json!([]);
    update(
        Target::new(&store, &spec, Some("ns"), "d"),
        v,
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    assert!(store.lock().get("deployments.apps", "ns/d").is_none());
}

#[test]
fn delete_preconditions_conflict() {
    let (store, spec) = setup();
    let w = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d"}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    let opts = DeleteOptions {
        uid: Some("other".into()),
        ..Default::default()
    };
    let e = delete(&store, &spec, Some("ns"), "d", &opts, &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(e.code, 409);
    assert!(e.message.contains("Precondition failed: UID"));
    let opts = DeleteOptions {
        resource_version: Some(w.object.rev.to_string()),
        uid: Some(w.object.uid.clone()),
        ..Default::default()
    };
    let Deleted::Gone(last) = delete(&store, &spec, Some("ns"), "d", &opts, &mut |_| {}).unwrap() else {
        panic!("expected gone");
    };
    assert_eq!(last.rev, w.object.rev + 1);
    assert!(delete(&store, &spec, Some("ns"), "d", &opts, &mut |_| {}).is_err());
}

#[test]
fn patches_apply_with_optimistic_concurrency() {
    let (store, spec) = setup();
    create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d"},"spec":{"a":1,"b":[1,2]}}),
        false,
        "test",
        &mut |_| {},
    )
    .unwrap();
    let w = patch_ns(
        &store,
        &spec,
        "d",
        PatchType::Merge,
        &json!({"spec":{"a":null,"c":3}}),
        false,
    )
    .unwrap();
    assert_eq!(value(&w.object)["spec"], json!({"b":[1,2],"c":3}));
    let jp = json!([{"op":"add","path":"/spec/b/-","value":3}]);
    let w = patch_ns(&store, &spec, "d", PatchType::Json, &jp, false).unwrap();
    assert_eq!(value(&w.object)["spec"]["b"], json!([1, 2, 3]));
    let failing = json!([{"op":"test","path":"/spec/c","value":4}]);
    let e = patch_ns(&store, &spec, "d", PatchType::Json, &failing, false)
        .err()
        .unwrap();
    assert_eq!(e.code, 422);
    let stale = json!({"metadata":{"resourceVersion":"1"},"spec":{"c":5}});
    let e = patch_ns(&store, &spec, "d", PatchType::Merge, &stale, false)
        .err()
        .unwrap();
    assert_eq!(e.code, 409);
    let e = patch_ns(&store, &spec, "nope", PatchType::Merge, &json!({}), false)
        .err()
        .unwrap();
    assert_eq!(e.code, 404);
    let w = patch_ns(
        &store,
        &spec,
        "new",
        PatchType::Apply,
        &json!({"apiVersion":"apps/v1","kind":"Deployment","spec":{"z":1}}),
        false,
    )
    .unwrap();
    assert!(w.created);
    // The field manager's checks: the resource's own apiVersion and kind (kube-apiserver checks the whole
    // group, version and kind first), and no managedFields.
    for (body, message) in [
        (json!({"spec":{"z":1}}), "invalid object type: /, Kind="),
        (
            json!({"apiVersion":"apps/v1beta1","kind":"Deployment","spec":{}}),
            "invalid object type: apps/v1beta1, Kind=Deployment",
        ),
        (
            json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"managedFields":[]}}),
            "metadata.managedFields must be nil",
        ),
    ] {
        let e = patch_ns(&store, &spec, "new", PatchType::Apply, &body, false)
            .err()
            .unwrap();
        assert_eq!(e.code, 400);
        assert_eq!(e.message, message);
    }
    let status = json!({"status":{"ok":true},"spec":{"z":2}});
    let w = patch_ns(&store, &spec, "new", PatchType::Merge, &status, true).unwrap();
    assert_eq!(value(&w.object)["spec"]["z"], 1);
    assert_eq!(value(&w.object)["status"]["ok"], true);
}

#[test]
fn dry_run_stores_nothing() {
    let (store, spec) = setup();
    let rev = store.lock().rev();
    let w = create(
        &store,
        &spec,
        Some("ns"),
        json!({"metadata":{"name":"d"}}),
        true,
        "test",
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(w.object.name, "d");
    assert_eq!(store.lock().rev(), rev);
    assert!(store.lock().get("deployments.apps", "ns/d").is_none());
}
