"""The catalog of the resources kube-apiserver 1.34 serves by default, for generate.py.

Two published sources, each for what it says best:

* **What exists, where, and with which verbs**: the paths of Kubernetes 1.34's OpenAPI document, as the official Python
  client generated from it carries them (the PyPI package `kubernetes==34.1.0`, CLIENT below: one method per path and
  HTTP method). kube-apiserver 1.34 serves every stable group-version (`v1`, `v2`, …) by default and no alpha or beta
  one, so only stable versions are kept. A path `/apis/{g}/{v}[/namespaces/{namespace}]/{plural}[/{name}[/{sub}]]`
  gives the resource, its scope (namespaced where a `{namespace}` path exists) and its subresources; the HTTP methods
  give the verbs as kube-apiserver's installer names them (collection GET list, POST create, DELETE deletecollection;
  object GET get, PUT update, PATCH patch, DELETE delete; a subresource's methods likewise). `watch` is not a path of
  its own in the client (it is a query parameter of every list): a listed resource watches when Kubernetes' discovery
  documents say it does (all of them but `componentstatuses`).
* **How discovery names them**: Kubernetes' discovery documents, as kubernetes/kubernetes publishes them under
  `api/discovery/` (`aggregated_v2.json`, and the legacy `api__v1.json`, `apis__{group}__{version}.json`): kind,
  singular name, short names, categories, each subresource's kind (and group/version where it is another type's:
  `Scale`, `Eviction`, `TokenRequest`), the storage version hash. The folder given to generate.py holds copies of
  these files (any commit: the names of stable resources do not change between releases). A resource is looked up in
  its own version of the aggregated document, then its other versions (a resource that went stable after the
  document was written, e.g. `volumeattributesclasses`), then the legacy documents; the storage version hash comes
  only from the legacy document of the same version. A subresource no document names (one newer than them, e.g.
  `pods/resize`) is given its parent's kind, and the generator says so.
"""

import collections
import json
import os
import re
import sys
import zipfile

CLIENT = "kubernetes==34.1.0"

STABLE = re.compile(r"^v[0-9]+$")

# Verbs by HTTP method: on a collection, on an object, on a subresource.
COLLECTION = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}
OBJECT = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
SUBRESOURCE = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create", "DELETE": "delete"}


def client_paths(wheel):
    """path -> HTTP methods, from the generated API classes of the Python client."""
    paths = collections.defaultdict(set)
    call = re.compile(r"""['"](/apis?/[^'"]*)['"],\s*['"]([A-Z]+)['"]""")
    keyword = re.compile(r"""resource_path=['"](/apis?/[^'"]*)['"],\s*method=['"]([A-Z]+)['"]""")
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith("kubernetes/client/api/") and name.endswith("_api.py"):
                text = z.read(name).decode()
                for m in list(call.finditer(text)) + list(keyword.finditer(text)):
                    paths[m.group(1)].add(m.group(2))
    if not paths:
        sys.exit(f"{wheel}: no API paths found")
    return paths


def parse_path(path):
    """(group, version, plural, namespaced, rest) of a resource path, or None."""
    segs = path.strip("/").split("/")
    if segs[0] == "api" and len(segs) >= 3:
        group, version, segs = "", segs[1], segs[2:]
    elif segs[0] == "apis" and len(segs) >= 4:
        group, version, segs = segs[1], segs[2], segs[3:]
    else:
        return None
    if "{" in group or not STABLE.match(version) or segs[0] == "watch":
        return None
    if len(segs) >= 3 and segs[0] == "namespaces" and segs[1] == "{namespace}":
        return group, version, segs[2], True, segs[3:]
    return group, version, segs[0], False, segs[1:]


def served(paths):
    """(group, version, plural) -> {"namespaced", "methods": {"": collection, "{name}": object, sub: subresource}}."""
    out = {}
    for path, methods in paths.items():
        parsed = parse_path(path)
        if parsed is None:
            continue
        group, version, plural, namespaced, rest = parsed
        entry = out.setdefault((group, version, plural), {"namespaced": False, "methods": collections.defaultdict(set)})
        entry["namespaced"] |= namespaced
        if not rest:
            key = ""
        elif rest == ["{name}"]:
            key = "{name}"
        elif len(rest) >= 2 and rest[0] == "{name}":
            key = rest[1]  # `…/{name}/proxy/{path}` is the proxy subresource again
        else:
            sys.exit(f"{path}: unexpected path")
        entry["methods"][key] |= methods
    return out


def load_discovery(folder):
    """(group, plural) -> [(source, version, entry)] in order of preference, entries normalised to the legacy form."""
    index = collections.defaultdict(list)
    group_order = []
    with open(os.path.join(folder, "aggregated_v2.json")) as f:
        aggregated = json.load(f)
    for item in aggregated["items"]:
        group = item["metadata"]["name"]
        group_order.append(group)
        for v in item["versions"]:
            for r in v["resources"]:
                subs = {}
                for s in r.get("subresources", []):
                    rk = s.get("responseKind", {})
                    subs[s["subresource"]] = {"kind": rk.get("kind"), "group": rk.get("group", ""),
                                              "version": rk.get("version", ""), "verbs": s.get("verbs", [])}
                entry = {"kind": r["responseKind"]["kind"], "singularName": r.get("singularResource", ""),
                         "shortNames": r.get("shortNames", []), "categories": r.get("categories", []),
                         "verbs": r.get("verbs", []), "subresources": subs}
                index[(group, r["resource"])].append(("aggregated", v["version"], entry))
    legacy = collections.defaultdict(list)
    for name in sorted(os.listdir(folder)):
        m = re.match(r"^(api|apis__(.+))__(v[0-9a-z]+)\.json$", name)
        if not m:
            continue
        group, version = m.group(2) or "", m.group(3)
        with open(os.path.join(folder, name)) as f:
            doc = json.load(f)
        parents = {}
        for r in doc["resources"]:
            plural, _, sub = r["name"].partition("/")
            if not sub:
                parents[plural] = dict(r, subresources={})
        for r in doc["resources"]:
            plural, _, sub = r["name"].partition("/")
            if sub and plural in parents:
                parents[plural]["subresources"][sub] = {"kind": r["kind"], "group": r.get("group", ""),
                                                        "version": r.get("version", ""), "verbs": r.get("verbs", [])}
        for plural, r in parents.items():
            legacy[(group, plural)].append(("legacy", version, r))
    for key, entries in legacy.items():
        index[key].extend(entries)
    return index, group_order


def build(paths, folder):
    """The catalog's resources (sorted by group order, version, plural) and its group order."""
    index, group_order = load_discovery(folder)
    resources = []
    for (group, version, plural), found in sorted(served(paths).items()):
        methods = found["methods"]
        known = index.get((group, plural), [])
        ranked = sorted(known, key=lambda e: (e[0] != "aggregated" or e[1] != version, e[0] != "aggregated",
                                              e[1] != version))
        if not ranked:
            sys.exit(f"{group}/{version} {plural}: no discovery document names it")
        names = ranked[0][2]
        verbs = {COLLECTION[m] for m in methods.get("", ()) if m in COLLECTION}
        verbs |= {OBJECT[m] for m in methods.get("{name}", ()) if m in OBJECT}
        if "list" in verbs and any("watch" in e[2].get("verbs", []) for e in known):
            verbs.add("watch")
        record = {"group": group, "version": version, "plural": plural, "kind": names["kind"],
                  "singular": names.get("singularName") or names["kind"].lower(), "namespaced": found["namespaced"],
                  "verbs": sorted(verbs)}
        if names.get("shortNames"):
            record["shortNames"] = names["shortNames"]
        if names.get("categories"):
            record["categories"] = names["categories"]
        for source, v, entry in known:
            if source == "legacy" and v == version and entry.get("storageVersionHash"):
                record["storageVersionHash"] = entry["storageVersionHash"]
        subs = []
        for sub in sorted(k for k in methods if k not in ("", "{name}")):
            sub_verbs = sorted({SUBRESOURCE[m] for m in methods[sub] if m in SUBRESOURCE})
            described = next((e[2]["subresources"][sub] for e in ranked if sub in e[2].get("subresources", {})), None)
            if described is None:
                print(f"note: {group or 'core'}/{version} {plural}/{sub}: in no discovery document, given kind "
                      f"{record['kind']}", file=sys.stderr)
                described = {"kind": record["kind"], "group": "", "version": ""}
            s = {"name": sub, "kind": described["kind"], "verbs": sub_verbs}
            if described.get("group") or described.get("version"):
                s["group"], s["version"] = described.get("group", ""), described.get("version", "")
            subs.append(s)
        if subs:
            record["subresources"] = subs
        resources.append(record)
    groups = [""] + [g for g in group_order if any(r["group"] == g for r in resources)]
    groups += sorted({r["group"] for r in resources} - set(groups))
    resources.sort(key=lambda r: (groups.index(r["group"]), r["version"], r["plural"]))
    return resources, groups


def document(resources, groups):
    return {
        "source": f"Kubernetes 1.34: paths and verbs from the OpenAPI document as the PyPI package {CLIENT} carries "
                  "it, names from kubernetes/kubernetes' api/discovery documents (tools/k8s-schemas/catalog.py)",
        "groups": groups,
        "resources": resources,
    }
