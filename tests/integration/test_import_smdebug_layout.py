#!/usr/bin/python3
"""strobe import sagemaker on data laid out as smdebug's writer lays it out.

smdebug (smdebug/core/tfevent/timeline_file_writer.py) writes one trace file
series per process, named <end-us>_<N>-<host>_pythontimeline.json with N the
rank in a distributed job and the OS pid otherwise; inside, a trace "pid" is
the index of a training phase ("Step:ModeKeys.TRAIN", "Forward",
"DataLoaderIter", ...), announced by a process_name event in each file, and
the OS pid is args.pid. The test writes such directories itself:

- one node, two ranks (0-algo-1, 1-algo-1), rank 1 doing 1.4x the work, TRAIN
  then EVAL steps, data-loader workers, a file rotated every 20 steps; one
  system file begins with a UTF-8 byte order mark and holds NaN values as
  Python's json writes them; an empty trace file; a span with a NaN dur;
- a single process named by its OS pid, GLOBAL steps, and TensorFlow's
  DataIterator events in a model_timeline file without args.pid;
- a folder with only TensorFlow's detailed profiler output;
- a 20-node job, one rank per node.

Then: processes, ranks, phases, findings stored by the import, OverallSystem
Usage per node with the network, trace --steps with and without --mode eval,
and export then import again keeping modes, nodes and ranks.
"""
import datetime
import gzip
import json
import os
import re

from strobetest import *

T0 = 1700000130.0  # 22:15:30 UTC
TRAIN, EVAL = 60, 10
STEP = 0.5  # s, both ranks: DDP's all-reduce evens them out
EVAL_STEP = 0.2
# per rank: data, forward, backward, waiting in the all-reduce (s)
WORK = {0: (0.04, 0.10, 0.13, 0.22), 1: (0.04, 0.15, 0.20, 0.10)}
PID = {0: 3000, 1: 3001}


def hour_dir(base, t):
    return os.path.join(base, datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
                        .strftime("%Y%m%d%H"))


class Writer:
    """One smdebug timeline writer: a phase index per training phase, kept
    across the files it rotates through, announced again in each file."""

    def __init__(self, base, node_id, kind="pythontimeline", start=T0):
        self.base, self.node_id, self.kind = base, node_id, kind
        self.start_us = int(start * 1e6)
        self.phases = {}
        self.events = []

    def phase(self, name):
        return self.phases.setdefault(name, len(self.phases) + 1)

    def event(self, phase, name, t, dur=None, ph="X", **args):
        e = {"name": name, "pid": self.phase(phase), "ph": ph,
             "ts": int(round(t * 1e6)) - self.start_us}
        if dur is not None:
            e["dur"] = int(round(dur * 1e6)) if dur == dur else dur  # NaN stays NaN
        if args:
            e["args"] = args
        self.events.append((phase, e))

    def rotate(self, bom=False):
        """Close the current file as smdebug does: named by its last end."""
        if not self.events:
            return
        out = [{"name": "process_name", "ph": "M", "pid": 0,
                "args": {"start_time_since_epoch_in_micros": self.start_us}},
               {"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}}]
        seen = set()
        end = 0
        for phase, e in self.events:
            if phase not in seen:
                seen.add(phase)
                out.append({"name": "process_name", "ph": "M", "pid": self.phases[phase],
                            "args": {"name": phase}})
            out.append(e)
            end = max(end, e["ts"] + (e.get("dur", 0) if e.get("dur", 0) == e.get("dur", 0) else 0))
        end_us = self.start_us + end
        d = hour_dir(os.path.join(self.base, "framework", "pevents"), end_us / 1e6)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"{end_us}_{self.node_id}_{self.kind}.json")
        text = "[\n" + ",\n".join(json.dumps(e) for e in out) + "\n]"
        with open(path, "wb") as f:
            f.write((b"\xef\xbb\xbf" if bom else b"") + text.encode())
        self.events = []
        return path


def write_system(base, node, snaps, t0=T0, bom=False, nan=0):
    """2 cores, 1 GPU, memory, network (the job's own traffic and the
    platform's) every 500 ms; nan lines with Value NaN/Infinity."""
    lines = []
    for k in range(snaps):
        ts = t0 + 0.5 * k
        for typ, name, dim, v in (("cpu", "cpu0", "CPUUtilization", 60.0),
                                  ("cpu", "cpu1", "CPUUtilization", 80.0),
                                  ("cpu", "cpu0", "I/OWaitPercentage", 1.0),
                                  ("cpu", "cpu1", "I/OWaitPercentage", 3.0),
                                  ("gpu", "gpu0", "GPUUtilization", 50.0 + k % 2),
                                  ("gpu", "gpu0", "GPUMemoryUtilization", 30.0),
                                  ("memory", "MemoryUsedPercent", "", 40.0),
                                  ("network", "ReceiveBytesPerSecond", "Algorithm", 1000.0),
                                  ("network", "TransmitBytesPerSecond", "Algorithm", 500.0),
                                  ("network", "ReceiveBytesPerSecond", "Platform", 7.0)):
            lines.append(json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": v,
                                     "NodeId": node, "Timestamp": round(ts + 0.001, 6)}))
    for k in range(nan):
        lines.append(json.dumps({"Type": "gpu", "Name": "gpu0", "Dimension": "GPUUtilization",
                                 "Value": float("nan") if k % 2 == 0 else float("inf"),
                                 "NodeId": node, "Timestamp": t0 + 0.25 + k}))
    d = hour_dir(os.path.join(base, "system", "incremental"), t0)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{int(t0) // 60 * 60}.{node}.json"), "wb") as f:
        f.write((b"\xef\xbb\xbf" if bom else b"") + ("\n".join(lines) + "\n").encode())


def write_rank(base, rank, node="algo-1", train=TRAIN, evals=EVAL, workers=2, t0=T0):
    """A rank's timeline, rotated every 20 steps: {mode: {step: start}}."""
    w = Writer(base, f"{rank}-{node}", start=t0)
    pid = PID.get(rank, 5000 + rank)
    d, f, b, c = WORK.get(rank, WORK[0])
    starts = {"train": {}, "eval": {}}
    t = t0 + 1.0
    w.event("DataLoaderIterInitialize", "_MultiProcessingDataLoaderIter.__init__", t - 0.5, 0.3,
            pid=pid, num_workers=workers, pin_memory=False)
    for k in range(train):
        starts["train"][k] = t
        w.event("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", t, STEP - 0.001, pid=pid,
                step_num=str(k))
        w.event("DataLoaderIter", "_MultiProcessingDataLoaderIter::GetNext", t + 0.001, d,
                pid=pid)
        w.event("Forward", "Net", t + 0.001 + d, f, pid=pid, step_num=str(k))
        w.event("Backward(post-forward)", "Net", t + 0.001 + d + f, b, pid=pid, step_num=str(k))
        w.event("DDP", "DistributedDataParallel.all_reduce", t + 0.001 + d + f + b, c, pid=pid)
        for wid in range(workers):  # each worker prepares a batch in the background
            w.event("DataLoaderWorker", "_worker_loop", t + 0.01 * wid, 0.3,
                    pid=pid + 100 + 10 * rank + wid, worker_id=wid)
        t += STEP
        if k % 20 == 19:
            w.rotate(bom=rank == 1 and k == 19)
    for k in range(evals):
        starts["eval"][k] = t
        w.event("Step:ModeKeys.EVAL", "Step:ModeKeys.EVAL", t, EVAL_STEP - 0.001, pid=pid,
                step_num=k)
        w.event("Forward", "Net", t + 0.01, 0.15, pid=pid, step_num=k)
        t += EVAL_STEP
    w.rotate()
    return starts


def trace_steps(db, ref, *args):
    """The step slices of strobe trace: [(name, step, start_s)]."""
    out = os.path.join(TMP, "t.json")
    p = strobe("trace", "-o", out, *args, ref, store=db)
    if p.returncode != 0:
        return None, p.stderr
    evs = json.load(open(out))["traceEvents"]
    origin = show(db, ref)["start_ns"] / 1e9
    return sorted((e["name"], e["args"]["step"], origin + e["ts"] / 1e6) for e in evs
                  if e.get("cat") == "step" and e.get("ph") in ("X", "B")), p.stderr


def rules_json(db, ref, *args):
    p = strobe("rules", "--json", *args, ref, store=db)
    return json.loads(p.stdout) if p.returncode == 0 else {}


db = store_path("smdebug.db")

# ---- one node, two ranks -------------------------------------------------------------
job = os.path.join(TMP, "ddp-job")
write_system(job, "algo-1", int((TRAIN * STEP + EVAL * EVAL_STEP + 3) / 0.5), bom=True, nan=2)
starts = {r: write_rank(job, r) for r in (0, 1)}
# a writer that opened its file and closed it with nothing in it
d = hour_dir(os.path.join(job, "framework", "pevents"), T0)
open(os.path.join(d, f"{int(T0 * 1e6)}_0-algo-1_pythontimeline.json"), "w").close()
# a span whose dur is NaN, as Python's json writes a float('nan')
w = Writer(job, "0-algo-1", kind="model_timeline")
w.event("DataIterator", "dataset::GetNext", T0 + 2, float("nan"))
w.rotate()

p = strobe("import", "sagemaker", "--name", "ddp", job, store=db)
summary = p.stdout.strip()
print("# " + summary)
check("ranks: import exit 0", p.returncode == 0, p.stderr)
warnings = p.stderr.strip().splitlines()
check("ranks: the empty trace file is one warning",
      len(warnings) == 1 and "is empty" in warnings[0], warnings)
check("ranks: the NaN and Infinity values are read and counted, not stored",
      "2 values not a number" in summary and "garbled" in summary and
      "(0 cut short, 0 garbled)" in summary, summary)
check("ranks: a span with a NaN dur is a bad event", "1 bad events" in summary, summary)
check("ranks: the empty file is counted", "1 files unreadable" in summary, summary)
r = show(db, "ddp")
check("ranks: one node", r["host"] == "algo-1", r["host"])
procs = {p["pid"]: p for p in r["processes"]}
for rank in (0, 1):
    pr = procs.get(PID[rank], {})
    check(f"ranks: rank {rank} is the process of its args.pid {PID[rank]}",
          pr.get("rank") == rank and pr.get("role") == "rank" and pr.get("world_size") == 2, pr)
    for wid in range(2):
        wp = procs.get(PID[rank] + 100 + 10 * rank + wid, {})
        check(f"ranks: rank {rank}'s worker {wid} is a data-loader process of its own",
              wp.get("role") == "dataloader" and wp.get("worker_id") == wid and
              wp.get("ppid") == PID[rank], wp)
check("ranks: no process for the phase indices", len(procs) == 6, sorted(procs))
groups = {g["rank"]: g for g in r["ranks"]}
check("ranks: one step group per rank, on one node", sorted(groups) == [0, 1], r["ranks"])
for rank, g in groups.items():
    check(f"ranks: rank {rank}: its {TRAIN} training steps", g["count"] == TRAIN, g["count"])
    d_, f_, b_, c_ = WORK[rank]
    ph = g["phases"]
    for name, want in (("data", d_), ("forward", f_), ("backward", b_), ("comm", c_)):
        near(f"ranks: rank {rank}: {name}, filed under another trace pid, counts in its steps",
             ph[name]["share"], want / (STEP - 0.001), 0.01)
    check(f"ranks: rank {rank}: little is left as other", ph["other"]["share"] < 0.03,
          ph["other"])
check("ranks: the data-loader workers are seen", r["workers"]["count"] == 4, r["workers"])

# the import evaluated the rules and stored what they found
finds = r.get("findings") or []
strag = [f for f in finds if f["rule"] == "Straggler"]
check("ranks: show has the import's findings", finds, finds)
check("ranks: Straggler sees the two ranks of one node and names rank 1",
      len(strag) == 1 and "rank=1" in strag[0]["scope"], [(f["rule"], f["scope"]) for f in finds])
check("ranks: the summary says what the rules found", "Straggler" in summary, summary)

rj = rules_json(db, "ddp")
usage = next((x for x in rj.get("rules", []) if x["rule"] == "OverallSystemUsage"), {})
node = ((usage.get("report") or {}).get("nodes") or {}).get("algo-1", {})
for key, want in (("cpu_pct", 70.0), ("iowait_pct", 2.0), ("memory_pct", 40.0),
                  ("gpu_memory_pct", 30.0), ("network_bytes_per_s", 1500.0)):
    st = node.get(key, {})
    check(f"OverallSystemUsage: {key} of algo-1 has max, p99, p95, p50, min",
          all(k in st for k in ("max", "p99", "p95", "p50", "min")), st)
    if st:
        near(f"OverallSystemUsage: {key} p50 of algo-1 (0.5 %)", st["p50"], want,
             max(0.005 * want, 0.01))
gpu = node.get("gpu_pct", {})
check("OverallSystemUsage: gpu_pct of algo-1 from 50 to 51",
      gpu and 49.7 <= gpu["min"] <= 50.3 and 50.7 <= gpu["max"] <= 51.3, gpu)

# trace --steps: training step numbers unless --mode says otherwise
got, err = trace_steps(db, "ddp", "--steps", "2-3")
check("trace --steps 2-3: the training steps 2 and 3 of both ranks",
      got is not None and sorted((n, s) for n, s, _ in got) ==
      [("step", 2), ("step", 2), ("step", 3), ("step", 3)], (got, err))
if got:
    check("trace --steps 2-3: where the training steps were",
          all(abs(t - starts[0]["train"][s]) < 0.01 for _, s, t in got), got)
got, err = trace_steps(db, "ddp", "--steps", "2-3", "--mode", "eval")
check("trace --steps 2-3 --mode eval: the evaluation steps 2 and 3",
      got is not None and sorted((n, s) for n, s, _ in got) ==
      [("step:eval", 2), ("step:eval", 2), ("step:eval", 3), ("step:eval", 3)], (got, err))
if got:
    check("trace --steps 2-3 --mode eval: where the evaluation steps were",
          all(abs(t - starts[0]["eval"][s]) < 0.01 for _, s, t in got), got)
got, err = trace_steps(db, "ddp", "--steps", "12-13", "--mode", "eval")
check("trace --mode eval: a step only training has is an error",
      got is None and "no step 12" in err and "eval" in err, err)
p = strobe("trace", "--steps", "1", "--mode", "sometimes", "ddp", store=db)
check("trace --mode: a mode that does not exist is a usage error", p.returncode == 2, p.stderr)

# export, then import again: modes, nodes, ranks and workers kept
out = os.path.join(TMP, "ddp-out")
p = strobe("export", "--format", "sagemaker", "-o", out, "ddp", store=db)
check("round trip: export exit 0", p.returncode == 0, p.stderr)
names = sorted(fn.split("_", 1)[1].rsplit("_", 1)[0]
               for _, _, fs in os.walk(os.path.join(out, "framework")) for fn in fs)
check("round trip: a file series per rank and per worker, named <N>-<node>",
      sorted(set(names)) == sorted({"0-algo-1", "1-algo-1"} |
                                   {f"{PID[r] + 100 + 10 * r + w}-algo-1"
                                    for r in (0, 1) for w in (0, 1)}), sorted(set(names)))
p = strobe("import", "sagemaker", "--name", "again", out, store=db)
check("round trip: import exit 0", p.returncode == 0, p.stderr)
a, b = show(db, "ddp"), show(db, "again")
check("round trip: the same node", a["host"] == b["host"] == "algo-1", (a["host"], b["host"]))
key = lambda r: sorted((p["pid"], p["role"], p["rank"], p["worker_id"], p["ppid"])
                       for p in r["processes"])
check("round trip: the same processes, ranks and workers", key(a) == key(b), (key(a), key(b)))
check("round trip: the same training steps per rank",
      [(g["rank"], g["count"]) for g in a["ranks"]] == [(g["rank"], g["count"]) for g in b["ranks"]],
      (a["ranks"], b["ranks"]))
ta, _ = trace_steps(db, "ddp")
tb, _ = trace_steps(db, "again")
count = lambda ts, n: sum(1 for x in ts or [] if x[0] == n)
check("round trip: the evaluation steps stay evaluation steps",
      count(ta, "step:eval") == count(tb, "step:eval") == 2 * EVAL,
      (count(ta, "step:eval"), count(tb, "step:eval")))
check("round trip: and the training steps training steps",
      count(ta, "step") == count(tb, "step") == 2 * TRAIN, (count(ta, "step"), count(tb, "step")))

# ---- a single process, named by its OS pid -----------------------------------------
single = os.path.join(TMP, "single")
write_system(single, "algo-1", 30)
w = Writer(single, "4321-algo-1")
tf = Writer(single, "4321-algo-1", kind="model_timeline")
for k in range(20):
    t = T0 + 1 + 0.5 * k
    w.event("Step:ModeKeys.GLOBAL", "Step:ModeKeys.GLOBAL", t, 0.4, pid=4321, step_num=k)
    tf.event("DataIterator", "dataset::GetNext", t + 0.01, 0.1)  # TensorFlow's: no args.pid
w.rotate()
tf.rotate()
p = strobe("import", "sagemaker", "--name", "single", "--rules", "none", single, store=db)
check("single: import exit 0", p.returncode == 0, p.stderr)
check("single: --rules none skips the rules", "rules not evaluated" in p.stdout, p.stdout)
r = show(db, "single")
check("single: one process, its pid the file name's", [(x["pid"], x["role"], x["rank"])
                                                      for x in r["processes"]] == [(4321, "main", None)],
      r["processes"])
check("single: --rules none stores no findings", not r.get("findings"), r.get("findings"))
got, err = trace_steps(db, "single", "--steps", "4-5")
check("single: trace --steps means the GLOBAL steps of a job that set no mode",
      got is not None and [(n, s) for n, s, _ in got] == [("step:global", 4), ("step:global", 5)],
      (got, err))

# ---- only TensorFlow's profiler ----------------------------------------------------
tfonly = os.path.join(TMP, "tf-only")
d = os.path.join(tfonly, "framework", "tensorflow", "detailed_profiling", "2020080513",
                 "000000000", "plugins", "profile", "2020_08_05_13_37_44")
os.makedirs(d)
with gzip.open(os.path.join(d, "host.trace.json.gz"), "wt") as f:
    f.write('{"traceEvents": []}')
p = strobe("import", "sagemaker", tfonly, store=db)
check("TensorFlow only: exit 1", p.returncode == 1, p.returncode)
check("TensorFlow only: one line saying so",
      len(p.stderr.strip().splitlines()) == 1 and "TensorFlow profiler output" in p.stderr,
      p.stderr)

# ---- twenty nodes -------------------------------------------------------------------
big = os.path.join(TMP, "twenty")
NODES = [f"algo-{i}" for i in range(1, 21)]
for rank, node in enumerate(NODES):
    write_system(big, node, 40)
    write_rank(big, rank, node=node, train=30, evals=0, workers=0)
p = strobe("import", "sagemaker", "--name", "twenty", big, store=db)
check("20 nodes: import exit 0", p.returncode == 0, p.stderr)
check("20 nodes: the summary names every node in order",
      "20 nodes (" + ", ".join(NODES) + ")" in p.stdout, p.stdout[:400])
r = show(db, "twenty")
check("20 nodes: the run's host is every node", r["host"] == ",".join(NODES), r["host"])
ranks = sorted((x["rank"] if x["rank"] is not None else -1, x["comm"]) for x in r["processes"])
check("20 nodes: a rank per node, each on its own",
      ranks == [(i, n) for i, n in enumerate(NODES)], ranks)
rj = rules_json(db, "twenty")
usage = next((x for x in rj.get("rules", []) if x["rule"] == "OverallSystemUsage"), {})
got = sorted(((usage.get("report") or {}).get("nodes") or {}), key=lambda n: int(n[5:]))
check("20 nodes: OverallSystemUsage reports every node", got == NODES, got)
out = os.path.join(TMP, "twenty-out")
p = strobe("export", "--format", "sagemaker", "-o", out, "twenty", store=db)
q = strobe("import", "sagemaker", "--name", "twenty-again", "--rules", "none", out, store=db)
check("20 nodes: export and import again", p.returncode == 0 and q.returncode == 0,
      (p.stderr, q.stderr))
again = show(db, "twenty-again")
check("20 nodes: the same nodes after a round trip", again["host"] == r["host"], again["host"])
check("20 nodes: the same rank on each node after a round trip",
      sorted((x["rank"] if x["rank"] is not None else -1, x["comm"]) for x in again["processes"])
      == ranks, again["processes"][:3])
done()
