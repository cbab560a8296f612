#!/usr/bin/env python3
"""Regenerates the embedded API server's built-in catalog: kube-informer-apiserver/src/registry/builtin_catalog.json
(every resource kube-apiserver 1.34 serves by default: see catalog.py) and src/schema/builtin_schemas.json (their
OpenAPI schemas).

Source: the PyPI package kubernetes-validate (pinned below), which ships, per Kubernetes release, the JSON-schema
rendering of that release's published OpenAPI document. We take Kubernetes 1.34's and turn it back into OpenAPI
structural-schema form:

* every description is dropped (we keep the shape, never the prose);
* `type: [T, "null"]` becomes `type: T`; the `enum` kubernetes-validate adds to `apiVersion` and `kind` goes;
* `x-kubernetes-group-version-kind` goes (the server derives it from the `ResourceSpec`); every other
  `x-kubernetes-*` extension stays exactly where Kubernetes declares it (patch merge key and strategy, list type and
  map keys, map type, unions);
* IntOrString becomes `{"x-kubernetes-int-or-string": true}` (the structural form apiextensions uses); Quantity
  becomes `oneOf: string | number`, as kube-apiserver's /openapi/v3 publishes it (its /openapi/v2 says `string`);
* `$ref`s name the definition (`{"$ref": "io.k8s.api.core.v1.PodSpec"}`, siblings kept): the server inlines them
  once per process into one tree per kind, so shared types (ObjectMeta, PodSpec) are stored once.

Only the definitions reachable from the catalog's kinds are kept. Usage:

    python3 tools/k8s-schemas/generate.py --discovery DIR     # pip downloads the pinned wheels into a temporary folder
    python3 tools/k8s-schemas/generate.py --discovery DIR --wheel kubernetes_validate-1.37.0-py3-none-any.whl \
        --client-wheel kubernetes-34.1.0-py2.py3-none-any.whl

DIR holds Kubernetes' published discovery documents (kubernetes/kubernetes `api/discovery/`), as catalog.py says.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile

import catalog

PACKAGE = "kubernetes-validate==1.37.0"
KUBERNETES = "1.34.0"
MEMBER = f"kubernetes_validate/kubernetes-json-schema/v{KUBERNETES}-local/_definitions.json"
SRC = os.path.join(os.path.dirname(__file__), "..", "..", "kube-informer-apiserver", "src")
OUT = os.path.join(SRC, "schema", "builtin_schemas.json")
CATALOG_OUT = os.path.join(SRC, "registry", "builtin_catalog.json")

# Definitions replaced whole (kubernetes-validate widens both to a JSON-schema oneOf of its own).
REPLACED = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"x-kubernetes-int-or-string": True},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
}

KEPT = {"type", "format", "properties", "additionalProperties", "items", "required", "$ref", "oneOf"}
DROPPED = {"description", "x-kubernetes-group-version-kind"}


def load(wheel):
    with zipfile.ZipFile(wheel) as z:
        return json.loads(z.read(MEMBER))["$defs"]


def download(package):
    folder = tempfile.mkdtemp(prefix="k8s-schemas-")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", folder, package], check=True)
    (wheel,) = [f for f in os.listdir(folder) if f.endswith(".whl")]
    return os.path.join(folder, wheel)


def definitions_by_kind(source):
    """(group, version, kind) -> the definition Kubernetes declares for it (`x-kubernetes-group-version-kind`)."""
    out = {}
    for name, schema in source.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            out.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return out


def convert(node, where):
    """One schema node, recursively; `where` names it in errors."""
    out = {}
    for key, value in node.items():
        if key in DROPPED:
            continue
        if key == "enum" and where.rsplit(".", 1)[-1] in ("apiVersion", "kind"):
            continue
        if key == "type":
            kinds = [t for t in (value if isinstance(value, list) else [value]) if t != "null"]
            if len(kinds) != 1:
                sys.exit(f"{where}: unexpected type {value!r}")
            out["type"] = kinds[0]
        elif key == "$ref":
            out["$ref"] = value.rsplit("/", 1)[-1]
        elif key == "properties":
            out["properties"] = {k: convert(v, f"{where}.{k}") for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = convert(value, f"{where}[]")
        elif key.startswith("x-kubernetes-") or key in KEPT:
            out[key] = value
        else:
            sys.exit(f"{where}: unexpected keyword {key!r}")
    return out


def references(node, found):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            else:
                references(value, found)
    elif isinstance(node, list):
        for value in node:
            references(value, found)


def recursive(root, source):
    """True when following `$ref`s from the definition `root` comes back to a definition already on the path."""

    def walk(name, path):
        if name in path:
            return True
        found = set()
        references(convert(source[name], name) if name not in REPLACED else REPLACED[name], found)
        return any(walk(n, path | {name}) for n in sorted(found))

    return walk(root, frozenset())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", help=f"a downloaded {PACKAGE} wheel (default: pip download it)")
    parser.add_argument("--client-wheel", help=f"a downloaded {catalog.CLIENT} wheel (default: pip download it)")
    parser.add_argument("--discovery", required=True, help="a folder of kubernetes/kubernetes' api/discovery documents")
    args = parser.parse_args()
    source = load(args.wheel or download(PACKAGE))
    paths = catalog.client_paths(args.client_wheel or download(catalog.CLIENT))
    resources, groups = catalog.build(paths, args.discovery)
    by_kind = definitions_by_kind(source)
    kinds = {}
    for r in resources:
        name = by_kind.get((r["group"], r["version"], r["kind"]))
        if name is None:
            sys.exit(f"{r['group']}/{r['version']} {r['kind']}: no definition in Kubernetes {KUBERNETES}'s OpenAPI")
        api_version = f"{r['group']}/{r['version']}" if r["group"] else r["version"]
        kinds[f"{api_version}/{r['kind']}"] = name
    with open(CATALOG_OUT, "w") as f:
        json.dump(catalog.document(resources, groups), f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(resources)} resources in {len(groups)} groups, {os.path.getsize(CATALOG_OUT)} bytes -> "
          f"{os.path.normpath(CATALOG_OUT)}")
    for kind, name in sorted(kinds.items()):
        if recursive(name, source):
            # CustomResourceDefinition: JSONSchemaProps nests itself, which no inlined tree can hold. The server
            # publishes such a kind without a schema (as any object), as before.
            print(f"note: {kind}: {name} refers to itself, left without a schema", file=sys.stderr)
            del kinds[kind]
    definitions, pending = {}, sorted(set(kinds.values()))
    while pending:
        name = pending.pop()
        if name in definitions:
            continue
        definitions[name] = REPLACED.get(name) or convert(source[name], name)
        found = set()
        references(definitions[name], found)
        pending.extend(sorted(found))
    document = {
        "source": f"Kubernetes {KUBERNETES} OpenAPI, from the PyPI package {PACKAGE} (tools/k8s-schemas/generate.py)",
        "kinds": dict(sorted(kinds.items())),
        "definitions": dict(sorted(definitions.items())),
    }
    with open(OUT, "w") as f:
        json.dump(document, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(definitions)} definitions, {os.path.getsize(OUT)} bytes -> {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
