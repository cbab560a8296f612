//! A Kubernetes API server for tests: in-process ([`ApiServer`]) for Rust tests, examples and benchmarks, or
//! standalone (the `kube-informer-apiserver` program) for tests in any language.
//!
//! client-go offers fake clientsets that skip HTTP, kube-rs a mock service; this is a real server: it speaks the
//! Kubernetes wire protocol over real HTTP/1.1 (or HTTPS with a fresh CA) on 127.0.0.1, keeps objects with
//! etcd-like MVCC semantics, streams watches from a shared history like kube-apiserver's watch cache, and lets a
//! test inject faults — throttling, errors, cut or stalled streams, garbage — into the next matching request.
//!
//! ```
//! use kube_informer::object::{core::ConfigMap, ObjectMeta};
//! use kube_informer_apiserver::{ApiServer, Fault};
//!
//! let server = ApiServer::start().unwrap();
//! server.create(&ConfigMap::new(ObjectMeta::namespaced("default", "settings")).with("color", "blue")).unwrap();
//!
//! // Plain HTTP: any client works.
//! let agent = ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build());
//! let url = format!("{}/api/v1/namespaces/default/configmaps?limit=500", server.url());
//! let text = agent.get(&url).call().unwrap().into_body().read_to_string().unwrap();
//! let list: serde_json::Value = serde_json::from_str(&text).unwrap();
//! assert_eq!(list["items"][0]["data"]["color"], "blue");
//!
//! // The next LIST is throttled.
//! server.inject(Fault::list("configmaps").error(429).retry_after(1));
//! let resp = agent.get(&url).call().unwrap();
//! assert_eq!(resp.status(), 429);
//! assert_eq!(resp.headers()["retry-after"], "1");
//! assert!(server.kubeconfig_path().exists());
//! ```
//!
//! # What it serves
//!
//! Any resource registered as a [`ResourceSpec`] (core and group APIs, namespaced and cluster-scoped); by default
//! core/v1 `configmaps`, `secrets`, `namespaces`, `events`, `pods`, `nodes`, `services`, `serviceaccounts` (with the
//! `token` subresource), coordination.k8s.io/v1 `leases` and apps/v1 `deployments`, rbac.authorization.k8s.io/v1
//! `roles`, `clusterroles`, `rolebindings` and `clusterrolebindings`, apiextensions.k8s.io/v1
//! `customresourcedefinitions` (and the custom resources they define, see the CRDs row), authorization.k8s.io/v1
//! `selfsubjectaccessreviews`, `selfsubjectrulesreviews`, `subjectaccessreviews` and `localsubjectaccessreviews`, and
//! authentication.k8s.io/v1 `tokenreviews` and `selfsubjectreviews`. Discovery (`/api`, `/apis`, `/api/v1`,
//! `/apis/{g}`, `/apis/{g}/{v}`), OpenAPI,
//! `/version` and `/healthz` are answered so clients can resolve a plural into an `ApiResource`.
//!
//! # Fidelity
//!
//! | Behaviour | Kubernetes rule followed | Deliberately not done |
//! |---|---|---|
//! | resourceVersion | One global counter, as etcd's revision; stamped into every written object; a LIST's `metadata.resourceVersion` is the revision read | Values start at 1 (configurable), not at a cluster's large numbers |
//! | Create | uid, creationTimestamp (RFC 3339), `generation: 1` where the resource counts generations ([`GenerationRule`]: pods, deployments, custom resources — not config maps, secrets, namespaces, events, nodes, services, leases); `generateName` + 5 random characters; DNS-1123 subdomain names (labels for namespaces and services): 422 Invalid with a `FieldValueInvalid` cause; 409 AlreadyExists; a set resourceVersion is refused (500, as apiserver); label keys and values validated; body namespace must match the URL's (400) ; `metadata.managedFields` as the Managed fields row says | No admission (namespaces need not exist), no `selfLink`; defaulting as the next row says |
//! | Defaulting (built-in kinds) | The default resources' objects are defaulted as kube-apiserver 1.34 defaults them, on create, update, status update and a patch's result, before the generation is compared (a controller re-sending its desired spec writes nothing): Secret `type: Opaque`; Namespace `kubernetes.io/metadata.name` label, `spec.finalizers: [kubernetes]` on create (kept by updates), `status.phase: Active`; pods and pod templates: `restartPolicy`, `dnsPolicy`, `schedulerName`, `securityContext: {}`, `terminationGracePeriodSeconds`, containers' `imagePullPolicy` by tag, `terminationMessagePath`/`Policy`, ports' `protocol`, `fieldRef.apiVersion`, probes' timeouts and thresholds, `httpGet` path and scheme, `grpc.service`, a sourceless volume's `emptyDir`, `defaultMode`s, `hostPath.type`, token expiry, ephemeral claims' `volumeMode`; pods only: requests from limits, `enableServiceLinks`, host ports on the host network; on pod create: status `Pending` with its `qosClass`, the `SchedulingGated` condition, `matchLabelKeys`/`mismatchLabelKeys` merged into selectors, AppArmor annotations copied to fields; pod status writes keep `qosClass` and `observedGeneration`s; resource quantities rounded up to milli and every quantity written canonically (`1000m` → `1`, `1024Mi` → `1Gi`); Deployment `replicas: 1`, `RollingUpdate` 25%/25%, `revisionHistoryLimit: 10`, `progressDeadlineSeconds: 600`, `status: {}` on create; Service `type`, `sessionAffinity` (and the ClientIP timeout), ports' `protocol` and `targetPort`, `internalTrafficPolicy`, `externalTrafficPolicy`, `allocateLoadBalancerNodePorts`, `ipFamilyPolicy`/`ipFamilies` of a single-stack IPv4 cluster, a cluster IP drawn at random from `10.96.0.0/12` (kubeadm's range; `10.96.0.1` counts as the `kubernetes` service's), node ports from 30000–32767 and a health-check node port, requested ones checked (422 already allocated / not in range), allocations kept when an update leaves them out, the cluster IP immutable (422), type-dependent fields dropped on a type change; Node status kept on create, `allocatable` from `capacity`; a CRD's `singular` and `listKind` names, `conversion: {strategy: None}` and a webhook service's port 443; what Go always writes for these types (a container's `resources: {}`, `divisor: "0"`, a service's `status.loadBalancer: {}`, an event's `source: {}`, `reportingComponent: ""` and null times, a node's `nodeInfo`, a template's metadata without `creationTimestamp: null`) | No admission plugins: no ServiceAccount (`serviceAccountName: default`, the token volume), Priority (`priority: 0`, `preemptionPolicy`), DefaultTolerationSeconds (the `not-ready`/`unreachable` tolerations), LimitRanger, ResourceQuota, PodSecurity, NamespaceLifecycle; no scheduler (`spec.nodeName` stays empty, pods stay `Pending`) and no controllers (no deployment status or replica sets; a namespace's `kubernetes` finalizer does not hold its deletion); pod-level resources are not defaulted from the containers'; no validation beyond the allocators' (an invalid pod is stored as sent, defaulted); dual-stack services cannot be had |
//! | Update (PUT) | Optimistic concurrency: a non-empty stale resourceVersion gets 409 Conflict; an empty one updates unconditionally; uid, creationTimestamp, deletionTimestamp, generation kept; `generation` bumped by the resource's [`GenerationRule`] (anything outside `metadata` — and `status` with a status subresource — changed; deployments also on annotation changes); a write that changes nothing makes no revision and no event | No create-on-update |
//! | Metadata | Every write stores `metadata` as a Go round-trip of `ObjectMeta` leaves it: unknown fields, nulls, empty strings, `generation: 0` and empty `labels`, `annotations`, `finalizers`, `ownerReferences` dropped | The rest of a built-in object is not round-tripped as its Go type would be: unknown fields are dropped by its schema (see fieldValidation), but empty `omitempty` fields (`data: {}`, `selector: {}`) and nulls are kept (a pod template's metadata excepted), numbers keep their form (`1.0`) |
//! | Managed fields | `metadata.managedFields` kept by kube-apiserver's field manager (`src/testing/managed_fields/` ports apimachinery's `managedfields` over structured-merge-diff) on every write through the API — create, update, every patch type, the status and scale subresources: entries `{manager, operation: Apply or Update, apiVersion, time, fieldsType: FieldsV1, fieldsV1, subresource}`, one per manager, operation, subresource (and version for updates), appliers first then oldest first; FieldsV1 as kube writes it (`f:`, `k:{…}` by list-map keys with their schema defaults — `protocol: TCP` for ports —, `v:` for set items, `"."` for a node itself owned); the manager is `fieldManager` (≤ 128 printable characters, 422 otherwise) or the User-Agent's first word, `unknown` without either; an update owns what it changed (compared with Go's zero value of a built-in kind on create: defaults are owned, what the strategy or an allocator adds is not) and takes it from the others, removed fields leave every manager; nothing owns `apiVersion`, `kind`, `metadata` itself or the system metadata; main-resource writes own no `status` where a status subresource exists, status writes own only `status`; at most ten update entries (the oldest merged into `ancient-changes`); valid non-empty entries sent in a create or update replace the stored ones (kubectl's client-side to server-side apply migration), invalid ones are ignored, `[]` or `[{}]` reset them and the object is then tracked again only once something applies (`before-first-apply`); a scale write is owned on the `Scale` and moved to the parent's replicas path (subresource `scale`); the Rust-side calls write as [`DIRECT_FIELD_MANAGER`], the server's CRD status as `kube-apiserver` | Within a `fieldsV1` object the keys come in byte order (kube-apiserver writes fields, then keys, values, indexes; numbers by value): the same set; an update compares the stored JSON as it is (a field Go always writes but the object lacks is added or removed, not changed), only a create starts from Go's zero value; entries of versions the resource does not serve are dropped by the next write; managed fields are not reconciled when a CRD's schema turns a field atomic or granular; an object too large with its managed fields is not retried without them; no `application/apply-patch+cbor` |
//! | Status subresource | Where registered: `…/{name}/status` GET/PUT/PATCH change only `.status`; main-resource writes keep the stored status; create drops `.status` | Status writes ignore metadata changes entirely |
//! | Scale subresource | Where registered ([`ScaleSubresource`]: paths as a CRD's `subresources.scale`; deployments: `.spec.replicas`, `.status.replicas`, `.spec.selector`): `…/{name}/scale` GET/PUT/PATCH of an `autoscaling/v1` `Scale` carrying the parent's name, uid, resourceVersion and creationTimestamp; its resourceVersion is the write's precondition (409); negative replicas 422; the scaled object is then admitted as any update of it (a custom resource's schema: 422 naming its kind, e.g. replicas above the schema's `maximum`); every write of a custom resource also has its replica counts checked (0 to 2³¹-1, integers, causes named `.spec.replicas` as kube-apiserver names them) and its selector (a string); `deployments/scale` in discovery as `autoscaling/v1` `Scale`; writes (server-side apply too) owned on the `Scale` and moved to the parent, as the Managed fields row says; other subresources 404 | A missing `.spec.replicas` reads 0 (no defaulting to 1) |
//! | PATCH | JSON merge patch (RFC 7386), JSON patch (RFC 6902: 400 when malformed, 422 when a step fails, all or nothing); strategic merge patch as apimachinery applies it ([`strategic_merge`]) for resources whose schema declares merge keys — the default resources carry Kubernetes 1.34's schemas: lists merged by merge key or replaced, `$patch` replace/delete, `$setElementOrder`, `$deleteFromPrimitiveList`, `$retainKeys`, its 400/422/500 answers, no directive ever stored; other resources answer it 415 as kube-apiserver answers for a custom resource; a resourceVersion in the patched object is a precondition (409); server-side apply (`application/apply-patch+yaml` or `+json`, main resource, `status` and `scale`) as structured-merge-diff merges, driven by the resource's schema (lists atomic, sets, or maps by their `x-kubernetes-list-map-keys` — a built-in type's list with only a `merge` patch strategy by its merge key, a custom resource's without a list type atomic —, maps granular unless `x-kubernetes-map-type: atomic`, values the schema leaves open deduced): it creates a missing object (201; 409 for a `uid`), owns what the configuration sets, removes what its manager applied before and no longer applies unless another manager owns it, shares fields set to their current value, refuses with 409 `Apply failed with 1 conflict: conflict with "mgr" using apps/v1: .spec.x` (the plural form lists them by manager) and `FieldManagerConflict` causes the fields other managers own when it changes them, unless `force=true`; `kubectl` takes over what its client-side apply annotation recorded unchanged, and keeps the annotation up to date; `fieldManager` required and `force` only on apply (422), a configuration of another kind or version (400 `invalid object type`), with `managedFields` (400) or not fitting the schema (500 `failed to create typed patch object`) refused, as kube-apiserver does | Strategic merge patch drops `null`s and directive keys inside content it takes whole (kube-apiserver decodes them to Go zero values), and does not reproduce the order Go's sort gives a malformed `$setElementOrder` of more than 20 items |
//! | DELETE | `DeleteOptions` preconditions uid/resourceVersion (409 Conflict "Precondition failed"); `dryRun=All`; `propagationPolicy` validated; answers a `Success` Status naming the resource (objects whose finalizers hold them are returned instead); deletecollection with selectors | No garbage collector: `propagationPolicy` is accepted but dependents are not deleted and no `foregroundDeletion`/`orphan` finalizer is added; no grace periods (pods vanish at once) |
//! | Finalizers | A delete of an object with finalizers sets deletionTimestamp (MODIFIED, a generation above 0 bumped); the update that empties them removes it (DELETED); no new finalizer may be added meanwhile (422) | |
//! | LIST | labelSelector (equality and set-based), fieldSelector (`metadata.name`, `metadata.namespace`, plus per-resource selectable fields; others 400 "field label not supported"); `limit`/`continue` with opaque tokens (kube-apiserver's format) over a consistent snapshot at the first page's revision; `remainingItemCount` when no selector is set; a compacted token gets 410 Expired with a continue token for an inconsistent continuation; `resourceVersion` "" = latest, "0" = any and ignores `limit` (the watch cache), N = not older than N (Exact with a limit and no match, as the legacy rule), `resourceVersionMatch=Exact` reads that revision (410 when compacted); a revision ahead of the store waits briefly then 504 Timeout "Too large resource version" with cause `ResourceVersionTooLarge`; `ListOptions` validated as apimachinery does (422) | No protobuf output; a list at "0" is never stale (the cache is the store) |
//! | WATCH | Chunked JSON events, one object per line; synthetic ADDED for the current state when no resourceVersion or "0" is given; from N: every later event of the resource's history; older than the history (bounded, or compacted) → a 410 ERROR event "too old resource version: N (M)" then the end of the stream; objects leaving a selector are sent as DELETED (previous state at the event's resourceVersion), entering as ADDED; BOOKMARKs every interval with `allowWatchBookmarks`, never ahead of an unsent event; `timeoutSeconds` ends the stream cleanly (default: 30–60 min); a watcher that falls behind the history gets the 410 ERROR; the legacy `/watch/` path prefix | Watch of a revision ahead of the store simply waits for it (no 504) |
//! | Tables and partial metadata | `Accept` negotiated as kube-apiserver does (clauses by quality; 406 when nothing served is acceptable): `as=Table;g=meta.k8s.io;v=v1` (or `v1beta1`) answers GET, LIST, writes and every WATCH event (`kubectl get`, `get -w`) with a `Table` whose columns are the resource's [`PrinterColumn`]s — kube-apiserver's built-in printers' for the default resources (config maps DATA; secrets TYPE DATA; pods READY STATUS RESTARTS AGE, wide IP NODE NOMINATED NODE READINESS GATES; deployments READY UP-TO-DATE AVAILABLE AGE, wide CONTAINERS IMAGES SELECTOR; namespaces STATUS; services TYPE CLUSTER-IP EXTERNAL-IP PORT(S), wide SELECTOR; nodes STATUS ROLES AGE VERSION + wide; events; leases HOLDER; CRDs NAME CREATED AT), a CRD's `additionalPrinterColumns` (JSONPath), NAME AGE otherwise; column definitions in the first event of a watch only; `includeObject` Metadata (default)/Object/None, 400 otherwise; `as=PartialObjectMetadata(List)` for metadata-only clients | Written as JSON whatever the media type (no YAML or protobuf Table); a bookmark of a Table watch is a Table without rows; cells are computed from the stored JSON (a printer's corner cases for objects kube-apiserver would have defaulted differently may differ) |
//! | Streaming list | `sendInitialEvents=true` + `resourceVersionMatch=NotOlderThan`: ADDED for the current state, a BOOKMARK annotated `k8s.io/initial-events-end: "true"` (with `allowWatchBookmarks`), then live events; switch it off ([`ApiServerBuilder::watch_list`]) and it gets kube-apiserver's 422 "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled" | |
//! | Compaction | [`ApiServer::compact`] drops versions no readable revision needs; older lists, continue tokens and watches get 410; automatic every 5 min to the previous tick's revision (configurable) | Compaction also trims the watch history (kube-apiserver's watch cache is independent of etcd compaction) |
//! | Auth | Authentication as kube-apiserver chains it: a verified client certificate (`CN` the user, each `O` a group; signed by the server's CA or one given), else a bearer token — static ([`ApiServerBuilder::token`], groups by [`ApiServerBuilder::user_groups`]) or a service-account token the server signed — every user so found in `system:authenticated`; a bad token gets 401, never anonymous. Two authorization modes. Access rules (the default): the [`AccessRule`]s, every authenticated user allowed everything without any, non-resource paths and a user's own reviews open to every authenticated user, requests without credentials 401 (kube-apiserver turns anonymous requests off with AlwaysAllow). RBAC ([`ApiServerBuilder::rbac`], `--authorization-mode RBAC`), as kube-apiserver decides: `system:masters` allowed everything, access rules granting, then the RBAC authorizer over the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (the union of the rules of every binding naming the user, one of their groups or their service account; verbs, groups, resources with `*/sub`, resourceNames, non-resource URLs with a trailing `*`; nothing allowed by default; a binding to a missing role named in the 403's reason); requests without credentials as `system:anonymous` in `system:unauthenticated` ([`ApiServerBuilder::anonymous_auth`]); impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`: kubectl `--as`, `--as-group`) with the `impersonate` verb; authorization before routing (403 for a resource that does not exist), with kube-apiserver's 403 wording (`configmaps "x" is forbidden: User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"`, `forbidden: User "u" cannot get path "/x"`); the bootstrap policy created at start (cluster-admin, admin, edit and view aggregated by their labels, the `system:*` roles and bindings, the controllers' roles, kube-system's and kube-public's roles); ClusterRole aggregation kept up to date after every ClusterRole write, server-side applied by `clusterrole-aggregation-controller`; escalation prevention on writes of roles and bindings (`escalate` and `bind` verbs, `system:masters`, else the writer's own rules must cover the role's; an aggregation rule needs every permission; a binding of a missing role 404); the RBAC kinds' defaulting and validation (422, `cannot change roleRef`). Reviews: `SelfSubjectAccessReview` and `SelfSubjectRulesReview` (`kubectl auth can-i`, `--list`), `SubjectAccessReview`, `LocalSubjectAccessReview`, `SelfSubjectReview` (`kubectl auth whoami`), `TokenReview`. `serviceaccounts/token` (TokenRequest: audiences, expiry of 10 min to 2³² s, 1 h by default, bound to a Pod, Secret or Node) issues ES256 JWTs the server authenticates as `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts` and `system:serviceaccounts:<ns>` (the bound pod and the token id as extra), invalid once expired (with go-jose's minute of leeway) or once the service account or bound object is deleted or recreated; [`ApiServer::service_account_client`] acts as a service account. A non-loopback address without authentication is refused unless [`ApiServerBuilder::insecure_allow_unauthenticated_remote_access`] (the admin API then answers loopback peers only) | No Node authorizer, webhook, ABAC or OIDC authentication; no `--service-account-max-token-expiration`, no extended expiry of pod-bound tokens, no legacy Secret-based tokens, no service-account issuer discovery (`/openid/v1/jwks`); the bootstrap policy is that of Kubernetes' bootstrap policy test data as read (1.33/1.34, feature-gated roles left out) and exists only in the RBAC mode; no ServiceAccount admission (a pod's `serviceAccountName` is not defaulted, no token volume); aggregation is written before the triggering write is answered (kube's controller runs later); a 403's "allowed by" reason names bindings in name order (kube's in its informer's order); escalation checks read the RBAC objects as of the request's start; the RBAC kinds and `serviceaccounts` have no printer columns or schema yet |
//! | Discovery | Legacy (unaggregated) discovery documents with short names and categories (`all` holds pods, services and deployments, as kube-apiserver's storages declare); `/version` claims 1.34 | No aggregated discovery (`apidiscovery.k8s.io/v2`), no `storageVersionHash` |
//! | OpenAPI | `/openapi/v2` (JSON, or gnostic's protobuf for kubectl) and `/openapi/v3` (index + one document per group-version, `?hash=` answers immutable, a stale hash 301s) built from the registered [`ResourceSpec`]s: every verb's path with its query parameters (`fieldValidation` on writes), `x-kubernetes-action`, `x-kubernetes-group-version-kind`, the kinds' schemas (metadata as `ObjectMeta`, a CRD's v2 reductions) and the `meta.k8s.io` types; `ETag`/`If-None-Match`; SMP offered only where the schema has merge strategies | No v3 protobuf (406), no gzip; a resource without schema is published as any object; descriptions of the shared types are our own; ETags are a 128-bit hash, not SHA-512 |
//! | fieldValidation | On create, update and patch but apply (whose configuration must fit the schema: see PATCH), where a schema is known: unknown fields (also in `metadata` and embedded resources' metadata) and keys repeated in a JSON body are dropped and reported as `Warning: 299 - "unknown field \"spec.x\""` headers (`Warn`, the default), refused with 400 `<Kind> in version "v1" cannot be handled as a <Kind>: strict decoding error: …` (`Strict`; patches: `strict decoding error: …`, JSON patch operations' own keys too), or dropped silently (`Ignore`); other values get 422 | Repeated keys are not found in YAML or apply bodies (kube-apiserver reports YAML line numbers); a typed object's problems are ordered by the body, a custom resource's as apiextensions-apiserver does, a patch's duplicates then its unknown fields |
//! | CRDs | `apiextensions.k8s.io/v1` `customresourcedefinitions` served with the default resources; a CRD is checked (422: names as DNS-1035 labels, group, scope, version names unique and DNS-1035, one storage version, a schema with types, `metadata` only naming `name`/`generateName`, structural as apiextensions requires (no `$ref`, `id`, `definitions`, `dependencies`, `patternProperties`, `additionalItems`, `type: null` or tuple `items`; no `uniqueItems: true`; `additionalProperties` neither false, nor beside `properties`, nor at the root; under `allOf`/`anyOf`/`oneOf`/`not` value validations only, but for the int-or-string `anyOf`), printer columns, scale paths, `selectableFields` (scalar fields of the schema, not in `metadata`, no array notation, at most 8), `deprecationWarning` only on deprecated versions, the conversion strategy and a webhook's client config; on update the group and plural never change, the scope and kind not once established, and every version in `status.storedVersions` must stay listed); the naming controller's `NamesAccepted` (a plural, singular, short name, kind or list kind already accepted for another CRD of the group is refused with its `…Conflict` reason and `"x" is already in use`, and granted once the other lets go) and the establishing controller's `Established` (kept once true; the resource is served under its accepted names) are written in a second write, with `acceptedNames` and `storedVersions`. Every served version is served (discovery, the group's preferred version by Kubernetes' version priority, OpenAPI; CRUD, watch, `status` and `scale` subresources and printer columns as each version declares them) from one store: objects are stored in the storage version of their write and read back as apiextensions-apiserver's storage codec reads them — defaulted by the schema of the version they are stored in (defaults added to a schema later show on read), converted to the version asked for with only `apiVersion` changed (`conversion: {strategy: None}`), pruned by that version's schema (a field a version does not know is not served in it, and a write through it drops it) — each version validating, pruning and defaulting writes with its own schema; the storage version may move (objects written before are served converted); deprecated versions answer every request with kube-apiserver's `Warning` (the `deprecationWarning`, or `<group>/<version> <Kind> is deprecated; use …`); `selectableFields` filter lists and watches. Deleting a CRD gives it the `customresourcecleanup.apiextensions.k8s.io` finalizer and `Terminating`, deletes its objects (those with finalizers wait for them; creates get 405 meanwhile), then lets it go, which removes the resource and ends its watches. Objects are pruned, defaulted and validated by `openAPIV3Schema` (types, nullable, int-or-string, required, enum, lengths, RE2 `pattern`, common formats, bounds, `multipleOf`, item and property counts, `uniqueItems`, junctors) with kube-apiserver's 422 wording and causes, then list-type set/map uniqueness (each repeated value once, after the schema's and the embedded resources' causes, as kube-apiserver orders them); embedded resources must carry a valid `apiVersion` and `kind` (422 Required/Invalid) and their metadata is ObjectMeta; a scale subresource's replica counts and selector are checked on every write; strategic merge patch gets 415, while merge and JSON patches and server-side apply (lists by their `x-kubernetes-list-type`, atomic without one) work as on any resource. [`ApiServer::install_crd`], [`ApiServerBuilder::crd`], [`ApiServerBuilder::crds_from_folder`] | No conversion webhook is called: a CRD with `strategy: Webhook` is served in its storage version, and a request in another version gets a 500 naming the limitation (data is never handed out unconverted; objects stored in an older storage version are served with only `apiVersion` changed); no CEL (`x-kubernetes-validations`) and no validation ratcheting (an update must leave the whole object valid; kube-apiserver forgives errors in fields the update leaves unchanged); an embedded resource's metadata is pruned to ObjectMeta's fields but its values (name, labels) are not validated; a schema's own causes come in property-name order (kube-apiserver's follow Go's map iteration); the CRD's cleanup deletes objects one by one and its conditions take their own write (kube-apiserver's controllers poll); the CRD object itself is not validated against the full apiextensions schema |
//! | HTTP | HTTP/1.1 keep-alive, chunked request bodies, `Expect: 100-continue`, HTTP/1.0; malformed requests get 400 and the connection closes; 3 MiB body limit (413); trailing slashes of a path are ignored, as go-restful trims them (`/version/`, `/api/`, `…/configmaps/name/`) | No HTTP/2, no compression; no `/` index of paths |
//! | Protobuf | `application/vnd.kubernetes.protobuf` bodies (kubectl 1.3x's `create <kind>`, `auth can-i`; client-go set for protobuf) on create, update and delete (`DeleteOptions`) for every kind of k8s.io/api's core, apps, batch, coordination, rbac, policy, scheduling, networking, autoscaling/v2, authorization and authentication v1 groups: decoded to exactly the JSON kube-apiserver's Go types give (omitempty and pointer rules, int64 as numbers, `bytes` as base64, `IntOrString`, `Time` to the second, `MicroTime` to the microsecond, unknown fields skipped); undecodable bodies get its 400 wording; custom resources and other media types its 415 with the types the resource accepts | Answers are JSON whatever `Accept` asks (kubectl and client-go list JSON after protobuf; kube-apiserver would answer protobuf); no protobuf lists or watches; a `Quantity` is canonicalised only in the default resources' kinds (see Defaulting), as for JSON bodies, and never validated |
//!
//! # Faults and control
//!
//! [`Fault`]s queue up and each shapes the answer to the next request matching its verb and resource: error
//! answers with `Retry-After`, connections cut after N events or bytes, stalls (for a time or until
//! [`ApiServer::clear_faults`]), garbage in a watch stream, an event torn in half. [`ApiServer::restart`] cuts every
//! connection and keeps the state; [`ApiServer::restart_refusing_for`] also refuses connections for a while, and
//! [`ApiServer::stop_listening`] / [`ApiServer::start_listening`] leave the down time to the test. The [`RequestLog`] records every request (verb, resource, code, fault) for assertions such as "no
//! relist happened"; [`ApiServer::wait_for_watchers`] waits until watches are established, without sleeping.
//! [`ApiServer::load_manifests`] creates the objects of YAML/JSON manifests.
//!
//! # Standalone
//!
//! The same server runs outside Rust tests as the `kube-informer-apiserver` program (`cargo install
//! kube-informer-apiserver`, or `cargo run -p kube-informer-apiserver --` in this repository; `--help` lists its flags): it listens where asked
//! ([`ApiServerBuilder::address`], [`ApiServerBuilder::port`]), writes a kubeconfig that stays
//! ([`ApiServerBuilder::kubeconfig_out`]), loads manifests, serves the admin API below, and stops cleanly on
//! SIGINT/SIGTERM. `tests/real-clients/run` drives it with clients this project did not write: kubectl 1.20 and
//! 1.32, the official Python client and the official JavaScript client (@kubernetes/client-node).
//!
//! # The admin API
//!
//! Tests in other languages (and the `kube-informer-apiserver` binary's users) reach the same controls over HTTP,
//! on the server's own port under [`ADMIN_PREFIX`] (`/kube-informer/admin/`), once
//! [`ApiServerBuilder::admin_api`] turned it on. Bodies and answers are JSON; errors are `Status` objects saying
//! what is wrong. Admin requests are not Kubernetes requests: no fault applies to them and the [`RequestLog`] does
//! not record them. With authentication on, only [`ApiServerBuilder::admin_user`]s may use them (401, 403).
//!
//! | Request | Does | Answers |
//! |---|---|---|
//! | `GET /kube-informer/admin/` (or `status`) | | revision, compacted revision, pending faults, the request log's mark, watchers per resource, settings, the endpoints |
//! | `POST …/faults` | queues a [`Fault`] in its JSON form (see [`Fault`]), or an array of them | 201 `{"added": n, "pendingFaults": m}` |
//! | `GET …/faults` | | `{"items": [pending faults]}` |
//! | `DELETE …/faults` | [`ApiServer::clear_faults`] (stalls end) | `{"pendingFaults": 0}` |
//! | `POST …/compact` | [`ApiServer::compact`] to `{"revision": N}`, or to the latest with no body | `{"revision": compacted}` |
//! | `POST …/restart` | [`ApiServer::restart`]; with `{"refuseFor": "2s"}`, [`ApiServer::restart_refusing_for`] | `{"restarted": true}` once every other connection is cut and the server listens again (or is down for the while); the connection then closes |
//! | `GET …/requests?since=MARK&verb=list&resource=configmaps` | | `{"mark": next mark, "items": [records after MARK, filtered]}` — each with its `index`, `method`, `path`, `query`, `verb`, `resource`, `subresource`, `namespace`, `name`, `user`, `code`, `fault`, `connection`, `time` |
//! | `GET …/watchers?resource=R&count=N&timeout=30s` | [`ApiServer::wait_for_watchers`] (at most 10 minutes; ends at shutdown) | `{"resource": id, "watchers": n}`, or 504 when fewer than N came in time |
//! | `GET`/`PUT …/settings` | `{"bookmarkInterval": "1m", "watchList": true}`: [`ApiServer::set_bookmark_interval`], [`ApiServer::set_watch_list_enabled`] | the settings |
//!
//! There is no `stop-listening` over HTTP: nothing could ask the server to listen again; `restart` with
//! `refuseFor` is the down time a remote test can have.
//!
//! # Threads
//!
//! One acceptor (`srv:acceptor`), one thread per connection (`srv:conn<N>`, which also streams its watch), one
//! compactor timer (`srv:compactor`), and a timer per [`ApiServer::restart_refusing_for`] (`srv:restart`) — names
//! short enough for the OS to show them whole beside the informer's (`refl:pods`, `h1:pods`).
//! [`ApiServer::shutdown`] (or drop) joins them all within a second from any state: sockets are shut down and every
//! wait is woken.

mod admin;
mod admission;
mod auth;
mod authentication;
mod authorizer;
mod builtin_schemas;
mod conn;
mod conversion;
mod crd;
mod defaults;
mod direct;
mod discovery;
mod errors;
mod fault_form;
mod faults;
mod field_validation;
mod handlers;
mod http;
mod impersonation;
mod jsonpath;
mod kubeconfig;
mod list;
mod log;
mod managed_fields;
mod manifests;
mod meta;
mod openapi;
mod patch;
mod printer_column;
mod printers;
mod protobuf;
mod rbac;
mod reply;
mod request_info;
mod resource;
mod review;
mod router;
mod scale;
mod schema;
mod server;
mod serviceaccount;
mod store;
pub mod strategic_merge;
mod strategy;
mod table;
pub(crate) mod tls;
mod user;
mod util;
mod watch;

pub use admin::PREFIX as ADMIN_PREFIX;
pub use auth::AccessRule;
pub use faults::{Fault, FaultAction, FaultTarget};
pub use log::{LogMark, RequestLog, RequestRecord, Verb};
pub use managed_fields::DIRECT_FIELD_MANAGER;
pub use meta::GenerationRule;
pub use printer_column::{CellFn, ColumnType, PrinterColumn};
pub use resource::{NameRule, ResourceSpec};
pub use scale::ScaleSubresource;
pub use server::{ADMIN_USER, ApiServer, ApiServerBuilder};
pub use tls::ClientIdentity;
pub use util::parse_duration;

/// Decodes a protobuf request body (`application/vnd.kubernetes.protobuf`: the magic `k8s\0`, then a
/// `runtime.Unknown` envelope around the object's message) into the JSON object the embedded server stores, as
/// kube-apiserver would decode it for a resource of `kind` in `api_version`. The error is the message of the 400
/// BadRequest the server answers.
///
/// ```
/// use kube_informer_apiserver::decode_protobuf_body;
///
/// // kubectl 1.32's body for `kubectl create namespace n1`.
/// let body = b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1a\x0a\x12\x0a\x02n1\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";
/// let ns = decode_protobuf_body(body, "v1", "Namespace").unwrap();
/// assert_eq!(
///     ns,
///     serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1", "creationTimestamp": null},
///                        "spec": {}, "status": {}})
/// );
/// assert!(decode_protobuf_body(b"{}", "v1", "Namespace").is_err());
/// ```
pub fn decode_protobuf_body(body: &[u8], api_version: &str, kind: &str) -> Result<serde_json::Value, String> {
    protobuf::decode_object(body, api_version, kind)
}

/// README.md's code blocks, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
