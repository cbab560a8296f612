//! Who a write is by: the request's `fieldManager` (checked as kube-apiserver's `ValidateFieldManager` checks it),
//! or, without one, the start of its `User-Agent` (`kubectl/v1.32.0 (linux/amd64) kubernetes/…` is `kubectl`), as
//! kube-apiserver's handlers derive it; and, for a patch, its `force` flag.

use crate::api::errors::{self, Failure, FieldError};

/// The longest manager name (`FieldManagerMaxLength`).
const MAX_LENGTH: usize = 128;

/// The manager of the Rust-side writes ([`ApiServer::create`](crate::ApiServer::create) and the other
/// direct calls, manifests the server loads, the CRDs it installs): they are tracked in `managedFields` under this
/// name, as writes through the API are under theirs.
pub const DIRECT_FIELD_MANAGER: &str = "kube-informer-testing";

/// The manager kube-apiserver's own writes go under (a CRD's status).
pub(crate) const SERVER: &str = "kube-apiserver";

/// The writer of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Writer {
    /// The manager's name; empty when neither `fieldManager` nor the User-Agent gives one (`unknown`).
    pub(crate) manager: String,
    /// `force=true` on an apply patch.
    pub(crate) force: bool,
}

/// Go's `unicode.IsPrint`, near enough: no control characters, no space but the ASCII one.
fn printable(c: char) -> bool {
    c == ' ' || !(c.is_control() || c.is_whitespace() || ('\u{200b}'..='\u{200f}').contains(&c) || c == '\u{feff}')
}

/// The manager a User-Agent names: what precedes its first `/`, without unprintable characters, cut to the longest
/// name allowed.
pub(crate) fn from_user_agent(user_agent: &str) -> String {
    let head = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in head.chars().filter(|c| printable(*c)) {
        if out.len() + c.len_utf8() > MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

fn param<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// The writer of a create or update (`options_kind` `CreateOptions` or `UpdateOptions`) or of a patch
/// (`PatchOptions`, with `apply` telling an apply patch): 422 when the `fieldManager` is too long or unprintable,
/// missing on an apply, or when `force` comes with another patch; 400 when `force` is not a boolean.
pub(crate) fn writer(
    query: &[(String, String)],
    user_agent: &str,
    options_kind: &str,
    patch: Option<bool>,
) -> Result<Writer, Failure> {
    let given = param(query, "fieldManager").unwrap_or("");
    let force = match param(query, "force") {
        None => None,
        Some(v) => Some(match v {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
            "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
            other => {
                return Err(errors::bad_request(format!(
                    "strconv.ParseBool: parsing {other:?}: invalid syntax"
                )));
            }
        }),
    };
    let mut errs = Vec::new();
    match patch {
        Some(true) if given.is_empty() => {
            errs.push(FieldError::required("fieldManager", "is required for apply patch"));
        }
        Some(false) if force.is_some() => {
            errs.push(FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ));
        }
        _ => {}
    }
    if given.len() > MAX_LENGTH {
        errs.push(FieldError {
            reason: "FieldValueTooLong",
            field: "fieldManager".to_owned(),
            message: format!("Too long: may not be more than {MAX_LENGTH} bytes"),
        });
    }
    for (i, c) in given.char_indices().filter(|(_, c)| !printable(*c)) {
        errs.push(FieldError::invalid(
            "fieldManager",
            given,
            &format!("invalid character U+{:04X} (at position {i})", c as u32),
        ));
    }
    if !errs.is_empty() {
        return Err(errors::invalid("meta.k8s.io", options_kind, "", errs));
    }
    Ok(Writer {
        manager: if given.is_empty() {
            from_user_agent(user_agent)
        } else {
            given.to_owned()
        },
        force: force.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    // Cases of kube-apiserver's handlers (prefixFromUserAgent) and apimachinery's ValidateFieldManager /
    // ValidatePatchOptions tests.
    #[test]
    fn managers_come_from_field_manager_or_the_user_agent() {
        assert_eq!(
            from_user_agent("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9"),
            "kubectl"
        );
        assert_eq!(from_user_agent("OpenAPI-Generator/31.0.0/python"), "OpenAPI-Generator");
        assert_eq!(from_user_agent("a\u{1}b\tc/1"), "abc");
        assert_eq!(from_user_agent(""), "");
        assert_eq!(from_user_agent(&"x".repeat(200)).len(), 128);
        assert_eq!(
            from_user_agent(&"é".repeat(100)).len(),
            128,
            "cut on a character boundary"
        );
        let w = writer(&q(&[("fieldManager", "ctl")]), "kubectl/1", "CreateOptions", None).unwrap();
        assert_eq!((w.manager.as_str(), w.force), ("ctl", false));
        assert_eq!(
            writer(&[], "kubectl/1", "UpdateOptions", None).unwrap().manager,
            "kubectl"
        );
        let w = writer(
            &q(&[("fieldManager", "ctl"), ("force", "true")]),
            "",
            "PatchOptions",
            Some(true),
        )
        .unwrap();
        assert!(w.force);
    }

    #[test]
    fn bad_options_are_refused_as_kube_apiserver_refuses_them() {
        let e = writer(&[], "kubectl/1", "PatchOptions", Some(true)).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
            )
        );
        let e = writer(&q(&[("force", "false")]), "", "PatchOptions", Some(false)).unwrap_err();
        assert!(
            e.message
                .ends_with("force: Forbidden: may not be specified for non-apply patch"),
            "{}",
            e.message
        );
        let e = writer(&q(&[("fieldManager", &"x".repeat(129))]), "", "CreateOptions", None).unwrap_err();
        assert!(
            e.message
                .ends_with("fieldManager: Too long: may not be more than 128 bytes"),
            "{}",
            e.message
        );
        let e = writer(&q(&[("fieldManager", "a\u{7}")]), "", "UpdateOptions", None).unwrap_err();
        assert!(
            e.message
                .ends_with("fieldManager: Invalid value: \"a\\u{7}\": invalid character U+0007 (at position 1)"),
            "{}",
            e.message
        );
        assert_eq!(
            writer(&q(&[("force", "maybe")]), "", "PatchOptions", Some(true))
                .unwrap_err()
                .code,
            400
        );
    }
}
