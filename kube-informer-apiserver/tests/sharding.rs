//! `shardSelector` (KEP-5866, gate `ShardedListAndWatch`) over real HTTP: LIST with paging, WATCH, streaming lists,
//! `metadata.shardInfo`, errors, and the gate off.

mod common;
#[path = "common/raw_http.rs"]
mod raw_http;

use std::collections::BTreeSet;

use kube_informer::selector::{ShardField, ShardSelector};
use kube_informer_apiserver::ApiServer;
use raw_http::*;
use serde_json::{Value, json};

fn sharded() -> ApiServer {
    ApiServer::builder()
        .sharded_list_and_watch(true)
        .compaction_interval(None)
        .start()
        .unwrap()
}

/// Percent-encodes a query value.
fn enc(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn half(i: u32) -> ShardSelector {
    ShardSelector::split(ShardField::Uid, 2, i).unwrap()
}

fn uid(o: &Value) -> String {
    o["metadata"]["uid"].as_str().unwrap().to_owned()
}

fn names(list: &Value) -> BTreeSet<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Creates `n` ConfigMaps; (name, in shard `sel`) of each.
fn populate(server: &ApiServer, n: usize, sel: &ShardSelector) -> Vec<(String, bool)> {
    (0..n)
        .map(|i| {
            let name = format!("cm-{i:04}");
            let o = make(server, "default", &name, json!({}));
            (name, sel.matches_value(&uid(&o)))
        })
        .collect()
}

#[test]
fn list_answers_only_the_shard_and_says_so_in_shard_info() {
    let server = sharded();
    let all = populate(&server, 200, &half(0));
    let mut union = BTreeSet::new();
    for i in 0..2 {
        let sel = half(i);
        let (code, list) = get(&format!(
            "{}?shardSelector={}",
            cms(&server, "default"),
            enc(&sel.to_string())
        ));
        assert_eq!(code, 200, "{list}");
        assert_eq!(list["metadata"]["shardInfo"], json!({"selector": sel.to_string()}));
        for o in list["items"].as_array().unwrap() {
            assert!(sel.matches_value(&uid(o)), "{o} is outside {sel}");
        }
        let got = names(&list);
        assert!(union.is_disjoint(&got), "an object in both halves");
        union.extend(got);
    }
    assert_eq!(union, all.iter().map(|(n, _)| n.clone()).collect());
    let in_first = all.iter().filter(|(_, in0)| *in0).count();
    assert!(
        in_first > 50 && in_first < 150,
        "FNV-1a of uids spreads: {in_first}/200"
    );
    // Without the parameter: everything, no shardInfo.
    let (_, whole) = get(&cms(&server, "default"));
    assert_eq!(whole["items"].as_array().unwrap().len(), 200);
    assert!(whole["metadata"].get("shardInfo").is_none(), "{}", whole["metadata"]);
    // An empty value is no selector.
    let (_, empty) = get(&format!("{}?shardSelector=", cms(&server, "default")));
    assert_eq!(empty["items"].as_array().unwrap().len(), 200);
    assert!(empty["metadata"].get("shardInfo").is_none());
}

#[test]
fn a_namespace_shard_keeps_a_namespace_together() {
    let server = ApiServer::builder()
        .sharded_list_and_watch(true)
        .namespaces(["a", "b", "c", "d"])
        .start()
        .unwrap();
    for ns in ["a", "b", "c", "d"] {
        for i in 0..3 {
            make(&server, ns, &format!("x{i}"), json!({}));
        }
    }
    let sel = ShardSelector::split(ShardField::Namespace, 2, 0).unwrap();
    let url = format!(
        "{}/api/v1/configmaps?shardSelector={}",
        server.url(),
        enc(&sel.to_string())
    );
    let (code, list) = get(&url);
    assert_eq!(code, 200, "{list}");
    let want: usize = ["a", "b", "c", "d"].iter().filter(|ns| sel.matches_value(ns)).count() * 3;
    let got: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| {
            o["kind"] == "ConfigMap" && ["a", "b", "c", "d"].contains(&o["metadata"]["namespace"].as_str().unwrap())
        })
        .collect();
    assert_eq!(got.len(), want);
    for o in list["items"].as_array().unwrap() {
        assert!(sel.matches_value(o["metadata"]["namespace"].as_str().unwrap()), "{o}");
    }
}

#[test]
fn pages_stay_in_the_shard_and_a_token_is_bound_to_it() {
    let server = sharded();
    let all = populate(&server, 120, &half(1));
    let want: BTreeSet<String> = all.iter().filter(|(_, in1)| *in1).map(|(n, _)| n.clone()).collect();
    let sel = enc(&half(1).to_string());
    let mut seen = BTreeSet::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut url = format!("{}?limit=10&shardSelector={sel}", cms(&server, "default"));
        if let Some(t) = &token {
            url.push_str(&format!("&continue={t}"));
        }
        let (code, page) = get(&url);
        assert_eq!(code, 200, "{page}");
        pages += 1;
        assert_eq!(
            page["items"].as_array().unwrap().len().min(10),
            page["items"].as_array().unwrap().len()
        );
        assert!(
            page["metadata"].get("remainingItemCount").is_none(),
            "a selector: no count"
        );
        assert!(page["metadata"]["shardInfo"]["selector"].is_string());
        for n in names(&page) {
            assert!(seen.insert(n), "a name twice");
        }
        token = page["metadata"]["continue"].as_str().map(str::to_owned);
        if token.is_none() {
            break;
        }
        if pages == 2 {
            // The same token with another shard, or with none: refused.
            let t = token.as_deref().unwrap();
            let other = format!(
                "{}?limit=10&continue={t}&shardSelector={}",
                cms(&server, "default"),
                enc(&half(0).to_string())
            );
            let (code, st) = get(&other);
            assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")), "{st}");
            assert!(
                st["message"].as_str().unwrap().contains("shardSelector differs"),
                "{st}"
            );
            let (code, _) = get(&format!("{}?limit=10&continue={t}", cms(&server, "default")));
            assert_eq!(code, 400);
        }
    }
    assert!(pages > 3);
    assert_eq!(seen, want);
    // A token of an unsharded list is refused with a shard.
    let (_, page) = get(&format!("{}?limit=10", cms(&server, "default")));
    let t = page["metadata"]["continue"].as_str().unwrap();
    let (code, _) = get(&format!(
        "{}?limit=10&continue={t}&shardSelector={sel}",
        cms(&server, "default")
    ));
    assert_eq!(code, 400);
}

#[test]
fn a_bad_selector_is_a_400_with_the_parsers_words() {
    let server = sharded();
    for (sel, want) in [
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            "invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \"0x0000000000000000\"?)",
        ),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            "invalid shard selector: unsupported field path \"object.metadata.name\"; supported: object.metadata.uid, object.metadata.namespace",
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
            "invalid shard selector: shard range start 0x8000000000000000 must be less than end 0x0000000000000000",
        ),
    ] {
        for watch in ["", "&watch=1"] {
            let (code, st) = get(&format!(
                "{}?shardSelector={}{watch}",
                cms(&server, "default"),
                enc(sel)
            ));
            assert_eq!((code, st["reason"].as_str()), (400, Some("BadRequest")), "{st}");
            assert_eq!(st["message"], want);
        }
    }
}

#[test]
fn with_the_gate_off_the_parameter_is_ignored() {
    let server = ApiServer::builder().compaction_interval(None).start().unwrap();
    populate(&server, 20, &half(0));
    let (code, list) = get(&format!(
        "{}?shardSelector={}",
        cms(&server, "default"),
        enc(&half(0).to_string())
    ));
    assert_eq!(code, 200);
    assert_eq!(list["items"].as_array().unwrap().len(), 20);
    assert!(list["metadata"].get("shardInfo").is_none());
    // Even a malformed one, as kube-apiserver ignores a disabled alpha field.
    let (code, _) = get(&format!("{}?shardSelector=nonsense", cms(&server, "default")));
    assert_eq!(code, 200);
    // Turned on at run time, the next request is filtered.
    server.set_sharded_list_and_watch_enabled(true);
    let (_, list) = get(&format!(
        "{}?shardSelector={}",
        cms(&server, "default"),
        enc(&half(0).to_string())
    ));
    assert!(list["metadata"]["shardInfo"].is_object());
    assert!(list["items"].as_array().unwrap().len() < 20);
}

/// Creates ConfigMaps until one lands in `sel`; the names created and whether each is in `sel`.
fn create_until_in_shard(server: &ApiServer, prefix: &str, sel: &ShardSelector) -> Vec<(String, bool)> {
    let mut made = Vec::new();
    for i in 0.. {
        let name = format!("{prefix}-{i}");
        let o = make(server, "default", &name, json!({}));
        let inside = sel.matches_value(&uid(&o));
        made.push((name, inside));
        if inside && made.len() >= 20 {
            return made;
        }
    }
    unreachable!()
}

#[test]
fn watch_sends_only_the_shards_events() {
    let server = sharded();
    let sel = half(0);
    let (_, list) = get(&cms(&server, "default"));
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut w = Raw::watch(
        &server,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv}&shardSelector={}",
            enc(&sel.to_string())
        ),
    );
    let made = create_until_in_shard(&server, "w", &sel);
    // Updates and deletes of every object: only the shard's reach the watcher.
    for (name, _) in &made {
        server
            .patch_json(&cm(), Some("default"), name, &json!({"data": {"v": "1"}}))
            .unwrap();
    }
    for (name, _) in &made {
        server.delete_json(&cm(), Some("default"), name).unwrap();
    }
    let inside: Vec<&String> = made.iter().filter(|(_, i)| *i).map(|(n, _)| n).collect();
    let mut want = Vec::new();
    for kind in ["ADDED", "MODIFIED", "DELETED"] {
        want.extend(inside.iter().map(|n| ev(kind, n)));
    }
    let got: Vec<(String, String)> = (0..want.len()).map(|_| summary(&w.change())).collect();
    // The last event is the shard's last delete; any event of another shard would have come before it.
    assert_eq!(got, want);
}

#[test]
fn a_streaming_list_starts_with_the_shard_only() {
    let server = sharded();
    let sel = half(1);
    let all = populate(&server, 60, &sel);
    let mut w = Raw::watch(
        &server,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector={}",
            enc(&sel.to_string())
        ),
    );
    let want: BTreeSet<String> = all.iter().filter(|(_, i)| *i).map(|(n, _)| n.clone()).collect();
    let mut got = BTreeSet::new();
    loop {
        let e = w.event();
        if e["type"] == "BOOKMARK" {
            assert_eq!(
                e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
                "{e}"
            );
            break;
        }
        assert_eq!(e["type"], "ADDED");
        assert!(
            sel.matches_value(e["object"]["metadata"]["uid"].as_str().unwrap()),
            "{e}"
        );
        got.insert(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    }
    assert_eq!(got, want);
    // Then live events of the shard only.
    let made = create_until_in_shard(&server, "live", &sel);
    let inside: Vec<(String, String)> = made.iter().filter(|(_, i)| *i).map(|(n, _)| ev("ADDED", n)).collect();
    let got: Vec<(String, String)> = (0..inside.len()).map(|_| summary(&w.change())).collect();
    assert_eq!(got, inside);
}

#[test]
fn settings_turn_the_gate_on_and_off() {
    let server = ApiServer::builder().admin_api().start().unwrap();
    let url = format!("{}/kube-informer/admin/settings", server.url());
    let (code, s) = get(&url);
    assert_eq!((code, &s["shardedListAndWatch"]), (200, &json!(false)), "{s}");
    let (code, s) = put(&url, &json!({"shardedListAndWatch": true}));
    assert_eq!((code, &s["shardedListAndWatch"]), (200, &json!(true)), "{s}");
    let (code, _) = put(&url, &json!({"shardedListAndWatch": "yes"}));
    assert_eq!(code, 400);
}
