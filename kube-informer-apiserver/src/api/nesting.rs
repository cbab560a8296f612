//! How deep a JSON value nests, and how deep a stored object may: no deeper than a request body can be, serde_json's
//! recursion limit (127 arrays and objects inside one another). Bodies are held to it by the parser; what a patch
//! makes is checked operation by operation, and what is stored — its managed fields included, whose `fieldsV1`
//! nest a few levels deeper than the fields they name — once more before it is: every recursive walk over a stored
//! object (pruning, defaulting, validation, managed fields, CEL values, encoding, dropping) stays within that depth,
//! and every client with serde_json's limit (kube-rs, this crate's) reads back what was accepted.

use serde_json::Value;

use crate::api::errors::Failure;

/// The most arrays and objects nested in one another a stored object may have: what serde_json parses.
pub(crate) const MAX_NESTING: usize = 127;

/// Arrays and objects on the deepest path of `v` (a scalar is 0), found without recursion.
pub(crate) fn nesting(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            _ => {}
        }
        let here = depth + usize::from(v.is_array() || v.is_object());
        deepest = deepest.max(here);
    }
    deepest
}

/// Refuses to store `obj` (as it would be served) when it nests deeper than [`MAX_NESTING`]: 422.
pub(crate) fn check_stored(obj: &Value) -> Result<(), Failure> {
    let depth = nesting(obj);
    if depth <= MAX_NESTING {
        return Ok(());
    }
    Err(Box::new(kube_informer::object::Status::failure(
        422,
        "Invalid",
        format!(
            "the object would be stored nested {depth} levels deep (its managed fields included), more than the \
             {MAX_NESTING} a JSON client such as serde_json reads back"
        ),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_containers_on_the_deepest_path() {
        assert_eq!(nesting(&json!(1)), 0);
        assert_eq!(nesting(&json!({})), 1);
        assert_eq!(nesting(&json!({"a": [1, {"b": []}], "c": 2})), 4);
    }

    #[test]
    fn the_limit_is_what_serde_json_parses() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let v: Value = serde_json::from_str(&nested(MAX_NESTING)).unwrap();
        assert_eq!(nesting(&v), MAX_NESTING);
        assert!(serde_json::from_str::<Value>(&nested(MAX_NESTING + 1)).is_err());
    }
}
