//! The field manager's pipeline, with cases ported from k8s.io/apimachinery's `managedfields` tests
//! (fieldmanager_test.go, skipnonapplied, capmanagers, managedfieldsupdater, lastappliedmanager and
//! lastappliedupdater tests), run on objects as the server stores them.

use serde_json::{Value, json};

use super::*;
use crate::registry::resource::ResourceSpec;
use kube_informer::object::ApiResource;

/// An object and the field manager of its resource, as apimachinery's `TestFieldManager` holds them: updates and
/// applies replace the live object; the first update creates it.
struct Live {
    spec: ResourceSpec,
    subresource: Subresource,
    obj: Option<Value>,
}

impl Live {
    fn of(kind: &str) -> Live {
        let spec = ResourceSpec::defaults()
            .into_iter()
            .find(|s| s.api.kind == kind)
            .unwrap();
        Live {
            spec,
            subresource: Subresource::Main,
            obj: None,
        }
    }

    fn fm(&self) -> FieldManager<'_> {
        self.spec.field_manager(self.subresource)
    }

    fn update(&mut self, mut new: Value, manager: &str) {
        let requested = take_requested(new["metadata"].as_object_mut().unwrap());
        match &self.obj {
            None => self.fm().create(&mut new, requested, manager),
            Some(live) => self.fm().update(live, &mut new, requested, manager),
        }
        self.obj = Some(new);
    }

    fn apply(&mut self, config: &Value, manager: &str, force: bool) -> Result<(), Failure> {
        let new = self.fm().apply(self.obj.as_ref(), config, manager, force)?;
        self.obj = Some(new);
        Ok(())
    }

    fn entries(&self) -> Vec<Value> {
        self.obj.as_ref().map(|o| entries_of(o).to_vec()).unwrap_or_default()
    }

    fn managers(&self) -> Vec<String> {
        self.entries()
            .iter()
            .map(|e| e["manager"].as_str().unwrap().to_owned())
            .collect()
    }

    fn fields_of(&self, manager: &str) -> Value {
        self.entries()
            .into_iter()
            .find(|e| e["manager"] == manager)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or(Value::Null)
    }
}

fn deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "deployment", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                         "spec": {"containers": [{"name": "nginx", "image": image}]}},
        },
    })
}

#[test]
fn an_apply_conflicts_with_an_update() {
    // TestUpdateApplyConflict.
    let mut f = Live::of("Deployment");
    f.update(deployment(3, "nginx:latest"), "fieldmanager_test");
    let patch = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "deployment"}, "spec": {"replicas": 101}});
    let e = f.apply(&patch, "fieldmanager_conflict", false).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            409,
            "Apply failed with 1 conflict: conflict with \"fieldmanager_test\" using apps/v1: .spec.replicas"
        )
    );
    f.apply(&patch, "fieldmanager_conflict", true).unwrap();
    assert_eq!(
        f.fields_of("fieldmanager_conflict"),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(f.fields_of("fieldmanager_test")["f:spec"].get("f:replicas").is_none());
}

#[test]
fn metadata_the_server_sets_is_never_owned() {
    // TestApplyStripsFields, TestApplyDoesNotStripLabels.
    let mut f = Live::of("Deployment");
    f.update(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
            "name": "b", "namespace": "b", "uid": "b", "generation": 0, "resourceVersion": "b",
            "creationTimestamp": "2020-01-01T00:00:00Z",
            "managedFields": [{"manager": "update", "operation": "Apply", "apiVersion": "apps/v1"}],
        }}),
        "fieldmanager_test",
    );
    assert_eq!(f.entries(), Vec::<Value>::new());
    let mut f = Live::of("Pod");
    f.apply(
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}}),
        "fieldmanager_test",
        false,
    )
    .unwrap();
    assert_eq!(f.entries().len(), 1);
    assert_eq!(
        f.fields_of("fieldmanager_test"),
        json!({"f:metadata": {"f:labels": {"f:a": {}}}})
    );
}

#[test]
fn applied_configurations_are_checked() {
    // TestVersionCheck, TestApplyFailsWithManagedFields, TestApplySuccessWithNoManagedFields.
    let mut f = Live::of("Deployment");
    f.apply(
        &json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        "fieldmanager_test",
        false,
    )
    .unwrap();
    let e = f
        .apply(
            &json!({"apiVersion": "apps/v1beta1", "kind": "Deployment"}),
            "fieldmanager_test",
            false,
        )
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "invalid object type: apps/v1beta1, Kind=Deployment")
    );
    let e = f.apply(&json!({}), "fieldmanager_test", false).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (400, "invalid object type: /, Kind="));
    let with_fields = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"managedFields": [{"manager": "x", "apiVersion": "apps/v1"}]}});
    let e = f.apply(&with_fields, "fieldmanager_test", false).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "metadata.managedFields must be nil")
    );
    // Fields the schema does not declare, and repeated keys, make the configuration unusable (500).
    let unknown = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
                         "spec": {"replicaz": 1}});
    let e = f.apply(&unknown, "fieldmanager_test", false).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            500,
            "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): .spec.replicaz: field not declared in schema"
        )
    );
}

#[test]
fn no_op_writes_change_nothing() {
    // TestNoOpChanges (without its sleeps: equality is what is checked).
    let mut f = Live::of("Pod");
    let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}, "creationTimestamp": null}});
    f.apply(&obj, "fieldmanager_test_apply", false).unwrap();
    let before = f.obj.clone();
    f.apply(&obj, "fieldmanager_test_apply_other", false).unwrap();
    assert_ne!(before, f.obj, "a new manager sharing the fields is an entry more");
    // An apply that changes no field leaves no time: its entry sorts first.
    assert_eq!(
        f.managers(),
        ["fieldmanager_test_apply_other", "fieldmanager_test_apply"]
    );
    assert!(f.entries()[0].get("time").is_none());
    let before = f.obj.clone();
    f.update(obj.clone(), "fieldmanager_test_update");
    assert_eq!(before, f.obj, "an update changing nothing changes nothing");
    f.apply(&obj, "fieldmanager_test_apply", true).unwrap();
    assert_eq!(before, f.obj, "a re-apply changing nothing changes nothing");
}

#[test]
fn managed_fields_are_reset_by_an_empty_list_or_an_empty_entry() {
    // TestResetManagedFieldsEmptyList, TestResetManagedFieldsEmptyItem.
    for reset in [json!([]), json!([{}])] {
        let mut f = Live::of("Pod");
        let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}});
        f.apply(&obj, "fieldmanager_test_apply", false).unwrap();
        assert_eq!(f.entries().len(), 1);
        let mut again = obj.clone();
        again["metadata"]["managedFields"] = reset.clone();
        f.update(again, "update_manager");
        assert_eq!(f.entries(), Vec::<Value>::new(), "{reset}");
        // Untracked now: an update does not track it again…
        let mut changed = obj.clone();
        changed["metadata"]["labels"]["c"] = json!("d");
        f.update(changed.clone(), "update_manager");
        assert_eq!(f.entries(), Vec::<Value>::new());
        // …until something applies: what was there belongs to before-first-apply (TestUpdateBeforeFirstApply).
        let e = f
            .apply(
                &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "x"}}}),
                "applier",
                false,
            )
            .unwrap_err();
        assert_eq!(
            e.message,
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .metadata.labels.a"
        );
        f.apply(
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "x"}}}),
            "applier",
            true,
        )
        .unwrap();
        assert_eq!(f.managers(), ["applier", "before-first-apply"]);
        assert_eq!(
            f.fields_of("before-first-apply"),
            json!({"f:metadata": {"f:labels": {".": {}, "f:c": {}}}})
        );
    }
}

#[test]
fn valid_entries_sent_in_an_update_replace_the_stored_ones_but_not_through_a_subresource() {
    // TestUpdateViaSubresources, and an update that sets managedFields itself (kubectl's client-side to
    // server-side apply migration does).
    let mut f = Live::of("Pod");
    let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}});
    f.update(obj.clone(), "creator");
    let mut with_entries = obj.clone();
    with_entries["metadata"]["managedFields"] = json!([{
        "manager": "test", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}}, "time": "2001-01-01T00:00:00Z",
    }]);
    f.update(with_entries.clone(), "updater");
    assert_eq!(f.managers(), ["test"], "no change: the entries sent are kept as sent");
    assert_eq!(f.entries()[0]["time"], "2001-01-01T00:00:00Z");
    // Invalid entries are ignored: the stored ones stay.
    let mut invalid = obj.clone();
    invalid["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Delete", "apiVersion": "v1"}]);
    f.update(invalid, "updater");
    assert_eq!(f.managers(), ["test"]);
    // Through a subresource, the stored entries count whatever the body says.
    f.subresource = Subresource::Status;
    let mut sub = obj.clone();
    sub["metadata"]["managedFields"] = json!([]);
    sub["status"] = json!({"phase": "Running"});
    f.update(sub, "kubelet");
    assert_eq!(f.managers(), ["test", "kubelet"]);
    assert_eq!(f.entries()[1]["subresource"], "status");
    assert_eq!(f.fields_of("kubelet"), json!({"f:status": {".": {}, "f:phase": {}}}));
}

#[test]
fn taking_fields_over_keeps_the_previous_managers_time() {
    // TestTakingOverManagedFieldsDuringUpdate/ApplyDoesNotModifyPreviousManagerTime, without sleeping: the first
    // manager's time is an old one.
    for apply in [false, true] {
        let mut f = Live::of("ConfigMap");
        let mut first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "configmap"},
                               "data": {"key_a": "value", "key_b": "value"}});
        f.update(first.clone(), "creator");
        // Entries sent with an update that changes nothing are kept as sent.
        first["metadata"]["managedFields"] = json!([{
            "manager": "fieldmanager_a_test", "operation": if apply { "Apply" } else { "Update" }, "apiVersion": "v1",
            "time": "2001-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key_a": {}, "f:key_b": {}}},
        }]);
        f.update(first, "creator");
        assert_eq!(f.managers(), ["fieldmanager_a_test"]);
        let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "configmap"},
                            "data": {"key_a": "value", "key_b": "new-value"}});
        if apply {
            f.apply(&second, "fieldmanager_b_test", true).unwrap();
        } else {
            f.update(second, "fieldmanager_b_test");
        }
        let a = f
            .entries()
            .into_iter()
            .find(|e| e["manager"] == "fieldmanager_a_test")
            .unwrap();
        assert_eq!(a["time"], "2001-01-01T00:00:00Z");
        assert_eq!(a["fieldsV1"], json!({"f:data": {"f:key_a": {}}}));
        let b = f
            .entries()
            .into_iter()
            .find(|e| e["manager"] == "fieldmanager_b_test")
            .unwrap();
        assert_ne!(b["time"], "2001-01-01T00:00:00Z");
    }
}

#[test]
fn update_managers_past_the_cap_merge_into_ancient_changes() {
    // TestCapUpdateManagers, with its cap of 3.
    let entry = |name: &str, version: &str, hour: u32, fields: &[&str]| {
        let set: serde_json::Map<String, Value> = fields.iter().map(|f| (format!("f:{f}"), json!({}))).collect();
        json!({"manager": name, "apiVersion": version, "operation": "Update", "fieldsType": "FieldsV1",
               "fieldsV1": set, "time": format!("2001-01-01T{hour:02}:00:00Z")})
    };
    for (input, expected) in [
        (
            vec![
                entry("update-manager1", "v1", 1, &["a"]),
                entry("update-manager2", "v1", 2, &["b"]),
                entry("update-manager3", "v1", 3, &["c"]),
                entry("update-manager4", "v1", 4, &["d"]),
            ],
            vec![
                entry("ancient-changes", "v1", 2, &["a", "b"]),
                entry("update-manager3", "v1", 3, &["c"]),
                entry("update-manager4", "v1", 4, &["d"]),
            ],
        ),
        (
            vec![
                entry("ancient-changes", "v1", 2, &["a", "b"]),
                entry("update-manager3", "v1", 3, &["c"]),
                entry("update-manager4", "v1", 4, &["d"]),
                entry("update-manager5", "v1", 5, &["e"]),
            ],
            vec![
                entry("ancient-changes", "v1", 3, &["a", "b", "c"]),
                entry("update-manager4", "v1", 4, &["d"]),
                entry("update-manager5", "v1", 5, &["e"]),
            ],
        ),
        (
            vec![
                entry("update-manager1", "v1", 1, &["a"]),
                entry("update-manager2", "v2", 2, &["b"]),
                entry("update-manager3", "v1", 3, &["c"]),
                entry("update-manager4", "v1", 4, &["d"]),
                entry("update-manager5", "v1", 5, &["e"]),
            ],
            vec![
                entry("update-manager2", "v2", 2, &["b"]),
                entry("ancient-changes", "v1", 4, &["a", "c", "d"]),
                entry("update-manager5", "v1", 5, &["e"]),
            ],
        ),
    ] {
        let mut managed = entries::decode(&input).unwrap();
        cap_update_managers(&mut managed, 3);
        assert_eq!(entries::encode(&managed), expected);
    }
}

#[test]
fn kubectl_takes_over_from_client_side_apply() {
    // TestInteropForClientSideApplyAndServerSideApply, TestLastAppliedUpdater.
    let mut f = Live::of("Deployment");
    let mut created = deployment(100, "my-image-v1");
    let annotation = created.to_string();
    created["metadata"]["annotations"] = json!({last_applied::ANNOTATION: annotation});
    f.update(created, "kubectl-client-side-apply");
    let v2 = deployment(8, "my-image-v2");
    // Another manager conflicts with client-side apply's fields…
    let e = f.apply(&v2, "not-kubectl", false).unwrap_err();
    assert!(
        e.message
            .starts_with("Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:"),
        "{}",
        e.message
    );
    // …kubectl takes them over, and keeps the annotation up to date.
    f.apply(&v2, "kubectl", false).unwrap();
    let live = f.obj.clone().unwrap();
    assert_eq!(live["spec"]["replicas"], 8);
    let recorded = live["metadata"]["annotations"][last_applied::ANNOTATION]
        .as_str()
        .unwrap();
    assert!(
        recorded.contains("my-image-v2") && recorded.ends_with('\n'),
        "{recorded}"
    );
    // A field changed since client-side apply recorded it is a conflict even for kubectl.
    let mut drifted = f.obj.clone().unwrap();
    drifted["spec"]["template"]["spec"]["containers"][0]["image"] = json!("changed-by-hand");
    drifted["metadata"].as_object_mut().unwrap().remove("managedFields");
    f.update(drifted, "kubectl-edit");
    let e = f.apply(&deployment(8, "my-image-v3"), "kubectl", false).unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.template.spec.containers[name=\"nginx\"].image"
    );
}

#[test]
fn main_resource_writes_own_no_status_and_status_writes_own_only_status() {
    let mut f = Live::of("Deployment");
    let mut d = deployment(1, "nginx");
    d["status"] = json!({"replicas": 1});
    f.update(d.clone(), "creator");
    assert!(f.fields_of("creator").get("f:status").is_none());
    f.subresource = Subresource::Status;
    let mut s = d.clone();
    s["status"] = json!({"replicas": 2});
    s["spec"]["replicas"] = json!(5);
    f.update(s, "controller");
    assert_eq!(f.fields_of("controller"), json!({"f:status": {"f:replicas": {}}}));
}

#[test]
fn custom_resources_and_schemaless_resources_are_typed_too() {
    let spec = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true));
    let fm = spec.field_manager(Subresource::Main);
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                         "spec": {"deep": {"x": 1}, "list": [1, 2]}});
    fm.create(&mut obj, Requested::Absent, "creator");
    // No schema: maps are owned key by key, lists whole; everything a create adds is new ("."), as for an
    // unstructured object.
    assert_eq!(
        entries_of(&obj)[0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:deep": {".": {}, "f:x": {}}, "f:list": {}}})
    );
}
