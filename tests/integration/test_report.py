#!/usr/bin/env python3
"""strobe report end to end: a real strobe run of a small Python loop with a
hostile name, tag and command writes its report beside the store; strobe
report writes one too; the page opens in headless Chromium with no console
error and no network request, every chart draws, the hostile strings are
text, and its summary figures are strobe show --json's. The screenshot is
kept in $STROBE_BUILD/artifacts/report.png."""
import json
import os
import re
import shutil
import stat
import subprocess

from strobetest import PYTHON, TMP, check, done, show, shown_finding_ranges, skip, store_path, strobe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "integration", "report_browser.js")
ARTIFACTS = os.path.join(os.environ.get("STROBE_BUILD", os.path.join(ROOT, "build")), "artifacts")

# 20 ms steps, 60 % waiting for data, every 15th step 6x longer, a loss
WORKLOAD = r"""
import math, time, strobe
i = 0
while time.monotonic() - T0 < SECONDS:
    i += 1
    t = 0.020 * (6 if i % 15 == 0 else 1)
    with strobe.span("data"):
        time.sleep(t * 0.6)
    with strobe.span("forward"):  # on the CPU: the per-core heatmap has something to show
        end = time.monotonic() + t * 0.4
        while time.monotonic() < end:
            pass
    strobe.log("loss", 2.0 * math.exp(-i / 100.0))
    strobe.step()
"""
NAME = "</script><b class=\"pwn\">x</b>'\"&amp;<!--"
TAG = "team=</script><script>alert(1)</script>\u2028<!--"
ARG = "</script><img src=x onerror=alert(1)>\x01\x1f'\"end"

db = store_path("report.db")
cwd = os.path.join(TMP, "cwd")
os.makedirs(cwd)
cmd = [PYTHON, "-c", "import time; T0=time.monotonic(); SECONDS=7\n" + WORKLOAD, ARG]
p = strobe("run", "--name", NAME, "--tag", TAG, "--param", "lr=0.1", "--rule-interval", "2s",
           "--rule-param", "StepOutlier.n_outliers=2", "--", *cmd, store=db, timeout=120, cwd=cwd)
check("strobe run with a hostile name exits 0", p.returncode == 0, p.stderr)
lines = [l for l in p.stderr.splitlines() if l.startswith("strobe: report: ")]
path = lines[0][len("strobe: report: "):] if lines else ""
check("strobe run prints the report's path", bool(lines), p.stderr)
check("the report is beside the store, in reports/",
      os.path.dirname(path) == os.path.join(TMP, "reports") and os.path.isfile(path), path)
check("nothing is written to the working directory", os.listdir(cwd) == [], os.listdir(cwd))

# findings of more than one severity for the report's order: the loop waits
# for data 60 % of its steps (InputBound, high, at 10 %) and every 15th step
# is an outlier (StepOutlier, medium, with none allowed)
p = strobe("rules", "--save", "--rule-param", "InputBound.threshold=10",
           "--rule-param", "StepOutlier.n_outliers=0", "last", store=db)
check("strobe rules --save before the report exits 0", p.returncode == 0, p.stderr)

out = os.path.join(TMP, "r.html")
p = strobe("report", "last", "-o", out, store=db)
check("strobe report -o FILE exits 0", p.returncode == 0 and os.path.isfile(out), p.stderr)
html = open(out, encoding="utf-8").read()
check("only our six scripts close in the file (data, uPlot, format.js, metrics.js, flame.js, report.js)",
      html.count("</script") == 6, html.count("</script"))
check("no raw U+2028 nor '<!--' in the file", "\u2028" not in html and "<!--" not in html)
check("no URL to fetch in the file", "http://" not in html.split("<script>")[0]
      and "src=\"http" not in html and "href=\"http" not in html)

info = show(db)
data = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', html, re.S)
series = json.loads(data.group(1))["series"] if data else []
counts = {x["name"] + ("{%s}" % x["labels"] if x["labels"] else ""): x["stats"]["count"]
          for x in series}
want = {k: m["count"] for k, m in info["metrics"].items() if k in counts}
check("every series' stats.count is its own, as strobe show --json's count",
      len(want) > 10 and len(want) == len(counts) and counts == want,
      {k: (counts[k], want.get(k)) for k in counts if counts[k] != want.get(k)})
p = strobe("report", "last", "--store=" + db, cwd=cwd)
default = [f for f in os.listdir(cwd)]
check("strobe report's default file is <name>.report.html in cwd",
      p.returncode == 0 and len(default) == 1 and default[0].endswith(".report.html")
      and "/" not in default[0], (default, p.stderr))

# --no-report, --report PATH, and a report that cannot be written
p = strobe("run", "--quiet", "--no-report", "--", "/bin/true", store=db)
check("--no-report writes none", p.returncode == 0 and len(os.listdir(os.path.join(TMP, "reports"))) == 1,
      os.listdir(os.path.join(TMP, "reports")))
there = os.path.join(TMP, "there.html")
p = strobe("run", "--quiet", "--report", there, "--", "/bin/sh", "-c", "exit 3", store=db)
check("--report PATH writes it there, exit status kept", p.returncode == 3 and os.path.isfile(there),
      (p.returncode, p.stderr))
p = strobe("run", "--quiet", "--report", os.path.join(TMP, "no", "such", "dir.html"), "--",
           "/bin/sh", "-c", "exit 4", store=db)
warn = [l for l in p.stderr.splitlines() if "no report" in l]
check("a report that cannot be written is one warning; the job's status stays",
      p.returncode == 4 and len(warn) == 1, (p.returncode, p.stderr))

# what is not a regular file is written into, not replaced; a link is followed
link, target = os.path.join(TMP, "report-link.html"), os.path.join(TMP, "report-target.html")
for f in (link, target):
    if os.path.lexists(f):
        os.remove(f)
os.symlink(target, link)
p = strobe("report", "last", "-o", link, store=db)
check("report -o a symbolic link: the link stays, its target gets the report",
      p.returncode == 0 and os.path.islink(link) and os.path.getsize(target) > 10000,
      (p.returncode, p.stderr))
if os.geteuid() == 0:
    dev = os.path.join(TMP, "report-null")
    if os.path.lexists(dev):
        os.remove(dev)
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    p = strobe("run", "--quiet", "--report", dev, "--", "/bin/true", store=db)
    mode = os.lstat(dev).st_mode
    check("--report a device: written into, the device stays (no temporary file left)",
          p.returncode == 0 and stat.S_ISCHR(mode) and
          not [f for f in os.listdir(TMP) if f.startswith("report-null.tmp")], (p.stderr, oct(mode)))
    os.remove(dev)
else:
    skip("--report a device", "mknod needs root")

node = shutil.which("node")
if not (node and os.path.exists("/usr/bin/chromium")
        and os.path.isdir(os.path.join(ROOT, "node_modules", "playwright-core"))):
    skip("the report in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
    done()

os.makedirs(ARTIFACTS, exist_ok=True)
shot = os.path.join(ARTIFACTS, "report.png")
r = subprocess.run([node, DRIVER, out, shot], capture_output=True, text=True, timeout=120)
try:
    b = json.loads(r.stdout.strip().split("\n")[-1])  # not splitlines: U+2028
except (ValueError, IndexError):
    b = {"errors": ["no result: " + r.stdout[-500:] + r.stderr[-500:]]}
check("the page loads with no console error", b.get("errors") == [], b.get("errors"))
check("the page makes no network request", b.get("network") == [], b.get("network"))
canv = b.get("canvases", [])
titles = [c["title"] for c in canv]
check("charts: CPU, per-core heatmap, memory, script loss, steps, histogram",
      all(any(t.startswith(w) for t in titles) for w in
          ("CPU (", "CPU per core", "Memory", "Script: loss", "Step duration", "Histogram")), titles)
catalog = {m["name"]: m["help"] for m in json.loads(strobe("metrics", "--json").stdout)}
cpu_help = [c["help"] for c in canv if c["title"].startswith("CPU (")]
check("a chart's tooltip is its metric's help from the catalog (strobe metrics)",
      cpu_help and cpu_help[0] == catalog["cpu.util"], (cpu_help, catalog.get("cpu.util")))
blank = [c for c in canv if c["colour"] < 50]
check("every chart draws data on its canvas", canv and not blank, blank)
t = b.get("texts", {})
check("the hostile name is the page's text", t.get("name") == NAME and t.get("title", "").endswith(NAME),
      (t.get("name"), NAME))
check("the hostile command argument is text, control bytes and all", ARG in t.get("command", ""),
      repr(t.get("command")))
check("the hostile tag is text", TAG.split("=", 1)[1] in t.get("tags", ""), repr(t.get("tags")))
check("nothing hostile became an element", t.get("injected") == 0 and t.get("scripts") == 6, t)
check("the sections are all there",
      all(s in t.get("sections", []) for s in ("Job summary", "Findings", "Time series",
          "Step analysis", "Phase breakdown", "Data loader", "System usage statistics",
          "Environment")), t.get("sections"))

steps = info["steps"] or {}
check("duration as strobe show --json", abs(float(t.get("duration_s", "nan")) - info["duration_s"]) < 1e-6,
      (t.get("duration_s"), info["duration_s"]))
check("status as strobe show --json", t.get("status") == info["status"], (t.get("status"), info["status"]))
check("step count as strobe show --json", t.get("steps.count") == str(steps.get("count")),
      (t.get("steps.count"), steps.get("count")))
check("step p50 and p95 as strobe show --json",
      abs(float(t.get("steps.p50_ns", "nan")) - steps.get("p50_ns", 0)) < 1
      and abs(float(t.get("steps.p95_ns", "nan")) - steps.get("p95_ns", 0)) < 1,
      (t.get("steps.p50_ns"), steps.get("p50_ns"), t.get("steps.p95_ns"), steps.get("p95_ns")))
check("samples and findings as strobe show --json",
      t.get("samples") == str(info["samples"]) and t.get("findings") == str(len(info["findings"])),
      (t.get("samples"), info["samples"], t.get("findings"), len(info["findings"])))
RANK = {"high": 0, "medium": 1, "low": 2, "info": 3}
sev = t.get("severities", [])
check("the findings table lists them most severe first (high ranks 0, which is falsy)",
      len(sev) == len(info["findings"]) and "high" in sev and len(set(sev)) > 1
      and sev == sorted(sev, key=lambda x: RANK.get(x, 9)), sev)
shown = shown_finding_ranges(db, info["id"])
check("each finding's time range reads as strobe show writes it",
      shown and sorted(t.get("ranges", [])) == shown, (t.get("ranges"), shown))
check("a finding's time range zooms the charts", b.get("zoom") is True or not info["findings"], b.get("zoom"))
check("the screenshot is kept", os.path.getsize(shot) > 10000, shot)

done()
