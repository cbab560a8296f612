//! The `Status` bodies kube-apiserver answers with (apimachinery's `api/errors` constructors and messages).

use kube_informer::object::{ApiResource, Status, StatusCause, StatusDetails};

/// An error answer. Boxed: a `Status` is a few hundred bytes and travels in every `Result`.
pub(crate) type Failure = Box<Status>;

/// `configmaps` for the core group, `leases.coordination.k8s.io` otherwise (`GroupResource.String()`).
pub(crate) fn qualified(ar: &ApiResource) -> String {
    ar.qualified_name()
}

fn details(ar: &ApiResource, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_owned(),
        group: ar.group.clone(),
        kind: ar.plural.clone(),
        ..Default::default()
    }
}

/// 404 `configmaps "x" not found`.
pub(crate) fn not_found(ar: &ApiResource, name: &str) -> Failure {
    Box::new(
        Status::failure(404, "NotFound", format!("{} {name:?} not found", qualified(ar)))
            .with_details(details(ar, name)),
    )
}

/// 404 for a path that names no resource.
pub(crate) fn no_such_path() -> Failure {
    Box::new(
        Status::failure(404, "NotFound", "the server could not find the requested resource")
            .with_details(StatusDetails::default()),
    )
}

/// 409 `configmaps "x" already exists`.
pub(crate) fn already_exists(ar: &ApiResource, name: &str) -> Failure {
    Box::new(
        Status::failure(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", qualified(ar)),
        )
        .with_details(details(ar, name)),
    )
}

/// 409 Conflict: `Operation cannot be fulfilled on configmaps "x": <why>`.
pub(crate) fn conflict(ar: &ApiResource, name: &str, why: &str) -> Failure {
    Box::new(
        Status::failure(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} {name:?}: {why}", qualified(ar)),
        )
        .with_details(details(ar, name)),
    )
}

/// The Conflict of an update with a stale resourceVersion.
pub(crate) fn stale(ar: &ApiResource, name: &str) -> Failure {
    conflict(
        ar,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// One field error of a 422 Invalid.
#[derive(Debug)]
pub(crate) struct FieldError {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, …
    pub(crate) reason: &'static str,
    /// `metadata.name`.
    pub(crate) field: String,
    /// `Invalid value: "x": must be …` (the field is not repeated here).
    pub(crate) message: String,
}

impl FieldError {
    /// `Invalid value: "<value>": <detail>`.
    pub(crate) fn invalid(field: &str, value: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            message: format!("Invalid value: {value:?}: {detail}"),
        }
    }

    /// `Invalid value: <number>: <detail>` (a number is printed bare).
    pub(crate) fn invalid_number(field: &str, value: i64, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            message: format!("Invalid value: {value}: {detail}"),
        }
    }

    /// `Required value: <detail>` (`Required value` without a detail).
    pub(crate) fn required(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueRequired",
            field: field.to_owned(),
            message: if detail.is_empty() {
                "Required value".to_owned()
            } else {
                format!("Required value: {detail}")
            },
        }
    }

    /// `Forbidden: <detail>`.
    pub(crate) fn forbidden(field: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueForbidden",
            field: field.to_owned(),
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `Duplicate value: "<value>"`.
    pub(crate) fn duplicate(field: &str, value: &str) -> Self {
        FieldError {
            reason: "FieldValueDuplicate",
            field: field.to_owned(),
            message: format!("Duplicate value: {value:?}"),
        }
    }

    /// `Too many: <count>: must have at most <max> items`.
    pub(crate) fn too_many(field: &str, count: usize, max: usize) -> Self {
        FieldError {
            reason: "FieldValueTooMany",
            field: field.to_owned(),
            message: format!("Too many: {count}: must have at most {max} items"),
        }
    }

    /// `Unsupported value: "<value>": supported values: …`.
    pub(crate) fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldError {
            reason: "FieldValueNotSupported",
            field: field.to_owned(),
            message: format!("Unsupported value: {value:?}: supported values: {}", list.join(", ")),
        }
    }
}

/// 422 `<Kind> "<name>" is invalid: <field>: <message>` (`errors.NewInvalid`).
pub(crate) fn invalid(group: &str, kind: &str, name: &str, errs: Vec<FieldError>) -> Failure {
    let parts: Vec<String> = errs.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
    let summary = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    let qualified_kind = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    Box::new(
        Status::failure(
            422,
            "Invalid",
            format!("{qualified_kind} {name:?} is invalid: {summary}"),
        )
        .with_details(StatusDetails {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
            causes: errs
                .into_iter()
                .map(|e| StatusCause {
                    reason: e.reason.to_owned(),
                    message: e.message,
                    field: e.field,
                })
                .collect(),
            ..Default::default()
        }),
    )
}

/// 422 on the query parameters of a list or watch (`ListOptions.meta.k8s.io "" is invalid: …`).
pub(crate) fn invalid_list_options(errs: Vec<FieldError>) -> Failure {
    invalid("meta.k8s.io", "ListOptions", "", errs)
}

/// 400 BadRequest.
pub(crate) fn bad_request(message: impl Into<String>) -> Failure {
    Box::new(Status::failure(400, "BadRequest", message))
}

/// 405 MethodNotAllowed.
pub(crate) fn method_not_allowed() -> Failure {
    Box::new(
        Status::failure(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(StatusDetails::default()),
    )
}

/// 405 for a create of a custom resource whose CRD is being deleted (apiextensions-apiserver's wording).
pub(crate) fn create_while_terminating(ar: &ApiResource) -> Failure {
    Box::new(
        Status::failure(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
        )
        .with_details(StatusDetails {
            group: ar.group.clone(),
            kind: ar.plural.clone(),
            ..Default::default()
        }),
    )
}

/// 415 UnsupportedMediaType for a body (or a patch type), as kube-apiserver's content negotiation words it:
/// `accepted` lists the media types the resource decodes.
pub(crate) fn unsupported_body_type(accepted: &[&str]) -> Failure {
    Box::new(Status::failure(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    ))
}

/// 401, as the authentication filter answers.
pub(crate) fn unauthorized() -> Failure {
    Box::new(Status::failure(401, "Unauthorized", "Unauthorized"))
}

/// 410 Expired (`errors.NewResourceExpired`).
pub(crate) fn expired(message: impl Into<String>) -> Failure {
    Box::new(Status::failure(410, "Expired", message))
}

/// 504 `Timeout: Too large resource version: N, current: M` with the `ResourceVersionTooLarge` cause
/// (`storage.NewTooLargeResourceVersionError`; the watch cache asks clients to retry after 1 s).
pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> Failure {
    Box::new(
        Status::failure(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Default::default()
        }),
    )
}

/// 403 Forbidden: `<resource> "<name>" is forbidden: <why>` (`NewForbidden`); `resource` as `plural.group`.
pub(crate) fn forbidden_named(resource: &str, name: &str, why: &str) -> Failure {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    Box::new(
        Status::failure(403, "Forbidden", format!("{resource} {name:?} is forbidden: {why}")).with_details(
            StatusDetails {
                name: name.to_owned(),
                group: group.to_owned(),
                kind: plural.to_owned(),
                ..Default::default()
            },
        ),
    )
}

/// A 500 as apiserver answers an error that is not an API status (empty reason).
pub(crate) fn internal(message: impl Into<String>) -> Failure {
    Box::new(Status::failure(500, "", message))
}

/// An injected error answer: 429 TooManyRequests, 500 InternalError, 503 ServiceUnavailable, … with
/// `details.retryAfterSeconds` when given.
pub(crate) fn injected(code: u16, retry_after: Option<u32>) -> Failure {
    let message = match code {
        429 => "Too many requests, please try again later.".to_owned(),
        503 => "The server is currently unable to handle the request".to_owned(),
        500 => "An error on the server (\"injected fault\") has prevented the request from succeeding".to_owned(),
        c => format!("injected fault with code {c}"),
    };
    let mut st = Status::failure(code, Status::reason_for_code(code), message);
    st.details = Some(StatusDetails {
        retry_after_seconds: retry_after.map(i64::from),
        ..Default::default()
    });
    Box::new(st)
}

/// 504 as kube-apiserver's request timeout answers (`errors.NewTimeoutError`): here, a body not received in time.
pub(crate) fn timeout() -> Failure {
    let mut st = Status::failure(
        504,
        "Timeout",
        "Timeout: request did not complete within requested timeout - context deadline exceeded",
    );
    st.details = Some(StatusDetails::default());
    Box::new(st)
}

/// 413 for a body past `limit` bytes (`errors.NewRequestEntityTooLargeError`, as `limitedReadBody` words it).
pub(crate) fn request_entity_too_large(limit: usize) -> Failure {
    Box::new(Status::failure(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {limit}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_apiserver_wording() {
        let cm = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
        let lease = ApiResource::new("coordination.k8s.io", "v1", "Lease", "leases", true);
        assert_eq!(not_found(&cm, "x").message, r#"configmaps "x" not found"#);
        assert_eq!(
            already_exists(&lease, "l").message,
            r#"leases.coordination.k8s.io "l" already exists"#
        );
        assert!(
            stale(&cm, "x")
                .message
                .starts_with(r#"Operation cannot be fulfilled on configmaps "x": the object"#)
        );
        let inv = invalid(
            "",
            "ConfigMap",
            "A",
            vec![FieldError::invalid("metadata.name", "A", "bad")],
        );
        assert_eq!(
            inv.message,
            r#"ConfigMap "A" is invalid: metadata.name: Invalid value: "A": bad"#
        );
        assert_eq!(inv.details.unwrap().causes[0].field, "metadata.name");
        let t = too_large_resource_version(10, 3);
        assert_eq!((t.code, t.reason.as_str()), (504, "Timeout"));
        assert_eq!(t.message, "Timeout: Too large resource version: 10, current: 3");
    }
}
