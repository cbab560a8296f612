//! Server-side conversions of an answer, as the client's `Accept` header asks: a `Table` (`as=Table;v=v1;
//! g=meta.k8s.io`, what `kubectl get` asks for, on GET, LIST, writes and every WATCH event) made from the resource's
//! [`PrinterColumn`]s, or `PartialObjectMetadata(List)` (metadata-only clients: client-go's
//! metadata informers, controller-runtime's `OnlyMetadata`).
//!
//! Negotiation follows kube-apiserver's: `Accept` clauses by quality, each matched against the media types it
//! serves (JSON, YAML, protobuf — this server writes JSON for all); a clause converting to anything but a
//! `meta.k8s.io/v1` or `v1beta1` Table (JSON or YAML only) or partial metadata is passed over; none acceptable is a
//! 406. `includeObject` (`Metadata`, the default, `Object` or `None`) says what each row carries; it is checked
//! when the answer is converted, as kube-apiserver does (so a write with a bad value still happens).

use std::time::SystemTime;

use serde_json::{Map, Value, json};

use crate::api::errors::{self, Failure, FieldError};
use crate::registry::printer_column::PrinterColumn;
use crate::registry::reply::Reply;
use crate::registry::resource::ResourceSpec;

/// The media types the server accepts in `Accept` (it writes JSON for all three).
const SERVED: [(&str, &str); 3] = [
    ("application", "json"),
    ("application", "yaml"),
    ("application", "vnd.kubernetes.protobuf"),
];

/// What the client asked the answer to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// The object or list itself.
    None,
    /// A `Table` of this group version (`meta.k8s.io/v1` or `meta.k8s.io/v1beta1`).
    Table(&'static str),
    /// `PartialObjectMetadata` (`list` false) or `PartialObjectMetadataList` of this group version.
    Partial { group_version: &'static str, list: bool },
}

/// One clause of an `Accept` header.
struct Clause<'a> {
    ty: &'a str,
    sub: &'a str,
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

impl Clause<'_> {
    fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// The clauses of an `Accept` header, best first (by quality, then the more specific), as goautoneg orders them.
fn clauses(header: &str) -> Vec<Clause<'_>> {
    let mut out: Vec<Clause<'_>> = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.split(';');
        let range = pieces.next().unwrap_or("").trim();
        let (ty, sub) = match range.split_once('/') {
            Some((t, s)) => (t.trim(), s.trim()),
            None if range == "*" => ("*", "*"),
            None => continue,
        };
        let mut clause = Clause {
            ty,
            sub,
            q: 1.0,
            params: Vec::new(),
        };
        for p in pieces {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let (k, v) = (k.trim(), v.trim());
            if k == "q" {
                clause.q = v.parse().unwrap_or(0.0);
            } else {
                clause.params.push((k, v));
            }
        }
        out.push(clause);
    }
    let rank = |c: &Clause<'_>| (u8::from(c.ty != "*"), u8::from(c.sub != "*"));
    out.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| rank(b).cmp(&rank(a)))
    });
    out
}

/// The group version a conversion names, if it is one the server converts to.
fn meta_group_version(g: Option<&str>, v: Option<&str>) -> Option<&'static str> {
    match (g, v) {
        (Some("meta.k8s.io"), Some("v1")) => Some("meta.k8s.io/v1"),
        (Some("meta.k8s.io"), Some("v1beta1")) => Some("meta.k8s.io/v1beta1"),
        _ => None,
    }
}

/// The conversion an `Accept` header asks for; 406 when it accepts nothing the server serves.
pub(crate) fn negotiate(accept: Option<&str>) -> Result<Conversion, Failure> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(Conversion::None);
    }
    for c in clauses(header) {
        for (ty, sub) in SERVED {
            if !((c.ty == ty && (c.sub == sub || c.sub == "*")) || (c.ty == "*" && c.sub == "*")) {
                continue;
            }
            let (kind, g, v) = (c.param("as"), c.param("g"), c.param("v"));
            if kind.is_none() && g.is_none() && v.is_none() {
                return Ok(Conversion::None);
            }
            let Some(gv) = meta_group_version(g, v) else {
                continue;
            };
            match kind {
                // A Table is written as JSON or YAML only.
                Some("Table") if sub == "json" || sub == "yaml" => return Ok(Conversion::Table(gv)),
                Some("PartialObjectMetadata") => {
                    return Ok(Conversion::Partial {
                        group_version: gv,
                        list: false,
                    });
                }
                Some("PartialObjectMetadataList") => {
                    return Ok(Conversion::Partial {
                        group_version: gv,
                        list: true,
                    });
                }
                _ => {}
            }
        }
    }
    Err(not_acceptable(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ))
}

fn not_acceptable(message: impl Into<String>) -> Failure {
    Box::new(kube_informer::object::Status::failure(406, "NotAcceptable", message))
}

/// What each row of a Table carries (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Include {
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
    /// Nothing.
    None,
}

/// `includeObject` from the query; 400 with kube-apiserver's wording for anything else.
pub(crate) fn include_object(query: &[(String, String)]) -> Result<Include, Failure> {
    match query
        .iter()
        .find(|(k, _)| k == "includeObject")
        .map(|(_, v)| v.as_str())
    {
        None | Some("" | "Metadata") => Ok(Include::Metadata),
        Some("Object") => Ok(Include::Object),
        Some("None") => Ok(Include::None),
        Some(other) => {
            let e = FieldError::invalid("includeObject", other, "must be 'Metadata', 'Object', 'None', or empty");
            Err(errors::bad_request(format!(
                "Unable to convert to Table as requested: {}: {}",
                e.field, e.message
            )))
        }
    }
}

/// Converts objects for one answer or one watch stream.
pub(crate) struct Converter<'a> {
    spec: &'a ResourceSpec,
    conversion: Conversion,
    include: Include,
    /// Column definitions go with the next Table only while this is set (a watch sends them once).
    headers: bool,
    now: SystemTime,
}

impl<'a> Converter<'a> {
    /// A converter for `spec`'s objects; `None` when nothing is converted. Checks `includeObject` for a Table.
    pub(crate) fn new(
        spec: &'a ResourceSpec,
        conversion: Conversion,
        query: &[(String, String)],
    ) -> Result<Option<Converter<'a>>, Failure> {
        let include = match conversion {
            Conversion::None => return Ok(None),
            Conversion::Table(_) => include_object(query)?,
            Conversion::Partial { .. } => Include::Metadata,
        };
        Ok(Some(Converter {
            spec,
            conversion,
            include,
            headers: true,
            now: SystemTime::now(),
        }))
    }

    /// Converts an answer: objects and lists become what was asked for; statuses and other documents (a scale,
    /// a review) stay as they are.
    pub(crate) fn reply(&mut self, reply: Reply) -> Reply {
        match reply {
            Reply::Warned(w, inner) => Reply::Warned(w, Box::new(self.reply(*inner))),
            Reply::Object(code, o) => match self.object(&o.to_value()) {
                Ok(v) => Reply::Json(code, self.encode(&v)),
                Err(st) => Reply::Status(st),
            },
            Reply::List { prefix, items, suffix } => {
                // The list's head is the list with no items.
                let head: Value =
                    serde_json::from_slice(&[&prefix[..], b"]", &suffix[..]].concat()).unwrap_or(Value::Null);
                let values: Vec<Value> = items.iter().map(|o| o.to_value()).collect();
                match self.list(&head, &values) {
                    Ok(v) => Reply::Json(200, self.encode(&v)),
                    Err(st) => Reply::Status(st),
                }
            }
            other => other,
        }
    }

    /// The object of a watch event: converted, except an ERROR's status; an object that cannot be converted
    /// (`PartialObjectMetadataList` asked of a watch) is sent as it is, as kube-apiserver does.
    pub(crate) fn event_object(&mut self, event_type: &str, object: &[u8]) -> Vec<u8> {
        if event_type == "ERROR" {
            self.headers = false;
            return object.to_vec();
        }
        self.now = SystemTime::now();
        let Ok(v) = serde_json::from_slice::<Value>(object) else {
            return object.to_vec();
        };
        let converted = match (event_type, self.conversion) {
            // A bookmark only carries a resourceVersion: a Table of no rows (or the partial metadata) says it.
            ("BOOKMARK", Conversion::Table(gv)) => Ok(self.table(gv, rv_meta(&v), &[])),
            _ => self.object(&v),
        };
        match converted {
            Ok(converted) => self.encode(&converted),
            Err(_) => object.to_vec(),
        }
    }

    /// A converted answer's bytes as kube-apiserver writes them: a `Table` or partial metadata is a Go struct (its
    /// fields in declaration order), an unconverted custom resource a map (sorted keys).
    fn encode(&self, v: &Value) -> Vec<u8> {
        if self.spec.custom && matches!(self.conversion, Conversion::None) {
            crate::serializer::json::to_vec_unstructured(v)
        } else {
            crate::serializer::json::to_vec(v)
        }
    }

    fn object(&mut self, obj: &Value) -> Result<Value, Failure> {
        match self.conversion {
            Conversion::None => Ok(obj.clone()),
            Conversion::Partial { list: true, .. } => Err(not_acceptable(format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                self.spec.api.kind
            ))),
            Conversion::Partial {
                group_version,
                list: false,
            } => Ok(partial(obj, group_version)),
            Conversion::Table(gv) => Ok(self.table(gv, rv_meta(obj), std::slice::from_ref(obj))),
        }
    }

    fn list(&mut self, head: &Value, items: &[Value]) -> Result<Value, Failure> {
        let meta = head.get("metadata").cloned().unwrap_or_else(|| json!({}));
        match self.conversion {
            Conversion::None => {
                Ok(json!({"kind": head["kind"], "apiVersion": head["apiVersion"], "metadata": meta, "items": items}))
            }
            Conversion::Partial { list: false, .. } => Err(not_acceptable(format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({})",
                head["kind"].as_str().unwrap_or("")
            ))),
            Conversion::Partial {
                group_version,
                list: true,
            } => Ok(json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": group_version,
                "metadata": meta,
                "items": items.iter().map(|o| partial(o, group_version)).collect::<Vec<_>>(),
            })),
            Conversion::Table(gv) => Ok(self.table(gv, meta, items)),
        }
    }

    /// A `Table` of `objects` with the list metadata `meta` (`resourceVersion`, `continue`,
    /// `remainingItemCount`).
    fn table(&mut self, group_version: &str, meta: Value, objects: &[Value]) -> Value {
        let columns = self.spec.table_columns();
        let definitions = if std::mem::take(&mut self.headers) {
            Value::Array(columns.iter().map(PrinterColumn::definition).collect())
        } else {
            Value::Null
        };
        let rows: Vec<Value> = objects
            .iter()
            .map(|o| {
                let cells: Vec<Value> = columns.iter().map(|c| c.cell(o, self.now)).collect();
                let object = match self.include {
                    Include::Metadata => partial(o, group_version),
                    Include::Object => o.clone(),
                    Include::None => Value::Null,
                };
                json!({"cells": cells, "object": object})
            })
            .collect();
        json!({
            "kind": "Table",
            "apiVersion": group_version,
            "metadata": meta,
            "columnDefinitions": definitions,
            "rows": rows,
        })
    }
}

/// The list metadata of a one-object Table: the object's resourceVersion.
fn rv_meta(obj: &Value) -> Value {
    json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))})
}

/// An object's `PartialObjectMetadata`: its whole `metadata` under the conversion's kind.
fn partial(obj: &Value, group_version: &str) -> Value {
    let meta = obj
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    json!({"kind": "PartialObjectMetadata", "apiVersion": group_version, "metadata": meta})
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_informer::object::ApiResource;

    const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn negotiates_as_kube_apiserver() {
        assert_eq!(negotiate(Some(KUBECTL)).unwrap(), Conversion::Table("meta.k8s.io/v1"));
        assert_eq!(negotiate(None).unwrap(), Conversion::None);
        assert_eq!(negotiate(Some("*/*")).unwrap(), Conversion::None);
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf,application/json")).unwrap(),
            Conversion::None
        );
        // A Table is JSON or YAML: a protobuf Table clause is passed over.
        assert_eq!(
            negotiate(Some(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json"
            ))
            .unwrap(),
            Conversion::None
        );
        assert_eq!(
            negotiate(Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io")).unwrap(),
            Conversion::Table("meta.k8s.io/v1beta1")
        );
        // Quality orders the clauses.
        assert_eq!(
            negotiate(Some(
                "application/json;q=0.5, application/json;as=Table;v=v1;g=meta.k8s.io"
            ))
            .unwrap(),
            Conversion::Table("meta.k8s.io/v1")
        );
        assert_eq!(
            negotiate(Some(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ))
            .unwrap(),
            Conversion::Partial {
                group_version: "meta.k8s.io/v1",
                list: true
            }
        );
        for refused in [
            "text/html",
            "application/json;as=Table;v=v2;g=meta.k8s.io",
            "application/json;as=Deployment;v=v1;g=apps",
        ] {
            let e = negotiate(Some(refused)).unwrap_err();
            assert_eq!((e.code, e.reason.as_str()), (406, "NotAcceptable"), "{refused}");
        }
    }

    #[test]
    fn include_object_is_checked() {
        let q = |v: &str| vec![("includeObject".to_owned(), v.to_owned())];
        assert_eq!(include_object(&[]).unwrap(), Include::Metadata);
        assert_eq!(include_object(&q("Object")).unwrap(), Include::Object);
        assert_eq!(include_object(&q("None")).unwrap(), Include::None);
        let e = include_object(&q("All")).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
        );
    }

    #[test]
    fn tables_carry_columns_once_per_watch() {
        let spec = ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true));
        let mut c = Converter::new(&spec, Conversion::Table("meta.k8s.io/v1"), &[])
            .unwrap()
            .unwrap();
        let obj = json!({"metadata": {"name": "a", "resourceVersion": "7", "labels": {"x": "y"}}, "data": {}});
        let first: Value = serde_json::from_slice(&c.event_object("ADDED", obj.to_string().as_bytes())).unwrap();
        assert_eq!(first["kind"], "Table");
        assert_eq!(first["metadata"], json!({"resourceVersion": "7"}));
        assert_eq!(first["columnDefinitions"].as_array().map(Vec::len), Some(2));
        assert_eq!(first["rows"][0]["cells"][0], "a");
        assert_eq!(
            first["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
        );
        let second: Value = serde_json::from_slice(&c.event_object("MODIFIED", obj.to_string().as_bytes())).unwrap();
        assert_eq!(second["columnDefinitions"], Value::Null);
        let status = br#"{"kind":"Status","code":410}"#;
        assert_eq!(c.event_object("ERROR", status), status.to_vec());
    }
}
