#!/usr/bin/python3
"""strobe flame, show and trace on a store of Python samples.

The store is written by the unit test build/tests/test_py_store through the
store ops (py_block_put beside the run's processes and event blocks): the
fixture of tests/unit/py_fixture.h. Its samples, by time, pid, stack and
state (A main, B forward, C loader, D a hostile name), and what each is:

    500 100 A run  main none      1300 102 A run  child none
   1100 100 A run  main data 1    1600 100 ABA run main backward 1
   1300 100 AB run main forward 1 1950 100 A run  main other 1
   1300 101 C run  worker 0 data 1 3150 100 AB run main eval
   5100 101 C sleep worker 0 data 2  5500 100 A lock main other 2
   5850 100 AD run main optimizer 2  5900 100 (no frame) run main other 2

Times are in µs. Every expected figure below is counted from that table."""
import json
import os
import subprocess
import xml.etree.ElementTree as ET

from strobetest import *

BUILD = os.path.dirname(STROBE) or "build"
db = store_path("flame.db")
for f in (db, db + "-wal", db + "-shm"):
    if os.path.exists(f):
        os.remove(f)
fill = subprocess.run([os.path.join(BUILD, "tests", "test_py_store")], capture_output=True,
                      text=True, env=dict(os.environ, STROBE_PY_FIXTURE=db), timeout=60)
if not check("the fixture store is written", fill.returncode == 0 and os.path.exists(db),
             fill.stdout + fill.stderr):
    done()

A = "main (train.py:1)"
B = "forward (model.py:10)"
C = "loader (data.py:5)"
D = 'x,y?<&>" (f<&>.py:7)'  # ';' and the newline of the name replaced


def collapsed(*args):
    p = strobe("flame", *args, "last", store=db)
    lines = {}
    for line in p.stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        lines[stack] = int(count)
    return p, lines


p, got = collapsed()
check("collapsed exits 0", p.returncode == 0, p.stderr)
# on-CPU: A at 500, 1100, 1950 and the child's 1300; AB at 1300, 3150; ABA
# at 1600; AD at 5850; C at 1300; the frameless 5900 is not a stack
check("collapsed counts, on-CPU", got == {A: 4, f"{A};{B}": 2, f"{A};{B};{A}": 1,
                                          f"{A};{D}": 1, C: 1}, got)
check("collapsed lines are sorted", p.stdout.splitlines() == sorted(p.stdout.splitlines()))
p, got = collapsed("--idle")
check("--idle adds the lock and the sleep", got.get(A) == 5 and got.get(C) == 2, got)
p, got = collapsed("--role", "worker")
check("--role worker: the worker's loader only", got == {C: 1}, got)
p, got = collapsed("--phase", "data")
check("--phase data: main at 1100 and the worker", got == {A: 1, C: 1}, got)
p, got = collapsed("--steps", "2-2")
check("--steps 2-2: the optimizer's sample", got == {f"{A};{D}": 1}, got)
p, got = collapsed("--pid", "102")
check("--pid 102: the child", got == {A: 1}, got)
p, got = collapsed("--phase", "eval")
check("--phase eval", got == {f"{A};{B}": 1}, got)

p = strobe("flame", "--format", "svg", "last", store=db)
try:
    svg = ET.fromstring(p.stdout)
    titles = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title")]
except ET.ParseError as e:
    svg, titles = None, [str(e)]
check("the SVG parses as XML", svg is not None, titles)
check("the SVG's root frame counts the 9 on-CPU stacks",
      "all (9 samples, 100.00%)" in titles, titles[:3])
check("the hostile name survives in the SVG", any(t.startswith(D) for t in titles), titles)
check("svg: a rectangle per frame and the root",
      len(titles) == 1 + 1 + 1 + 1 + 1 + 1, titles)  # all, A, B, A (in ABA), D, C

p = strobe("flame", "--format", "json", "last", store=db)
doc = json.loads(p.stdout)
check("json keys", sorted(doc) == sorted(["run", "samples", "interval_ns", "filters", "frames",
                                          "stacks", "roles", "phases", "states", "counts"]),
      sorted(doc))
check("json samples: the on-CPU ones", doc["samples"] == 10, doc["samples"])
check("json interval: the median gap of a thread", doc["interval_ns"] == 350000,
      doc["interval_ns"])
check("json filters when none given", doc["filters"] == {"role": None, "phase": None,
                                                          "steps": None, "idle": False},
      doc["filters"])
check("json stack 0 is empty", doc["stacks"][0] == [], doc["stacks"][:1])
check("json roles", sorted(doc["roles"]) == ["child", "main", "worker 0"], doc["roles"])
check("json states", doc["states"] == ["running", "lock", "io", "sleep", "gpu", "wait"])
counts = doc["counts"]
check("json counts hold every state", sum(c[4] for c in counts) == 12, counts)
ok = all(0 <= s < len(doc["stacks"]) and 0 <= r < len(doc["roles"]) and
         0 <= ph < len(doc["phases"]) and 0 <= st < len(doc["states"]) for s, r, ph, st, _ in counts)
check("json counts index the arrays", ok, counts)
frame_ok = all(0 <= f < len(doc["frames"]) for s in doc["stacks"] for f in s)
check("json stacks index frames", frame_ok)
check("json keeps the hostile name", ["x;y\n<&>\"", "f<&>.py", 7] in doc["frames"], doc["frames"])
worker = doc["roles"].index("worker 0")
data = doc["phases"].index("data")
check("json: the worker's samples are data",
      all(c[2] == data for c in counts if c[1] == worker), counts)
p = strobe("flame", "--format", "json", "--steps", "1-2", "--role", "main", "last", store=db)
doc = json.loads(p.stdout)
check("json filters as given", doc["filters"] == {"role": "main", "phase": None,
                                                  "steps": [1, 2], "idle": False},
      doc["filters"])
# main in steps 1-2, running: 1100, 1300, 1600, 1950, 5850, 5900
check("json samples after filters", doc["samples"] == 6, doc["samples"])

p = strobe("show", "last", store=db)
check("show has a Python hotspots section",
      "Python hotspots: 12 samples, 10 on-CPU" in p.stdout, p.stdout[-1500:])
rows = [l.split() for l in p.stdout.splitlines() if l.strip().endswith(A)]
# main is the leaf of 5 of the 10 on-CPU samples and on 8 of their stacks
check("show's top row is main: 50.0% self, 80.0% total",
      rows and rows[0][:2] == ["50.0%", "80.0%"], rows)
p = strobe("show", "--json", "last", store=db)
py = json.loads(p.stdout)["python"]
check("show --json python counts", (py["samples"], py["on_cpu"]) == (12, 10), py)
top = py["top_self"][0]
check("show --json top by self", (top["func"], top["self_share"], top["total_share"]) ==
      ("main", 0.5, 0.8), top)
tot = py["top_total"]
check("show --json top by total", [t["func"] for t in tot[:2]] == ["main", "forward"] and
      tot[1]["total"] == 3, tot)

run(store_path("flame-none.db"), "true")
p = strobe("flame", "last", store=store_path("flame-none.db"))
check("a run without samples: one line, exit 1", p.returncode == 1 and
      "has no Python samples: record with --py-sample RATE or --py-profile A-B" in p.stderr and
      len(p.stderr.splitlines()) == 1, (p.returncode, p.stderr))
p = strobe("show", "--json", "last", store=store_path("flame-none.db"))
check("show --json python is null without samples", json.loads(p.stdout)["python"] is None)


def python_tracks(*args):
    out = store_path("flame-trace.json")
    p = strobe("trace", "-o", out, *args, "last", store=db)
    doc = json.load(open(out))
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    slices = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "python"]
    return p, doc, names, slices


p, doc, names, slices = python_tracks()
check("trace exits 0", p.returncode == 0, p.stderr)
check("a Python track per sampled thread, named by its thread",
      names.get((100, 2000000100)) == "python 100 (train<&>;\n)" and
      names.get((101, 2000000101)) == "python 101 (worker)" and
      names.get((102, 2000000102)) == "python 102 (worker)", names)
# pid 100: A 500-2300, B and A 1300/1600-1950, A and B 3150-3500, A and D
# 5850-5900 (the lock at 5500 is not drawn); the worker's C; the child's A
per = {}
for s in slices:
    per[s["pid"]] = per.get(s["pid"], 0) + 1
check("trace slice counts per track", per == {100: 7, 101: 1, 102: 1}, per)
check("trace counts them", (doc["otherData"]["python_samples"],
                            doc["otherData"]["python_slices"]) == (10, 9), doc["otherData"])
longest = max(slices, key=lambda s: s["dur"])
check("consecutive samples merge into one slice", longest["name"] == A and
      abs(longest["dur"] - 1800) < 1e-6, longest)  # 500 to 1950 + 350, in µs
p, doc, names, slices = python_tracks("--steps", "1-1")
# step 1 is [1000, 2000]: 1100, the three at 1300, 1600, 1950
check("trace --steps 1-1", (doc["otherData"]["python_samples"], len(slices)) == (6, 5),
      doc["otherData"])
out = store_path("flame.perfetto-trace")
p = strobe("trace", "--format", "perfetto", "-o", out, "last", store=db)
blob = open(out, "rb").read() if os.path.exists(out) else b""
check("perfetto has the Python tracks", p.returncode == 0 and b"python 101 (worker)" in blob and
      b"loader (data.py:5)" in blob, p.stderr)
done()
