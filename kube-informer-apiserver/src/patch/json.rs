//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over `serde_json::Value`, within kube-apiserver's limits on
//! a JSON patch: 10,000 operations, 3 MiB copied by its `copy` operations; and within the nesting a stored object may
//! have ([`nesting`](crate::api::nesting)), checked at each operation.

use std::io;

use serde_json::{Map, Value};

use crate::api::errors::{self, Failure};
use crate::api::nesting::{MAX_NESTING, nesting};
use kube_informer::object::Status;

/// kube-apiserver's `maxJSONPatchOperations`.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;
/// kube-apiserver's `JSONPatchMaxCopyBytes` (json-patch's `AccumulatedCopySizeLimit`): what the `copy` operations of
/// one patch may add, measured as the copied values' JSON.
pub(crate) const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// A JSON patch's failure as answered: 400 when it is no patch, 413 past the operations allowed, 422 when it does not
/// apply.
pub(crate) fn failure(e: PatchError) -> Failure {
    match e {
        PatchError::Malformed(m) => errors::bad_request(m),
        PatchError::TooLarge(m) => Box::new(Status::failure(413, "RequestEntityTooLarge", m)),
        PatchError::Failed(m) => Box::new(Status::failure(422, "Invalid", m)),
    }
}

/// Why a patch failed. kube-apiserver answers an undecodable patch with 400, one with too many operations with 413,
/// and a patch that does not apply with 422.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PatchError {
    /// The patch document is not a valid patch (400).
    Malformed(String),
    /// Too many operations (413).
    TooLarge(String),
    /// A valid patch that cannot be applied to this object (422).
    Failed(String),
}

/// The length of a value's JSON, without writing it.
fn json_len(v: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// Refuses to put `value` at `path` when the document would nest deeper than a stored object may.
fn check_nesting(path: &[String], value: &Value) -> Result<(), PatchError> {
    let depth = path.len() + nesting(value);
    if depth > MAX_NESTING {
        return Err(PatchError::Failed(format!(
            "the patched object would nest {depth} levels deep, more than the {MAX_NESTING} a request body may"
        )));
    }
    Ok(())
}

/// Applies an RFC 7386 merge patch to `target`: objects merge recursively, `null` removes a key, anything else
/// replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// Applies an RFC 6902 JSON patch (an array of operations) to `target`, all or nothing.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::Malformed(
            "json patch must be an array of operations".into(),
        ));
    };
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    // Decode every operation first: a malformed patch is a 400 whatever the object.
    let mut decoded = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let str_field = |name: &str| -> Result<&str, PatchError> {
            op.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::Malformed(format!("operation {i}: missing or invalid {name:?}")))
        };
        let kind = str_field("op")?;
        let path = parse_pointer(str_field("path")?).map_err(PatchError::Malformed)?;
        let needs_value = matches!(kind, "add" | "replace" | "test");
        let value = match op.get("value") {
            Some(v) => Some(v),
            None if needs_value => {
                return Err(PatchError::Malformed(format!("operation {i}: missing \"value\"")));
            }
            None => None,
        };
        let from = match kind {
            "move" | "copy" => Some(parse_pointer(str_field("from")?).map_err(PatchError::Malformed)?),
            "add" | "remove" | "replace" | "test" => None,
            other => return Err(PatchError::Malformed(format!("operation {i}: unknown op {other:?}"))),
        };
        decoded.push((kind, path, value, from));
    }
    let mut doc = target.clone();
    let mut copied = 0usize;
    for (kind, path, value, from) in decoded {
        if let Some(v) = value.filter(|_| matches!(kind, "add" | "replace")) {
            check_nesting(&path, v)?;
        }
        match kind {
            "add" => add(&mut doc, &path, value.cloned().unwrap_or(Value::Null))?,
            "remove" => {
                remove(&mut doc, &path)?;
            }
            "replace" => {
                let slot = get_mut(&mut doc, &path)?;
                *slot = value.cloned().unwrap_or(Value::Null);
            }
            "test" => {
                let current = get_mut(&mut doc, &path)?;
                if Some(&*current) != value {
                    return Err(PatchError::Failed(format!(
                        "testing value {} failed",
                        display_pointer(&path)
                    )));
                }
            }
            "move" => {
                let from = from.unwrap_or_default();
                if path.len() > from.len() && path[..from.len()] == from[..] {
                    return Err(PatchError::Failed(
                        "cannot move a value into one of its children".into(),
                    ));
                }
                check_nesting(&path, get_mut(&mut doc, &from)?)?;
                let v = remove(&mut doc, &from)?;
                add(&mut doc, &path, v)?;
            }
            _ => {
                let from = from.unwrap_or_default();
                let source = get_mut(&mut doc, &from)?;
                check_nesting(&path, source)?;
                // Measured before it is made: a copy of a copy doubles the object.
                copied = copied.saturating_add(json_len(source));
                if copied > MAX_COPY_BYTES {
                    return Err(PatchError::Failed(format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}"
                    )));
                }
                let v = source.clone();
                add(&mut doc, &path, v)?;
            }
        }
    }
    *target = doc;
    Ok(())
}

/// Splits an RFC 6901 pointer into unescaped tokens (`""` is the whole document).
fn parse_pointer(p: &str) -> Result<Vec<String>, String> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = p.strip_prefix('/') else {
        return Err(format!("JSON pointer {p:?} must start with '/'"));
    };
    rest.split('/')
        .map(|t| {
            let mut out = String::with_capacity(t.len());
            let mut chars = t.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return Err(format!("invalid escape in JSON pointer {p:?}")),
                    }
                } else {
                    out.push(c);
                }
            }
            Ok(out)
        })
        .collect()
}

fn display_pointer(tokens: &[String]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// An array index token: digits without a leading zero.
fn index(token: &str, len: usize, allow_end: bool) -> Result<usize, PatchError> {
    let valid = !token.is_empty()
        && token.bytes().all(|c| c.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'))
        && token.len() < 10;
    let i: usize = if valid {
        token.parse().unwrap_or(usize::MAX)
    } else {
        return Err(PatchError::Failed(format!("invalid array index {token:?}")));
    };
    if i < len || (allow_end && i == len) {
        Ok(i)
    } else {
        Err(PatchError::Failed(format!("array index {i} out of bounds")))
    }
}

fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Result<&'a mut Value, PatchError> {
    let mut cur = doc;
    for t in path {
        cur = match cur {
            Value::Object(m) => m
                .get_mut(t)
                .ok_or_else(|| PatchError::Failed(format!("missing value at {}", display_pointer(path))))?,
            Value::Array(a) => {
                let i = index(t, a.len(), false)?;
                &mut a[i]
            }
            _ => {
                return Err(PatchError::Failed(format!(
                    "missing value at {}",
                    display_pointer(path)
                )));
            }
        };
    }
    Ok(cur)
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), PatchError> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parent)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                index(last, a.len(), true)?
            };
            a.insert(i, value);
            Ok(())
        }
        _ => Err(PatchError::Failed(format!(
            "cannot add at {}: parent is not a container",
            display_pointer(path)
        ))),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, PatchError> {
    let Some((last, parent)) = path.split_last() else {
        return Err(PatchError::Failed("cannot remove the whole document".into()));
    };
    match get_mut(doc, parent)? {
        Value::Object(m) => m
            .remove(last)
            .ok_or_else(|| PatchError::Failed(format!("missing value at {}", display_pointer(path)))),
        Value::Array(a) => {
            let i = index(last, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err(PatchError::Failed(format!(
            "missing value at {}",
            display_pointer(path)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc7386_examples() {
        // RFC 7386 appendix A.
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (json!({"a":"b","b":"c"}), json!({"a":null}), json!({"b":"c"})),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (json!({}), json!({"a":{"bb":{"ccc":null}}}), json!({"a":{"bb":{}}})),
        ];
        for (mut target, patch, want) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, want, "patch {patch}");
        }
    }

    fn apply(doc: Value, patch: Value) -> Result<Value, PatchError> {
        let mut d = doc;
        json_patch(&mut d, &patch).map(|()| d)
    }

    #[test]
    fn json_patch_follows_rfc6902_examples() {
        // RFC 6902 appendix A (A.1–A.10, A.14, A.16).
        let ok = [
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux"}]),
                json!({"baz":"qux","foo":"bar"}),
            ),
            (
                json!({"foo":["bar","baz"]}),
                json!([{"op":"add","path":"/foo/1","value":"qux"}]),
                json!({"foo":["bar","qux","baz"]}),
            ),
            (
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"remove","path":"/baz"}]),
                json!({"foo":"bar"}),
            ),
            (
                json!({"foo":["bar","qux","baz"]}),
                json!([{"op":"remove","path":"/foo/1"}]),
                json!({"foo":["bar","baz"]}),
            ),
            (
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"replace","path":"/baz","value":"boo"}]),
                json!({"baz":"boo","foo":"bar"}),
            ),
            (
                json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
                json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]),
                json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}),
            ),
            (
                json!({"foo":["all","grass","cows","eat"]}),
                json!([{"op":"move","from":"/foo/1","path":"/foo/3"}]),
                json!({"foo":["all","cows","eat","grass"]}),
            ),
            (
                json!({"baz":"qux","foo":["a",2,"c"]}),
                json!([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]),
                json!({"baz":"qux","foo":["a",2,"c"]}),
            ),
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/child","value":{"grandchild":{}}}]),
                json!({"foo":"bar","child":{"grandchild":{}}}),
            ),
            (
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":10}]),
                json!({"/":9,"~1":10}),
            ),
            (
                json!({"foo":["bar"]}),
                json!([{"op":"add","path":"/foo/-","value":["abc","def"]}]),
                json!({"foo":["bar",["abc","def"]]}),
            ),
            (
                json!({"a":{"b":1}}),
                json!([{"op":"copy","from":"/a","path":"/c"}]),
                json!({"a":{"b":1},"c":{"b":1}}),
            ),
            (json!({"a":1}), json!([{"op":"add","path":"","value":[1]}]), json!([1])),
        ];
        for (doc, patch, want) in ok {
            assert_eq!(apply(doc, patch.clone()), Ok(want), "patch {patch}");
        }
    }

    #[test]
    fn json_patch_limits_are_kube_apiservers() {
        // Operations: 413 past 10,000.
        let op = json!({"op": "test", "path": "/a", "value": 1});
        assert!(
            apply(
                json!({"a": 1}),
                Value::Array(vec![op.clone(); MAX_JSON_PATCH_OPERATIONS])
            )
            .is_ok()
        );
        assert_eq!(
            apply(json!({"a": 1}), Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS + 1])),
            Err(PatchError::TooLarge(
                "The allowed maximum operations in a JSON patch is 10000, got 10001".into()
            ))
        );
        // Copies: each doubling the object, stopped at 3 MiB copied (the 16 operations grew the process by
        // 100 MB).
        let doc = json!({"a": {"x": "y".repeat(100_000)}});
        let copies: Vec<Value> = (0..16)
            .map(|i| json!({"op": "copy", "from": "/a", "path": format!("/a/c{i}")}))
            .collect();
        let Err(PatchError::Failed(m)) = apply(doc, Value::Array(copies)) else {
            panic!("copies past the limit applied");
        };
        assert!(
            m.starts_with("Unable to complete the copy, the accumulated size increase of copy is ")
                && m.ends_with(", exceeding the limit 3145728"),
            "{m}"
        );
    }

    #[test]
    fn json_patches_cannot_nest_the_object_deeper_than_a_body_may() {
        let deep = |n: usize| (0..n).fold(json!(1), |v, _| json!({"a": v}));
        // A value 100 deep added 100 deep, ten times past the limit by repetition: refused at the first that would
        // pass it, whatever the operation.
        let ops: Vec<Value> = (0..10)
            .map(|i| json!({"op": "add", "path": format!("/x{}", "/a".repeat(i * 100)), "value": deep(100)}))
            .collect();
        assert!(matches!(
            apply(json!({}), Value::Array(ops)),
            Err(PatchError::Failed(_))
        ));
        let doc = json!({"d": deep(100)});
        for op in ["copy", "move"] {
            let patch = json!([{"op": op, "from": "/d", "path": format!("/d{}", "/a".repeat(50))}]);
            assert!(matches!(apply(doc.clone(), patch), Err(PatchError::Failed(_))), "{op}");
        }
        // At the limit is fine.
        let patch = json!([{"op": "add", "path": "/x", "value": deep(MAX_NESTING - 1)}]);
        assert!(apply(json!({}), patch).is_ok());
    }

    #[test]
    fn json_patch_errors_are_all_or_nothing() {
        // A.9: a failing test.
        let doc = json!({"baz":"qux"});
        assert!(matches!(
            apply(doc.clone(), json!([{"op":"test","path":"/baz","value":"bar"}])),
            Err(PatchError::Failed(_))
        ));
        // A.12: adding to a nonexistent target.
        assert!(matches!(
            apply(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz/bat","value":"qux"}])
            ),
            Err(PatchError::Failed(_))
        ));
        // A.15: comparing strings and numbers.
        assert!(
            apply(
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":"10"}])
            )
            .is_err()
        );
        // A.13 / malformed documents.
        for bad in [
            json!({"op":"add"}),
            json!([{"op":"add","path":"/a"}]),
            json!([{"op":"frobnicate","path":"/a"}]),
            json!([{"op":"remove","path":"a"}]),
            json!([{"op":"move","path":"/a"}]),
            json!([{"op":"remove","path":"/~2"}]),
        ] {
            assert!(
                matches!(apply(json!({}), bad.clone()), Err(PatchError::Malformed(_))),
                "{bad}"
            );
        }
        for failing in [
            json!([{"op":"add","path":"/a/01","value":1}]),
            json!([{"op":"add","path":"/a/5","value":1}]),
            json!([{"op":"remove","path":"/missing"}]),
            json!([{"op":"replace","path":"/missing","value":1}]),
            json!([{"op":"move","from":"/a","path":"/a/0"}]),
            json!([{"op":"remove","path":""}]),
        ] {
            assert!(
                matches!(apply(json!({"a":[1]}), failing.clone()), Err(PatchError::Failed(_))),
                "{failing}"
            );
        }
        // Nothing is applied when a later operation fails.
        let mut doc = json!({"a":1});
        let r = json_patch(
            &mut doc,
            &json!([{"op":"add","path":"/b","value":2},{"op":"remove","path":"/zz"}]),
        );
        assert!(r.is_err());
        assert_eq!(doc, json!({"a":1}));
    }
}
