//! The functions a Kubernetes CEL environment declares: CEL's standard ones (operators, conversions, `size`,
//! string tests, `matches`, durations and timestamps), cel-go's extension libraries Kubernetes enables (strings,
//! sets, optionals) and k8s.io/apiserver's libraries ([`kubernetes`]: lists, regex, URLs,
//! quantity, IP, CIDR, format, semver). Each function has a type rule (for the checker), an implementation and a
//! cost (cel-go's: 1 per call, a tenth of the characters traversed by string functions, the items traversed by list
//! functions).

use std::cmp::Ordering;

use kube_informer::unstable::time::{civil_from_days, days_from_civil};

use super::arithmetic::arithmetic;
use super::conversions::convert;
use super::errors::{Fail, NO_OVERLOAD};
use super::kubernetes;
use super::time::NANOS;
use super::types::Type;
use super::value::{Key, Value, key_text};

/// Namespaces whose functions are called as `ns.f(…)`.
pub(crate) const NAMESPACES: [&str; 5] = ["optional", "format", "sets", "strings", "ip"];

/// The result type of `name` applied to `target` and `args`, or `Err` when no overload matches.
pub(crate) fn result_type(name: &str, target: Option<&Type>, args: &[Type]) -> Result<Type, ()> {
    use Type as T;
    let dynish = |t: &Type| t.is_dyn();
    let any_dyn = target.is_some_and(dynish) || args.iter().any(dynish);
    let s = T::string();
    let r = match (name, target, args) {
        ("_==_" | "_!=_", None, [_, _]) => T::Bool,
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
            if any_dyn || comparable_types(a, b) {
                T::Bool
            } else {
                return Err(());
            }
        }
        ("@in", None, [_, T::List { .. } | T::Map { .. } | T::Dyn]) => T::Bool,
        ("_+_", None, [a, b]) => match (a, b) {
            (T::Int, T::Int) => T::Int,
            (T::Uint, T::Uint) => T::Uint,
            (T::Double, T::Double) => T::Double,
            (T::String { max: x }, T::String { max: y }) => T::String { max: x + y },
            (T::Bytes { max: x }, T::Bytes { max: y }) => T::Bytes { max: x + y },
            // An accumulator's `[]` takes the element type of what is added to it (cel-go unifies its type
            // parameter).
            (T::List { elem, max: x }, T::List { elem: e2, max: y }) => T::List {
                elem: if elem.is_dyn() { e2.clone() } else { elem.clone() },
                max: x + y,
            },
            (T::Duration, T::Duration) => T::Duration,
            (T::Timestamp, T::Duration) | (T::Duration, T::Timestamp) => T::Timestamp,
            (T::Dyn, t) | (t, T::Dyn) if !matches!(t, T::Bool | T::Null) => {
                if matches!(t, T::Timestamp) {
                    T::Dyn
                } else {
                    t.clone()
                }
            }
            _ => return Err(()),
        },
        ("_-_", None, [a, b]) => match (a, b) {
            (T::Int, T::Int) => T::Int,
            (T::Uint, T::Uint) => T::Uint,
            (T::Double, T::Double) => T::Double,
            (T::Duration, T::Duration) | (T::Timestamp, T::Duration) => a.clone(),
            (T::Timestamp, T::Timestamp) => T::Duration,
            (T::Dyn, _) | (_, T::Dyn) => T::Dyn,
            _ => return Err(()),
        },
        ("_*_" | "_/_", None, [a, b]) | ("_%_", None, [a, b]) => match (a, b) {
            (T::Int, T::Int) | (T::Uint, T::Uint) => a.clone(),
            (T::Double, T::Double) if name != "_%_" => T::Double,
            (T::Dyn, t) | (t, T::Dyn) if matches!(t, T::Int | T::Uint | T::Double | T::Dyn) => t.clone(),
            _ => return Err(()),
        },
        ("-_", None, [a]) => match a {
            T::Int | T::Double | T::Dyn => a.clone(),
            _ => return Err(()),
        },
        ("!_", None, [T::Bool | T::Dyn]) => T::Bool,
        ("size", None, [a]) | ("size", Some(a), []) => match a {
            T::String { .. } | T::Bytes { .. } | T::List { .. } | T::Map { .. } | T::Dyn => T::Int,
            _ => return Err(()),
        },
        ("int", None, [_]) => T::Int,
        ("uint", None, [_]) => T::Uint,
        ("double", None, [_]) => T::Double,
        ("string", None, [_]) => s,
        ("bytes", None, [_]) => T::Bytes { max: 0 },
        ("bool", None, [_]) => T::Bool,
        ("dyn", None, [_]) => T::Dyn,
        ("type", None, [_]) => T::Kind,
        ("duration", None, [T::String { .. } | T::Dyn | T::Duration]) => T::Duration,
        ("timestamp", None, [T::String { .. } | T::Dyn | T::Timestamp | T::Int]) => T::Timestamp,
        (
            "contains" | "startsWith" | "endsWith" | "matches",
            Some(T::String { .. } | T::Dyn),
            [T::String { .. } | T::Dyn],
        ) => T::Bool,
        ("matches", None, [T::String { .. } | T::Dyn, T::String { .. } | T::Dyn]) => T::Bool,
        (
            "getFullYear" | "getMonth" | "getDayOfMonth" | "getDate" | "getDayOfYear" | "getDayOfWeek" | "getHours"
            | "getMinutes" | "getSeconds" | "getMilliseconds",
            Some(T::Timestamp | T::Duration | T::Dyn),
            [] | [T::String { .. }],
        ) => T::Int,
        // cel-go's strings extension.
        ("charAt", Some(T::String { .. } | T::Dyn), [T::Int | T::Dyn]) => s,
        ("indexOf" | "lastIndexOf", Some(T::String { .. }), [T::String { .. } | T::Dyn])
        | ("indexOf" | "lastIndexOf", Some(T::String { .. }), [T::String { .. } | T::Dyn, T::Int | T::Dyn]) => T::Int,
        ("lowerAscii" | "upperAscii" | "trim", Some(T::String { max }), []) => T::String { max: *max },
        ("replace", Some(T::String { .. } | T::Dyn), [_, _] | [_, _, _]) => s,
        ("split", Some(T::String { .. } | T::Dyn), [_] | [_, _]) => T::list(s),
        ("substring", Some(T::String { max }), [_] | [_, _]) => T::String { max: *max },
        ("join", Some(T::List { .. } | T::Dyn), [] | [_]) => s,
        ("strings.quote", None, [_]) => s,
        // cel-go's sets extension.
        (
            "sets.contains" | "sets.equivalent" | "sets.intersects",
            None,
            [T::List { .. } | T::Dyn, T::List { .. } | T::Dyn],
        ) => T::Bool,
        // Optionals.
        ("optional.of" | "optional.ofNonZeroValue", None, [a]) => T::Optional(Box::new(a.clone())),
        ("optional.none", None, []) => T::Optional(Box::new(T::Dyn)),
        ("hasValue", Some(T::Optional(_) | T::Dyn), []) => T::Bool,
        ("value", Some(T::Optional(t)), []) => (**t).clone(),
        ("orValue", Some(T::Optional(t)), [_]) => (**t).clone(),
        ("or", Some(t @ T::Optional(_)), [_]) => t.clone(),
        ("value" | "orValue" | "or", Some(T::Dyn), _) => T::Dyn,
        ("_?._", None, [t, _]) => match t {
            T::Optional(inner) => field_type_optional(inner, args),
            other => field_type_optional(other, args),
        },
        ("_[?_]", None, [c, _]) => T::Optional(Box::new(element_type(c))),
        ("_[_]", None, [c, _]) => element_type(c),
        (MAP_INSERT, None, _) => return map_insert_type(args),
        ("format", Some(T::String { .. } | T::Dyn), [T::List { .. } | T::Dyn]) => s,
        _ => {
            return kubernetes::result_type(name, target, args).or(if any_dyn { Ok(T::Dyn) } else { Err(()) });
        }
    };
    Ok(r)
}

fn field_type_optional(t: &Type, _args: &[Type]) -> Type {
    let _ = t;
    Type::Optional(Box::new(Type::Dyn))
}

fn element_type(c: &Type) -> Type {
    match c {
        Type::List { elem, .. } => (**elem).clone(),
        Type::Map { value, .. } => (**value).clone(),
        _ => Type::Dyn,
    }
}

fn comparable_types(a: &Type, b: &Type) -> bool {
    use Type as T;
    let num = |t: &Type| matches!(t, T::Int | T::Uint | T::Double);
    (num(a) && num(b))
        || matches!(
            (a, b),
            (T::String { .. }, T::String { .. })
                | (T::Bytes { .. }, T::Bytes { .. })
                | (T::Bool, T::Bool)
                | (T::Duration, T::Duration)
                | (T::Timestamp, T::Timestamp)
        )
}

/// The cost cel-go charges a call at runtime: 1, or what its arguments' sizes make it.
pub(crate) fn runtime_cost(name: &str, target: Option<&Value>, args: &[Value]) -> u64 {
    let tenth = |n: u64| n.div_ceil(10);
    let size = |v: &Value| v.size();
    match (name, target, args) {
        ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => match (a, b) {
            (Value::String(_), Value::String(_)) | (Value::Bytes(_), Value::Bytes(_)) => {
                1 + tenth(size(a).min(size(b)))
            }
            (Value::List(_) | Value::Map(_), _) => 1 + size(a).min(size(b)),
            _ => 1,
        },
        ("_+_", None, [Value::String(_), Value::String(_)]) => 1 + tenth(size(&args[0]) + size(&args[1])),
        ("_+_", None, [Value::List(_), Value::List(_)]) => 1 + size(&args[0]) + size(&args[1]),
        ("@in", None, [_, Value::List(l)]) => 1 + l.len() as u64,
        ("contains" | "startsWith" | "endsWith", Some(t), [a]) => 1 + tenth(size(t) * size(a).max(1)),
        ("matches", Some(t), [re]) | ("matches", None, [t, re]) => 1 + (size(t) * size(re)).div_ceil(4),
        ("string" | "bytes", None, [a @ (Value::String(_) | Value::Bytes(_))]) => 1 + tenth(size(a)),
        (
            "lowerAscii" | "upperAscii" | "trim" | "reverse" | "charAt" | "indexOf" | "lastIndexOf" | "replace"
            | "split" | "substring",
            Some(t @ Value::String(_)),
            _,
        ) => 1 + tenth(size(t)),
        ("join", Some(t), _) => 1 + t.size(),
        _ => kubernetes::runtime_cost(name, target, args),
    }
}

/// Calls `name`.
pub(crate) fn call(name: &str, target: Option<Value>, args: Vec<Value>) -> Result<Value, Fail> {
    use Value as V;
    let b = V::Bool;
    Ok(match (name, target.as_ref(), args.as_slice()) {
        ("_==_", None, [x, y]) => b(x.equals(y)),
        ("_!=_", None, [x, y]) => b(!x.equals(y)),
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [x, y]) => {
            if !x.comparable(y) {
                return Err(NO_OVERLOAD.into());
            }
            let o = x.compare(y);
            b(match name {
                "_<_" => o == Some(Ordering::Less),
                "_<=_" => matches!(o, Some(Ordering::Less | Ordering::Equal)),
                "_>_" => o == Some(Ordering::Greater),
                _ => matches!(o, Some(Ordering::Greater | Ordering::Equal)),
            })
        }
        ("@in", None, [x, V::List(l)]) => b(l.iter().any(|i| i.equals(x))),
        ("@in", None, [x, V::Map(m)]) => b(Key::from_value(x).is_some_and(|k| m.contains_key(&k))),
        ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", None, [x, y]) => arithmetic(name, x, y)?,
        ("-_", None, [V::Int(i)]) => V::Int(i.checked_neg().ok_or("integer overflow")?),
        ("-_", None, [V::Double(d)]) => V::Double(-d),
        ("!_", None, [V::Bool(x)]) => b(!x),
        ("size", None, [x]) | ("size", Some(x), []) => match x {
            V::String(_) | V::Bytes(_) | V::List(_) | V::Map(_) => V::Int(x.size() as i64),
            _ => return Err(NO_OVERLOAD.into()),
        },
        (
            "int" | "uint" | "double" | "string" | "bytes" | "bool" | "dyn" | "type" | "duration" | "timestamp",
            None,
            [x],
        ) => convert(name, x)?,
        ("contains", Some(V::String(s)), [V::String(t)]) => b(s.contains(&**t)),
        ("startsWith", Some(V::String(s)), [V::String(t)]) => b(s.starts_with(&**t)),
        ("endsWith", Some(V::String(s)), [V::String(t)]) => b(s.ends_with(&**t)),
        ("matches", Some(V::String(s)), [V::String(re)]) | ("matches", None, [V::String(s), V::String(re)]) => {
            b(kubernetes::regex(re)?.is_match(s))
        }
        (
            "getFullYear" | "getMonth" | "getDayOfMonth" | "getDate" | "getDayOfYear" | "getDayOfWeek" | "getHours"
            | "getMinutes" | "getSeconds" | "getMilliseconds",
            Some(t),
            tz,
        ) => time_part(name, t, tz)?,
        ("charAt", Some(V::String(s)), [V::Int(i)]) => {
            let chars: Vec<char> = s.chars().collect();
            let i = usize::try_from(*i).map_err(|_| format!("index out of range: {i}"))?;
            match i.cmp(&chars.len()) {
                Ordering::Less => V::str(&chars[i].to_string()),
                Ordering::Equal => V::str(""),
                Ordering::Greater => return Err(format!("index out of range: {i}")),
            }
        }
        ("indexOf" | "lastIndexOf", Some(V::String(s)), [V::String(t), rest @ ..]) => string_index(name, s, t, rest)?,
        ("lowerAscii", Some(V::String(s)), []) => V::str(&s.to_ascii_lowercase()),
        ("upperAscii", Some(V::String(s)), []) => V::str(&s.to_ascii_uppercase()),
        ("trim", Some(V::String(s)), []) => V::str(s.trim()),
        ("replace", Some(V::String(s)), [V::String(a), V::String(r), rest @ ..]) => {
            let n = match rest {
                [] => -1,
                [V::Int(n)] => *n,
                _ => return Err(NO_OVERLOAD.into()),
            };
            V::str(&if n < 0 {
                s.replace(&**a, r)
            } else {
                s.replacen(&**a, r, n as usize)
            })
        }
        ("split", Some(V::String(s)), [V::String(sep), rest @ ..]) => {
            let n = match rest {
                [] => -1,
                [V::Int(n)] => *n,
                _ => return Err(NO_OVERLOAD.into()),
            };
            let parts: Vec<Value> = match n {
                0 => Vec::new(),
                n if n < 0 => go_split(s, sep, usize::MAX),
                n => go_split(s, sep, n as usize),
            };
            V::list(parts)
        }
        ("substring", Some(V::String(s)), [V::Int(a), rest @ ..]) => {
            let chars: Vec<char> = s.chars().collect();
            let end = match rest {
                [] => chars.len() as i64,
                [V::Int(e)] => *e,
                _ => return Err(NO_OVERLOAD.into()),
            };
            if *a < 0 || *a as usize > chars.len() {
                return Err(format!("index out of range: {a}"));
            }
            if end < 0 || end as usize > chars.len() {
                return Err(format!("index out of range: {end}"));
            }
            if end < *a {
                return Err(format!("invalid substring range. start: {a}, end: {end}"));
            }
            V::str(&chars[*a as usize..end as usize].iter().collect::<String>())
        }
        ("join", Some(V::List(l)), rest) => {
            let sep = match rest {
                [] => "",
                [V::String(s)] => s,
                _ => return Err(NO_OVERLOAD.into()),
            };
            let mut parts = Vec::new();
            for i in l.iter() {
                match i {
                    V::String(s) => parts.push(s.to_string()),
                    _ => return Err(NO_OVERLOAD.into()),
                }
            }
            V::str(&parts.join(sep))
        }
        ("strings.quote", None, [V::String(s)]) => V::str(&super::strings::quote(s)),
        ("sets.contains", None, [V::List(a), V::List(c)]) => b(c.iter().all(|x| a.iter().any(|y| x.equals(y)))),
        ("sets.equivalent", None, [V::List(a), V::List(c)]) => {
            b(c.iter().all(|x| a.iter().any(|y| x.equals(y))) && a.iter().all(|x| c.iter().any(|y| x.equals(y))))
        }
        ("sets.intersects", None, [V::List(a), V::List(c)]) => b(c.iter().any(|x| a.iter().any(|y| x.equals(y)))),
        ("optional.of", None, [x]) => V::Optional(Some(Box::new(x.clone()))),
        ("optional.ofNonZeroValue", None, [x]) => V::Optional((!is_zero(x)).then(|| Box::new(x.clone()))),
        ("optional.none", None, []) => V::Optional(None),
        ("hasValue", Some(V::Optional(o)), []) => b(o.is_some()),
        ("value", Some(V::Optional(o)), []) => o.as_deref().cloned().ok_or("optional.none() dereference")?,
        ("orValue", Some(V::Optional(o)), [x]) => o.as_deref().cloned().unwrap_or_else(|| x.clone()),
        ("or", Some(V::Optional(o)), [x @ V::Optional(_)]) => match o {
            Some(v) => V::Optional(Some(v.clone())),
            None => x.clone(),
        },
        ("_[_]", None, [c, i]) => index(c, i)?,
        (MAP_INSERT, None, _) => map_insert(args)?,
        ("format", Some(V::String(f)), [V::List(l)]) => V::str(&super::strings::format(f, l)?),
        ("_[?_]", None, [V::Optional(None), _]) => V::Optional(None),
        ("_[?_]", None, [V::Optional(Some(c)), i]) => optional_index(c, i)?,
        ("_[?_]", None, [c, i]) => optional_index(c, i)?,
        ("_?._", None, [V::Optional(None), _]) => V::Optional(None),
        ("_?._", None, [V::Optional(Some(c)), f]) => optional_index(c, f)?,
        ("_?._", None, [c, f]) => optional_index(c, f)?,
        (name, _, _) => return kubernetes::call(name, target, args),
    })
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Double(d) => *d == 0.0,
        Value::String(_) | Value::Bytes(_) | Value::List(_) | Value::Map(_) => v.size() == 0,
        Value::Duration(d) | Value::Timestamp(d) => *d == 0,
        _ => false,
    }
}

/// Go's `strings.SplitN`.
fn go_split(s: &str, sep: &str, n: usize) -> Vec<Value> {
    if sep.is_empty() {
        let chars: Vec<char> = s.chars().collect();
        let mut out: Vec<Value> = Vec::new();
        for (i, c) in chars.iter().enumerate() {
            if out.len() + 1 == n {
                out.push(Value::str(&chars[i..].iter().collect::<String>()));
                return out;
            }
            out.push(Value::str(&c.to_string()));
        }
        return out;
    }
    s.splitn(n, sep).map(Value::str).collect()
}

fn string_index(name: &str, s: &str, t: &str, rest: &[Value]) -> Result<Value, Fail> {
    let chars: Vec<char> = s.chars().collect();
    let needle: Vec<char> = t.chars().collect();
    let last = name == "lastIndexOf";
    let from = match rest {
        [] => {
            if last {
                chars.len() as i64
            } else {
                0
            }
        }
        [Value::Int(i)] => *i,
        _ => return Err(NO_OVERLOAD.into()),
    };
    if from < 0 || from as usize > chars.len() {
        return Err(format!("index out of range: {from}"));
    }
    let from = from as usize;
    let at = |i: usize| i + needle.len() <= chars.len() && chars[i..i + needle.len()] == needle[..];
    let found = if last {
        (0..=from.min(chars.len())).rev().find(|i| at(*i))
    } else {
        (from..=chars.len()).find(|i| at(*i))
    };
    Ok(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index(c: &Value, i: &Value) -> Result<Value, Fail> {
    match (c, i) {
        (Value::List(l), _) => {
            let n = match i {
                Value::Int(n) => *n,
                Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                Value::Double(d) if d.fract() == 0.0 => *d as i64,
                _ => return Err(NO_OVERLOAD.into()),
            };
            usize::try_from(n)
                .ok()
                .and_then(|n| l.get(n))
                .cloned()
                .ok_or_else(|| format!("index out of bounds: {n}"))
        }
        (Value::Map(m), _) => {
            let k = Key::from_value(i).ok_or(NO_OVERLOAD)?;
            m.get(&k)
                .cloned()
                .ok_or_else(|| format!("no such key: {}", key_text(&k)))
        }
        _ => Err(NO_OVERLOAD.into()),
    }
}

fn optional_index(c: &Value, i: &Value) -> Result<Value, Fail> {
    match index(c, i) {
        Ok(v) => Ok(Value::Optional(Some(Box::new(v)))),
        Err(e) if e.starts_with("no such key") || e.starts_with("index out of bounds") => Ok(Value::Optional(None)),
        Err(e) => Err(e),
    }
}

fn time_part(name: &str, t: &Value, tz: &[Value]) -> Result<Value, Fail> {
    if !tz.is_empty() && !matches!(tz, [Value::String(z)] if matches!(&**z, "UTC" | "Z" | "+00:00")) {
        return Err("unsupported time zone (only UTC is supported here)".into());
    }
    match t {
        Value::Duration(d) => Ok(Value::Int(match name {
            "getHours" => d / (3600 * NANOS),
            "getMinutes" => d / (60 * NANOS),
            "getSeconds" => d / NANOS,
            "getMilliseconds" => d % NANOS / 1_000_000,
            _ => return Err(NO_OVERLOAD.into()),
        } as i64)),
        Value::Timestamp(ts) => {
            let secs = ts.div_euclid(NANOS) as i64;
            let days = secs.div_euclid(86400);
            let (y, m, d) = civil_from_days(days);
            let (m, d) = (i64::from(m), i64::from(d));
            let s = secs.rem_euclid(86400);
            Ok(Value::Int(match name {
                "getFullYear" => y,
                "getMonth" => m - 1,
                "getDayOfMonth" => d - 1,
                "getDate" => d,
                "getDayOfYear" => days - days_from_civil(y, 1, 1),
                "getDayOfWeek" => (days + 4).rem_euclid(7),
                "getHours" => s / 3600,
                "getMinutes" => s % 3600 / 60,
                "getSeconds" => s % 60,
                _ => (ts.rem_euclid(NANOS) / 1_000_000) as i64,
            }))
        }
        _ => Err(NO_OVERLOAD.into()),
    }
}

/// cel-go's internal `cel.@mapInsert(map, key, value)` / `cel.@mapInsert(map, entries)`, which the map transforms of
/// [`macros`](super::macros) accumulate with.
pub(crate) const MAP_INSERT: &str = "cel.@mapInsert";

/// The type of [`MAP_INSERT`]'s result.
pub(crate) fn map_insert_type(args: &[Type]) -> Result<Type, ()> {
    use Type as T;
    match args {
        [T::Map { .. } | T::Dyn, k, v] => Ok(T::Map {
            key: Box::new(k.clone()),
            value: Box::new(v.clone()),
            max: 0,
        }),
        [m @ (T::Map { .. } | T::Dyn), e @ (T::Map { .. } | T::Dyn)] => {
            Ok(if e.is_dyn() { m.clone() } else { e.clone() })
        }
        _ => Err(()),
    }
}

/// [`MAP_INSERT`]: the map with a key and value, or another map's entries, added; a key already there is an error.
pub(crate) fn map_insert(args: Vec<Value>) -> Result<Value, String> {
    use Value as V;
    let mut it = args.into_iter();
    let Some(V::Map(m)) = it.next() else {
        return Err(NO_OVERLOAD.into());
    };
    let entries: Vec<(Value, Value)> = match (it.next(), it.next()) {
        (Some(V::Map(e)), None) => e.iter().map(|(k, v)| (k.to_value(), v.clone())).collect(),
        (Some(k), Some(v)) => vec![(k, v)],
        _ => return Err(NO_OVERLOAD.into()),
    };
    let mut m = std::sync::Arc::unwrap_or_clone(m);
    for (k, v) in entries {
        let key = Key::from_value(&k).ok_or("unsupported key type")?;
        if m.contains_key(&key) {
            return Err(format!("insert failed: key {} already exists", key_text(&key)));
        }
        m.insert(key, v);
    }
    Ok(V::Map(std::sync::Arc::new(m)))
}
