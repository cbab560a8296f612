//! A container image reference as Kubernetes' `parsers.ParseImageName` reads it (the `distribution/reference`
//! grammar, normalized as Docker does), for the default `imagePullPolicy`: `Always` for the tag `latest` — which an
//! image with neither tag nor digest has — and `IfNotPresent` otherwise, including for a reference that does not
//! parse (the defaulting ignores the error; validation reports it).

/// The pull policy kube-apiserver defaults for `image`.
pub(super) fn default_pull_policy(image: &str) -> &'static str {
    if tag(image).as_deref() == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// The tag `ParseImageName` finds: the explicit one, `latest` when there is neither tag nor digest, `""` with a digest
/// only; `None` when the reference does not parse.
fn tag(image: &str) -> Option<String> {
    // A bare 64-character hex string is an image ID, refused as a name.
    if image.len() == 64 && image.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let (name_tag, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest
        && !is_digest(d)
    {
        return None;
    }
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[last_slash..].rfind(':') {
        Some(i) => (&name_tag[..last_slash + i], Some(&name_tag[last_slash + i + 1..])),
        None => (name_tag, None),
    };
    if let Some(t) = tag
        && !is_tag(t)
    {
        return None;
    }
    if !is_name(name) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => t.to_owned(),
        (None, Some(_)) => String::new(),
        (None, None) => "latest".to_owned(),
    })
}

/// `[domain/]path`, normalized: a first component without `.` or `:` that is not `localhost` (and is lower case) is
/// a path component of Docker Hub.
fn is_name(name: &str) -> bool {
    let (domain, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" || first.to_lowercase() != first => {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    let path_ok = path.split('/').all(is_path_component);
    let domain_ok = domain.is_none_or(is_domain);
    // The normalized name: docker.io/library/x for a single Hub component.
    let total = match domain {
        Some(d) => d.len() + 1 + path.len(),
        None if path.contains('/') => "docker.io/".len() + path.len(),
        None => "docker.io/library/".len() + path.len(),
    };
    path_ok && domain_ok && total <= 255
}

/// `[a-z0-9]+` separated by `.`, `_`, `__` or runs of `-`.
fn is_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|x| x == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `host[:port]`: DNS components (letters, digits, inner hyphens) joined by dots, or a bracketed IPv6 address.
fn is_domain(d: &str) -> bool {
    let (host, port) = if d.starts_with('[') {
        match d.find(']') {
            Some(i) => d.split_at(i + 1),
            None => return false,
        }
    } else {
        d.split_at(d.find(':').unwrap_or(d.len()))
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.'),
        None => host.split('.').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
        }),
    };
    host_ok && port_ok
}

/// `[\w][\w.-]{0,127}`.
fn is_tag(t: &str) -> bool {
    let b = t.as_bytes();
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    !b.is_empty() && b.len() <= 128 && word(b[0]) && b.iter().all(|x| word(*x) || *x == b'.' || *x == b'-')
}

/// `algorithm:hex`, the algorithm made of `[A-Za-z][A-Za-z0-9]*` parts joined by `+._-`, at least 32 hex digits.
fn is_digest(d: &str) -> bool {
    let Some((algorithm, hex)) = d.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['+', '.', '_', '-']).all(|c| {
        let b = c.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(u8::is_ascii_alphanumeric)
    });
    algorithm_ok && hex.len() >= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_follows_the_tag() {
        // Cases after pkg/apis/core/v1's defaults tests and pkg/util/parsers' tests.
        let digest = "sha256:2fd26cb1f8bd2f2bdd7bff9c3b04bbbe8a6dcbb8ec6bba44dd3d1d6ed1d37a4c";
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("docker.io/library/nginx", "Always"),
            ("localhost:5000/nginx", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry.k8s.io/pause:3.9", "IfNotPresent"),
            ("localhost:5000/team/app:v2", "IfNotPresent"),
            (&format!("nginx@{digest}"), "IfNotPresent"),
            (&format!("nginx:latest@{digest}"), "Always"),
            ("[::1]:5000/app", "Always"),
            ("Nginx", "IfNotPresent"),
            ("", "IfNotPresent"),
            ("nginx:", "IfNotPresent"),
            ("nginx::1", "IfNotPresent"),
            ("nginx@sha256:short", "IfNotPresent"),
            ("a//b", "IfNotPresent"),
            ("-nginx", "IfNotPresent"),
        ] {
            assert_eq!(default_pull_policy(image), policy, "{image:?}");
        }
    }

    #[test]
    fn references_parse_like_distribution() {
        assert_eq!(tag("gcr.io/proj/img:tag_1.0-x").as_deref(), Some("tag_1.0-x"));
        assert_eq!(tag("my.registry:443/a/b__c/d-e.f").as_deref(), Some("latest"));
        assert_eq!(tag(&"a".repeat(300)), None, "too long");
        assert_eq!(tag(&"0123456789abcdef".repeat(4)), None, "an image ID");
        assert_eq!(
            tag("UPPER.example/img:1").as_deref(),
            Some("1"),
            "domains may have capitals"
        );
        assert_eq!(tag("example.com/Img:1"), None, "paths may not");
    }
}
