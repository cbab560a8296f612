//! `metadata.managedFields` as objects carry it: a list of `ManagedFieldsEntry` (`manager`, `operation`,
//! `apiVersion`, `time`, `fieldsType: FieldsV1`, `fieldsV1`, `subresource`), decoded into every manager's fields
//! and encoded back in kube-apiserver's order, as k8s.io/apimachinery's `managedfields` package does.
//!
//! A manager is known by its identifier: the entry's JSON without time and fields — and without the API version
//! for an applier, so that applying in another version is the same manager.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use serde_json::{Map, Value};

use super::fields_v1;
use super::updater::{ManagedFields, VersionedSet};
use kube_informer::object::time::{format_rfc3339, parse_rfc3339};

/// Every manager's fields, and when each last changed something (the entry's `time`, when it has one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Managed {
    pub(crate) fields: ManagedFields,
    pub(crate) times: BTreeMap<String, String>,
}

/// `Apply` or `Update`.
pub(crate) const APPLY: &str = "Apply";
pub(crate) const UPDATE: &str = "Update";

/// The identifier of a manager: `{"manager":…,"operation":…,"apiVersion":…,"subresource":…}` with empty values
/// left out, and no API version for an applier.
pub(crate) fn identifier(manager: &str, operation: &str, api_version: &str, subresource: &str) -> String {
    let api_version = if operation == APPLY { "" } else { api_version };
    let mut out = String::with_capacity(64 + manager.len());
    out.push('{');
    for (k, v) in [
        ("manager", manager),
        ("operation", operation),
        ("apiVersion", api_version),
        ("subresource", subresource),
    ] {
        if !v.is_empty() {
            if out.len() > 1 {
                out.push(',');
            }
            out.push('"');
            out.push_str(k);
            out.push_str("\":");
            push_go_json_string(&mut out, v);
        }
    }
    out.push('}');
    out
}

/// Appends `s` as Go's `encoding/json` writes a string: quoted, with `"`, `\`, control characters, `<`, `>`, `&`
/// and the line and paragraph separators escaped.
fn push_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The parts of an identifier: manager, operation, API version, subresource.
pub(crate) fn parts(identifier: &str) -> (String, String, String, String) {
    let v: Value = serde_json::from_str(identifier).unwrap_or(Value::Null);
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    (
        text("manager"),
        text("operation"),
        text("apiVersion"),
        text("subresource"),
    )
}

/// The current time as `metav1.Time` writes it.
pub(crate) fn now() -> String {
    format_rfc3339(std::time::SystemTime::now())
}

fn unix_seconds(time: Option<&str>) -> i64 {
    time.and_then(parse_rfc3339)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}

/// True when `entries` asks for the managers to be reset: an empty list, or a list of one empty entry.
pub(crate) fn is_reset(entries: &[Value]) -> bool {
    match entries {
        [] => true,
        [only] => only.as_object().is_some_and(|m| {
            m.values().all(|v| match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                _ => false,
            })
        }),
        _ => false,
    }
}

/// Decodes entries, refusing what kube-apiserver refuses (worded as its decoder words it).
pub(crate) fn decode(entries: &[Value]) -> Result<Managed, String> {
    let mut out = Managed::default();
    for (i, e) in entries.iter().enumerate() {
        let Some(m) = e.as_object() else {
            return Err(format!("managed fields entry {i} is not an object"));
        };
        let text = |k: &str| match m.get(k) {
            None | Some(Value::Null) => Ok(""),
            Some(Value::String(s)) => Ok(s.as_str()),
            Some(other) => Err(format!("{k} of managed fields entry {i} is not a string: {other}")),
        };
        let operation = text("operation")?;
        if operation != APPLY && operation != UPDATE {
            return Err("operation must be `Apply` or `Update`".to_owned());
        }
        let api_version = text("apiVersion")?;
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".to_owned());
        }
        match text("fieldsType")? {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => return Err(format!("invalid fieldsType {other:?} in managed fields entry {i}")),
        }
        let set = fields_v1::decode(m.get("fieldsV1").unwrap_or(&Value::Null))
            .map_err(|e| format!("error decoding versioned set from entry {i}: error decoding set: {e}"))?;
        let id = identifier(text("manager")?, operation, api_version, text("subresource")?);
        let time = text("time")?;
        if time.is_empty() {
            out.times.remove(&id);
        } else {
            // A time keeps only its seconds, as `metav1.Time` does.
            let normal = parse_rfc3339(time).map_or_else(|| time.to_owned(), format_rfc3339);
            out.times.insert(id.clone(), normal);
        }
        out.fields.insert(
            id,
            VersionedSet {
                set,
                api_version: api_version.to_owned(),
                applied: operation == APPLY,
            },
        );
    }
    Ok(out)
}

/// Encodes every manager as an entry, in kube-apiserver's order: appliers first, then updaters, each oldest first,
/// then by manager, API version and subresource.
pub(crate) fn encode(managed: &Managed) -> Vec<Value> {
    let mut entries: Vec<(i64, Map<String, Value>)> = managed
        .fields
        .iter()
        .map(|(id, vs)| {
            let (manager, operation, _, subresource) = parts(id);
            let operation = if vs.applied { APPLY.to_owned() } else { operation };
            let mut e = Map::new();
            if !manager.is_empty() {
                e.insert("manager".into(), Value::String(manager));
            }
            if !operation.is_empty() {
                e.insert("operation".into(), Value::String(operation));
            }
            e.insert("apiVersion".into(), Value::String(vs.api_version.clone()));
            let time = managed.times.get(id);
            if let Some(t) = time {
                e.insert("time".into(), Value::String(t.clone()));
            }
            e.insert("fieldsType".into(), Value::String("FieldsV1".into()));
            e.insert("fieldsV1".into(), fields_v1::encode(&vs.set));
            if !subresource.is_empty() {
                e.insert("subresource".into(), Value::String(subresource));
            }
            (unix_seconds(time.map(String::as_str)), e)
        })
        .collect();
    let text = |e: &Map<String, Value>, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    entries.sort_by(|(ta, a), (tb, b)| {
        text(a, "operation")
            .cmp(&text(b, "operation"))
            .then(ta.cmp(tb))
            .then_with(|| text(a, "manager").cmp(&text(b, "manager")))
            .then_with(|| text(a, "apiVersion").cmp(&text(b, "apiVersion")))
            .then_with(|| text(a, "subresource").cmp(&text(b, "subresource")))
    });
    entries.into_iter().map(|(_, e)| Value::Object(e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identifiers_leave_out_an_appliers_version() {
        assert_eq!(
            identifier("kubectl", UPDATE, "apps/v1", ""),
            r#"{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1"}"#
        );
        assert_eq!(
            identifier("ctl", APPLY, "apps/v1", "status"),
            r#"{"manager":"ctl","operation":"Apply","subresource":"status"}"#
        );
        assert_eq!(parts(&identifier("m", UPDATE, "v1", "scale")).3, "scale");
    }

    // Cases of apimachinery's managedfields_test.go: decoding refuses bad entries; encoding sorts appliers first,
    // then by time, manager, version and subresource.
    #[test]
    fn entries_round_trip_in_kube_apiservers_order() {
        let entries = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2001-02-03T04:05:06Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2001-02-03T04:05:06Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "z", "operation": "Update", "apiVersion": "v1", "time": "2001-02-03T04:05:05Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:z": {}}}},
            {"manager": "c", "operation": "Apply", "apiVersion": "v1", "time": "2001-02-03T04:05:07.5Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:c": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "subresource": "status", "time": "2001-02-03T04:05:06Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}},
        ]);
        let m = decode(entries.as_array().unwrap()).unwrap();
        let order: Vec<String> = encode(&m)
            .iter()
            .map(|e| {
                format!(
                    "{}/{}",
                    e["manager"].as_str().unwrap(),
                    e.get("subresource").and_then(Value::as_str).unwrap_or("")
                )
            })
            .collect();
        assert_eq!(order, ["c/", "z/", "a/", "a/status", "b/"]);
        assert_eq!(
            encode(&m)[0]["time"],
            "2001-02-03T04:05:07Z",
            "times keep whole seconds"
        );
        for (bad, why) in [
            (
                json!({"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}),
                "operation must be",
            ),
            (
                json!({"operation": "Update", "fieldsType": "FieldsV1"}),
                "apiVersion must not be empty",
            ),
            (json!({"operation": "Update", "apiVersion": "v1"}), "missing fieldsType"),
            (
                json!({"operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}),
                "invalid fieldsType",
            ),
            (
                json!({"operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": 1}}),
                "error decoding",
            ),
        ] {
            let e = decode(&[bad]).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        assert!(is_reset(&[]) && is_reset(&[json!({})]) && is_reset(&[json!({"manager": ""})]));
        assert!(!is_reset(&[json!({"manager": "m"})]) && !is_reset(&[json!({}), json!({})]));
    }
}
