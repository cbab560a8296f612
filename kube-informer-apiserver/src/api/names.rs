//! Which names an object may have, as apimachinery's name validation functions word their refusals (DNS-1123
//! subdomains and labels, path segments): plain values, low in the house, for the registry and the schema checks.

/// Which names a resource accepts (apimachinery's name validation functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// A DNS-1123 subdomain: ≤ 253 characters, lowercase alphanumerics, `-` and `.` (most resources).
    Subdomain,
    /// A DNS-1123 label: ≤ 63 characters, lowercase alphanumerics and `-` (namespaces, nodes' labels, …).
    Label,
    /// Any valid path segment: not `.` or `..`, without `/` or `%` (RBAC roles and bindings: `system:basic-user`).
    PathSegment,
}

/// Checks a name against a rule; the message is apimachinery's.
pub(crate) fn validate_name(rule: NameRule, name: &str) -> Result<(), String> {
    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    let (max, ok) = match rule {
        NameRule::Subdomain => (253, name.split('.').all(is_label)),
        NameRule::Label => (63, is_label(name)),
        NameRule::PathSegment => {
            return match name {
                "." | ".." => Err(format!("may not be '{name}'")),
                _ => match ['/', '%'].into_iter().find(|c| name.contains(*c)) {
                    Some(c) => Err(format!("may not contain '{c}'")),
                    None => Ok(()),
                },
            };
        }
    };
    if name.len() > max {
        return Err(format!("must be no more than {max} characters"));
    }
    if !ok {
        return Err(match rule {
            NameRule::Subdomain => SUBDOMAIN.to_owned(),
            NameRule::Label | NameRule::PathSegment => LABEL.to_owned(),
        });
    }
    Ok(())
}

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}
