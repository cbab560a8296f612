//! CEL's type conversions (`int()`, `uint()`, `double()`, `string()`, `bytes()`, `bool()`, `dyn()`, `type()`,
//! `duration()`, `timestamp()`), as cel-go's `ConvertToType` of each value converts.

use std::sync::Arc;

use super::errors::{Fail, NO_OVERLOAD};
use super::time::{format_duration, format_timestamp, parse_duration, parse_timestamp};
use super::value::Value;
use crate::api::strconv::format_float_g;

/// `to(x)`: `x` converted to the type named `to`.
pub(crate) fn convert(to: &str, x: &Value) -> Result<Value, Fail> {
    use Value as V;
    const RANGE: &str = "range error";
    Ok(match (to, x) {
        ("dyn", x) => x.clone(),
        ("type", x) => V::Type(Arc::from(x.type_name())),
        ("int", V::Int(i)) => V::Int(*i),
        ("int", V::Uint(u)) => V::Int(i64::try_from(*u).map_err(|_| RANGE)?),
        ("int", V::Double(d)) => {
            if !d.is_finite() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                return Err(RANGE.into());
            }
            V::Int(*d as i64)
        }
        ("int", V::String(s)) => V::Int(s.parse().map_err(|_| format!("cannot convert string '{s}' to int"))?),
        ("int", V::Duration(d)) => V::Int(i64::try_from(*d).map_err(|_| RANGE)?),
        ("int", V::Timestamp(t)) => V::Int(i64::try_from(t.div_euclid(1_000_000_000)).map_err(|_| RANGE)?),
        ("uint", V::Uint(u)) => V::Uint(*u),
        ("uint", V::Int(i)) => V::Uint(u64::try_from(*i).map_err(|_| RANGE)?),
        ("uint", V::Double(d)) => {
            if !d.is_finite() || *d < 0.0 || *d >= 1.8446744073709552e19 {
                return Err(RANGE.into());
            }
            V::Uint(*d as u64)
        }
        ("uint", V::String(s)) => V::Uint(s.parse().map_err(|_| format!("cannot convert string '{s}' to uint"))?),
        ("double", V::Double(d)) => V::Double(*d),
        ("double", V::Int(i)) => V::Double(*i as f64),
        ("double", V::Uint(u)) => V::Double(*u as f64),
        ("double", V::String(s)) => V::Double(
            s.parse()
                .map_err(|_| format!("cannot convert string '{s}' to double"))?,
        ),
        ("string", V::String(s)) => V::String(s.clone()),
        ("string", V::Int(i)) => V::str(&i.to_string()),
        ("string", V::Uint(u)) => V::str(&u.to_string()),
        ("string", V::Double(d)) => V::str(&format_float_g(*d)),
        ("string", V::Bool(b)) => V::str(&b.to_string()),
        ("string", V::Bytes(b)) => {
            V::str(std::str::from_utf8(b).map_err(|_| "invalid UTF-8 in bytes, cannot convert to string")?)
        }
        ("string", V::Duration(d)) => V::str(&format_duration(*d)),
        ("string", V::Timestamp(t)) => V::str(&format_timestamp(*t)),
        ("string", v @ (V::Ip(_) | V::Cidr(..) | V::Quantity(_) | V::Url(_))) => {
            V::str(super::value::to_json(v).as_str().unwrap_or(""))
        }
        ("bytes", V::Bytes(b)) => V::Bytes(b.clone()),
        ("bytes", V::String(s)) => V::Bytes(Arc::from(s.as_bytes())),
        ("bool", V::Bool(b)) => V::Bool(*b),
        ("bool", V::String(s)) => V::Bool(match &**s {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
            "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
            _ => return Err("type conversion error from 'string' to 'bool'".into()),
        }),
        ("duration", V::Duration(d)) => V::Duration(*d),
        ("duration", V::String(s)) => V::Duration(parse_duration(s).ok_or_else(|| format!("invalid duration: {s:?}"))?),
        ("timestamp", V::Timestamp(t)) => V::Timestamp(*t),
        ("timestamp", V::Int(i)) => V::Timestamp(i128::from(*i) * 1_000_000_000),
        ("timestamp", V::String(s)) => {
            V::Timestamp(parse_timestamp(s).ok_or_else(|| format!("timestamp parsing error: {s:?}"))?)
        }
        _ => return Err(NO_OVERLOAD.into()),
    })
}
