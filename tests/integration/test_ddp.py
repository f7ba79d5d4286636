#!/usr/bin/python3
"""Two DistributedDataParallel ranks (gloo, CPU) under one `strobe run`.

Launched three ways: a launcher script that starts the two rank processes as
torchrun would (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT in their
environment, init_method env://; Debian's torchrun fails on Python 3.11 with
torch 1.13, so a script does it), torch.multiprocessing.spawn (the ranks
learn who they are from init_process_group only), and torchrun itself on
torch 2 or later (skipped, and said so, on torch 1.x).

Each rank trains K steps, all-reduces a metric itself every 5 steps (between
backward and the optimizer step, so inside a step) and meets the other at a
barrier at the end; it measures its own step time and the time inside its
explicit all_reduce calls with time.monotonic_ns (strobe's clock). With
STROBE_DDP_HOOK=0 strobe registers no communication hook, so the comm phase
is the explicit all_reduce alone and can be checked against the script's
clock; the hook must not change what training computes either, also when the
script registers DDP's built-in ALLREDUCE hook itself.
"""
import json
import os
import socket
import subprocess

from strobetest import *

K = 20
TOL = 0.02  # of the total step time

TRAIN = r'''
import hashlib, json, os, sys, time
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

mono = time.monotonic_ns
K = int(os.environ["K"])


def train(rank=None, world_size=None, port=None):
    torch.set_num_threads(1)
    if rank is None:  # a launcher or torchrun set the environment
        dist.init_process_group("gloo", init_method="env://")
    else:  # torch.multiprocessing.spawn: nothing in the environment
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world_size)
    rank = dist.get_rank()
    torch.manual_seed(1234 + rank)  # DDP broadcasts rank 0's initial weights
    model = DDP(nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10)))
    if os.environ.get("DDP_BUILTIN_HOOK") == "1":  # the script's own choice of hook
        model._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(99 + rank)
    iters, ar_ns, metrics = [], 0, []
    prev = None
    for i in range(K):
        x = torch.randn(64, 128, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        t0 = mono()
        loss = crit(model(x), y)
        opt.zero_grad()
        loss.backward()
        if i % 5 == 4:  # the metric, summed over the ranks
            m = loss.detach().reshape(1).clone()
            local = m.item()
            a = mono()
            dist.all_reduce(m)
            ar_ns += mono() - a
            metrics.append((local, m.item()))
        opt.step()
        t1 = mono()
        iters.append(t1 - (t0 if prev is None else prev))
        prev = t1
    b = mono()
    dist.barrier()
    barrier_ns = mono() - b
    h = hashlib.sha256()
    for p in model.module.parameters():
        h.update(p.detach().numpy().tobytes())
    out = dict(pid=os.getpid(), ppid=os.getppid(), rank=rank, world_size=dist.get_world_size(),
               iters=iters, all_reduce_ns=ar_ns, barrier_ns=barrier_ns, metrics=metrics, params_sha=h.hexdigest())
    with open(os.path.join(os.environ["OUTDIR"], f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
'''

LAUNCH = r'''
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
port = sys.argv[1]
procs = []
for r in range(2):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(r),
               WORLD_SIZE="2", LOCAL_RANK=str(r))
    procs.append(subprocess.Popen(["/usr/bin/python3", os.path.join(here, "ddp_train.py")], env=env))
rc = [p.wait() for p in procs]
print("launcher", os.getpid(), "ranks exited", rc)
sys.exit(max(rc))
'''

SPAWN = r'''
import os, sys
import torch.multiprocessing as mp
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_train

if __name__ == "__main__":
    mp.spawn(ddp_train.train, args=(2, int(sys.argv[1])), nprocs=2, join=True)
    print("spawner", os.getpid(), "done")
'''

for name, text in (("ddp_train.py", TRAIN), ("launch.py", LAUNCH), ("spawn_ranks.py", SPAWN)):
    with open(os.path.join(TMP, name), "w") as f:
        f.write(text)

base_env = dict(os.environ, K=str(K), OMP_NUM_THREADS="1")
for k in ("STROBE_SHM", "STROBE_FRAMEWORK", "STROBE_DDP_HOOK", "RANK", "WORLD_SIZE", "LOCAL_RANK",
          "MASTER_ADDR", "MASTER_PORT"):
    base_env.pop(k, None)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(tag, cmd, **extra):
    """Run cmd (formatted with a free port) under strobe; (process, {rank: truth}, show)."""
    outdir = os.path.join(TMP, tag)
    os.makedirs(outdir)
    db = store_path(f"{tag}.db")
    env = dict(base_env, OUTDIR=outdir, **extra)
    p = run(db, *[c.format(port=free_port(), tmp=TMP) for c in cmd], env=env, timeout=180)
    truth = {}
    for r in (0, 1):
        path = os.path.join(outdir, f"rank{r}.json")
        if os.path.exists(path):
            with open(path) as f:
                truth[r] = json.load(f)
    r = show(db) if p.returncode == 0 else None
    return p, truth, r


def rank_checks(tag, p, truth, r, local_rank=True):
    """Both ranks recorded, each with K steps and the right identity."""
    check(f"{tag}: both ranks trained", p.returncode == 0 and sorted(truth) == [0, 1],
          f"rc {p.returncode}, ranks {sorted(truth)}, {p.stderr[-800:]}")
    check(f"{tag}: every part of the capture installed (no 'strobe:' note)",
          "strobe:" not in p.stderr, p.stderr[-800:])
    if not r or sorted(truth) != [0, 1]:
        return {}
    ranks = {g["rank"]: g for g in r["ranks"]}
    check(f"{tag}: 'ranks' has rank 0 and rank 1 and nothing else",
          sorted(ranks, key=str) == [0, 1] and len(r["ranks"]) == 2,
          [(g["pid"], g["rank"], g["count"]) for g in r["ranks"]])
    procs = {q["pid"]: q for q in r["processes"]}
    for n in (0, 1):
        g, t = ranks.get(n, {}), truth[n]
        check(f"{tag}: rank {n} has exactly K steps", g.get("count") == K,
              f"got {g.get('count')}, want {K}")
        check(f"{tag}: rank {n}'s steps are its process's", g.get("pid") == t["pid"],
              f"{g.get('pid')} vs {t['pid']}")
        q = procs.get(t["pid"], {})
        want = {"role": "rank", "rank": n, "world_size": 2}
        if local_rank:
            want["local_rank"] = n
        check(f"{tag}: rank {n}'s process is {want}", all(q.get(k) == v for k, v in want.items()), q)
        check(f"{tag}: rank {n}'s parent is the launching process", q.get("ppid") == t["ppid"],
              f"{q.get('ppid')} vs {t['ppid']}")
        ph = g.get("phases") or {}
        psum = sum(ph[x]["ns"] for x in ("data", "forward", "backward", "optimizer", "comm", "other")) \
            if ph else None
        check(f"{tag}: rank {n}'s phases add up to its step time",
              psum is not None and abs(psum - g["total_ns"]) <= 1, f"{psum} vs {g.get('total_ns')}")
        total = sum(t["iters"])
        near(f"{tag}: rank {n}'s step time matches its own ({total / 1e6:.0f} ms)", g.get("total_ns"),
             total, TOL * total, "ns")
    check(f"{tag}: no event dropped", r["dropped_events"] == 0 and r["invalid_events"] == 0,
          f"dropped {r['dropped_events']}, invalid {r['invalid_events']}")
    check(f"{tag}: the ranks end with the same weights (DDP kept them in sync)",
          truth[0]["params_sha"] == truth[1]["params_sha"])
    sums = [a + b for (a, _), (b, _) in zip(truth[0]["metrics"], truth[1]["metrics"])]
    got = [m for _, m in truth[0]["metrics"]] + [m for _, m in truth[1]["metrics"]]
    check(f"{tag}: the explicit all_reduce summed the metric over the ranks",
          len(sums) == K // 5 and all(abs(g - s) <= 1e-5 * abs(s) for g, s in zip(got, sums + sums)),
          f"{got} vs {sums}")
    return ranks


def hook_check(tag, ranks, truth):
    """DDP's buckets were recorded: comm spans beyond the script's own
    collectives, at least 100 us per step (K buckets, each from launch to
    completion). Without the hook only the script's calls are there."""
    for n in sorted(ranks):
        ph, t = ranks[n]["phases"], truth[n]
        own = t["all_reduce_ns"] + t["barrier_ns"]
        check(f"{tag}: rank {n} records DDP's bucket all-reduces (comm on all threads beyond its own calls)",
              ph["comm_all_threads_ns"] - own >= K * 100e3,
              f"comm on all threads {ph['comm_all_threads_ns'] / 1e6:.2f} ms, the script's all_reduce "
              f"and barrier {own / 1e6:.2f} ms")


# ---- 1: a launcher starting the ranks as torchrun would, DDP hook on --------
p, truth, r = launch("launcher", [PYTHON, "{tmp}/launch.py", "{port}"])
ranks = rank_checks("launcher", p, truth, r)
hook_check("launcher", ranks, truth)
for n in sorted(ranks):
    ph = ranks[n]["phases"]
    check(f"launcher: rank {n}'s comm phase holds at least its explicit all_reduce",
          ph["comm"]["ns"] >= 0.9 * truth[n]["all_reduce_ns"] > 0,
          f"comm {ph['comm']['ns']} ns, explicit all_reduce {truth[n]['all_reduce_ns']} ns")

# ---- 2: the same without strobe's DDP hook: comm is the explicit all_reduce --
p, truth_nohook, r = launch("nohook", [PYTHON, "{tmp}/launch.py", "{port}"], STROBE_DDP_HOOK="0")
ranks = rank_checks("no hook", p, truth_nohook, r)
for n in sorted(ranks):
    ph, t = ranks[n]["phases"], truth_nohook[n]
    near(f"no hook: rank {n}'s comm phase is its explicit all_reduce ({t['all_reduce_ns'] / 1e6:.1f} ms)",
         ph["comm"]["ns"], t["all_reduce_ns"], TOL * sum(t["iters"]), "ns (2 % of its step time)")
if truth and sorted(truth_nohook) == sorted(truth) == [0, 1]:
    # two ranks: a + b is exact either way, and / 2 is * 0.5
    check("strobe's DDP hook does not change what training computes (bit-identical weights)",
          truth[0]["params_sha"] == truth_nohook[0]["params_sha"])

# ---- 3: the script registers DDP's built-in ALLREDUCE hook itself -------------
# (strobe's hook stays, and runs the built-in's Python twin inside it)
p, truth, r = launch("builtin", [PYTHON, "{tmp}/launch.py", "{port}"], DDP_BUILTIN_HOOK="1")
ranks = rank_checks("built-in hook", p, truth, r)
hook_check("built-in hook", ranks, truth)
if truth and sorted(truth_nohook) == sorted(truth) == [0, 1]:
    check("built-in hook: training computes what it computes without strobe's hook",
          truth[0]["params_sha"] == truth_nohook[0]["params_sha"])

# ---- 4: torch.multiprocessing.spawn -----------------------------------------
p, truth, r = launch("spawn", [PYTHON, "{tmp}/spawn_ranks.py", "{port}"])
ranks = rank_checks("mp.spawn", p, truth, r, local_rank=False)
hook_check("mp.spawn", ranks, truth)

# ---- 5: torchrun, where it works (torch 2 and later) --------------------------
v = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                   text=True, timeout=60)
version = v.stdout.strip()
try:
    major = int(version.split(".")[0])
except ValueError:
    major = None
if major is None or major < 2:
    skip("torchrun: two ranks recorded",
         f"torch {version or '?'} < 2.0: Debian's torchrun fails on Python 3.11 with torch 1.x")
else:
    p, truth, r = launch("torchrun", [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node=2",
                                      "--master_addr=127.0.0.1", "--master_port={port}",
                                      "{tmp}/ddp_train.py"])
    ranks = rank_checks("torchrun", p, truth, r)
    hook_check("torchrun", ranks, truth)

done()
