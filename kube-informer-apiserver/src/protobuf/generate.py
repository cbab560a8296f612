#!/usr/bin/env python3
"""Writes messages.txt, the field table the embedded server's protobuf decoder reads.

Usage: generate.py API_REPO APIMACHINERY_REPO TAG > messages.txt

API_REPO and APIMACHINERY_REPO are git clones of k8s.io/api and k8s.io/apimachinery (bare or not); TAG is the
release tag read from both (v0.34.x matches the Kubernetes version the server's /version claims). The wire shape of
each message (field numbers, scalar types, repeated, maps) comes from the generated.proto files; what the JSON
encoding needs and protobuf does not say (the JSON name, `omitempty`, `,inline`, whether the Go field is a pointer,
Go's named slice types) comes from the Go structs' tags in the same packages.
"""

import re
import subprocess
import sys

API, MACHINERY, TAG = sys.argv[1:4]

# (repository, directory, short package name, apiVersion of its kinds or None)
PACKAGES = [
    (MACHINERY, "pkg/apis/meta/v1", "meta.v1", None),
    (MACHINERY, "pkg/util/intstr", "intstr", None),
    (MACHINERY, "pkg/api/resource", "resource", None),
    (MACHINERY, "pkg/runtime", "runtime", None),
    (MACHINERY, "pkg/runtime/schema", "schema", None),
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
]

# Messages whose Go type encodes itself to JSON by hand (MarshalJSON), and how.
SPECIAL = {
    "meta.v1.Time": "time",
    "meta.v1.MicroTime": "microtime",
    "meta.v1.Duration": "duration",
    "meta.v1.FieldsV1": "rawjson",
    "runtime.RawExtension": "rawjson",
    "intstr.IntOrString": "intorstring",
    "resource.Quantity": "quantity",
}

SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def short_package(proto_package):
    for prefix, repl in (("k8s.io.api.", ""), ("k8s.io.apimachinery.pkg.apis.", ""),
                         ("k8s.io.apimachinery.pkg.util.", ""), ("k8s.io.apimachinery.pkg.api.", ""),
                         ("k8s.io.apimachinery.pkg.", "")):
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
    """Struct fields by protobuf number (in declaration order), named slice types, and kinds (structs embedding TypeMeta)."""
    structs, slices, kinds = {}, set(), set()
    for m in re.finditer(r"^type (\w+) \[\]", text, re.M):
        slices.add(f"{pkg}.{m.group(1)}")
    for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
        name, body = f"{pkg}.{m.group(1)}", m.group(2)
        fields = {}
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
    return structs, slices, kinds


def main():
    protos, structs, slices, kinds = {}, {}, set(), {}
    for repo, path, pkg, api_version in PACKAGES:
        protos.update(parse_proto(git(repo, "show", f"{TAG}:{path}/generated.proto"), pkg))
        for f in git(repo, "ls-tree", "--name-only", f"{TAG}:{path}").split():
            if f.endswith(".go") and not f.endswith("_test.go") and not f.startswith("zz_generated"):
                s, sl, k = parse_go(git(repo, "show", f"{TAG}:{path}/{f}"), pkg)
                structs.update(s)
                slices |= sl
                if api_version:
                    for kind in k:
                        kinds[kind] = api_version
    commits = [git(r, "rev-list", "-n1", TAG).strip() for r in (API, MACHINERY)]
    print(f"# Generated by generate.py from k8s.io/api and k8s.io/apimachinery {TAG}")
    print(f"# ({commits[0]}, {commits[1]}): do not edit.")
    print("# kind APIVERSION KIND MESSAGE: the message of a kind.")
    print("# special MESSAGE HOW: a message whose Go type writes its own JSON.")
    print("# list MESSAGE: a message wrapping a Go named slice type (its JSON is its `items` array).")
    print("# message NAME, then one line per field in the Go struct's order: NUMBER JSONNAME TYPE FLAGS (rep = repeated,")
    print("#   map = map, ptr = Go pointer, omit = omitempty, inline = fields inlined into the parent's JSON).")
    for kind, api_version in sorted(kinds.items()):
        if kind in protos:
            print(f"kind {api_version} {kind.rsplit('.', 1)[1]} {kind}")
    emitted = {}
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
    for name, lines in emitted.items():
        print(f"message {name}")
        for line, _ in lines:
            print(line)

main()
