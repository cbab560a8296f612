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
import subprocess
import sys


def main():
    binary, tag = sys.argv[1], sys.argv[2]
    n = sys.argv[3] if len(sys.argv) > 3 else "10000"
    # The informer's queue (a bench binary from before the choice existed takes no such argument).
    fifo = [sys.argv[4]] if len(sys.argv) > 4 else []
    server = subprocess.Popen([binary, "serve", n, "0", "https"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    while not line.startswith("READY "):
        if not line:
            sys.exit("the server exited before it was ready")
        line = server.stdout.readline()
    ready = dict(p.split("=", 1) for p in line.split()[1:])
    out = f"{tag}.callgrind.out"
    child = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "sync", "typed", ready["kubeconfig"], n, "relist", *fifo],
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
    server.stdin.write("quit\n")
    server.stdin.flush()
    server.wait()
    total = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    print(tag, next((l.strip() for l in total.splitlines() if "PROGRAM TOTALS" in l), "no totals"))


if __name__ == "__main__":
    main()
