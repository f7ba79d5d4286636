#!/usr/bin/python3
"""Zero-code PyTorch capture under `strobe run`, against the training script's
own clock.

The script below (written to the scratch directory) trains a small model for
K steps from a DataLoader with two worker processes and times each phase
itself with time.monotonic_ns, CLOCK_MONOTONIC like strobe's events: the wait
inside next(iterator), model(x) plus the criterion call (two top-level module
calls: strobe's `forward` is both), loss.backward(), opt.step(), and each
iteration from the end of the previous opt.step() (the first from the start
of the first next()). strobe's steps, phases and processes must agree with
it. Variants: the script counting its own steps with strobe.step() at the top
or at the end of the loop, --no-framework, a sitecustomize of the user's own
(that runs, or that raises), a script that never imports torch, and
strobe.log() values.

The data-loader workers sleep for their batch (as workers waiting on storage
do) instead of burning CPU: on two cores, three busy processes preempt the
trainer for milliseconds at arbitrary points, also between the script's
timer and strobe's, which is noise in both readings and not what the 2 %
criteria are about.
"""
import json
import os
import subprocess

from strobetest import *

K = 30
TOL = 0.02  # of the total step time (the spec's criterion)

TRAIN = r'''
import json, os, sys, time
mono = time.monotonic_ns
K = int(os.environ["K"])
MODE = os.environ.get("MODE", "auto")  # auto, top (strobe.step() first), end (strobe.step() last)
LOG = os.environ.get("LOG") == "1"
out_path = os.environ["OUT"]
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
if MODE != "auto" or LOG:
    import strobe

torch.manual_seed(0)
torch.set_num_threads(1)


class Batches(Dataset):
    """Whole batches (batch_size=None): index i is batch i; the worker waits
    for it like a worker reading from storage."""

    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, 256, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        time.sleep(0.07)
        return x, y


model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                      nn.Linear(256, 10))
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loader = DataLoader(Batches(), batch_size=None, num_workers=2)
it = iter(loader)
rec = {"data": [], "forward": [], "backward": [], "optimizer": [], "iter": [], "numbers": []}
prev = None
loss_value = None
for i in range(K):
    if MODE == "top":
        rec["numbers"].append(strobe.step())
    t0 = mono()
    x, y = next(it)
    t1 = mono()
    loss = crit(model(x), y)
    t2 = mono()
    opt.zero_grad()
    t3 = mono()
    loss.backward()
    t4 = mono()
    opt.step()
    t5 = mono()
    rec["data"].append(t1 - t0)
    rec["forward"].append(t2 - t1)
    rec["backward"].append(t4 - t3)
    rec["optimizer"].append(t5 - t4)
    rec["iter"].append(t5 - (t0 if prev is None else prev))
    prev = t5
    if LOG:
        loss_value = loss.item()
        strobe.log("loss", loss_value, step=i)
    if MODE == "end":
        rec["numbers"].append(strobe.step())
del it  # the workers stop
site = sys.modules.get("sitecustomize")
rec.update(pid=os.getpid(), loss=loss_value, user_site_env=os.environ.get("USER_SITE_RAN"),
           sitecustomize=getattr(site, "__file__", None))
with open(out_path, "w") as f:
    json.dump(rec, f)
print("trained", K, "steps")
'''

NO_TORCH = r'''
import json, os, sys
total = sum(i * i for i in range(100000))
with open(os.environ["OUT"], "w") as f:
    json.dump({"modules": sorted(sys.modules), "shm": os.environ.get("STROBE_SHM"), "total": total}, f)
print("no torch here", total)
'''

script = os.path.join(TMP, "train.py")
with open(script, "w") as f:
    f.write(TRAIN)
no_torch = os.path.join(TMP, "no_torch.py")
with open(no_torch, "w") as f:
    f.write(NO_TORCH)

base_env = dict(os.environ, K=str(K), OMP_NUM_THREADS="1")
base_env.pop("STROBE_SHM", None)
base_env.pop("STROBE_FRAMEWORK", None)


def train(tag, opts=(), pythonpath=None, cmd=None, **extra):
    """Run the training (or cmd) under strobe; (CompletedProcess, truth, show)."""
    db = store_path(f"{tag}.db")
    out = store_path(f"{tag}.json")
    env = dict(base_env, OUT=out, **extra)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = run(db, *(cmd or [PYTHON, script]), opts=opts, env=env, timeout=120)
    truth = None
    if os.path.exists(out):
        with open(out) as f:
            truth = json.load(f)
    r = show(db) if p.returncode == 0 else None
    return p, truth, r


def phase_checks(tag, truth, r):
    """Steps and phases against the script's own measurements."""
    steps, phases = r["steps"] or {}, r["phases"] or {}
    total = sum(truth["iter"])
    tol = TOL * total
    names = ("data", "forward", "backward", "optimizer", "comm", "other")
    psum = sum(phases[n]["ns"] for n in names) if phases else None
    check(f"{tag}: the phases add up to the steps' total", psum is not None and
          steps.get("total_ns") is not None and abs(psum - steps["total_ns"]) <= 1,
          f"phases {psum} ns, steps {steps.get('total_ns')} ns")
    near(f"{tag}: total step time matches the script's own ({total / 1e6:.1f} ms)",
         steps.get("total_ns"), total, tol, "ns (2 % of the total)")
    for n in ("data", "forward", "backward", "optimizer"):
        want = sum(truth[n])
        near(f"{tag}: {n} time matches the script's ({want / 1e6:.1f} ms)",
             phases.get(n, {}).get("ns"), want, tol, "ns (2 % of the total step time)")
    check(f"{tag}: no comm without torch.distributed", phases.get("comm", {}).get("ns") == 0
          and phases.get("comm_all_threads_ns") == 0, phases.get("comm"))


# ---- 1: zero-code capture, checked against the script's clock --------------
p, truth, r = train("auto")
check("auto: training finished", p.returncode == 0 and "trained" in p.stdout and truth,
      p.stderr[-800:])
check("auto: the capture says nothing on stderr", p.stderr.strip() == "", p.stderr[-800:])
if r and truth:
    steps = r["steps"] or {}
    check("auto: exactly K steps", steps.get("count") == K, f"got {steps.get('count')}, want {K}")
    check("auto: the steps are the training process's", steps.get("pid") == truth["pid"],
          f"{steps.get('pid')} vs {truth['pid']}")
    check("auto: one process with steps", len(r["ranks"]) == 1, r["ranks"])
    procs = {q["pid"]: q for q in r["processes"]}
    main = procs.get(truth["pid"], {})
    check("auto: the trainer's role is main", main.get("role") == "main", main)
    workers = [q for q in r["processes"] if q["role"] == "dataloader"]
    check("auto: two data-loader workers with worker_id 0 and 1",
          sorted(q["worker_id"] for q in workers) == [0, 1], r["processes"])
    check("auto: the workers' parent is the trainer",
          len(workers) == 2 and all(q["ppid"] == truth["pid"] for q in workers),
          [(q["pid"], q["ppid"]) for q in workers])
    check("auto: workers counted, busy for their batches",
          r["workers"]["count"] == 2 and r["workers"]["busy_ns"] > 0.07e9 * K, r["workers"])
    phase_checks("auto", truth, r)
    check("auto: no event dropped", r["dropped_events"] == 0 and r["invalid_events"] == 0,
          f"dropped {r['dropped_events']}, invalid {r['invalid_events']}")

# ---- 2: strobe.step() at the top of each iteration ------------------------
p, truth, r = train("top", MODE="top")
check("step() at the top: training finished", p.returncode == 0 and truth, p.stderr[-800:])
if r and truth:
    check("step() at the top: exactly K steps", (r["steps"] or {}).get("count") == K,
          f"got {(r['steps'] or {}).get('count')}, want {K}")
    phase_checks("step() at the top", truth, r)
    check("step() at the top: it numbers the steps 1..K", truth["numbers"] == list(range(1, K + 1)),
          truth["numbers"][:5])

# ---- 3: strobe.step() at the end of each iteration, and strobe.log() -------
p, truth, r = train("end", MODE="end", LOG="1")
check("step() at the end: training finished", p.returncode == 0 and truth, p.stderr[-800:])
if r and truth:
    check("step() at the end: exactly K steps", (r["steps"] or {}).get("count") == K,
          f"got {(r['steps'] or {}).get('count')}, want {K}")
    phase_checks("step() at the end", truth, r)
    # the script's numbers, as without a recorder: the first call begins step 1
    # (iteration 1 was counted automatically before it took over)
    check("step() at the end: it numbers the steps 1..K",
          truth["numbers"] == list(range(1, K + 1)), truth["numbers"][:5])
    check("strobe.log: the last value is exact in app", r["app"].get("loss") == truth["loss"],
          f"app {r['app']}, script's last loss {truth['loss']!r}")
    loss_series = points(store_path("end.db"), "app.loss")
    check("strobe.log: one point per call", len(loss_series.get("app.loss", [])) == K,
          {k: len(v) for k, v in loss_series.items()})

# ---- 4: --no-framework ----------------------------------------------------
p, truth, r = train("noframe", opts=("--no-framework",))
check("--no-framework: training finished", p.returncode == 0 and truth and "trained" in p.stdout,
      p.stderr[-800:])
if r:
    check("--no-framework: no steps, no phases", r["steps"] is None and r["phases"] is None
          and r["ranks"] == [], (r["steps"], r["phases"]))
    check("--no-framework: no events at all (no data, forward, ... spans)", r["events"] == 0
          and r["workers"]["count"] == 0, f"events {r['events']}, workers {r['workers']}")
    check("--no-framework: the processes are still sampled",
          r["metrics"].get("proc.count", {}).get("max", 0) >= 3, r["metrics"].get("proc.count"))

# ---- 5: the user's own sitecustomize still runs -----------------------------
site_dir = os.path.join(TMP, "usersite")
os.makedirs(site_dir)
marker = os.path.join(TMP, "usersite.marker")
with open(os.path.join(site_dir, "sitecustomize.py"), "w") as f:
    f.write(f"import os\nos.environ['USER_SITE_RAN'] = '1'\n"
            f"open({marker!r}, 'a').write(str(os.getpid()) + '\\n')\n"
            f"print('user sitecustomize ran', flush=True)\n")
p, truth, r = train("usersite", pythonpath=site_dir)
check("user sitecustomize: training finished", p.returncode == 0 and truth, p.stderr[-800:])
if truth:
    ran_in = open(marker).read().split() if os.path.exists(marker) else []
    check("user sitecustomize: it ran, once, in the trainer",
          ran_in.count(str(truth["pid"])) == 1 and truth["user_site_env"] == "1",
          f"ran in {ran_in}, trainer {truth['pid']}, env {truth['user_site_env']}")
    check("user sitecustomize: its output passes through", p.stdout.startswith("user sitecustomize ran\n"),
          p.stdout[:200])
    check("user sitecustomize: it is sys.modules['sitecustomize'], as without strobe",
          truth["sitecustomize"] == os.path.join(site_dir, "sitecustomize.py"), truth["sitecustomize"])
if r:
    # strobe asks the interpreter for its version with the job's environment:
    # what the user's sitecustomize prints must not be taken for it
    check("user sitecustomize: the Python version in the catalog is a version",
          (r["python_version"] or "").startswith("3.") and (r["torch_version"] or "")[:2] in ("1.", "2."),
          f"python_version {r['python_version']!r}, torch_version {r['torch_version']!r}")
    check("user sitecustomize: still exactly K steps", (r["steps"] or {}).get("count") == K,
          f"got {(r['steps'] or {}).get('count')}")
    check("user sitecustomize: still two workers", r["workers"]["count"] == 2, r["workers"])

# ---- 6: a user sitecustomize that raises -----------------------------------
bad_dir = os.path.join(TMP, "badsite")
os.makedirs(bad_dir)
with open(os.path.join(bad_dir, "sitecustomize.py"), "w") as f:
    f.write("raise RuntimeError('user sitecustomize is broken')\n")
plain = subprocess.run([PYTHON, "-c", "import sys; print('sitecustomize' in sys.modules)"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(base_env, PYTHONPATH=bad_dir))
p, truth, r = train("badsite", pythonpath=bad_dir)
error_line = "Error in sitecustomize; set PYTHONVERBOSE for traceback:"
check("raising sitecustomize: without strobe, Python reports it and goes on",
      error_line in plain.stderr and plain.stdout.strip() == "False", plain.stderr)
check("raising sitecustomize: the training still runs to the end",
      p.returncode == 0 and truth and "trained" in p.stdout, p.stderr[-800:])
check("raising sitecustomize: Python's own error lines, the same as without strobe",
      p.stderr.startswith(plain.stderr), f"under strobe {p.stderr[:300]!r}, plain {plain.stderr!r}")
if truth:
    check("raising sitecustomize: no half-run module left in sys.modules, as without strobe",
          truth["sitecustomize"] is None, truth["sitecustomize"])
if r:
    check("raising sitecustomize: the capture was installed before it ran: K steps",
          (r["steps"] or {}).get("count") == K, f"got {(r['steps'] or {}).get('count')}")

# ---- 7: a script that never imports torch -----------------------------------
p, truth, r = train("notorch", cmd=[PYTHON, no_torch])
check("no torch: the script completes normally", p.returncode == 0 and "no torch here" in p.stdout
      and p.stderr == "", p.stderr[-500:])
if truth:
    mods = truth["modules"]
    check("no torch: it ran under the recorder", bool(truth["shm"]), truth["shm"])
    check("no torch: torch was never imported", not any(m == "torch" or m.startswith("torch.")
                                                           for m in mods), [m for m in mods if "torch" in m])
    check("no torch: strobe was never imported", not any(m == "strobe" or m.startswith("strobe.")
                                                            for m in mods), [m for m in mods if "strobe" in m])
if r:
    check("no torch: no events", r["events"] == 0 and r["steps"] is None, r["events"])

done()
