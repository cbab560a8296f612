//! The resource verbs other than WATCH: GET, LIST, POST, PUT, PATCH, DELETE, DELETE of a collection — request
//! decoding and answers around [`strategy`] and [`list`].

use serde_json::{Value, json};

use crate::admission::Admission;
use crate::admission::field_validation::{self, Directive, Stage};
use crate::api::errors::{self, Failure, FieldError};
use crate::api::user::UserInfo;
use crate::auth::authorizer::{self, Attributes};
use crate::auth::rbac::{self, Policy, escalation_check::Guard};
use crate::auth::serviceaccount::token_request;
use crate::endpoints::ServerState;
use crate::endpoints::list::{self, ListOptions};
use crate::endpoints::router::ResourcePath;
use crate::http::RequestHead;
use crate::http::log::Verb;
use crate::http::request_info::RequestInfo;
use crate::patch::managed_fields;
use crate::protobuf;
use crate::registry::certificate_approval;
use crate::registry::component_status;
use crate::registry::conversion;
use crate::registry::crd;
use crate::registry::eviction;
use crate::registry::namespace_deletion;
use crate::registry::pod_subresources;
use crate::registry::reply::Reply;
use crate::registry::resource::ResourceSpec;
use crate::registry::scale;
use crate::registry::scale_subresource::ScaleSubresource;
use crate::registry::strategy::{self, DeleteOptions, Deleted, OnCommit, PatchType, Target};
use crate::storage::store::{ListQuery, StoredObject, object_key};
use std::sync::Arc;

/// What every layer serving a request asks of it, read once by the connection and passed down: the server's shared
/// state (the store among it), the request as sent (head, query, body), what it asks (the one reading of its path
/// that authorization judged, and the verb and resource path the router resolved from it), and who asks.
pub(crate) struct RequestContext<'a> {
    pub(crate) shared: &'a dyn ServerState,
    pub(crate) head: &'a RequestHead,
    /// The query string's parameters, decoded.
    pub(crate) query: &'a [(String, String)],
    pub(crate) body: &'a [u8],
    /// The request as the authorizers read it.
    pub(crate) info: &'a RequestInfo,
    pub(crate) verb: Verb,
    /// The resource, namespace, name and subresource the path resolved to.
    pub(crate) path: &'a ResourcePath,
    /// `None` when authentication is off.
    pub(crate) user: Option<&'a UserInfo>,
    /// The RBAC objects in the RBAC mode (writes of roles and bindings are checked against escalation).
    pub(crate) policy: Option<Arc<Policy>>,
}

impl RequestContext<'_> {
    /// The object the request names, for the registry; a dry run as the query asks (400 for a bad `dryRun`).
    fn target(&self) -> Result<Target<'_>, Failure> {
        let r = self.path;
        let target = Target::new(
            self.shared.store(),
            &r.spec,
            r.namespace.as_deref(),
            r.name.as_deref().unwrap_or(""),
        );
        Ok(target.dry_run(dry_run(self.query)?))
    }
}

/// Serves a non-watch request on a resource path. `on_commit` is called under the store's lock as its first write
/// commits, before anything it wrote is visible.
pub(crate) fn handle(ctx: &RequestContext<'_>, on_commit: OnCommit<'_>) -> Reply {
    let (shared, verb, r, user, policy) = (ctx.shared, ctx.verb, ctx.path, ctx.user, ctx.policy.clone());
    let write = !matches!(verb, Verb::Get | Verb::List | Verb::Watch);
    // A PUT that may create (create-on-update) is authorized for `create` as well, as apiserver's update handler
    // wraps the create's validation (`withAuthorization`); the refusal is answered only if it would create.
    let create_refused = match (user, verb, &r.subresource) {
        (Some(u), Verb::Update, None) if r.spec.allows_create_on_update() => {
            // The request as authorization read it, asked again for `create`.
            let mut attrs = Attributes::of_request(u, ctx.info);
            attrs.verb = "create".to_owned();
            let decision = authorizer::authorize(shared.auth(), policy.as_deref(), &attrs);
            (!decision.allowed)
                .then(|| authorizer::forbidden_status(&attrs.api_group, &attrs.resource, &attrs.name, &decision.reason))
        }
        _ => None,
    };
    // RBAC's escalation check of a write of a role or binding (set up outside the store's lock).
    let guard = match (user, policy) {
        (Some(u), Some(p)) if write => {
            let old = r.name.as_deref().and_then(|name| {
                let ns = if r.spec.api.namespaced {
                    r.namespace.as_deref().unwrap_or("")
                } else {
                    ""
                };
                shared
                    .store()
                    .lock()
                    .get(&r.spec.id(), &object_key(ns, name))
                    .map(|o| o.to_value())
            });
            let ns = r.namespace.as_deref().unwrap_or("");
            Guard::new(
                shared.auth(),
                p,
                u,
                &r.spec.id(),
                ns,
                r.name.as_deref().unwrap_or(""),
                old,
            )
        }
        _ => None,
    };
    let checks = WriteChecks {
        escalation: guard.as_ref(),
        create_refused,
    };
    let reply = run(ctx, checks, on_commit).unwrap_or_else(Reply::Status);
    // A write to a CRD, or to an object of a CRD being deleted, moves what the CRD's controllers do.
    if (r.spec.id() == crd::ID || r.spec.terminating) && write {
        crd::sync(shared.store());
    }
    // A policy's type checking is written as kube-apiserver's controller writes it.
    if r.spec.id() == crate::admission::validating_admission_policy::POLICIES && write {
        crate::admission::validating_admission_policy::sync(shared.store());
    }
    // A write in a terminating namespace (or to one) may let its deletion go on.
    if write {
        namespace_deletion::after_write(shared.store(), &r.spec, r.namespace.as_deref(), r.name.as_deref());
    }
    // A write to a ClusterRole moves what the aggregated ones hold.
    if r.spec.id() == rbac::rule_resolver::CLUSTER_ROLES && write {
        rbac::clusterrole_aggregation::sync(shared.store());
    }
    let reply = conversion::reply(&r.spec, reply);
    match &r.spec.deprecation {
        Some(w) => Reply::warned(reply, vec![w.clone()]),
        None => reply,
    }
}

fn param<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn dry_run(query: &[(String, String)]) -> Result<bool, Failure> {
    match param(query, "dryRun") {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(v) => Err(errors::bad_request(format!(
            "Invalid dry run value {v:?}: only \"All\" is supported"
        ))),
    }
}

/// A JSON, YAML or protobuf request body as a JSON object, and the keys repeated in it (looked for in JSON unless
/// `directive` is `Ignore`).
fn decode_body(
    spec: &ResourceSpec,
    head: &RequestHead,
    body: &[u8],
    directive: Directive,
) -> Result<(Value, Vec<String>), Failure> {
    decode_body_as(&spec.api.api_version(), &spec.api.kind, head, body, directive)
}

/// [`decode_body`] for a body of type `api_version` `kind` (a subresource's or a review's).
pub(crate) fn decode_body_as(
    api_version: &str,
    kind: &str,
    head: &RequestHead,
    body: &[u8],
    directive: Directive,
) -> Result<(Value, Vec<String>), Failure> {
    let ct = head.header("content-type").unwrap_or("application/json");
    // Protobuf for the kinds k8s.io/api defines; custom resources have none, as with kube-apiserver.
    let proto = protobuf::knows_kind(api_version, kind);
    match ct.split(';').next().unwrap_or("").trim() {
        protobuf::MEDIA_TYPE if proto => protobuf::decode_object(body, api_version, kind)
            .map(|v| (v, Vec::new()))
            .map_err(errors::bad_request),
        "application/json" | "" | "*/*" if directive != Directive::Ignore => {
            match field_validation::parse_noting_duplicates(body) {
                Ok((v, dups)) if v.is_object() => Ok((v, dups)),
                // The same answers as without the check.
                _ => strategy::parse_object(body).map(|v| (v, Vec::new())),
            }
        }
        "application/json" | "" | "*/*" => strategy::parse_object(body).map(|v| (v, Vec::new())),
        "application/yaml" => {
            let text = std::str::from_utf8(body).map_err(|_| errors::bad_request("body is not UTF-8"))?;
            let v: Value =
                serde_saphyr::from_str(text).map_err(|e| errors::bad_request(format!("error decoding YAML: {e}")))?;
            if v.is_object() {
                Ok((v, Vec::new()))
            } else {
                Err(errors::bad_request("the body of the request must be an object"))
            }
        }
        _ if proto => Err(errors::unsupported_body_type(&[
            "application/json",
            "application/yaml",
            protobuf::MEDIA_TYPE,
        ])),
        _ => Err(errors::unsupported_body_type(&["application/json", "application/yaml"])),
    }
}

/// The checks of a write set up before it: RBAC's escalation check, and the refusal of a create-on-update.
struct WriteChecks<'g> {
    escalation: Option<&'g Guard<'g>>,
    /// The 403 a PUT that would create answers: its writer may not `create`.
    create_refused: Option<Failure>,
}

fn run(ctx: &RequestContext<'_>, checks: WriteChecks<'_>, on_commit: OnCommit<'_>) -> Result<Reply, Failure> {
    let (shared, verb, r, head, query, body) = (ctx.shared, ctx.verb, ctx.path, ctx.head, ctx.query, ctx.body);
    let guard = checks.escalation;
    let spec = &*r.spec;
    let ns = r.namespace.as_deref();
    let name = r.name.as_deref().unwrap_or("");
    if spec.id() == "componentstatuses" && spec.catalog.is_some() {
        return match verb {
            Verb::List => Ok(component_status::list(spec)),
            Verb::Get => component_status::get(spec, name),
            _ => Err(errors::method_not_allowed()),
        };
    }
    let pods = spec.id() == "pods" && spec.catalog.is_some();
    let status_only = match r.subresource.as_deref() {
        None => false,
        Some("log") if pods => return pod_subresources::log(shared.store(), ns.unwrap_or(""), name, query),
        Some(sub @ ("exec" | "attach" | "portforward")) if pods => {
            return pod_subresources::stream(shared.store(), ns.unwrap_or(""), name, sub, query);
        }
        Some("eviction") if pods && verb == Verb::Create => {
            let (eviction, _) = decode_body_as("policy/v1", "Eviction", head, body, Directive::Ignore)?;
            return eviction::create(
                shared.store(),
                ns.unwrap_or(""),
                name,
                &eviction,
                dry_run(query)?,
                on_commit,
            );
        }
        Some("ephemeralcontainers") if pods => {
            let merge = pod_subresources::ephemeral_containers_update;
            return partial_write(ctx, false, &merge, on_commit);
        }
        Some("approval") if spec.id() == "certificatesigningrequests.certificates.k8s.io" => {
            return partial_write(ctx, true, &certificate_approval::update, on_commit);
        }
        Some("finalize") if verb == Verb::Update => {
            let (v, _) = decode_body(spec, head, body, Directive::Ignore)?;
            return namespace_deletion::finalize(shared.store(), spec, name, &v).map(|o| Reply::Object(200, o));
        }
        Some("status") if spec.status_subresource => true,
        Some("scale") => match &spec.scale {
            Some(scale) => return scale_request(ctx, scale, on_commit),
            None => return Err(errors::no_such_path()),
        },
        Some("token") if spec.id() == "serviceaccounts" && verb == Verb::Create => {
            let (request, _) = decode_body_as(
                "authentication.k8s.io/v1",
                "TokenRequest",
                head,
                body,
                Directive::Ignore,
            )?;
            let answer = token_request::create(shared.store(), shared.issuer(), ns.unwrap_or(""), name, request)?;
            return Ok(Reply::object_value(201, &answer));
        }
        Some(_) => return Err(errors::no_such_path()),
    };
    let store = shared.store();
    match verb {
        Verb::List => {
            let opts = ListOptions::parse(query, spec, shared.sharded_list_and_watch_enabled())?;
            list::list(store, shared.too_large_wait(), shared.watch_cache(), spec, ns, &opts)
        }
        Verb::Get => get(shared, spec, ns, name, query),
        Verb::Create | Verb::Update => {
            let options = if verb == Verb::Create {
                "CreateOptions"
            } else {
                "UpdateOptions"
            };
            let writer = managed_fields::writer(query, head.header("user-agent").unwrap_or(""), options, None)?;
            let directive = Directive::parse(query, options)?;
            let (mut v, duplicates) = decode_body(spec, head, body, directive)?;
            let mut admission = Admission {
                spec,
                directive,
                stage: Stage::Decode,
                worded: Vec::new(),
                duplicates,
                body: Some(body),
                patch: None,
                warnings: Vec::new(),
            };
            admission.admit(&mut v)?;
            // As apiserver's create and update handlers: the body's namespace before anything else is asked of it.
            strategy::ensure_namespace_matches(spec, ns, &v)?;
            if let Some(g) = guard {
                g.check(&v)?;
            }
            let mut warnings = admission.warnings;
            let reply = if verb == Verb::Create {
                let w = strategy::create(store, spec, ns, v, dry_run(query)?, &writer.manager, on_commit)?;
                warnings.extend(w.warnings);
                Reply::Object(201, w.object)
            } else {
                let target = ctx.target()?;
                let creates = !status_only && spec.allows_create_on_update() && !strategy::exists(target);
                let w = if creates {
                    if let Some(refusal) = checks.create_refused {
                        return Err(refusal);
                    }
                    strategy::create_on_update(target, v, &writer.manager, on_commit)?
                } else {
                    strategy::update(target, v, status_only, &writer.manager, on_commit)?
                };
                warnings.extend(w.warnings);
                Reply::Object(if w.created { 201 } else { 200 }, w.object)
            };
            Ok(Reply::warned(reply, warnings))
        }
        Verb::Patch => {
            let ct = head.header("content-type").unwrap_or("");
            let kind = PatchType::from_content_type(ct)
                .filter(|k| *k != PatchType::Strategic || spec.strategic_merge_schema().is_some())
                .ok_or_else(|| spec.unsupported_patch_type())?;
            let user_agent = head.header("user-agent").unwrap_or("");
            let writer = managed_fields::writer(query, user_agent, "PatchOptions", Some(kind == PatchType::Apply))?;
            let directive = Directive::parse(query, "PatchOptions")?;
            let doc = strategy::parse_patch(kind, body)?;
            let (worded, duplicates) = match kind {
                _ if directive == Directive::Ignore => (Vec::new(), Vec::new()),
                PatchType::Json => (field_validation::json_patch_problems(body), Vec::new()),
                PatchType::Merge | PatchType::Strategic => (
                    Vec::new(),
                    field_validation::parse_noting_duplicates(body)
                        .map(|(_, d)| d)
                        .unwrap_or_default(),
                ),
                PatchType::Apply => (Vec::new(), Vec::new()),
            };
            let mut admission = Admission {
                spec,
                directive,
                stage: Stage::Patch,
                worded,
                duplicates,
                body: None,
                patch: Some((kind, &doc)),
                warnings: Vec::new(),
            };
            let w = strategy::patch(
                ctx.target()?,
                kind,
                &doc,
                status_only,
                &writer,
                &mut |obj| {
                    admission.admit(obj)?;
                    guard.map_or(Ok(()), |g| g.check(obj))
                },
                on_commit,
            )?;
            let mut warnings = admission.warnings;
            warnings.extend(w.warnings);
            Ok(Reply::warned(
                Reply::Object(if w.created { 201 } else { 200 }, w.object),
                warnings,
            ))
        }
        Verb::Delete => {
            let opts = delete_options(head, query, body)?;
            Ok(match strategy::delete(store, spec, ns, name, &opts, on_commit)? {
                // The storages that say `ReturnDeletedObject` answer the object at the deletion's revision.
                Deleted::Gone(last) if spec.returns_deleted_object => Reply::Object(200, last),
                Deleted::Gone(last) => Reply::object_value(200, &success(spec, &last)),
                Deleted::Finalizing(obj) => Reply::Object(200, obj),
            })
        }
        Verb::DeleteCollection => delete_collection(shared, spec, ns, head, query, body, on_commit),
        Verb::Watch => Err(errors::internal("watch is served by the connection")),
    }
}

/// A subresource that writes part of its object (`pods/ephemeralcontainers`, a CSR's `approval`): GET answers the
/// object; PUT and PATCH give the whole object, which `merge(stored, written)` turns into what is stored (the rest
/// kept as stored); `status_only` when that part is in the status.
fn partial_write(
    ctx: &RequestContext<'_>,
    status_only: bool,
    merge: &dyn Fn(&Value, &mut Value) -> Result<(), Failure>,
    on_commit: OnCommit<'_>,
) -> Result<Reply, Failure> {
    let (shared, verb, r, head, query, body) = (ctx.shared, ctx.verb, ctx.path, ctx.head, ctx.query, ctx.body);
    let (store, spec, ns) = (shared.store(), &*r.spec, r.namespace.as_deref());
    let name = r.name.as_deref().unwrap_or("");
    if verb == Verb::Get {
        return get(shared, spec, ns, name, query);
    }
    let key = object_key(if spec.api.namespaced { ns.unwrap_or("") } else { "" }, name);
    let old = store
        .lock()
        .get(&spec.id(), &key)
        .map(|o| o.to_value())
        .ok_or_else(|| errors::not_found(&spec.api, name))?;
    let user_agent = head.header("user-agent").unwrap_or("");
    match verb {
        Verb::Update => {
            let writer = managed_fields::writer(query, user_agent, "UpdateOptions", None)?;
            let (mut v, _) = decode_body(spec, head, body, Directive::Ignore)?;
            merge(&old, &mut v)?;
            Admission::quiet(spec).admit(&mut v)?;
            let w = strategy::update(ctx.target()?, v, status_only, &writer.manager, on_commit)?;
            Ok(Reply::warned(Reply::Object(200, w.object), w.warnings))
        }
        Verb::Patch => {
            let ct = head.header("content-type").unwrap_or("");
            let kind = PatchType::from_content_type(ct).ok_or_else(|| spec.unsupported_patch_type())?;
            let writer = managed_fields::writer(query, user_agent, "PatchOptions", Some(kind == PatchType::Apply))?;
            let doc = strategy::parse_patch(kind, body)?;
            let w = strategy::patch(
                ctx.target()?,
                kind,
                &doc,
                status_only,
                &writer,
                &mut |obj| {
                    merge(&old, obj)?;
                    Admission::quiet(spec).admit(obj)
                },
                on_commit,
            )?;
            Ok(Reply::warned(Reply::Object(200, w.object), w.warnings))
        }
        _ => Err(errors::method_not_allowed()),
    }
}

/// A request on `…/{name}/scale`.
fn scale_request(
    ctx: &RequestContext<'_>,
    scale: &ScaleSubresource,
    on_commit: OnCommit<'_>,
) -> Result<Reply, Failure> {
    let (shared, verb, r, head, query, body) = (ctx.shared, ctx.verb, ctx.path, ctx.head, ctx.query, ctx.body);
    let (store, spec, ns) = (shared.store(), &*r.spec, r.namespace.as_deref());
    let name = r.name.as_deref().unwrap_or("");
    let user_agent = head.header("user-agent").unwrap_or("");
    let answer = match verb {
        Verb::Get => scale::get(store, spec, scale, ns, name)?,
        Verb::Update => scale::update(
            ctx.target()?,
            scale,
            &decode_body_as("autoscaling/v1", "Scale", head, body, Directive::Ignore)?.0,
            &managed_fields::writer(query, user_agent, "UpdateOptions", None)?,
            on_commit,
        )?,
        Verb::Patch => {
            let ct = head.header("content-type").unwrap_or("");
            // A `Scale` is a built-in type: every patch type applies to it, the strategic one included.
            let kind = PatchType::from_content_type(ct).ok_or_else(|| {
                errors::unsupported_body_type(&[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ])
            })?;
            let writer = managed_fields::writer(query, user_agent, "PatchOptions", Some(kind == PatchType::Apply))?;
            let doc = strategy::parse_patch(kind, body)?;
            scale::patch(ctx.target()?, scale, kind, &doc, &writer, on_commit)?
        }
        _ => return Err(errors::method_not_allowed()),
    };
    Ok(Reply::object_value(200, &answer))
}

/// GET of one object, with `resourceVersion` semantics ("" latest, "0" any, N at least N).
fn get(
    shared: &dyn ServerState,
    spec: &ResourceSpec,
    ns: Option<&str>,
    name: &str,
    query: &[(String, String)],
) -> Result<Reply, Failure> {
    let rv = match param(query, "resourceVersion") {
        None | Some("") => 0,
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| errors::bad_request(format!("invalid resource version {v:?}")))?,
    };
    let (g, fresh) = shared.store().wait_for_rev(rv, shared.too_large_wait());
    if !fresh {
        return Err(errors::too_large_resource_version(rv, g.rev()));
    }
    let key = object_key(if spec.api.namespaced { ns.unwrap_or("") } else { "" }, name);
    g.get(&spec.id(), &key)
        .map(|o| Reply::Object(200, o))
        .ok_or_else(|| errors::not_found(&spec.api, name))
}

/// The `Success` status a delete answers with once the object is gone (details name the resource, not the kind,
/// as kube-apiserver does).
fn success(spec: &ResourceSpec, last: &StoredObject) -> Value {
    let mut details = json!({"name": last.name, "kind": spec.api.plural, "uid": last.uid});
    if !spec.api.group.is_empty() {
        details["group"] = json!(spec.api.group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// `DeleteOptions` from the body (JSON, or protobuf as client-go's typed clients send it when configured for
/// protobuf) and the query string.
fn delete_options(head: &RequestHead, query: &[(String, String)], body: &[u8]) -> Result<DeleteOptions, Failure> {
    let mut opts = DeleteOptions {
        dry_run: dry_run(query)?,
        ..Default::default()
    };
    let mut policy = param(query, "propagationPolicy").map(str::to_owned);
    if let Some(g) = param(query, "gracePeriodSeconds") {
        opts.grace_period = Some(
            g.parse()
                .map_err(|_| errors::bad_request(format!("invalid gracePeriodSeconds {g:?}")))?,
        );
    }
    if !body.iter().all(u8::is_ascii_whitespace) {
        let ct = head.header("content-type").unwrap_or("");
        let v: Value = if ct.split(';').next().unwrap_or("").trim() == protobuf::MEDIA_TYPE {
            protobuf::decode_delete_options(body)
                .map_err(|e| errors::bad_request(format!("error decoding DeleteOptions: {e}")))?
        } else {
            serde_json::from_slice(body)
                .map_err(|e| errors::bad_request(format!("error decoding DeleteOptions: {e}")))?
        };
        let text = |v: &Value| v.as_str().map(str::to_owned);
        opts.uid = v.pointer("/preconditions/uid").and_then(text);
        opts.resource_version = v.pointer("/preconditions/resourceVersion").and_then(text);
        if let Some(g) = v.get("gracePeriodSeconds").and_then(Value::as_i64) {
            opts.grace_period = Some(g);
        }
        if let Some(p) = v.get("propagationPolicy").and_then(Value::as_str) {
            policy = Some(p.to_owned());
        }
        if let Some(d) = v.get("dryRun").and_then(Value::as_array)
            && d.iter().any(|x| x == "All")
        {
            opts.dry_run = true;
        }
    }
    if let Some(p) = policy.filter(|p| !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")) {
        let e = FieldError::not_supported("propagationPolicy", &p, &["Foreground", "Background", "Orphan", "nil"]);
        return Err(errors::invalid("meta.k8s.io", "DeleteOptions", "", vec![e]));
    }
    Ok(opts)
}

/// DELETE of a collection: deletes every object matching the selectors; answers the list of what was deleted.
/// `on_commit` hears of every deletion (the request is logged at the first).
fn delete_collection(
    shared: &dyn ServerState,
    spec: &ResourceSpec,
    ns: Option<&str>,
    head: &RequestHead,
    query: &[(String, String)],
    body: &[u8],
    on_commit: OnCommit<'_>,
) -> Result<Reply, Failure> {
    let list_opts = ListOptions::parse(query, spec, shared.sharded_list_and_watch_enabled())?;
    let opts = delete_options(head, query, body)?;
    let ns = if spec.api.namespaced { ns } else { None };
    let targets = {
        let g = shared.store().lock();
        let filter = |o: &StoredObject| list_opts.matches(spec, o);
        let q = ListQuery {
            namespace: ns,
            at: g.rev(),
            after: None,
            limit: 0,
            filter: &filter,
            count_remaining: false,
        };
        g.list(&spec.id(), &q).items
    };
    let mut items = Vec::with_capacity(targets.len());
    for t in targets {
        let ns = (!t.namespace.is_empty()).then_some(t.namespace.as_str());
        match strategy::delete(shared.store(), spec, ns, &t.name, &opts, &mut *on_commit) {
            Ok(Deleted::Gone(o) | Deleted::Finalizing(o)) => items.push(o),
            // Deleted meanwhile by someone else.
            Err(st) if st.code == 404 => {}
            Err(st) => return Err(st),
        }
    }
    let meta = json!({"resourceVersion": shared.store().lock().rev().to_string()});
    Ok(list::list_reply(spec, &meta, items))
}
