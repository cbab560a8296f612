//! The shared `meta.k8s.io` definitions every OpenAPI document refers to (ObjectMeta, ListMeta, Status,
//! DeleteOptions, Patch, WatchEvent, …), in the shape kube-apiserver publishes them. Descriptions are our own.

use serde_json::{Map, Value, json};

/// `io.k8s.apimachinery.pkg.apis.meta.v1.` — the prefix of every definition below.
pub(crate) const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
/// The ObjectMeta definition's name.
pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// The ListMeta definition's name.
pub(crate) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// Status.
pub(crate) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// DeleteOptions.
pub(crate) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// Patch.
pub(crate) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// WatchEvent.
pub(crate) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";

/// Which document a schema goes into: references differ (`#/definitions/` in v2, `#/components/schemas/` in v3),
/// and v3 wraps a reference that carries a description in `allOf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    V2,
    V3,
}

impl Flavor {
    /// `{"$ref": …}` to a definition.
    pub(crate) fn reference(self, name: &str) -> Value {
        match self {
            Flavor::V2 => json!({ "$ref": format!("#/definitions/{name}") }),
            Flavor::V3 => json!({ "$ref": format!("#/components/schemas/{name}") }),
        }
    }

    /// A reference with a description beside it (v3 cannot put siblings next to `$ref`).
    pub(crate) fn described_reference(self, name: &str, description: &str) -> Value {
        match self {
            Flavor::V2 => {
                let mut r = self.reference(name);
                r["description"] = json!(description);
                r
            }
            Flavor::V3 => json!({"allOf": [self.reference(name)], "default": {}, "description": description}),
        }
    }
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn time(description: &str) -> Value {
    json!({"type": "string", "format": "date-time", "description": description})
}

fn int64(description: &str) -> Value {
    json!({"type": "integer", "format": "int64", "description": description})
}

fn int32(description: &str) -> Value {
    json!({"type": "integer", "format": "int32", "description": description})
}

fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

fn string_map(description: &str) -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": description})
}

/// `apiVersion` of an object, as TypeMeta publishes it.
pub(crate) fn api_version_property() -> Value {
    string("The versioned schema this representation of the object follows (group/version).")
}

/// `kind` of an object, as TypeMeta publishes it.
pub(crate) fn kind_property() -> Value {
    string("The REST resource type this object represents, in CamelCase.")
}

/// The description given to an object's `metadata` property.
pub(crate) const METADATA_DESCRIPTION: &str = "Standard object metadata: name, namespace, labels, annotations, owners, \
                                               and the fields the server maintains.";

/// The description given to a list's `metadata` property.
pub(crate) const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata: resourceVersion and paging.";

/// Every shared definition, by name. `groups` are the `(group, version)` pairs served: the kinds DeleteOptions and
/// WatchEvent are registered in each of them, and their `x-kubernetes-group-version-kind` says so.
pub(crate) fn definitions(flavor: Flavor, groups: &[(String, String)]) -> Map<String, Value> {
    let gvks = |kind: &str| {
        let mut v: Vec<Value> = groups
            .iter()
            .map(|(g, v)| json!({"group": g, "version": v, "kind": kind}))
            .collect();
        v.sort_by_key(|x| {
            (
                x["group"].as_str().map(str::to_owned),
                x["version"].as_str().map(str::to_owned),
            )
        });
        Value::Array(v)
    };
    let mut out = Map::new();
    let mut add = |name: &str, v: Value| {
        out.insert(format!("{META}.{name}"), v);
    };
    add(
        "ObjectMeta",
        json!({
            "description": "Metadata every persisted object carries.",
            "type": "object",
            "properties": {
                "annotations": string_map("Unstructured key/value data kept with the object, not used for selection."),
                "creationTimestamp": time("When the server created the object (RFC 3339, UTC). Read-only."),
                "deletionGracePeriodSeconds": int64("Seconds the object is given to terminate gracefully once deleted. Read-only."),
                "deletionTimestamp": time("When the object was asked to be deleted; set by the server while finalizers hold it. Read-only."),
                "finalizers": {
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "description": "Names of the controllers that must finish their work before the object is removed.",
                    "x-kubernetes-list-type": "set",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "generateName": string("A prefix the server completes with random characters when no name is given."),
                "generation": int64("The generation of the desired state; bumped when the spec changes. Read-only."),
                "labels": string_map("Key/value pairs that label selectors match."),
                "managedFields": {
                    "type": "array",
                    "items": flavor.reference(&format!("{META}.ManagedFieldsEntry")),
                    "description": "Which manager owns which fields (server-side apply bookkeeping).",
                    "x-kubernetes-list-type": "atomic",
                },
                "name": string("Unique within a namespace; required when creating unless generateName is set."),
                "namespace": string("The namespace the object lives in; empty for cluster-scoped objects."),
                "ownerReferences": {
                    "type": "array",
                    "items": flavor.reference(&format!("{META}.OwnerReference")),
                    "description": "Objects this one depends on; the garbage collector removes it once they are gone.",
                    "x-kubernetes-list-map-keys": ["uid"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "uid",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "resourceVersion": string("Opaque version of the object, for optimistic concurrency and watches. Read-only."),
                "selfLink": string("Deprecated and never set."),
                "uid": string("Unique identifier of this incarnation of the object. Read-only."),
            },
        }),
    );
    add(
        "ManagedFieldsEntry",
        json!({
            "description": "One manager's ownership of a set of fields.",
            "type": "object",
            "properties": {
                "apiVersion": string("The version of the fields' schema."),
                "fieldsType": string("The format of fieldsV1; only \"FieldsV1\"."),
                "fieldsV1": flavor.described_reference(&format!("{META}.FieldsV1"), "The owned fields."),
                "manager": string("The manager's name."),
                "operation": string("Apply or Update."),
                "subresource": string("The subresource the fields were written through, if any."),
                "time": time("When the manager last changed these fields."),
            },
        }),
    );
    add(
        "FieldsV1",
        json!({"description": "A set of fields, as a trie of JSON objects.", "type": "object"}),
    );
    add(
        "OwnerReference",
        json!({
            "description": "Identifies an owning object, which must be in the same namespace or cluster-scoped.",
            "type": "object",
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {
                "apiVersion": string("The owner's API version."),
                "blockOwnerDeletion": boolean("Foreground deletion of the owner waits for this object."),
                "controller": boolean("The owner is this object's managing controller."),
                "kind": string("The owner's kind."),
                "name": string("The owner's name."),
                "uid": string("The owner's uid."),
            },
            "x-kubernetes-map-type": "atomic",
        }),
    );
    add(
        "ListMeta",
        json!({
            "description": "Metadata of a list.",
            "type": "object",
            "properties": {
                "continue": string("Token to read the next page, when the list was cut short by a limit."),
                "remainingItemCount": int64("Items left after this page, when the server can count them."),
                "resourceVersion": string("The revision the list was read at; watch from it."),
                "selfLink": string("Deprecated and never set."),
            },
        }),
    );
    add(
        "Status",
        json!({
            "description": "The result of a call that returns no object, or an error.",
            "type": "object",
            "properties": {
                "apiVersion": api_version_property(),
                "code": int32("The HTTP status code."),
                "details": flavor.described_reference(&format!("{META}.StatusDetails"), "More about the result."),
                "kind": kind_property(),
                "message": string("A human-readable explanation."),
                "metadata": flavor.described_reference(LIST_META, LIST_METADATA_DESCRIPTION),
                "reason": string("A machine-readable reason (NotFound, Conflict, Invalid, …)."),
                "status": string("Success or Failure."),
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
        }),
    );
    add(
        "StatusDetails",
        json!({
            "description": "Which object an error is about, and its causes.",
            "type": "object",
            "properties": {
                "causes": {
                    "type": "array",
                    "items": flavor.reference(&format!("{META}.StatusCause")),
                    "description": "The individual causes, e.g. one per invalid field.",
                    "x-kubernetes-list-type": "atomic",
                },
                "group": string("The resource's group."),
                "kind": string("The resource (or kind) the error is about."),
                "name": string("The object's name."),
                "retryAfterSeconds": int32("Seconds a client should wait before retrying."),
                "uid": string("The object's uid."),
            },
        }),
    );
    add(
        "StatusCause",
        json!({
            "description": "One cause of an error.",
            "type": "object",
            "properties": {
                "field": string("The field at fault, as a path (spec.containers[0].name)."),
                "message": string("A human-readable explanation."),
                "reason": string("A machine-readable reason (FieldValueInvalid, …)."),
            },
        }),
    );
    add(
        "DeleteOptions",
        json!({
            "description": "Options of a delete.",
            "type": "object",
            "properties": {
                "apiVersion": api_version_property(),
                "dryRun": {
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "description": "\"All\": validate, change nothing.",
                    "x-kubernetes-list-type": "atomic",
                },
                "gracePeriodSeconds": int64("Seconds to give the object before it is removed."),
                "ignoreStoreReadErrorWithClusterBreakingPotential": boolean("Delete an object that cannot be read from storage."),
                "kind": kind_property(),
                "orphanDependents": boolean("Deprecated: use propagationPolicy."),
                "preconditions": flavor.described_reference(&format!("{META}.Preconditions"), "Conditions the object must meet to be deleted."),
                "propagationPolicy": string("Orphan, Background or Foreground: what becomes of dependents."),
            },
            "x-kubernetes-group-version-kind": gvks("DeleteOptions"),
        }),
    );
    add(
        "Preconditions",
        json!({
            "description": "Conditions a delete must meet.",
            "type": "object",
            "properties": {
                "resourceVersion": string("The object's resourceVersion must be this."),
                "uid": string("The object's uid must be this."),
            },
        }),
    );
    add(
        "Patch",
        json!({"description": "The body of a PATCH request, in the format its Content-Type names.", "type": "object"}),
    );
    add(
        "WatchEvent",
        json!({
            "description": "One event of a watch stream.",
            "type": "object",
            "required": ["type", "object"],
            "properties": {
                "object": flavor.described_reference(
                    "io.k8s.apimachinery.pkg.runtime.RawExtension",
                    "The object (ADDED, MODIFIED, DELETED), a Status (ERROR), or a bookmark (BOOKMARK).",
                ),
                "type": string("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."),
            },
            "x-kubernetes-group-version-kind": gvks("WatchEvent"),
        }),
    );
    out.insert(
        "io.k8s.apimachinery.pkg.runtime.RawExtension".into(),
        json!({"description": "Any embedded object.", "type": "object"}),
    );
    out
}
