#!/usr/bin/python3
"""Big jobs, end to end: every node and every rank is judged, reported and
served, however many there are.

The rules used to judge the first 16 nodes and the first 64 ranks of a
window and drop the rest without a word: on a 20-node job the one CPU-bound
node was never found. The test writes two SageMaker Debugger profiler
directories itself and imports them:

- 64 nodes (algo-1 .. algo-64) of 2 cores and 1 GPU, a snapshot every
  500 ms for 120 s; algo-37 is CPU-bound (its cores at 98 %, its GPU at 2 %),
  every other node busy on its GPU (cores 30 %, GPU 85 %). `strobe rules`
  must name algo-37 for CPUBottleneck, and no other node.
- one node with 256 ranks (pids 5000..5255, the rank in each process's
  metadata), 120 steps of 250 ms each: every rank computes 100 ms and waits
  150 ms in the all-reduce, rank 173 computes 200 ms and waits 50 ms.
  Straggler must name rank 173, and only it.
- 20 nodes of 2 ranks each, files named `<end-us>_<rank>-algo-N_...` as
  smdebug names them, once with the job's global ranks (0..39) and once with
  each node's local ranks (0 and 1 on every node, which repeat across
  nodes); rank 1 of algo-7 (global rank 13) computes twice as long. Straggler
  keys a rank by its node: `strobe rules` and the import's own findings must
  name node=algo-7 and that rank, and nothing else (keyed by rank alone, the
  local ranks of 20 nodes merged into two and the straggler was lost).

Then the report (its data) and the dashboard's API must list all 64 nodes'
series and all 256 ranks.
"""
import datetime
import http.client
import json
import os
import re
import shutil
import signal
import subprocess

from strobetest import *

T0 = 1700000040.0  # on a minute: the 120 s span two files per node
NODES, BOUND = 64, 37
RANKS, SLOW, STEPS = 256, 173, 120
JOB_NODES, PER_NODE, SLOW_NODE, SLOW_LOCAL = 20, 2, 7, 1


def hour_dir(base, t):
    return os.path.join(base, datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
                        .strftime("%Y%m%d%H"))


def system_line(node, typ, name, dim, value, ts):
    return json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": value,
                       "NodeId": node, "Timestamp": round(ts, 6)})


def write_nodes(base):
    """64 nodes' system metrics, one file per node per minute."""
    files = {}
    for n in range(1, NODES + 1):
        node = f"algo-{n}"
        cpu, gpu = (98.0, 2.0) if n == BOUND else (30.0, 85.0)
        for k in range(240):
            ts = T0 + 0.5 * k
            lines = [system_line(node, "cpu", f"cpu{c}", "CPUUtilization", cpu, ts + 0.001)
                     for c in range(2)]
            lines.append(system_line(node, "gpu", "gpu0", "GPUUtilization", gpu, ts + 0.002))
            lines.append(system_line(node, "gpu", "gpu0", "GPUMemoryUtilization", 40.0, ts + 0.002))
            files.setdefault((node, int(ts // 60 * 60)), []).extend(lines)
    for (node, minute), lines in files.items():
        d = hour_dir(os.path.join(base, "system", "incremental"), minute)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{minute}.{node}.json"), "w") as f:
            f.write("\n".join(lines) + "\n")


def write_ranks(base):
    """One node, 256 ranks of a data-parallel loop, a trace file per rank as
    smdebug writes them (the rank before the node in its name, the OS pid in
    each event's args); rank 173 works twice as long and waits less at the
    all-reduce, as a straggler does."""
    start_us = int(T0 * 1e6)
    d = hour_dir(os.path.join(base, "framework", "pevents"), T0)
    os.makedirs(d, exist_ok=True)
    end = 1_000_000 + STEPS * 250_000
    for r in range(RANKS):
        pid = 5000 + r
        ev = [{"name": "process_name", "ph": "M", "pid": 0,
               "args": {"start_time_since_epoch_in_micros": start_us, "name": "python"}}]
        work = 200_000 if r == SLOW else 100_000
        for k in range(STEPS):
            t = 1_000_000 + k * 250_000  # µs from the start
            ev.append({"name": "Step:ModeKeys.TRAIN", "ph": "X", "ts": t, "dur": 250_000,
                       "pid": 0, "tid": pid, "args": {"step_num": k + 1, "pid": pid}})
            ev.append({"name": "Forward pass", "ph": "X", "ts": t, "dur": work, "pid": 0,
                       "tid": pid, "args": {"pid": pid}})
            ev.append({"name": "allreduce", "ph": "X", "ts": t + work, "dur": 250_000 - work,
                       "pid": 0, "tid": pid, "args": {"pid": pid}})
        with open(os.path.join(d, f"{start_us + end}_{r}_algo-1_pythontimeline.json"), "w") as f:
            f.write("[\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in ev) + "\n]\n")
    # the node's system metrics, so the run has a host and a time axis
    lines = []
    for k in range(int((end / 1e6 + 1) / 0.5)):
        ts = T0 + 0.5 * k
        lines += [system_line("algo-1", "cpu", f"cpu{c}", "CPUUtilization", 50.0, ts)
                  for c in range(2)]
    d = hour_dir(os.path.join(base, "system", "incremental"), T0)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{int(T0)}.algo-1.json"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_job(base, global_ranks):
    """20 nodes of 2 ranks, one trace file per rank named as smdebug names
    it: the rank (global, or the node's local one) before the node. Each
    node's processes have the same pids (5000, 5001), as separate hosts do.
    Rank 1 of algo-7 works 200 ms a step, the others 100 ms and wait the
    rest of the 250 ms step in the all-reduce."""
    start_us = int(T0 * 1e6)
    d = hour_dir(os.path.join(base, "framework", "pevents"), T0)
    os.makedirs(d, exist_ok=True)
    end = 1_000_000 + STEPS * 250_000
    lines = {}
    for n in range(1, JOB_NODES + 1):
        node = f"algo-{n}"
        for local in range(PER_NODE):
            rank = (n - 1) * PER_NODE + local if global_ranks else local
            pid = 5000 + local
            ev = [{"name": "process_name", "ph": "M", "pid": 0,
                   "args": {"start_time_since_epoch_in_micros": start_us, "name": "python"}}]
            slow = n == SLOW_NODE and local == SLOW_LOCAL
            work = 200_000 if slow else 100_000
            for k in range(STEPS):
                t = 1_000_000 + k * 250_000
                ev.append({"name": "Step:ModeKeys.TRAIN", "ph": "X", "ts": t, "dur": 250_000,
                           "pid": 0, "tid": pid, "args": {"step_num": k + 1, "pid": pid}})
                ev.append({"name": "Forward pass", "ph": "X", "ts": t, "dur": work, "pid": 0,
                           "tid": pid, "args": {"pid": pid}})
                ev.append({"name": "allreduce", "ph": "X", "ts": t + work,
                           "dur": 250_000 - work, "pid": 0, "tid": pid, "args": {"pid": pid}})
            name = f"{start_us + end}_{rank}-{node}_pythontimeline.json"
            with open(os.path.join(d, name), "w") as f:
                f.write("[\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in ev)
                        + "\n]\n")
        lines[node] = [system_line(node, "cpu", f"cpu{c}", "CPUUtilization", 50.0, T0 + 0.5 * k)
                       for k in range(int((end / 1e6 + 1) / 0.5)) for c in range(2)]
    d = hour_dir(os.path.join(base, "system", "incremental"), T0)
    os.makedirs(d, exist_ok=True)
    for node, ls in lines.items():
        with open(os.path.join(d, f"{int(T0)}.{node}.json"), "w") as f:
            f.write("\n".join(ls) + "\n")


def import_dir(db, base, name):
    p = strobe("import", "sagemaker", "--name", name, "--rules", "none", base, store=db,
               timeout=300)
    check(f"{name}: the import exits 0", p.returncode == 0, p.stderr[-800:])
    return show(db, name)


def rules_json(db, name, *params, env=None):
    args = []
    for x in params:
        args += ["--rule-param", x]
    p = strobe("rules", "--json", *args, name, store=db, timeout=300, env=env)
    check(f"{name}: strobe rules --json exits 0", p.returncode == 0, p.stderr[-800:])
    return json.loads(p.stdout) if p.returncode == 0 else {"findings": [], "rules": []}


def report_data(db, name):
    out = os.path.join(TMP, f"{name}.html")
    p = strobe("report", name, "-o", out, store=db, timeout=300)
    check(f"{name}: strobe report exits 0", p.returncode == 0, p.stderr[-800:])
    html = open(out, encoding="utf-8").read() if p.returncode == 0 else ""
    m = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1)) if m else {}


class Server:
    def __init__(self, db):
        self.p = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0"],
                                  stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        self.port = int(line.split("127.0.0.1:")[1].split("/")[0]) if "serving" in line else 0

    def json(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", path)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, json.loads(data) if data else None

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def node_of(labels):
    m = re.search(r"(?:^|,)node=([^,]*)", labels or "")
    return m.group(1) if m else None


base = os.path.join(TMP, "rules-scale")
shutil.rmtree(base, ignore_errors=True)
db = store_path("rules-scale.db")
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(db + suffix):
        os.unlink(db + suffix)

# ---- 64 nodes, one CPU-bound -------------------------------------------------
write_nodes(os.path.join(base, "nodes"))
info = import_dir(db, os.path.join(base, "nodes"), "nodes64")
nodes = {node_of(k[k.index("{"):]) for k in info["metrics"] if k.startswith("cpu.util{")}
check("the import has 64 nodes", len(nodes - {None}) == NODES, sorted(nodes - {None}))

# patience of 20 snapshots: the run has 240 per node
r = rules_json(db, "nodes64", "CPUBottleneck.patience=20")
cpu = [f["scope"] for f in r["findings"] if f["rule"] == "CPUBottleneck"]
check(f"CPUBottleneck names algo-{BOUND}, the 37th of 64 nodes, and no other", cpu == [f"node=algo-{BOUND}"],
      cpu)
verdict = {x["rule"]: x for x in r["rules"]}.get("CPUBottleneck", {})
# 220 snapshots judged on each node after patience; algo-37's are all bottlenecked
check("CPUBottleneck judged every node's snapshots",
      verdict.get("datapoints") == NODES * 220 and verdict.get("violations") == 220,
      (verdict.get("datapoints"), verdict.get("violations")))
check("strobe rules warns of nothing left out", r.get("warnings") == [], r.get("warnings"))
# the replay reads each series a chunk at a time; a block a chunk judges the same
small = rules_json(db, "nodes64", "CPUBottleneck.patience=20",
                   env=dict(os.environ, STROBE_TEST_REPLAY_BYTES="1"))
check("the rules read a block at a time give the same verdicts and findings",
      (small["rules"], small["findings"]) == (r["rules"], r["findings"]),
      [x for x, y in zip(small["findings"], r["findings"]) if x != y][:2])
p = strobe("rules", "--rule-param", "CPUBottleneck.patience=20", "--rules", "CPUBottleneck",
           "nodes64", store=db)
check("strobe rules' text names the node", f"CPUBottleneck [node=algo-{BOUND}]" in p.stdout,
      p.stdout[-600:])

data = report_data(db, "nodes64")
in_report = {node_of(s["labels"]) for s in data.get("series", []) if s["name"] == "cpu.util"}
check("the report draws cpu.util of all 64 nodes", len(in_report - {None}) == NODES,
      len(in_report - {None}))
gpus = {node_of(s["labels"]) for s in data.get("series", []) if s["name"] == "gpu.util"}
check("the report draws gpu.util of all 64 nodes", len(gpus - {None}) == NODES, len(gpus - {None}))

srv = Server(db)
check("serve starts", srv.port > 0)
status, m = srv.json(f"/api/runs/{info['id']}/metrics")
served = {node_of(x["labels"]) for x in (m or {}).get("metrics", []) if x["name"] == "cpu.util"}
check("the API lists cpu.util of all 64 nodes", status == 200 and len(served - {None}) == NODES,
      (status, len(served - {None})))
status, s = srv.json(f"/api/runs/{info['id']}/series?name=cpu.util&labels=node%3Dalgo-64")
check("the API serves the 64th node's series", status == 200 and len(s["t"]) > 100,
      (status, s and len(s.get("t", []))))

# ---- 256 ranks, one straggler --------------------------------------------------
write_ranks(os.path.join(base, "ranks"))
info = import_dir(db, os.path.join(base, "ranks"), "ranks256")
ranks = sorted(x["rank"] for x in info["processes"] if x.get("rank") is not None)
check("the import has 256 ranks", ranks == list(range(RANKS)), (len(ranks), ranks[:3], ranks[-3:]))

r = rules_json(db, "ranks256")
st = [f["scope"] for f in r["findings"] if f["rule"] == "Straggler"]
check(f"Straggler names rank {SLOW} of 256, and no other", st == [f"rank={SLOW}"], st)
ev = [f["evidence"] for f in r["findings"] if f["rule"] == "Straggler"]
check("its evidence: twice the others' work", ev and f"rank {SLOW} " in ev[0]
      and "works 100 % longer" in ev[0], ev)

shown = [x["rank"] for x in info.get("ranks", [])]
check("show --json has the steps of all 256 ranks", sorted(shown) == list(range(RANKS)), len(shown))
data = report_data(db, "ranks256")
grouped = sorted(g["rank"] for g in data.get("groups", []))
check("the report's phase breakdown has all 256 ranks", grouped == list(range(RANKS)), len(grouped))
status, run = srv.json(f"/api/runs/{info['id']}")
served = sorted(x["rank"] for x in (run or {}).get("ranks", []))
check("the API lists the steps of all 256 ranks", status == 200 and served == list(range(RANKS)),
      (status, len(served)))
srv.stop()

# ---- 20 nodes of 2 ranks, one straggler (node, rank) -----------------------------
for global_ranks in (True, False):
    kind = "global" if global_ranks else "local"
    name = f"job20-{kind}"
    slow_rank = (SLOW_NODE - 1) * PER_NODE + SLOW_LOCAL if global_ranks else SLOW_LOCAL
    want = [f"node=algo-{SLOW_NODE},rank={slow_rank}"]
    job = os.path.join(base, name)
    write_job(job, global_ranks)
    # the import evaluates the rules and stores their findings
    p = strobe("import", "sagemaker", "--name", name, "--rules", "Straggler", job, store=db,
               timeout=300)
    check(f"{name}: the import exits 0", p.returncode == 0, p.stderr[-800:])
    check(f"{name}: the import's summary has the Straggler finding",
          "rules: 1 finding (Straggler)" in p.stdout, p.stdout[-400:])
    info = show(db, name)
    procs = [(x.get("comm", "").rsplit("@", 1)[-1], x["rank"]) for x in info["processes"]
             if x.get("rank") is not None]
    want_procs = sorted((f"algo-{n}", (n - 1) * PER_NODE + k if global_ranks else k)
                        for n in range(1, JOB_NODES + 1) for k in range(PER_NODE))
    check(f"{name}: the import has 40 ranks, 2 on each of 20 nodes", sorted(procs) == want_procs,
          sorted(procs)[:4])
    st = [f["scope"] for f in info.get("findings", []) if f["rule"] == "Straggler"]
    check(f"{name}: the import's findings name rank {slow_rank} of algo-{SLOW_NODE} alone",
          st == want, st)
    r = rules_json(db, name)
    st = [f["scope"] for f in r["findings"] if f["rule"] == "Straggler"]
    check(f"{name}: strobe rules names rank {slow_rank} of algo-{SLOW_NODE}, and no other",
          st == want, st)
    ev = [f["evidence"] for f in r["findings"] if f["rule"] == "Straggler"]
    check(f"{name}: its evidence names the rank and its node, twice the others' work",
          ev and f"rank {slow_rank} on algo-{SLOW_NODE} " in ev[0]
          and "works 100 % longer" in ev[0], ev)

shutil.rmtree(base, ignore_errors=True)
done()
