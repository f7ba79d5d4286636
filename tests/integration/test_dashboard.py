#!/usr/bin/env python3
"""strobe serve's dashboard in headless Chromium, over a store of real
`strobe run` recordings: two runs of one experiment with different batch
sizes and a run with a hostile name. dashboard_browser.js opens the runs
list, sorts and filters it, opens a run, zooms a chart by dragging (the
series must be fetched again for the zoomed range), ticks two runs and opens
compare, changes the smoothing and the x axis, reloads the shared URL (same
view), exports CSV and PNG, and opens the sweep view; every request must stay
on the server's origin and no console error may appear. Screenshots are kept
under $STROBE_BUILD/artifacts/."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse

from strobetest import PYTHON, STROBE, check, done, show, shown_finding_ranges, skip, store_path, strobe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "integration", "dashboard_browser.js")
ARTIFACTS = os.path.join(os.environ.get("STROBE_BUILD", os.path.join(ROOT, "build")), "artifacts")
HOSTILE = "<img src=x onerror=alert(1)>"
EXPERIMENT = "bsweep"

# steps whose length grows with the batch, the throughput logged as the
# training scripts of examples/ do (app.samples_per_s)
WORKLOAD = r"""
import sys, time, strobe
bs, secs = int(sys.argv[1]), float(sys.argv[2])
print("training with batch", bs, flush=True)
T0 = time.monotonic()
while time.monotonic() - T0 < secs:
    t = time.monotonic()
    with strobe.span("data"):
        time.sleep(0.002 + bs * 0.00005)
    with strobe.span("forward"):
        x = sum(range(300 * bs)); time.sleep(0.004)
    strobe.step()
    strobe.log("samples_per_s", bs / (time.monotonic() - t))
"""


def record(db, name, bs, seconds, opts=()):
    p = strobe("run", "--quiet", "--interval", "20ms", "--name", name, *opts, "--",
               PYTHON, "-c", WORKLOAD, str(bs), str(seconds), store=db)
    check(f"recorded {name!r}", p.returncode == 0, p.stderr)


def main():
    node = shutil.which("node")
    if not (node and os.path.exists("/usr/bin/chromium")
            and os.path.isdir(os.path.join(ROOT, "node_modules", "playwright-core"))):
        skip("the dashboard in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
        done()
    db = store_path("dash.db")
    record(db, "bs16", 16, 2, ("--experiment", EXPERIMENT, "--param", "batch=16", "--tag", "workload=w1"))
    record(db, "bs64", 64, 2, ("--experiment", EXPERIMENT, "--param", "batch=64", "--tag", "workload=w1"))
    record(db, HOSTILE, 8, 1, ("--experiment", "other"))
    ids = {n: show(db, n)["id"] for n in ("bs16", "bs64")}
    hid = show(db, "last")["id"]
    info64 = show(db, "bs64")

    srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0", "--rate", "0"],
                           stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    check("serve prints where it listens", m is not None, line)
    if not m:
        srv.kill()
        done()
    base = "http://%s/" % m.group(1)
    os.makedirs(ARTIFACTS, exist_ok=True)
    spec = {"experiment": EXPERIMENT, "param": "batch", "hostile": hid, "open_name": "bs64"}
    live = None
    try:
        r = subprocess.run([node, DRIVER, base, ARTIFACTS, json.dumps(spec)], capture_output=True,
                           text=True, timeout=90)
        # a run that prints a line every 0.5 s while the browser looks at it
        live = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--name", "livelog",
                                 f"--store={db}", "--", PYTHON, "-c",
                                 "import time\nfor i in range(120):\n    print('tick', i, flush=True)\n"
                                 "    time.sleep(0.5)"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        live_id = None
        for _ in range(100):
            p = strobe("show", "--json", "livelog", store=db)
            if p.returncode == 0:
                live_id = json.loads(p.stdout)["id"]
                break
            time.sleep(0.1)
        lr = subprocess.run([node, DRIVER, base, ARTIFACTS, json.dumps({"only_live": live_id})],
                            capture_output=True, text=True, timeout=90)
    finally:
        srv.send_signal(signal.SIGTERM)
        if live:
            live.send_signal(signal.SIGTERM)
            live.wait()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
    try:
        b = json.loads(r.stdout.strip().split("\n")[-1])  # not splitlines: U+2028
    except (ValueError, IndexError):
        b = {"errors": ["no result: " + r.stdout[-500:] + r.stderr[-500:]], "steps": {}}
    st = b.get("steps", {})
    check("no console error, no page error, the driver got through", b.get("errors") == [], b.get("errors"))
    check("no request leaves the server's origin", b.get("foreign") == [], b.get("foreign"))
    # how long it took is printed, not judged: the machines are shared and noisy
    print(f"# the walk-through took {b.get('elapsed_s')} s", flush=True)
    check("the walk-through reports how long it took", isinstance(b.get("elapsed_s"), (int, float)),
          b.get("elapsed_s"))

    runs = st.get("runs", {})
    check("runs: every run listed, the hostile name as text",
          sorted(runs.get("names", [])) == sorted(["bs16", "bs64", HOSTILE]), runs.get("names"))
    check("runs: no element made from a name", runs.get("injected") == 0, runs)
    want_cols = ["name", "experiment", "workload", "status", "start", "duration", "steps", "step p50",
                 "samples/s", "mean CPU", "mean GPU util", "findings", "nodes"]
    check("runs: the columns", runs.get("columns", [])[1:] == want_cols, runs.get("columns"))
    srt = st.get("sort", {})
    steps = [int(x) for x in srt.get("steps", []) if x.isdigit()]
    check("runs: a column header sorts (steps, descending) and the URL keeps it",
          "sort=-steps" in srt.get("hash", "") and len(steps) == 3 and steps == sorted(steps, reverse=True), srt)
    flt = st.get("filter", {})
    check("runs: filtering by experiment lists its runs only, the URL keeps it",
          "experiment=" + EXPERIMENT in flt.get("hash", "") and sorted(flt.get("names", [])) == ["bs16", "bs64"], flt)

    run = st.get("run", {})
    catalog = {m["name"]: m["help"] for m in json.loads(strobe("metrics", "--json").stdout)}
    help_ = run.get("help", {})
    check("run: a chart's and a picker entry's tooltip is the metric's help (strobe metrics)",
          help_.get("cpu.util") == catalog["cpu.util"] and help_.get("proc.cpu") == catalog["proc.cpu"]
          and any(k.startswith("mem.used_bytes") and v == catalog["mem.used_bytes"] for k, v in help_.items()),
          help_)
    check("run: opened from the list, by id in the URL", run.get("hash", "").startswith("#/run/" + ids["bs64"])
          and run.get("name") == "bs64", run)
    check("run: default charts cpu.util, proc.cpu, proc.rss_bytes, and steps and phases",
          all(c in run.get("charts", []) for c in ("cpu.util", "proc.cpu", "proc.rss_bytes", "steps", "phases")),
          run.get("charts"))
    ink = run.get("ink", {})
    check("run: every chart draws its data (coloured pixels on each canvas)",
          len(ink) >= 5 and all(v > 50 for v in ink.values()), ink)
    check("run: findings listed as show --json", run.get("findings") == len(info64["findings"]), run)
    shown = shown_finding_ranges(db, ids["bs64"])
    check("run: each finding's time range reads as strobe show writes it",
          shown and len(shown) == len(info64["findings"]) and sorted(run.get("ranges") or []) == shown,
          (run.get("ranges"), shown))
    check("run: the job's stdout and the environment's texts are shown",
          {"stdout", "lscpu"} <= set(run.get("texts") or []), run)

    z = st.get("zoom", {})
    zr = re.search(r"z=([\d.]+)%2C([\d.]+)", z.get("hash", ""))
    check("zoom: dragging across a chart puts the range in the URL", zr is not None, z.get("hash"))
    refetch = [u for u in z.get("refetched", []) if "/series?" in u and "from=" in u]
    names = {urllib.parse.parse_qs(urllib.parse.urlsplit(u).query).get("name", [""])[0] for u in refetch}
    check("zoom: every chart's series fetched again for the zoomed range",
          {"cpu.util", "proc.cpu", "proc.rss_bytes"} <= names, z.get("refetched"))
    check("zoom: the steps fetched again for it too",
          any("/steps?" in u and "from=" in u for u in z.get("refetched", [])), z.get("refetched"))
    if zr and refetch:
        a, bnd = float(zr.group(1)), float(zr.group(2))
        qq = urllib.parse.parse_qs(urllib.parse.urlsplit(refetch[0]).query)
        f, t, pts = float(qq["from"][0]), float(qq["to"][0]), int(qq["points"][0])
        dur = info64["duration_s"]
        check("zoom: the range asked for is the one dragged, inside the run",
              abs(f - a) < 1e-3 and abs(t - bnd) < 1e-3 and 0 < f < t < dur and (t - f) < 0.5 * dur, (f, t, dur))
        check("zoom: about one bucket per pixel of the chart", 300 <= pts <= 1400, pts)
        body = z.get("body", {})
        ts = body.get("t", [])
        check("zoom: the answer covers only the zoomed range",
              z.get("status") == 200 and ts and all(f - 1e-6 <= x <= t + 1e-6 for x in ts), (f, t, ts[:3], ts[-3:]))
    check("zoom: the range is shown", "showing" in z.get("range", ""), z.get("range"))

    hs = st.get("hostile", {})
    check("hostile: the run's name is the page's text", hs.get("name") == HOSTILE and
          hs.get("title", "").endswith(HOSTILE), hs)
    check("hostile: no img element anywhere", hs.get("img") == 0 and st.get("final_img") == 0, hs)

    cmp = st.get("compare", {})
    c1, c2 = cmp.get("before", {}), cmp.get("after", {})
    check("compare: the two ticked runs, step time over step number, smoothing 0.8",
          set(c1.get("runs", "").split(",")) == set(ids.values()) and c1.get("mode") == "step"
          and c1.get("smooth") == "0.8" and c1.get("metric") == "step", c1)
    check("compare: the URL holds the view", all(k in c1.get("hash", "") for k in ("runs=", "smooth=0.8", "x=step")),
          c1.get("hash"))
    keys = ("hash", "mode", "smooth", "runs", "metric", "slider", "toggles", "diff")
    check("compare: a reload gives the same view (runs, smoothing, mode)",
          all(c1.get(k) == c2.get(k) for k in keys) and c2.get("slider") == "0.8", (c1, c2))
    check("compare: both runs drawn", c2.get("ink", 0) > 200 and sorted(c2.get("toggles", [])) == ["bs16", "bs64"], c2)
    check("compare: the batch parameter marked as differing", c2.get("diff") == ["batch"], c2.get("diff"))
    # the analysis rows say what `strobe compare` says of the same two runs
    cli = strobe("compare", "--json", ids["bs16"], ids["bs64"], store=db)
    an = json.loads(cli.stdout) if cli.returncode == 0 else {"runs": [], "diff": {}}
    d = an["diff"].get(ids["bs64"], {})
    want = (["mean step"] if d.get("step_significant") else []) + \
        [p for p, s in (d.get("phase_significant") or {}).items() if s] + \
        [k for k, m in (d.get("metrics") or {}).items() if m["significant"]]
    check("compare: the cells marked beyond noise are those strobe compare judges so",
          sorted(c2.get("marked", [])) == sorted(want), (c2.get("marked"), want))
    check("compare: rows for the steps, every phase, every metric and the findings",
          {"mean step", "p95 step", "data", "forward"} <= set(c2.get("analysis_rows", [])) and
          set(an["runs"][0]["metrics"]) <= set(c2.get("analysis_rows", [])), c2.get("analysis_rows"))
    ex_line = (c2.get("explain") or [""])[0]
    if d.get("step_significant"):
        word = "longer" if d["step_mean_ns"] > 0 else "shorter"
        check("compare: one line says how much longer bs64's steps are and which phase explains it",
              ex_line.startswith(f"bs64's steps are {abs(d['step_mean_pct']):.1f} % {word}") and
              (not d.get("explained_by") or f"of it in {d['explained_by']}" in ex_line), (ex_line, d))
    else:
        check("compare: one line says bs64's steps are within the noise",
              "within the noise" in ex_line, (ex_line, d))
    try:
        lb = json.loads(lr.stdout.strip().split("\n")[-1])
    except (ValueError, IndexError, NameError):
        lb = {"errors": ["no result"], "steps": {}}
    check("live: no console error, no page error", lb.get("errors") == [], lb.get("errors"))
    lv = lb.get("steps", {}).get("live_logs", {})
    check("a running run's output grows on its page while it records (refreshed, not reloaded)",
          lv.get("first", -1) >= 0 and lv.get("later", -1) >= lv.get("first", 0) + 4, lv)
    ex = st.get("export", {})
    check("export: CSV of the series shown, one column per run",
          ex.get("csv_name", "").endswith(".csv") and "bs16" in ex.get("csv_head", "")
          and "bs64" in ex.get("csv_head", "") and ex.get("csv_rows", 0) > 20, ex)
    check("export: PNG of the chart", ex.get("png_magic") == "PNG" and ex.get("png_bytes", 0) > 5000, ex)

    sw = st.get("sweep", {})
    check("sweep: the experiment's runs against batch, and the answer: batch=64 has the most samples/s",
          sw.get("rows") == 2 and sw.get("points") == "2" and "batch=64" in sw.get("answer", "").split(";")[0], sw)

    for n in ("runs", "runs-filtered", "run", "run-zoomed", "run-hostile", "compare", "sweep"):
        p = os.path.join(ARTIFACTS, "dashboard-%s.png" % n)
        check(f"screenshot {n} kept", os.path.exists(p) and os.path.getsize(p) > 10000, p)
    done()


main()
