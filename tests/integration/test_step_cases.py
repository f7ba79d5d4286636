#!/usr/bin/python3
"""The automatic step count and the phases on training loops that are not the
textbook one, each against the script's own count and clock (real torch):

- an optimizer subclass whose step() calls super().step() (torch 1.13 wraps
  both classes' step: one optimizer step must stay one step);
- an optimizer made anew for each phase of training, dropped or kept alive;
- a GAN whose generator steps twice per discriminator step (not a takeover);
- ranks started with fork after the parent stepped, and children forked off
  for checkpoints (a forked child starts with no step in progress);
- data-loader workers of every epoch when a num_workers=0 loader (validation)
  ran in between (a forked worker asks again who it is);
- a dataset whose transform is an nn.Module: data, not forward;
- `for x in loader:` with strobe.step() at the top and at the end: K steps,
  numbered 1..K as without a recorder, and stored as steps 1..K.
"""
import json
import os

from strobetest import *

TMP_DIR = os.path.join(TMP, "strobe-step-cases")
os.makedirs(TMP_DIR, exist_ok=True)

PRELUDE = r'''
import json, os, sys, time
import torch
torch.set_num_threads(1)
def batch_step(m, opt, n=4):
    opt.zero_grad()
    m(torch.randn(n, 8)).sum().backward()
    opt.step()
'''

CASES = {}

CASES["subclass"] = r'''
class MySGD(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)
probe = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)  # SGD.step wrapped too
m = torch.nn.Linear(8, 1)
opt = MySGD(m.parameters(), lr=0.1)
for i in range(12):
    batch_step(m, opt)
print(json.dumps({"steps": 12, "optimizer_steps": 12}))
'''

CASES["remade_dropped"] = r'''
m = torch.nn.Linear(8, 1)
n = 0
for phase in range(3):
    opt = torch.optim.SGD(m.parameters(), lr=0.1)  # the last phase's one is dropped here
    for i in range(10):
        batch_step(m, opt)
        n += 1
print(json.dumps({"steps": n}))
'''

CASES["remade_kept"] = r'''
m = torch.nn.Linear(8, 1)
kept, n = [], 0
for phase in range(3):
    kept.append(torch.optim.SGD(m.parameters(), lr=0.1))  # every one stays alive
    for i in range(10):
        batch_step(m, kept[-1])
        n += 1
print(json.dumps({"steps": n}))
'''

CASES["gan_two_g_steps"] = r'''
d, g = torch.nn.Linear(8, 1), torch.nn.Linear(8, 8)
od = torch.optim.SGD(d.parameters(), lr=0.1)
og = torch.optim.SGD(g.parameters(), lr=0.1)
for i in range(10):
    batch_step(d, od)
    for k in range(2):  # the generator steps twice per step
        og.zero_grad(); d(g(torch.randn(4, 8))).sum().backward(); og.step()
print(json.dumps({"steps": 10}))
'''

CASES["fork_ranks"] = r'''
import torch.multiprocessing as mp
def train(rank):
    m = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for i in range(10):
        batch_step(m, opt)
if __name__ == "__main__":
    m0 = torch.nn.Linear(8, 1)
    o0 = torch.optim.SGD(m0.parameters(), lr=0.1)
    batch_step(m0, o0)  # the parent steps once, then forks its ranks
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=train, args=(r,)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print(json.dumps({"parent": os.getpid(), "ranks": [p.pid for p in procs],
                      "codes": [p.exitcode for p in procs]}))
'''

CASES["fork_checkpoints"] = r'''
import strobe
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
kids = []
for i in range(9):
    strobe.step()
    batch_step(m, opt)
    if i % 3 == 2:
        pid = os.fork()
        if pid == 0:  # an asynchronous checkpoint
            torch.save(m.state_dict(), os.path.join(os.environ["OUTDIR"], f"ck{i}.pt"))
            sys.exit(0)  # the atexit handlers it inherited run
        kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print(json.dumps({"steps": 9, "parent": os.getpid(), "kids": kids}))
'''

CASES["workers_each_epoch"] = r'''
from torch.utils.data import DataLoader, Dataset
class D(Dataset):
    def __len__(self): return 16
    def __getitem__(self, i): time.sleep(0.01); return torch.randn(8)
train = DataLoader(D(), batch_size=4, num_workers=2)
val = DataLoader(D(), batch_size=8, num_workers=0)
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for epoch in range(3):
    for x in train:
        opt.zero_grad(); m(x).sum().backward(); opt.step()
    with torch.no_grad():
        for x in val:
            m(x)
print(json.dumps({"workers": 6}))
'''

CASES["module_transform"] = r'''
from torch.utils.data import DataLoader, Dataset
class Aug(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.004)
        return x * 2
class D(Dataset):
    aug = Aug()
    def __len__(self): return 80
    def __getitem__(self, i): return self.aug(torch.randn(8))
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
it = iter(DataLoader(D(), batch_size=4))
data = fwd = 0
steps = 0
while True:
    a = time.monotonic_ns()
    try:
        x = next(it)
    except StopIteration:
        break
    b = time.monotonic_ns()
    y = m(x)
    c = time.monotonic_ns()
    opt.zero_grad(); y.sum().backward(); opt.step()
    data += b - a
    fwd += c - b
    steps += 1
print(json.dumps({"steps": steps, "data_ns": data, "forward_ns": fwd}))
'''

LOOP = r'''
import strobe
from torch.utils.data import DataLoader, TensorDataset
m = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
numbers = []
for (x,) in DataLoader(TensorDataset(torch.randn(40, 8)), batch_size=4):
    if os.environ["WHERE"] == "top":
        numbers.append(strobe.step())
    opt.zero_grad(); m(x).sum().backward(); opt.step()
    if os.environ["WHERE"] == "end":
        numbers.append(strobe.step())
print(json.dumps({"steps": 10, "numbers": numbers}))
'''
CASES["loop_top"] = LOOP
CASES["loop_end"] = LOOP


def run_case(name, framework=True, **env):
    path = os.path.join(TMP_DIR, name + ".py")
    with open(path, "w") as f:
        f.write(PRELUDE + CASES[name])
    store = os.path.join(TMP_DIR, name + (".db" if framework else "-plain.db"))
    if os.path.exists(store):
        os.remove(store)
    e = dict(example_env(), OUTDIR=TMP_DIR, **env)
    opts = ["--no-report"] + ([] if framework else ["--no-framework"])
    p = run(store, PYTHON, path, opts=opts, env=e, timeout=120)
    ok = p.returncode == 0
    check(f"{name}: the script finished", ok, p.stderr[-600:])
    if not ok:
        return None, None
    truth = json.loads(p.stdout.strip().splitlines()[-1])
    return truth, show(store)


def stored_step_numbers(name):
    """The step number of each stored step span, in time order (strobe trace)."""
    out = os.path.join(TMP_DIR, name + ".trace.json")
    p = strobe("trace", "-o", out, "last", store=os.path.join(TMP_DIR, name + ".db"))
    if p.returncode != 0:
        return p.stderr
    with open(out) as f:
        events = json.load(f)["traceEvents"]
    spans = sorted((e["ts"], e["args"]["step"]) for e in events if e.get("name") == "step")
    return [n for _, n in spans]


def step_count(r):
    return (r.get("steps") or {}).get("count")


def steps_of(r, pid):
    return next((x["count"] for x in r.get("ranks") or [] if x["pid"] == pid), 0)


truth, r = run_case("subclass")
if r:
    check("subclass calling super().step(): one step per optimizer step",
          step_count(r) == truth["steps"], f"{step_count(r)} steps, the script made {truth['steps']}")

for name, what in (("remade_dropped", "dropped"), ("remade_kept", "kept alive")):
    truth, r = run_case(name)
    if r:
        check(f"an optimizer made anew for each phase ({what}): every step counted",
              step_count(r) == truth["steps"],
              f"{step_count(r)} steps, the script made {truth['steps']}")

truth, r = run_case("gan_two_g_steps")
if r:
    check("a generator stepping twice per step does not take the count over",
          step_count(r) == truth["steps"], f"{step_count(r)} steps, want {truth['steps']}")

truth, r = run_case("fork_ranks")
if r:
    got = {pid: steps_of(r, pid) for pid in truth["ranks"]}
    check("ranks forked after the parent stepped: each counts its own 10 steps",
          truth["codes"] == [0, 0] and all(n == 10 for n in got.values()), got)
    check("ranks forked after the parent stepped: the parent's one step stays its own",
          steps_of(r, truth["parent"]) <= 1, steps_of(r, truth["parent"]))

truth, r = run_case("fork_checkpoints")
if r:
    ghosts = {pid: steps_of(r, pid) for pid in truth["kids"] if steps_of(r, pid)}
    check("children forked for checkpoints have no steps", not ghosts, ghosts)
    check("children forked for checkpoints: the trainer's 9 steps",
          steps_of(r, truth["parent"]) == 9, steps_of(r, truth["parent"]))

truth, r = run_case("workers_each_epoch")
if r:
    workers = (r.get("workers") or {}).get("count")
    check("data-loader workers of every epoch, with a num_workers=0 loader between",
          workers == truth["workers"], f"{workers} workers, want {truth['workers']}")

truth, r = run_case("module_transform")
if r:
    phases = r.get("phases") or {}
    data_ns = (phases.get("data") or {}).get("ns", 0)
    fwd_ns = (phases.get("forward") or {}).get("ns", 0)
    # the step tiles from the first fetch to the last optimizer step; the
    # script's own data time excludes the last (failed) fetch, 2 % of slack
    near("a module in the dataset's transform: the data phase is the script's fetch time",
         data_ns, truth["data_ns"], 0.05 * truth["data_ns"] + 2e6)
    check("a module in the dataset's transform: not forward",
          fwd_ns < truth["forward_ns"] * 1.5 + 5e6, f"forward {fwd_ns} ns, script {truth['forward_ns']}")

for where in ("top", "end"):
    plain, _ = run_case("loop_" + where, framework=False, WHERE=where)
    truth, r = run_case("loop_" + where, WHERE=where)
    if r and plain:
        check(f"for x in loader with strobe.step() at the {where}: exactly K steps",
              step_count(r) == truth["steps"], f"{step_count(r)} steps, want {truth['steps']}")
        check(f"strobe.step() at the {where}: the same numbers as without the capture (1..K)",
              truth["numbers"] == plain["numbers"] == list(range(1, truth["steps"] + 1)),
              f"capture {truth['numbers']}, without {plain['numbers']}")
        recorded = stored_step_numbers("loop_" + where)
        check(f"strobe.step() at the {where}: the stored steps are 1..K, each once",
              recorded == list(range(1, truth["steps"] + 1)), recorded)

done()
