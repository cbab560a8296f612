//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl 1.3x sends them for `kubectl create
//! <kind>`, `kubectl auth can-i` and `create token`, and as client-go sends every body when configured for
//! protobuf: decoded into the JSON object kube-apiserver would have decoded from the same bytes, so that the rest of
//! the server sees what a JSON client would have sent.
//!
//! The body is the magic `k8s\0`, then a `runtime.Unknown` message: `typeMeta` (apiVersion, kind), `raw` (the
//! object's own message, as the `generated.proto` files of k8s.io/api define it), `contentEncoding`,
//! `contentType`. Which messages exist and how each becomes JSON is data: `messages.txt`, written by
//! `generate.py` from k8s.io/api, apimachinery, apiextensions-apiserver and kube-aggregator (see [`schema`]);
//! [`json`] says how Go's rules are kept.
//!
//! Answers stay JSON: kubectl asks for `application/vnd.kubernetes.protobuf,application/json`, and every client
//! that asks for protobuf lists JSON too, since kube-apiserver itself answers JSON for the kinds it has no protobuf
//! for (custom resources).

mod json;
pub(crate) mod schema;
mod wire;
mod zero;

pub(crate) use zero::zero_object;

use std::fmt::Write as _;

use serde_json::Value;

use schema::Schema;
use wire::{LEN, Raw, Reader, WireError};

/// The media type of protobuf bodies.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What every protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// True when objects of this kind can be decoded from protobuf (its message is in the table, not marked as
/// described for JSON's order only).
pub(crate) fn knows_kind(api_version: &str, kind: &str) -> bool {
    Schema::get().decodable_kind(api_version, kind).is_some()
}

/// The envelope around the object.
#[derive(Debug, Default, PartialEq, Eq)]
struct Unknown<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

/// Reads the magic and the `runtime.Unknown` envelope; errors are worded as apimachinery's protobuf serializer
/// words them.
fn unknown(body: &[u8]) -> Result<Unknown<'_>, String> {
    let data = match body {
        [] => return Err("empty data".into()),
        b if b.len() < MAGIC.len() || !b.starts_with(MAGIC) => {
            // Go's %v of the prefix bytes.
            return Err(
                "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]".into(),
            );
        }
        b if b.len() == MAGIC.len() => return Err("empty body".into()),
        b => &b[MAGIC.len()..],
    };
    let mut u = Unknown::default();
    let mut r = Reader::new(data, "Unknown");
    let text = |e: WireError| e.to_string();
    while let Some((number, wire_type, raw)) = r.next().map_err(text)? {
        let field = match number {
            1 => "TypeMeta",
            2 => "Raw",
            3 => "ContentEncoding",
            4 => "ContentType",
            _ => continue,
        };
        let Raw::Bytes(b) = raw else {
            return Err(text(WireError::WrongWireType { field, wire_type }));
        };
        match number {
            1 => {
                // TypeMeta merges, field by field (gogo-protobuf's Unmarshal does not reset it).
                let mut t = Reader::new(b, "TypeMeta");
                while let Some((n, wire_type, raw)) = t.next().map_err(text)? {
                    let (target, field) = match n {
                        1 => (&mut u.api_version, "APIVersion"),
                        2 => (&mut u.kind, "Kind"),
                        _ => continue,
                    };
                    match raw {
                        Raw::Bytes(s) if wire_type == LEN => *target = json::go_string(s),
                        _ => return Err(text(WireError::WrongWireType { field, wire_type })),
                    }
                }
            }
            2 => u.raw = b,
            _ => {}
        }
    }
    Ok(u)
}

/// apimachinery's `summarizeData`: the first 30 bytes of a body, in hex unless it looks like JSON.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    if body.is_empty() {
        return "<empty>".into();
    }
    let cut = &body[..body.len().min(MAX)];
    let mut s = if body[0] == b'{' {
        String::from_utf8_lossy(cut).into_owned()
    } else {
        cut.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    };
    if body.len() > MAX {
        s.push_str(" ...");
    }
    s
}

/// Splits an apiVersion into group and version as apimachinery does (`None` when it has more than one `/`).
fn group_version(api_version: &str) -> Option<(&str, &str)> {
    match api_version.split_once('/') {
        None => Some(("", api_version)),
        Some((_, v)) if v.contains('/') => None,
        Some(gv) => Some(gv),
    }
}

/// Decodes an object body sent to a resource of kind `kind` in `api_version` (the URL's), into the JSON object
/// kube-apiserver would decode, `apiVersion` and `kind` included (from the envelope, or the resource's where the
/// envelope leaves them empty). The error is the text of kube-apiserver's 400 BadRequest for the same body.
pub(crate) fn decode_object(body: &[u8], api_version: &str, kind: &str) -> Result<Value, String> {
    let u = unknown(body).map_err(|e| {
        format!(
            "the object provided is unrecognized (must be of type {kind}): {e} ({})",
            summarize(body)
        )
    })?;
    // The envelope's group/version/kind, defaulted from the resource's where empty (copyKindDefaults).
    let (mut group, mut version) = group_version(&u.api_version).unwrap_or(("", ""));
    let actual_kind = if u.kind.is_empty() { kind } else { u.kind.as_str() };
    if version.is_empty() {
        (group, version) = group_version(api_version).unwrap_or(("", ""));
    }
    let actual_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let cannot =
        |e: &dyn std::fmt::Display| format!("{actual_kind} in version {version:?} cannot be handled as a {kind}: {e}");
    let schema = Schema::get();
    let msg = schema.decodable_kind(&actual_version, actual_kind).ok_or_else(|| {
        cannot(&format!(
            "no kind {actual_kind:?} is registered for version {actual_version:?} in scheme \"pkg/api/legacyscheme/scheme.go:30\""
        ))
    })?;
    let mut v = json::message(schema, msg, u.raw).map_err(|e| cannot(&e))?;
    if let Value::Object(obj) = &mut v {
        obj.insert("apiVersion".into(), Value::String(actual_version));
        obj.insert("kind".into(), Value::String(actual_kind.to_owned()));
    }
    Ok(v)
}

/// Decodes a `DeleteOptions` body (the envelope's kind, when given, must be `DeleteOptions`).
pub(crate) fn decode_delete_options(body: &[u8]) -> Result<Value, String> {
    let u = unknown(body)?;
    if !u.kind.is_empty() && u.kind != "DeleteOptions" {
        return Err(format!("expected DeleteOptions, got {}", u.kind));
    }
    let schema = Schema::get();
    let msg = schema
        .message("meta.v1.DeleteOptions")
        .ok_or_else(|| "DeleteOptions is not in the protobuf table".to_owned())?;
    json::message(schema, msg, u.raw).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
