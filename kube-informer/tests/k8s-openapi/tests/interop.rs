//! k8s-openapi's types as informer object types, end to end against the embedded API server.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_informer::client::Api;
use kube_informer::controller::{add_finalizer, remove_finalizer};
use kube_informer::informer::{InformerOptions, SharedIndexInformer, strip_managed_fields};
use kube_informer::object::{
    MetaAccessor, NamespacedResource, Object, OwnerRefs, Resource, is_controlled_by, key_of, remove_owner_reference,
    set_controller_reference,
};
use kube_informer_apiserver::ApiServer;

/// Compiles only for a namespaced type: what `Context::namespace` needs to return a `&str`.
fn namespaced<K: NamespacedResource>() {}

#[test]
fn resources_come_from_k8s_openapi_metadata() {
    namespaced::<ConfigMap>();
    namespaced::<Deployment>();
    let cm = ConfigMap::api_resource();
    assert_eq!(
        (
            cm.group.as_str(),
            cm.version.as_str(),
            cm.plural.as_str(),
            cm.namespaced
        ),
        ("", "v1", "configmaps", true)
    );
    let deploy = Deployment::api_resource();
    assert_eq!(
        deploy.collection_path(Some("x")),
        "/apis/apps/v1/namespaces/x/deployments"
    );
    assert!(!Node::api_resource().namespaced);
}

#[test]
fn metadata_access_works_on_k8s_openapi_objects() {
    let mut cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("a".into()),
            namespace: Some("ns".into()),
            labels: None,
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(key_of(&cm), "ns/a");
    assert!(cm.meta().labels().is_empty());
    cm.meta_mut().labels_mut().insert("app".into(), "web".into());
    assert_eq!(cm.metadata.labels.as_ref().unwrap()["app"], "web");
    cm.meta_mut().set_resource_version(Some("7".into()));
    assert_eq!(cm.meta().resource_version(), Some("7"));
}

#[test]
fn owner_references_and_finalizers_work_on_k8s_openapi_objects() {
    let deploy = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            uid: Some("u-1".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = deploy.controller_owner_ref().unwrap();
    assert_eq!(
        (r.api_version(), r.kind(), r.controller),
        ("apps/v1", "Deployment", Some(true))
    );
    let mut cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("web-settings".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    set_controller_reference(&deploy, &mut cm).unwrap();
    let refs = cm.metadata.owner_references.as_ref().unwrap();
    assert_eq!((refs.len(), refs[0].block_owner_deletion), (1, Some(true)));
    assert!(is_controlled_by(&cm, &deploy));
    assert!(remove_owner_reference(&deploy, &mut cm));
    assert_eq!(cm.metadata.owner_references, None, "an empty list is left out");

    assert!(add_finalizer(&mut cm, "example.com/x"));
    assert_eq!(
        cm.metadata.finalizers.as_deref(),
        Some(&["example.com/x".to_owned()][..])
    );
    assert!(remove_finalizer(&mut cm, "example.com/x"));
    assert!(cm.meta().finalizers().is_empty());
}

#[test]
fn an_informer_of_k8s_openapi_configmaps_syncs_and_watches() {
    let server = ApiServer::builder().namespaces(["x"]).start().unwrap();
    let api = Api::<ConfigMap>::namespaced(server.client().unwrap(), "default");
    let mut seed = ConfigMap {
        metadata: ObjectMeta {
            name: Some("seed".into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    };
    api.create(&Default::default(), &seed).unwrap();
    let informer = SharedIndexInformer::for_api(
        &api,
        InformerOptions::default().transform(strip_managed_fields::<ConfigMap>),
    );
    informer.start().unwrap();
    informer.wait_for_cache_sync(Duration::from_secs(30)).unwrap();
    seed.metadata.name = Some("second".into());
    api.create(&Default::default(), &seed).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while informer.lister().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the watch delivered the second object"
        );
        std::thread::yield_now();
    }
    let cached = informer.lister().namespace("default").get("seed").unwrap();
    assert_eq!(cached.data.as_ref().unwrap()["k"], "v");
    informer.stop();
}

/// The scale subresource judged by a type this project did not write: the server's `Scale` decodes into
/// k8s-openapi's `autoscaling/v1` `Scale` with the same meaning, and k8s-openapi's `Scale` decodes into ours.
#[test]
fn the_scale_subresource_agrees_with_k8s_openapi() {
    use k8s_openapi::api::autoscaling::v1::{Scale as K8sScale, ScaleSpec as K8sScaleSpec};
    let server = ApiServer::builder().namespaces(["x"]).start().unwrap();
    let deployments = Api::<Deployment>::namespaced(server.client().unwrap(), "default");
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }))
    .unwrap();
    let created = deployments.create(&Default::default(), &deployment).unwrap();
    let ours = deployments.get_scale("web").unwrap();
    let theirs: K8sScale = serde_json::from_value(serde_json::to_value(&ours).unwrap()).unwrap();
    assert_eq!(theirs.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(theirs.metadata.name.as_deref(), Some("web"));
    assert_eq!(theirs.metadata.uid, created.metadata.uid);
    assert_eq!(theirs.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(
        theirs.status.as_ref().map(|s| s.selector.as_deref()),
        Some(Some("app=web"))
    );
    // Written as k8s-openapi writes a Scale: the deployment follows.
    let mut wanted = theirs.clone();
    wanted.spec = Some(K8sScaleSpec { replicas: Some(5) });
    let back = serde_json::from_value(serde_json::to_value(&wanted).unwrap()).unwrap();
    let replaced = deployments.replace_scale("web", &Default::default(), &back).unwrap();
    assert_eq!(replaced.spec.replicas, Some(5));
    let after = deployments.get("web").unwrap();
    assert_eq!(after.spec.replicas, Some(5));
}
