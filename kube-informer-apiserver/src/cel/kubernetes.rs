//! k8s.io/apiserver's CEL libraries (`pkg/cel/library`): lists (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//! `lastIndexOf`), regex (`find`, `findAll`), URLs, quantity, IP, CIDR, format and semver.

use std::cmp::Ordering;
use std::net::IpAddr;
use std::sync::Arc;

use super::arithmetic::arithmetic;
use super::errors::{Fail, NO_OVERLOAD};
use super::types::Type;
use super::value::{Semver, Url, Value};
use crate::api::quantity::Quantity;

const QUANTITY: &str = "kubernetes.Quantity";
const IP: &str = "net.IP";
const CIDR: &str = "net.CIDR";
const URL: &str = "kubernetes.URL";
const SEMVER: &str = "kubernetes.Semver";
const FORMAT: &str = "kubernetes.NamedFormat";

/// The named formats of the format library.
const FORMATS: [&str; 13] = [
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

pub(crate) fn result_type(name: &str, target: Option<&Type>, args: &[Type]) -> Result<Type, ()> {
    use Type as T;
    let op = |n: &'static str| T::Opaque(n);
    let is = |t: Option<&Type>, n: &str| matches!(t, Some(T::Opaque(x)) if *x == n) || matches!(t, Some(T::Dyn));
    let string_arg = matches!(args, [T::String { .. } | T::Dyn]);
    Ok(match (name, target, args) {
        // The lists library's overloads: sums of numbers and durations, orders of comparable types.
        ("isSorted", Some(T::List { elem, .. }), []) if comparable(elem) => T::Bool,
        ("sum", Some(T::List { elem, .. }), [])
            if matches!(**elem, T::Int | T::Uint | T::Double | T::Duration | T::Dyn) =>
        {
            (**elem).clone()
        }
        ("min" | "max", Some(T::List { elem, .. }), []) if comparable(elem) => (**elem).clone(),
        ("indexOf" | "lastIndexOf", Some(T::List { .. }), [_]) => T::Int,
        ("find", Some(T::String { .. }), [T::String { .. } | T::Dyn]) => T::string(),
        ("findAll", Some(T::String { .. }), [T::String { .. } | T::Dyn] | [T::String { .. } | T::Dyn, T::Int]) => {
            T::list(T::string())
        }
        ("url", None, _) if string_arg => op(URL),
        ("isURL" | "isQuantity" | "isIP" | "isCIDR" | "isSemver" | "ip.isCanonical", None, _) if string_arg => T::Bool,
        ("getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath", t, []) if is(t, URL) => T::string(),
        ("getQuery", t, []) if is(t, URL) => T::map(T::string(), T::list(T::string())),
        ("quantity", None, _) if string_arg => op(QUANTITY),
        ("sign" | "asInteger", t, []) if is(t, QUANTITY) => T::Int,
        ("isInteger", t, []) if is(t, QUANTITY) => T::Bool,
        ("asApproximateFloat", t, []) if is(t, QUANTITY) => T::Double,
        ("isGreaterThan" | "isLessThan", t, [a]) if is(t, QUANTITY) && a.fits(&op(QUANTITY)) => T::Bool,
        ("compareTo", t, [a]) if is(t, QUANTITY) && a.fits(&op(QUANTITY)) => T::Int,
        ("add" | "sub", t, [T::Int | T::Opaque(QUANTITY) | T::Dyn]) if is(t, QUANTITY) => op(QUANTITY),
        ("ip", None, _) if string_arg => op(IP),
        ("family", t, []) if is(t, IP) => T::Int,
        ("isUnspecified" | "isLoopback" | "isLinkLocalMulticast" | "isLinkLocalUnicast" | "isGlobalUnicast", t, [])
            if is(t, IP) =>
        {
            T::Bool
        }
        ("cidr", None, _) if string_arg => op(CIDR),
        ("containsIP", t, [T::String { .. } | T::Opaque(IP) | T::Dyn]) if is(t, CIDR) => T::Bool,
        ("containsCIDR", t, [T::String { .. } | T::Opaque(CIDR) | T::Dyn]) if is(t, CIDR) => T::Bool,
        ("ip", t @ Some(_), []) if is(t, CIDR) => op(IP),
        ("masked", t, []) if is(t, CIDR) => op(CIDR),
        ("prefixLength", t, []) if is(t, CIDR) => T::Int,
        ("semver", None, [T::String { .. } | T::Dyn] | [T::String { .. } | T::Dyn, T::Bool]) => op(SEMVER),
        ("isSemver", None, [T::String { .. } | T::Dyn] | [T::String { .. } | T::Dyn, T::Bool]) => T::Bool,
        ("major" | "minor" | "patch", t, []) if is(t, SEMVER) => T::Int,
        ("isGreaterThan" | "isLessThan", t, [_]) if is(t, SEMVER) => T::Bool,
        ("compareTo", t, [_]) if is(t, SEMVER) => T::Int,
        ("format.named", None, _) if string_arg => T::Optional(Box::new(op(FORMAT))),
        (f, None, []) if f.strip_prefix("format.").is_some_and(|n| FORMATS.contains(&n)) => op(FORMAT),
        ("validate", t, [T::String { .. } | T::Dyn]) if is(t, FORMAT) => T::Optional(Box::new(T::list(T::string()))),
        _ => return Err(()),
    })
}

/// The element types the lists library orders (`isSorted`, `min`, `max`).
fn comparable(t: &Type) -> bool {
    matches!(
        t,
        Type::Int
            | Type::Uint
            | Type::Double
            | Type::Bool
            | Type::String { .. }
            | Type::Bytes { .. }
            | Type::Duration
            | Type::Timestamp
            | Type::Dyn
    )
}

pub(crate) fn runtime_cost(name: &str, target: Option<&Value>, args: &[Value]) -> u64 {
    let tenth = |n: u64| n.div_ceil(10);
    match (name, target, args) {
        ("isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", Some(l @ Value::List(_)), _) => 1 + l.size(),
        ("find" | "findAll", Some(s), [re, ..]) => 1 + (s.size() * re.size()).div_ceil(4),
        (
            "url" | "isURL" | "quantity" | "isQuantity" | "ip" | "isIP" | "cidr" | "isCIDR" | "semver" | "isSemver",
            None,
            [s, ..],
        ) => 1 + tenth(s.size()),
        ("validate", Some(_), [s]) => 1 + tenth(s.size()),
        _ => 1,
    }
}

/// A compiled RE2 pattern (regex-lite speaks RE2's syntax, as Go's regexp does); the last patterns compiled are
/// kept (as cel-go compiles a constant pattern once per program).
pub(crate) fn regex(pattern: &str) -> Result<regex_lite::Regex, Fail> {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    static CACHE: LazyLock<Mutex<HashMap<String, regex_lite::Regex>>> = LazyLock::new(|| Mutex::new(HashMap::new()));
    if let Some(re) = CACHE.lock().ok().and_then(|c| c.get(pattern).cloned()) {
        return Ok(re);
    }
    let re = regex_lite::Regex::new(pattern).map_err(|e| format!("error parsing regexp: {e}"))?;
    if let Ok(mut c) = CACHE.lock() {
        if c.len() >= 256 {
            c.clear();
        }
        c.insert(pattern.to_owned(), re.clone());
    }
    Ok(re)
}

pub(crate) fn call(name: &str, target: Option<Value>, args: Vec<Value>) -> Result<Value, Fail> {
    use Value as V;
    Ok(match (name, target.as_ref(), args.as_slice()) {
        ("isSorted", Some(V::List(l)), []) => {
            let mut sorted = true;
            for w in l.windows(2) {
                if !w[0].comparable(&w[1]) {
                    return Err(NO_OVERLOAD.into());
                }
                if w[0].compare(&w[1]) == Some(Ordering::Greater) {
                    sorted = false;
                }
            }
            V::Bool(sorted)
        }
        ("sum", Some(V::List(l)), []) => {
            let mut acc: Option<Value> = None;
            for x in l.iter() {
                acc = Some(match acc {
                    None => x.clone(),
                    Some(a) => arithmetic("_+_", &a, x)?,
                });
            }
            acc.unwrap_or(V::Int(0))
        }
        ("min" | "max", Some(V::List(l)), []) => {
            let mut best: Option<&Value> = None;
            for x in l.iter() {
                best = Some(match best {
                    None => x,
                    Some(b) => {
                        if !b.comparable(x) {
                            return Err(NO_OVERLOAD.into());
                        }
                        let o = x.compare(b);
                        let better = if name == "min" {
                            Ordering::Less
                        } else {
                            Ordering::Greater
                        };
                        if o == Some(better) { x } else { b }
                    }
                });
            }
            best.cloned().ok_or_else(|| format!("{name} called on empty list"))?
        }
        ("indexOf", Some(V::List(l)), [x]) => V::Int(l.iter().position(|i| i.equals(x)).map_or(-1, |i| i as i64)),
        ("lastIndexOf", Some(V::List(l)), [x]) => V::Int(l.iter().rposition(|i| i.equals(x)).map_or(-1, |i| i as i64)),
        ("find", Some(V::String(s)), [V::String(re)]) => V::str(regex(re)?.find(s).map_or("", |m| m.as_str())),
        ("findAll", Some(V::String(s)), [V::String(re), rest @ ..]) => {
            let limit = match rest {
                [] => -1,
                [V::Int(n)] => *n,
                _ => return Err(NO_OVERLOAD.into()),
            };
            let re = regex(re)?;
            let all = re.find_iter(s).map(|m| V::str(m.as_str()));
            V::list(if limit < 0 {
                all.collect()
            } else {
                all.take(limit as usize).collect()
            })
        }
        ("url", None, [V::String(s)]) => {
            V::Url(Arc::new(super::go_url::parse_request_uri(s).map_err(|e| {
                format!("URL parse error during conversion from string: parse {s:?}: {e}")
            })?))
        }
        ("isURL", None, [V::String(s)]) => V::Bool(parse_url(s).is_some()),
        ("getScheme", Some(V::Url(u)), []) => V::str(&u.scheme),
        ("getHost", Some(V::Url(u)), []) => V::str(&u.host),
        ("getHostname", Some(V::Url(u)), []) => V::str(hostname(&u.host).0),
        ("getPort", Some(V::Url(u)), []) => V::str(hostname(&u.host).1),
        ("getEscapedPath", Some(V::Url(u)), []) => V::str(&u.path),
        ("getQuery", Some(V::Url(u)), []) => {
            let mut m: std::collections::BTreeMap<super::value::Key, Value> = std::collections::BTreeMap::new();
            for (k, v) in crate::api::util::parse_query(&u.query) {
                let key = super::value::Key::Str(Arc::from(k.as_str()));
                let mut list = match m.remove(&key) {
                    Some(V::List(l)) => (*l).clone(),
                    _ => Vec::new(),
                };
                list.push(V::str(&v));
                m.insert(key, V::list(list));
            }
            V::Map(Arc::new(m))
        }
        ("quantity", None, [V::String(s)]) => V::Quantity(Arc::new(Quantity::parse(s).ok_or_else(|| {
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'".to_owned()
        })?)),
        ("isQuantity", None, [V::String(s)]) => V::Bool(Quantity::parse(s).is_some()),
        ("sign", Some(V::Quantity(q)), []) => V::Int(q.sign()),
        ("isInteger", Some(V::Quantity(q)), []) => V::Bool(q.integer().is_some_and(|i| i64::try_from(i).is_ok())),
        ("asInteger", Some(V::Quantity(q)), []) => V::Int(
            q.integer()
                .and_then(|i| i64::try_from(i).ok())
                .ok_or("cannot convert value to integer")?,
        ),
        ("asApproximateFloat", Some(V::Quantity(q)), []) => V::Double(q.approximate()),
        ("isGreaterThan", Some(V::Quantity(a)), [V::Quantity(b)]) => V::Bool(a.cmp_value(b) == Ordering::Greater),
        ("isLessThan", Some(V::Quantity(a)), [V::Quantity(b)]) => V::Bool(a.cmp_value(b) == Ordering::Less),
        ("compareTo", Some(V::Quantity(a)), [V::Quantity(b)]) => V::Int(a.cmp_value(b) as i64),
        ("add" | "sub", Some(V::Quantity(a)), [b]) => {
            let b = match b {
                V::Quantity(b) => (**b).clone(),
                V::Int(i) => Quantity::parse(&i.to_string()).ok_or(NO_OVERLOAD)?,
                _ => return Err(NO_OVERLOAD.into()),
            };
            let b = if name == "sub" { b.negated() } else { b };
            V::Quantity(Arc::new(a.add(&b).ok_or("quantity overflow")?))
        }
        ("ip", None, [V::String(s)]) => V::Ip(parse_ip(s).ok_or_else(|| {
            format!("IP Address {s:?} parse error during conversion from string: ParseAddr({s:?}): unable to parse IP")
        })?),
        ("isIP", None, [V::String(s)]) => V::Bool(parse_ip(s).is_some()),
        ("ip.isCanonical", None, [V::String(s)]) => {
            let ip =
                parse_ip(s).ok_or_else(|| format!("IP Address {s:?} parse error during conversion from string"))?;
            V::Bool(ip.to_string() == **s)
        }
        ("family", Some(V::Ip(ip)), []) => V::Int(if ip.is_ipv4() { 4 } else { 6 }),
        ("isUnspecified", Some(V::Ip(ip)), []) => V::Bool(ip.is_unspecified()),
        ("isLoopback", Some(V::Ip(ip)), []) => V::Bool(ip.is_loopback()),
        ("isLinkLocalMulticast", Some(V::Ip(ip)), []) => V::Bool(match ip {
            IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
            IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
        }),
        ("isLinkLocalUnicast", Some(V::Ip(ip)), []) => V::Bool(match ip {
            IpAddr::V4(a) => a.is_link_local(),
            IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
        }),
        ("isGlobalUnicast", Some(V::Ip(ip)), []) => V::Bool(match ip {
            IpAddr::V4(a) => {
                !(a.is_unspecified() || a.is_loopback() || a.is_broadcast() || a.is_multicast() || a.is_link_local())
            }
            IpAddr::V6(a) => {
                !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.segments()[0] & 0xffc0 == 0xfe80)
            }
        }),
        ("cidr", None, [V::String(s)]) => {
            let (ip, n) = parse_cidr(s).ok_or_else(|| format!("network address {s:?} parse error during conversion from string: netip.ParsePrefix({s:?}): bad prefix"))?;
            V::Cidr(ip, n)
        }
        ("isCIDR", None, [V::String(s)]) => V::Bool(parse_cidr(s).is_some()),
        ("containsIP", Some(V::Cidr(net, n)), [x]) => {
            let ip = match x {
                V::Ip(ip) => *ip,
                V::String(s) => parse_ip(s).ok_or_else(|| format!("IP Address {s:?} parse error"))?,
                _ => return Err(NO_OVERLOAD.into()),
            };
            V::Bool(contains(net, *n, &ip))
        }
        ("containsCIDR", Some(V::Cidr(net, n)), [x]) => {
            let (ip, m) = match x {
                V::Cidr(ip, m) => (*ip, *m),
                V::String(s) => parse_cidr(s).ok_or_else(|| format!("network address {s:?} parse error"))?,
                _ => return Err(NO_OVERLOAD.into()),
            };
            V::Bool(m >= *n && contains(net, *n, &ip))
        }
        ("ip", Some(V::Cidr(ip, _)), []) => V::Ip(*ip),
        ("masked", Some(V::Cidr(ip, n)), []) => V::Cidr(mask(ip, *n), *n),
        ("prefixLength", Some(V::Cidr(_, n)), []) => V::Int(i64::from(*n)),
        ("semver", None, [V::String(s), rest @ ..]) => {
            let normalize = matches!(rest, [V::Bool(true)]);
            V::Semver(Arc::new(
                parse_semver(s, normalize).ok_or_else(|| format!("Invalid semver: {s}"))?,
            ))
        }
        ("isSemver", None, [V::String(s), rest @ ..]) => {
            V::Bool(parse_semver(s, matches!(rest, [V::Bool(true)])).is_some())
        }
        ("major", Some(V::Semver(v)), []) => V::Int(v.major as i64),
        ("minor", Some(V::Semver(v)), []) => V::Int(v.minor as i64),
        ("patch", Some(V::Semver(v)), []) => V::Int(v.patch as i64),
        ("isGreaterThan", Some(V::Semver(a)), [V::Semver(b)]) => V::Bool(semver_cmp(a, b) == Ordering::Greater),
        ("isLessThan", Some(V::Semver(a)), [V::Semver(b)]) => V::Bool(semver_cmp(a, b) == Ordering::Less),
        ("compareTo", Some(V::Semver(a)), [V::Semver(b)]) => V::Int(semver_cmp(a, b) as i64),
        ("format.named", None, [V::String(s)]) => {
            V::Optional(FORMATS.iter().find(|f| **f == &**s).map(|f| Box::new(V::Format(f))))
        }
        (f, None, []) if f.starts_with("format.") => {
            let n = &f["format.".len()..];
            V::Format(FORMATS.iter().find(|x| **x == n).ok_or(NO_OVERLOAD)?)
        }
        ("validate", Some(V::Format(f)), [V::String(s)]) => {
            let errs = validate_format(f, s);
            V::Optional((!errs.is_empty()).then(|| Box::new(V::list(errs.iter().map(|e| V::str(e)).collect()))))
        }
        _ => return Err(NO_OVERLOAD.into()),
    })
}

/// A URL the URL library accepts (Go's `url.ParseRequestURI`, [`go_url`](super::go_url)).
fn parse_url(s: &str) -> Option<Url> {
    super::go_url::parse_request_uri(s).ok()
}

/// A host's name and port (`[::1]:80` → `::1`, `80`).
fn hostname(host: &str) -> (&str, &str) {
    if let Some(rest) = host.strip_prefix('[') {
        let (h, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (h, after.strip_prefix(':').unwrap_or(""));
    }
    match host.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h, p),
        _ => (host, ""),
    }
}

/// An IP address as the IP library parses it: no zones, no IPv4-mapped IPv6.
fn parse_ip(s: &str) -> Option<IpAddr> {
    if s.contains('%') {
        return None;
    }
    let ip: IpAddr = s.parse().ok()?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return None;
    }
    Some(ip)
}

fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (ip, n) = s.split_once('/')?;
    let ip = parse_ip(ip)?;
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()) || (n.len() > 1 && n.starts_with('0')) {
        return None;
    }
    let n: u8 = n.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (n <= max).then_some((ip, n))
}

fn mask(ip: &IpAddr, n: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let bits = u32::from(*a);
            let m = if n == 0 { 0 } else { u32::MAX << (32 - u32::from(n)) };
            IpAddr::V4((bits & m).into())
        }
        IpAddr::V6(a) => {
            let bits = u128::from(*a);
            let m = if n == 0 { 0 } else { u128::MAX << (128 - u32::from(n)) };
            IpAddr::V6((bits & m).into())
        }
    }
}

fn contains(net: &IpAddr, n: u8, ip: &IpAddr) -> bool {
    net.is_ipv4() == ip.is_ipv4() && mask(net, n) == mask(ip, n)
}

fn parse_semver(s: &str, normalize: bool) -> Option<Semver> {
    let mut t = s;
    if normalize {
        t = t.strip_prefix('v').unwrap_or(t);
    }
    let core_end = t.find(['-', '+']).unwrap_or(t.len());
    let (core, tail) = t.split_at(core_end);
    let mut parts: Vec<&str> = core.split('.').collect();
    if normalize {
        while parts.len() < 3 {
            parts.push("0");
        }
    }
    if parts.len() != 3 {
        return None;
    }
    let num = |p: &str| -> Option<u64> {
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) || (p.len() > 1 && p.starts_with('0') && !normalize) {
            return None;
        }
        p.parse().ok()
    };
    let pre_text = tail.strip_prefix('-').map(|p| p.split('+').next().unwrap_or(""));
    let pre: Vec<String> = match pre_text {
        Some("") => return None,
        Some(p) => p.split('.').map(str::to_owned).collect(),
        None => Vec::new(),
    };
    Some(Semver {
        major: num(parts[0])?,
        minor: num(parts[1])?,
        patch: num(parts[2])?,
        pre,
    })
}

fn semver_cmp(a: &Semver, b: &Semver) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| match (a.pre.is_empty(), b.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                for (x, y) in a.pre.iter().zip(&b.pre) {
                    let o = match (x.parse::<u64>(), y.parse::<u64>()) {
                        (Ok(m), Ok(n)) => m.cmp(&n),
                        (Ok(_), Err(_)) => Ordering::Less,
                        (Err(_), Ok(_)) => Ordering::Greater,
                        _ => x.cmp(y),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.pre.len().cmp(&b.pre.len())
            }
        })
}

fn dns_label(s: &str, first_alpha: bool) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && (if first_alpha {
            b[0].is_ascii_lowercase()
        } else {
            b[0].is_ascii_alphanumeric()
        })
        && b[b.len() - 1] != b'-'
}

/// apimachinery's validation messages for a named format (`IsDNS1123Label`, …).
fn validate_format(f: &str, s: &str) -> Vec<String> {
    const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
    let mut errs = Vec::new();
    let (name, prefix) = match f.strip_suffix("Prefix") {
        Some(n) => (n, true),
        None => (f, false),
    };
    // A prefix may end where a generated suffix continues it: apimachinery's `maskTrailingDash` reads a trailing
    // '-' as an 'a'.
    let masked;
    let subject = match s.strip_suffix('-') {
        Some(head) if prefix && s.len() > 1 => {
            masked = format!("{head}a");
            masked.as_str()
        }
        _ => s,
    };
    match name {
        "dns1123Label" => {
            if s.len() > 63 {
                errs.push("must be no more than 63 characters".into());
            }
            if !dns_label(subject, false) {
                errs.push(LABEL.into());
            }
        }
        "dns1035Label" => {
            if s.len() > 63 {
                errs.push("must be no more than 63 characters".into());
            }
            if !dns_label(subject, true) {
                errs.push(LABEL1035.into());
            }
        }
        "dns1123Subdomain" => {
            if s.len() > 253 {
                errs.push("must be no more than 253 characters".into());
            }
            if !subject.split('.').all(|l| dns_label(l, false)) {
                errs.push(SUBDOMAIN.into());
            }
        }
        "qualifiedName" => {
            let (p, n) = match s.split_once('/') {
                Some((p, n)) => (Some(p), n),
                None => (None, s),
            };
            if let Some(p) = p
                && (p.is_empty() || p.len() > 253 || !p.split('.').all(|l| dns_label(l, false)))
            {
                errs.push(format!("prefix part {SUBDOMAIN}"));
            }
            let ok = !n.is_empty()
                && n.len() <= 63
                && n.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
                && n.as_bytes()[0].is_ascii_alphanumeric()
                && n.as_bytes()[n.len() - 1].is_ascii_alphanumeric();
            if n.is_empty() {
                errs.push("name part must be non-empty".into());
            } else if !ok {
                errs.push("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into());
            }
        }
        "labelValue" => {
            if s.len() > 63 {
                errs.push("must be no more than 63 characters".into());
            }
            let ok = s.is_empty()
                || (s.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(&c))
                    && s.as_bytes()[0].is_ascii_alphanumeric()
                    && s.as_bytes()[s.len() - 1].is_ascii_alphanumeric());
            if !ok {
                errs.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into());
            }
        }
        "uri" if parse_url(s).is_none() => errs.push("invalid URI".into()),
        "uuid" => {
            let hex: String = s.chars().filter(|c| *c != '-').collect();
            if !(s.len() == 36 && hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit())) {
                errs.push("does not match the UUID format".into());
            }
        }
        "byte" if crate::api::util::base64_std_decode(s).is_none() => errs.push("invalid base64".into()),
        "date" if s.len() != 10 || super::time::parse_timestamp(s).is_none() => errs.push("invalid date".into()),
        "datetime" if super::time::parse_timestamp(s).is_none() || s.len() <= 10 => {
            errs.push("invalid datetime".into())
        }
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_and_cidr_follow_their_libraries() {
        let v = |s| parse_semver(s, false).unwrap();
        assert_eq!(semver_cmp(&v("1.2.3"), &v("1.10.0")), Ordering::Less);
        assert_eq!(semver_cmp(&v("1.0.0-alpha"), &v("1.0.0")), Ordering::Less);
        assert!(parse_semver("v1.0", false).is_none());
        assert_eq!(parse_semver("v1.0", true).unwrap().minor, 0);
        assert_eq!(parse_cidr("10.0.0.0/8"), Some(("10.0.0.0".parse().unwrap(), 8)));
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert!(parse_ip("::ffff:1.2.3.4").is_none());
        assert_eq!(hostname("[::1]:80"), ("::1", "80"));
    }
}
