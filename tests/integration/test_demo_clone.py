#!/usr/bin/python3
"""The README's path on a fresh clone: `make demo` in a copy of the working
tree as git would check it out (no build, no node_modules) must build all
that strobe run loads, and its run must have the steps examples/train.py
says it made, every phase, and a timeline of slices. Then the README's
batch-size sweep (two batch sizes, a few steps) against that store: the
dashboard's API gives each run its steps, phases and samples/s.

The build under test is not used: everything runs from the copy (so a
sanitizer pass skips this test).
"""
import gzip
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time

from strobetest import *

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLONE = os.path.join(TMP, "clone")
SWEEP = (16, 64)
# steps a sweep point runs: its step median is checked against the
# script's own (10 %), and 40 steps left that median to a few noisy ones
# on a busy machine (15.1 against 13.4 ms once, where quiet runs agree to
# 0.01 ms)
SWEEP_STEPS = 120
# what make (or a strobe of the runner's) would hand down and a new user's
# shell does not have
NOT_INHERITED = ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "STROBE_STORE",
                 "STROBE_PYTHON_DIR", "PYTHONPATH", "TRAIN_SECONDS")


def fresh_copy():
    """The tracked and untracked, not ignored files (uncommitted work
    counts), as they are in the working tree."""
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = os.path.join(ROOT, name)
        if not os.path.lexists(src):  # deleted, not yet committed
            continue
        dst = os.path.join(CLONE, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)


def user_env():
    env = example_env()
    for k in NOT_INHERITED:
        env.pop(k, None)
    return env


def said_steps(stdout):
    """examples/train.py's own closing line: its step count and median step (s)."""
    m = re.search(r"^done: (\d+) steps in \S+ s, .*median step ([\d.]+) ms", stdout, re.M)
    return (int(m.group(1)), float(m.group(2)) / 1e3) if m else (None, None)


def check_demo(out):
    steps, _ = said_steps(out)
    check("demo: examples/train.py says how many steps it made", steps and steps > 0, out[-600:])
    built = os.path.join(CLONE, "build", "python", "strobe")
    check("demo: the Python package was built",
          all(os.path.exists(os.path.join(built, f))
              for f in ("__init__.py", "_strobe.abi3.so", "_boot/sitecustomize.py")),
          os.listdir(built) if os.path.isdir(built) else "no build/python/strobe")
    warned = [line for line in out.splitlines() if "Python package was not found" in line]
    check("demo: no warning about a missing package", not warned, warned)
    clone_strobe = os.path.join(CLONE, "build", "strobe")
    p = subprocess.run([clone_strobe, "show", "--json", "--store", os.path.join(CLONE, "strobe.db"),
                        "demo"], capture_output=True, text=True, timeout=60)
    r = json.loads(p.stdout) if p.returncode == 0 else {}
    got = (r.get("steps") or {}).get("count")
    check("demo: strobe's steps are the script's", steps and got == steps,
          f"got {got}, want {steps} (examples/train.py's count)")
    phases = r.get("phases") or {}
    for ph in ("data", "forward", "backward", "optimizer"):
        share = (phases.get(ph) or {}).get("share", 0)
        check(f"demo: phase {ph} has a share of the steps", share > 0, f"got {share}, want > 0")
    trace = os.path.join(CLONE, "reports", "demo.trace.json.gz")
    try:
        with gzip.open(trace) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        events = []
        check("demo: the timeline reads", False, f"{trace}: {e}")
    slices = {}
    for e in events:
        if e.get("ph") == "X":
            slices[e.get("name")] = slices.get(e.get("name"), 0) + 1
    for name in ("step", "data", "forward", "backward", "optimizer"):
        check(f"demo: the timeline has one {name} slice per step the script made",
              steps and slices.get(name) == steps, f"got {slices.get(name)}, want {steps}")


def sweep():
    """The README's sweep, short: {batch: the script's (steps, median step s)}."""
    said = {}
    for bs in SWEEP:
        p = subprocess.run(["build/strobe", "run", "--experiment", "bs-sweep", "--param",
                            f"batch={bs}", "--", PYTHON, "examples/train.py", "--batch-size",
                            str(bs), "--steps", str(SWEEP_STEPS)],
                           cwd=CLONE, env=user_env(), capture_output=True, text=True, timeout=120)
        check(f"sweep: batch {bs} recorded", p.returncode == 0, p.stderr[-400:])
        said[bs] = said_steps(p.stdout)
    return said


def api(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body) if body else None


def check_sweep_api(said):
    srv = subprocess.Popen(["build/strobe", "serve", "--listen", "127.0.0.1:0"], cwd=CLONE,
                           env=user_env(), stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stderr.readline()
        port = int(line.split("127.0.0.1:")[1].split("/")[0]) if "serving" in line else 0
        check("sweep: strobe serve says where it listens", port > 0, line)
        # what #/sweep?experiment=bs-sweep reads
        status, d = api(port, "/api/runs?experiment=bs-sweep&limit=100000&sort=start")
        runs = {int(r["params"].get("batch", 0)): r for r in (d or {}).get("runs", [])}
        check("sweep: the API lists one run per batch size", status == 200 and
              sorted(runs) == sorted(SWEEP), f"got {sorted(runs)}, want {sorted(SWEEP)}")
        ids = ",".join(runs[bs]["id"] for bs in SWEEP if bs in runs)
        status, cmp = api(port, f"/api/compare?runs={ids}")
        analysed = {r["id"]: r for r in ((cmp or {}).get("analysis") or {}).get("runs", [])}
        for bs in SWEEP:
            check_sweep_run(bs, runs.get(bs) or {}, analysed, said[bs])
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def check_sweep_run(bs, run, analysed, said):
    steps, median_s = said
    check(f"sweep: batch {bs}: the API's steps are the script's", steps and run.get("steps") == steps,
          f"got {run.get('steps')}, want {steps}")
    a = analysed.get(run.get("id")) or {}
    phases = a.get("phases") or {}
    for ph in ("data", "forward", "backward", "optimizer"):
        check(f"sweep: batch {bs}: phase {ph} has a share", (phases.get(ph) or 0) > 0,
              f"got {phases.get(ph)}, want > 0")
    mean_ns = (a.get("steps") or {}).get("mean_ns")
    sps = run.get("samples_per_s")
    # no throughput logged: the batch size over the mean step (src/serve/summary.c)
    check(f"sweep: batch {bs}: samples/s is the batch over the mean step",
          sps and mean_ns and abs(sps - bs / (mean_ns / 1e9)) <= 1e-6 * sps,
          f"got {sps}, want {bs} / {mean_ns} ns")
    # the same steps, timed by the script's own clock: the two medians agree
    p50 = run.get("step_p50_s")
    check(f"sweep: batch {bs}: step p50 agrees with the script's median step",
          p50 and median_s and abs(p50 - median_s) <= 0.1 * median_s,
          f"got {p50} s, want {median_s} s ± 10 %")


if sanitized():
    # the copy builds and runs its own plain strobe: the build under test
    # plays no part, and the plain pass of make test has run this already
    skip("make demo on a fresh copy", "a sanitizer build: this test does not use it")
    done()
os.makedirs(CLONE)
fresh_copy()
for ignored in ("build", "node_modules", "strobe.db"):
    check(f"the copy has no {ignored}", not os.path.exists(os.path.join(CLONE, ignored)))
started = time.monotonic()
# its own session: a make that hangs goes with everything it started
make = subprocess.Popen(["make", "demo"], cwd=CLONE, env=user_env(), stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
try:
    out, _ = make.communicate(timeout=230)
except subprocess.TimeoutExpired:
    os.killpg(make.pid, signal.SIGKILL)
    out, _ = make.communicate()
print(f"# make demo on a fresh copy took {time.monotonic() - started:.0f} s", flush=True)
check("make demo succeeds on a fresh copy", make.returncode == 0, out[-1500:])
if make.returncode == 0:
    check_demo(out)
    check_sweep_api(sweep())
done()
