#!/usr/bin/env python3
"""The axes of every chart of the report and the dashboard, read back from
uPlot in headless Chromium (chart_axes.js, axes.js say how): each tick label
parses back, in the unit of its series (bytes B/KiB/MiB/GiB, rates .../s,
percentages %, durations ns/µs/ms/s/min/h, counts with k/M/G/T or as
2.5e-7), to its tick's value; labels rise strictly and none repeats; a y axis
is as wide as its widest label and an x axis' labels neither overlap nor
leave the canvas. The report's disk chart had read "0, 7.7 MiB/s, 5.4 MiB/s":
decimal ticks written in MiB with three digits ("17.7", "35.4 MiB/s") were
wider than the report's fixed 70 px axis and cut on the canvas.

The data: real recordings (a job writing 2 MiB every 0.25 s, fsynced, at
about 8 MiB/s, the bug's range; steps with phases; a test GPU through the
test NVML; app.* metrics from the tiny to the huge, negative, flat, a single
point, NaN gaps) in the report, zoomed to 50 ms, and in every dashboard view
that charts (a run with all those metrics, zoomed, compare over time and over
steps, sweep of every figure over a numeric and a categorical parameter);
and a page of uPlot charts built with web/common/format.js's axis() over
synthetic data of every unit from 1e-9 to 1e18, hours-long time axes
included."""
import json
import os
import re
import shutil
import signal
import subprocess

from strobetest import PYTHON, STROBE, TMP, check, done, show, skip, store_path, strobe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "integration", "chart_axes.js")
BUILD = os.environ.get("STROBE_BUILD", os.path.join(ROOT, "build"))
ARTIFACTS = os.path.join(BUILD, "artifacts")
FAKE_NVML = os.path.join(BUILD, "tests", "libnvidia-ml-fake.so")
GiB = 1 << 30

WORKLOAD = r"""
import math, os, sys, time, strobe
secs, write = float(sys.argv[1]), sys.argv[2] == "write"
f = open(sys.argv[3], "wb")
buf = b"x" * (2 << 20)
T0 = time.monotonic()
strobe.log("one", 7.5)                   # a series of one point
i, last_write = 0, 0.0
while time.monotonic() - T0 < secs:
    i += 1
    t = time.monotonic()
    if write and t - last_write >= 0.25:  # 2 MiB each 0.25 s: about 8 MiB/s
        f.write(buf); f.flush(); os.fsync(f.fileno()); last_write = t
    with strobe.span("data"):
        time.sleep(0.004)
    with strobe.span("forward"):
        time.sleep(0.006)
    strobe.step()
    x = time.monotonic() - T0
    strobe.log("tiny", 1e-9 * (1.5 + math.sin(x * 3)))
    strobe.log("huge", 3.5e15 * (1 + 0.2 * math.sin(x * 2)))
    strobe.log("neg", -5 + 3 * x)
    strobe.log("flat", 42.0)
    if x < secs / 3 or x > 2 * secs / 3:  # a gap in the middle, NaN at its edges
        strobe.log("gappy", float("nan") if i % 7 == 0 else 1000 + 900 * math.sin(x))
    strobe.log("samples_per_s", 32 / (time.monotonic() - t))
"""
SCENARIO = f"""
sample_period 0.05
device 0 memory {80 * GiB}
at 0 0 util.gpu 10
at 0 0 mem.used {GiB}
at 0 0 power 70000
at 0 0 temp 35
at 1 0 util.gpu 95
at 1 0 mem.used {60 * GiB}
at 1 0 power 650000
at 1 0 temp 71
"""


def record(db, name, secs, write, params):
    scen = os.path.join(TMP, "gpu.scenario")
    with open(scen, "w") as f:
        f.write(SCENARIO)
    env = dict(os.environ, STROBE_NVML_LIB=FAKE_NVML, STROBE_FAKE_NVML=scen)
    opts = ["--experiment", "axes"] + [a for k, v in params.items() for a in ("--param", f"{k}={v}")]
    p = strobe("run", "--quiet", "--interval", "50ms", "--name", name, "--report", os.path.join(TMP, name + ".html"),
               *opts, "--", PYTHON, "-c", WORKLOAD, str(secs), "write" if write else "-",
               os.path.join(TMP, name + ".blob"), store=db, env=env, timeout=120)
    check(f"recorded {name}", p.returncode == 0, p.stderr[-500:])
    return os.path.join(TMP, name + ".html")


# ---- synthetic charts: every unit over many magnitudes ---------------------
SYNTH_UNITS = ["bytes", "bytes/s", "pct", "ms", "s", "count", "", "W", "C", "1/s", "int"]
SYNTH_RANGES = [  # (name, ys as a function of i in 0..49)
    ("tiny", lambda i: 3e-9 * (1 + i / 49)),
    ("small", lambda i: 0.004 * i),
    ("bug", lambda i: 7.7 * 1048576 * (i % 5) / 4),       # 0 .. 7.7 MiB(/s)
    ("mid", lambda i: 950 + 80 * (i % 3)),                 # across 1000 and 1024
    ("big", lambda i: 3.5e9 * (i % 7)),
    ("huge", lambda i: 1e18 * (1 + (i % 4))),
    ("flat", lambda i: 42.0),
    ("negative", lambda i: -12.5 + 0.5 * i),
    ("gaps", lambda i: None if 10 < i < 30 else 1.0 + (i % 4)),
]
SYNTH_X = [("short", 0.002), ("seconds", 0.5), ("minutes", 13), ("hours", 1500), ("days", 6000)]


def synthetic_page(path):
    cases = []
    for u in SYNTH_UNITS:
        for (rn, fy), (xn, dx) in zip(SYNTH_RANGES, SYNTH_X * 2):
            ys = [fy(i) for i in range(50)]
            if u == "int":
                ys = [None if y is None else round(y) for y in ys]
            cases.append({"title": f"{u or 'none'} {rn} over {xn}", "unit": u, "xs": [i * dx for i in range(50)],
                          "ys": ys})
        cases.append({"title": f"{u or 'none'} one point", "unit": u, "xs": [3.0], "ys": [5.0]})
    js = r"""
var F = strobeFormat, box = document.getElementById('charts');
CASES.forEach(function (c) {
  var d = document.createElement('div'); box.appendChild(d);
  new uPlot({title: c.title, width: 520, height: 170, scales: {x: {time: false}},
    axes: [F.axis('s'), F.axis(c.unit, {size: F.axisSize(50)})],
    series: [{}, {stroke: '#2f6fdb', spanGaps: false}]}, [c.xs, c.ys], d);
});
document.body.setAttribute('data-ready', '1');
""".replace("CASES", json.dumps(cases))
    with open(path, "w", encoding="utf-8") as f:
        f.write(f'<!doctype html><meta charset="utf-8"><link rel="stylesheet" href="file://{ROOT}/node_modules/uplot/dist/uPlot.min.css"><body><div id="charts" style="display:flex;flex-wrap:wrap"></div>'
                f'<script src="file://{ROOT}/node_modules/uplot/dist/uPlot.iife.min.js"></script>'
                f'<script src="file://{ROOT}/web/common/format.js"></script><script>{js}</script>')
    kinds = [["^" + re.escape(c["title"]) + "$", "s", c["unit"]] for c in cases]
    return kinds, [k[0] for k in kinds]


def main():
    node = shutil.which("node")
    if not (node and os.path.exists("/usr/bin/chromium")
            and os.path.isdir(os.path.join(ROOT, "node_modules", "playwright-core"))):
        skip("chart axes in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
        done()
    db = store_path("axes.db")
    report = record(db, "main", 3.0, True, {"lr": "0.001", "opt": "sgd"})
    record(db, "second", 1.2, False, {"lr": "0.0011", "opt": "adam"})
    record(db, "third", 1.2, False, {"lr": "0.01", "opt": "sgd"})
    info = show(db, "main")
    ids = [show(db, n)["id"] for n in ("main", "second", "third")]
    metrics = info["metrics"]
    units = {k: m.get("unit", "") for k, m in metrics.items()}
    disks = sorted((k for k in metrics if k.startswith("disk.write_bytes_per_s")),
                   key=lambda k: -(metrics[k].get("max") or 0))
    wrote = bool(disks) and (metrics[disks[0]].get("max") or 0) > 4 * (1 << 20)
    if wrote or fs_type(TMP) not in ("tmpfs", "ramfs"):
        check("the job's writes show on a disk (about 8 MiB/s)", wrote, {k: metrics[k].get("max") for k in disks})
    else:
        skip("the job's writes show on a disk", f"{TMP} is on {fs_type(TMP)}: no Disk chart")
    gpu = [k for k in metrics if k.startswith("gpu.")]
    check("the test GPU recorded", any(k.startswith("gpu.util") for k in gpu), sorted(metrics))

    # ---- the report: each chart's title and its axes' units
    R = [["^CPU \\(% of all cores\\)$", "s", "pct"], ["^CPU per core", "s", "core"],
         ["^GPU util$", "s", "pct"], ["^GPU mem_used_bytes$", "s", "bytes"], ["^GPU power_w$", "s", "W"],
         ["^GPU temp_c$", "s", "C"], ["^GPU sm_active$", "s", "pct"], ["^Memory$", "s", "bytes"],
         ["^Disk$", "s", "bytes/s"], ["^Network$", "s", "bytes/s"], ["^Process tree CPU", "s", "pct"],
         ["^Script: ", "s", ""], ["^Step duration$", "s", "ms"], ["^Histogram of step durations$", "ms", "int"]]
    report_expect = ["^CPU \\(", "^CPU per core", "^GPU util$", "^GPU mem_used_bytes$", "^GPU power_w$",
                     "^GPU temp_c$", "^Memory$", "^Process tree CPU"] + (["^Disk$"] if wrote else []) + \
        ["^Script: " + n + "$" for n in ("tiny", "huge", "neg", "flat", "one", "gappy")] + \
        ["^Step duration$", "^Histogram"]
    pages = [{"name": "report", "url": "file://" + report, "kinds": R, "expect": report_expect, "shot": "axes-report.png"},
             {"name": "report zoomed to 50 ms", "url": "file://" + report, "zoom": [1.0, 1.05], "kinds": R,
              "expect": report_expect}]

    srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0", "--rate", "0"],
                           stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", line)
    check("serve prints where it listens", m is not None, line)
    if not m:
        srv.kill()
        done()
    base = "http://%s/" % m.group(1)

    # ---- the dashboard's run page: a chart per metric, titled "KEY (UNIT)"
    keys = ["cpu.util", "proc.cpu", "proc.rss_bytes", "mem.used_bytes", "proc.threads", "proc.ctx_switches_per_s",
            disks[0] if disks else "cpu.util"] + sorted(k for k in gpu if re.match(
                r"gpu\.(util|mem_used_bytes|power_w|temp_c)\{", k)) + \
        ["app." + n for n in ("tiny", "huge", "neg", "flat", "one", "gappy")]
    keys = [k for k in keys if k in metrics]
    D = [[re.escape(k + (" (" + units[k] + ")" if units[k] else "")) + "$", "s", units[k]] for k in keys] + \
        [["^Step duration$", "s", "ms"], ["^Phases per step", "s", "ms"]]
    run_hash = "#/run/" + ids[0] + "?" + "&".join("m=" + urlq(k) for k in keys)
    run_expect = [k[0] for k in D]
    pages += [{"name": "dashboard run", "url": base + run_hash, "kinds": D, "expect": run_expect,
               "shot": "axes-dashboard-run.png"},
              {"name": "dashboard run zoomed to 60 ms", "url": base + run_hash + "&z=1.0000,1.0600", "kinds": D,
               "expect": run_expect}]

    # ---- compare: over elapsed time and over step number
    runs = ",".join(ids)
    for k in ["step", disks[0] if disks else "cpu.util", "proc.rss_bytes", "app.tiny", "app.huge", "app.neg",
              "app.one", "app.gappy"]:
        unit = "ms" if k == "step" else units.get(k, "")
        for mode in ("time", "step"):
            title = ("step time" if k == "step" else k) + " over " + ("step number" if mode == "step" else "elapsed time")
            pages.append({"name": f"compare {k} over {mode}",
                          "url": base + "#/compare?runs=" + runs + "&metric=" + urlq(k) + "&x=" + mode,
                          "kinds": [["^" + re.escape(title) + "$", "int" if mode == "step" else "s", unit]],
                          "expect": ["^" + re.escape(title) + "$"]})

    # ---- sweep: every figure over a numeric and a categorical parameter
    figures = [("samples_per_s", "samples/s", ""), ("step_p50_s", "step p50", "s"), ("duration_s", "duration", "s"),
               ("cpu_util_pct", "mean CPU", "pct"), ("gpu_util_pct", "mean GPU util", "pct"),
               ("steps", "steps", "int"), ("findings", "findings", "int")]
    for par, xk in (("lr", ""), ("opt", "category")):
        for y, name, unit in figures:
            title = f"{name} against {par} (axes)"
            pages.append({"name": f"sweep {y} over {par}",
                          "url": base + f"#/sweep?experiment=axes&param={par}&y={y}",
                          "kinds": [["^" + re.escape(title) + "$", xk, unit]], "expect": ["^" + re.escape(title) + "$"]})

    synth_kinds, synth_expect = synthetic_page(os.path.join(TMP, "synthetic.html"))
    pages.append({"name": "synthetic", "url": "file://" + os.path.join(TMP, "synthetic.html"), "kinds": synth_kinds,
                  "expect": synth_expect, "shot": "axes-synthetic.png"})

    os.makedirs(ARTIFACTS, exist_ok=True)
    try:
        spec = os.path.join(TMP, "axes-spec.json")
        with open(spec, "w") as f:
            json.dump({"pages": pages}, f)
        r = subprocess.run([node, DRIVER, spec, ARTIFACTS], capture_output=True, text=True, timeout=int(os.environ.get('AXES_TIMEOUT', '240')))
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
    try:
        b = json.loads(r.stdout.strip().split("\n")[-1])
    except (ValueError, IndexError):
        b = {"errors": ["no result: " + r.stdout[-500:] + r.stderr[-500:]], "pages": {}}
    check("no console error, no page error, the driver got through", b.get("errors") == [], b.get("errors"))
    for p in pages:
        got = b.get("pages", {}).get(p["name"], {"bad": ["not visited"], "titles": [], "missing": ["?"]})
        print(f"# {p['name']}: {len(got['titles'])} charts read in {got.get('elapsed_s')} s", flush=True)
        check(f"{p['name']}: every expected chart drawn", not got["missing"], (got["missing"], got["titles"]))
        check(f"{p['name']}: {len(got['titles'])} charts' axes read in their units, rising, distinct, fitting",
              got["titles"] and not got["bad"], got["bad"][:12])
    disk = b.get("pages", {}).get("report", {}).get("labels", {}).get("Disk")
    print("# the report's disk chart reads", disk, flush=True)
    done()


def fs_type(path):
    """The file system type of the mount holding path (/proc/mounts)."""
    path, best, kind = os.path.realpath(path), "", ""
    with open("/proc/mounts") as f:
        for line in f:
            w = line.split()
            mnt = w[1].replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, w[2]
    return kind


def urlq(s):
    from urllib.parse import quote
    return quote(s, safe="")


main()
