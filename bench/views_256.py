#!/usr/bin/env python3
"""Views of a job of many nodes (issue 25 point 6): how long ls, show, the
report and the dashboard's requests take on a synthetic job of 256 nodes
of 20 series, an hour at 1 s each (18.4 M points), written by
bench/job_synth.c and cached in $TMPDIR/strobe-bench-views. Each figure is
the median of --reps runs, with the fastest and slowest beside it; the
runs list's first request (which computes the job's summary) is apart from
the cached ones. Prints a markdown section; raw figures to --json.

  bench/views_256.py --strobe build/strobe --synth build/bench/job_synth
                     [--nodes 256] [--seconds 3600] [--reps 5] [--quick] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import serve_cost  # bench/, beside this file


def get(port, path):
    """One request on its own connection, as a browser's (serve_cost.py's): seconds, bytes."""
    ms, size = serve_cost.get(port, path)
    return ms / 1e3, size


def command(argv, env):
    """One command: seconds, bytes it printed."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"views_256: {' '.join(argv)}: {p.stderr.decode()[-300:]}")
    return time.perf_counter() - t0, len(p.stdout)


def store(a):
    cache = os.path.join(os.environ.get("TMPDIR", tempfile.gettempdir()), "strobe-bench-views")
    os.makedirs(cache, exist_ok=True)
    db = os.path.join(cache, f"job-{a.nodes}-{a.seconds}.db")
    if not os.path.exists(db + ".ok"):
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        p = subprocess.run([a.synth, "--store", db, "--nodes", str(a.nodes), "--seconds", str(a.seconds)],
                           check=True, capture_output=True, text=True)
        with open(db + ".ok", "w") as f:
            f.write(p.stdout)
    with open(db + ".ok") as f:
        return db, json.loads(f.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--seconds", type=int, default=3600)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="10 minutes of each node, 3 reps")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.seconds, a.reps = 600, 3
    db, synth = store(a)
    job = synth["job"]
    env = dict(os.environ, STROBE_STORE=db)
    out = os.path.join(os.path.dirname(db), "views.html")
    rows = []  # (what, [seconds], bytes)

    def measure(what, f):
        xs, size = [], 0
        for _ in range(a.reps):
            t, size = f()
            xs.append(t)
        rows.append((what, xs, size))

    s = a.strobe
    measure("`strobe ls`", lambda: command([s, "ls"], env))
    measure("`strobe show JOB`", lambda: command([s, "show", job], env))
    measure("`strobe show --json JOB`", lambda: command([s, "show", "--json", job], env))
    measure("`strobe report JOB`", lambda: (command([s, "report", job, "-o", out], env)[0], os.path.getsize(out)))
    srv = subprocess.Popen([s, "serve", "--store", db, "--listen", "127.0.0.1:0", "--rate", "0"],
                           stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    try:
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        first = get(port, "/api/runs")
        rows.append(("`GET /api/runs`, first (the job's summary computed)", [first[0]], first[1]))
        measure("`GET /api/runs`, cached", lambda: get(port, "/api/runs"))
        measure("`GET /api/runs/JOB` (the run page's JSON: show --json)", lambda: get(port, f"/api/runs/{job}"))
        measure("`GET /api/runs/JOB/metrics` (every series)", lambda: get(port, f"/api/runs/{job}/metrics"))
        for m in ("cpu.util", "gpu.util"):
            measure(f"`GET /api/runs/JOB/heatmap?name={m}&points=1000`",
                    lambda m=m: get(port, f"/api/runs/{job}/heatmap?name={m}&points=1000"))
        measure("`GET /api/runs/JOB/series` of one node's cpu.util",
                lambda: get(port, f"/api/runs/{job}/series?name=cpu.util&labels=node%3Dn7&points=1000"))
    finally:
        srv.terminate()
        srv.wait()
    print(f"## 15. Views of a job of {a.nodes} nodes (bench/views_256.py)")
    print()
    print(f"A synthetic job (bench/job_synth.c): {a.nodes} nodes of {synth['series'] // a.nodes} series, "
          f"{a.seconds} s at 1 s each, {synth['points'] / 1e6:.1f} M points; median of {a.reps} (fastest-slowest):")
    print()
    print("| What | Median | Range | Bytes out |")
    print("|---|---|---|---|")
    for what, xs, size in rows:
        print(f"| {what} | {statistics.median(xs):.3f} s | {min(xs):.3f}-{max(xs):.3f} s | {size:,} |")
    print()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"synth": synth, "reps": a.reps, "rows": [
                {"what": w, "seconds": xs, "median_s": statistics.median(xs), "bytes": b} for w, xs, b in rows]},
                f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
