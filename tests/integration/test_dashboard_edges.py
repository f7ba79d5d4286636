#!/usr/bin/env python3
"""The dashboard in headless Chromium on the odd cases of real runs
(dashboard_edges.js drives it):

- series keys that hold a comma or a brace: app metrics whose names do
  (strobe.log takes any name), and series of two labels, as a multi-node
  SageMaker import has (cpu.util{core=0,node=algo-1}) and per-process GPU
  series (gpu=G,pid=P); ticked in the metric picker they must be charted,
  stay charted when another is ticked, and come back on a reload of the URL;
  compare must chart one too;
- a run still recording that starts to log a metric after the page is
  open: the picker must list it without a reload;
- a lost run (its recorder died, no end): its time axis is its recorded
  length, not the time from its start to now;
- 1100 more runs than the list shows at first: sorting by a text column
  (experiment) orders every run, not the newest 1000, and "Show more" lists
  the rest;
- answers that come late (the driver holds them until the later ask is
  answered): a sort asked for before another, a zoomed range asked for
  before the zoom was reset, compare's metric changed twice in a row; what
  is shown must be the answer to the latest ask;
- a link typed by hand with a bare '%' (#/run/lr=50%) opens that run;
- a running run opened by its name (#/run/late) stays on that run when
  another run of that name starts;
- the run page's cards against show --json: samples/s from the batch size
  over the mean step, and the mean GPU utilization of a GPU run (the fake
  NVML), whose series are per GPU;
- a run name and a parameter of 200 bytes without a space: compare, sweep,
  run and runs no wider than the window;
- a metric of 3.5e15 (a GPU's FLOP/s) reads 3.50e+15, 999960 reads 1.00 M,
  durations and sizes that round up into the next unit read in it (2m 0s,
  1.00 s, 1h 0m, 1010 MiB).
No console error or warning may appear."""
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time

from strobetest import PYTHON, STROBE, check, done, show, skip, store_path, strobe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "integration", "dashboard_edges.js")
ODD = ["app.a,b", "app.br{ace}"]

KEYS_JOB = r"""
import strobe, time
for i in range(20):
    strobe.log("a,b", i)
    strobe.log("br{ace}", 2 * i)
    strobe.log("flops_per_s", 3.5e15)
    strobe.log("near_m", 999960)
    time.sleep(0.02)
"""

# logs its metric once the browser has the page open (the driver makes the file)
LIVE_JOB = r"""
import os, strobe, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
for i in range(900):
    strobe.log("late", i)
    time.sleep(0.1)
"""


def sagemaker_dir(base):
    """Two nodes of two cores: series of two labels once imported."""
    d = os.path.join(base, "system", "incremental", "2023111422")
    os.makedirs(d, exist_ok=True)
    for node in ("algo-1", "algo-2"):
        lines = []
        for k in range(20):
            for c in range(2):
                lines.append(json.dumps({"Type": "cpu", "Name": "cpu%d" % c, "Dimension": "CPUUtilization",
                                         "Value": 10.0 + k + c, "NodeId": node,
                                         "Timestamp": round(1700000130.0 + 0.5 * k, 6)}))
        with open(os.path.join(d, "1700000100.%s.json" % node), "w") as f:
            f.write("\n".join(lines) + "\n")


def make_lost(db, run_id):
    """The run as its recorder leaves it when killed: running, no end, and
    the recorder's pid now another process's (this one: another start time)."""
    c = sqlite3.connect(db)
    c.execute("UPDATE runs SET status='running', end_ns=NULL, exit_code=NULL, recorder_pid=?, "
              "recorder_start_ticks=1 WHERE id=?", (os.getpid(), run_id))
    c.commit()
    c.close()


def js_num(v):
    """The dashboard's num() for the figures checked here."""
    if v is None:
        return "–"
    if abs(v) >= 100 or v == round(v):
        x = round(v * 10) / 10
        return str(int(x)) if x == int(x) else repr(x)
    digits = max(0, 2 - math.floor(math.log10(abs(v))))  # toPrecision(3)
    return f"{v:.{digits}f}"


GPU_SCENARIO = """driver 550.54.15
sample_period 0.02
device 0 name "NVIDIA H100 80GB HBM3" uuid GPU-aaaaaaaa-0000-0000-0000-000000000000 memory 85899345920
at 0 0 util.gpu 80
at 0 0 util.memory 5
at 0.6 0 util.gpu 30
"""

STEPS_JOB = r"""
import strobe, time
for i in range(30):
    time.sleep(0.02)
    strobe.step()
"""


# old run i: (length in ns, memory) -> the duration card and the memory line
FORMATS = {0: (119_700_000_000, 1010 << 20), 1: (999_960_000, 1000 << 10), 2: (3_599_600_000_000, 8 << 30)}
FORMATS_SHOWN = {0: ("2m 0s", "1010 MiB"), 1: ("1.00 s", "1000 KiB"), 2: ("1h 0m", "8.00 GiB")}


def add_old_runs(db, n):
    """n copies of a run's row (no series), older than every real run: the
    oldest 50 of experiment "aaa", which sorts first, the rest "zzz" or
    none. The list shows 1000 runs at first."""
    c = sqlite3.connect(db)
    cols = [r[1] for r in c.execute("PRAGMA table_info(runs)")]
    src = list(c.execute("SELECT * FROM runs ORDER BY start_ns LIMIT 1").fetchone())
    t0 = src[cols.index("start_ns")]
    for i in range(n):
        r = list(src)
        r[cols.index("id")] = "%016x" % (0xa000000000000000 + i)
        r[cols.index("name")] = "old%04d" % i
        r[cols.index("start_ns")] = t0 - (i + 1) * 10**9
        r[cols.index("end_ns")] = r[cols.index("start_ns")] + 10**8
        r[cols.index("status")] = "finished"
        r[cols.index("experiment")] = "aaa" if i >= n - 50 else ("zzz" if i % 2 else None)
        # figures that round up into the next unit: 119.7 s, 0.99996 s,
        # 3599.6 s long; 1010 MiB and 1000 KiB of memory
        r[cols.index("end_ns")] = r[cols.index("start_ns")] + FORMATS.get(i, (10**8, 0))[0]
        if i in FORMATS:
            r[cols.index("mem_total_bytes")] = FORMATS[i][1]
        c.execute("INSERT INTO runs VALUES (%s)" % ",".join("?" * len(r)), r)
    c.commit()
    c.close()


def main():
    node = shutil.which("node")
    if not (node and os.path.exists("/usr/bin/chromium")
            and os.path.isdir(os.path.join(ROOT, "node_modules", "playwright-core"))):
        skip("the dashboard in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
        done()
    db = store_path("dash_edges.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    p = strobe("run", "--quiet", "--interval", "50ms", "--name", "keys", "--", PYTHON, "-c", KEYS_JOB, store=db)
    check("recorded the run of odd metric names", p.returncode == 0, p.stderr)
    keys_id = show(db, "keys")["id"]
    make_lost(db, keys_id)
    lost = show(db, keys_id)
    check("the run reads as lost, its duration up to its last sample",
          lost["status"] == "lost" and lost["end_ns"] is None and lost["duration_s"] > 0, lost["status"])
    sm = store_path("dash_edges_sm")
    shutil.rmtree(sm, ignore_errors=True)
    sagemaker_dir(sm)
    p = strobe("import", "sagemaker", "--name", "two-nodes", sm, store=db)
    check("imported two SageMaker nodes", p.returncode == 0, p.stderr)
    sm_id = show(db, "two-nodes")["id"]
    multi = ["cpu.util{core=0,node=algo-1}", "cpu.util{node=algo-2}"]

    p = strobe("run", "--quiet", "--name", "lr=50%", "--", "true", store=db)
    check("recorded a run named with a bare '%'", p.returncode == 0, p.stderr)
    p = strobe("run", "--quiet", "--name", "bs32", "--param", "batch=32", "--", PYTHON, "-c", STEPS_JOB, store=db)
    check("recorded a run with a batch size and steps, no samples/s logged", p.returncode == 0, p.stderr)
    fake = os.path.join(os.path.dirname(os.path.abspath(STROBE)), "tests", "libnvidia-ml-fake.so")
    gpu_id = None
    if os.path.exists(fake):
        scen = store_path("dash_edges.nvml")
        with open(scen, "w") as f:
            f.write(GPU_SCENARIO)
        p = strobe("run", "--quiet", "--name", "onegpu", "--", "sleep", "1.2", store=db,
                   env=dict(os.environ, STROBE_NVML_LIB=fake, STROBE_FAKE_NVML=scen))
        check("recorded a run on one (fake) GPU", p.returncode == 0, p.stderr)
        gpu_id = show(db, "onegpu")["id"]
    else:
        skip("the GPU run's mean utilization card", "no test NVML library " + fake)
    long_name = "n" * 200
    p = strobe("run", "--quiet", "--name", long_name, "--experiment", "wide", "--param", "k=" + "x" * 190,
               "--param", "lr=1", "--", "true", store=db)
    p2 = strobe("run", "--quiet", "--name", "short", "--experiment", "wide", "--param", "k=2",
                "--param", "lr=2", "--", "true", store=db)
    check("recorded a run of a 200-byte name and parameter", p.returncode == 0 and p2.returncode == 0,
          p.stderr + p2.stderr)
    wide_id, short_id = show(db, long_name)["id"], show(db, "short")["id"]
    wide = [f"#/compare?runs={wide_id},{short_id}", "#/sweep?experiment=wide&param=lr&y=duration_s",
            f"#/run/{wide_id}", "#/runs?experiment=wide"]
    figure_runs = [show(db, "bs32")] + ([show(db, gpu_id)] if gpu_id else [])
    add_old_runs(db, 1100)
    total = int(sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0]) + 1  # and "late"

    srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0", "--rate", "0"],
                           stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    check("serve prints where it listens", m is not None, line)
    if not m:
        srv.kill()
        done()
    base = "http://%s/" % m.group(1)
    live = again = None
    try:
        flag = store_path("dash_edges.flag")
        if os.path.exists(flag):
            os.remove(flag)
        live = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--interval", "100ms", "--name",
                                 "late", f"--store={db}", "--", PYTHON, "-c", LIVE_JOB, flag],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        live_id = None
        for _ in range(100):
            p = strobe("show", "--json", "late", store=db)
            if p.returncode == 0:
                live_id = json.loads(p.stdout)["id"]
                break
            time.sleep(0.05)
        spec = {"keys": {"run": keys_id, "pick": ODD}, "multi": {"run": sm_id, "pick": multi},
                "compare": {"runs": keys_id + "," + sm_id, "metric": "app.br{ace}"},
                "live": {"run": live_id, "key": "app.late", "flag": flag}, "lost": {"run": keys_id},
                "many": {}, "race": {"run": keys_id},
                "percent": {"name": "lr=50%"}, "figures": [r["id"] for r in figure_runs],
                "wide": wide, "huge": {"run": keys_id, "keys": ["app.flops_per_s", "app.near_m"]},
                "formats": ["%016x" % (0xa000000000000000 + i) for i in FORMATS]}
        ask, started = store_path("dash_edges.ask"), store_path("dash_edges.started")
        for f in (ask, started):
            if os.path.exists(f):
                os.remove(f)
        spec["pinned"] = {"name": "late", "ask": ask, "started": started}
        drv = subprocess.Popen([node, DRIVER, base, json.dumps(spec)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        # the driver asks for a second run of the name "late" while it shows the first
        t_end = time.monotonic() + 120
        while drv.poll() is None and time.monotonic() < t_end:
            if again is None and os.path.exists(ask):
                again = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--name", "late", f"--store={db}",
                                          "--", "sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                while time.monotonic() < t_end:
                    p = strobe("show", "--json", "late", store=db)
                    if p.returncode == 0 and json.loads(p.stdout)["id"] != live_id:
                        break
                    time.sleep(0.05)
                open(started, "w").close()
            time.sleep(0.05)
        if drv.poll() is None:
            drv.kill()
        out, err = drv.communicate()
        r = subprocess.CompletedProcess(drv.args, drv.returncode, out, err)
    finally:
        for job in (live, again):
            if job:
                job.send_signal(signal.SIGTERM)
                job.wait()
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
    try:
        b = json.loads(r.stdout.strip().split("\n")[-1])
    except (ValueError, IndexError):
        b = {"errors": {"main": ["no result: " + r.stdout[-500:] + r.stderr[-500:]]}, "steps": {}}
    errs, st = b.get("errors", {}), b.get("steps", {})
    check("the driver got through", not errs.get("setup") and not errs.get("main"), errs)

    for part, picked in (("keys", ODD), ("multi", multi)):
        s = st.get(part, {})
        for when in ("first", "reloaded"):
            ch = s.get(when, {}).get("charts", {})
            check(f"{part}: every ticked series charted with its points ({when})",
                  all((ch.get(k) or 0) > 0 for k in picked), (picked, s.get(when)))
        check(f"{part}: the URL gives the same charts on a reload",
              s.get("first", {}).get("charts") == s.get("reloaded", {}).get("charts"), s)
        check(f"{part}: no console error or warning", not errs.get(part), errs.get(part))

    c = st.get("compare", {})
    check("compare: a metric whose name holds a brace is charted",
          c.get("metric") == "app.br{ace}" and c.get("failed") == [], c)
    check("compare: no console error or warning", not errs.get("compare"), errs.get("compare"))

    lv = st.get("live", {})
    check("live: a metric the running job starts to log while the page is open is listed without a reload",
          "app.late" not in lv.get("before", ["app.late"]) and lv.get("seen") is True, lv)
    check("live: no console error or warning", not errs.get("live"), errs.get("live"))

    mn = st.get("many", {})
    f, mo = mn.get("first", {}), mn.get("more", {})
    check("many runs: sorted by experiment over every run, not over the newest 1000",
          f.get("first") == "aaa" and f.get("rows") == 1000 and f.get("count") == f"1000 of {total} runs", mn)
    check("many runs: 'Show more' lists the rest, runs without an experiment last",
          mo.get("rows") == total and mo.get("count") == f"{total} runs" and not mo.get("more")
          and mo.get("last") == "–" and "limit=" in mn.get("hash", ""), mn)
    check("many runs: no console error or warning", not errs.get("many"), errs.get("many"))

    rc = st.get("race", {})
    names = rc.get("list", {}).get("names", [])
    check("race: a slow sort answered after a later one leaves the later one (by name) shown",
          "sort=name" in rc.get("list", {}).get("hash", "") and len(names) == 5 and names == sorted(names), rc)
    check("race: a zoomed range answered after the zoom was reset leaves the whole run charted",
          rc.get("whole", 0) > 3 and rc.get("after") == rc.get("whole") and rc.get("range", "").startswith("whole run"), rc)
    rcc = rc.get("compare", {})
    check("race: compare, a metric's series landing while the next one's are on the way: no error, the next one drawn",
          rcc.get("meanwhile") == [] and rcc.get("metric") == "proc.rss_bytes", rcc)
    check("race: no console error or warning", not errs.get("race"), errs.get("race"))

    pc = st.get("percent", {})
    check("a hand-typed link #/run/lr=50% opens that run", pc.get("name") == "lr=50%", pc)
    check("percent: no console error or page error", not errs.get("percent"), errs.get("percent"))

    fg = st.get("figures", {})
    bs = figure_runs[0]
    want = js_num(32 / (bs["steps"]["mean_ns"] / 1e9))
    check("run card: samples/s is the batch size over show's mean step, as the runs list has it",
          fg.get(bs["id"], {}).get("samples/s") == want, (fg.get(bs["id"]), want))
    if gpu_id:
        g = figure_runs[1]
        want = js_num(g["metrics"]["gpu.util{gpu=0}"]["mean"]) + " %"
        check("run card: mean GPU util is show's mean of gpu.util{gpu=0} (no bare gpu.util on a GPU run)",
              fg.get(gpu_id, {}).get("mean GPU util") == want, (fg.get(gpu_id), want))
    check("figures: no console error or warning", not errs.get("figures"), errs.get("figures"))

    wd = st.get("wide", {})
    check("200-byte names and parameters wrap: no view wider than the window",
          len(wd) == len(wide) and all(w <= iw for w, iw in wd.values()), wd)
    check("wide: no console error or warning", not errs.get("wide"), errs.get("wide"))

    hg = st.get("huge", {})
    check("3.5e15 FLOP/s reads 3.50e+15 (not '3.50e+6 G')", hg.get("app.flops_per_s", {}).get("mean") == "3.50e+15", hg)
    check("999960 reads 1.00 M (not '1.00e+3 k')", hg.get("app.near_m", {}).get("mean") == "1.00 M", hg)
    fm = st.get("formats", {})
    for i, (d, mem) in FORMATS_SHOWN.items():
        got = fm.get("%016x" % (0xa000000000000000 + i), {})
        check(f"a run of {FORMATS[i][0] / 1e9} s and {FORMATS[i][1]} bytes of memory reads {d}, {mem}",
              got == {"duration": d, "memory": mem}, got)
    check("formats: no console error or warning", not errs.get("formats"), errs.get("formats"))
    check("huge: no console error or warning", not errs.get("huge"), errs.get("huge"))

    pn = st.get("pinned", {})
    check("a run opened by name stays that run when the name is started again (refreshed by id)",
          pn.get("first") == live_id and pn.get("later") == live_id and pn.get("refreshed", 0) >= 2, pn)
    check("pinned: no console error or warning", not errs.get("pinned"), errs.get("pinned"))

    ls = st.get("lost", {})
    check("lost: the time axis is the run's recorded length (as the duration card)",
          ls.get("status") == "lost" and ls.get("range") == "whole run, " + ls.get("duration", "?"), ls)
    done()


main()
