#!/usr/bin/env python3
"""strobe trace's cost (issue 6; budget 2 M events/s): export a synthetic run
(bench/rules_synth: 100 series at 10 Hz, steps with phases and data-loader
workers) as Chrome JSON, gzipped Chrome JSON and Perfetto protobuf; median
wall time of --runs exports each, the whole command (store read, decode,
layout, write), and the file size per event.

    trace_cost.py --strobe build/strobe --synth build/bench/rules_synth
                  [--hours 1] [--steps 40000] [--runs 3] [--json out.json]

Prints a markdown table on stdout."""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=40000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    work = os.path.join(tempfile.gettempdir(), "strobe-bench-trace")
    os.makedirs(work, exist_ok=True)
    db = os.path.join(work, f"synth-{a.hours}h-{a.steps}.db")
    if not os.path.exists(db):
        subprocess.run([a.synth, "--store", db, "--hours", str(a.hours), "--steps", str(a.steps),
                        "--worker-events", "--name", "trace-bench"], check=True,
                       stdout=subprocess.DEVNULL)
    rows = []
    for fmt, name in (("chrome", "t.trace.json"), ("chrome", "t.trace.json.gz"),
                      ("perfetto", "t.perfetto-trace")):
        out = os.path.join(work, name)
        walls, events = [], 0
        for _ in range(a.runs):
            t0 = time.perf_counter()
            p = subprocess.run([a.strobe, "trace", "--store", db, "--format", fmt, "-o", out,
                                "last"], capture_output=True, text=True, check=True)
            walls.append(time.perf_counter() - t0)
            m = re.search(r"(\d+) slices, (\d+) instants, (\d+) counter points", p.stderr)
            events = sum(int(x) for x in m.groups()) if m else 0
        wall = statistics.median(walls)
        size = os.path.getsize(out)
        rows.append({"format": fmt, "file": name, "events": events, "wall_s": round(wall, 3),
                     "events_per_s": round(events / wall), "bytes": size,
                     "bytes_per_event": round(size / events, 2) if events else None})
        os.unlink(out)
    print(f"A synthetic {a.hours:g} h run ({a.steps} steps, 100 series at 10 Hz), "
          f"median of {a.runs} exports each, the whole `strobe trace` command:\n")
    print("| format | file | events | wall | events/s | size | bytes/event |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['format']} | {r['file']} | {r['events']:,} | {r['wall_s']:.3f} s "
              f"| {r['events_per_s'] / 1e6:.2f} M | {r['bytes'] / 1048576:.1f} MiB "
              f"| {r['bytes_per_event']} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f)


if __name__ == "__main__":
    main()
