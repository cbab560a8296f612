#!/usr/bin/env python3
"""Instructions (valgrind's callgrind) one informer executes per watch event: a burst of MODIFIED events of 1,000
ConfigMaps replayed over HTTPS through an informer with one handler, a figure that does not move with the machine's
load, for comparing two builds (or the two queues) of the informer bench.

    cargo bench --bench informer --no-run            # prints the path of the bench binary
    tools/bench-callgrind/informer-burst.py BINARY TAG [EVENTS] [real|delta]

The bench binary runs as `serve` (the embedded API server, not measured) holding 2 × EVENTS updates and, under
callgrind, as `burst` (the informer: list of the 1,000 objects at the start, then the watch replaying EVENTS, then
2 × EVENTS events); the difference of the two totals, divided by EVENTS, is the cost of one event, the start and the
list left out. The profiles are written to TAG.EVENTS.callgrind.out and TAG.(2 × EVENTS).callgrind.out.
"""
import subprocess
import sys


def total(out):
    annotated = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    line = next((l for l in annotated.splitlines() if "PROGRAM TOTALS" in l), None)
    if line is None:
        sys.exit(f"no totals in {out}")
    return int(line.split()[0].replace(",", ""))


def run(binary, ready, tag, events, fifo):
    out = f"{tag}.{events}.callgrind.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "burst", ready["kubeconfig"],
         ready["rv0"], str(events), "1", *fifo],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return total(out)


def main():
    binary, tag = sys.argv[1], sys.argv[2]
    events = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    # The informer's queue (a bench binary from before the choice existed takes no such argument).
    fifo = [sys.argv[4]] if len(sys.argv) > 4 else []
    server = subprocess.Popen([binary, "serve", "1000", str(2 * events), "https"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    while not line.startswith("READY "):
        if not line:
            sys.exit("the server exited before it was ready")
        line = server.stdout.readline()
    ready = dict(p.split("=", 1) for p in line.split()[1:])
    once = run(binary, ready, tag, events, fifo)
    twice = run(binary, ready, tag, 2 * events, fifo)
    server.stdin.write("quit\n")
    server.stdin.flush()
    server.wait()
    print(f"{tag} instructions per event: {(twice - once) / events:,.0f} ({once:,} for {events}, {twice:,} for {2 * events})")


if __name__ == "__main__":
    main()
