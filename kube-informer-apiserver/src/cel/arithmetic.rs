//! CEL's arithmetic operators (`_+_`, `_-_`, `_*_`, `_/_`, `_%_`) on the values that define them, with cel-go's
//! overflow and division errors (`common/types`' `Adder`, `Subtractor`, … of each type).

use std::sync::Arc;

use super::errors::{Fail, NO_OVERLOAD};
use super::value::Value;

/// `x op y` for an arithmetic operator `op`.
pub(crate) fn arithmetic(op: &str, x: &Value, y: &Value) -> Result<Value, Fail> {
    use Value as V;
    const OVERFLOW: &str = "integer overflow";
    Ok(match (op, x, y) {
        ("_+_", V::Int(a), V::Int(b)) => V::Int(a.checked_add(*b).ok_or(OVERFLOW)?),
        ("_-_", V::Int(a), V::Int(b)) => V::Int(a.checked_sub(*b).ok_or(OVERFLOW)?),
        ("_*_", V::Int(a), V::Int(b)) => V::Int(a.checked_mul(*b).ok_or(OVERFLOW)?),
        ("_/_", V::Int(_), V::Int(0)) | ("_/_", V::Uint(_), V::Uint(0)) => return Err("division by zero".into()),
        ("_%_", V::Int(_), V::Int(0)) | ("_%_", V::Uint(_), V::Uint(0)) => return Err("modulus by zero".into()),
        ("_/_", V::Int(a), V::Int(b)) => V::Int(a.checked_div(*b).ok_or(OVERFLOW)?),
        ("_%_", V::Int(a), V::Int(b)) => V::Int(a.checked_rem(*b).ok_or(OVERFLOW)?),
        ("_+_", V::Uint(a), V::Uint(b)) => V::Uint(a.checked_add(*b).ok_or("unsigned integer overflow")?),
        ("_-_", V::Uint(a), V::Uint(b)) => V::Uint(a.checked_sub(*b).ok_or("unsigned integer overflow")?),
        ("_*_", V::Uint(a), V::Uint(b)) => V::Uint(a.checked_mul(*b).ok_or("unsigned integer overflow")?),
        ("_/_", V::Uint(a), V::Uint(b)) => V::Uint(a / b),
        ("_%_", V::Uint(a), V::Uint(b)) => V::Uint(a % b),
        ("_+_", V::Double(a), V::Double(b)) => V::Double(a + b),
        ("_-_", V::Double(a), V::Double(b)) => V::Double(a - b),
        ("_*_", V::Double(a), V::Double(b)) => V::Double(a * b),
        ("_/_", V::Double(a), V::Double(b)) => V::Double(a / b),
        ("_+_", V::String(a), V::String(b)) => V::str(&format!("{a}{b}")),
        ("_+_", V::Bytes(a), V::Bytes(b)) => V::Bytes(Arc::from([&a[..], &b[..]].concat())),
        ("_+_", V::List(a), V::List(b)) => V::list(a.iter().chain(b.iter()).cloned().collect()),
        ("_+_", V::Duration(a), V::Duration(b)) => V::Duration(a + b),
        ("_-_", V::Duration(a), V::Duration(b)) => V::Duration(a - b),
        ("_+_", V::Timestamp(a), V::Duration(b)) | ("_+_", V::Duration(b), V::Timestamp(a)) => V::Timestamp(a + b),
        ("_-_", V::Timestamp(a), V::Duration(b)) => V::Timestamp(a - b),
        ("_-_", V::Timestamp(a), V::Timestamp(b)) => V::Duration(a - b),
        _ => return Err(NO_OVERLOAD.into()),
    })
}
