//! JSON values printed as Go's `fmt` prints the decoded `interface{}` values, so that error messages read as
//! kube-apiserver's (`map[name:a value:1]`, `[1 2]`, `<nil>`, `1e+06`).

use serde_json::Value;

use crate::api::strconv::format_float_g;

/// `%v`.
pub(super) fn go_v(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v, false);
    out
}

/// `%s`: strings bare, other scalars as `%!s(int64=5)`.
pub(super) fn go_s(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v, true);
    out
}

/// `%v` of a list.
pub(super) fn go_v_list(items: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write(&mut out, v, false);
    }
    out.push(']');
    out
}

/// `%v` of a list of lists.
pub(super) fn go_v_lists(lists: &[&Vec<Value>]) -> String {
    let inner: Vec<String> = lists.iter().map(|l| go_v_list(l)).collect();
    format!("[{}]", inner.join(" "))
}

/// The Go type name of a decoded JSON value (`reflect.TypeOf`).
pub(super) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn write(out: &mut String, v: &Value, verb_s: bool) {
    let scalar = match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => format_float_g(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => {
            out.push_str(s);
            return;
        }
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write(out, item, verb_s);
            }
            out.push(']');
            return;
        }
        Value::Object(m) => {
            // Go prints map keys sorted.
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write(out, &m[k], verb_s);
            }
            out.push(']');
            return;
        }
    };
    if verb_s {
        match v {
            Value::Null => out.push_str("%!s(<nil>)"),
            _ => out.push_str(&format!("%!s({}={scalar})", go_type(v))),
        }
    } else {
        out.push_str(&scalar);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prints_values_as_go_fmt_does() {
        assert_eq!(
            go_v(&json!({"name": "a", "value": 1, "b": [true, null]})),
            "map[b:[true <nil>] name:a value:1]"
        );
        assert_eq!(go_v_list(&[json!(1), json!("x")]), "[1 x]");
        assert_eq!(
            go_v_lists(&[&vec![json!(1)], &vec![json!("a"), json!("b")]]),
            "[[1] [a b]]"
        );
        assert_eq!(go_s(&json!("merge")), "merge");
        assert_eq!(go_s(&json!(5)), "%!s(int64=5)");
        assert_eq!(go_s(&json!(null)), "%!s(<nil>)");
        assert_eq!(go_s(&json!(true)), "%!s(bool=true)");
        // `strconv.FormatFloat(f, 'g', -1, 64)`, whose own cases are `api::strconv`'s.
        assert_eq!(go_v(&json!([1.5, 1e6, 0.00001])), "[1.5 1e+06 1e-05]");
        assert_eq!(go_type(&json!([])), "[]interface {}");
        assert_eq!(go_type(&json!(1.5)), "float64");
    }
}
