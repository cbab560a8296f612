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
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left beside the scripts
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import callgrind  # noqa: E402  (callgrind.py beside this script)


def run(binary, ready, tag, events, fifo):
    out = f"{tag}.{events}.callgrind.out"
    subprocess.run(
        callgrind.command(out, [binary, "burst", ready["kubeconfig"], ready["rv0"], str(events), "1", *fifo]),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return callgrind.total(out)


def main():
    binary, tag = sys.argv[1], sys.argv[2]
    events = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    # The informer's queue (a bench binary from before the choice existed takes no such argument).
    fifo = [sys.argv[4]] if len(sys.argv) > 4 else []
    server, ready = callgrind.serve([binary, "serve", "1000", str(2 * events), "https"])
    once = run(binary, ready, tag, events, fifo)
    twice = run(binary, ready, tag, 2 * events, fifo)
    callgrind.stop(server)
    print(f"{tag} instructions per event: {(twice - once) / events:,.0f} ({once:,} for {events}, {twice:,} for {2 * events})")


if __name__ == "__main__":
    main()
