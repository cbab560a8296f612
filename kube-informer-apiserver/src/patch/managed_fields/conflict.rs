//! The 409 an apply answers when it would change fields other managers own, as apimachinery's
//! `NewConflictError` words it: `Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1:
//! .spec.replicas`, and one `FieldManagerConflict` cause per field.

use super::entries::{UPDATE, parts};
use super::path::{go_quote, path_string};
use super::updater::Conflict;
use crate::api::errors::Failure;
use kube_informer::object::{Status, StatusCause, StatusDetails};

/// A manager as conflicts name it: `"name"`, then ` with subresource "status"`, then ` using apps/v1` for an
/// updater.
pub(crate) fn print_manager(identifier: &str) -> String {
    let (manager, operation, api_version, subresource) = parts(identifier);
    let mut s = go_quote(&manager);
    if !subresource.is_empty() {
        s.push_str(&format!(" with subresource {}", go_quote(&subresource)));
    }
    if operation == UPDATE {
        s.push_str(&format!(" using {api_version}"));
    }
    s
}

/// The message: one conflict inline; several grouped by manager (in the order of their identifiers), one path a
/// line.
pub(crate) fn message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&one.manager),
            path_string(&one.path)
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {}:", print_manager(m)));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", path_string(&c.path)));
        }
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// The 409 Conflict of an apply.
pub(crate) fn failure(conflicts: &[Conflict]) -> Failure {
    let causes = conflicts
        .iter()
        .map(|c| StatusCause {
            reason: "FieldManagerConflict".to_owned(),
            message: format!("conflict with {}", print_manager(&c.manager)),
            field: path_string(&c.path),
        })
        .collect();
    Box::new(
        Status::failure(409, "Conflict", message(conflicts)).with_details(StatusDetails {
            causes,
            ..Default::default()
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::super::entries::{APPLY, identifier};
    use super::super::path::PathElement;
    use super::*;

    fn conflict(manager: &str, path: &[&str]) -> Conflict {
        Conflict {
            manager: manager.to_owned(),
            path: path.iter().map(|p| PathElement::Field((*p).to_owned())).collect(),
        }
    }

    // Cases of apimachinery's managedfields/internal/conflict_test.go.
    #[test]
    fn conflicts_are_worded_as_kube_apiserver_words_them() {
        let updater = identifier("foo", UPDATE, "v1", "");
        let applier = identifier("bar", APPLY, "v1", "");
        let status = identifier("baz", UPDATE, "v1", "status");
        assert_eq!(print_manager(&updater), "\"foo\" using v1");
        assert_eq!(print_manager(&applier), "\"bar\"");
        assert_eq!(print_manager(&status), "\"baz\" with subresource \"status\" using v1");
        let one = failure(&[conflict(&applier, &["spec", "replicas"])]);
        assert_eq!(
            (one.code, one.reason.as_str(), one.message.as_str()),
            (
                409,
                "Conflict",
                "Apply failed with 1 conflict: conflict with \"bar\": .spec.replicas"
            )
        );
        let causes = &one.details.as_ref().unwrap().causes;
        assert_eq!(
            (
                causes[0].reason.as_str(),
                causes[0].message.as_str(),
                causes[0].field.as_str()
            ),
            ("FieldManagerConflict", "conflict with \"bar\"", ".spec.replicas")
        );
        let many = failure(&[
            conflict(&updater, &["spec", "a"]),
            conflict(&applier, &["spec", "b"]),
            conflict(&updater, &["spec", "c"]),
        ]);
        assert_eq!(
            many.message,
            "Apply failed with 3 conflicts: conflicts with \"bar\":\n- .spec.b\nconflicts with \"foo\" using v1:\n- .spec.a\n- .spec.c"
        );
        assert_eq!(many.details.unwrap().causes.len(), 3);
    }
}
