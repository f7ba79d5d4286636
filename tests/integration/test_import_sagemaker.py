#!/usr/bin/python3
"""strobe import sagemaker, and strobe export --format sagemaker.

The test writes a SageMaker Debugger profiler directory itself: two nodes
(algo-1, algo-2) of 2 cores and 1 GPU each, system metrics every 500 ms for
60 s in one JSON-lines file per node per minute, and pythontimeline trace
files with 100 steps per node (data, forward, backward as a B/E pair,
optimizer, one other op), each under its training phase as smdebug files
them. algo-2's clock runs 2.000 s ahead. One system file
ends in a line cut short, another holds a garbled line, and one trace file
ends inside an event. Then: a directory with nothing in it, one that does
not exist, and a round trip of a real recording through the SageMaker
format.
"""
import datetime
import json
import os
import random
import re

from strobetest import *

db = store_path("sm.db")
T0 = 1700000130.0  # 22:15:30 UTC: the 60 s span two minutes, so two files per node
SKEW = {"algo-1": 0.0, "algo-2": 2.0}
SNAPS = 120  # 60 s at 500 ms
STEPS = 100
rnd = random.Random(20240611)


def hour_dir(base, t):
    return os.path.join(base, datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
                        .strftime("%Y%m%d%H"))


def write_system(base):
    """{node: {series key: [(written time, value)]}}, as written (cut and
    garbled lines left out)."""
    truth = {}
    files = {}  # (node, minute) -> lines
    for node, skew in SKEW.items():
        t = truth.setdefault(node, {})
        for k in range(SNAPS):
            # each sampler thread wakes a little apart: within one snapshot
            ts = T0 + 0.5 * k + skew + rnd.uniform(0, 0.004)
            recs = [
                ("memory", "MemoryUsedPercent", "", "mem.used_pct", ts),
                ("gpu", "gpu0", "GPUUtilization", "gpu.util{gpu=0}", ts + 0.002),
                ("gpu", "gpu0", "GPUMemoryUtilization", "gpu.mem_util{gpu=0}", ts + 0.002),
                ("network", "ReceiveBytesPerSecond", "Algorithm",
                 "net.rx_bytes_per_s{iface=algorithm}", ts + 0.003),
                ("network", "TransmitBytesPerSecond", "Algorithm",
                 "net.tx_bytes_per_s{iface=algorithm}", ts + 0.003),
                ("network", "ReceiveBytesPerSecond", "Platform",
                 "sagemaker.network.Platform{name=ReceiveBytesPerSecond}", ts + 0.003),
                ("cpu", "cpu0", "I/OWaitPercentage", "cpu.iowait{core=0}", ts + 0.001),
                ("cpu", "cpu1", "I/OWaitPercentage", "cpu.iowait{core=1}", ts + 0.001),
                ("cpu", "cpu0", "CPUUtilization", "cpu.util{core=0}", ts + 0.001),
                ("cpu", "cpu1", "CPUUtilization", "cpu.util{core=1}", ts + 0.001),
            ]
            for typ, name, dim, key, when in recs:
                value = rnd.random() * 100  # full doubles: checked bit for bit
                when = round(when, 6)  # SageMaker writes float seconds
                line = json.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": value,
                                   "NodeId": node, "Timestamp": when})
                minute = int(when // 60 * 60)
                files.setdefault((node, minute), []).append(line)
                t.setdefault(key, []).append((when, value))
    cut = garbled = None
    for (node, minute), lines in sorted(files.items()):
        d = hour_dir(os.path.join(base, "system", "incremental"), minute)
        os.makedirs(d, exist_ok=True)
        text = "\n".join(lines) + "\n"
        if node == "algo-1" and minute == max(m for n, m in files if n == node):
            # the writer was still writing its last line: cpu1 of the last snapshot
            text = "\n".join(lines[:-1]) + "\n" + lines[-1][:len(lines[-1]) // 2]
            cut = ("algo-1", "cpu.util{core=1}")
        if node == "algo-2" and minute == min(m for n, m in files if n == node):
            # a garbled line in the middle: cpu0's utilization of snapshot 10
            i = 10 * 10 + 8
            bad = lines[i].replace('"Value": ', '"Value": x')
            text = "\n".join(lines[:i] + [bad] + lines[i + 1:]) + "\n"
            garbled = ("algo-2", "cpu.util{core=0}", 10)
        with open(os.path.join(d, f"{minute}.{node}.json"), "w") as f:
            f.write(text)
    truth["algo-1"]["cpu.util{core=1}"].pop()
    del truth["algo-2"]["cpu.util{core=0}"][10]
    return truth, cut, garbled


# smdebug's writer files each event under a trace "pid" that is its training
# phase (the process_name), with the OS pid in args.pid; forward and backward
# are named after the module
PHASES = {"Step:ModeKeys.TRAIN": 1, "DataLoaderIter": 2, "Forward": 3,
          "Backward(post-forward)": 4, "Optimizer": 5, "Other": 6}


def write_framework(base):
    """{node: {step: true start}}; the files hold the node's own clock, in
    smdebug's layout: <end-us>_<pid>-<node>_pythontimeline.json."""
    starts = {}
    for node, skew in SKEW.items():
        pid = 4242  # the same pid on both nodes, as in containers
        evs = [[], []]
        st = starts.setdefault(node, {})
        for k in range(1, STEPS + 1):
            true = T0 + 1.0 + 0.5 * k + rnd.uniform(-0.002, 0.002)
            st[k] = true
            t = true + skew
            half = 0 if k <= STEPS // 2 else 1
            evs[half].append((t, k))
        for half in (0, 1):
            first = evs[half][0][0]
            start_us = int(first * 1e6) - 1000
            out = [{"name": "process_name", "ph": "M", "pid": 0,
                    "args": {"start_time_since_epoch_in_micros": start_us}},
                   {"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}}]
            out += [{"name": "process_name", "ph": "M", "pid": i, "args": {"name": ph}}
                    for ph, i in PHASES.items()]

            def us(t):
                return int(round(t * 1e6)) - start_us

            def ev(name, phase, ph, t, dur=None, **args):
                e = {"name": name, "pid": PHASES[phase], "ph": ph, "ts": us(t),
                     "args": dict(pid=pid, **args)}
                if dur is not None:
                    e["dur"] = us(t + dur) - us(t)
                return e

            end = 0
            for t, k in evs[half]:
                d, f, b, o = 0.05, 0.15, 0.2, 0.03
                step_num = k if k % 2 else str(k)  # smdebug writes some as strings
                out.append(ev("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", "X", t,
                              d + f + b + o + 0.004, step_num=step_num))
                out.append(ev("_SingleProcessDataLoaderIter::GetNext", "DataLoaderIter", "X",
                              t + 0.001, d))
                out.append(ev("Net", "Forward", "X", t + 0.001 + d, f))
                out.append(ev("Net", "Backward(post-forward)", "B", t + 0.002 + d + f))
                out.append(ev("Net", "Backward(post-forward)", "E", t + 0.002 + d + f + b))
                out.append(ev("Optimizer.step", "Optimizer", "X", t + 0.003 + d + f + b, o))
                out.append(ev("some_other_op", "Other", "X", t + 0.0035 + d + f + b + o, 0.0001))
                end = max(end, us(t + 0.5))
            end_us = start_us + end
            d = hour_dir(os.path.join(base, "framework", "pevents"), end_us / 1e6)
            os.makedirs(d, exist_ok=True)
            text = "[\n" + ",\n".join(json.dumps(e) for e in out)
            if node == "algo-2" and half == 1:
                text += ',\n{"name": "some_other_op", "ph": "X", "ts": 12'  # cut inside an event
            else:
                text += "\n]\n"
            with open(os.path.join(d, f"{end_us}_{pid}-{node}_pythontimeline.json"), "w") as f:
                f.write(text)
    return starts


def read_export(d):
    """An exported directory: ({node: {key: [(t, v)]}}, {node: {step: start_s}})."""
    sysm, steps = {}, {}
    for root, _, files in os.walk(os.path.join(d, "system")):
        for fn in files:
            for line in open(os.path.join(root, fn)):
                r = json.loads(line)
                sysm.setdefault(r["NodeId"], {}).setdefault((r["Name"], r["Dimension"]), []).append(
                    (r["Timestamp"], r["Value"]))
    for root, _, files in os.walk(os.path.join(d, "framework")):
        for fn in files:
            node = fn.split("_", 1)[1].rsplit("_", 1)[0].split("-", 1)[1]  # <N>-<node>
            evs = json.load(open(os.path.join(root, fn)))
            base = next(e["args"]["start_time_since_epoch_in_micros"] for e in evs
                        if e["ph"] == "M" and "start_time_since_epoch_in_micros" in e.get("args", {}))
            for e in evs:
                if e["name"] == "Step:ModeKeys.TRAIN":
                    steps.setdefault(node, {})[int(e["args"]["step_num"])] = (base + e["ts"]) / 1e6
    for v in sysm.values():
        for k in v:
            v[k].sort()
    return sysm, steps


def runs(store):
    p = strobe("ls", "--json", store=store)
    return json.loads(p.stdout) if p.returncode == 0 else []


# ---- the two-node directory ---------------------------------------------------
src = os.path.join(TMP, "sm-job")
truth, cut, garbled = write_system(src)
starts = write_framework(src)

p = strobe("import", "sagemaker", src, store=db)
check("import: exit 0", p.returncode == 0, (p.returncode, p.stderr))
summary = p.stdout.strip()
print("# " + summary)
check("import: one summary line", len(p.stdout.splitlines()) == 1, p.stdout)
check("import: the summary names the nodes", "2 nodes (algo-1, algo-2)" in summary, summary)
check("import: skipped lines reported (one cut short, one garbled)",
      "skipped 2 lines (1 cut short, 1 garbled)" in summary, summary)
check("import: the cut trace event is counted", "1 bad events" in summary, summary)
m = re.search(r"algo-2 ([+-]\d+\.\d+)s \((\d+) steps\)", summary)
check("import: an offset is estimated for algo-2 from its common steps",
      m is not None and int(m.group(2)) == STEPS, summary)
if m:
    near("import: algo-2's offset is 2 s (10 ms)", float(m.group(1)), 2.0, 0.010, "s")
offset = float(m.group(1)) if m else 2.0

# strobe trace of the two nodes: each node its own process group (its
# metrics process and its processes, named and sorted by node)
tr = os.path.join(TMP, "sm.trace.json")
t = strobe("trace", "-o", tr, "last", store=db)
evs = json.load(open(tr))["traceEvents"] if t.returncode == 0 else []
names = {e["pid"]: e["args"]["name"] for e in evs
         if e.get("ph") == "M" and e.get("name") == "process_name"}
sort = {e["pid"]: e["args"]["sort_index"] for e in evs
        if e.get("ph") == "M" and e.get("name") == "process_sort_index"}
metrics = {n.split()[0]: pid for pid, n in names.items() if n.endswith(" metrics")}
check("trace: one metrics process per node", sorted(metrics) == ["algo-1", "algo-2"], names)
check("trace: every process is named by its node",
      names and all(n.split()[0] in SKEW for n in names.values()), names)
ordered = sorted(names, key=lambda pid: sort.get(pid, 0))
check("trace: the processes sort by node (algo-1's before algo-2's)",
      [names[p].split()[0] for p in ordered] == sorted(names[p].split()[0] for p in ordered),
      [names[p] for p in ordered])
host_counters = [e for e in evs if e.get("ph") == "C" and "node=" in e["name"] and
                 "pid=" not in e["name"]]
misplaced = [e["name"] for e in host_counters
             if e["pid"] != metrics.get(re.search(r"node=([\w-]+)", e["name"]).group(1))]
check("trace: each node's host counters are on its own metrics process",
      host_counters and not misplaced, misplaced[:5])
steps_by_node = {}
for e in evs:
    if e.get("cat") == "step" and e.get("ph") in ("X", "B"):
        steps_by_node.setdefault(names.get(e["pid"], "?").split()[0], 0)
        steps_by_node[names.get(e["pid"], "?").split()[0]] += 1
check("trace: each node's steps are in its group", steps_by_node == {n: STEPS for n in SKEW},
      steps_by_node)

r = show(db)
check("import: the run is finished", r["status"] == "finished", r["status"])
check("import: name sagemaker-<dir>", r["name"] == "sagemaker-sm-job", r["name"])
check("import: tagged source=sagemaker", r["tags"].get("source") == "sagemaker", r["tags"])
check("import: host is both nodes", r["host"] == "algo-1,algo-2", r["host"])
ranks = r["ranks"]
check("import: one step group per node", len(ranks) == 2, ranks)
check("import: 100 steps per node", [g["count"] for g in ranks] == [STEPS, STEPS],
      [g["count"] for g in ranks])
procs = {p["pid"]: p for p in r["processes"]}
check("import: the pids that collide across nodes are told apart", len(procs) == 2, procs)
check("import: each process carries its node (smdebug names no process)",
      sorted(p["comm"] for p in procs.values()) == ["algo-1", "algo-2"],
      [p["comm"] for p in procs.values()])
for g in ranks:
    ph = g["phases"]
    check(f"import: pid {g['pid']}: data, forward, backward and optimizer phases found",
          all(ph[k]["share"] > 0.02 for k in ("data", "forward", "backward", "optimizer")), ph)
    near(f"import: pid {g['pid']}: mean step 434 ms", g["mean_ns"] / 1e6, 434.0, 1.0, "ms")

metrics = r["metrics"]
for node in SKEW:
    for key, pts in truth[node].items():
        name, _, labels = key.partition("{")
        labels = labels.rstrip("}")
        full = f"{name}{{{','.join(sorted((labels.split(',') if labels else []) + ['node=' + node]))}}}"
        got = metrics.get(full, {}).get("count")
        if not check(f"import: {full}: {len(pts)} points", got == len(pts), got):
            continue
for node in SKEW:
    for key in (f"cpu.util{{node={node}}}", f"cpu.iowait{{node={node}}}"):
        check(f"import: {key}, the mean over cores of each snapshot, has {SNAPS} points",
              metrics.get(key, {}).get("count") == SNAPS, metrics.get(key))

# the text summary's METRIC table has each node's host rows (they all
# carry node=, and are the nodes' own host metrics), the node in a column
text = strobe("show", "last", store=db).stdout
check("import: show's METRIC table has a NODE column",
      any(l.split()[:3] == ["METRIC", "NODE", "MEAN"] for l in text.splitlines()), text[:800])
for node in SKEW:
    key = f"cpu.util{{node={node}}}"
    row = [l.split() for l in text.splitlines() if l.split()[:2] == ["cpu.util", node]]
    mean = metrics.get(key, {}).get("mean")
    check(f"import: show lists {key} in its METRIC table with the JSON's mean",
          len(row) == 1 and mean is not None and row[0][2] == f"{mean:.1f}%", (row, mean))

pts = points(db, "cpu.util")
for node in SKEW:
    for core in (0, 1):
        want = truth[node][f"cpu.util{{core={core}}}"]
        got = pts.get(f"cpu.util{{core={core},node={node}}}", [])
        sk = offset if node == "algo-2" else 0.0
        ok = len(got) == len(want) and all(
            gv == wv and abs(gt - (wt - sk)) < 1e-6 for (gt, gv), (wt, wv) in zip(got, want))
        check(f"import: cpu.util core {core} of {node}: values bit-exact, times corrected", ok,
              (got[:2], want[:2]))
    mean = pts.get(f"cpu.util{{node={node}}}", [])
    a = truth[node]["cpu.util{core=0}"]
    b = dict(truth[node]["cpu.util{core=1}"])
    if mean and node == "algo-1":
        check("import: the whole-host mean of snapshot 0 is the cores' mean",
              mean[0][1] == (a[0][1] + b[a[0][0]]) / 2, (mean[0], a[0], b.get(a[0][0])))
a1 = pts.get("cpu.util{core=0,node=algo-1}", [])
a2 = pts.get("cpu.util{core=0,node=algo-2}", [])
if a1 and a2:
    d = [abs(x[0] - y[0]) for x, y in zip(a1[:10], a2[:10])]
    check("import: system times of algo-2 corrected onto algo-1's (within 10 ms)",
          max(d) < 0.010, d)

# the step starts, through an export of the imported run
out = os.path.join(TMP, "sm-out")
p = strobe("export", "--format", "sagemaker", "-o", out, "last", store=db)
check("export of the import: exit 0", p.returncode == 0, p.stderr)
sysm, steps = read_export(out)
check("export of the import: both nodes' traces", sorted(steps) == ["algo-1", "algo-2"],
      sorted(steps))
if sorted(steps) == ["algo-1", "algo-2"]:
    common = sorted(set(steps["algo-1"]) & set(steps["algo-2"]))
    check("export of the import: 100 steps per node",
          len(steps["algo-1"]) == STEPS and len(steps["algo-2"]) == STEPS and len(common) == STEPS,
          (len(steps["algo-1"]), len(steps["algo-2"])))
    worst = max(abs(steps["algo-1"][k] - steps["algo-2"][k]) for k in common)
    check("import: algo-2's step starts line up with algo-1's (within 10 ms)", worst < 0.010,
          worst)
    err = max(abs(steps["algo-1"][k] - starts["algo-1"][k]) for k in common)
    check("import: algo-1's step starts are where the files put them (1 us)", err < 1e-6, err)
check("export of the import: per-core CPU of both nodes",
      len(sysm.get("algo-2", {}).get(("cpu0", "CPUUtilization"), [])) == SNAPS - 1,
      {n: len(v.get(("cpu0", "CPUUtilization"), [])) for n, v in sysm.items()})
check("export of the import: the kept SageMaker series go back under their own names",
      all(k in sysm.get("algo-1", {}) for k in (("ReceiveBytesPerSecond", "Algorithm"),
                                                 ("TransmitBytesPerSecond", "Algorithm"),
                                                 ("ReceiveBytesPerSecond", "Platform"))),
      list(sysm.get("algo-1", {}))[:12])

# ---- nothing to import ------------------------------------------------------------
before = len(runs(db))
empty = os.path.join(TMP, "empty")
os.makedirs(empty)
for what, d in (("an empty directory", empty), ("a directory that does not exist",
                                                  os.path.join(TMP, "nope"))):
    p = strobe("import", "sagemaker", d, store=db)
    check(f"{what}: exit 1", p.returncode == 1, (p.returncode, p.stderr))
    check(f"{what}: one line, naming the directory",
          len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith(f"strobe: cannot import '{d}'"),
          p.stderr)
check("nothing to import: no run is created", len(runs(db)) == before, len(runs(db)))
p = strobe("import", "sagemaker", empty, store=db)
check("an empty directory: says there is no SageMaker output",
      "no SageMaker profiler output (system/ or framework/) found" in p.stderr, p.stderr)
fresh = store_path("never.db")
strobe("import", "sagemaker", empty, store=fresh)
check("nothing to import: no store is created", not os.path.exists(fresh))

# ---- garbage -------------------------------------------------------------------------
junk = os.path.join(TMP, "junk")
sysd = os.path.join(junk, "system", "incremental", "2023111422")
fwd = os.path.join(junk, "framework", "pevents", "2023111422")
os.makedirs(sysd)
os.makedirs(fwd)
g = random.Random(7)
hostile = [
    '{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":1,"NodeId":"n","Timestamp":9223372036.854775807}',
    '{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":1,"NodeId":"n","Timestamp":-9223372036.854775808}',
    '{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":1e308,"NodeId":"n","Timestamp":1e300}',
    '{"Type":"cpu","Name":"cpu99999999999","Dimension":"CPUUtilization","Value":1,"Timestamp":5}',
    '{"Type":"a,b=c","Name":"x}{","Dimension":"d=e","Value":-0.0,"NodeId":"a/b","Timestamp":"7"}',
    "[" * 100000, '"\\ud800"', "\x00\xff", "{}", "[]", "null",
]
with open(os.path.join(sysd, "1700000000.n.json"), "w") as f:
    f.write("\n".join(hostile + ["".join(chr(g.randrange(1, 256)) for _ in range(200))
                                  for _ in range(50)]))
trace = [
    '{"name":"process_name","ph":"M","pid":0,"args":{"start_time_since_epoch_in_micros":9223372036854775}}',
    '{"name":"Step:ModeKeys.TRAIN","ph":"X","ts":9223372036854775807,"dur":9223372036854775807,"pid":1,"tid":1,"args":{"step_num":4294967295}}',
    '{"name":"Step:ModeKeys.TRAIN","ph":"X","ts":-9223372036854775808,"dur":-5,"pid":1,"tid":1,"args":{"step_num":"x"}}',
    '{"name":"x","ph":"E","ts":1,"pid":"p","tid":[1]}',
    '{"name":"y","ph":"B","ts":2}', '{"name":"c","ph":"C","ts":3,"args":{"a":1,"b":"s","value":2}}',
    '{"ph":"X"}', '{"name":"strobe.step","ph":"i","ts":4,"args":{"step_num":-1}}', "[[[[[[1]]]]]]",
]
with open(os.path.join(fwd, "1_n_pythontimeline.json"), "w") as f:
    f.write("[\n" + ",\n".join(trace) + "\n]")
with open(os.path.join(fwd, "2_n_model_timeline.json"), "wb") as f:
    f.write(bytes(g.randrange(256) for _ in range(5000)))
with open(os.path.join(fwd, "3__horovod_timeline.json"), "w") as f:
    f.write('{"traceEvents": [{"name":"allreduce","ph":"X","ts":5,"dur":1,"pid":1,"tid":1}]}')
p = strobe("import", "sagemaker", junk, store=db)
check("garbage: no crash, a clean exit", p.returncode in (0, 1), (p.returncode, p.stderr[-500:]))
print("# " + p.stdout.strip())
if p.returncode == 0:
    check("garbage: show reads the run", strobe("show", "last", store=db).returncode == 0)
    p = strobe("export", "--format", "sagemaker", "-o", os.path.join(TMP, "junk-out"), "last",
               store=db)
    check("garbage: export of it does not crash", p.returncode in (0, 1), p.stderr[-500:])

# ---- times and step numbers no SageMaker writes ----------------------------------
odd = os.path.join(TMP, "odd-times")
sysd = os.path.join(odd, "system", "incremental", "2023111422")
fwd = os.path.join(odd, "framework", "pevents", "2023111422")
os.makedirs(sysd)
os.makedirs(fwd)
lines = [json.dumps({"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 10.0 + k,
                     "NodeId": "n", "Timestamp": T0 + k}) for k in range(5)]
for bad_ts in (-5, 7, 9223372036.8):  # before 1970, 1970, 2262
    lines.insert(2, json.dumps({"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization",
                                "Value": 1.0, "NodeId": "n", "Timestamp": bad_ts}))
with open(os.path.join(sysd, f"{int(T0)}.n.json"), "w") as f:
    f.write("\n".join(lines) + "\n")
start_us = int(T0 * 1e6)
trace = [{"name": "process_name", "ph": "M", "pid": 0,
          "args": {"start_time_since_epoch_in_micros": start_us}},
         {"name": "Step:ModeKeys.TRAIN", "ph": "X", "ts": 100, "dur": 1000, "pid": 1, "tid": 1,
          "args": {"step_num": 1}},
         {"name": "Step:ModeKeys.TRAIN", "ph": "X", "ts": 2000, "dur": -5, "pid": 1, "tid": 1,
          "args": {"step_num": 2}},
         {"name": "strobe.step", "ph": "i", "ts": 3000, "pid": 1, "tid": 1, "args": {"step_num": 2.5}}]
with open(os.path.join(fwd, f"{start_us + 4000}_n_pythontimeline.json"), "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(e) for e in trace) + "\n]")
p = strobe("import", "sagemaker", "--name", "odd", odd, store=db)
check("odd times: the import succeeds", p.returncode == 0, p.stderr[-300:])
m = re.search(r"(\d+) garbled\).*?(\d+) bad events", p.stdout)
check("odd times: a Timestamp before 2001 or after 2100 is a garbled line (3)",
      m and int(m.group(1)) == 3, p.stdout)
check("odd times: a span with a negative dur and a step number of 2.5 are bad events (2)",
      m and int(m.group(2)) == 2, p.stdout)
if p.returncode == 0:
    r = show(db, "odd")
    near("odd times: the run starts at its first real point", r["start_ns"] / 1e9, T0, 0.01)
    check("odd times: and lasts seconds, not decades", r["duration_s"] < 10, r["duration_s"])

# ---- node names that would read as labels ---------------------------------------------
# A node's name joins its series' labels, the run's host list and the trace's
# process names; ',', '=', '{' and '}' become '_' there. Every line of such a
# node must still land in that one node (each line made a node of its own
# before, and the import failed on a duplicate series).
odd_nodes = os.path.join(TMP, "odd-nodes")
sysd = hour_dir(os.path.join(odd_nodes, "system", "incremental"), T0)
os.makedirs(sysd)
NAMES = ("algo-1", "x,y=z{1}")
for i, node in enumerate(NAMES):
    with open(os.path.join(sysd, f"{int(T0)}.{i}.json"), "w") as f:
        for k in range(5):
            f.write(json.dumps({"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization",
                                "Value": 10.0 * (i + 1) + k, "NodeId": node,
                                "Timestamp": T0 + k}) + "\n")
db3 = store_path("odd-nodes.db")
p = strobe("import", "sagemaker", "--name", "oddn", odd_nodes, store=db3)
check("odd node names: the import succeeds", p.returncode == 0, p.stderr[-300:])
pts = points(db3, "cpu.util", "oddn")
want = {"cpu.util{core=0,node=algo-1}", "cpu.util{core=0,node=x_y_z_1_}",
        "cpu.util{node=algo-1}", "cpu.util{node=x_y_z_1_}"}
check("odd node names: one series a node and core", set(pts) == want, sorted(pts))
check("odd node names: each node's own values",
      [v for _, v in pts.get("cpu.util{core=0,node=x_y_z_1_}", [])] ==
      [20.0, 21.0, 22.0, 23.0, 24.0], pts)
out = os.path.join(TMP, "odd-nodes-out")
p = strobe("export", "--format", "sagemaker", "-o", out, "oddn", store=db3)
check("odd node names: export exit 0", p.returncode == 0, p.stderr)
ids = set()
for root, _, files in os.walk(os.path.join(out, "system")):
    for fn in files:
        with open(os.path.join(root, fn)) as f:
            ids |= {json.loads(line)["NodeId"] for line in f if line.strip()}
check("odd node names: the export names the two nodes", ids == {"algo-1", "x_y_z_1_"}, ids)

# ---- a round trip of a real recording ---------------------------------------------
db2 = store_path("rt.db")
p = run(db2, PYTHON, "examples/train.py", "--steps", "40", opts=("--name", "orig"))
check("round trip: the recording runs", p.returncode == 0, p.stderr[-500:])
rt = os.path.join(TMP, "rt-sm")
p = strobe("export", "--format", "sagemaker", "-o", rt, "orig", store=db2)
check("round trip: export exit 0", p.returncode == 0, p.stderr)
p = strobe("import", "sagemaker", "--name", "back", rt, store=db2)
check("round trip: import exit 0", p.returncode == 0, p.stderr)
print("# " + p.stdout.strip())
a, b = show(db2, "orig"), show(db2, "back")
check("round trip: the same step count", a["steps"] and b["steps"] and
      a["steps"]["count"] == b["steps"]["count"] == 40,
      (a["steps"] and a["steps"]["count"], b["steps"] and b["steps"]["count"]))
if a["phases"] and b["phases"]:
    for ph in ("data", "forward", "backward", "optimizer", "comm", "other"):
        near(f"round trip: {ph} share (0.5 %)", b["phases"][ph]["share"],
             a["phases"][ph]["share"], 0.005)
pa, pb = points(db2, "cpu.util", "orig"), points(db2, "cpu.util", "back")
cores = [k for k in pa if "core=" in k]
check("round trip: every per-core cpu.util series", cores and sorted(cores) == sorted(
    k for k in pb if "core=" in k), (sorted(pa), sorted(pb)))
for k in cores:
    x, y = pa[k], pb.get(k, [])
    ok = len(x) == len(y) and all(abs(s[0] - t[0]) < 1e-6 and s[1] == t[1] for s, t in zip(x, y))
    check(f"round trip: {k}: same points (times 1 us, values exact)", ok,
          (len(x), len(y), x[:2], y[:2]))
check("round trip: data-loader workers kept",
      a["workers"]["count"] == b["workers"]["count"], (a["workers"], b["workers"]))
done()
