#!/usr/bin/python3
"""Straggler names the slow rank of a real two-rank DDP job (gloo, one
thread per rank) and the right one of its three causes:

  sleep   rank 1 sleeps 40 ms before each forward: it is off the CPU
          (a 4-second job, shorter than two rule windows: judged at its
          end, live and by `strobe rules`)
  work    rank 1's batch is twice rank 0's: more work, more CPU time a step
  share   the ranks do the same work, each pinned to a core of its own,
          and two busy loops outside the job are pinned to rank 1's core:
          less of a core, run-queue delay

The workload is this file run with --rank-job (torch.multiprocessing,
fork): each rank reads its own clocks over its training loop (wall time,
time.process_time() for the CPU time of all its threads, the sum of its
threads' /proc/self/task/TID/schedstat run-queue waits, the time it slept)
and prints them, per step. Those are the independent readings the numbers
in the finding are checked against.

The work and share jobs run with --rule-interval 60s, longer than the job,
so the rule's verdict covers every step, as the ranks' own clocks do. A
case whose precondition the host's load broke (another process took rank
0's core, the busy loop did not slow rank 1) is skipped, saying what the
ranks' own clocks showed."""
import json
import os
import re
import subprocess
import sys
import time


def rank_waits():
    """The run-queue wait of this process's threads (proc(5) schedstat, the
    second field), in ns."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended meanwhile
    return total


def train(rank, mode, seconds, cores):
    """One rank: a small convolutional network, DDP over gloo."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    if mode == "share":  # gloo's threads, started later, inherit it
        os.sched_setaffinity(0, {cores[rank]})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=2)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(64, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = 64 if mode == "work" and rank == 1 else 32
    g = torch.Generator().manual_seed(rank)
    stop = torch.zeros(1)
    steps, slept, start = 0, 0.0, None
    while True:
        images = torch.randn(batch, 3, 32, 32, generator=g)
        labels = torch.randint(0, 10, (batch,), generator=g)
        if mode == "sleep" and rank == 1:
            t = time.monotonic()
            time.sleep(0.04)
            slept += time.monotonic() - t
        opt.zero_grad()
        F.cross_entropy(model(images), labels).backward()  # the ranks meet in the all-reduce
        opt.step()
        steps += 1
        if start is None:  # strobe's steps run from one optimizer step to the next
            start = (time.monotonic(), time.process_time(), rank_waits(), slept)
        if steps % 10 == 0:  # rank 0's clock decides, for both
            stop.fill_(1.0 if rank == 0 and time.monotonic() - start[0] >= seconds else 0.0)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    n = steps - 1
    per_step = lambda a, b: (a - b) / n * 1e3
    clock = {"rank": rank, "pid": os.getpid(), "steps": n,
             "step_ms": per_step(time.monotonic(), start[0]),
             "cpu_ms": per_step(time.process_time(), start[1]),
             "wait_ms": (rank_waits() - start[2]) / n / 1e6,
             "sleep_ms": per_step(slept, start[3])}
    sys.stdout.write("rank-clock " + json.dumps(clock) + "\n")
    sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


def rank_job(mode, seconds, cores):
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    mp.start_processes(train, args=(mode, seconds, cores), nprocs=2, join=True,
                       start_method="fork")


if __name__ == "__main__" and sys.argv[1:2] == ["--rank-job"]:
    rank_job(sys.argv[2], float(sys.argv[3]), [int(c) for c in sys.argv[4].split(",")])
    sys.exit(0)

from strobetest import *  # noqa: E402 (the rank job above needs none of it)


def clocks_of(stdout):
    """{rank: its own clocks per step}, from the ranks' closing lines."""
    return {c["rank"]: c for c in (json.loads(m) for m in re.findall(r"^rank-clock (.*)$", stdout, re.M))}


def ms_in(text, pattern):
    """The numbers pattern's groups capture in text (floats), or None."""
    m = re.search(pattern, text)
    return [float(x) for x in m.groups()] if m else None


def record(case, seconds, *opts):
    """Run the rank job under strobe; its store, stdout and the ranks' clocks."""
    db = store_path(f"straggler-{case}.db")
    cores = sorted(os.sched_getaffinity(0))[:2]
    p = subprocess.run([STROBE, "run", "--quiet", f"--store={db}", *opts, "--", PYTHON,
                        os.path.abspath(__file__), "--rank-job", case, str(seconds),
                        ",".join(map(str, cores))],
                       capture_output=True, text=True, timeout=240, env=example_env())
    clocks = clocks_of(p.stdout)
    ok = check(f"{case}: the job ran to the end, both ranks read their clocks",
               p.returncode == 0 and sorted(clocks) == [0, 1],
               f"rc {p.returncode}, clocks {clocks}: {p.stderr[-600:]}")
    if ok:
        for r in (0, 1):
            print(f"# {case}: rank {r}'s own clocks per step: {clocks[r]}")
    return db, clocks if ok else None


def findings(db, live):
    """Straggler's findings, as recorded live (show) or re-evaluated (rules)."""
    if live:
        return [f for f in show(db).get("findings", []) if f["rule"] == "Straggler"]
    p = strobe("rules", "--json", "last", store=db)
    return [f for f in (json.loads(p.stdout).get("findings", []) if p.returncode == 0 else [])
            if f["rule"] == "Straggler"]


def names_rank_1(case, db, clocks):
    """The finding, live and offline, names rank 1 and its pid; its evidence."""
    live, offline = findings(db, True), findings(db, False)
    check(f"{case}: Straggler fired live, on rank 1", [f["scope"] for f in live] == ["rank=1"],
          [(f["scope"], f["evidence"]) for f in live])
    check(f"{case}: strobe rules gives the same finding",
          [(f["scope"], f["evidence"]) for f in offline] == [(f["scope"], f["evidence"]) for f in live],
          f"offline {[(f['scope'], f['evidence']) for f in offline]}")
    if not live:
        return None
    ev = live[0]["evidence"]
    print(f"# {case}: {ev}")
    check(f"{case}: it names rank 1's pid", f"rank 1 (pid {clocks[1]['pid']})" in ev, ev)
    return ev


def near_ms(name, got, want, ev):
    """got (from the finding) within 15 % + 3 ms of want (the ranks' own clocks)."""
    check(name, got is not None and abs(got - want) <= 3 + 0.15 * want,
          f"finding {got} ms, the ranks' own clocks {want:.1f} ms: {ev}")


cores = sorted(os.sched_getaffinity(0))
if len(cores) < 2:
    skip("two ranks on cores of their own", f"needs two cores, this machine lends {len(cores)}")
    done()

# --- sleep: off the CPU, in a job shorter than two windows -------------------
db, clocks = record("sleep", 4)
if clocks:
    c0, c1 = clocks[0], clocks[1]
    # what the host did to the ranks, by their own schedstat: a run-queue
    # delay on rank 1 that rivals its sleep would make it a less-CPU case
    extra_wait = c1["wait_ms"] - c0["wait_ms"]
    if c1["sleep_ms"] < 30 or extra_wait > c1["sleep_ms"] / 2:
        skip("sleep: the cause off the CPU", f"rank 1 slept {c1['sleep_ms']:.1f} ms a step and "
             f"waited {extra_wait:.1f} ms more than rank 0 for a core (host load)")
    else:
        ev = names_rank_1("sleep", db, clocks)
        if ev:
            check("sleep: over the whole run (a job shorter than two windows)",
                  "over the whole run" in ev, ev)
            check("sleep: the cause is off the CPU", "it is off the CPU" in ev and
                  "less of a core" not in ev and "more work" not in ev, ev)
            got = ms_in(ev, r"off the CPU ([\d.]+) ms a step more .* of its [\d.]+ ms of work a "
                        r"step, ([\d.]+) ms on a CPU, ([\d.]+) ms waiting for one and [\d.]+ ms "
                        r"neither, against ([\d.]+), ([\d.]+) and [\d.]+ ms on the others")
            if check("sleep: the finding gives its numbers", got is not None, ev):
                d_off, cpu1, wait1, cpu0, wait0 = got
                near_ms("sleep: rank 1's CPU time a step against its own process_time", cpu1,
                        c1["cpu_ms"], ev)
                near_ms("sleep: rank 1's run-queue delay a step against its threads' own "
                        "schedstat", wait1, c1["wait_ms"], ev)
                near_ms("sleep: rank 0's CPU time a step against its own process_time", cpu0,
                        c0["cpu_ms"], ev)
                near_ms("sleep: rank 0's run-queue delay a step against its threads' own "
                        "schedstat", wait0, c0["wait_ms"], ev)
                # its own clock around time.sleep() also holds the wait for a core after
                # waking (and its other threads' waits are summed with the main one's):
                # the time off the CPU lies between its sleep less its waits and its sleep
                lo, hi = c1["sleep_ms"] - c1["wait_ms"], c1["sleep_ms"]
                check("sleep: its extra time off the CPU a step against its own sleep per step",
                      lo - 3 - 0.15 * hi <= d_off <= hi + 3 + 0.15 * hi,
                      f"finding {d_off} ms, its own sleep {hi:.1f} ms a step less its run-queue "
                      f"wait {c1['wait_ms']:.1f} ms: {ev}")

# --- work: twice the batch on rank 1 ------------------------------------------
db, clocks = record("work", 8, "--rule-interval", "60s")
if clocks:
    c0, c1 = clocks[0], clocks[1]
    extra_wait = c1["wait_ms"] - c0["wait_ms"]
    if c1["cpu_ms"] < 1.5 * c0["cpu_ms"] or extra_wait > (c1["cpu_ms"] - c0["cpu_ms"]) / 2:
        skip("work: the cause more work", f"rank 1's own CPU {c1['cpu_ms']:.1f} ms a step against "
             f"{c0['cpu_ms']:.1f}, {extra_wait:.1f} ms more run-queue wait (host load)")
    else:
        ev = names_rank_1("work", db, clocks)
        if ev:
            check("work: the cause is more work", "more CPU time per step than the others: more "
                  "work on it" in ev, ev)
            cpu = ms_in(ev, r"\(([\d.]+) ms of CPU time a step against ([\d.]+) ms\)")
            near_ms("work: rank 1's CPU time a step against its own process_time",
                    cpu and cpu[0], c1["cpu_ms"], ev)
            near_ms("work: rank 0's CPU time a step against its own process_time",
                    cpu and cpu[1], c0["cpu_ms"], ev)

# --- share: busy loops on rank 1's core --------------------------------------
# two busy loops: rank 1 gets about a third of its core, and stays the one
# that waits most should other work land on rank 0's core
hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
try:
    for hog in hogs:
        os.sched_setaffinity(hog.pid, {cores[1]})
    db, clocks = record("share", 8, "--rule-interval", "60s")
finally:
    for hog in hogs:
        hog.kill()
        hog.wait()
if clocks:
    c0, c1 = clocks[0], clocks[1]
    extra_wait = c1["wait_ms"] - c0["wait_ms"]
    # the same work (what sharing a core costs in caches aside), and the
    # core shared: rank 1 waits for it a good part of its compute
    if c1["cpu_ms"] > 1.25 * c0["cpu_ms"] or extra_wait < c1["cpu_ms"] / 2:
        skip("share: the cause run-queue delay", f"rank 1's own CPU {c1['cpu_ms']:.1f} ms a step "
             f"against {c0['cpu_ms']:.1f}, run-queue wait {c1['wait_ms']:.1f} against "
             f"{c0['wait_ms']:.1f} (host load)")
    else:
        ev = names_rank_1("share", db, clocks)
        if ev:
            check("share: the cause is less of a core for the same work",
                  "gets less of a core for the same work" in ev and "more work on it" not in ev, ev)
            got = ms_in(ev, r"waits ([\d.]+) ms a step for a core \(run-queue delay, against "
                        r"([\d.]+) ms on the others\) and uses ([\d.]+) ms of CPU time against "
                        r"([\d.]+) ms")
            near_ms("share: rank 1's run-queue delay a step against its threads' own schedstat",
                    got and got[0], c1["wait_ms"], ev)
            near_ms("share: rank 0's run-queue delay a step against its threads' own schedstat",
                    got and got[1], c0["wait_ms"], ev)
            near_ms("share: rank 1's CPU time a step against its own process_time",
                    got and got[2], c1["cpu_ms"], ev)
            near_ms("share: rank 0's CPU time a step against its own process_time",
                    got and got[3], c0["cpu_ms"], ev)
done()
