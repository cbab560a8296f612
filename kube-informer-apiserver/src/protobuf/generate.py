#!/usr/bin/env python3
"""Writes messages.txt, the field table the embedded server's protobuf decoder reads.

Usage: generate.py API_REPO APIMACHINERY_REPO APIEXTENSIONS_REPO AGGREGATOR_REPO TAG > messages.txt

The four repositories are git clones (bare or not) of k8s.io/api, k8s.io/apimachinery,
k8s.io/apiextensions-apiserver (the CustomResourceDefinition kind) and k8s.io/kube-aggregator (APIService); TAG is
the release tag read from all four (v0.34.x matches the Kubernetes version the server's /version claims). The wire
shape of each message (field numbers, scalar types, repeated, maps) comes from the generated.proto files; what the
JSON encoding needs and protobuf does not say (the JSON name, `omitempty`, `,inline`, whether the Go field is a
pointer, Go's named slice types, the fields' declaration order) comes from the Go structs' tags in the same
packages. The table serves two readers: the protobuf decoder and the JSON encoder (src/serializer/json.rs), which
writes every built-in kind in its Go struct's order.
"""

import re
import subprocess
import sys

API, MACHINERY, EXTENSIONS, AGGREGATOR, TAG = sys.argv[1:6]

# (repository, directory, short package name, apiVersion of its kinds or None). Every group the server's built-in
# catalog serves (src/registry/builtin_catalog.json) is here, so that each of its kinds is written in its Go struct's
# order; apidiscovery's kinds are the aggregated discovery documents.
PACKAGES = [
    (MACHINERY, "pkg/apis/meta/v1", "meta.v1", None),
    (MACHINERY, "pkg/util/intstr", "intstr", None),
    (MACHINERY, "pkg/api/resource", "resource", None),
    (MACHINERY, "pkg/runtime", "runtime", None),
    (MACHINERY, "pkg/runtime/schema", "schema", None),
    (MACHINERY, "pkg/version", "version", None),
    (API, "core/v1", "core.v1", "v1"),
    (API, "apps/v1", "apps.v1", "apps/v1"),
    (API, "batch/v1", "batch.v1", "batch/v1"),
    (API, "coordination/v1", "coordination.v1", "coordination.k8s.io/v1"),
    (API, "rbac/v1", "rbac.v1", "rbac.authorization.k8s.io/v1"),
    (API, "policy/v1", "policy.v1", "policy/v1"),
    (API, "scheduling/v1", "scheduling.v1", "scheduling.k8s.io/v1"),
    (API, "networking/v1", "networking.v1", "networking.k8s.io/v1"),
    (API, "autoscaling/v2", "autoscaling.v2", "autoscaling/v2"),
    (API, "authorization/v1", "authorization.v1", "authorization.k8s.io/v1"),
    (API, "authentication/v1", "authentication.v1", "authentication.k8s.io/v1"),
    (API, "certificates/v1", "certificates.v1", "certificates.k8s.io/v1"),
    (API, "admissionregistration/v1", "admissionregistration.v1", "admissionregistration.k8s.io/v1"),
    (API, "autoscaling/v1", "autoscaling.v1", "autoscaling/v1"),
    (API, "discovery/v1", "discovery.v1", "discovery.k8s.io/v1"),
    (API, "events/v1", "events.v1", "events.k8s.io/v1"),
    (API, "flowcontrol/v1", "flowcontrol.v1", "flowcontrol.apiserver.k8s.io/v1"),
    (API, "node/v1", "node.v1", "node.k8s.io/v1"),
    (API, "resource/v1", "resource.v1", "resource.k8s.io/v1"),
    (API, "storage/v1", "storage.v1", "storage.k8s.io/v1"),
    (API, "apidiscovery/v2", "apidiscovery.v2", "apidiscovery.k8s.io/v2"),
    (API, "apidiscovery/v2beta1", "apidiscovery.v2beta1", "apidiscovery.k8s.io/v2beta1"),
    (EXTENSIONS, "pkg/apis/apiextensions/v1", "apiextensions.v1", "apiextensions.k8s.io/v1"),
    (AGGREGATOR, "pkg/apis/apiregistration/v1", "apiregistration.v1", "apiregistration.k8s.io/v1"),
]

# Kinds of meta/v1 (whose package has no apiVersion of its own): the discovery documents and Table, written in Go's
# order, never decoded (no resource takes them as a body).
META_KINDS = [
    ("v1", "APIGroup", "meta.v1.APIGroup"),
    ("v1", "APIGroupList", "meta.v1.APIGroupList"),
    ("v1", "APIResourceList", "meta.v1.APIResourceList"),
    ("v1", "APIVersions", "meta.v1.APIVersions"),
    ("meta.k8s.io/v1", "Table", "meta.v1.Table"),
    ("meta.k8s.io/v1beta1", "Table", "meta.v1.Table"),
]

# Go structs without protobuf tags (meta/v1's Table, the /version document): described from the Go struct alone,
# every field numbered 0 (no protobuf field has number 0, so the decoder never matches one), for JSON's order.
GO_ONLY = ["meta.v1.Table", "meta.v1.TableColumnDefinition", "meta.v1.TableRow", "meta.v1.TableRowCondition",
           "version.Info"]

# The table's type of each Go type those structs use. An `interface{}` is written as the JSON value it holds, as a
# RawExtension writes the JSON it holds; a TableRow's RawExtension holds a typed object (Object set, Raw nil), which
# its MarshalJSON writes with json.Marshal: the object's own kind's order (`runtime.Object`).
GO_TYPES = {
    "string": "string",
    "int32": "int32",
    "RowConditionType": "string",
    "ConditionStatus": "string",
    "ListMeta": "meta.v1.ListMeta",
    "TableColumnDefinition": "meta.v1.TableColumnDefinition",
    "TableRow": "meta.v1.TableRow",
    "TableRowCondition": "meta.v1.TableRowCondition",
    "interface{}": "runtime.RawExtension",
    "runtime.RawExtension": "runtime.Object",
}

# Messages whose Go type encodes itself to JSON by hand (MarshalJSON), and how.
SPECIAL = {
    "meta.v1.Time": "time",
    "meta.v1.MicroTime": "microtime",
    "meta.v1.Duration": "duration",
    "meta.v1.FieldsV1": "rawjson",
    "runtime.RawExtension": "rawjson",
    "intstr.IntOrString": "intorstring",
    "resource.Quantity": "quantity",
    "runtime.Object": "object",
    "apiextensions.v1.JSON": "rawjson",
    # Either a JSONSchemaProps (written in its struct's order) or another JSON value: a bool, an array of schemas,
    # an array of strings (marshal.go).
    "apiextensions.v1.JSONSchemaPropsOrBool": "structor apiextensions.v1.JSONSchemaProps bool",
    "apiextensions.v1.JSONSchemaPropsOrArray": "structor apiextensions.v1.JSONSchemaProps array",
    "apiextensions.v1.JSONSchemaPropsOrStringArray": "structor apiextensions.v1.JSONSchemaProps strings",
}

SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def short_package(proto_package):
    for prefix, repl in (("k8s.io.api.", ""), ("k8s.io.apimachinery.pkg.apis.", ""),
                         ("k8s.io.apimachinery.pkg.util.", ""), ("k8s.io.apimachinery.pkg.api.", ""),
                         ("k8s.io.apimachinery.pkg.", ""), ("k8s.io.apiextensions_apiserver.pkg.apis.", ""),
                         ("k8s.io.kube_aggregator.pkg.apis.", "")):
        if proto_package.startswith(prefix):
            return repl + proto_package[len(prefix):]
    raise SystemExit(f"unknown proto package {proto_package}")


def parse_proto(text, pkg):
    """{message: [(number, name, label, type)]}, types resolved to short names."""
    messages, current = {}, None
    for line in text.splitlines():
        line = line.split("//")[0].strip()
        m = re.match(r"message (\w+) \{", line)
        if m:
            current = messages.setdefault(f"{pkg}.{m.group(1)}", [])
            continue
        if line == "}":
            current = None
            continue
        if current is None or not line:
            continue
        m = re.match(r"(optional|repeated)?\s*(map<\s*[\w.]+\s*,\s*[\w.]+\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)", line)
        if not m:
            continue
        label, ty, name, number = m.group(1) or "", m.group(2), m.group(3), int(m.group(4))

        def resolve(t):
            t = t.strip()
            if t in SCALARS:
                return t
            if t.startswith("."):
                p, _, n = t[1:].rpartition(".")
                return f"{short_package(p)}.{n}"
            return f"{pkg}.{t}"

        mm = re.match(r"map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>", ty)
        if mm:
            ty = f"map<{resolve(mm.group(1))},{resolve(mm.group(2))}>"
            label = "map"
        else:
            ty = resolve(ty)
        current.append((number, name, label, ty))
    return messages


def parse_go(text, pkg):
    """Struct fields by protobuf number (in declaration order), every JSON-tagged field of each struct in order
    (for GO_ONLY), named slice types, and kinds (structs embedding TypeMeta)."""
    structs, plain, slices, kinds = {}, {}, set(), set()
    for m in re.finditer(r"^type (\w+) \[\]", text, re.M):
        slices.add(f"{pkg}.{m.group(1)}")
    for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
        name, body = f"{pkg}.{m.group(1)}", m.group(2)
        fields, tagged = {}, []
        for line in body.splitlines():
            line = line.strip()
            if line.startswith("//") or "`" not in line:
                continue
            decl, tags = line.split("`", 1)
            tags = dict(re.findall(r'(\w+):"([^"]*)"', tags))
            parts = decl.split()
            gotype = parts[-1] if parts else ""
            if gotype.endswith("TypeMeta") and tags.get("json", "").startswith(",inline"):
                kinds.add(name)
            elif "json" in tags:
                json_name, *opts = tags["json"].split(",")
                tagged.append((json_name, "omitempty" in opts, gotype))
            pb = tags.get("protobuf")
            if not pb or pb == "-":
                continue
            number = int(pb.split(",")[1])
            json_tag = tags.get("json", "")
            json_name, *opts = json_tag.split(",")
            fields[number] = {
                "json": json_name,
                "omit": "omitempty" in opts,
                "inline": "inline" in opts,
                "ptr": gotype.startswith("*"),
                "skip": json_name == "-",
            }
        structs[name] = fields
        plain[name] = tagged
    return structs, plain, slices, kinds


def go_only(name, tagged):
    """The lines of a struct without protobuf tags: number 0, its Go type's table type."""
    lines = []
    for json_name, omit, gotype in tagged:
        flags = []
        if gotype.startswith("[]"):
            gotype, flags = gotype[2:], ["rep"]
        if gotype not in GO_TYPES:
            raise SystemExit(f"{name}.{json_name}: Go type {gotype} has no table type")
        flags += ["omit"] if omit else []
        lines.append((f"0 {json_name} {GO_TYPES[gotype]} {' '.join(flags)}".rstrip(), GO_TYPES[gotype]))
    return lines


def main():
    protos, structs, plain, slices, kinds = {}, {}, {}, set(), {}
    for repo, path, pkg, api_version in PACKAGES:
        files = git(repo, "ls-tree", "--name-only", f"{TAG}:{path}").split()
        if "generated.proto" in files:
            protos.update(parse_proto(git(repo, "show", f"{TAG}:{path}/generated.proto"), pkg))
        for f in files:
            if f.endswith(".go") and not f.endswith("_test.go") and not f.startswith("zz_generated"):
                s, p, sl, k = parse_go(git(repo, "show", f"{TAG}:{path}/{f}"), pkg)
                structs.update(s)
                plain.update(p)
                slices |= sl
                if api_version:
                    for kind in k:
                        kinds[kind] = api_version
    repos = (API, MACHINERY, EXTENSIONS, AGGREGATOR)
    commits = [git(r, "rev-list", "-n1", TAG).strip() for r in repos]
    print("# Generated by generate.py from k8s.io/api, k8s.io/apimachinery, k8s.io/apiextensions-apiserver and")
    print(f"# k8s.io/kube-aggregator {TAG} ({', '.join(commits)}): do not edit.")
    print("# kind APIVERSION KIND MESSAGE [json]: the message of a kind (json: written in its order, never decoded).")
    print("# special MESSAGE HOW [MESSAGE OR]: a message whose Go type writes its own JSON (structor: a value of the")
    print("#   struct MESSAGE, written in its order, or, as OR says, a bool, an array of them or of strings).")
    print("# list MESSAGE: a message wrapping a Go named slice type (its JSON is its `items` array).")
    print("# message NAME, then one line per field in the Go struct's order: NUMBER JSONNAME TYPE FLAGS (rep = repeated,")
    print("#   map = map, ptr = Go pointer, omit = omitempty, inline = fields inlined into the parent's JSON);")
    print("#   NUMBER 0: a Go struct without protobuf encoding (Table), described for its JSON order only.")
    for kind, api_version in sorted(kinds.items()):
        if kind in protos:
            print(f"kind {api_version} {kind.rsplit('.', 1)[1]} {kind}")
    for api_version, kind, message in META_KINDS:
        print(f"kind {api_version} {kind} {message} json")
    emitted = {name: go_only(name, plain[name]) for name in GO_ONLY}
    for name, fields in sorted(protos.items()):
        if name in SPECIAL or name in slices:
            continue
        go = structs.get(name)
        lines = []
        # Lines in the Go struct's declaration order: the order encoding/json writes the fields in (protobuf
        # numbers follow it only where no field was added in the middle: PodSpec's initContainers is 20).
        by_number = {number: (number, pname, label, ty) for number, pname, label, ty in fields}
        order = [n for n in (go or {}) if n in by_number] + sorted(n for n in by_number if n not in (go or {}))
        for number, pname, label, ty in (by_number[n] for n in order):
            g = (go or {}).get(number)
            if g is None:
                # A message of a Go type defined as another package's type (core/v1's List), or of a struct
                # embedding one (resource's QuantityValue): not described here.
                print(f"skipped {name}: no Go field for protobuf field {number}", file=sys.stderr)
                lines = None
                break
            if g["skip"]:
                continue
            flags = [f for f in ("rep", "map") if label == ("repeated" if f == "rep" else "map")]
            flags += [f for f in ("ptr", "omit", "inline") if g[f]]
            lines.append((f"{number} {g['json'] or '-'} {ty} {' '.join(flags)}".rstrip(), ty))
        if lines is not None:
            emitted[name] = lines
    used = {t for lines in emitted.values() for _, ty in lines
            for t in re.findall(r"[\w.]+", ty.replace("map<", "<")) if t not in SCALARS}
    for t in sorted(used):
        if t not in emitted and t not in SPECIAL and t not in slices:
            raise SystemExit(f"message {t} is used but not described")
    for name, how in SPECIAL.items():
        if name in used:
            print(f"special {name} {how}")
    for name in sorted(slices):
        if name in protos:
            print(f"list {name} {protos[name][0][3]}")
    for name, lines in sorted(emitted.items()):
        print(f"message {name}")
        for line, _ in lines:
            print(line)

main()
