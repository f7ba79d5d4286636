#!/usr/bin/env python3
"""Views of a job of 256 nodes (issue 25 point 6): bench/job_synth writes
a synthetic job of 256 node runs of 20 series each through the store API.
strobe show lists 256 nodes; strobe serve lists the job as one row and
answers a heatmap of 256 rows in one request; the dashboard's run page and
strobe report's page load in headless Chromium (views_browser.js) with a
nodes table of 256 rows and heatmaps of 256 rows for cpu.util and
gpu.util. How long each took is printed, not judged: the machines are
shared; docs/benchmarks.md has the figures (bench/views_256.py)."""
import json
import os
import subprocess
import time

from strobetest import STROBE, TMP, check, done, show, skip, store_path, strobe
from test_views import browse, chromium_node, get, serve, stop

SYNTH = os.path.join(os.path.dirname(os.path.abspath(STROBE)), "bench", "job_synth")
NODES = 256


def timed(what, f):
    t = time.monotonic()
    v = f()
    print(f"# {what}: {time.monotonic() - t:.2f} s", flush=True)
    return v


def main():
    if not os.access(SYNTH, os.X_OK):
        skip("views of 256 nodes", f"{SYNTH} is not built (make all)")
        done()
    db = store_path("views256.db")
    p = timed("job_synth", lambda: subprocess.run([SYNTH, "--store", db, "--nodes", str(NODES), "--seconds", "900"],
                                                  capture_output=True, text=True, timeout=300))
    info = json.loads(p.stdout) if p.returncode == 0 else {}
    check("job_synth writes a job of 256 nodes of 20 series",
          info.get("nodes") == NODES and info.get("series") == NODES * 20, (p.stdout, p.stderr))
    job = info.get("job", "none")

    s = timed("show --json", lambda: show(db, job))
    check("show: 256 nodes, each with its mean CPU and GPU",
          len(s.get("nodes", [])) == NODES and all(n["cpu_util_pct"] is not None and n["gpu_util_pct"] is not None
                                                   for n in s["nodes"]), len(s.get("nodes", [])))
    p = timed("ls", lambda: strobe("ls", "--json", store=db))
    runs = json.loads(p.stdout) if p.returncode == 0 else []
    check("ls: the job alone, 256 nodes", [(r["id"], r.get("nodes")) for r in runs] == [(job, NODES)], runs[:3])

    srv, base = serve(db)
    if not base:
        srv.kill()
        done()
    try:
        lst = timed("GET /api/runs", lambda: get(base, "api/runs"))
        check("API: the runs list has the job alone", [(r["id"], r.get("nodes")) for r in lst["runs"]] == [(job, NODES)],
              lst["runs"][:3])
        for m in ("cpu.util", "gpu.util"):
            hm = timed(f"GET heatmap {m}", lambda: get(base, f"api/runs/{job}/heatmap?name={m}&points=600"))
            check(f"API: one request gives the {m} heatmap of 256 rows, n0 first and n255 last",
                  len(hm["nodes"]) == NODES and hm["nodes"][0] == "n0" and hm["nodes"][-1] == "n255" and
                  len(hm["mean"]) == NODES and all(len(r) == hm["buckets"] for r in hm["mean"]),
                  (len(hm["nodes"]), hm["nodes"][:3]))
        run = timed("GET /api/runs/{job}", lambda: get(base, f"api/runs/{job}"))
        check("API: the run has its 256 nodes", len(run.get("nodes", [])) == NODES, len(run.get("nodes", [])))
        node = chromium_node()
        if not node:
            skip("256 nodes in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
            done()
        b = browse(node, "dashboard", base, job, {"shot": "views256-dashboard", "full": False})
    finally:
        stop(srv)
    print(f"# the dashboard's page took {b.get('elapsed_s')} s in Chromium", flush=True)
    a = b.get("steps", {}).get("all", {})
    check("dashboard: no console error, no request off the server", b.get("errors") == [] and b.get("foreign") == [],
          (b.get("errors"), b.get("foreign")))
    for m in ("cpu.util", "gpu.util"):
        h = a.get("heat", {}).get(m, {})
        check(f"dashboard: the {m} heatmap has 256 rows, drawn", h.get("rows") == NODES and h.get("ink", 0) > 1000,
              {k: v for k, v in h.items() if k != "means"})
    check("dashboard: a nodes table of 256 rows and a picker of each node",
          len(a.get("nodes", [])) == NODES and len(a.get("pick", [])) == NODES + 1,
          (len(a.get("nodes", [])), len(a.get("pick", []))))

    out = os.path.join(TMP, "views256.html")
    p = timed("strobe report", lambda: strobe("report", job, "-o", out, store=db, timeout=300))
    check("strobe report of 256 nodes exits 0", p.returncode == 0 and os.path.isfile(out), p.stderr)
    print(f"# the report is {os.path.getsize(out) / 2**20:.1f} MiB" if os.path.isfile(out) else "# no report",
          flush=True)
    r = browse(node, "report", out, "-", {"shot": "views256", "full": False})
    print(f"# the report took {r.get('elapsed_s')} s in Chromium", flush=True)
    ra = r.get("steps", {}).get("all", {})
    check("report: no console error, no network request", r.get("errors") == [] and r.get("foreign") == [],
          (r.get("errors"), r.get("foreign")))
    for m in ("cpu.util", "gpu.util"):
        h = ra.get("heat", {}).get(m, {})
        check(f"report: the {m} heatmap has 256 rows, drawn", h.get("rows") == NODES and h.get("ink", 0) > 1000, h)
    check("report: a nodes table of 256 rows", len(ra.get("nodes", [])) == NODES, len(ra.get("nodes", [])))
    done()


main()
