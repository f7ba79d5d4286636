#!/usr/bin/env python3
"""Training slowdown under a profiler: examples/train.py with no profiler,
under `strobe run` at its defaults, and under torch.profiler (the whole run
profiled, CPU activities, as a user would wrap an unmodified script), in
paired rounds whose order rotates, so drift on a shared machine hits every
mode alike. The figure is the script's own median step time.

    bench/slowdown.py --strobe build/strobe [--rounds 3] [--steps 150] [--py]

--py compares Python stack sampling instead: no profiler, strobe at its
defaults, strobe --py-sample 100, and cProfile over the whole run (python -m
cProfile, as a user would profile an unmodified script). It also prints what
the sampling cost the recorder (its own CPU, strobe.cpu, beside the run at
defaults) per sample, and the bytes stored per sample (py_blocks).

Prints a markdown table: median of the rounds' medians per mode, and the
ratio to no profiler.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAIN = os.path.join(ROOT, "examples", "train.py")
PY = "/usr/bin/python3"

# torch.profiler around an unmodified script
TORCH_WRAP = """
import runpy, sys, torch
script = sys.argv[1]
sys.argv = sys.argv[1:]
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    runpy.run_path(script, run_name="__main__")
print("torch.profiler events:", len(prof.events()), file=sys.stderr)
"""


def median_step_ms(out):
    m = re.search(r"median step ([0-9.]+) ms", out)
    if not m:
        raise SystemExit("slowdown: train.py printed no median step:\n" + out)
    return float(m.group(1))


def run(mode, args, tmp):
    train = [TRAIN, "--steps", str(args.steps), "--workers", str(args.workers), "--threads", "1"]
    store = os.path.join(tmp, "slow.db")
    if os.path.exists(store):
        os.unlink(store)
    if mode == "none":
        cmd = [PY] + train
    elif mode == "strobe":
        cmd = [args.strobe, "run", "--store", store, "--quiet", "--", PY] + train
    elif mode == PY_MODE:
        cmd = [args.strobe, "run", "--store", store, "--quiet", "--py-sample", "100", "--",
               PY] + train
    elif mode == "cProfile":
        cmd = [PY, "-m", "cProfile", "-o", os.path.join(tmp, "cprofile.out")] + train
    else:
        wrap = os.path.join(tmp, "torch_wrap.py")
        with open(wrap, "w") as f:
            f.write(TORCH_WRAP)
        cmd = [PY, wrap] + train
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"slowdown: {mode} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if mode in ("strobe", PY_MODE):
        recorder_cost(mode, args.strobe, store)
    return median_step_ms(p.stdout), cpu_s * 1e3 / args.steps


PY_MODE = "strobe --py-sample 100"
COSTS = {}  # mode -> list of (recorder CPU s, Python samples, bytes of py_blocks)


def recorder_cost(mode, strobe, store):
    """The recorder's own CPU over the run (its strobe.cpu series, percent of
    one core at each frame, times the frame's interval) and, with samples,
    their count and stored bytes, read from the store."""
    import json
    import sqlite3
    shown = json.loads(subprocess.run([strobe, "show", "last", "--store", store, "--json"],
                                      capture_output=True, text=True, check=True).stdout)
    db = sqlite3.connect(store)
    try:
        run_id = shown["id"]
        pct_s = sum_series_seconds(strobe, store)
        py = db.execute("SELECT coalesce(sum(count) FILTER (WHERE kind = 1), 0), "
                        "coalesce(sum(length(data)), 0) FROM py_blocks WHERE run_id = ?",
                        (run_id,)).fetchone() if mode == PY_MODE else (0, 0)
    finally:
        db.close()
    COSTS.setdefault(mode, []).append((pct_s, py[0], py[1]))


def sum_series_seconds(strobe, store):
    """CPU seconds of the recorder: the integral of strobe.cpu (percent)."""
    out = subprocess.run([strobe, "export", "last", "--store", store, "--format", "csv",
                          "--metric", "strobe.cpu"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    head = out[0].split(",")
    t_i, v_i = head.index("time_ns") if "time_ns" in head else 0, len(head) - 1
    pts = [(int(r.split(",")[t_i]), float(r.split(",")[v_i])) for r in out[1:] if r]
    return sum((b[0] - a[0]) / 1e9 * b[1] / 100 for a, b in zip(pts, pts[1:]))


def startup_cost(strobe, runs):
    """What a Python command that never imports torch pays for strobe's
    sitecustomize: interpreter start-up plus a small pure-Python workload,
    with and without the boot directory on PYTHONPATH, interleaved."""
    build = os.path.dirname(os.path.abspath(strobe))
    boot = os.path.join(build, "python", "strobe", "_boot")
    script = "s = sum(i * i for i in range(200000))"
    plain_env = dict(os.environ)
    plain_env.pop("PYTHONPATH", None)
    boot_env = dict(plain_env, PYTHONPATH=boot + ":" + os.path.join(build, "python"),
                    STROBE_SHM="/strobe-bench-none")
    import time
    got = {"without": [], "with": []}
    for _ in range(runs):
        for key, env in (("without", plain_env), ("with", boot_env)):
            t = time.perf_counter()
            subprocess.run([PY, "-c", script], env=env, check=True)
            got[key].append((time.perf_counter() - t) * 1e3)
    return {k: statistics.median(v) for k, v in got.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--startup-runs", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2, help="data-loader workers of train.py")
    ap.add_argument("--py", action="store_true", help="Python stack sampling beside cProfile")
    a = ap.parse_args()
    modes = ["none", "strobe", PY_MODE, "cProfile"] if a.py else ["none", "strobe",
                                                                  "torch.profiler"]
    got = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for m in order:
                step_ms, cpu_ms = run(m, a, tmp)
                got[m].append(step_ms)
                cpu[m].append(cpu_ms)
                print(f"slowdown: round {r + 1} {m}: {step_ms:.2f} ms, {cpu_ms:.2f} ms CPU/step",
                      file=sys.stderr)
    base = statistics.median(got["none"])
    cpu_base = statistics.median(cpu["none"])
    print(f"examples/train.py, {a.steps} steps, {a.workers} data-loader workers, 1 torch thread; "
          f"{a.rounds} rounds, order rotated; the script's own median step time.\n")
    print("| profiler | median step ms | rounds | × no profiler | CPU ms per step (all processes, the recorder included) | × no profiler |")
    print("|---|---:|---|---:|---:|---:|")
    for m in modes:
        med = statistics.median(got[m])
        rounds = ", ".join(f"{v:.2f}" for v in got[m])
        c = statistics.median(cpu[m])
        print(f"| {m} | {med:.2f} | {rounds} | {med / base:.3f} | {c:.2f} | {c / cpu_base:.3f} |")
    if a.py:
        py_report(got, base)
        return
    slow = statistics.median(got["strobe"]) / base - 1
    print(f"\nBudget: strobe at defaults ≤ 1 % slower: {100 * slow:+.2f} %, "
          f"**{'pass' if slow <= 0.01 else 'miss'}**.")
    st = startup_cost(a.strobe, a.startup_runs)
    print(f"\nA Python command that never imports torch (start-up and a 200 000-term sum, "
          f"median of {a.startup_runs} interleaved runs): {st['without']:.1f} ms without "
          f"strobe's sitecustomize, {st['with']:.1f} ms with it "
          f"({st['with'] - st['without']:+.1f} ms).")


def py_report(got, base):
    slow = statistics.median(got[PY_MODE]) / statistics.median(got["strobe"]) - 1
    print(f"\nBudget: 100 Hz stack sampling ≤ 1 % slower than strobe without it: "
          f"{100 * slow:+.2f} % (against no profiler: "
          f"{100 * (statistics.median(got[PY_MODE]) / base - 1):+.2f} %), "
          f"**{'pass' if slow <= 0.01 else 'miss'}**; cProfile: "
          f"{100 * (statistics.median(got['cProfile']) / base - 1):+.2f} %.")
    plain = statistics.median(c[0] for c in COSTS["strobe"])
    rows = COSTS[PY_MODE]
    per = [(c[0] - plain) / c[1] * 1e6 for c in rows if c[1]]
    size = [c[2] / c[1] for c in rows if c[1]]
    print(f"\n| per Python sample (one thread's stack) | median | runs |\n|---|---:|---|")
    print(f"| recorder CPU, µs (its strobe.cpu less the run at defaults) | "
          f"{statistics.median(per):.1f} | {', '.join(f'{v:.1f}' for v in per)} |")
    print(f"| bytes stored (py_blocks, dictionaries included) | {statistics.median(size):.2f} | "
          f"{', '.join(f'{v:.2f}' for v in size)} |")
    print(f"\nSamples per run: {', '.join(str(c[1]) for c in rows)}.")


if __name__ == "__main__":
    main()
