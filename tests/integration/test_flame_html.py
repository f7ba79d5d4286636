#!/usr/bin/env python3
"""The interactive flame graph (web/common/flame.js) in headless Chromium, on
the page `strobe flame --format html` writes (src/render/flame_html.c, made
here by build/tests/strobe-flamehtml from flame data this test builds, so
every count is known). Checked against figures computed here from the JSON:
the frames' widths are their samples (a 70/30 split reads 70.0 % / 30.0 %
in the tooltips), the role and phase selectors change the total, idle adds
the waiting samples, a click zooms and Reset (by keyboard) zooms out, a
search gives the matched share, the top-functions table has each
function's self and total, and a function named like markup is shown as
text with no dialog. A profile of 50,000 nodes draws with its tiny frames
aggregated. Screenshots in $STROBE_BUILD/artifacts/."""
import json
import os
import shutil
import subprocess

from strobetest import TMP, check, done, near, skip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STROBE_BUILD", os.path.join(ROOT, "build"))
DRIVER = os.path.join(ROOT, "tests", "integration", "flame_browser.js")
PAGE_TOOL = os.path.join(BUILD, "tests", "strobe-flamehtml")
ARTIFACTS = os.path.join(BUILD, "artifacts")
HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_FILE = "</script><b class=pwn>x</b>.py"
STATES = ["running", "lock", "io", "sleep", "gpu", "wait"]


def fixture():
    """A run of two roles: main spends forward in heavy (700) and light
    (300), waits on I/O in data (200); worker 0 loads (150, running) and
    runs the hostile function (50); 10 samples of main had no Python frame."""
    frames = [["main", "train.py", 1], ["heavy", "train.py", 10], ["light", "train.py", 20],
              ["read_batch", "data.py", 30], ["load", "data.py", 40], [HOSTILE, HOSTILE_FILE, 7]]
    stacks = [[0, 1], [0, 2], [0, 3], [0, 4], [0, 4, 5], []]
    roles = ["main", "worker 0"]
    phases = ["data", "forward", "backward", "optimizer", "other", "none"]
    R, W = 0, 1
    counts = [[0, R, 1, 0, 700], [1, R, 1, 0, 300], [2, R, 0, 2, 200], [3, W, 5, 0, 150],
              [4, W, 0, 0, 50], [5, R, 4, 0, 10], [2, R, 0, 1, 0]]
    return {"run": "fixture-run", "samples": 1410, "interval_ns": 10_000_000,
            "filters": {"role": None, "phase": None, "steps": None, "idle": True},
            "frames": frames, "stacks": stacks, "roles": roles, "phases": phases,
            "states": STATES, "counts": counts}


def total(d, role, phase, idle):
    """The samples of a selection, from the JSON alone."""
    return sum(c[4] for c in d["counts"]
               if (role is None or d["roles"][c[1]] == role)
               and (phase is None or d["phases"][c[2]] == phase)
               and (idle or d["states"][c[3]] == "running"))


def later(d):
    """The same run a refresh later: 100 more samples in heavy."""
    d = json.loads(json.dumps(d))
    d["counts"].append([0, 0, 1, 0, 100])
    return d


def wide_fixture(n):
    """n distinct one-frame stacks, one sample each but the first (heavy):
    most are far narrower than a pixel."""
    frames = [[f"f{i}", "w.py", i + 1] for i in range(n)]
    stacks = [[i] for i in range(n)]
    counts = [[i, 0, 0, 0, 10 * n if i == 0 else 1] for i in range(n)]
    return {"run": "wide", "samples": 11 * n - 1, "interval_ns": 1_000_000,
            "filters": {"role": None, "phase": None, "steps": None, "idle": False},
            "frames": frames, "stacks": stacks, "roles": ["main"], "phases": ["none"],
            "states": STATES, "counts": counts}


def page_of(d, name):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        p = subprocess.run([PAGE_TOOL], input=json.dumps(d).encode(), stdout=f, stderr=subprocess.PIPE, timeout=30)
    check(f"strobe-flamehtml writes {name}", p.returncode == 0, p.stderr.decode())
    return path


def drive(path, spec):
    p = subprocess.run(["node", DRIVER, "file://" + path, json.dumps(spec)], capture_output=True,
                       text=True, timeout=180, cwd=ROOT)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check("the browser driver prints its result", False, p.stdout[-2000:] + p.stderr[-2000:])
        done()


def shares(pick):
    """Each depth-1 frame's share of the canvas width."""
    return {r["func"]: r["w"] / pick["width"] for r in pick["depth1"] if r["func"]}


def main():
    if not (shutil.which("node") and os.path.exists("/usr/bin/chromium")
            and os.path.isdir(os.path.join(ROOT, "node_modules", "playwright-core"))):
        skip("the flame graph in headless Chromium", "no node, chromium or playwright-core")
        done()
    os.makedirs(ARTIFACTS, exist_ok=True)
    d = fixture()
    html = open(page_of(d, "flame.html"), encoding="utf-8").read()
    check("the hostile names never appear raw in the page",
          HOSTILE not in html and "</script><b" not in html)
    picks = [[None, None, False], ["main", None, False], ["worker 0", None, False],
             [None, "forward", False], [None, "data", False], ["main", "forward", False],
             ["main", "data", False], [None, None, True], ["main", "data", True]]
    out = drive(os.path.join(TMP, "flame.html"), {
        "ready": "body[data-ready='1']", "flame": ".flame", "pick": picks,
        "hover": [["main", "forward", False, "main"], ["main", "forward", False, "heavy"],
                  ["main", "forward", False, "light"], [None, None, True, "read_batch"],
                  ["worker 0", None, False, HOSTILE]],
        "zoom": "main", "search": "light", "refresh": later(d),
        "shot": os.path.join(ARTIFACTS, "flame.png")})
    check("no console error", not out["errors"], out["errors"])
    check("no request leaves the page", not out["foreign"], out["foreign"])
    check("no dialog fires (hostile names are text)", not out["dialogs"], out["dialogs"])
    check("no markup from the data", out["injected"] == 0, out["injected"])

    for p in out["picks"]:
        want = total(d, p["role"], p["phase"], p["idle"])
        what = f"role={p['role']} phase={p['phase']} idle={p['idle']}"
        check(f"the total of {what} is {want}", p["total"] == want, p["total"])
        # depth 1 is the root's children: together as wide as the canvas
        drawn = sum(r["total"] for r in p["depth1"])
        check(f"{what}: the frames of depth 1 hold every sample", drawn == want, (drawn, want))
        for r in p["depth1"]:
            near(f"{what}: {r['func']} is {r['total']}/{want} of the width", r["w"] / p["width"],
                 r["total"] / want, 1.5 / p["width"])
    base = out["picks"][0]
    s = shares(base)
    near("on CPU, main is 1200/1210 of the width", s.get("main"), 1200 / 1210, 0.002)
    near("a thread with no Python frame is its own frame", s.get("(no Python frame)"), 10 / 1210, 0.002)
    idle = out["picks"][7]
    check("idle adds the 200 samples waiting on I/O", idle["total"] - base["total"] == 200,
          (idle["total"], base["total"]))

    # the top-functions table against the JSON: self and total per function
    top = {r["func"]: r for r in base["top"]}
    for func, self_, tot in [("heavy", 700, 700), ("light", 300, 300), ("load", 150, 200),
                             (HOSTILE, 50, 50), ("main", 0, 1200)]:
        r = top.get(func, {})
        check(f"the table has {func!r}: self {self_}, total {tot}",
              r.get("self") == self_ and r.get("total") == tot, r)
    check("the table's shares are of the total", top.get("heavy", {}).get("self_text") == f"{100 * 700 / 1210:.1f} %",
          top.get("heavy"))
    check("the hostile file is shown as text", top.get(HOSTILE, {}).get("file") == HOSTILE_FILE + ":7",
          top.get(HOSTILE))
    check("the table is by self share first", [r["func"] for r in base["top"]][:2] == ["heavy", "light"],
          [r["func"] for r in base["top"]])

    tips = {h["func"]: h["tip"] for h in out["hovers"]}
    heavy, light = tips.get("heavy") or [], tips.get("light") or []
    check("the tooltip names the function and its file:line",
          heavy[:2] == ["heavy", "train.py:10"], heavy)
    check("a 70/30 split reads 70.0 % of the total", "70.0 % of total" in heavy, heavy)
    check("... and 30.0 %", "30.0 % of total" in light, light)
    check("... and of its parent", "70.0 % of parent" in heavy and "30.0 % of parent" in light, (heavy, light))
    check("the tooltip counts the samples", "700 samples (700 in itself)" in heavy, heavy)
    rb = tips.get("read_batch") or []
    check("with idle, a waiting frame's tooltip gives its state", "io 200" in rb, rb)
    check("... and its share of all samples", f"{100 * 200 / 1410:.1f} % of total" in rb, rb)
    hostile = tips.get(HOSTILE) or []
    check("the hostile function's tooltip shows its name literally",
          hostile[:2] == [HOSTILE, HOSTILE_FILE + ":7"], hostile)

    z = out.get("zoom") or {}
    zr = (z.get("zoomed") or {}).get("rects", [])
    check("a click on main zooms into it", (z.get("zoomed") or {}).get("zoom") == "main", z.get("zoomed"))
    kids = {r["func"]: r["w"] / z["zoomed"]["width"] for r in zr if r["depth"] == 2 and r["func"]}
    near("zoomed, heavy fills 700/1200 of the width", kids.get("heavy"), 700 / 1200, 0.002)
    check("Reset, by keyboard, zooms out", z.get("reset") == "", z.get("reset"))

    srch = out.get("search") or {}
    check("a search for 'light' matches its 300 samples", srch.get("samples") == 300, srch)
    check("... and gives its share of the total", f"{100 * 300 / 1210:.1f} % of the total" in srch.get("text", ""), srch)

    rf = out.get("refresh") or {}
    check("new data (a refresh) keeps the role and the zoom",
          rf.get("role") == "main" and rf.get("zoom") == "main", rf)
    check("... and counts the new samples", rf.get("after", 0) - rf.get("before", 0) == 100, rf)

    # 50,000 nodes: tiny frames are drawn as one block, and every sample is
    # still under the root
    n = 50000
    w = wide_fixture(n)
    out = drive(page_of(w, "flame-wide.html"), {
        "ready": "body[data-ready='1']", "flame": ".flame", "pick": [[None, None, False]]})
    check("the wide profile draws with no error", not out["errors"], out["errors"])
    p = out["picks"][0]
    check("the wide profile's total is every sample", p["total"] == 11 * n - 1, p["total"])
    check("frames below a pixel are aggregated, not drawn one by one",
          p["aggregated"] >= 1 and p["rects"] < 2000, (p["aggregated"], p["rects"]))
    big = [r for r in p["depth1"] if r["func"] == "f0"]
    near("the heavy frame keeps its width", big[0]["w"] / p["width"] if big else None, 10 * n / (11 * n - 1),
         1.5 / p["width"])
    done()


main()
