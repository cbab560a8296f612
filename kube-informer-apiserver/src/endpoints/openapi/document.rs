//! The OpenAPI documents of the served resources: v2 (`/openapi/v2`, everything in one document) and v3 (one
//! document per group-version), with the paths kube-apiserver's endpoint installer publishes for each resource —
//! operations, their query parameters, `x-kubernetes-action` and `x-kubernetes-group-version-kind` — and the
//! definitions of the kinds and of the shared `meta.k8s.io` types.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::convert::{self, definition_name, gvk};
use super::meta::{self, Flavor};
use crate::api::util;
use crate::registry::resource::ResourceSpec;

/// A query parameter: (name, type, description).
type Param = (&'static str, &'static str, &'static str);

const ALLOW_WATCH_BOOKMARKS: Param = (
    "allowWatchBookmarks",
    "boolean",
    "Ask for BOOKMARK events in a watch; the server may send them at its own pace.",
);
const CONTINUE: Param = (
    "continue",
    "string",
    "The token a previous page returned: read the next page of the same list.",
);
const DRY_RUN: Param = (
    "dryRun",
    "string",
    "\"All\": go through every step of the request but persist nothing.",
);
const FIELD_MANAGER: Param = (
    "fieldManager",
    "string",
    "The name of the actor making the change (required for apply patches).",
);
const FIELD_SELECTOR: Param = (
    "fieldSelector",
    "string",
    "Select objects by field values (metadata.name=x, …).",
);
const FIELD_VALIDATION: Param = (
    "fieldValidation",
    "string",
    "What to do with unknown or duplicate fields in the body: Ignore (drop them), Warn (drop them and say so in \
     Warning headers; the default), or Strict (refuse the request with 400).",
);
const FORCE: Param = (
    "force",
    "boolean",
    "Apply patches only: take over fields other managers own.",
);
const GRACE_PERIOD: Param = (
    "gracePeriodSeconds",
    "integer",
    "Seconds before the object is deleted; 0 deletes at once.",
);
const IGNORE_STORE_READ_ERROR: Param = (
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "boolean",
    "Delete an object even when it cannot be read from storage.",
);
const LABEL_SELECTOR: Param = ("labelSelector", "string", "Select objects by labels.");
const LIMIT: Param = (
    "limit",
    "integer",
    "At most this many items per page; a continue token reads on.",
);
const ORPHAN_DEPENDENTS: Param = ("orphanDependents", "boolean", "Deprecated: use propagationPolicy.");
const PROPAGATION_POLICY: Param = (
    "propagationPolicy",
    "string",
    "Orphan, Background or Foreground: what happens to the object's dependents.",
);
const RESOURCE_VERSION: Param = (
    "resourceVersion",
    "string",
    "Which revision to read or watch from (see resourceVersionMatch).",
);
const RESOURCE_VERSION_MATCH: Param = (
    "resourceVersionMatch",
    "string",
    "How resourceVersion applies to a list: NotOlderThan or Exact.",
);
const SEND_INITIAL_EVENTS: Param = (
    "sendInitialEvents",
    "boolean",
    "Start a watch with ADDED events for the current state, then a bookmark marking their end.",
);
const TIMEOUT_SECONDS: Param = (
    "timeoutSeconds",
    "integer",
    "End the list or watch after this many seconds.",
);
const WATCH: Param = (
    "watch",
    "boolean",
    "Watch for changes instead of listing (use the watch operation).",
);

const LIST_PARAMS: &[Param] = &[
    ALLOW_WATCH_BOOKMARKS,
    CONTINUE,
    FIELD_SELECTOR,
    LABEL_SELECTOR,
    LIMIT,
    RESOURCE_VERSION,
    RESOURCE_VERSION_MATCH,
    SEND_INITIAL_EVENTS,
    TIMEOUT_SECONDS,
    WATCH,
];
const WRITE_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
const PATCH_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION, FORCE];
const DELETE_PARAMS: &[Param] = &[
    DRY_RUN,
    GRACE_PERIOD,
    IGNORE_STORE_READ_ERROR,
    ORPHAN_DEPENDENTS,
    PROPAGATION_POLICY,
];
const DELETE_COLLECTION_PARAMS: &[Param] = &[
    CONTINUE,
    DRY_RUN,
    FIELD_SELECTOR,
    GRACE_PERIOD,
    IGNORE_STORE_READ_ERROR,
    LABEL_SELECTOR,
    LIMIT,
    ORPHAN_DEPENDENTS,
    PROPAGATION_POLICY,
    RESOURCE_VERSION,
    RESOURCE_VERSION_MATCH,
    SEND_INITIAL_EVENTS,
    TIMEOUT_SECONDS,
];

/// What an operation returns.
#[derive(Clone, Copy)]
enum Returns {
    Object,
    List,
    Status,
    Event,
}

/// One operation of one path.
struct Op {
    /// `get`, `put`, `post`, `delete`, `patch`.
    method: &'static str,
    /// `x-kubernetes-action`: `get`, `list`, `watch`, `watchlist`, `post`, `put`, `patch`, `delete`,
    /// `deletecollection`.
    action: &'static str,
    /// The operation id's verb: `read`, `list`, `watch`, `create`, `replace`, `patch`, `delete`, `deleteCollection`.
    verb: &'static str,
    params: &'static [Param],
    returns: Returns,
    /// The request body: `None`, or the definition it holds.
    body: Option<Body>,
    /// Operation id suffix (`ForAllNamespaces`, `List`, `ListForAllNamespaces`).
    suffix: &'static str,
    /// Description.
    description: String,
}

#[derive(Clone, Copy)]
enum Body {
    Object,
    Patch,
    DeleteOptions,
}

/// One resource's contribution: paths → operations, and its definitions.
struct ResourceDoc {
    paths: Vec<(String, Vec<Op>)>,
}

/// `core_v1`, `apps_v1`, `coordination_v1`, `exampleCom_v1`: the tag kube-apiserver gives a group-version's
/// operations; the operation id prefix is the same in camel case (`CoreV1`).
fn tag(group: &str, version: &str) -> (String, String) {
    let short = match group {
        "" => "core".to_owned(),
        g if g.ends_with(".k8s.io") && !g.ends_with(".x-k8s.io") => g.split('.').next().unwrap_or(g).to_owned(),
        g => {
            let mut out = String::new();
            for (i, part) in g.split(['.', '-']).enumerate() {
                if i == 0 {
                    out.push_str(part);
                } else {
                    out.push_str(&capitalize(part));
                }
            }
            out
        }
    };
    (
        format!("{short}_{version}"),
        format!("{}{}", capitalize(&short), capitalize(version)),
    )
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn resource_doc(spec: &ResourceSpec) -> ResourceDoc {
    let api = &spec.api;
    let kind = &api.kind;
    let base = api.base_path();
    let plural = &api.plural;
    let ns = if api.namespaced { "/namespaces/{namespace}" } else { "" };
    let op = |method, action, verb, params, returns, body, suffix, description: String| Op {
        method,
        action,
        verb,
        params,
        returns,
        body,
        suffix,
        description,
    };
    let mut paths = Vec::new();
    let collection = format!("{base}{ns}/{plural}");
    let object = format!("{collection}/{{name}}");
    paths.push((
        collection.clone(),
        vec![
            op(
                "get",
                "list",
                "list",
                LIST_PARAMS,
                Returns::List,
                None,
                "",
                format!("list or watch objects of kind {kind}"),
            ),
            op(
                "post",
                "post",
                "create",
                WRITE_PARAMS,
                Returns::Object,
                Some(Body::Object),
                "",
                format!("create a {kind}"),
            ),
            op(
                "delete",
                "deletecollection",
                "deleteCollection",
                DELETE_COLLECTION_PARAMS,
                Returns::Status,
                Some(Body::DeleteOptions),
                "",
                format!("delete collection of {kind}"),
            ),
        ],
    ));
    paths.push((
        object.clone(),
        vec![
            op(
                "get",
                "get",
                "read",
                &[],
                Returns::Object,
                None,
                "",
                format!("read the specified {kind}"),
            ),
            op(
                "put",
                "put",
                "replace",
                WRITE_PARAMS,
                Returns::Object,
                Some(Body::Object),
                "",
                format!("replace the specified {kind}"),
            ),
            op(
                "delete",
                "delete",
                "delete",
                DELETE_PARAMS,
                Returns::Status,
                Some(Body::DeleteOptions),
                "",
                format!("delete a {kind}"),
            ),
            op(
                "patch",
                "patch",
                "patch",
                PATCH_PARAMS,
                Returns::Object,
                Some(Body::Patch),
                "",
                format!("partially update the specified {kind}"),
            ),
        ],
    ));
    if spec.status_subresource {
        paths.push((
            format!("{object}/status"),
            vec![
                op(
                    "get",
                    "get",
                    "read",
                    &[],
                    Returns::Object,
                    None,
                    "",
                    format!("read status of the specified {kind}"),
                ),
                op(
                    "put",
                    "put",
                    "replace",
                    WRITE_PARAMS,
                    Returns::Object,
                    Some(Body::Object),
                    "",
                    format!("replace status of the specified {kind}"),
                ),
                op(
                    "patch",
                    "patch",
                    "patch",
                    PATCH_PARAMS,
                    Returns::Object,
                    Some(Body::Patch),
                    "",
                    format!("partially update status of the specified {kind}"),
                ),
            ],
        ));
    }
    paths.push((
        format!("{base}/watch{ns}/{plural}"),
        vec![op(
            "get",
            "watchlist",
            "watch",
            LIST_PARAMS,
            Returns::Event,
            None,
            "List",
            format!("watch individual changes to a list of {kind}"),
        )],
    ));
    paths.push((
        format!("{base}/watch{ns}/{plural}/{{name}}"),
        vec![op(
            "get",
            "watch",
            "watch",
            LIST_PARAMS,
            Returns::Event,
            None,
            "",
            format!("watch changes to an object of kind {kind}"),
        )],
    ));
    if api.namespaced {
        paths.push((
            format!("{base}/{plural}"),
            vec![op(
                "get",
                "list",
                "list",
                LIST_PARAMS,
                Returns::List,
                None,
                "ForAllNamespaces",
                format!("list or watch objects of kind {kind}"),
            )],
        ));
        paths.push((
            format!("{base}/watch/{plural}"),
            vec![op(
                "get",
                "watchlist",
                "watch",
                LIST_PARAMS,
                Returns::Event,
                None,
                "ListForAllNamespaces",
                format!("watch individual changes to a list of {kind}"),
            )],
        ));
    }
    ResourceDoc { paths }
}

/// Renders one operation.
fn render_op(spec: &ResourceSpec, path: &str, op: &Op, flavor: Flavor) -> Value {
    let api = &spec.api;
    let (tag, prefix) = tag(&api.group, &api.version);
    let namespaced = if api.namespaced && path.contains("{namespace}") {
        "Namespaced"
    } else {
        ""
    };
    let sub = if path.ends_with("/status") { "Status" } else { "" };
    let (verb, kind_part) = match op.verb {
        "deleteCollection" => ("delete", format!("Collection{namespaced}{}", api.kind)),
        v => (v, format!("{namespaced}{}", api.kind)),
    };
    let operation_id = format!("{verb}{prefix}{kind_part}{sub}{}", op.suffix);
    let object_def = definition_name(&api.group, &api.version, &api.kind);
    let returned = match op.returns {
        Returns::Object => object_def.clone(),
        Returns::List => definition_name(&api.group, &api.version, &format!("{}List", api.kind)),
        Returns::Status => meta::STATUS.to_owned(),
        Returns::Event => meta::WATCH_EVENT.to_owned(),
    };
    let watch = matches!(op.returns, Returns::Event) || op.action == "list";
    let produces: Vec<&str> = if watch {
        vec!["application/json", "application/json;stream=watch"]
    } else {
        vec!["application/json"]
    };
    let consumes: Vec<&str> = match op.body {
        Some(Body::Patch) => spec.patch_types(),
        _ => vec!["*/*"],
    };
    let mut codes: Vec<(&str, &str)> = vec![("200", "OK")];
    match op.action {
        "post" => codes.extend([("201", "Created"), ("202", "Accepted")]),
        "put" => codes.push(("201", "Created")),
        "patch" if op.params.iter().any(|p| p.0 == "force") => codes.push(("201", "Created")),
        "delete" => codes.push(("202", "Accepted")),
        _ => {}
    }
    let mut params: Vec<Value> = op.params.iter().map(|p| query_param(p, flavor)).collect();
    let mut out = json!({
        "description": op.description,
        "operationId": operation_id,
        "tags": [tag],
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": gvk(&api.group, &api.version, &api.kind),
    });
    match flavor {
        Flavor::V2 => {
            if let Some(body) = op.body {
                let (schema, required) = body_schema(body, &object_def, flavor);
                params.insert(
                    0,
                    json!({"name": "body", "in": "body", "required": required, "schema": schema}),
                );
            }
            let mut responses = Map::new();
            for (code, text) in codes {
                responses.insert(
                    code.into(),
                    json!({"description": text, "schema": flavor.reference(&returned)}),
                );
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            out["consumes"] = json!(consumes);
            out["produces"] = json!(produces);
            out["schemes"] = json!(["https"]);
            out["responses"] = Value::Object(responses);
        }
        Flavor::V3 => {
            if let Some(body) = op.body {
                let (schema, required) = body_schema(body, &object_def, flavor);
                let content: Map<String, Value> = consumes
                    .iter()
                    .map(|c| ((*c).to_owned(), json!({"schema": schema.clone()})))
                    .collect();
                out["requestBody"] = json!({"content": content, "required": required});
            }
            let mut responses = Map::new();
            for (code, text) in codes {
                let content: Map<String, Value> = produces
                    .iter()
                    .map(|c| ((*c).to_owned(), json!({"schema": flavor.reference(&returned)})))
                    .collect();
                responses.insert(code.into(), json!({"description": text, "content": content}));
            }
            responses.insert("401".into(), json!({"description": "Unauthorized"}));
            out["responses"] = Value::Object(responses);
        }
    }
    out["parameters"] = Value::Array(params);
    out
}

fn body_schema(body: Body, object_def: &str, flavor: Flavor) -> (Value, bool) {
    match body {
        Body::Object => (flavor.reference(object_def), true),
        Body::Patch => (flavor.reference(meta::PATCH), true),
        Body::DeleteOptions => (flavor.reference(meta::DELETE_OPTIONS), false),
    }
}

fn query_param(p: &Param, flavor: Flavor) -> Value {
    let (name, ty, description) = *p;
    match flavor {
        Flavor::V2 => json!({"name": name, "in": "query", "description": description, "type": ty, "uniqueItems": true}),
        Flavor::V3 => json!({"name": name, "in": "query", "description": description,
                              "schema": {"type": ty, "uniqueItems": true}}),
    }
}

/// The parameters every operation of a path shares: the path's own (`name`, `namespace`) and `pretty`.
fn path_params(path: &str, kind: &str, flavor: Flavor) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path_param = |name: &str, description: String| match flavor {
        Flavor::V2 => out.push(
            json!({"name": name, "in": "path", "required": true, "description": description,
                                       "type": "string", "uniqueItems": true}),
        ),
        Flavor::V3 => out.push(
            json!({"name": name, "in": "path", "required": true, "description": description,
                                       "schema": {"type": "string", "uniqueItems": true}}),
        ),
    };
    if path.contains("{name}") {
        path_param("name", format!("name of the {kind}"));
    }
    if path.contains("{namespace}") {
        path_param(
            "namespace",
            "object name and auth scope, such as for teams and projects".to_owned(),
        );
    }
    out.push(query_param(
        &("pretty", "string", "If 'true', the output is indented."),
        flavor,
    ));
    out
}

fn add_paths(spec: &ResourceSpec, flavor: Flavor, paths: &mut Map<String, Value>) {
    for (path, ops) in resource_doc(spec).paths {
        let mut item = Map::new();
        for op in &ops {
            item.insert(op.method.into(), render_op(spec, &path, op, flavor));
        }
        item.insert(
            "parameters".into(),
            Value::Array(path_params(&path, &spec.api.kind, flavor)),
        );
        paths.insert(path, Value::Object(item));
    }
}

fn add_definitions(spec: &ResourceSpec, flavor: Flavor, defs: &mut Map<String, Value>) {
    let api = &spec.api;
    defs.insert(
        definition_name(&api.group, &api.version, &api.kind),
        convert::object_schema(spec, flavor),
    );
    defs.insert(
        definition_name(&api.group, &api.version, &format!("{}List", api.kind)),
        convert::list_schema(spec, flavor),
    );
}

fn info() -> Value {
    json!({"title": "Kubernetes", "version": format!("v{}.{}.0", util::MAJOR, util::MINOR)})
}

fn group_versions(specs: &[Arc<ResourceSpec>]) -> Vec<(String, String)> {
    let mut gvs: Vec<(String, String)> = specs
        .iter()
        .map(|s| (s.api.group.clone(), s.api.version.clone()))
        .collect();
    gvs.sort();
    gvs.dedup();
    gvs
}

/// The whole v2 document (`/openapi/v2`).
pub(crate) fn v2(specs: &[Arc<ResourceSpec>]) -> Value {
    let mut paths = Map::new();
    let mut defs = meta::definitions(Flavor::V2, &group_versions(specs));
    for s in specs {
        add_paths(s, Flavor::V2, &mut paths);
        add_definitions(s, Flavor::V2, &mut defs);
    }
    json!({
        "swagger": "2.0",
        "info": info(),
        "paths": paths,
        "definitions": defs,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                                                 "description": "Bearer Token authentication"}},
        "security": [{"BearerToken": []}],
    })
}

/// The group-versions with a v3 document, by their path under `/openapi/v3/` (`api/v1`, `apis/apps/v1`).
pub(crate) fn v3_paths(specs: &[Arc<ResourceSpec>]) -> BTreeMap<String, (String, String)> {
    group_versions(specs)
        .into_iter()
        .map(|(g, v)| {
            let path = if g.is_empty() {
                format!("api/{v}")
            } else {
                format!("apis/{g}/{v}")
            };
            (path, (g, v))
        })
        .collect()
}

/// The v3 document of one group-version (`/openapi/v3/apis/{group}/{version}`).
pub(crate) fn v3(specs: &[Arc<ResourceSpec>], group: &str, version: &str) -> Value {
    let mine: Vec<&Arc<ResourceSpec>> = specs
        .iter()
        .filter(|s| s.api.group == group && s.api.version == version)
        .collect();
    let mut paths = Map::new();
    let mut schemas = meta::definitions(Flavor::V3, &[(group.to_owned(), version.to_owned())]);
    for s in &mine {
        add_paths(s, Flavor::V3, &mut paths);
        add_definitions(s, Flavor::V3, &mut schemas);
    }
    json!({
        "openapi": "3.0.0",
        "info": info(),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                                                 "description": "Bearer Token authentication"}},
        },
        "security": [{"BearerToken": []}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<Arc<ResourceSpec>> {
        ResourceSpec::defaults().into_iter().map(Arc::new).collect()
    }

    /// The operation `method` of `path` in a document.
    fn op<'a>(doc: &'a Value, path: &str, method: &str) -> &'a Value {
        &doc["paths"][path][method]
    }

    #[test]
    fn v2_names_operations_and_kinds_like_kube_apiserver() {
        let doc = v2(&defaults());
        let list = op(&doc, "/api/v1/namespaces/{namespace}/configmaps", "get");
        assert_eq!(list["operationId"], "listCoreV1NamespacedConfigMap");
        assert_eq!(list["x-kubernetes-action"], "list");
        assert_eq!(
            list["x-kubernetes-group-version-kind"],
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        assert_eq!(
            list["responses"]["200"]["schema"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.ConfigMapList"
        );
        let all = op(&doc, "/apis/apps/v1/deployments", "get");
        assert_eq!(all["operationId"], "listAppsV1DeploymentForAllNamespaces");
        let status = op(
            &doc,
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status",
            "patch",
        );
        assert_eq!(status["operationId"], "patchAppsV1NamespacedDeploymentStatus");
        let lease = op(
            &doc,
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            "delete",
        );
        assert_eq!(lease["operationId"], "deleteCoordinationV1CollectionNamespacedLease");
        assert_eq!(lease["tags"], json!(["coordination_v1"]));
        let node = op(&doc, "/api/v1/nodes/{name}", "put");
        assert_eq!(node["operationId"], "replaceCoreV1Node");
        assert_eq!(
            op(&doc, "/api/v1/watch/namespaces/{namespace}/pods/{name}", "get")["x-kubernetes-action"],
            "watch"
        );
        let defs = &doc["definitions"];
        assert_eq!(
            defs["io.k8s.api.apps.v1.DeploymentList"]["x-kubernetes-group-version-kind"][0]["kind"],
            "DeploymentList"
        );
        assert!(defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["labels"].is_object());
    }

    #[test]
    fn writes_declare_field_validation_as_kubectl_looks_for_it() {
        let doc = v2(&defaults());
        for (path, method) in [
            ("/api/v1/namespaces/{namespace}/configmaps", "post"),
            ("/api/v1/namespaces/{namespace}/configmaps/{name}", "put"),
            ("/api/v1/namespaces/{namespace}/configmaps/{name}", "patch"),
        ] {
            let params = op(&doc, path, method)["parameters"].as_array().unwrap();
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"),
                "{method} {path}"
            );
        }
        let body = &op(&doc, "/api/v1/namespaces/{namespace}/configmaps", "post")["parameters"][0];
        assert_eq!(body["in"], "body");
        assert_eq!(body["schema"]["$ref"], "#/definitions/io.k8s.api.core.v1.ConfigMap");
        let v3doc = v3(&defaults(), "apps", "v1");
        let patch = op(
            &v3doc,
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
            "patch",
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert_eq!(
            patch["requestBody"]["content"]["application/merge-patch+json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
        );
    }

    #[test]
    fn strategic_merge_is_offered_only_with_merge_strategies() {
        use kube_informer::object::ApiResource;
        let plain = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true));
        let merging = plain
            .clone()
            .schema(json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "object"},
                "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}}}}}));
        for (spec, smp) in [(plain, false), (merging, true)] {
            let doc = v3(&[Arc::new(spec)], "example.com", "v1");
            let patch = op(
                &doc,
                "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}",
                "patch",
            );
            let content = patch["requestBody"]["content"].as_object().unwrap();
            assert_eq!(content.contains_key("application/strategic-merge-patch+json"), smp);
            assert!(content.contains_key("application/apply-patch+yaml"));
        }
    }

    #[test]
    fn v3_documents_hold_one_group_version_and_the_shared_types() {
        let specs = defaults();
        let paths = v3_paths(&specs);
        assert!(paths.contains_key("api/v1") && paths.contains_key("apis/apps/v1"));
        assert_eq!(
            paths["apis/coordination.k8s.io/v1"],
            ("coordination.k8s.io".to_owned(), "v1".to_owned())
        );
        let doc = v3(&specs, "", "v1");
        assert_eq!(doc["openapi"], "3.0.0");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("io.k8s.api.core.v1.Pod"));
        assert!(!schemas.contains_key("io.k8s.api.apps.v1.Deployment"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(
            doc["paths"]
                .as_object()
                .unwrap()
                .keys()
                .all(|p| p.starts_with("/api/v1/"))
        );
        assert_eq!(
            schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "DeleteOptions"}])
        );
    }
}
