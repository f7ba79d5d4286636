#!/usr/bin/env python3
"""Report and trace sizes beside torch.profiler's own JSON for the same steps
(issue 6). One run of examples/train.py under `strobe run --torch-profile
A-B`: torch.profiler records steps A to B (strobe's capture starts and stops
it; STROBE_KEEP_TORCH_TRACES keeps the file it writes), strobe imports its
operators, and then

- torch.profiler's chrome-trace JSON of steps A-B (the peer),
- `strobe trace --steps A-B` as Chrome JSON, gzipped JSON and Perfetto:
  the same operators plus strobe's steps, phases and metric counters,
- `strobe trace` of the whole run, and `strobe report` of the whole run,

are measured in bytes, with events per file where the format says.

    profile_sizes.py --strobe build/strobe [--steps 5-7] [--seconds 20] [--json out.json]

Prints a markdown table on stdout."""
import argparse
import glob
import gzip
import json
import os
import re
import subprocess
import tempfile

PYTHON = "/usr/bin/python3"  # Debian's python3-torch


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=True, **kw)


def trace_events(path):
    """Events in a Chrome trace-event JSON file (plain or gzipped)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    return sum(1 for e in evs if e.get("ph") != "M")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--steps", default="5-7")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    strobe = os.path.abspath(a.strobe)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="strobe-bench-sizes-")
    keep = os.path.join(work, "torch")
    os.makedirs(keep)
    db = os.path.join(work, "sizes.db")
    env = dict(os.environ, STROBE_KEEP_TORCH_TRACES=keep, TMPDIR=work)
    run([strobe, "run", "--quiet", "--store", db, "--name", "sizes", "--no-report",
         "--torch-profile", a.steps, "--", PYTHON, os.path.join(root, "examples", "train.py"),
         "--seconds", str(a.seconds)], env=env, cwd=work)
    torch_files = glob.glob(os.path.join(keep, "torch-*.json"))
    if not torch_files:
        raise SystemExit("profile_sizes: torch.profiler wrote no trace")
    peer = max(torch_files, key=os.path.getsize)  # the training process's

    rows = [{"what": f"torch.profiler JSON, steps {a.steps} (the peer)", "file": peer,
             "events": trace_events(peer)}]
    outs = [(f"strobe trace --steps {a.steps}, Chrome JSON", "w.trace.json", ["--steps", a.steps]),
            (f"strobe trace --steps {a.steps}, .json.gz", "w.trace.json.gz", ["--steps", a.steps]),
            (f"strobe trace --steps {a.steps}, Perfetto", "w.perfetto-trace",
             ["--steps", a.steps, "--format", "perfetto"]),
            ("strobe trace, whole run, Chrome JSON", "all.trace.json", []),
            ("strobe trace, whole run, Perfetto", "all.perfetto-trace", ["--format", "perfetto"])]
    for what, name, args in outs:
        path = os.path.join(work, name)
        p = run([strobe, "trace", "--store", db, "-o", path, *args, "sizes"])
        m = re.search(r"(\d+) slices, (\d+) instants, (\d+) counter points", p.stderr)
        rows.append({"what": what, "file": path,
                     "events": sum(int(x) for x in m.groups()) if m else None})
    report = os.path.join(work, "sizes.html")
    run([strobe, "report", "--store", db, "-o", report, "sizes"])
    rows.append({"what": "strobe report, whole run (HTML, uPlot inside)", "file": report,
                 "events": None})
    show = json.loads(run([strobe, "show", "--json", "--store", db, "sizes"]).stdout)
    base = os.path.getsize(peer)
    for r in rows:
        r["bytes"] = os.path.getsize(r["file"])
        r["ratio"] = round(r["bytes"] / base, 3)
        r["file"] = os.path.basename(r["file"])
    steps = sum(g.get("count", 0) for g in show.get("ranks", [])) or "?"
    print(f"examples/train.py for {a.seconds:g} s ({steps} steps, {show['duration_s']:.1f} s, "
          f"{show['samples']} samples, {show['points']} points), torch.profiler over steps "
          f"{a.steps}; sizes against torch.profiler's JSON of the same steps:\n")
    print("| file | events | bytes | / torch.profiler |")
    print("|---|---:|---:|---:|")
    for r in rows:
        ev = "" if r["events"] is None else str(r["events"])
        print(f"| {r['what']} | {ev} | {r['bytes']:,} | {r['ratio']:.3f}× |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
