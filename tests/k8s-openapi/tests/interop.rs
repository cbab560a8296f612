//! k8s-openapi's types as informer object types, end to end against the embedded API server.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_informer::client::Api;
use kube_informer::informer::{InformerOptions, SharedIndexInformer, strip_managed_fields};
use kube_informer::object::{MetaAccessor, Object, Resource, key_of};
use kube_informer::testing::ApiServer;

#[test]
fn resources_come_from_k8s_openapi_metadata() {
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
fn an_informer_of_k8s_openapi_configmaps_syncs_and_watches() {
    let server = ApiServer::start().unwrap();
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
    assert!(informer.wait_synced(Duration::from_secs(30)));
    seed.metadata.name = Some("second".into());
    api.create(&Default::default(), &seed).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while informer.store().len() < 2 {
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
