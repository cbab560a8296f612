#!/usr/bin/env python3
"""Instructions (valgrind's callgrind) one informer executes per object to sync N typed ConfigMaps (RealFIFO) from
the lean bench server, at each size given: the scale run's CPU per object as a figure that does not move with the
machine's load, to tell whether the cost per object grows with the cache's size.

    cargo bench --bench informer --no-run            # prints the path of the bench binary
    tools/bench-callgrind/informer-scale.py BINARY TAG N [N ...]

For each N the bench binary runs as `serve-lean configmaps N` (the lean server, not measured) and, under callgrind,
as `sync typed KUBECONFIG N no real` (the informer: start, list, the store filled, the handler called N times, the
watch opened; no relist). Prints the total, the total per object and, between consecutive sizes, the marginal
instructions per object (the difference of the totals over the difference of the sizes: the start's fixed cost left
out). The profiles are written to TAG.N.callgrind.out (`callgrind_annotate` shows where the instructions go; compare
two sizes' per-function totals divided by N to find what grows). Under callgrind the informer is ~50 times slower:
1M objects take the better part of an hour.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left beside the scripts
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import callgrind  # noqa: E402  (callgrind.py beside this script)


def count(binary, tag, n):
    server, ready = callgrind.serve([binary, "serve-lean", "configmaps", str(n)], "lean server")
    out = f"{tag}.{n}.callgrind.out"
    env = dict(os.environ, INFORMER_BENCH_SYNC_TIMEOUT="86400")
    child = subprocess.run(
        callgrind.command(out, [binary, "sync", "typed", ready["kubeconfig"], str(n), "no", "real"]),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    callgrind.stop(server)
    result = next((l for l in child.stdout.splitlines() if l.startswith("RESULT")), None)
    if child.returncode != 0 or result is None:
        sys.exit(child.stderr[-2000:])
    return callgrind.total(out), float(ready["json"])


def main():
    binary, tag = sys.argv[1], sys.argv[2]
    sizes = [int(n) for n in sys.argv[3:]] or [10000, 100000]
    previous = None
    for n in sizes:
        instructions, json = count(binary, tag, n)
        line = f"{tag} n={n} instructions={instructions:,} per_object={instructions / n:,.0f} json={json:.0f}"
        if previous is not None:
            (m, i) = previous
            line += f" marginal_per_object={(instructions - i) / (n - m):,.0f}"
        print(line, flush=True)
        previous = (n, instructions)


if __name__ == "__main__":
    main()
