#!/usr/bin/env python3
"""Offline rules over a synthetic job of many nodes (issue 25: "offline rules
over a 256-node hour").

The job is written once by bench/rules_synth.c, one node at a time: each
node's run has 100 series at 10 Hz for the hour (3.6 M points) and its
rank's steps, under one job row (store/job.h), exactly as the recorders of
a cluster job would leave them. The store is kept in a cache directory,
keyed by the generator's binary and the arguments, so a second invocation
reuses it. Then `strobe rules --json JOB` runs N times over the job's view
of every node: wall time, the child's CPU time and peak RSS (wait4
rusage), medians. Beside it, in the same run, the same rules over one node
alone, which is what a single-machine strobe judges: the ratio says what
the many nodes cost over one.

    bench/rules_job.py --strobe BIN --synth BIN [--nodes 256] [--hours 1]
                       [--runs 3] [--quick] [--json OUT] [--cache DIR]

--quick: 8 nodes of 6 minutes (a smoke test of the script). Prints a
markdown section on stdout and the raw figures to --json.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOB_ID = "b0b0b0b0b0b0b0b0"


def note(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def cache_key(synth, nodes, hours):
    h = hashlib.sha256()
    with open(synth, "rb") as f:
        h.update(f.read())
    h.update(f"{nodes}:{hours}".encode())
    return h.hexdigest()[:16]


def make_job(synth, store, nodes, hours):
    """Write the job, node by node; seconds taken."""
    t0 = time.monotonic()
    steps = int(hours * 3600 / 0.09)  # about an 86 ms step, as the 24 h run
    for k in range(nodes):
        subprocess.run([synth, "--store", store, "--hours", str(hours), "--steps", str(steps),
                        "--seed", str(k + 1), "--name", "synthetic-job", "--job", JOB_ID,
                        "--node", f"node-{k:03d}", "--rank", str(k), "--world", str(nodes)],
                       check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def measured(cmd, runs):
    """Medians of wall, CPU and peak RSS over runs, by /usr/bin/time."""
    walls, cpus, rss = [], [], []
    out = ""
    for _ in range(runs):
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%U %S %M"] + cmd, capture_output=True,
                           text=True)
        walls.append(time.monotonic() - t0)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
        user, sys_, kib = p.stderr.strip().splitlines()[-1].split()
        cpus.append(float(user) + float(sys_))
        rss.append(int(kib) / 1024)
        out = p.stdout
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "rss_mib": statistics.median(rss), "walls": walls}, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "raw", "rules_job.json"))
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/strobe-bench"))
    a = ap.parse_args()
    if a.quick:
        a.nodes, a.hours, a.runs = 8, 0.1, 1
    os.makedirs(a.cache, exist_ok=True)
    store = os.path.join(a.cache, f"job-{cache_key(a.synth, a.nodes, a.hours)}.db")
    made_s = None
    if not os.path.exists(store):
        note(f"writing a synthetic job of {a.nodes} nodes x {a.hours} h into {store}")
        try:
            made_s = make_job(a.synth, store + ".part", a.nodes, a.hours)
        except (subprocess.CalledProcessError, OSError) as e:
            for f in (store + ".part", store + ".part-wal", store + ".part-shm"):
                if os.path.exists(f):
                    os.unlink(f)
            print(f"bench: cannot write the job: {e}", file=sys.stderr)
            return 1
        for suffix in ("-wal", "-shm"):
            if os.path.exists(store + ".part" + suffix):
                os.unlink(store + ".part" + suffix)
        os.rename(store + ".part", store)
    size = os.path.getsize(store)
    nodes_out = subprocess.run([a.strobe, "ls", "--store", store, "--nodes", "--json"],
                               capture_output=True, text=True, check=True).stdout
    node0 = next(r["id"] for r in json.loads(nodes_out) if r.get("node") == "node-000")
    note(f"strobe rules over the job ({a.runs} runs) and over one node ({a.runs} runs)")
    job, out = measured([a.strobe, "rules", "--store", store, "--json", JOB_ID], a.runs)
    verdict = json.loads(out)
    one, _ = measured([a.strobe, "rules", "--store", store, "--json", node0], a.runs)
    points = sum(m.get("count", 0) for m in json.loads(subprocess.run(
        [a.strobe, "show", "--store", store, "--json", node0], capture_output=True, text=True,
        check=True).stdout).get("metrics", {}).values())
    res = {"nodes": a.nodes, "hours": a.hours, "points_per_node": points,
           "points": points * a.nodes, "store_bytes": size, "written_s": made_s,
           "job": job, "one_node": one,
           "rules": {r["rule"]: r["status"] for r in verdict.get("rules", [])},
           "findings": len(verdict.get("findings", []))}
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
    print(f"### Offline rules over a job of {a.nodes} nodes x {a.hours:g} h "
          "(bench/rules_job.py)\n")
    print(f"{res['points'] / 1e6:.0f} M points ({points / 1e6:.2f} M a node), "
          f"{size / 2**30:.2f} GiB of SQLite.\n")
    print("| | wall (median) | CPU | peak RSS |")
    print("|---|---|---|---|")
    for name, r in (("the job, every node", job), ("one node alone", one)):
        print(f"| {name} | {r['wall_s']:.2f} s | {r['cpu_s']:.2f} s | {r['rss_mib']:.0f} MiB |")
    ratio = job["wall_s"] / one["wall_s"] if one["wall_s"] else float("nan")
    print(f"\nThe job over one node: {ratio:.0f}x the wall time for {a.nodes}x the data.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
