//! Go's `url.ParseRequestURI`, which the URL library's `url()` and `isURL()` call: a scheme then an opaque part
//! (`https:://kubernetes.io/` is opaque), or an absolute path; an authority whose host has no invalid characters
//! and whose port is digits (`https://a:b:c/` fails); no fragment split (a request URI has none); spaces in the path
//! and the query accepted, the path re-escaped for `getEscapedPath()`.

use super::value::Url;

/// [`Url`] of `s`, or Go's reason it is not one.
pub(crate) fn parse_request_uri(s: &str) -> Result<Url, &'static str> {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL");
    }
    if s.is_empty() {
        return Err("empty url");
    }
    let mut url = Url {
        text: s.to_owned(),
        scheme: String::new(),
        host: String::new(),
        path: String::new(),
        query: String::new(),
    };
    if s == "*" {
        url.path = "*".into();
        return Ok(url);
    }
    let (scheme, rest) = scheme(s)?;
    url.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.query = q.to_owned();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL: no host, no path.
            return Ok(url);
        }
        return Err("invalid URI for request");
    }
    if !url.scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let host = authority.rfind('@').map_or(authority, |i| &authority[i + 1..]);
        check_host(host)?;
        url.host = host.to_owned();
        rest = path;
    }
    let unescaped = unescape(rest).ok_or("invalid URL escape")?;
    url.path = if valid_encoded(rest) {
        rest.to_owned()
    } else {
        escape_path(&unescaped)
    };
    Ok(url)
}

/// Go's `getScheme`.
fn scheme(s: &str) -> Result<(&str, &str), &'static str> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme"),
            ':' => return Ok((&s[..i], &s[i + 1..])),
            _ => return Ok(("", s)),
        }
    }
    Ok(("", s))
}

/// Go's `parseHost`: an IPv6 literal in brackets or a name, an optional `:port` of digits, no character a host
/// may not hold.
fn check_host(host: &str) -> Result<(), &'static str> {
    let port_ok = |p: &str| {
        p.is_empty()
            || p.strip_prefix(':')
                .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
    };
    let name = if host.starts_with('[') {
        let i = host.rfind(']').ok_or("missing ']' in host")?;
        if !port_ok(&host[i + 1..]) {
            return Err("invalid port after host");
        }
        &host[..=i]
    } else if let Some(i) = host.rfind(':') {
        if !port_ok(&host[i..]) {
            return Err("invalid port after host");
        }
        &host[..i]
    } else {
        host
    };
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b >= 0x80 || b"-_.~!$&'()*+,;=:[]<>\"%".contains(&b);
    if name.bytes().all(allowed) {
        Ok(())
    } else {
        Err("invalid character in host name")
    }
}

fn unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

fn path_keeps(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b)
}

/// Go's `validEncoded` for a path: what may stand as written.
fn valid_encoded(s: &str) -> bool {
    s.bytes().all(|b| path_keeps(b) || b"!()*[]'%".contains(&b))
}

fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if path_keeps(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go_parse_request_uri() {
        let u = parse_request_uri("https:://kubernetes.io/").unwrap();
        assert_eq!((u.scheme.as_str(), u.host.as_str(), u.path.as_str()), ("https", "", ""));
        assert!(parse_request_uri("https://a:b:c/").is_err());
        let u = parse_request_uri("https://kubernetes.io/a b?c d").unwrap();
        assert_eq!((u.path.as_str(), u.query.as_str()), ("/a%20b", "c d"));
        assert!(parse_request_uri("../relative").is_err());
        assert!(parse_request_uri("/absolute-path").is_ok());
        assert!(parse_request_uri(":no-scheme").is_err());
        let u = parse_request_uri("https://[::1]:80/p#frag").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str()), ("[::1]:80", "/p%23frag"));
    }
}
