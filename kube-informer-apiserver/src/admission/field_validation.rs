//! `fieldValidation` on writes, as kube-apiserver does it: fields the object's schema does not know, and keys
//! repeated in a JSON body, are dropped and — by the directive — ignored (`Ignore`), reported in `Warning` headers
//! (`Warn`, the default), or refused with 400 and its `strict decoding error: …` wording (`Strict`).
//!
//! Only where a schema is known ([`ResourceSpec::schema`](crate::ResourceSpec::schema)): there the unknown fields
//! are dropped whatever the directive (as kube-apiserver's decoding into its Go types, or a CRD's pruning, does).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::api::errors::{self, Failure, FieldError};
use crate::registry::resource::ResourceSpec;
use crate::schema::FieldPath;

/// The most problems the JSON decoder keeps (sigs.k8s.io/json's strict errors).
const MAX_DECODER_PROBLEMS: usize = 100;

/// What to do with unknown and duplicate fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Directive {
    Ignore,
    Warn,
    Strict,
}

impl Directive {
    /// The `fieldValidation` query parameter (Warn when absent); 422 on anything else, naming the options kind
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub(crate) fn parse(query: &[(String, String)], options_kind: &str) -> Result<Directive, Failure> {
        match query
            .iter()
            .find(|(k, _)| k == "fieldValidation")
            .map(|(_, v)| v.as_str())
        {
            None | Some("") | Some("Warn") => Ok(Directive::Warn),
            Some("Ignore") => Ok(Directive::Ignore),
            Some("Strict") => Ok(Directive::Strict),
            Some(other) => {
                let e = FieldError::not_supported("fieldValidation", other, &["", "Ignore", "Strict", "Warn"]);
                Err(errors::invalid("meta.k8s.io", options_kind, "", vec![e]))
            }
        }
    }
}

/// A JSON document parsed while noting repeated keys (`spec.paused`, `spec.containers[0].image`), in document order.
pub(crate) fn parse_noting_duplicates(body: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    let dups = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let v = Seed {
        path: FieldPath::default(),
        dups: &dups,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((v, dups.into_inner()))
}

struct Seed<'a> {
    path: FieldPath,
    dups: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Seed {
            path: self.path.index(out.len()),
            dups: self.dups,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = self.path.child(&key);
            if out.contains_key(&key) {
                self.dups.borrow_mut().push(child.as_str().to_owned());
            }
            let v = map.next_value_seed(Seed {
                path: child,
                dups: self.dups,
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The order paths (fields and array elements) appear in a JSON document (for reporting a typed object's problems as
/// its decoder meets them). Only computed when there is something to report.
pub(crate) fn document_order(body: &[u8]) -> Vec<String> {
    // serde_json's map keeps keys sorted, not in document order: read them in order with a streaming pass.
    let order = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = OrderSeed {
        path: FieldPath::default(),
        order: &order,
    }
    .deserialize(&mut de);
    order.into_inner()
}

struct OrderSeed<'a> {
    path: FieldPath,
    order: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for OrderSeed<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OrderSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        loop {
            let path = self.path.index(i);
            let at = self.order.borrow().len();
            self.order.borrow_mut().push(path.as_str().to_owned());
            if seq
                .next_element_seed(OrderSeed {
                    path,
                    order: self.order,
                })?
                .is_none()
            {
                // No element after all.
                self.order.borrow_mut().truncate(at);
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let child = self.path.child(&key);
            self.order.borrow_mut().push(child.as_str().to_owned());
            map.next_value_seed(OrderSeed {
                path: child,
                order: self.order,
            })?;
        }
        Ok(())
    }
}

/// How a write's problems are worded when refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// A create or update body: `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: …`.
    Decode,
    /// A patch: `strict decoding error: …`.
    Patch,
}

/// The outcome of the problems found (`worded` ones, already phrased, first): `Ok(warnings)` (empty under `Ignore`) or the 400 of `Strict`. `body`, when
/// given, orders a typed object's problems as they appear in it.
pub(crate) fn judge(
    spec: &ResourceSpec,
    directive: Directive,
    stage: Stage,
    worded: Vec<String>,
    duplicates: Vec<String>,
    unknown: Vec<String>,
    body: Option<&[u8]>,
) -> Result<Vec<String>, Failure> {
    if directive == Directive::Ignore || (worded.is_empty() && duplicates.is_empty() && unknown.is_empty()) {
        return Ok(Vec::new());
    }
    // The JSON decoder reports each of its problems once, and at most 100 of them (sigs.k8s.io/json's
    // `saveStrictError`): a body repeating a key 200,000 times is one problem.
    let mut seen = HashSet::new();
    let duplicates: Vec<String> = duplicates
        .into_iter()
        .filter(|d| seen.insert(d.clone()))
        .take(MAX_DECODER_PROBLEMS)
        .collect();
    let mut problems: Vec<(String, String)> = Vec::new();
    match body.filter(|_| !spec.custom && stage == Stage::Decode) {
        Some(body) => {
            // A typed object reports in document order, a field both repeated and unknown once, as unknown.
            let order = document_order(body);
            // An unknown field where the decoder first meets it; a repeated one where it meets it again.
            let mut first: HashMap<&str, usize> = HashMap::new();
            let mut last: HashMap<&str, usize> = HashMap::new();
            for (i, o) in order.iter().enumerate() {
                first.entry(o.as_str()).or_insert(i);
                last.insert(o.as_str(), i);
            }
            let position = |p: &str| first.get(p).copied().unwrap_or(usize::MAX);
            let again = |p: &str| last.get(p).copied().unwrap_or(usize::MAX);
            let unknown_set: HashSet<&str> = unknown.iter().map(String::as_str).collect();
            let mut all: Vec<(usize, String, String)> = duplicates
                .iter()
                .filter(|d| !unknown_set.contains(d.as_str()))
                .map(|d| (again(d), "duplicate".to_owned(), d.clone()))
                .chain(unknown.iter().map(|u| (position(u), "unknown".to_owned(), u.clone())))
                .collect();
            all.sort_by_key(|(p, _, _)| *p);
            // The decoder of a typed object finds both kinds: at most 100 in all.
            problems.extend(all.into_iter().take(MAX_DECODER_PROBLEMS).map(|(_, k, p)| (k, p)));
        }
        None => {
            problems.extend(duplicates.into_iter().map(|d| ("duplicate".to_owned(), d)));
            problems.extend(unknown.into_iter().map(|u| ("unknown".to_owned(), u)));
        }
    }
    let mut texts = worded;
    texts.extend(problems.iter().map(|(k, p)| format!("{k} field {p:?}")));
    if directive == Directive::Warn {
        return Ok(texts);
    }
    let detail = format!("strict decoding error: {}", texts.join(", "));
    let api = &spec.api;
    Err(errors::bad_request(match stage {
        Stage::Decode => format!(
            "{} in version {:?} cannot be handled as a {}: {detail}",
            api.kind, api.version, api.kind
        ),
        Stage::Patch => detail,
    }))
}

/// Problems of a JSON patch document itself: operations with keys RFC 6902 does not define, and repeated keys
/// (`json patch unknown field "[0].foo"`).
pub(crate) fn json_patch_problems(body: &[u8]) -> Vec<String> {
    let Ok((Value::Array(ops), dups)) = parse_noting_duplicates(body) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if let Value::Object(m) = op {
            for k in m
                .keys()
                .filter(|k| !matches!(k.as_str(), "op" | "path" | "value" | "from"))
            {
                out.push(format!("json patch unknown field \"[{i}].{k}\""));
            }
        }
    }
    out.extend(dups.into_iter().map(|d| format!("json patch duplicate field {d:?}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_informer::object::ApiResource;
    use serde_json::json;

    fn deployments() -> ResourceSpec {
        ResourceSpec::new(ApiResource::new("apps", "v1", "Deployment", "deployments", true)).schema(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "paused": {"type": "boolean"},
                "template": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "containers": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "imagePullPolicy": {"type": "string"}}}}}}}},
            }}},
        }))
    }

    const BODY: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "name": "d2", "unknownMeta": 1},
        "spec": {"unknown1": "v", "unknownDupe": "a", "unknownDupe": "b", "paused": true, "paused": false,
                 "template": {"spec": {"containers": [{"name": "c", "unknownNested": 1,
                                                       "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"#;

    #[test]
    fn directives_parse_like_kube_apiserver() {
        let q = |v: &str| vec![("fieldValidation".to_owned(), v.to_owned())];
        assert_eq!(Directive::parse(&[], "CreateOptions").unwrap(), Directive::Warn);
        assert_eq!(
            Directive::parse(&q("Strict"), "CreateOptions").unwrap(),
            Directive::Strict
        );
        let e = Directive::parse(&q("strict"), "PatchOptions").unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            r#"PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn""#
        );
    }

    #[test]
    fn typed_objects_report_in_document_order_and_strict_refuses() {
        let spec = deployments();
        let (mut v, dups) = parse_noting_duplicates(BODY.as_bytes()).unwrap();
        assert_eq!(v["spec"]["paused"], false, "the last of repeated keys wins");
        let unknown = spec.prune(&mut v);
        assert!(v["spec"].get("unknown1").is_none() && v["metadata"].get("unknownMeta").is_none());
        let warnings = judge(
            &spec,
            Directive::Warn,
            Stage::Decode,
            Vec::new(),
            dups.clone(),
            unknown.clone(),
            Some(BODY.as_bytes()),
        )
        .unwrap();
        assert_eq!(
            warnings,
            [
                r#"duplicate field "metadata.name""#,
                r#"unknown field "metadata.unknownMeta""#,
                r#"unknown field "spec.unknown1""#,
                r#"unknown field "spec.unknownDupe""#,
                r#"duplicate field "spec.paused""#,
                r#"unknown field "spec.template.spec.containers[0].unknownNested""#,
                r#"duplicate field "spec.template.spec.containers[0].imagePullPolicy""#,
            ]
        );
        let e = judge(
            &spec,
            Directive::Strict,
            Stage::Decode,
            Vec::new(),
            dups.clone(),
            unknown.clone(),
            Some(BODY.as_bytes()),
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.starts_with(
            r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "metadata.name", unknown field"#
        ));
        assert!(
            judge(&spec, Directive::Ignore, Stage::Decode, Vec::new(), dups, unknown, None)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn json_patch_operations_are_checked_too() {
        let body = br#"[{"op": "add", "path": "/spec/a", "value": 1, "foo": "bar"},
                        {"op": "add", "path": "/spec/b", "path": "/spec/c", "value": 1}]"#;
        assert_eq!(
            json_patch_problems(body),
            [
                r#"json patch unknown field "[0].foo""#,
                r#"json patch duplicate field "[1].path""#
            ]
        );
    }

    #[test]
    fn nothing_is_known_without_a_schema() {
        let spec = ResourceSpec::new(ApiResource::new("", "v1", "ConfigMap", "configmaps", true));
        let mut v = json!({"metadata": {"name": "a"}, "data": {"k": "v"}, "whatever": 1});
        assert!(spec.prune(&mut v).is_empty());
        assert_eq!(v["whatever"], 1);
    }
}
