//! Writes that stay correct when others write too, against the embedded API server: `retry_on_conflict`,
//! `Api::entry`, `delete_collection`, the `scale` subresource, and apply bodies of `object!` types.

use std::sync::{Arc, Barrier};

use kube_informer::client::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_informer::client::{Api, Client, Committed, Deleted, Entry, RetryBackoff, on_error, retry_on_conflict};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, DynamicObject, ObjectMeta, Resource, Scale, ScaleSpec};
use kube_informer_apiserver::{ApiServer, ScaleSubresource, Verb};
use serde_json::json;

mod common;
use common::widget::{Widget, WidgetSpec, widget, widget_spec};

fn server() -> (ApiServer, Client) {
    let server = ApiServer::builder()
        .namespaces(["b", "ci", "other", "prod"])
        .resource(widget_spec())
        .start()
        .unwrap();
    let client = server.client().unwrap();
    (server, client)
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap::new(ObjectMeta::named(name))
}

#[test]
fn apply_takes_an_object_type_without_type_fields() {
    let (_server, client) = server();
    let widgets: Api<Widget> = Api::namespaced(client, "default");
    let pp = PatchParams::apply("toolkit-test");
    // Server-side apply refuses a body without apiVersion: the client adds the type fields the struct lacks.
    let created = widgets
        .patch("w1", &pp, &Patch::Apply(&widget("default", "w1", "red")))
        .unwrap();
    assert_eq!(created.spec.color, "red");
    let updated = widgets
        .patch("w1", &pp, &Patch::Apply(&widget("default", "w1", "blue")))
        .unwrap();
    assert_eq!(updated.spec.color, "blue");
    assert_ne!(created.metadata.resource_version, updated.metadata.resource_version);
    // The same for create and replace.
    let mut w2 = widgets
        .create(&PostParams::default(), &widget("default", "w2", "green"))
        .unwrap();
    w2.spec.size = 5;
    assert_eq!(widgets.replace("w2", &PostParams::default(), &w2).unwrap().spec.size, 5);

    // A body naming another version is the caller's choice, and the server's to refuse.
    let e = widgets
        .patch(
            "w1",
            &pp,
            &Patch::Apply(json!({"apiVersion": "example.com/v2", "spec": {"size": 2}})),
        )
        .unwrap_err();
    assert_eq!(e.code(), Some(400), "{e}");
}

#[test]
fn retry_on_conflict_rereads_after_a_competing_write() {
    let (server, client) = server();
    server.create(&cm("shared").within_ns("default")).unwrap();
    let ours: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let theirs: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let mut attempts = 0;
    let mark = server.requests().mark();
    let result = retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || {
        attempts += 1;
        let mut current = ours.get("shared")?;
        if attempts == 1 {
            // Another writer changes the object between our read and our write.
            let mut other = theirs.get("shared")?;
            other.data.insert("theirs".into(), "1".into());
            theirs.replace("shared", &PostParams::default(), &other)?;
        }
        current.data.insert("ours".into(), "1".into());
        ours.replace("shared", &PostParams::default(), &current)
    })
    .unwrap();
    assert_eq!(
        attempts, 2,
        "the first write conflicted, the second read the competing change"
    );
    assert_eq!(result.data.get("theirs"), Some("1"), "the competing change survives");
    assert_eq!(result.data.get("ours"), Some("1"));
    let updates: Vec<u16> = server
        .requests()
        .since(mark)
        .iter()
        .filter(|r| r.verb == Verb::Update)
        .map(|r| r.code)
        .collect();
    assert_eq!(updates, [200, 409, 200]);
}

#[test]
fn concurrent_increments_all_land() {
    const THREADS: usize = 4;
    const EACH: usize = 10;
    let (server, client) = server();
    server
        .create(&cm("counter").within_ns("default").with("n", "0"))
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    // Contention is high on purpose: as many attempts as it takes, no pause (the conflicts are the pacing).
    let patient = RetryBackoff {
        steps: 10_000,
        duration: std::time::Duration::ZERO,
        ..RetryBackoff::DEFAULT_RETRY
    };
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (api, start) = (api.clone(), start.clone());
            std::thread::Builder::new()
                .name(format!("test/incrementer-{i}"))
                .spawn(move || {
                    start.wait();
                    for _ in 0..EACH {
                        retry_on_conflict(patient, || {
                            let mut c = api.get("counter")?;
                            let n: usize = c.data.get("n").unwrap().parse().unwrap();
                            c.data.insert("n".into(), (n + 1).to_string());
                            api.replace("counter", &PostParams::default(), &c)
                        })
                        .unwrap();
                    }
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(api.get("counter").unwrap().data.get("n"), Some("40"));
}

#[test]
fn entry_creates_updates_and_leaves_unchanged_objects_alone() {
    let (server, client) = server();
    let api: Api<Widget> = Api::namespaced(client, "default");
    let pp = PostParams::default();

    // Vacant: created with the entry's name and namespace.
    let mut e = api
        .entry("w")
        .unwrap()
        .or_insert(Widget::default)
        .and_modify(|w| w.spec.color = "red".into());
    assert!(e.is_new());
    assert_eq!(e.commit(&pp).unwrap(), Committed::Created);
    assert_eq!(e.get().metadata.namespace.as_deref(), Some("default"));
    // The entry now holds the stored object: a second commit without changes sends nothing.
    let mark = server.requests().mark();
    assert_eq!(e.commit(&pp).unwrap(), Committed::Unchanged);
    e.get_mut().spec.size = 3;
    assert_eq!(e.commit(&pp).unwrap(), Committed::Updated);
    assert_eq!(server.requests().count_since(mark, Verb::Update, "widgets"), 1);

    // Occupied: read, left as is.
    let mark = server.requests().mark();
    let mut e = api.entry("w").unwrap().or_insert(|| unreachable!("it exists"));
    assert_eq!(e.get().spec.size, 3);
    assert_eq!(e.commit(&pp).unwrap(), Committed::Unchanged);
    assert!(server.requests().since(mark).iter().all(|r| r.verb == Verb::Get));

    // A stale entry conflicts rather than overwriting.
    let Entry::Occupied(mut stale) = api.entry("w").unwrap() else {
        panic!("w exists")
    };
    let mut fresh = api.get("w").unwrap();
    fresh.spec.color = "blue".into();
    api.replace("w", &pp, &fresh).unwrap();
    stale.get_mut().spec.size = 9;
    assert!(stale.commit(&pp).unwrap_err().is_conflict());
    assert_eq!(
        api.get("w").unwrap().spec,
        WidgetSpec {
            color: "blue".into(),
            size: 3
        }
    );

    // An entry cannot be turned into another object.
    let mut e = api.entry("w").unwrap().or_insert(Widget::default);
    e.get_mut().metadata.name = Some("other".into());
    let err = e.commit(&pp).unwrap_err().to_string();
    assert!(err.contains("named \"other\""), "{err}");
    let Entry::Occupied(mut e) = api.entry("w").unwrap() else {
        panic!("w exists")
    };
    e.get_mut().spec.size = 1;
    e.get_mut().metadata.resource_version = None;
    let err = e.commit(&pp).unwrap_err().to_string();
    assert!(err.contains("resourceVersion"), "{err}");
}

#[test]
fn racing_get_or_create_converges_with_on_error() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams::default();
    // Two writers both find the object missing; the second create loses the race.
    let first = api
        .entry("settings")
        .unwrap()
        .or_insert(|| cm("settings").with("a", "1"));
    let mut second = api
        .entry("settings")
        .unwrap()
        .or_insert(|| cm("settings").with("b", "2"));
    let mut first = first;
    assert_eq!(first.commit(&pp).unwrap(), Committed::Created);
    assert!(second.commit(&pp).unwrap_err().is_already_exists());

    // Retrying the whole get-or-create on AlreadyExists and Conflict converges.
    let retriable = |e: &kube_informer::Error| e.is_conflict() || e.is_already_exists();
    let mut attempts = 0;
    let outcome = on_error(RetryBackoff::DEFAULT_RETRY, retriable, || {
        attempts += 1;
        let mut e = api.entry("settings")?.or_insert(|| cm("settings")).and_modify(|c| {
            c.data.insert("b".into(), "2".into());
        });
        e.commit(&pp)
    })
    .unwrap();
    assert_eq!((outcome, attempts), (Committed::Updated, 1));
    let stored = api.get("settings").unwrap();
    assert_eq!((stored.data.get("a"), stored.data.get("b")), (Some("1"), Some("2")));
}

#[test]
fn delete_collection_deletes_what_the_selectors_match() {
    let (server, client) = server();
    for (name, ns, run) in [
        ("a", "ci", "1"),
        ("b", "ci", "1"),
        ("c", "ci", "2"),
        ("d", "other", "1"),
    ] {
        let mut c = cm(name).within_ns(ns);
        c.metadata.labels.insert("run".into(), run.into());
        if name == "b" {
            c.metadata.finalizers.push("example.com/hold".into());
        }
        server.create(&c).unwrap();
    }
    let ci: Api<ConfigMap> = Api::namespaced(client.clone(), "ci");
    let Deleted::Object(list) = ci
        .delete_collection(&DeleteParams::default(), &ListParams::default().labels("run=1"))
        .unwrap()
    else {
        panic!("a list of what was deleted")
    };
    let mut names: Vec<_> = list.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    let held = list
        .items
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some("b"))
        .unwrap();
    assert!(held.metadata.deletion_timestamp.is_some(), "a finalizer holds b");
    let left: Vec<_> = ci
        .list(&ListParams::default())
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.metadata.name.unwrap())
        .collect();
    assert_eq!(left, ["b", "c"], "c did not match; b waits for its finalizer");
    assert!(
        server.get::<ConfigMap>(Some("other"), "d").is_ok(),
        "another namespace is untouched"
    );

    // Dry run deletes nothing; across namespaces is refused before anything is sent.
    let Deleted::Object(list) = ci
        .delete_collection(
            &DeleteParams {
                dry_run: true,
                ..Default::default()
            },
            &ListParams::default().fields("metadata.name=c"),
        )
        .unwrap()
    else {
        panic!("a list")
    };
    assert_eq!(list.items.len(), 1);
    assert!(server.get::<ConfigMap>(Some("ci"), "c").is_ok());
    let all: Api<ConfigMap> = Api::all(client);
    assert!(
        all.delete_collection(&DeleteParams::default(), &ListParams::default())
            .is_err()
    );
    assert!(server.get::<ConfigMap>(Some("other"), "d").is_ok());
}

/// Namespaced test objects.
trait WithinNs {
    fn within_ns(self, ns: &str) -> Self;
}

impl WithinNs for ConfigMap {
    fn within_ns(mut self, ns: &str) -> Self {
        self.metadata.namespace = Some(ns.into());
        self
    }
}

#[test]
fn widget_resource_is_what_the_server_serves() {
    // The test resource and the server agree (a typo here would make every test above meaningless).
    let (server, _client) = server();
    let ar: ApiResource = Widget::api_resource();
    assert_eq!(ar.api_version(), "example.com/v1");
    let created = server
        .create_json(
            &ar,
            Some("default"),
            json!({"metadata": {"name": "x"}, "spec": {"size": 1}}),
        )
        .unwrap();
    assert_eq!(created["kind"], "Widget");
}

// ----- the scale subresource -----

fn deployments() -> ApiResource {
    ApiResource::new("apps", "v1", "Deployment", "deployments", true)
}

/// A Deployment `name` in `prod` with `replicas`, selecting `app=<name>`.
fn deployment(server: &ApiServer, name: &str, replicas: i32) {
    let labels = json!({"app": name});
    server
        .create_json(
            &deployments(),
            Some("prod"),
            json!({
                "metadata": {"name": name},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    },
                },
            }),
        )
        .unwrap();
}

fn spec_replicas(api: &Api<DynamicObject>, name: &str) -> i64 {
    let d = api.get(name).unwrap();
    d.field::<serde_json::Value>("spec").unwrap().unwrap()["replicas"]
        .as_i64()
        .unwrap()
}

#[test]
fn scale_reads_and_writes_a_deployments_replicas() {
    let server = ApiServer::builder()
        .namespaces(["b", "ci", "other", "prod"])
        .start()
        .unwrap();
    deployment(&server, "web", 3);
    let api: Api<DynamicObject> = Api::namespaced_with(server.client().unwrap(), "prod", &deployments());
    let pp = PostParams::default();

    let scale = api.get_scale("web").unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));
    assert_eq!(scale.metadata.namespace.as_deref(), Some("prod"));
    assert_eq!(scale.spec, ScaleSpec { replicas: Some(3) });
    let status = scale.status.clone().unwrap();
    assert_eq!(status.selector.as_deref(), Some("app=web"));
    assert_eq!(
        scale.metadata.resource_version,
        api.get("web").unwrap().metadata.resource_version,
        "a Scale carries its object's resourceVersion"
    );

    // A replace sends an autoscaling/v1 Scale (the server refuses any other type on …/scale), conditional on the
    // resourceVersion read.
    let mark = server.requests().mark();
    let written = api
        .replace_scale("web", &pp, &Scale::new(scale.metadata.clone(), 5))
        .unwrap();
    assert_eq!(written.spec.replicas, Some(5));
    assert_eq!(spec_replicas(&api, "web"), 5);
    let puts: Vec<_> = server
        .requests()
        .since(mark)
        .iter()
        .filter(|r| r.verb == Verb::Update)
        .map(|r| (r.path.clone(), r.subresource.clone(), r.code))
        .collect();
    assert_eq!(
        puts,
        [(
            "/apis/apps/v1/namespaces/prod/deployments/web/scale".to_owned(),
            Some("scale".to_owned()),
            200
        )]
    );

    // The Scale read before is stale now: its write conflicts and changes nothing.
    let e = api
        .replace_scale("web", &pp, &Scale::new(scale.metadata.clone(), 1))
        .unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(spec_replicas(&api, "web"), 5);
    // Without a resourceVersion the write is unconditional.
    api.replace_scale("web", &pp, &Scale::new(ObjectMeta::namespaced("prod", "web"), 4))
        .unwrap();
    assert_eq!(spec_replicas(&api, "web"), 4);

    // What `kubectl scale` sends: a merge patch of the Scale; and a JSON patch guarded by a test op.
    let patched = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .unwrap();
    assert_eq!(patched.spec.replicas, Some(2));
    let guarded = |from: i32, to: i32| {
        api.patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Json(json!([
                {"op": "test", "path": "/spec/replicas", "value": from},
                {"op": "replace", "path": "/spec/replicas", "value": to},
            ])),
        )
    };
    assert_eq!(guarded(2, 6).unwrap().spec.replicas, Some(6));
    assert_eq!(guarded(2, 7).unwrap_err().code(), Some(422), "the test op fails: 6 now");
    assert_eq!(spec_replicas(&api, "web"), 6);

    // A dry run answers the result and keeps the object.
    let dry = api
        .replace_scale(
            "web",
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &Scale::new(ObjectMeta::namespaced("prod", "web"), 9),
        )
        .unwrap();
    assert_eq!(dry.spec.replicas, Some(9));
    assert_eq!(spec_replicas(&api, "web"), 6);

    // Typed errors: invalid replicas, a missing object, a kind without the subresource.
    let e = api
        .replace_scale("web", &pp, &Scale::new(ObjectMeta::namespaced("prod", "web"), -1))
        .unwrap_err();
    assert_eq!(e.code(), Some(422), "{e}");
    assert!(api.get_scale("nope").unwrap_err().is_not_found());
    server.create(&cm("c").within_ns("prod")).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "prod");
    assert!(cms.get_scale("c").unwrap_err().is_not_found());
}

#[test]
fn concurrent_scale_ups_of_a_custom_resource_all_land() {
    const THREADS: usize = 4;
    const EACH: i32 = 5;
    // Widgets scale by their size.
    let server = ApiServer::builder()
        .namespaces(["b", "ci", "other", "prod"])
        .resource(widget_spec().with_scale_subresource(ScaleSubresource::new(".spec.size", ".status.size")))
        .start()
        .unwrap();
    let api: Api<Widget> = Api::namespaced(server.client().unwrap(), "default");
    api.create(&PostParams::default(), &widget("default", "w", "red"))
        .unwrap();
    let patient = RetryBackoff {
        steps: 10_000,
        duration: std::time::Duration::ZERO,
        ..RetryBackoff::DEFAULT_RETRY
    };
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (api, start) = (api.clone(), start.clone());
            std::thread::Builder::new()
                .name(format!("test/scaler-{i}"))
                .spawn(move || {
                    start.wait();
                    for _ in 0..EACH {
                        // Read-modify-write of the Scale: its resourceVersion makes a lost race a conflict.
                        retry_on_conflict(patient, || {
                            let s = api.get_scale("w")?;
                            let n = s.spec.replicas.unwrap_or(0);
                            api.replace_scale("w", &PostParams::default(), &Scale::new(s.metadata, n + 1))
                        })
                        .unwrap();
                    }
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let expected = 1 + THREADS as i32 * EACH;
    assert_eq!(api.get_scale("w").unwrap().spec.replicas, Some(expected));
    assert_eq!(api.get("w").unwrap().spec.size, expected as u32);
}
