#!/usr/bin/python3
"""bench/rules_synth, the generator of the rules benchmark's synthetic run,
writes what it says: one finished run of exactly 100 series on a 100 ms grid
from its start, hours * 3600 * hz points each (gauges one more, for the
baseline frame), the steps asked for with their phases, and events in
blocks the store and `strobe show` read back. Not timed: the benchmark
(bench/rules_cost.py) times it."""
import os
import sqlite3
import subprocess

from strobetest import *

BUILD = os.environ.get("STROBE_BUILD", os.path.dirname(os.path.abspath(STROBE)))
SYNTH = os.path.join(BUILD, "bench", "rules_synth")
HOURS, HZ, STEPS = 0.05, 10, 2000

db = store_path("synth.db")
p = subprocess.run([SYNTH, "--store", db, "--hours", str(HOURS), "--steps", str(STEPS),
                    "--seed", "7"], capture_output=True, text=True, timeout=120)
check("rules_synth runs", p.returncode == 0, p.stderr[-500:])
said = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
check("it prints its sizes as one JSON line",
      all(k in said for k in ("run", "series", "points", "steps", "events", "store_bytes")), p.stdout)
check("it says nothing on stderr", p.stderr == "", p.stderr)

r = show(db, "last")
m = r["metrics"]
want = round(HOURS * 3600 * HZ)
check("the run is named and finished", r["name"] == "synthetic-24h" and r["status"] == "finished"
      and r["exit_code"] == 0, (r["name"], r["status"], r["exit_code"]))
check("its id is the one printed", r["id"] == said.get("run"), (r["id"], said.get("run")))
check("exactly 100 series", len(m) == 100, sorted(m))
off = {k: v["count"] for k, v in m.items() if abs(v["count"] - want) > 1}
check(f"every series has {want} points, ±1", not off, off)
check("the points add up", r["points"] == sum(v["count"] for v in m.values()) == said.get("points"),
      (r["points"], said.get("points")))
check("a sample every 100 ms", r["interval_ns"] == 100_000_000 and r["samples"] == want + 1,
      (r["interval_ns"], r["samples"]))
near("it lasts the hours asked for", r["duration_s"], HOURS * 3600, 0.5)
check("the host is described", r["cpu_count"] == 32 and r["mem_total_bytes"] > 0 and r["host"],
      (r["cpu_count"], r["mem_total_bytes"], r["host"]))
cores = [k for k in m if k.startswith("cpu.util{core=")]
check("32 cores, 8 GPUs", len(cores) == 32 and len(r["gpus"]) == 8, (len(cores), len(r["gpus"])))
for name in ("cpu.util", "cpu.iowait", "mem.used_bytes", "mem.available_bytes", "mem.total_bytes",
             "mem.swapin_per_s", "psi.cpu_some", "psi.mem_some", "psi.io_some",
             "disk.read_bytes_per_s{dev=nvme0n1}", "net.rx_bytes_per_s{iface=eth0}",
             "cgroup.mem_used_bytes", "cgroup.mem_limit_bytes", "cgroup.throttled_pct",
             "proc.cpu", "proc.rss_bytes", "proc.threads", "proc.count",
             "gpu.util{gpu=7}", "gpu.mem_used_bytes{gpu=0}", "gpu.mem_total_bytes{gpu=3}",
             "gpu.sm_clock_mhz{gpu=5}", "gpu.throttle_reasons{gpu=1}"):
    if not check(f"series {name}", name in m):
        break
check("utilisations stay in 0..100",
      all(0 <= v["min"] and v["max"] <= 100 for k, v in m.items()
          if v["unit"] == "pct" and not k.startswith("proc.cpu")), "")
check("the GPUs are busy while training",
      all(m[f"gpu.util{{gpu={g}}}"]["p50"] > 50 for g in range(8)),
      [m[f"gpu.util{{gpu={g}}}"]["p50"] for g in range(8)])
check("used + available = total", m["mem.used_bytes"]["max"] + m["mem.available_bytes"]["min"]
      >= m["mem.total_bytes"]["max"] - 1, "")

s = r["steps"] or {}
check(f"{STEPS} steps", s.get("count") == STEPS, s)
check("the steps belong to rank 0", s.get("rank") == 0 and s.get("pid") == 1000, s)
ph = r["phases"] or {}
check("every phase is there", all(ph.get(k, {}).get("share", 0) > 0.01
                                  for k in ("data", "forward", "backward", "optimizer")), ph)
check("phases add up to the step time",
      abs(sum(v["ns"] for v in ph.values() if isinstance(v, dict)) - s.get("total_ns", 0)) < 1e3, ph)
check("6 events a step: a STEP marker and five spans", r["events"] == 6 * STEPS, r["events"])
check("events take at most 8 bytes each", r["events"] and r["event_bytes"] / r["events"] <= 8,
      (r["events"], r["event_bytes"]))
procs = r["processes"]
check("one process, role rank, rank 0 of 1",
      len(procs) == 1 and procs[0]["role"] == "rank" and procs[0]["rank"] == 0
      and procs[0]["world_size"] == 1, procs)

con = sqlite3.connect(db)
start = r["start_ns"]
off_grid = con.execute("SELECT count(*) FROM blocks WHERE (start_ns - ?) % 100000000 <> 0"
                       " OR (end_ns - ?) % 100000000 <> 0", (start, start)).fetchone()[0]
check("blocks start and end on the 100 ms grid from the run's start", off_grid == 0, off_grid)
big = con.execute("SELECT max(length(data)), max(count) FROM blocks").fetchone()
check("series blocks are the recorder's: ≤ 1900 bytes, ≤ 1024 points",
      big[0] <= 1900 and big[1] <= 1024, big)
ev = con.execute("SELECT count(*), max(count), min(step_min), max(step_max), sum(count)"
                 " FROM event_blocks").fetchone()
check("event blocks of at most 4096 events, steps 1..N", ev[1] <= 4096 and ev[2] == 1
      and ev[3] == STEPS and ev[4] == 6 * STEPS, ev)
con.close()

# the rules read each series a chunk at a time: with chunks one point long
# (most of them empty, each series' 2 blocks read one by one) they judge
# exactly as when a series is read whole
def rules_json(env=None):
    o = strobe("rules", "--json", "last", store=db, env=env, timeout=300)
    check("strobe rules --json exits 0", o.returncode == 0, o.stderr[-500:])
    return json.loads(o.stdout) if o.returncode == 0 else {}


whole = rules_json()
chunked = rules_json(dict(os.environ, STROBE_TEST_REPLAY_BYTES="1"))
check("rules read a point's time at a time judge as rules read whole",
      whole.get("rules") and (chunked.get("rules"), chunked.get("findings")) ==
      (whole.get("rules"), whole.get("findings")),
      [x for x, y in zip(chunked.get("findings", []), whole.get("findings", [])) if x != y][:2])

# a job of three nodes: the rules see every node's steps, in time order
# (the job's view gives event blocks node by node; pushed so, the second
# and third nodes' came after their windows had closed and were dropped)
jdb = store_path("synth-job.db")
JOB = "a0a0a0a0a0a0a0a0"
for k in range(3):
    pj = subprocess.run([SYNTH, "--store", jdb, "--hours", str(HOURS), "--steps", str(STEPS),
                         "--seed", str(k + 1), "--name", "synthetic-job", "--job", JOB,
                         "--node", f"node-{k}", "--rank", str(k), "--world", "3"],
                        capture_output=True, text=True, timeout=120)
    check(f"rules_synth writes node {k} of a job", pj.returncode == 0, pj.stderr[-300:])
for env in (None, dict(os.environ, STROBE_TEST_REPLAY_BYTES="1")):
    oj = strobe("rules", "--json", JOB, store=jdb, env=env, timeout=300)
    rj = json.loads(oj.stdout) if oj.returncode == 0 else {}
    fw = {x["rule"]: x for x in rj.get("rules", [])}.get("OverallFrameworkMetrics", {})
    how = "a point at a time" if env else "whole"
    check(f"rules over a 3-node job, read {how}, judge all {3 * STEPS} steps and drop no event",
          (fw.get("report") or {}).get("steps") == 3 * STEPS and rj.get("dropped") == 0,
          ((fw.get("report") or {}).get("steps"), rj.get("dropped"), oj.stderr[-300:]))

p2 = subprocess.run([SYNTH, "--store", db, "--hours", str(HOURS), "--steps", str(STEPS),
                     "--seed", "7"], capture_output=True, text=True, timeout=120)
# by id: both runs start at the same instant, so "last" could be either
r2 = show(db, json.loads(p2.stdout.splitlines()[-1])["run"]) if p2.returncode == 0 else {}
check("the same seed again is a second run with the same data",
      p2.returncode == 0 and r2.get("id") != r["id"] and r2.get("metrics") == m, p2.stderr[-300:])
bad = subprocess.run([SYNTH, "--store", db, "--hours", "0.001", "--steps", "1000000"],
                     capture_output=True, text=True, timeout=60)
check("steps that cannot fit are refused", bad.returncode == 2 and "fit" in bad.stderr, bad.stderr)
done()
