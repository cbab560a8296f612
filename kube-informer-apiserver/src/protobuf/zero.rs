//! The JSON Go's `encoding/json` writes for the zero value of a built-in kind (what kube-apiserver's `Creater.New`
//! makes), read from the same field table as the decoder: a field is written unless `omitempty` leaves it out, and
//! a struct that is not a pointer is always written, even under `omitempty` (a zero `metav1.Time` as `null`).

use serde_json::{Map, Value};

use super::schema::{Field, Scalar, Schema, Shape, Special, Type};

/// The deepest nesting followed; Go types cannot contain themselves by value, this only bounds a broken table.
const MAX_DEPTH: usize = 32;

/// The zero object of a kind (`v1`, `Pod`) as Go writes it, without `apiVersion` and `kind` (its `TypeMeta` is
/// empty); `None` for a kind the table does not have.
pub(crate) fn zero_object(api_version: &str, kind: &str) -> Option<Value> {
    let schema = Schema::get();
    let message = schema.kind(api_version, kind)?;
    Some(Value::Object(zero_struct(schema, message, 0)))
}

fn zero_struct(schema: &Schema, message: usize, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    let Shape::Struct(fields) = &schema.messages[message].shape else {
        return out;
    };
    if depth > MAX_DEPTH {
        return out;
    }
    for f in fields {
        match f.ty {
            Type::Message(m) if f.inline => {
                out.extend(zero_struct(schema, m, depth + 1));
            }
            _ => {
                if let Some(v) = zero_field(schema, f, depth) {
                    out.insert(f.json.to_owned(), v);
                }
            }
        }
    }
    out
}

/// A field's zero value, `None` when `omitempty` leaves it out.
fn zero_field(schema: &Schema, f: &Field, depth: usize) -> Option<Value> {
    if f.repeated || f.map_key.is_some() || f.ptr {
        return (!f.omit).then_some(Value::Null);
    }
    match f.ty {
        Type::Scalar(s) => (!f.omit).then(|| match s {
            Scalar::String => Value::String(String::new()),
            Scalar::Bytes => Value::Null,
            Scalar::Bool => Value::Bool(false),
            _ => Value::from(0),
        }),
        Type::Message(m) => Some(match &schema.messages[m].shape {
            Shape::Struct(_) => Value::Object(zero_struct(schema, m, depth + 1)),
            // A StructOr's fields are pointers and map values (apiextensions'): never a zero value of its own.
            Shape::Special(
                Special::Time | Special::MicroTime | Special::RawJson | Special::StructOr(..) | Special::Object,
            ) => Value::Null,
            Shape::Special(Special::IntOrString) => Value::from(0),
            Shape::Special(Special::Quantity) => Value::String("0".into()),
            Shape::List(_) => return (!f.omit).then_some(Value::Null),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_objects_are_what_go_writes() {
        assert_eq!(
            zero_object("v1", "ConfigMap").unwrap(),
            json!({"metadata": {"creationTimestamp": null}})
        );
        assert_eq!(
            zero_object("apps/v1", "Deployment").unwrap(),
            json!({
                "metadata": {"creationTimestamp": null},
                "spec": {"selector": null, "strategy": {}, "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}},
                "status": {},
            })
        );
        assert!(zero_object("example.com/v1", "Widget").is_none());
    }
}
