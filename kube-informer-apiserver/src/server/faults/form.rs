//! The JSON form of a [`Fault`]: the builder's vocabulary as fields, for the admin API and for tests written in
//! other languages.
//!
//! One object names the target (`verb`, `resource`, both optional), exactly one action and its modifiers:
//!
//! | builder | JSON |
//! |---|---|
//! | `Fault::on(Some(Verb::List), Some("configmaps"))`, `Fault::list("configmaps")` | `"verb": "list", "resource": "configmaps"` |
//! | `Fault::any_request()` | no `verb`, no `resource` |
//! | `.error(429).retry_after(1)` | `"error": 429, "retryAfter": 1` |
//! | `.cut_after_events(2)` | `"cutAfterEvents": 2` |
//! | `.cut_after_bytes(100)` | `"cutAfterBytes": 100` |
//! | `.stall()`, `.stall().lasting(d)` | `"stall": true`, `"lasting": "5s"` |
//! | `.stall_after_events(0)` | `"stallAfterEvents": 0` (with `lasting` too) |
//! | `.garbage_after_events(1, b"x")` | `"garbageAfterEvents": 1, "garbage": "x"` (or `"garbageBase64"` for any bytes) |
//! | `.close_mid_object_after_events(1)` | `"closeMidObjectAfterEvents": 1` |
//! | `.times(3)` | `"times": 3` |
//!
//! Durations are written as Go writes them ([`parse_duration`](crate::parse_duration)). Unknown fields, two actions,
//! or a modifier without its action are refused with a message saying which.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Fault, FaultAction};
use crate::api::util;
use crate::http::log::Verb;

const VERBS: [Verb; 8] = [
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Delete,
    Verb::DeleteCollection,
];

/// The fields of a fault's JSON form; all optional, checked together by `TryFrom`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FaultForm {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verb: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cut_after_events: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cut_after_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stall: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stall_after_events: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lasting: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    garbage_after_events: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    garbage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    garbage_base64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    close_mid_object_after_events: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    times: Option<u32>,
}

impl TryFrom<FaultForm> for Fault {
    type Error = String;

    fn try_from(f: FaultForm) -> Result<Fault, String> {
        let verb = match f.verb.as_deref() {
            None | Some("*") => None,
            Some(name) => Some(VERBS.into_iter().find(|v| v.as_str() == name).ok_or_else(|| {
                let names: Vec<&str> = VERBS.iter().map(|v| v.as_str()).collect();
                format!("unknown verb {name:?} (one of {}, or \"*\")", names.join(", "))
            })?),
        };
        let resource = f.resource.as_deref().filter(|r| *r != "*");
        if resource.is_some_and(str::is_empty) {
            return Err("resource must not be empty (leave it out for any resource)".into());
        }
        let target = Fault::on(verb, resource);

        let actions = [
            ("error", f.error.is_some()),
            ("cutAfterEvents", f.cut_after_events.is_some()),
            ("cutAfterBytes", f.cut_after_bytes.is_some()),
            ("stall", f.stall.is_some()),
            ("stallAfterEvents", f.stall_after_events.is_some()),
            ("garbageAfterEvents", f.garbage_after_events.is_some()),
            ("closeMidObjectAfterEvents", f.close_mid_object_after_events.is_some()),
        ];
        let chosen: Vec<&str> = actions.iter().filter(|(_, set)| *set).map(|(n, _)| *n).collect();
        let action = match chosen.as_slice() {
            [one] => *one,
            [] => {
                let names: Vec<&str> = actions.iter().map(|(n, _)| *n).collect();
                return Err(format!("a fault needs one action: {}", names.join(", ")));
            }
            many => return Err(format!("a fault has one action, not {}", many.join(" and "))),
        };
        let modifier = |name: &str, set: bool, allowed: &[&str]| {
            if set && !allowed.contains(&action) {
                Err(format!("{name} does not go with {action}"))
            } else {
                Ok(())
            }
        };
        modifier("retryAfter", f.retry_after.is_some(), &["error"])?;
        modifier("lasting", f.lasting.is_some(), &["stall", "stallAfterEvents"])?;
        modifier(
            "garbage",
            f.garbage.is_some() || f.garbage_base64.is_some(),
            &["garbageAfterEvents"],
        )?;
        let lasting = f.lasting.as_deref().map(util::parse_duration).transpose()?;

        let mut fault = match action {
            "error" => {
                let code = f.error.unwrap_or_default();
                if !(400..=599).contains(&code) {
                    return Err(format!("error must be an HTTP error status (400-599), not {code}"));
                }
                let fault = target.error(code);
                match f.retry_after {
                    Some(s) => fault.retry_after(s),
                    None => fault,
                }
            }
            "cutAfterEvents" => target.cut_after_events(f.cut_after_events.unwrap_or_default()),
            "cutAfterBytes" => target.cut_after_bytes(f.cut_after_bytes.unwrap_or_default()),
            "stall" if f.stall == Some(false) => return Err("stall must be true (leave it out for no stall)".into()),
            "stall" => target.stall(),
            "stallAfterEvents" => target.stall_after_events(f.stall_after_events.unwrap_or_default()),
            "garbageAfterEvents" => {
                let bytes = match (f.garbage, f.garbage_base64) {
                    (Some(text), None) => text.into_bytes(),
                    (None, Some(b64)) => util::base64_std_decode(&b64).ok_or("garbageBase64 is not base64")?,
                    (None, None) => return Err("garbageAfterEvents needs garbage (text) or garbageBase64".into()),
                    (Some(_), Some(_)) => return Err("give garbage or garbageBase64, not both".into()),
                };
                target.garbage_after_events(f.garbage_after_events.unwrap_or_default(), &bytes)
            }
            _ => target.close_mid_object_after_events(f.close_mid_object_after_events.unwrap_or_default()),
        };
        if let Some(d) = lasting {
            fault = fault.lasting(d);
        }
        match f.times {
            Some(0) => Err("times must be at least 1".into()),
            Some(n) => Ok(fault.times(n)),
            None => Ok(fault),
        }
    }
}

impl From<Fault> for FaultForm {
    fn from(fault: Fault) -> FaultForm {
        let (verb, resource) = fault.target_parts();
        let mut f = FaultForm {
            verb: verb.map(|v| v.as_str().to_owned()),
            resource: resource.map(str::to_owned),
            times: Some(fault.remaining()),
            ..FaultForm::default()
        };
        let lasting = |d: Option<Duration>| d.map(util::format_duration);
        match fault.action().clone() {
            FaultAction::Error { code, retry_after } => {
                f.error = Some(code);
                f.retry_after = retry_after;
            }
            FaultAction::CutAfterEvents(n) => f.cut_after_events = Some(n),
            FaultAction::CutAfterBytes(n) => f.cut_after_bytes = Some(n),
            FaultAction::Stall {
                after_events: None,
                duration,
            } => {
                f.stall = Some(true);
                f.lasting = lasting(duration);
            }
            FaultAction::Stall {
                after_events: Some(n),
                duration,
            } => {
                f.stall_after_events = Some(n);
                f.lasting = lasting(duration);
            }
            FaultAction::Garbage { after_events, bytes } => {
                f.garbage_after_events = Some(after_events);
                match String::from_utf8(bytes) {
                    Ok(text) => f.garbage = Some(text),
                    Err(e) => f.garbage_base64 = Some(util::base64_std(e.as_bytes())),
                }
            }
            FaultAction::CloseMidObject { after_events } => f.close_mid_object_after_events = Some(after_events),
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Fault, String> {
        serde_json::from_value::<Fault>(v).map_err(|e| e.to_string())
    }

    #[test]
    fn every_builder_fault_has_a_json_form_that_reads_back() {
        let faults = [
            Fault::list("configmaps").error(429).retry_after(1).times(3),
            Fault::any_request().error(503),
            Fault::watch("pods").cut_after_events(2),
            Fault::on(Some(Verb::Get), None).cut_after_bytes(10),
            Fault::any_request().stall(),
            Fault::any_request().stall().lasting(Duration::from_millis(1500)),
            Fault::watch("leases.coordination.k8s.io").stall_after_events(0),
            Fault::watch("configmaps").garbage_after_events(1, b"not json\n"),
            Fault::watch("configmaps").garbage_after_events(0, &[0xff, 0x00, 0x7b]),
            Fault::watch("configmaps").close_mid_object_after_events(1),
        ];
        for fault in faults {
            let form = serde_json::to_value(&fault).unwrap();
            assert_eq!(parse(form.clone()), Ok(fault.clone()), "{form}");
        }
    }

    #[test]
    fn the_json_names_follow_the_builder() {
        assert_eq!(
            parse(json!({"verb": "list", "resource": "configmaps", "error": 429, "retryAfter": 2, "times": 3})),
            Ok(Fault::list("configmaps").error(429).retry_after(2).times(3))
        );
        assert_eq!(
            parse(json!({"verb": "*", "resource": "*", "stall": true, "lasting": "2s"})),
            Ok(Fault::any_request().stall().lasting(Duration::from_secs(2)))
        );
        assert_eq!(
            serde_json::to_value(
                Fault::watch("pods")
                    .stall_after_events(1)
                    .lasting(Duration::from_millis(250))
            )
            .unwrap(),
            json!({"verb": "watch", "resource": "pods", "stallAfterEvents": 1, "lasting": "250ms", "times": 1})
        );
        assert_eq!(
            parse(json!({"garbageAfterEvents": 0, "garbageBase64": "/w=="})),
            Ok(Fault::any_request().garbage_after_events(0, &[0xff]))
        );
    }

    #[test]
    fn malformed_forms_say_what_is_wrong() {
        let cases = [
            (json!({}), "needs one action"),
            (json!({"error": 500, "stall": true}), "not error and stall"),
            (json!({"verb": "fetch", "error": 500}), "unknown verb \"fetch\""),
            (json!({"error": 200}), "400-599"),
            (
                json!({"cutAfterEvents": 1, "retryAfter": 1}),
                "retryAfter does not go with cutAfterEvents",
            ),
            (json!({"error": 500, "lasting": "1s"}), "lasting does not go with error"),
            (json!({"stall": true, "lasting": "soon"}), "invalid duration"),
            (json!({"stall": false}), "stall must be true"),
            (json!({"garbageAfterEvents": 1}), "needs garbage"),
            (json!({"garbageAfterEvents": 1, "garbageBase64": "!!"}), "not base64"),
            (json!({"error": 500, "times": 0}), "at least 1"),
            (json!({"error": 500, "resource": ""}), "must not be empty"),
            (json!({"error": 500, "color": "red"}), "unknown field `color`"),
            (json!({"error": "500"}), "invalid type"),
        ];
        for (form, want) in cases {
            let err = parse(form.clone()).unwrap_err();
            assert!(err.contains(want), "{form}: {err}");
        }
    }
}
