//! Metadata-only informers (client-go's metadata informer, kube-rs's `metadata_watcher`): `PartialObjectMetadata<K>`
//! asks the API server for `PartialObjectMetadata` with the `Accept` header kube-apiserver expects — checked on the
//! wire against a scripted peer — and, against the embedded server (which converts as kube-apiserver does), lists
//! and watches through a factory with only metadata crossing the network.

mod common;

use std::sync::Arc;

use common::peer::{Peer, response};
use common::*;
use kube_informer::cache::{DeletedObject, Fifo, ReflectorConfig};
use kube_informer::client::params::{ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube_informer::client::{Api, Client, Config};
use kube_informer::informer::{FactoryOptions, HandlerFuncs, SharedInformerFactory};
use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ObjectMeta, PartialObjectMetadata, Representation, Resource};
use kube_informer::watch::WatchEvent;
use kube_informer_apiserver::ApiServer;
use serde::{Deserialize, Serialize};

type Metadata = PartialObjectMetadata<ConfigMap>;

const LIST_ACCEPT: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const OBJECT_ACCEPT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// A scripted API server answering lists with a `PartialObjectMetadataList` of one object and watches with one
/// event, as kube-apiserver converts them.
fn partial_peer() -> Peer {
    Peer::start(|request, _| {
        let json = [("Content-Type", "application/json")];
        if request.is_watch() {
            let event = r#"{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}"#;
            response("200 OK", &json, format!("{event}\n").as_bytes())
        } else if request.target.contains("/configmaps/") {
            let object = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}"#;
            response("200 OK", &json, object.as_bytes())
        } else {
            let list = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}]}"#;
            response("200 OK", &json, list.as_bytes())
        }
    })
}

fn peer_client(peer: &Peer) -> Client {
    Client::new(Config::new(peer.url()).proxy(None)).unwrap()
}

#[test]
fn the_api_asks_for_partial_metadata_as_kube_apiserver_expects_and_refuses_whole_writes() {
    let peer = partial_peer();
    let api = Api::<Metadata>::namespaced(peer_client(&peer), "ns");
    assert_eq!(
        api.list(&ListParams::default()).unwrap().items[0]
            .metadata
            .name
            .as_deref(),
        Some("a")
    );
    assert_eq!(api.get("a").unwrap().metadata.resource_version.as_deref(), Some("7"));
    let events: Vec<_> = api.watch(&WatchParams::default().at("7")).unwrap().collect();
    assert!(matches!(&events[..], [Ok(WatchEvent::Added(o))] if o.metadata.name.as_deref() == Some("b")));
    let accepts: Vec<(String, String)> = peer
        .requests()
        .iter()
        .map(|r| (r.target.clone(), r.header("accept").unwrap_or("").to_owned()))
        .collect();
    assert_eq!(
        accepts.iter().map(|(_, a)| a.as_str()).collect::<Vec<_>>(),
        [LIST_ACCEPT, OBJECT_ACCEPT, OBJECT_ACCEPT],
        "{accepts:?}"
    );

    // A create or replace would write an object without its content: refused before any request.
    let sent = peer.requests().len();
    let partial = Metadata::new(ObjectMeta::namespaced("ns", "a"));
    let err = api.create(&PostParams::default(), &partial).unwrap_err();
    assert!(err.to_string().contains("metadata-only object"), "{err}");
    assert!(api.replace("a", &PostParams::default(), &partial).is_err());
    assert_eq!(peer.requests().len(), sent);
    // A whole type asks for JSON, as always.
    Api::<ConfigMap>::namespaced(peer_client(&peer), "ns").get("a").unwrap();
    assert_eq!(
        peer.requests().last().unwrap().header("accept"),
        Some("application/json")
    );
}

#[test]
fn a_metadata_informer_lists_and_watches_partial_metadata() {
    let peer = partial_peer();
    // Over a DeltaFIFO (the other metadata informer here uses the default RealFIFO).
    let options = FactoryOptions::default().fifo(Fifo::Delta).reflector(ReflectorConfig {
        streaming_list: false,
        ..quick_reflector()
    });
    let factory = SharedInformerFactory::new(peer_client(&peer), options);
    let informer = factory.informer::<Metadata>();
    assert_eq!(informer.name(), "configmaps-metadata");
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    eventually("the watched object cached", || informer.lister().get("ns/b").is_some());
    factory.shutdown();
    let requests = peer.requests();
    let list = requests.iter().find(|r| !r.is_watch()).expect("a list");
    let watch = requests.iter().find(|r| r.is_watch()).expect("a watch");
    assert_eq!(list.header("accept"), Some(LIST_ACCEPT));
    assert_eq!(watch.header("accept"), Some(OBJECT_ACCEPT));
}

/// A metadata-only type of our own that keeps the `kind` the server sends: what the server converted to.
#[derive(Serialize, Deserialize)]
struct KindSeen {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
}

impl kube_informer::object::Object for KindSeen {
    type Meta = ObjectMeta;
    const REPRESENTATION: Representation = Representation::Metadata;
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[test]
fn the_embedded_server_converts_and_a_factory_informer_follows_metadata() {
    let server = ApiServer::builder().namespaces(["ns"]).start().unwrap();
    server
        .create(&cm("ns", "a", "secret-value").with("big", "x".repeat(4096)))
        .unwrap();
    let client = server.client().unwrap();

    // What the server sends for the header: PartialObjectMetadata(List), not the objects.
    let raw = Api::<KindSeen>::all_with(client.clone(), &ConfigMap::api_resource());
    let list = raw.list(&ListParams::default()).unwrap();
    assert_eq!(
        (list.kind.as_str(), list.api_version.as_str()),
        ("PartialObjectMetadataList", "meta.k8s.io/v1")
    );
    assert_eq!(list.items[0].kind, "PartialObjectMetadata");
    let rv = list.metadata.resource_version.clone().unwrap();

    let factory = SharedInformerFactory::new(client.clone(), FactoryOptions::default().reflector(quick_reflector()));
    let informer = factory.informer::<Metadata>();
    let (tx, seen) = crossbeam_channel::unbounded::<String>();
    let (t1, t2, t3) = (tx.clone(), tx.clone(), tx);
    informer
        .add_event_handler(
            HandlerFuncs::new()
                .on_add(move |o: &Arc<Metadata>, _| t1.send(format!("add {:?}", o.metadata.name)).unwrap())
                .on_update(move |_, n: &Arc<Metadata>| {
                    t2.send(format!("update {:?}", n.metadata.labels.get("app"))).unwrap()
                })
                .on_delete(move |d: &DeletedObject<Metadata>| {
                    t3.send(format!("delete {:?}", d.object().metadata.name)).unwrap()
                }),
        )
        .unwrap();
    factory.start().unwrap();
    factory.wait_for_cache_sync(WAIT).unwrap();
    let next = || seen.recv_timeout(WAIT).unwrap();
    assert_eq!(next(), "add Some(\"a\")");

    // A label change through the metadata-only API (a merge patch leaves the data alone), then a delete.
    let api = Api::<Metadata>::namespaced(client.clone(), "ns");
    let patch = serde_json::json!({"metadata": {"labels": {"app": "web"}}});
    let patched = api.patch("a", &PatchParams::default(), &Patch::Merge(&patch)).unwrap();
    assert_eq!(patched.metadata.labels.get("app"), Some("web"));
    assert_eq!(next(), "update Some(\"web\")");
    assert_eq!(
        server.get::<ConfigMap>(Some("ns"), "a").unwrap().data.get("v"),
        Some("secret-value")
    );
    api.delete("a", &Default::default()).unwrap();
    assert_eq!(next(), "delete Some(\"a\")");

    // A watch's events are converted too.
    let events: Vec<_> = raw
        .watch(&WatchParams::default().at(&rv).timeout(1))
        .unwrap()
        .take(2)
        .filter_map(Result::ok)
        .map(|e| match e {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o.kind,
            _ => "other".to_owned(),
        })
        .collect();
    assert_eq!(
        events,
        ["PartialObjectMetadata", "PartialObjectMetadata"],
        "the update and the delete"
    );
    factory.shutdown();
}
