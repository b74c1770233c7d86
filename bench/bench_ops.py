#!/usr/bin/python3
"""bench/bench_ops.py TRACE [threads...] — the Python API's bulk read: open TRACE and build the
DataFrame of seq, kind, stream, kernel, host and device begin/end (reprise.DEFAULT_COLUMNS)
with trace.ops(threads=N) for each N given (default 1 2), each in a fresh process so that
each pays for its own fresh memory; prints wall and CPU time, the arrays' bytes and the peak
RSS. With --json FILE.json (the Chrome JSON `reprise export -f json` writes), the peer: the
same columns from json.load of that file into a DataFrame. Results: bench/RESULTS.md.
Run with Debian's Python: /usr/bin/python3 bench/bench_ops.py ... (PYTHONPATH=python, or the
installed package)."""

import json
import os
import resource
import subprocess
import sys
import time


def one(path, threads):
    t0 = time.perf_counter()
    import reprise
    t1, c1 = time.perf_counter(), time.process_time()
    df = reprise.open(path).ops(threads=threads)
    t2, c2 = time.perf_counter(), time.process_time()
    nbytes = sum(df[c].values.nbytes for c in df.columns)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("ops(threads=%d): %d ops x %d columns in %.2f s wall, %.2f s CPU (import %.2f s "
          "more); arrays %.0f MB, peak RSS %.0f MB" % (threads, len(df), len(df.columns),
                                                      t2 - t1, c2 - c1, t1 - t0, nbytes / 1e6,
                                                      rss))


def peer(path):
    c0 = time.process_time()
    import pandas as pd
    t1 = time.perf_counter()
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    t2 = time.perf_counter()
    rows = [e for e in ev if e.get("ph") == "X"]
    df = pd.DataFrame({"ts": [e["ts"] for e in rows], "dur": [e.get("dur", 0) for e in rows],
                       "name": [e.get("name") for e in rows], "tid": [e.get("tid") for e in rows],
                       "pid": [e.get("pid") for e in rows]})
    t3, c3 = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("peer, json.load + DataFrame of %s (%.0f MB): %d slices in %.2f s wall (load %.2f s), "
          "%.2f s CPU; peak RSS %.0f MB" % (os.path.basename(path), os.path.getsize(path) / 1e6,
                                            len(df), t3 - t1, t2 - t1, c3 - c0, rss))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--json":
        peer(sys.argv[2])
    elif len(sys.argv) >= 2:
        for n in sys.argv[2:] or ["1", "2"]:
            subprocess.run([sys.executable, __file__, "--one", sys.argv[1], n], check=True)
    else:
        sys.exit("usage: bench_ops.py TRACE [threads...] | --json CHROME.json")
