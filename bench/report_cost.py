#!/usr/bin/env python3
"""strobe report over a synthetic 24 h run (100 series at 10 Hz, 86.4 M
points, 1 M steps; bench/rules_synth.c): wall time (budget 3 s) and file size
(budget 3 MB), median of --runs. The store is generated once and cached in
$TMPDIR/strobe-bench-report. Prints a markdown section; raw figures to --json.

  bench/report_cost.py --strobe build/strobe --synth build/bench/rules_synth [--hours 24]
                       [--runs 3] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    cache = os.path.join(os.environ.get("TMPDIR", tempfile.gettempdir()), "strobe-bench-report")
    os.makedirs(cache, exist_ok=True)
    db = os.path.join(cache, f"synth-{a.hours:g}h.db")
    steps = int(1_000_000 * a.hours / 24)
    if not os.path.exists(db + ".ok"):
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        print(f"report_cost: generating a synthetic {a.hours:g} h run", file=sys.stderr)
        subprocess.run([a.synth, "--store", db, "--hours", str(a.hours), "--steps", str(steps)],
                       check=True, capture_output=True)
        open(db + ".ok", "w").close()
    out = os.path.join(cache, "report.html")
    walls = []
    for _ in range(a.runs):
        t0 = time.monotonic()
        p = subprocess.run([a.strobe, "report", "--store", db, "-o", out, "last"],
                           capture_output=True, text=True)
        walls.append(time.monotonic() - t0)
        if p.returncode != 0:
            print(f"report_cost: strobe report failed: {p.stderr.strip()}", file=sys.stderr)
            return 1
    size = os.path.getsize(out)
    wall = statistics.median(walls)
    res = {"hours": a.hours, "series": 100, "points": int(a.hours * 3600 * 10 * 100),
           "steps": steps, "wall_s": wall, "walls_s": walls, "bytes": size,
           "budget_s": 3.0, "budget_bytes": 3_000_000}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    ok = lambda c: "within budget" if c else "**over budget**"
    print(f"`strobe report` of a synthetic {a.hours:g} h run (100 series at 10 Hz, "
          f"{res['points'] / 1e6:.1f} M points, {steps} steps), median of {a.runs}:\n")
    print("| what | measured | budget | |\n|---|---|---|---|")
    print(f"| wall time | {wall:.2f} s | 3 s | {ok(wall <= 3.0)} |")
    print(f"| HTML size | {size / 1e6:.2f} MB | 3 MB | {ok(size < 3_000_000)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
