#!/usr/bin/python3
"""torch.profiler windows: `strobe run --torch-profile A-B` and `strobe import
torch-trace RUN FILE`.

The events are read back from the store independently of strobe's own
reader: the event blocks straight from SQLite, decoded here after
docs/store-format.md ("Event blocks") with libzstd through ctypes. Every
operator must lie inside the recorded step it is stamped with, and inside
the window asked for; a trace made by torch in the test and a hand-made
Kineto one (ProfilerStep markers, a base time that is a second off, a GPU
kernel on a stream, kinds that are not imported) land their operators in
the right steps; a cut-off and a garbled file import what is readable and
say how many were skipped.
"""
import json
import os
import shutil

from strobetest import *
from stored_events import outside_own_step, steps_of, stored_events

TRAIN = r'''
import os, sys, time
import torch, torch.nn as nn
MODE = os.environ.get("MODE", "auto")
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
crit = nn.CrossEntropyLoss()
prof = None
if MODE == "own":  # the script profiles steps 3-4 itself, labelled with strobe's numbers
    import strobe
    rf = torch.autograd.profiler.record_function
for i in range(int(os.environ.get("STEPS", "12"))):
    if MODE == "own":
        n = strobe.step()
        if n == 3:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            prof.start()
        label = rf(f"ProfilerStep#{n}") if prof is not None else None
        if label is not None:
            label.__enter__()
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    loss = crit(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.01)
    if MODE == "own" and label is not None:
        label.__exit__(None, None, None)
        if n == 4:
            prof.stop()
            prof.export_chrome_trace(os.environ["TRACE"])
            prof = None
'''

def import_trace(db, path, ref="last"):
    return strobe("import", "torch-trace", ref, path, store=db)


def run_id(db):
    r = show(db)
    return r["id"] if r else None


def main():
    script = os.path.join(TMP, "train.py")
    with open(script, "w") as f:
        f.write(TRAIN)

    # ---- strobe run --torch-profile 5-7 ------------------------------------
    db = store_path("run.db")
    p = run(db, PYTHON, script, opts=("--torch-profile", "5-7", "--no-report"))
    check("--torch-profile: the job exits 0", p.returncode == 0, p.stderr[-800:])
    check("--torch-profile: no warning", "warning" not in p.stderr, p.stderr[-800:])
    rid = run_id(db)
    ev = stored_events(db, rid) if rid else []
    steps = steps_of(ev)
    ops = [e for e in ev if e["name"].startswith("op:")]
    check("--torch-profile: operators stored", len(ops) > 50, f"{len(ops)} op: events")
    check("--torch-profile: aten operators among them",
          any(o["name"].startswith("op:aten::addmm") for o in ops),
          sorted({o["name"] for o in ops})[:10])
    check("--torch-profile: 12 steps recorded", sorted(steps) == list(range(1, 13)),
          sorted(steps))
    if all(n in steps for n in (5, 6, 7)) and ops:
        lo, hi = steps[5][0], steps[7][1]
        out = [o for o in ops if not (lo <= o["ts"] and o["ts"] + o["dur"] <= hi)]
        check("--torch-profile: every operator lies inside steps 5-7", not out,
              f"{len(out)} of {len(ops)} outside, e.g. {out[:2]} (window {lo}..{hi})")
        check("--torch-profile: operators stamped with steps 5, 6 and 7 only",
              {o["step"] for o in ops} == {5, 6, 7}, sorted({o["step"] for o in ops}))
        six = [o for o in ops if o["step"] == 6]
        bad = outside_own_step(six, steps)
        check("--torch-profile: step 6's operators lie inside step 6", six and not bad,
              f"{len(bad)} of {len(six)} outside, e.g. {bad[:2]}")
        bad = outside_own_step(ops, steps)
        check("--torch-profile: each operator inside its own step", not bad,
              f"{len(bad)} of {len(ops)}")
        main_thread = (steps[6][2], steps[6][3])
        check("--torch-profile: operators on the thread of the steps",
              {(o["pid"], o["tid"]) for o in ops} == {main_thread},
              {(o["pid"], o["tid"]) for o in ops})
    r = show(db)
    top = (r or {}).get("top_operators") or {}
    check("show --json: top_operators counts every operator", top.get("events") == len(ops)
          and top.get("step_min") == 5 and top.get("step_max") == 7 and top.get("operators"),
          json.dumps(top)[:300])
    if top.get("operators"):
        o = top["operators"][0]
        check("show --json: an operator has name, count, total_ms, share",
              set(o) >= {"name", "count", "total_ms", "share"} and 0 < o["share"] <= 1,
              o)
    text = strobe("show", "last", store=db).stdout
    check("show: a top-operators table", "OPERATOR" in text and "aten::" in text, text[-1500:])
    check("show: the run's event count includes the operators",
          r and r["events"] == len(ev), f"{r and r['events']} against {len(ev)} decoded")
    # the import rewrites the catalog row: the recorder's counters survive it
    util = ((r or {}).get("metrics") or {}).get("cpu.util", {}).get("count", 0)
    check("--torch-profile: the run keeps its sample count through the import",
          r and util > 0 and r["samples"] >= util, (r and r["samples"], util))

    # the operators in the other views: the trace (category operator, inside
    # the window's steps) and the report's top-operators table
    tr = os.path.join(TMP, "w.trace.json")
    t = strobe("trace", "--steps", "5-7", "-o", tr, "last", store=db)
    tev = json.load(open(tr))["traceEvents"] if t.returncode == 0 else []
    top_ops = [e for e in tev if e.get("cat") == "operator"]
    check("trace --steps 5-7: every stored operator is a slice of category operator",
          ops and len([e for e in top_ops if e.get("ph") == "X" or e.get("ph") == "B"]) == len(ops),
          (t.stderr[-300:], len(top_ops), len(ops)))
    rep = os.path.join(TMP, "w.html")
    t = strobe("report", "-o", rep, "last", store=db)
    html = open(rep, encoding="utf-8").read() if t.returncode == 0 else ""
    name = top["operators"][0]["name"] if top.get("operators") else "aten::"
    check("report: the top operators are in the page's data", "aten::" in html and name in html,
          (t.stderr[-300:], name))

    # ---- a trace torch wrote, imported afterwards ---------------------------
    db2 = store_path("own.db")
    trace = os.path.join(TMP, "own.json")
    env = dict(os.environ, MODE="own", TRACE=trace)
    p = run(db2, PYTHON, script, opts=("--no-report",), env=env)
    check("torch's own trace: the job exits 0 and writes it",
          p.returncode == 0 and os.path.exists(trace), p.stderr[-800:])
    legacy = None
    if os.path.exists(trace):
        with open(trace) as f:
            legacy = f.read()
        # copies of the run before any import, for the cut and garbled files
        fresh = {k: store_path(f"own-{k}.db") for k in ("cut", "garbled")}
        for path in fresh.values():
            shutil.copy(db2, path)
        p = import_trace(db2, trace)
        check("import torch-trace: exit 0", p.returncode == 0, p.stderr)
        check("import torch-trace: aligned by 2 of 2 ProfilerStep markers",
              "2 of 2 ProfilerStep markers" in p.stdout and "legacy" in p.stdout, p.stdout)
        rid2 = run_id(db2)
        ev2 = stored_events(db2, rid2)
        steps2 = steps_of(ev2)
        ops2 = [e for e in ev2 if e["name"].startswith("op:")]
        check("import torch-trace: operators in steps 3 and 4",
              ops2 and {o["step"] for o in ops2} == {3, 4}, sorted({o["step"] for o in ops2}))
        bad = outside_own_step(ops2, steps2)
        check("import torch-trace: each operator inside its own step", ops2 and not bad,
              f"{len(bad)} of {len(ops2)} outside, e.g. {bad[:2]}")
        n_ops = len(ops2)

        # the same trace again: refused, nothing stored twice
        p = import_trace(db2, trace)
        again = [e for e in stored_events(db2, rid2) if e["name"].startswith("op:")]
        check("import torch-trace twice: refused in one line, nothing stored twice",
              p.returncode != 0 and "imported before" in p.stderr and
              p.stderr.strip().count("\n") == 0 and len(again) == n_ops,
              (p.returncode, p.stderr, len(again), n_ops))

        # cut short and garbled copies, each into a copy of the run from before
        cut = os.path.join(TMP, "cut.json")
        with open(cut, "w") as f:
            f.write(legacy[:len(legacy) // 2])
        p = import_trace(fresh["cut"], cut)
        got = len([e for e in stored_events(fresh["cut"], rid2) if e["name"].startswith("op:")])
        check("cut-off trace: imports what is whole, says it is cut",
              p.returncode == 0 and 0 < got < n_ops and "cut short" in p.stderr,
              f"rc {p.returncode}, {got} of {n_ops}: {p.stderr.strip()}")
        garbled = os.path.join(TMP, "garbled.json")
        i = legacy.index('"aten::addmm"')
        with open(garbled, "w") as f:  # one element broken, and bytes that are no JSON
            f.write(legacy[:i] + '"aten::addmm", "ph": "X", "ts": @@' + legacy[i + 40:])
        p = import_trace(fresh["garbled"], garbled)
        ev3 = stored_events(fresh["garbled"], rid2)
        got = len([e for e in ev3 if e["name"].startswith("op:")])
        check("garbled trace: the rest imported, the skipped counted",
              p.returncode == 0 and n_ops - 3 <= got < n_ops and "1 garbled" in p.stderr
              and "1 skipped" in p.stdout, f"{got} of {n_ops}: {p.stdout} {p.stderr}")
        check("garbled trace: the steps recorded before are intact",
              steps_of(ev3) == steps_of(stored_events(db2, rid2)), "steps changed")

    # ---- a hand-made Kineto trace ------------------------------------------
    if steps:
        base = steps[3][0] - 10**9  # a second off: the markers must win over the clock
        s3, s4 = steps[3], steps[4]

        def us(ns):  # trace time: us after the base, with ns decimals
            return round((ns - base) / 1000.0, 3)

        def op(name, start_ns, dur_ns, cat="cpu_op", pid=4242, tid=4243):
            return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                    "ts": us(start_ns), "dur": round(dur_ns / 1000.0, 3),
                    "args": {"External id": 1}}

        # the trace's clock is 250 us behind the run's: markers pull it in
        lag = 250_000
        events = [{"ph": "M", "name": "process_name", "pid": 4242, "args": {"name": "python"}}]
        for s in (s3, s4):
            n = 3 if s is s3 else 4
            t0 = s[0] - lag
            events.append(op(f"ProfilerStep#{n}", t0 + 1000, s[1] - s[0] - 2000,
                             cat="user_annotation"))
            events.append(op("aten::linear", t0 + 5000, 3000))
            events.append(op("aten::addmm", t0 + 6000, 1500))
            events.append(op("void gemm_kernel<float>", t0 + 7000, 900, cat="kernel", pid=0,
                             tid=7))
            events.append(op("cudaLaunchKernel", t0 + 6500, 100, cat="cuda_runtime"))
            events.append(op("train.py(12): step", t0 + 4000, 5000, cat="python_function"))
            events.append({"ph": "s", "cat": "ac2g", "id": n, "pid": 4242, "tid": 4243,
                           "ts": us(t0 + 6500), "name": "ac2g"})
        kineto = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Fake GPU"}],
                  "distributedInfo": {"rank": 0}, "baseTimeNanoseconds": base,
                  "traceEvents": events, "traceName": "fake.pt.trace.json"}
        kpath = os.path.join(TMP, "kineto.json")
        with open(kpath, "w") as f:
            json.dump(kineto, f, indent=1)
        before_ids = {(e["name"], e["ts"]) for e in ev}
        p = import_trace(db, kpath)
        check("Kineto: import exits 0, aligned by 2 markers",
              p.returncode == 0 and "Kineto" in p.stdout and "2 of 2 ProfilerStep" in p.stdout,
              p.stdout + p.stderr)
        ev3 = [e for e in stored_events(db, rid) if (e["name"], e["ts"]) not in before_ids]
        names = sorted({e["name"] for e in ev3})
        check("Kineto: op:, kernel:, cuda: and py: events, nothing else",
              names == ["cuda:cudaLaunchKernel", "kernel:void gemm_kernel<float>",
                        "op:aten::addmm", "op:aten::linear", "py:train.py(12): step"], names)
        kops = [e for e in ev3 if e["name"].startswith("op:")]
        check("Kineto: operators in steps 3 and 4, inside them",
              len(kops) == 4 and {o["step"] for o in kops} == {3, 4}
              and not outside_own_step(kops, steps), kops)
        addmm = sorted(e["ts"] for e in ev3 if e["name"] == "op:aten::addmm")
        want = sorted(s[0] + 5000 for s in (s3, s4))  # 6000 ns after the marker's 1000
        check("Kineto: times to the ns after the marker shift", addmm == want,
              f"{addmm} against {want}")
        kern = [e for e in ev3 if e["name"].startswith("kernel:")]
        check("Kineto: GPU kernels on a thread of their own",
              kern and all(e["tid"] >= 2**32 for e in kern), [(e["pid"], e["tid"]) for e in kern])

    # ---- what must fail cleanly ----------------------------------------------
    bad = os.path.join(TMP, "none.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": []}')
    p = import_trace(db, bad)
    check("a trace with no events: exit 1, one line", p.returncode == 1
          and len(p.stderr.strip().splitlines()) == 1, p.stderr)
    p = import_trace(db, os.path.join(TMP, "missing.json"))
    check("a missing file: exit 1", p.returncode == 1 and "cannot import" in p.stderr, p.stderr)
    p = strobe("run", "--torch-profile", "7-5", "--", "true", store=db)
    check("--torch-profile 7-5: a usage error, 125", p.returncode == 125, p.stderr)

    # ---- the demo's training (examples/train.py, data-loader workers) -------
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    db4 = store_path("demo.db")
    p = run(db4, PYTHON, os.path.join(root, "examples", "train.py"), "--seconds", "5",
            "--workers", "2", opts=("--torch-profile", "5-7", "--no-report"))
    check("demo --torch-profile 5-7: the training exits 0", p.returncode == 0, p.stderr[-600:])
    rid4 = run_id(db4)
    ev4 = stored_events(db4, rid4) if rid4 else []
    steps4 = steps_of(ev4)
    ops4 = [e for e in ev4 if e["name"].startswith("op:")]
    bad = outside_own_step(ops4, steps4)
    check("demo --torch-profile 5-7: operators, each inside its own step of 5-7",
          ops4 and not bad and {o["step"] for o in ops4} == {5, 6, 7},
          (len(ops4), len(bad), sorted({o["step"] for o in ops4})))
    done()


main()
