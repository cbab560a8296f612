"""What the scripts beside this file share: a bench binary's command line under callgrind, a profile's total, and a
bench server (the informer bench's `serve` / `serve-lean`) started and awaited until it prints its READY line.

Standard library only; the scripts import it from their own folder (`sys.path[0]`, set by path, not installed).
"""
import subprocess
import sys


def command(out, argv):
    """The command line that runs `argv` whole under callgrind, its profile written to `out`."""
    return ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv]


def total(out):
    """The instructions a profile counts, every thread of the process (callgrind_annotate's PROGRAM TOTALS: the
    profile's own `summary:` / `totals:` line, read directly)."""
    with open(out) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    sys.exit(f"no totals in {out}")


def serve(argv, name="server"):
    """Starts a bench server (stdin and stdout piped, text) and waits for its `READY key=value ...` line; returns the
    process and the line's pairs (`kubeconfig`, `rv0`, `json`, as the mode prints them)."""
    server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    while not line.startswith("READY "):
        if not line:
            sys.exit(f"the {name} exited before it was ready")
        line = server.stdout.readline()
    return server, dict(p.split("=", 1) for p in line.split()[1:])


def stop(server):
    """Tells a bench server to quit and waits for it."""
    server.stdin.write("quit\n")
    server.stdin.flush()
    server.wait()
