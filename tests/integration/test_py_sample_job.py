#!/usr/bin/python3
"""Python stacks of a whole job: two nodes (two recorders joined into one
run in PostgreSQL, as a torchrun-style launcher's environment makes them),
two DDP ranks each (gloo, CPU), every recorder with --py-sample 100.

Each rank spends its steps in functions that say who it is: node0_work or
node1_work by node, even_rank or odd_rank by global rank; it prints its
global rank and pid. Then:
- the job's flame graph names all four functions, and its samples are the
  sum of its two nodes' runs;
- the roles are the four ranks, and --role "rank R" names only rank R's
  node and parity;
- --pid (the job's view numbers each node's pids apart) finds a rank by
  the pid it printed only on its own node's run."""
import json
import os
import re
import socket
import subprocess
import sys
import time

NODE_JOB = r"""
import os, sys, time, torch
import torch.distributed as dist
import torch.nn as nn

def spin(seconds):
    t = time.thread_time() + seconds
    while time.thread_time() < t:
        pass

def node0_work(rank):
    (even_rank if rank % 2 == 0 else odd_rank)()

def node1_work(rank):
    (even_rank if rank % 2 == 0 else odd_rank)()

def even_rank():
    spin(0.02)

def odd_rank():
    spin(0.02)

def train(local, node):
    rank = 2 * node + local
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(local))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    os.write(1, f"RANK {rank} {os.getpid()}\n".encode())  # one write: ranks do not interleave
    model = nn.parallel.DistributedDataParallel(nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    work = node0_work if node == 0 else node1_work
    for _ in range(60):
        work(rank)
        loss = model(torch.randn(8, 32)).sum()
        opt.zero_grad(); loss.backward(); opt.step()
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.start_processes(train, args=(int(sys.argv[1]),), nprocs=2, join=True, start_method="fork")
"""

from strobetest import (PYTHON, TMP, check, done, example_env, pg_missing, pg_server, skip,
                        strobe, STROBE)

why = pg_missing()
if why:
    skip("a job's Python stacks across nodes", why)
    done()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def collapsed(uri, ref, *args):
    p = strobe("flame", ref, *args, store=uri)
    counts = {}
    for line in p.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        counts[stack] = counts.get(stack, 0) + int(n)
    return counts


def funcs(counts):
    """Function names of every stack, with their sample counts."""
    got = {}
    for stack, n in counts.items():
        for f in {frame.split(" (")[0] for frame in stack.split(";")}:
            got[f] = got.get(f, 0) + n
    return got


job_py = os.path.join(TMP, "pyjob.py")
with open(job_py, "w") as f:
    f.write(NODE_JOB)

with pg_server() as uri:
    port = free_port()
    env = dict(example_env(), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="4",
               LOCAL_WORLD_SIZE="2", STROBE_STORE=uri)
    procs = [subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--name", "pyjob",
                               "--node", f"n{node}", "--py-sample", "100", "--", PYTHON, job_py,
                               str(node)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for node in (0, 1)]
    outs = [p.communicate(timeout=300) for p in procs]
    ok = check("both nodes ran their ranks to the end",
               all(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs])
    pids = {}
    for node, (out, _) in enumerate(outs):
        for rank, pid in re.findall(r"^RANK (\d+) (\d+)$", out, re.M):
            pids[int(rank)] = (node, int(pid))
    check("four ranks printed their pids", sorted(pids) == [0, 1, 2, 3], pids)

    runs = json.loads(strobe("ls", "--json", "--nodes", store=uri).stdout or "[]")
    job = next((r["id"] for r in runs if not r.get("node")), None)
    node_runs = {r["node"]: r["id"] for r in runs if r.get("node")}
    check("one job run with two node runs", job and sorted(node_runs) == ["n0", "n1"], runs)
    whole = collapsed(uri, job or "none")
    names = funcs(whole)
    check("the job's flame graph names every node's and every rank's function",
          all(names.get(f, 0) > 20 for f in ("node0_work", "node1_work", "even_rank",
                                             "odd_rank")), names)
    per_node = [sum(collapsed(uri, node_runs.get(n, "none")).values()) for n in ("n0", "n1")]
    check("the job's samples are its nodes' samples", sum(whole.values()) == sum(per_node) > 0,
          (sum(whole.values()), per_node))
    j = strobe("flame", job or "none", "--format", "json", store=uri)
    roles = json.loads(j.stdout).get("roles", []) if j.returncode == 0 else []
    check("the roles are the four ranks", all(f"rank {r}" in roles for r in range(4)), roles)
    for rank in range(4):
        got = funcs(collapsed(uri, job or "none", "--role", f"rank {rank}"))
        mine = ("node0_work" if rank < 2 else "node1_work",
                "even_rank" if rank % 2 == 0 else "odd_rank")
        theirs = ("node1_work" if rank < 2 else "node0_work",
                  "odd_rank" if rank % 2 == 0 else "even_rank")
        check(f"rank {rank}: its node's and its parity's functions, and no other",
              all(got.get(f, 0) > 10 for f in mine) and not any(got.get(f) for f in theirs),
              got)
    for rank, (node, pid) in sorted(pids.items()):
        own = funcs(collapsed(uri, node_runs.get(f"n{node}", "none"), "--pid", str(pid)))
        check(f"rank {rank}: its pid on its node's run is its own work",
              own.get("even_rank" if rank % 2 == 0 else "odd_rank", 0) > 10, own)
done()
