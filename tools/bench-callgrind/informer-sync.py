#!/usr/bin/env python3
"""Instructions (valgrind's callgrind) one informer executes to sync N ConfigMaps over HTTPS and relist them after a
410: a figure that does not move with the machine's load, for comparing two builds of the informer bench.

    cargo bench --bench informer --no-run            # prints the path of the bench binary
    tools/bench-callgrind/informer-sync.py BINARY TAG [N] [real|delta]

The bench binary runs as `serve` (the embedded API server, not measured) and, under callgrind, as `sync typed ...
relist` (the informer); the profile is written to TAG.callgrind.out and its total printed (`callgrind_annotate` shows
where the instructions go). Run it on the binaries of two commits (`git archive` each into a folder, build both
with one CARGO_TARGET_DIR) and compare the totals.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left beside the scripts
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import callgrind  # noqa: E402  (callgrind.py beside this script)


def main():
    binary, tag = sys.argv[1], sys.argv[2]
    n = sys.argv[3] if len(sys.argv) > 3 else "10000"
    # The informer's queue (a bench binary from before the choice existed takes no such argument).
    fifo = [sys.argv[4]] if len(sys.argv) > 4 else []
    server, ready = callgrind.serve([binary, "serve", n, "0", "https"])
    out = f"{tag}.callgrind.out"
    child = subprocess.Popen(
        callgrind.command(out, [binary, "sync", "typed", ready["kubeconfig"], n, "relist", *fifo]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        line = child.stdout.readline()
        if not line:
            sys.exit(child.stderr.read()[-2000:])
        if line.startswith("NEED relist"):
            server.stdin.write("relist\n")
            server.stdin.flush()
            while not server.stdout.readline().startswith("OK"):
                pass
            child.stdin.write("\n")
            child.stdin.flush()
        elif line.startswith("RESULT"):
            break
    child.wait()
    callgrind.stop(server)
    print(f"{tag} {callgrind.total(out):,} (100.0%)  PROGRAM TOTALS")


if __name__ == "__main__":
    main()
