#!/usr/bin/env python3
"""Instructions (valgrind's callgrind) one store write costs the API server, end to end through the direct API the
server bench's "store writes" line uses (decode-free: a serde_json value in, defaulting, field manager, encoding,
the store, the watch history): a figure that does not move with the machine's load, for comparing two builds.

    cargo bench -p kube-informer-apiserver --bench server --no-run     # prints the path of the bench binary
    tools/bench-callgrind/server-writes.py BINARY TAG [N] [KIND...]

The bench binary runs as `--bench writes KIND N` (a fixed setup — a server, 1,000 ConfigMaps — then N writes of
KIND) and as `--bench writes KIND 0` (the setup alone), both whole under callgrind; the difference divided by N is
one write's instructions, every thread of the process counted. KINDs: cm-update (the bench's "store writes": a
ConfigMap replaced with a 400-byte value), cm-create, pod-create, deploy-create (defaulted by the server); all four
by default. Profiles are written to TAG.KIND.N.callgrind.out (`callgrind_annotate` shows where the instructions go).
To compare with a commit whose bench lacks the mode, copy this bench's `benches/server.rs` into a checkout of it
(`git worktree add --detach`) and build there.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left beside the scripts
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import callgrind  # noqa: E402  (callgrind.py beside this script)


def total(binary, out, kind, n):
    subprocess.run(callgrind.command(out, [binary, "--bench", "writes", kind, str(n)]), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return callgrind.total(out)


def main():
    binary, tag = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    kinds = sys.argv[4:] or ["cm-update", "cm-create", "pod-create", "deploy-create"]
    base = total(binary, f"{tag}.setup.0.callgrind.out", "cm-update", 0)
    print(f"{tag}: setup alone {base:,} instructions")
    for kind in kinds:
        t = total(binary, f"{tag}.{kind}.{n}.callgrind.out", kind, n)
        print(f"{tag}: {kind:<14} {n} writes {t - base:>14,} instructions, {(t - base) / n:>10,.0f} per write")


if __name__ == "__main__":
    main()
