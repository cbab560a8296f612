//! The embedded API server over real HTTP: storage semantics, the list and watch protocol, and writes. Auth,
//! discovery, faults, restart and shutdown are in `server_faults.rs`.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use kube_informer::object::core::ConfigMap;
use kube_informer::object::{ApiResource, ObjectMeta};
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

// ----- LIST -----

#[test]
fn paging_visits_each_object_once_from_a_consistent_snapshot() {
    let server = ApiServer::builder().compaction_interval(None).start().unwrap();
    let name = |i: usize| format!("cm-{i:05}");
    for i in 0..10_000 {
        make(&server, "default", &name(i), json!({}));
    }
    let mut seen = BTreeSet::new();
    let mut token: Option<String> = None;
    let mut snapshot_rv = None;
    loop {
        let mut url = format!("{}?limit=500", cms(&server, "default"));
        if let Some(t) = &token {
            url.push_str(&format!("&continue={t}"));
        }
        let (code, page) = get(&url);
        assert_eq!(code, 200, "{page}");
        let items = page["items"].as_array().unwrap();
        assert_eq!(items.len(), 500);
        for it in items {
            assert!(
                seen.insert(it["metadata"]["name"].as_str().unwrap().to_owned()),
                "seen twice: {it}"
            );
            assert_eq!(it["data"]["v"], "0", "a later write leaked into the snapshot");
        }
        assert_eq!(
            *snapshot_rv.get_or_insert(page["metadata"]["resourceVersion"].clone()),
            page["metadata"]["resourceVersion"]
        );
        token = page["metadata"]["continue"].as_str().map(str::to_owned);
        if token.is_none() {
            assert!(page["metadata"].get("remainingItemCount").is_none());
            break;
        }
        assert_eq!(page["metadata"]["remainingItemCount"], 10_000 - seen.len());
        // Writes between pages: modify and delete objects not listed yet, add new ones after them.
        let n = seen.len();
        server
            .patch_json(&cm(), Some("default"), &name(n + 3), &json!({"data": {"v": "1"}}))
            .unwrap();
        server.delete_json(&cm(), Some("default"), &name(n + 4)).unwrap();
        make(&server, "default", &format!("zz-{n}"), json!({}));
    }
    assert_eq!(seen.len(), 10_000);
    assert!(seen.iter().all(|n| n.starts_with("cm-")));
}

#[test]
fn continue_tokens_expire_after_compaction() {
    let server = ApiServer::start().unwrap();
    for i in 0..10 {
        make(&server, "default", &format!("c{i}"), json!({}));
    }
    let (_, page) = get(&format!("{}?limit=4", cms(&server, "default")));
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    make(&server, "default", "later", json!({}));
    server.compact_to_latest();
    let (code, st) = get(&format!("{}?limit=4&continue={token}", cms(&server, "default")));
    assert_eq!((code, st["reason"].as_str()), (410, Some("Expired")), "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided continue parameter is too old")
    );
    // The token handed back continues at the latest revision (an inconsistent list).
    let inconsistent = st["metadata"]["continue"].as_str().unwrap();
    let (code, rest) = get(&format!(
        "{}?limit=100&continue={inconsistent}",
        cms(&server, "default")
    ));
    assert_eq!(code, 200);
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c4", "c5", "c6", "c7", "c8", "c9", "later"]);
    let (code, _) = get(&format!("{}?continue=bm90LWEtdG9rZW4", cms(&server, "default")));
    assert_eq!(code, 400);
    let (code, _) = get(&format!(
        "{}?continue={token}&resourceVersion=5",
        cms(&server, "default")
    ));
    assert_eq!(code, 400, "resourceVersion with continue");
}

#[test]
fn resource_version_semantics_of_list_and_get() {
    let server = ApiServer::builder()
        .too_large_wait(Duration::from_millis(20))
        .start()
        .unwrap();
    let a = make(&server, "default", "a", json!({}));
    let rv1 = rv_of(&a);
    for n in ["b", "c", "d"] {
        make(&server, "default", n, json!({}));
    }
    let url = cms(&server, "default");
    let count = |v: &Value| v["items"].as_array().unwrap().len();
    // "0" = any: served whole, ignoring limit.
    let (_, all) = get(&format!("{url}?resourceVersion=0&limit=1"));
    assert_eq!(count(&all), 4);
    assert!(all["metadata"].get("continue").is_none());
    // Exact reads the past; a resourceVersion with a limit and no match is Exact too.
    for q in [
        format!("resourceVersion={rv1}&resourceVersionMatch=Exact"),
        format!("resourceVersion={rv1}&limit=10"),
    ] {
        let (code, old) = get(&format!("{url}?{q}"));
        assert_eq!((code, count(&old)), (200, 1), "{q}");
        assert_eq!(old["metadata"]["resourceVersion"], rv1.to_string());
    }
    // NotOlderThan: the latest.
    let (_, latest) = get(&format!(
        "{url}?resourceVersion={rv1}&resourceVersionMatch=NotOlderThan"
    ));
    assert_eq!(count(&latest), 4);
    assert_eq!(latest["metadata"]["resourceVersion"], server.revision().to_string());
    // Ahead of the store: 504 Timeout with the ResourceVersionTooLarge cause, for LIST, GET and a streaming list.
    let ahead = server.revision() + 100;
    for path in [
        format!("{url}?resourceVersion={ahead}"),
        format!("{url}/a?resourceVersion={ahead}"),
        format!("{url}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={ahead}"),
    ] {
        let (code, st) = get(&path);
        assert_eq!((code, st["reason"].as_str()), (504, Some("Timeout")), "{path}: {st}");
        assert_eq!(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
        assert!(
            st["message"]
                .as_str()
                .unwrap()
                .starts_with("Timeout: Too large resource version")
        );
    }
    // Compacted: 410.
    server.compact_to_latest();
    let (code, st) = get(&format!("{url}?resourceVersion={rv1}&resourceVersionMatch=Exact"));
    assert_eq!((code, st["reason"].as_str()), (410, Some("Expired")));
    // Invalid combinations are 422, as apimachinery validates them.
    for q in [
        "resourceVersionMatch=Exact",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "sendInitialEvents=true",
    ] {
        let (code, st) = get(&format!("{url}?{q}"));
        assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")), "{q}");
    }
    assert_eq!(get(&format!("{url}?resourceVersion=abc")).0, 400);
}

#[test]
fn selectors_filter_lists() {
    let server = ApiServer::builder().namespaces(["ns1", "ns2"]).start().unwrap();
    make(&server, "ns1", "web-1", json!({"app": "web", "tier": "front"}));
    make(&server, "ns1", "web-2", json!({"app": "web", "tier": "back"}));
    make(&server, "ns2", "db-1", json!({"app": "db"}));
    let names = |q: &str| -> Vec<String> {
        let (code, v) = get(&format!("{}/api/v1/configmaps?{q}", server.url()));
        assert_eq!(code, 200, "{q}: {v}");
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("labelSelector=app%3Dweb"), ["web-1", "web-2"]);
    assert_eq!(
        names("labelSelector=app%20in%20(web,db),tier!%3Dback"),
        ["web-1", "db-1"]
    );
    assert_eq!(names("labelSelector=!tier"), ["db-1"]);
    assert_eq!(names("fieldSelector=metadata.name%3Dweb-2"), ["web-2"]);
    assert_eq!(names("fieldSelector=metadata.namespace!%3Dns1"), ["db-1"]);
    assert_eq!(names("labelSelector=app%3Dweb&limit=1").len(), 1);
    let (code, st) = get(&format!("{}/api/v1/configmaps?fieldSelector=data.v%3D0", server.url()));
    assert_eq!(code, 400, "{st}");
    assert_eq!(
        get(&format!("{}/api/v1/configmaps?labelSelector=a%20in%20(", server.url())).0,
        400
    );
    // A resource's own selectable fields.
    let pods = format!("{}/api/v1/namespaces/default/pods", server.url());
    for (n, node) in [("p1", "node-a"), ("p2", "node-b")] {
        assert_eq!(
            post(&pods, &json!({"metadata": {"name": n}, "spec": {"nodeName": node}})).0,
            201
        );
    }
    let (_, v) = get(&format!("{pods}?fieldSelector=spec.nodeName%3Dnode-b"));
    assert_eq!(v["items"][0]["metadata"]["name"], "p2");
    assert_eq!(v["items"].as_array().unwrap().len(), 1);
}

// ----- WATCH -----

#[test]
fn watch_replays_history_and_answers_410_once_it_is_gone() {
    let server = ApiServer::builder().history_size(5).start().unwrap();
    let start = rv_of(&make(&server, "default", "x", json!({})));
    for i in 0..10 {
        server
            .patch_json(&cm(), Some("default"), "x", &json!({"data": {"i": i.to_string()}}))
            .unwrap();
    }
    let path = "/api/v1/namespaces/default/configmaps?watch=1";
    let mut w = Raw::watch(&server, &format!("{path}&resourceVersion={start}"));
    let e = w.event();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(
        (e["object"]["code"].as_u64(), e["object"]["reason"].as_str()),
        (Some(410), Some("Expired"))
    );
    assert!(
        e["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("too old resource version: {start} ("))
    );
    assert!(matches!(w.next(), Next::Clean));
    // From three events back: exactly those three, then live ones.
    let from = server.revision() - 3;
    let mut w = Raw::watch(&server, &format!("{path}&resourceVersion={from}"));
    for want in from + 1..=from + 3 {
        let e = w.event();
        assert_eq!((e["type"].as_str(), rv_of(&e["object"])), (Some("MODIFIED"), want));
    }
    server.delete_json(&cm(), Some("default"), "x").unwrap();
    let e = w.event();
    assert_eq!(summary(&e), ev("DELETED", "x"));
    assert_eq!(
        rv_of(&e["object"]),
        server.revision(),
        "a DELETED event carries the deletion's resourceVersion"
    );
}

#[test]
fn watch_without_resource_version_starts_with_synthetic_added() {
    let server = ApiServer::builder().namespace("other").start().unwrap();
    for n in ["b", "a"] {
        make(&server, "default", n, json!({}));
    }
    make(&server, "other", "c", json!({}));
    for q in ["watch=true", "watch=1&resourceVersion=0"] {
        let mut w = Raw::watch(&server, &format!("/api/v1/namespaces/default/configmaps?{q}"));
        assert_eq!(
            [summary(&w.event()), summary(&w.event())],
            [ev("ADDED", "a"), ev("ADDED", "b")]
        );
        assert!(server.wait_for_watchers("configmaps", 1, WAIT));
        make(&server, "default", "d", json!({}));
        make(&server, "other", "skipped", json!({}));
        server.delete_json(&cm(), Some("default"), "a").unwrap();
        assert_eq!(summary(&w.event()), ev("ADDED", "d"));
        assert_eq!(summary(&w.event()), ev("DELETED", "a"));
        for n in ["d", "skipped"] {
            server
                .delete_json(&cm(), Some(if n == "d" { "default" } else { "other" }), n)
                .unwrap();
        }
        make(&server, "default", "a", json!({}));
        drop(w);
        eventually("the watcher to go", || server.watchers("configmaps") == 0);
    }
}

#[test]
fn watch_selectors_turn_transitions_into_added_and_deleted() {
    let server = ApiServer::start().unwrap();
    let rv = server.revision();
    let mut w = Raw::watch(
        &server,
        &format!("/api/v1/configmaps?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb"),
    );
    make(&server, "default", "web", json!({"app": "web"}));
    make(&server, "default", "db", json!({"app": "db"}));
    let relabel = |name: &str, app: &str| {
        server
            .patch_json(
                &cm(),
                Some("default"),
                name,
                &json!({"metadata": {"labels": {"app": app}}}),
            )
            .unwrap()
    };
    let left = relabel("web", "api");
    relabel("db", "web");
    assert_eq!(summary(&w.event()), ev("ADDED", "web"));
    let e = w.event();
    assert_eq!(summary(&e), ev("DELETED", "web"));
    assert_eq!(
        e["object"]["metadata"]["labels"]["app"], "web",
        "the state the watcher last matched"
    );
    assert_eq!(
        rv_of(&e["object"]),
        rv_of(&left),
        "at the resourceVersion of the change"
    );
    assert_eq!(summary(&w.event()), ev("ADDED", "db"));
    for path in [
        format!("/api/v1/watch/namespaces/default/configmaps/db?resourceVersion={rv}"),
        format!("/api/v1/namespaces/default/configmaps/db?watch=true&resourceVersion={rv}"),
    ] {
        let mut named = Raw::watch(&server, &path);
        assert_eq!(summary(&named.event()), ev("ADDED", "db"));
        assert_eq!(summary(&named.event()), ev("MODIFIED", "db"));
    }
}

#[test]
fn bookmarks_arrive_and_are_never_ahead_of_unsent_events() {
    let server = ApiServer::builder()
        .bookmark_interval(Duration::from_millis(10))
        .start()
        .unwrap();
    let start = rv_of(&make(&server, "default", "x", json!({})));
    for i in 0..3000 {
        server
            .patch_json(&cm(), Some("default"), "x", &json!({"data": {"i": i.to_string()}}))
            .unwrap();
    }
    let last = server.revision();
    server.set_bookmark_interval(Duration::ZERO);
    let mut w = Raw::watch(
        &server,
        &format!("/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion={start}"),
    );
    let (mut bookmark, mut bookmarks, mut seen) = (0, 0, start);
    while seen < last {
        let e = w.event();
        let rv = rv_of(&e["object"]);
        if e["type"] == "BOOKMARK" {
            assert_eq!(
                (e["object"]["kind"].as_str(), e["object"]["apiVersion"].as_str()),
                (Some("ConfigMap"), Some("v1"))
            );
            assert!(rv >= bookmark && rv >= seen, "bookmarks never go back");
            bookmark = rv;
            bookmarks += 1;
        } else {
            assert!(rv > bookmark, "event {rv} came after a bookmark at {bookmark}");
            assert_eq!(rv, seen + 1);
            seen = rv;
        }
    }
    assert!(bookmarks > 0);
    drop(w);
    // An idle watcher's bookmark carries the store's revision, whatever resource moved it.
    server.set_bookmark_interval(Duration::from_millis(10));
    let mut w = Raw::watch(
        &server,
        &format!("/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion={last}"),
    );
    server
        .create_json(
            &ApiResource::new("", "v1", "Secret", "secrets", true),
            Some("default"),
            json!({"metadata": {"name": "s"}}),
        )
        .unwrap();
    let target = server.revision();
    loop {
        let e = w.event();
        assert_eq!(e["type"], "BOOKMARK");
        if rv_of(&e["object"]) == target {
            break;
        }
    }
}

#[test]
fn streaming_list_ends_initial_events_with_an_annotated_bookmark_unless_refused() {
    let server = ApiServer::start().unwrap();
    for n in ["a", "b", "c"] {
        make(&server, "default", n, json!({}));
    }
    let path = "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut w = Raw::watch(&server, path);
    for n in ["a", "b", "c"] {
        assert_eq!(summary(&w.event()), ev("ADDED", n));
    }
    let end = w.event();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(rv_of(&end["object"]), server.revision());
    make(&server, "default", "d", json!({}));
    assert_eq!(summary(&w.change()), ev("ADDED", "d"));

    server.set_watch_list_enabled(false);
    let mut refused = Raw::request(server.addr(), "GET", path);
    assert_eq!(refused.code, 422);
    let st = refused.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    assert_eq!(
        (st["details"]["group"].as_str(), st["details"]["kind"].as_str()),
        (Some("meta.k8s.io"), Some("ListOptions"))
    );
    assert_eq!(st["details"]["causes"][0]["field"], "sendInitialEvents");
}

#[test]
fn watches_end_cleanly_at_their_timeout() {
    let server = ApiServer::start().unwrap();
    let mut w = Raw::watch(
        &server,
        &format!(
            "/api/v1/configmaps?watch=1&resourceVersion={}&timeoutSeconds=1",
            server.revision()
        ),
    );
    assert!(matches!(w.next(), Next::Clean));
    // The connection serves the next request.
    let mut s = w.r.into_inner();
    write!(s, "GET /version HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
}

#[test]
fn a_watch_takes_any_timeout_a_client_sends() {
    // timeoutSeconds is a client's number: 2⁶³ − 1 seconds past now is past the end of `Instant`, and adding it
    // unchecked panicked the connection's thread before the first event.
    let server = ApiServer::start().unwrap();
    make(&server, "default", "a", json!({}));
    let mut w = Raw::watch(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=9223372036854775807",
    );
    assert_eq!(summary(&w.event()), ev("ADDED", "a"));
    make(&server, "default", "b", json!({}));
    assert_eq!(summary(&w.event()), ev("ADDED", "b"));
}

// ----- writes -----

#[test]
fn creates_validate_names_and_conflict() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    let (code, a) = post(&url, &json!({"metadata": {"name": "a"}, "data": {"k": "v"}}));
    assert_eq!(code, 201);
    assert_eq!(
        (a["kind"].as_str(), a["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    assert!(
        a["metadata"].get("generation").is_none(),
        "config maps count no generations"
    );
    assert!(a["metadata"]["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    let (code, st) = post(&url, &json!({"metadata": {"name": "a"}}));
    assert_eq!((code, st["reason"].as_str()), (409, Some("AlreadyExists")));
    assert_eq!(st["message"], "configmaps \"a\" already exists");
    let (code, st) = post(&url, &json!({"metadata": {"name": "Bad_Name"}}));
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.name");
    assert_eq!(post(&url, &json!({"metadata": {}})).0, 422);
    let (code, g) = post(&url, &json!({"metadata": {"generateName": "gen-"}}));
    assert_eq!(code, 201);
    let name = g["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    // PUT with a stale resourceVersion conflicts; with the current one it updates.
    let mut stale = a.clone();
    stale["data"]["k"] = json!("w");
    let (code, updated) = put(&format!("{url}/a"), &stale);
    assert_eq!(code, 200);
    assert_eq!(updated["data"]["k"], "w");
    assert!(updated["metadata"].get("generation").is_none());
    let (code, st) = put(&format!("{url}/a"), &stale);
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")));
    assert_eq!(put(&format!("{url}/b"), &json!({"metadata": {"name": "b"}})).0, 404);
    assert_eq!(put(&format!("{url}/a"), &json!({"metadata": {"name": "z"}})).0, 400);
    assert_eq!(send("POST", &url, "application/json", "{not json").0, 400);
    assert_eq!(send("POST", &url, "text/plain", "x").0, 415);
    assert_eq!(send("POST", &url, "application/vnd.kubernetes.protobuf", "x").0, 400);
    assert_eq!(
        post(
            &format!("{}/api/v1/configmaps", server.url()),
            &json!({"metadata": {"name": "x"}})
        )
        .0,
        405
    );
}

#[test]
fn finalizers_hold_a_deleted_object_until_emptied() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    let mut w = Raw::watch(
        &server,
        &format!("/api/v1/configmaps?watch=1&resourceVersion={}", server.revision()),
    );
    let (_, obj) = post(
        &url,
        &json!({"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}),
    );
    let (code, marked) = send("DELETE", &format!("{url}/f"), "", "");
    assert_eq!(code, 200);
    assert!(marked["metadata"]["deletionTimestamp"].is_string(), "{marked}");
    assert!(marked["metadata"].get("generation").is_none(), "no generation to bump");
    assert_eq!(get(&format!("{url}/f")).0, 200);
    assert_eq!(summary(&w.event()), ev("ADDED", "f"));
    let e = w.event();
    assert_eq!(summary(&e), ev("MODIFIED", "f"));
    assert!(e["object"]["metadata"]["deletionTimestamp"].is_string());
    let mut release = marked.clone();
    release["metadata"]["finalizers"] = json!([]);
    assert_eq!(put(&format!("{url}/f"), &release).0, 200);
    let e = w.event();
    assert_eq!(summary(&e), ev("DELETED", "f"));
    assert_eq!(e["object"]["metadata"]["uid"], obj["metadata"]["uid"]);
    assert_eq!(get(&format!("{url}/f")).0, 404);
}

#[test]
fn status_subresource_writes_only_status() {
    let server = ApiServer::start().unwrap();
    let url = format!("{}/api/v1/namespaces/default/pods", server.url());
    let (_, pod) = post(
        &url,
        &json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}),
    );
    assert_eq!(
        pod["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"}),
        "create resets the status"
    );
    let mut body = pod.clone();
    body["status"] = json!({"phase": "Running"});
    body["spec"]["nodeName"] = json!("n2");
    let (code, after) = put(&format!("{url}/p/status"), &body);
    assert_eq!(code, 200);
    assert_eq!(
        (after["status"]["phase"].as_str(), after["spec"]["nodeName"].as_str()),
        (Some("Running"), Some("n1"))
    );
    assert_eq!(after["metadata"]["generation"], 1);
    let mut main = after.clone();
    main["status"] = json!({"phase": "Failed"});
    main["spec"]["nodeName"] = json!("n3");
    let (_, after) = put(&format!("{url}/p"), &main);
    assert_eq!(
        (after["status"]["phase"].as_str(), after["spec"]["nodeName"].as_str()),
        (Some("Running"), Some("n3"))
    );
    let (code, patched) = send(
        "PATCH",
        &format!("{url}/p/status"),
        "application/merge-patch+json",
        r#"{"status":{"phase":"Succeeded"}}"#,
    );
    assert_eq!((code, patched["status"]["phase"].as_str()), (200, Some("Succeeded")));
    assert_eq!(get(&format!("{url}/p/status")).1["status"]["phase"], "Succeeded");
    assert_eq!(
        put(&format!("{}/p/status", cms(&server, "default")), &body).0,
        404,
        "configmaps have no status"
    );
}

#[test]
fn patches_merge_json_and_apply() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    post(&url, &json!({"metadata": {"name": "p"}, "data": {"a": "1", "b": "2"}}));
    let patch = |ct: &str, body: &str| send("PATCH", &format!("{url}/p"), ct, body);
    let (code, v) = patch("application/merge-patch+json", r#"{"data":{"a":null,"c":"3"}}"#);
    assert_eq!((code, v["data"].clone()), (200, json!({"b": "2", "c": "3"})));
    let (code, v) = patch(
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/data/b","value":"x"},{"op":"add","path":"/metadata/labels","value":{"l":"1"}}]"#,
    );
    assert_eq!(
        (code, v["data"]["b"].as_str(), v["metadata"]["labels"]["l"].as_str()),
        (200, Some("x"), Some("1"))
    );
    let (code, v) = patch("application/strategic-merge-patch+json", r#"{"data":{"d":"4"}}"#);
    assert_eq!((code, v["data"]["d"].as_str()), (200, Some("4")));
    assert_eq!(
        patch(
            "application/json-patch+json",
            r#"[{"op":"test","path":"/data/b","value":"nope"}]"#
        )
        .0,
        422
    );
    assert_eq!(patch("application/json-patch+json", r#"{"op":"add"}"#).0, 400);
    assert_eq!(patch("application/json-patch+json", "[").0, 400);
    assert_eq!(patch("text/plain", "{}").0, 415);
    let (code, st) = patch(
        "application/merge-patch+json",
        r#"{"metadata":{"resourceVersion":"1"},"data":{"e":"5"}}"#,
    );
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")));
    assert_eq!(
        send("PATCH", &format!("{url}/nope"), "application/merge-patch+json", "{}").0,
        404
    );
    // Server-side apply may create; it needs a field manager and the resource's apiVersion and kind (kube-apiserver
    // checks the whole type first; tests/server_side_apply.rs covers the rest).
    let apply = |q: &str| {
        send(
            "PATCH",
            &format!("{url}/applied{q}"),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: v\n",
        )
    };
    assert_eq!(apply("").0, 422);
    let (code, st) = send(
        "PATCH",
        &format!("{url}/applied?fieldManager=test"),
        "application/apply-patch+yaml",
        "data:\n  k: v\n",
    );
    assert_eq!(code, 400);
    assert_eq!(st["message"], "invalid object type: /, Kind=");
    let (code, v) = apply("?fieldManager=test");
    assert_eq!((code, v["data"]["k"].as_str()), (201, Some("v")));
    assert_eq!(apply("?fieldManager=test").0, 200);
}

#[test]
fn deletes_honour_preconditions_and_dry_run() {
    let server = ApiServer::start().unwrap();
    let url = cms(&server, "default");
    let (_, obj) = post(&url, &json!({"metadata": {"name": "d"}}));
    let del = |body: &str, q: &str| send("DELETE", &format!("{url}/d{q}"), "application/json", body);
    let (code, st) = del(r#"{"preconditions":{"uid":"not-it"}}"#, "");
    assert_eq!((code, st["reason"].as_str()), (409, Some("Conflict")));
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("Precondition failed: UID in precondition: not-it")
    );
    let (code, _) = del(r#"{"preconditions":{"resourceVersion":"1"}}"#, "");
    assert_eq!(code, 409);
    assert_eq!(del("", "?dryRun=All").0, 200);
    assert_eq!(get(&format!("{url}/d")).0, 200, "a dry run deletes nothing");
    assert_eq!(del(r#"{"propagationPolicy":"Sideways"}"#, "").0, 422);
    let body = json!({"preconditions": {"uid": obj["metadata"]["uid"], "resourceVersion": obj["metadata"]["resourceVersion"]}, "propagationPolicy": "Background"});
    let (code, st) = del(&body.to_string(), "");
    assert_eq!(
        (code, st["kind"].as_str(), st["status"].as_str()),
        (200, Some("Status"), Some("Success"))
    );
    assert_eq!(
        (st["details"]["name"].as_str(), st["details"]["kind"].as_str()),
        (Some("d"), Some("configmaps"))
    );
    assert_eq!(st["details"]["uid"], obj["metadata"]["uid"]);
    let (code, st) = del("", "");
    assert_eq!(
        (code, st["message"].as_str()),
        (404, Some("configmaps \"d\" not found"))
    );
    // A collection delete takes selectors.
    for (n, app) in [("x", "a"), ("y", "a"), ("z", "b")] {
        make(&server, "default", n, json!({"app": app}));
    }
    let (code, gone) = send("DELETE", &format!("{url}?labelSelector=app%3Da"), "", "");
    assert_eq!((code, gone["items"].as_array().map(Vec::len)), (200, Some(2)));
    assert_eq!(server.list_json(&cm(), Some("default")).unwrap().len(), 1);
}

#[test]
fn typed_direct_calls_follow_the_same_rules() {
    let server = ApiServer::start().unwrap();
    let created = server
        .create(&ConfigMap::new(ObjectMeta::namespaced("default", "t")).with("k", "v"))
        .unwrap();
    let mut changed = created.clone();
    changed.data.insert("k".into(), "w".into());
    let replaced = server.replace(&changed).unwrap();
    assert_ne!(replaced.metadata.resource_version, created.metadata.resource_version);
    assert!(server.replace(&changed).unwrap_err().is_conflict());
    assert!(
        server.create(&created).unwrap_err().code() == Some(500),
        "a resourceVersion on create is refused"
    );
    let mut fresh = created.clone();
    fresh.metadata.resource_version = None;
    assert!(server.create(&fresh).unwrap_err().is_already_exists());
    assert_eq!(server.list::<ConfigMap>(None).unwrap(), vec![replaced.clone()]);
    assert_eq!(server.get::<ConfigMap>(Some("default"), "t").unwrap(), replaced);
    assert!(server.delete::<ConfigMap>(Some("default"), "t").unwrap());
    assert!(
        server
            .get::<ConfigMap>(Some("default"), "t")
            .unwrap_err()
            .is_not_found()
    );
}

/// A caller's `Duration::MAX` is a wait without end, not an `Instant` overflow (these panicked).
#[test]
fn waits_take_any_duration() {
    let server = ApiServer::start().unwrap();
    assert!(server.wait_for_watchers("configmaps", 0, Duration::MAX));
    let mark = server.requests().mark();
    assert!(server.requests().wait_for(mark, Duration::MAX, |_| true));
}
