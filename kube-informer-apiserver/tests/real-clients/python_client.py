"""Scenarios of the official Kubernetes Python client (PyPI `kubernetes`) against kube-informer-apiserver.

Run by kube-informer-apiserver/tests/real-clients/run inside the virtualenv it makes:

    python_client.py SCENARIO NAMESPACE

with KUBECONFIG (the admin's kubeconfig), ADMIN_URL (…/kube-informer/admin/), ADMIN_TOKEN and CA_FILE in the
environment. Exits 0 when the scenario holds; otherwise prints what did not and exits 1.
"""

import json
import os
import ssl
import sys
import threading
import time
import urllib.request

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

WAIT = 60  # seconds any single wait may take


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def admin(method, path, body=None):
    """A call to the server's admin API; the decoded JSON answer."""
    ctx = ssl.create_default_context(cafile=os.environ["CA_FILE"])
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(os.environ["ADMIN_URL"] + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + os.environ["ADMIN_TOKEN"])
    with urllib.request.urlopen(req, context=ctx, timeout=WAIT) as resp:
        return json.load(resp)


def log_mark():
    return admin("GET", "status")["requestLogMark"]


def wait_for_request(mark, verb, resource, namespace):
    """Waits until the request log shows a `verb` request on `resource` in `namespace` after `mark`."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        log = admin("GET", f"requests?since={mark}&verb={verb}&resource={resource}")
        if any(r["namespace"] == namespace for r in log["items"]):
            return
        time.sleep(0.05)  # polling the server's log for a condition, bounded by the deadline
    raise Failed(f"no {verb} of {resource} in {namespace} reached the server")


def cm(name, data=None, labels=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data=data or {"v": "0"}
    )


def collect(stream_factory, want, out):
    """Reads watch events into `out` until `want` of them arrived (run on a thread)."""
    try:
        for event in stream_factory():
            out.append(event)
            if len(out) >= want:
                return
    except Exception as e:  # reported by the main thread
        out.append(e)


def events_of(out):
    for e in out:
        if isinstance(e, Exception):
            raise Failed(f"the watch failed: {e!r}")
    return [(e["type"], e["object"].metadata.name) for e in out]


# ----- scenarios -----


def version(ns):
    info = client.VersionApi().get_code()
    check(info.git_version.startswith("v1."), f"gitVersion {info.git_version!r}")
    check(info.major == "1", f"major {info.major!r}")


def crud(ns):
    v1 = client.CoreV1Api()
    created = v1.create_namespaced_config_map(ns, cm("c", {"color": "blue"}))
    check(created.metadata.uid and created.metadata.resource_version, "uid and resourceVersion set")
    try:
        v1.create_namespaced_config_map(ns, cm("c"))
        raise Failed("a second create of the same name succeeded")
    except ApiException as e:
        check(e.status == 409 and json.loads(e.body)["reason"] == "AlreadyExists", f"409 AlreadyExists: {e}")
    got = v1.read_namespaced_config_map("c", ns)
    got.data["color"] = "green"
    replaced = v1.replace_namespaced_config_map("c", ns, got)
    check(replaced.data == {"color": "green"}, f"replace: {replaced.data}")
    try:
        v1.replace_namespaced_config_map("c", ns, got)  # stale resourceVersion
        raise Failed("a replace with a stale resourceVersion succeeded")
    except ApiException as e:
        check(e.status == 409 and json.loads(e.body)["reason"] == "Conflict", f"409 Conflict: {e}")
    merged = v1.patch_namespaced_config_map(
        "c", ns, {"data": {"size": "L"}}, _content_type="application/merge-patch+json"
    )
    check(merged.data == {"color": "green", "size": "L"}, f"merge patch: {merged.data}")
    patched = v1.patch_namespaced_config_map(
        "c", ns, [{"op": "remove", "path": "/data/color"}], _content_type="application/json-patch+json"
    )
    check(patched.data == {"size": "L"}, f"json patch: {patched.data}")
    v1.delete_namespaced_config_map("c", ns)
    try:
        v1.read_namespaced_config_map("c", ns)
        raise Failed("read after delete succeeded")
    except ApiException as e:
        check(e.status == 404 and json.loads(e.body)["reason"] == "NotFound", f"404 NotFound: {e}")


def list_paging(ns):
    v1 = client.CoreV1Api()
    for i in range(7):
        v1.create_namespaced_config_map(ns, cm(f"p{i}", labels={"half": "low" if i < 3 else "high"}))
    names, token, pages, remaining = [], None, 0, []
    while True:
        page = v1.list_namespaced_config_map(ns, limit=3, _continue=token)
        pages += 1
        names += [o.metadata.name for o in page.items]
        remaining.append(page.metadata.remaining_item_count)
        token = page.metadata._continue
        if not token:
            break
    check(sorted(names) == [f"p{i}" for i in range(7)], f"paged names {names}")
    check(pages == 3, f"{pages} pages of 3 for 7 objects")
    check(remaining[0] == 4, f"remainingItemCount of the first page: {remaining}")
    low = v1.list_namespaced_config_map(ns, label_selector="half=low")
    check(sorted(o.metadata.name for o in low.items) == ["p0", "p1", "p2"], "label selector half=low")
    one = v1.list_namespaced_config_map(ns, field_selector="metadata.name=p4")
    check([o.metadata.name for o in one.items] == ["p4"], "field selector metadata.name=p4")


def watch_events(ns):
    v1 = client.CoreV1Api()
    rv = v1.list_namespaced_config_map(ns).metadata.resource_version
    w = watch.Watch()
    out = []
    mark = log_mark()
    reader = threading.Thread(
        target=collect,
        args=(lambda: w.stream(v1.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=WAIT), 3, out),
    )
    reader.start()
    wait_for_request(mark, "watch", "configmaps", ns)
    v1.create_namespaced_config_map(ns, cm("w"))
    v1.patch_namespaced_config_map("w", ns, {"data": {"v": "1"}}, _content_type="application/merge-patch+json")
    v1.delete_namespaced_config_map("w", ns)
    reader.join(WAIT)
    w.stop()
    check(not reader.is_alive(), f"the watch delivered {out} only")
    check(events_of(out) == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")], f"events {events_of(out)}")
    check(out[1]["object"].data == {"v": "1"}, "the MODIFIED event carries the new data")


def watch_410_recovery(ns):
    """A watch from a compacted resourceVersion gets 410; the client relists and watches from the new version."""
    v1 = client.CoreV1Api()
    v1.create_namespaced_config_map(ns, cm("before"))
    old_rv = v1.list_namespaced_config_map(ns).metadata.resource_version
    v1.create_namespaced_config_map(ns, cm("during"))
    admin("POST", "compact", {})
    try:
        for _ in watch.Watch().stream(
            v1.list_namespaced_config_map, ns, resource_version=old_rv, timeout_seconds=WAIT
        ):
            raise Failed("an event from a compacted resourceVersion")
        raise Failed("the watch from a compacted resourceVersion ended without 410")
    except ApiException as e:
        check(e.status == 410, f"410 Gone/Expired, not {e.status}: {e.reason}")
    # Recovery, as client-python's docs ask: list again, watch from the list's version.
    listed = v1.list_namespaced_config_map(ns)
    check(sorted(o.metadata.name for o in listed.items) == ["before", "during"], "the relist sees everything")
    w = watch.Watch()
    out = []
    mark = log_mark()
    reader = threading.Thread(
        target=collect,
        args=(
            lambda: w.stream(
                v1.list_namespaced_config_map, ns, resource_version=listed.metadata.resource_version,
                timeout_seconds=WAIT,
            ),
            1,
            out,
        ),
    )
    reader.start()
    wait_for_request(mark, "watch", "configmaps", ns)
    v1.create_namespaced_config_map(ns, cm("after"))
    reader.join(WAIT)
    w.stop()
    check(events_of(out) == [("ADDED", "after")], f"events after recovery {events_of(out)}")


def dynamic_discovery(ns):
    dyn = dynamic.DynamicClient(client.ApiClient())
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    check(deployments.namespaced and deployments.name == "deployments", "apps/v1 Deployment discovered")
    check(dyn.resources.search(kind="ConfigMap"), "ConfigMap found by search")
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "dyn"},
        "spec": {
            "selector": {"matchLabels": {"app": "dyn"}},
            "template": {"metadata": {"labels": {"app": "dyn"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    deployments.create(body=body, namespace=ns)
    got = deployments.get(name="dyn", namespace=ns)
    check(got.spec.template.spec.containers[0].image == "x", "dynamic get")
    listed = deployments.get(namespace=ns)
    check([i.metadata.name for i in listed.items] == ["dyn"], "dynamic list")
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    configmaps.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}, namespace=ns)
    check([i.metadata.name for i in configmaps.get(namespace=ns).items] == ["d"], "dynamic core list")


def patch_strategic(ns):
    """A strategic merge patch of one container by name keeps the other container and its fields."""
    apps = client.AppsV1Api()
    apps.create_namespaced_deployment(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                            {"name": "b", "image": "busybox:1"},
                        ]
                    },
                },
            },
        },
    )
    apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "busybox:2"}]}}}},
        _content_type="application/strategic-merge-patch+json",
    )
    raw = apps.read_namespaced_deployment("web", ns, _preload_content=False)
    containers = json.loads(raw.data)["spec"]["template"]["spec"]["containers"]
    # As kube-apiserver stores them: with the defaults of a pod template's containers.
    defaults = {
        "imagePullPolicy": "IfNotPresent",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    want = [
        {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80, "protocol": "TCP"}], **defaults},
        {"name": "b", "image": "busybox:2", **defaults},
    ]
    check(containers == want, f"containers after the patch: {containers}")


def frontend(name, labels=None, **spec):
    return {
        "apiVersion": "web.example.com/v1",
        "kind": "Frontend",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"image": "nginx:1", **spec},
    }


def custom_objects(ns):
    """The dynamic client on a custom resource (the Frontend CRD of kube-informer/tests/fixtures/crds/, loaded at start)."""
    dyn = dynamic.DynamicClient(client.ApiClient())
    frontends = dyn.resources.get(api_version="web.example.com/v1", kind="Frontend")
    check(frontends.name == "frontends" and frontends.namespaced, "web.example.com/v1 Frontend discovered")
    check(frontends.short_names == ["fe"], f"short names {frontends.short_names}")
    check(sorted(frontends.subresources) == ["scale", "status"], f"subresources {sorted(frontends.subresources)}")
    check(dyn.resources.search(kind="Frontend", group="web.example.com"), "Frontend found by search")

    rv = frontends.get(namespace=ns).metadata.resourceVersion
    w = watch.Watch()
    out = []
    mark = log_mark()
    reader = threading.Thread(
        target=collect,
        args=(
            lambda: frontends.watch(
                namespace=ns, label_selector="tier=front", resource_version=rv, timeout=WAIT, watcher=w
            ),
            4,
            out,
        ),
    )
    reader.start()
    wait_for_request(mark, "watch", "frontends", ns)

    created = frontends.create(body=frontend("a", {"tier": "front"}), namespace=ns)
    check(created.metadata.generation == 1, f"generation {created.metadata.generation}")
    # The schema's defaults.
    check(
        (created.spec.replicas, created.spec.tier, created.spec.port) == (1, "web", 8080),
        f"defaults: {created.spec}",
    )
    frontends.create(body=frontend("b", {"tier": "back"}, replicas=2), namespace=ns)
    got = frontends.get(name="a", namespace=ns)
    check(got.metadata.uid == created.metadata.uid, "get by name")
    listed = frontends.get(namespace=ns, label_selector="tier=front")
    check([i.metadata.name for i in listed.items] == ["a"], "list with a label selector")
    check(len(frontends.get(namespace=ns).items) == 2, "list of every Frontend")

    # A merge patch (the dynamic client's default, strategic merge, is refused for custom resources).
    patched = frontends.patch(
        body={"spec": {"replicas": 3}}, name="a", namespace=ns, content_type="application/merge-patch+json"
    )
    check((patched.spec.replicas, patched.metadata.generation) == (3, 2), f"merge patch: {patched.spec}")
    # The status subresource: only .status changes, and no new generation.
    status = frontends.status.patch(
        body={"status": {"observedGeneration": 2, "replicas": 3, "selector": "app=a"}, "spec": {"replicas": 9}},
        name="a",
        namespace=ns,
        content_type="application/merge-patch+json",
    )
    check(status.status.replicas == 3 and status.spec.replicas == 3, f"status patch: {status}")
    check(status.metadata.generation == 2, "a status write is no new generation")
    read = frontends.status.get(name="a", namespace=ns)
    check(read.status.selector == "app=a", "status read through the subresource")
    scale = frontends.scale.get(name="a", namespace=ns)
    check(
        (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (3, 3, "app=a"),
        f"the Scale: {scale}",
    )

    frontends.delete(name="a", namespace=ns)
    reader.join(WAIT)
    w.stop()
    check(not reader.is_alive(), f"the watch delivered {out} only")
    seen = events_of(out)
    check(
        seen == [("ADDED", "a"), ("MODIFIED", "a"), ("MODIFIED", "a"), ("DELETED", "a")],
        f"events {seen}",
    )
    check(out[2]["object"].status.replicas == 3, "the second MODIFIED event carries the status")
    try:
        frontends.get(name="a", namespace=ns)
        raise Failed("a read after delete succeeded")
    except ApiException as e:
        check(e.status == 404, f"404 after delete: {e.status}")

    # An invalid object: the 422 as an ApiException with kube-apiserver's causes.
    try:
        frontends.create(body=frontend("bad", tier="db", replicas=11, sidecar={"apiVersion": "v1"}), namespace=ns)
        raise Failed("an invalid Frontend was created")
    except ApiException as e:
        check(e.status == 422, f"422, not {e.status}")
        status = json.loads(e.body)
        check(status["reason"] == "Invalid", f"reason {status['reason']}")
        check(status["details"]["kind"] == "Frontend" and status["details"]["name"] == "bad", "details")
        causes = sorted((c["field"], c["reason"], c["message"]) for c in status["details"]["causes"])
        want = sorted(
            [
                (
                    "spec.replicas",
                    "FieldValueInvalid",
                    "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                ),
                ("spec.sidecar.kind", "FieldValueRequired", "Required value"),
                (
                    "spec.tier",
                    "FieldValueNotSupported",
                    'Unsupported value: "db": supported values: "web", "api", "worker"',
                ),
            ]
        )
        check(causes == want, f"causes {causes}")


def crd_versions(ns):
    """A CRD created through the dynamic client, served in two versions: objects written in one are read, listed,
    patched and watched in the other with only apiVersion changed; the deprecated version warns."""
    dyn = dynamic.DynamicClient(client.ApiClient())
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    group = f"{ns}.example.com"
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}}
    crds.create(body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [
                     {"name": "v1", "served": True, "storage": True, "schema": schema},
                     {"name": "v1beta1", "served": True, "storage": False, "deprecated": True, "schema": schema}]}})
    deadline = time.time() + WAIT
    while True:
        conditions = crds.get(name=f"widgets.{group}").status.conditions or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            break
        check(time.time() < deadline, "the CRD became established")
        time.sleep(0.05)  # polling a condition, bounded by the deadline

    v1 = dyn.resources.get(api_version=f"{group}/v1", kind="Widget")
    beta = dyn.resources.get(api_version=f"{group}/v1beta1", kind="Widget")
    rv = v1.get(namespace=ns).metadata.resourceVersion
    w = watch.Watch()
    out = []
    mark = log_mark()
    reader = threading.Thread(
        target=collect,
        args=(lambda: v1.watch(namespace=ns, resource_version=rv, timeout=WAIT, watcher=w), 2, out),
    )
    reader.start()
    wait_for_request(mark, "watch", "widgets", ns)

    created = beta.create(
        body={"apiVersion": f"{group}/v1beta1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"color": "red"}},
        namespace=ns,
    )
    check(created.apiVersion == f"{group}/v1beta1", f"created in v1beta1: {created.apiVersion}")
    got = v1.get(name="a", namespace=ns)
    check((got.apiVersion, got.metadata.uid) == (f"{group}/v1", created.metadata.uid), f"read in v1: {got}")
    patched = v1.patch(body={"spec": {"color": "blue"}}, name="a", namespace=ns,
                       content_type="application/merge-patch+json")
    check(patched.metadata.resourceVersion != created.metadata.resourceVersion, "the v1 patch wrote")
    listed = beta.get(namespace=ns)
    check([(i.apiVersion, i.spec.color) for i in listed.items] == [(f"{group}/v1beta1", "blue")],
          f"listed in v1beta1: {listed.items}")
    reader.join(WAIT)
    w.stop()
    check(not reader.is_alive(), f"the watch delivered {out} only")
    check([(e["type"], e["object"].apiVersion) for e in out] == [("ADDED", f"{group}/v1"), ("MODIFIED", f"{group}/v1")],
          f"the v1 watch saw the v1beta1 write in v1: {[(e['type'], e['object'].apiVersion) for e in out]}")
    # The deprecated version's warning reaches the client as a Warning header.
    api = client.ApiClient()
    method, url, headers, _, _ = api.param_serialize(
        "GET", f"/apis/{group}/v1beta1/namespaces/{ns}/widgets", auth_settings=["BearerToken"]
    )
    response = api.call_api(method, url, header_params=headers)
    response.read()
    warning = response.getheader("Warning")
    check(warning == f'299 - "{group}/v1beta1 Widget is deprecated; use {group}/v1 Widget"',
          f"the deprecation warning: {warning}")
    crds.delete(name=f"widgets.{group}")

def server_side_apply(ns):
    core = client.CoreV1Api()

    def body(data):
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data}

    # The typed client, with the apply content type.
    core.patch_namespaced_config_map(
        "ssa", ns, body({"color": "blue", "size": "large"}), field_manager="py",
        _content_type="application/apply-patch+yaml",
    )
    core.patch_namespaced_config_map(
        "ssa", ns, body({"color": "blue"}), field_manager="py", _content_type="application/apply-patch+yaml"
    )
    raw = json.loads(core.read_namespaced_config_map("ssa", ns, _preload_content=False).data)
    check(raw["data"] == {"color": "blue"}, f"a re-apply without size leaves {raw['data']}")
    entries = [(e["manager"], e["operation"], e["fieldsV1"]) for e in raw["metadata"]["managedFields"]]
    check(entries == [("py", "Apply", {"f:data": {"f:color": {}}})], f"managedFields {entries}")
    # The dynamic client's server_side_apply: a conflict, then forced.
    dyn = dynamic.DynamicClient(client.ApiClient())
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    try:
        cms.server_side_apply(body=body({"color": "red"}), namespace=ns, field_manager="other")
        raise Failed("a conflicting apply succeeded")
    except ApiException as e:
        status = json.loads(e.body)
        check(e.status == 409, f"status {e.status}")
        check(
            status["message"] == 'Apply failed with 1 conflict: conflict with "py": .data.color',
            f"message {status['message']}",
        )
        cause = status["details"]["causes"][0]
        check(cause == {"reason": "FieldManagerConflict", "message": 'conflict with "py"', "field": ".data.color"},
              f"cause {cause}")
    applied = cms.server_side_apply(
        body=body({"color": "red"}), namespace=ns, field_manager="other", force_conflicts=True
    )
    check(applied.data.color == "red", f"color after the forced apply: {applied.data}")
    managers = [e.manager for e in applied.metadata.managedFields]
    check(managers == ["other"], f"managers after the forced apply: {managers}")


def cel_rules(ns):
    """A CRD whose rules kube-apiserver evaluates, created through the dynamic client: the 422 causes of a rule with a
    message expression at its fieldPath, and of a transition rule with its reason."""
    dyn = dynamic.DynamicClient(client.ApiClient())
    group = f"{ns}.example.com"
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {
                         "type": "object",
                         "x-kubernetes-validations": [
                             {"rule": "self.color == oldSelf.color", "message": "color is immutable",
                              "reason": "FieldValueForbidden"},
                             {"rule": "self.size <= 10", "fieldPath": ".size",
                              "messageExpression": "'size ' + string(self.size) + ' is above 10'"}],
                         "properties": {"color": {"type": "string", "maxLength": 10}, "size": {"type": "integer"}}}}}}}]}})
    deadline = time.time() + WAIT
    while True:
        try:
            widgets = dynamic.DynamicClient(client.ApiClient()).resources.get(api_version=f"{group}/v1", kind="Widget")
            break
        except Exception:
            check(time.time() < deadline, "the CRD is served")
            time.sleep(0.05)  # polling discovery, bounded by the deadline

    def widget(name, spec, rv=None):
        meta = {"name": name, "namespace": ns}
        if rv:
            meta["resourceVersion"] = rv
        return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": meta, "spec": spec}

    def refused(call):
        try:
            call()
        except ApiException as e:
            check(e.status == 422, f"422, not {e.status}")
            return json.loads(e.body)
        raise Failed("the write was accepted")

    st = refused(lambda: widgets.create(body=widget("w2", {"color": "red", "size": 11}), namespace=ns))
    check(st["reason"] == "Invalid", st)
    check(st["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.size",
                                       "message": 'Invalid value: "object": size 11 is above 10'}], st)
    w1 = widgets.create(body=widget("w1", {"color": "red", "size": 1}), namespace=ns)
    st = refused(lambda: widgets.replace(body=widget("w1", {"color": "blue", "size": 1}, w1.metadata.resourceVersion),
                                         namespace=ns))
    check(st["details"]["causes"] == [{"reason": "FieldValueForbidden", "field": "spec",
                                       "message": "Forbidden: color is immutable"}], st)
    check(st["message"] == f'Widget.{group} "w1" is invalid: spec: Forbidden: color is immutable', st["message"])


def vap_deny_warn(ns):
    """A ValidatingAdmissionPolicy on this namespace's config maps: Deny answers kube-apiserver's 422 Status, Warn a
    Warning header the client receives."""
    adm = client.AdmissionregistrationV1Api()
    core = client.CoreV1Api()
    name = f"{ns}-small"
    adm.create_validating_admission_policy(body={
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
                 "matchConditions": [{"name": "this-namespace", "expression": f"request.namespace == '{ns}'"}],
                 "validations": [{"expression": "size(object.data) < 2", "message": "at most one key"}]}})

    def bind(action):
        body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": [action]}}
        try:
            adm.delete_validating_admission_policy_binding(name)
        except ApiException as e:
            check(e.status == 404, e)
        adm.create_validating_admission_policy_binding(body=body)

    bind("Deny")
    denial = f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: at most one key"
    try:
        core.create_namespaced_config_map(ns, cm("big", {"a": "1", "b": "2"}))
        raise Failed("the policy in Deny let the config map through")
    except ApiException as e:
        check(e.status == 422, e.status)
        st = json.loads(e.body)
        check(st["message"] == f'configmaps "big" is forbidden: {denial}', st["message"])
        check(st["details"]["causes"] == [{"message": denial}], st)
    bind("Warn")
    _, status, headers = core.create_namespaced_config_map_with_http_info(ns, cm("big", {"a": "1", "b": "2"}))
    check(status == 201, status)
    warning = headers.get("Warning", "")
    check(f"Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{name}': at most one key" in warning,
          warning)
    adm.delete_validating_admission_policy_binding(name)
    adm.delete_validating_admission_policy(name)


def rbac_self_subject_access_review(ns):
    """SelfSubjectAccessReviews of alice against the RBAC server (RBAC_KUBECONFIG, ALICE_TOKEN), as a cluster with
    manifests/rbac/team.yaml answers them, and the 403 of a refused list."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=os.environ["RBAC_KUBECONFIG"], client_configuration=cfg)
    # Alice's token instead of the kubeconfig's (whose refresh hook would put it back before each request).
    cfg.api_key = {"authorization": "Bearer " + os.environ["ALICE_TOKEN"]}
    cfg.refresh_api_key_hook = None
    api_client = client.ApiClient(cfg)
    authz = client.AuthorizationV1Api(api_client)

    def can(verb, resource, namespace, name=None):
        attrs = client.V1ResourceAttributes(verb=verb, resource=resource, namespace=namespace, name=name)
        review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs))
        return authz.create_self_subject_access_review(review).status

    st = can("list", "configmaps", "team")
    check(st.allowed, f"alice lists config maps in team: {st}")
    want = 'RBAC: allowed by RoleBinding "alice-reads/team" of Role "reader" to User "alice"'
    check(st.reason == want, f"the reason: {st.reason!r}")
    st = can("delete", "configmaps", "team")
    check(not st.allowed and st.reason is None and not st.denied, f"alice deletes no config map: {st}")
    check(can("update", "configmaps", "team", "leader").allowed, "update of the config map named leader")
    check(not can("update", "configmaps", "team", "other").allowed, "update of another config map")
    check(not can("list", "configmaps", "other").allowed, "another namespace")
    try:
        client.CoreV1Api(api_client).list_namespaced_secret("team")
        raise Failed("alice listed secrets")
    except ApiException as e:
        body = json.loads(e.body)
        want = 'secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "team"'
        check(e.status == 403 and body["message"] == want and body["reason"] == "Forbidden", f"the 403: {e.status} {body}")


def every_kind(ns):
    """utils.create_from_yaml of each every-kind manifest, each object read back, then deleted."""
    import glob
    import tempfile

    import yaml
    from kubernetes import utils

    api = client.ApiClient()
    dyn = dynamic.DynamicClient(api)
    here = os.path.dirname(os.path.abspath(__file__))
    docs = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(glob.glob(os.path.join(here, "manifests", "every-kind", "*.yaml"))):
            with open(path) as f:
                text = f.read().replace("SUFFIX", ns)
            out = os.path.join(tmp, os.path.basename(path))
            with open(out, "w") as f:
                f.write(text)
            created = utils.create_from_yaml(api, out, namespace=ns)
            file_docs = [d for d in yaml.safe_load_all(text) if d]
            check(len(created) == len(file_docs), f"{path}: created {len(created)} of {len(file_docs)}")
            docs.extend(file_docs)
    for d in docs:
        r = dyn.resources.get(api_version=d["apiVersion"], kind=d["kind"])
        kw = {"namespace": ns} if r.namespaced else {}
        got = r.get(name=d["metadata"]["name"], **kw)
        check(got.metadata.name == d["metadata"]["name"], f"{d['kind']} {d['metadata']['name']} read back")
    for d in reversed(docs):
        r = dyn.resources.get(api_version=d["apiVersion"], kind=d["kind"])
        kw = {"namespace": ns} if r.namespaced else {}
        r.delete(name=d["metadata"]["name"], **kw)
    for d in docs:
        r = dyn.resources.get(api_version=d["apiVersion"], kind=d["kind"])
        kw = {"namespace": ns} if r.namespaced else {}
        try:
            r.get(name=d["metadata"]["name"], **kw)
            raise Failed(f"{d['kind']} {d['metadata']['name']} still there after its delete")
        except ApiException as e:
            check(e.status == 404, f"{d['kind']} read after delete: {e.status}")


def fnv1a64(s):
    """64-bit FNV-1a of a string's UTF-8 bytes: the hash kube-apiserver shards by (written here from the spec)."""
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


HALVES = [
    ("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')", 0, 1 << 63),
    ("shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')", 1 << 63, 1 << 64),
]


def shard_selector(ns):
    """The generated API's shard_selector on list and watch, and V1ListMeta.shard_info (client 37: Kubernetes 1.37)."""
    v1 = client.CoreV1Api()
    uids = {}
    for i in range(24):
        made = v1.create_namespaced_config_map(ns, cm(f"s{i:02}"))
        uids[made.metadata.name] = made.metadata.uid
    seen = set()
    for selector, lo, hi in HALVES:
        half = v1.list_namespaced_config_map(ns, shard_selector=selector)
        check(half.metadata.shard_info is not None, "the list answers shardInfo")
        check(half.metadata.shard_info.selector == selector, f"shardInfo.selector {half.metadata.shard_info.selector}")
        names = {o.metadata.name for o in half.items}
        for o in half.items:
            check(lo <= fnv1a64(o.metadata.uid) < hi, f"{o.metadata.name} hashes outside {selector}")
        check(not (names & seen), f"objects in both halves: {names & seen}")
        seen |= names
    check(seen == set(uids), f"the halves cover {len(seen)} of {len(uids)} objects")
    whole = v1.list_namespaced_config_map(ns)
    check(whole.metadata.shard_info is None, "no shardInfo without a shardSelector")
    # A watch of the first half sees the first half's new objects only.
    selector, lo, hi = HALVES[0]
    rv = whole.metadata.resource_version
    made, inside = [], []
    while len(inside) < 3:
        o = v1.create_namespaced_config_map(ns, cm(f"w{len(made)}"))
        made.append(o.metadata.name)
        if lo <= fnv1a64(o.metadata.uid) < hi:
            inside.append(o.metadata.name)
    w = watch.Watch()
    out = []
    reader = threading.Thread(
        target=collect,
        args=(
            lambda: w.stream(
                v1.list_namespaced_config_map, ns, resource_version=rv, shard_selector=selector, timeout_seconds=WAIT
            ),
            3,
            out,
        ),
    )
    reader.start()
    reader.join(WAIT)
    w.stop()
    check(not reader.is_alive(), f"the watch delivered {out} only")
    check(events_of(out) == [("ADDED", n) for n in inside], f"events {events_of(out)}, want the ADDED of {inside}")
    try:
        v1.list_namespaced_config_map(ns, shard_selector="shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
        raise Failed("a short bound was accepted")
    except ApiException as e:
        check(e.status == 400 and "16-digit hex value" in json.loads(e.body)["message"], f"the 400: {e.status} {e.body}")


SCENARIOS = {
    "version": version,
    "crud": crud,
    "list-paging": list_paging,
    "watch": watch_events,
    "watch-410-recovery": watch_410_recovery,
    "dynamic-discovery": dynamic_discovery,
    "patch-strategic": patch_strategic,
    "custom-objects": custom_objects,
    "crd-versions": crd_versions,
    "server-side-apply": server_side_apply,
    "cel-rules": cel_rules,
    "vap-deny-warn": vap_deny_warn,
    "rbac-self-subject-access-review": rbac_self_subject_access_review,
    "every-kind": every_kind,
    "shard-selector": shard_selector,
}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SCENARIOS:
        print(f"usage: {sys.argv[0]} {{{'|'.join(SCENARIOS)}}} NAMESPACE", file=sys.stderr)
        return 2
    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    try:
        SCENARIOS[sys.argv[1]](sys.argv[2])
    except Failed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
