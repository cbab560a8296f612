#!/usr/bin/env python3
"""Regenerates src/testing/builtin_schemas.json: the OpenAPI schemas of the embedded API server's default resources.

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

Only the definitions reachable from the kinds listed in KINDS are kept. Usage:

    python3 tools/k8s-schemas/generate.py            # downloads the pinned wheel with pip into a temporary folder
    python3 tools/k8s-schemas/generate.py --wheel kubernetes_validate-1.37.0-py3-none-any.whl
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = "kubernetes-validate==1.37.0"
KUBERNETES = "1.34.0"
MEMBER = f"kubernetes_validate/kubernetes-json-schema/v{KUBERNETES}-local/_definitions.json"
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "src", "testing", "builtin_schemas.json")

# apiVersion/kind of every default resource (ResourceSpec::defaults) -> its definition.
KINDS = {
    "v1/ConfigMap": "io.k8s.api.core.v1.ConfigMap",
    "v1/Secret": "io.k8s.api.core.v1.Secret",
    "v1/Namespace": "io.k8s.api.core.v1.Namespace",
    "v1/Event": "io.k8s.api.core.v1.Event",
    "v1/Pod": "io.k8s.api.core.v1.Pod",
    "v1/Node": "io.k8s.api.core.v1.Node",
    "v1/Service": "io.k8s.api.core.v1.Service",
    "coordination.k8s.io/v1/Lease": "io.k8s.api.coordination.v1.Lease",
    "apps/v1/Deployment": "io.k8s.api.apps.v1.Deployment",
}

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


def download():
    folder = tempfile.mkdtemp(prefix="k8s-schemas-")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", folder, PACKAGE], check=True)
    (wheel,) = [f for f in os.listdir(folder) if f.endswith(".whl")]
    return os.path.join(folder, wheel)


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
            if key == "$ref":
                found.add(value)
            else:
                references(value, found)
    elif isinstance(node, list):
        for value in node:
            references(value, found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", help=f"a downloaded {PACKAGE} wheel (default: pip download it)")
    args = parser.parse_args()
    source = load(args.wheel or download())
    definitions, pending = {}, list(KINDS.values())
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
        "kinds": KINDS,
        "definitions": dict(sorted(definitions.items())),
    }
    with open(OUT, "w") as f:
        json.dump(document, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(definitions)} definitions, {os.path.getsize(OUT)} bytes -> {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
