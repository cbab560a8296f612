//! `Status`: the API server's answer to a failed request (and to some successful deletes).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ListMeta;

/// A Kubernetes `meta/v1 Status`.
///
/// ```
/// use kube_informer::object::Status;
///
/// let s: Status = serde_json::from_str(
///     r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
///        "message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#,
/// ).unwrap();
/// assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status`.
    #[serde(default = "status_kind")]
    pub kind: String,
    /// Always `v1`.
    #[serde(default = "status_api_version")]
    pub api_version: String,
    /// List metadata (normally empty).
    #[serde(default)]
    pub metadata: ListMeta,
    /// `Success` or `Failure`.
    #[serde(default)]
    pub status: String,
    /// Human-readable description.
    #[serde(default)]
    pub message: String,
    /// Machine-readable reason: `NotFound`, `AlreadyExists`, `Conflict`, `Expired`, `Gone`, `Invalid`,
    /// `TooManyRequests`, `Forbidden`, `Unauthorized`, …
    #[serde(default)]
    pub reason: String,
    /// Extra data about the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code.
    #[serde(default)]
    pub code: u16,
}

/// `Status.details`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Name of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Kind (or resource) of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// UID of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Individual causes (validation errors, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i64>,
}

/// One cause in `Status.details.causes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable cause (`FieldValueInvalid`, `ResourceVersionTooLarge`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field concerned (`metadata.name`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

fn status_kind() -> String {
    "Status".into()
}

fn status_api_version() -> String {
    "v1".into()
}

impl Status {
    /// A `Failure` status with a code, reason and message.
    pub fn failure(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Status {
            kind: status_kind(),
            api_version: status_api_version(),
            status: "Failure".into(),
            code,
            reason: reason.into(),
            message: message.into(),
            ..Default::default()
        }
    }

    /// A `Success` status (returned by some deletes).
    pub fn success() -> Self {
        Status {
            kind: status_kind(),
            api_version: status_api_version(),
            status: "Success".into(),
            code: 200,
            ..Default::default()
        }
    }

    /// Sets `details`.
    #[must_use]
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// The reason the API server uses for an HTTP code when the body was not a `Status`.
    pub fn reason_for_code(code: u16) -> &'static str {
        match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            406 => "NotAcceptable",
            409 => "Conflict",
            410 => "Gone",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code)?;
        if !self.reason.is_empty() {
            write!(f, " {}", self.reason)?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}
