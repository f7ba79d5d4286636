#!/usr/bin/env python3
"""Views of a job of two nodes (issue 25 point 6): two recorders join one
job (--join, --node a and --node b) in a SQLite store, each node printing
its own line. strobe show gives each node's mean CPU; strobe serve lists
the job as one row of 2 nodes and answers its heatmap; the dashboard, in
headless Chromium (views_browser.js), shows a nodes table, a heatmap of
one row per node whose row means are show's (an independent reading: the
heatmap's buckets against show's statistics over every point), and a node
picker that cuts the charts, the metric list and the logs to one node.
strobe report JOB has the same nodes table and heatmap, and its own
picker. Screenshots are kept under $STROBE_BUILD/artifacts/."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

from strobetest import PYTHON, STROBE, TMP, check, done, near, show, skip, store_path, strobe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "integration", "views_browser.js")
ARTIFACTS = os.path.join(os.environ.get("STROBE_BUILD", os.path.join(ROOT, "build")), "artifacts")

# node a keeps a core busy, node b sleeps; each says who it is
WORKLOAD = r"""
import sys, time
print("hello from node", sys.argv[1], flush=True)
end = time.monotonic() + 3
while time.monotonic() < end:
    if sys.argv[1] == "b":
        time.sleep(0.05)
"""


def serve(db):
    """(process, base URL) of strobe serve over db."""
    srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0", "--rate", "0"],
                           stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    check("serve prints where it listens", m is not None, line)
    return srv, ("http://%s/" % m.group(1) if m else None)


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return json.loads(r.read())


def stop(srv):
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=10)
    except subprocess.TimeoutExpired:
        srv.kill()


def chromium_node():
    """node's path when headless Chromium can be driven (skip it otherwise)."""
    node = shutil.which("node")
    if node and os.path.exists("/usr/bin/chromium") and \
            os.path.isdir(os.path.join(ROOT, "node_modules", "playwright-core")):
        os.makedirs(ARTIFACTS, exist_ok=True)
        return node
    return None


def browse(node, mode, where, run, spec):
    r = subprocess.run([node, DRIVER, mode, where, run, ARTIFACTS, json.dumps(spec)],
                       capture_output=True, text=True, timeout=180)
    try:
        return json.loads(r.stdout.strip().split("\n")[-1])
    except (ValueError, IndexError):
        return {"errors": ["no result: " + r.stdout[-500:] + r.stderr[-500:]], "steps": {}}


def main():
    db = store_path("views.db")
    procs = []
    for n in ("a", "b"):
        procs.append(subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--store", db, "--join",
                                       "views-job", "--node", n, "--", PYTHON, "-c", WORKLOAD, n],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        time.sleep(0.3)
    errs = [p.communicate(timeout=60)[1] for p in procs]
    check("two recorders ran as nodes a and b of one job", all(p.returncode == 0 for p in procs), errs)
    p = strobe("ls", "--json", store=db)
    runs = json.loads(p.stdout) if p.returncode == 0 else []
    check("ls: one run, the job of 2 nodes", len(runs) == 1 and runs[0].get("nodes") == 2, runs)
    job = runs[0]["id"] if runs else "none"

    s = show(db, job)
    means = {n: (s.get("metrics", {}).get(f"cpu.util{{node={n}}}") or {}).get("mean") for n in ("a", "b")}
    check("show --json: cpu.util of each node", all(isinstance(v, (int, float)) for v in means.values()), means)
    nodes = {n["node"]: n for n in s.get("nodes", [])}
    check("show --json: each node's cpu_util_pct is its cpu.util's mean",
          sorted(nodes) == ["a", "b"] and all(nodes[n]["cpu_util_pct"] == means[n] for n in means), nodes)
    text = strobe("show", job, store=db).stdout
    check("show: the nodes table has CPU and GPU columns, the METRIC table a NODE column",
          re.search(r"NODE +RUN +HOST +STATUS +START +DURATION +CPU +GPU", text) is not None and
          re.search(r"METRIC +NODE +MEAN", text) is not None, text[:1200])

    srv, base = serve(db)
    if not base:
        srv.kill()
        done()
    try:
        lst = get(base, "api/runs")
        check("API: the runs list has the job alone, with 2 nodes",
              [(r["id"], r.get("nodes")) for r in lst["runs"]] == [(job, 2)], lst)
        every = get(base, "api/runs?nodes=1")
        check("API: nodes=1 lists each node's run too, under its job",
              sorted((r.get("job"), r.get("node")) for r in every["runs"] if r.get("job")) ==
              [(job, "a"), (job, "b")] and every["total"] == 3, every)
        hm = get(base, f"api/runs/{job}/heatmap?name=cpu.util&points=50")
        check("API: the heatmap has a row per node, a and b", hm["nodes"] == ["a", "b"], hm)
        for i, n in enumerate(hm["nodes"]):
            near(f"API: node {n}'s heatmap mean is show's mean of its cpu.util", hm["node_mean"][i],
                 means[n], 0.05, "pct")
        node = chromium_node()
        if not node:
            skip("the views in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
            done()
        b = browse(node, "dashboard", base, job,
                   {"pick": "b", "click": "a", "log": "hello from node b", "shot": "views-dashboard"})
    finally:
        stop(srv)
    st = b.get("steps", {})
    check("dashboard: no console error, no request off the server", b.get("errors") == [] and
          b.get("foreign") == [], (b.get("errors"), b.get("foreign")))
    print(f"# the dashboard's walk-through took {b.get('elapsed_s')} s", flush=True)
    check("dashboard: the runs list has the job, its nodes column 2",
          st.get("runs") == [{"id": job, "nodes": "2"}], st.get("runs"))
    a = st.get("all", {})
    heat = a.get("heat", {}).get("cpu.util", {})
    check("dashboard: a heatmap of cpu.util, one row per node, drawn",
          heat.get("rows") == 2 and heat.get("nodes") == ["a", "b"] and heat.get("ink", 0) > 50, heat)
    for i, n in enumerate(heat.get("nodes") or []):
        # the mean of the buckets drawn: each bucket weighs the same, each
        # sample in show's mean, so they differ by the unevenly filled ones
        near(f"dashboard: node {n}'s heatmap row, averaged, is show's mean cpu.util",
             heat["means"][i], means[n], 3.0, "pct")
    check("dashboard: a nodes table and a picker of both nodes",
          a.get("nodes") == ["a", "b"] and a.get("pick") == ["", "a", "b"], (a.get("nodes"), a.get("pick")))
    check("dashboard: with all nodes, both nodes' cpu.util charted",
          {"cpu.util{node=a}", "cpu.util{node=b}"} <= set(a.get("charts", [])), a.get("charts"))
    check("dashboard: the findings have a node column, or there are none",
          not a.get("findings_head") or "node" in a["findings_head"], a.get("findings_head"))
    pk = st.get("picked", {})
    metric_charts = [c for c in pk.get("charts", []) if c not in ("steps", "phases")]
    check("picked b: the URL holds the node", "node=b" in pk.get("hash", ""), pk.get("hash"))
    check("picked b: node b's charts only", metric_charts and all("node=b" in c for c in metric_charts),
          pk.get("charts"))
    check("picked b: the metric list is node b's series only",
          pk.get("picker") and all("node=b" in k for k in pk["picker"]), pk.get("picker", [])[:5])
    check("picked b: the heatmap keeps every node", pk.get("heat", {}).get("cpu.util", {}).get("rows") == 2,
          pk.get("heat"))
    check("picked b: the logs are node b's own output",
          any("hello from node b" in t for t in pk.get("logs", [])), pk.get("logs"))
    rl = st.get("reloaded", {})
    check("picked b: a reload opens the same view",
          rl.get("picked") == "b" and rl.get("charts") == pk.get("charts"), (rl.get("picked"), rl.get("charts")))
    up = st.get("unpicked", {})
    check("all nodes again: both nodes' charts", {"cpu.util{node=a}", "cpu.util{node=b}"} <= set(up.get("charts", [])),
          up.get("charts"))
    cl = st.get("clicked", {})
    check("a click on node a in the table picks it", "node=a" in cl.get("hash", "") and cl.get("picked") == "a",
          cl.get("hash"))

    # ---- the report: the same nodes table and heatmap
    out = os.path.join(TMP, "views-report.html")
    p = strobe("report", job, "-o", out, store=db)
    check("strobe report JOB exits 0", p.returncode == 0 and os.path.isfile(out), p.stderr)
    r = browse(node, "report", out, "-", {"pick": "b", "shot": "views"})
    rs = r.get("steps", {})
    check("report: no console error, no network request", r.get("errors") == [] and r.get("foreign") == [],
          (r.get("errors"), r.get("foreign")))
    ra = rs.get("all", {})
    check("report: a Nodes section with both nodes", "Nodes" in ra.get("sections", []) and
          ra.get("nodes") == ["a", "b"], (ra.get("sections"), ra.get("nodes")))
    rh = ra.get("heat", {}).get("cpu.util", {})
    check("report: a heatmap of cpu.util, one row per node, drawn", rh.get("rows") == 2 and rh.get("ink", 0) > 50, rh)
    data = {h["metric"]: h for h in rs.get("data", [])}.get("cpu.util", {})
    for i, n in enumerate(data.get("nodes") or []):
        near(f"report: node {n}'s heatmap mean is show's mean cpu.util", data["node_mean"][i], means[n], 0.05, "pct")
    rp = rs.get("picked", {})
    check("report: picking node b charts node b", rp.get("charts_node") == "b" and
          any(t.startswith("CPU (") for t in rp.get("titles", [])), (rp.get("charts_node"), rp.get("titles")))
    check("report: the statistics cut to node b", 0 < rp.get("stats_rows", 0) < ra.get("stats_rows", 0),
          (rp.get("stats_rows"), ra.get("stats_rows")))
    done()


if __name__ == "__main__":
    main()
