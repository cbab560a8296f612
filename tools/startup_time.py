#!/usr/bin/env python3
"""Time from spawning the standalone kube-informer-apiserver to its first `/readyz` 200, over N runs.

Usage: tools/startup_time.py [BINARY] [N]
       (default target/release/kube-informer-apiserver, 20 runs; build it with
        `cargo build --release -p kube-informer-apiserver --bin kube-informer-apiserver`)

Prints the minimum, median and maximum in milliseconds. The probe polls every half millisecond, so the figure
includes up to that much slack; on a loaded machine the spread is wide — compare medians of runs taken together.
"""

import http.client
import socket
import statistics
import subprocess
import sys
import time

binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/kube-informer-apiserver"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
times = []
for _ in range(runs):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    started = time.perf_counter()
    server = subprocess.Popen([binary, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.0005)
            if time.perf_counter() - started > 10:
                sys.exit(f"{binary}: not ready after 10 s")
        times.append((time.perf_counter() - started) * 1000)
    finally:
        server.terminate()
        server.wait()
print(f"{binary}: min {min(times):.1f} ms, median {statistics.median(times):.1f} ms, max {max(times):.1f} ms over {runs}")
