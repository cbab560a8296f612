//! The names a CRD asks for and those it gets (`status.acceptedNames`), and the conditions apiextensions-apiserver's
//! controllers keep on it: the naming controller's `NamesAccepted` (a plural, singular, short name, kind or list kind
//! already accepted for another CRD of the same group is refused), the establishing controller's `Established` (once
//! true it stays, and the resource stays served under the names accepted then), and `Terminating` while a deleted
//! CRD's objects are removed.

use std::collections::BTreeSet;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::text;
use kube_informer::object::time::format_rfc3339;

/// A CRD's names (`spec.names` or `status.acceptedNames`), with the singular and list kind defaulted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Names {
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) kind: String,
    pub(crate) list_kind: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
}

impl Names {
    /// Reads a `names` object; a missing singular is the kind in lower case, a missing list kind `<Kind>List`.
    pub(crate) fn from_value(v: &Value) -> Names {
        let list = |key: &str| -> Vec<String> {
            v.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        };
        let kind = text(v, "/kind").to_owned();
        let or = |s: &str, default: String| if s.is_empty() { default } else { s.to_owned() };
        Names {
            plural: text(v, "/plural").to_owned(),
            singular: or(text(v, "/singular"), kind.to_ascii_lowercase()),
            list_kind: or(
                text(v, "/listKind"),
                if kind.is_empty() {
                    String::new()
                } else {
                    format!("{kind}List")
                },
            ),
            kind,
            short_names: list("shortNames"),
            categories: list("categories"),
        }
    }

    /// The `names` object (empty fields left out, as Go's `omitempty` does).
    pub(crate) fn to_value(&self) -> Value {
        let mut v = json!({});
        for (k, s) in [
            ("plural", &self.plural),
            ("singular", &self.singular),
            ("kind", &self.kind),
            ("listKind", &self.list_kind),
        ] {
            if !s.is_empty() {
                v[k] = json!(s);
            }
        }
        if !self.short_names.is_empty() {
            v["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            v["categories"] = json!(self.categories);
        }
        v
    }
}

/// The names already accepted in one group: resource names (plurals, singulars, short names) and kinds (kinds and
/// list kinds).
#[derive(Debug, Default)]
pub(crate) struct Taken {
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

impl Taken {
    /// Adds a CRD's accepted names.
    pub(crate) fn add(&mut self, n: &Names) {
        for r in [&n.plural, &n.singular].into_iter().chain(&n.short_names) {
            if !r.is_empty() {
                self.resources.insert(r.clone());
            }
        }
        for k in [&n.kind, &n.list_kind] {
            if !k.is_empty() {
                self.kinds.insert(k.clone());
            }
        }
    }
}

/// `"x" is already in use` unless `requested` is what the CRD already has or nobody has it.
fn fresh(requested: &str, accepted: &str, used: &BTreeSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// One condition of a CRD's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Condition {
    pub(crate) kind: &'static str,
    pub(crate) status: bool,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

/// The naming controller's verdict: the names the CRD gets and its `NamesAccepted` condition. Each requested name
/// is taken when it is already the CRD's or free in `taken` (every accepted name of the group, this CRD's
/// included); a name in use keeps the accepted one and makes the condition false with the conflict's reason.
pub(crate) fn accept(requested: &Names, accepted: &Names, taken: &Taken) -> (Names, Condition) {
    let mut names = accepted.clone();
    let mut conflict: Option<(&'static str, String)> = None;
    let mut check = |reason: &'static str, requested: &str, accepted: &str, used: &BTreeSet<String>| {
        let verdict = fresh(requested, accepted, used);
        if let Err(m) = &verdict {
            conflict = Some((reason, m.clone()));
        }
        verdict.is_ok()
    };
    if check("PluralConflict", &requested.plural, &accepted.plural, &taken.resources) {
        names.plural = requested.plural.clone();
    }
    if check(
        "SingularConflict",
        &requested.singular,
        &accepted.singular,
        &taken.resources,
    ) {
        names.singular = requested.singular.clone();
    }
    if requested.short_names != accepted.short_names {
        let problems: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| !accepted.short_names.contains(s))
            .filter_map(|s| fresh(s, "", &taken.resources).err())
            .collect();
        if problems.is_empty() {
            names.short_names = requested.short_names.clone();
        } else {
            // Several conflicts read as apimachinery's aggregate error: one message, or `[a, b]`.
            let message = if problems.len() == 1 {
                problems[0].clone()
            } else {
                format!("[{}]", problems.join(", "))
            };
            conflict = Some(("ShortNamesConflict", message));
        }
    }
    let mut check = |reason: &'static str, requested: &str, accepted: &str| {
        let verdict = fresh(requested, accepted, &taken.kinds);
        if let Err(m) = &verdict {
            conflict = Some((reason, m.clone()));
        }
        verdict.is_ok()
    };
    if check("KindConflict", &requested.kind, &accepted.kind) {
        names.kind = requested.kind.clone();
    }
    if check("ListKindConflict", &requested.list_kind, &accepted.list_kind) {
        names.list_kind = requested.list_kind.clone();
    }
    names.categories = requested.categories.clone();
    let condition = match conflict {
        None => Condition {
            kind: "NamesAccepted",
            status: true,
            reason: "NoConflicts",
            message: "no conflicts found".into(),
        },
        Some((reason, message)) => Condition {
            kind: "NamesAccepted",
            status: false,
            reason,
            message,
        },
    };
    (names, condition)
}

/// The `Established` condition: once true it stays; true as soon as the names are accepted (the establishing
/// controller's step, taken at once here); false with `NotAccepted` before.
pub(crate) fn established(was: bool, names_accepted: bool) -> Condition {
    if was || names_accepted {
        Condition {
            kind: "Established",
            status: true,
            reason: "InitialNamesAccepted",
            message: "the initial names have been accepted".into(),
        }
    } else {
        Condition {
            kind: "Established",
            status: false,
            reason: "NotAccepted",
            message: "not all names are accepted".into(),
        }
    }
}

/// True when the CRD's status has the condition `kind` with status `True`.
pub(crate) fn is_true(crd: &Value, kind: &str) -> bool {
    conditions(crd)
        .iter()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn conditions(crd: &Value) -> &[Value] {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// `conditions` with `c` set as apiextensions' `SetCRDCondition` sets it: replaced in place, its
/// `lastTransitionTime` kept unless the status changes; appended when new.
pub(crate) fn set_condition(conditions: &mut Vec<Value>, c: &Condition) {
    let status = if c.status { "True" } else { "False" };
    let existing = conditions.iter_mut().find(|x| x["type"] == c.kind);
    let time = match &existing {
        Some(x) if x["status"] == status => x["lastTransitionTime"].clone(),
        _ => json!(format_rfc3339(SystemTime::now())),
    };
    let value = json!({"type": c.kind, "status": status, "lastTransitionTime": time, "reason": c.reason,
                       "message": c.message});
    match existing {
        Some(x) => *x = value,
        None => conditions.push(value),
    }
}

/// The CRD's conditions as stored.
pub(crate) fn current(crd: &Value) -> Vec<Value> {
    conditions(crd).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(plural: &str, kind: &str, short: &[&str]) -> Names {
        Names::from_value(&json!({"plural": plural, "kind": kind, "shortNames": short}))
    }

    // Cases from apiextensions-apiserver's naming controller tests: each name conflicts on its own, the accepted
    // names are kept for what conflicts, and a CRD's own accepted names never conflict with themselves.
    #[test]
    fn names_in_use_in_the_group_are_refused_one_by_one() {
        let mut taken = Taken::default();
        taken.add(&names("widgets", "Widget", &["wd"]));
        let empty = Names::default();

        let (got, c) = accept(&names("gadgets", "Gadget", &["gd"]), &empty, &taken);
        assert_eq!((c.status, c.reason), (true, "NoConflicts"));
        assert_eq!(got, names("gadgets", "Gadget", &["gd"]));

        let (got, c) = accept(&names("widgets", "Gadget", &[]), &empty, &taken);
        assert_eq!(
            (c.status, c.reason, c.message.as_str()),
            (false, "PluralConflict", "\"widgets\" is already in use")
        );
        assert_eq!((got.plural.as_str(), got.kind.as_str()), ("", "Gadget"));

        let (_, c) = accept(&names("gadgets", "Gadget", &["wd", "widget"]), &empty, &taken);
        assert_eq!(
            (c.reason, c.message.as_str()),
            (
                "ShortNamesConflict",
                r#"["wd" is already in use, "widget" is already in use]"#
            )
        );

        // The list kind is checked last: a kind in use with its default list kind reads as a list kind conflict.
        let (_, c) = accept(&names("gadgets", "Widget", &[]), &empty, &taken);
        assert_eq!(c.reason, "ListKindConflict");
        let own_list = Names {
            list_kind: "GadgetList".into(),
            ..names("gadgets", "Widget", &[])
        };
        let (got, c) = accept(&own_list, &empty, &taken);
        assert_eq!(
            (c.reason, got.kind.as_str(), got.list_kind.as_str()),
            ("KindConflict", "", "GadgetList")
        );
        let (_, c) = accept(
            &Names {
                list_kind: "WidgetList".into(),
                ..names("gadgets", "Gadget", &[])
            },
            &empty,
            &taken,
        );
        assert_eq!(c.reason, "ListKindConflict");

        // Its own accepted names are its own.
        let own = names("widgets", "Widget", &["wd"]);
        let (got, c) = accept(&own, &own, &taken);
        assert!(c.status);
        assert_eq!(got, own);
    }

    #[test]
    fn conditions_keep_their_transition_time_while_their_status_holds() {
        let mut conds = vec![
            json!({"type": "Established", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z",
                                    "reason": "InitialNamesAccepted", "message": "x"}),
        ];
        set_condition(&mut conds, &established(true, false));
        assert_eq!(conds[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        set_condition(&mut conds, &established(false, false));
        assert_ne!(conds[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(conds[0]["reason"], "NotAccepted");
        assert_eq!(conds.len(), 1);
    }
}
