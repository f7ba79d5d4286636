#!/usr/bin/env python3
"""strobe sweep's overhead per run, beside a shell loop over `strobe run`.

The goal: at most 50 ms from one run's end to the next job's start.

Every launcher runs the same job, bench/sweep_job.c: it appends its own start
(the first thing its main does) and end (the last), CLOCK_REALTIME, to a file.
A gap is one job's end to the next job's start, as the jobs saw them, so that
it holds everything in between: the recorder's teardown, the next one's
start-up, and the launcher's own turn-around.

  floor   a bash loop of the bare job: fork and exec, nothing else
  loop    a bash loop of `strobe run --store S --no-report -q -- JOB`, each
          run timed by bash's $EPOCHREALTIME (no process spawned), which gives
          the recorder's start-up (its exec to the job's start) and its
          teardown (the job's end to its exit)
  sweep   `strobe sweep` of a YAML file of N workloads, one run each (the
          report is off, the sweep's default)
  sweep2  the same with `runs: 2`: two jobs started together at each
          workload's gate; the gap is the later end to the earlier start of
          the next pair, and the skew is how far apart a pair started

The jobs' lengths are --job-ms plus 0 to 99 ms, spread evenly (the same
lengths for every launcher): a recorder takes its last frame at the first
sampling deadline (100 ms apart) after its job's end, so jobs of whole
intervals would make every shell-loop run wait a whole interval, and a real
job's end falls anywhere in one. Each round runs every launcher once with N
runs, in an order that alternates from round to round, for each job length
(the sweep starts the next recorders only while a job runs, so a job shorter
than a recorder's start-up shows part of the start-up in the gap), into
SQLite and, with --pg, into a throwaway PostgreSQL (bench/pg_cost.py's
server), each a fresh store. Figures pool the gaps of every round: median,
p90, max.

Then one sweep under `strace -f` splits its gaps into their steps (the job's
exit to its recorder's "end" line, the sweep's turn to the next gate, the
gate's byte to the next job's exec, exec to main); strace slows every system
call, so these steps are larger than without it, and only their shares count.

    bench/sweep_overhead.py --build DIR [--runs N] [--rounds R] [--job-ms 300,0]
                            [--trace-runs N] [--trace-ms MS] [--pg] [--quick] [--json OUT]

Prints a markdown section on stdout; raw figures to --json.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from serve_cost import pct  # bench/, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL_MS = 50.0
SPREAD_MS = 100  # strobe run's default sampling interval
LAUNCHERS = ("floor", "loop", "sweep", "sweep2")

# bash, so that timing a run spawns nothing ($EPOCHREALTIME is bash 5's)
LOOP_SH = r'''
out=$1 times=$2 job=$3 lengths=($4)
shift 4
for ((i = 0; i < ${#lengths[@]}; i++)); do
    t0=$EPOCHREALTIME
    "$@" "$job" "$out" "$i" "${lengths[i]}"
    t1=$EPOCHREALTIME
    echo "$i $t0 $t1" >>"$times"
done
'''


def note(msg):
    print(f"sweep_overhead: {msg}", file=sys.stderr, flush=True)


def stats(xs):
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "p90": pct(xs, 0.9), "max": max(xs),
            "min": min(xs)}


def read_jobs(path):
    """The jobs' own lines: {tag: (start_ns, end_ns, pid)}."""
    jobs = {}
    with open(path) as f:
        for line in f:
            tag, start, end, pid = line.split()
            jobs[tag] = (int(start), int(end), int(pid))
    return jobs


def gaps_of(jobs):
    """Gaps in ms between consecutive groups of jobs (a sweep's workload:
    tags "w-007.0", "w-007.1"; a loop's run: "7"), each group's start skew
    in ms, and the ms that some job of a group ran."""
    groups = {}
    for tag, (s, e, _) in jobs.items():
        groups.setdefault(tag.rsplit(".", 1)[0], []).append((s, e))
    order = sorted(groups.values(), key=lambda g: min(s for s, _ in g))
    gaps = [(min(s for s, _ in b) - max(e for _, e in a)) / 1e6 for a, b in zip(order, order[1:])]
    skews = [(max(s for s, _ in g) - min(s for s, _ in g)) / 1e6 for g in order if len(g) > 1]
    busy = sum(max(e for _, e in g) - min(s for s, _ in g) for g in order) / 1e6
    return gaps, skews, busy


def lengths(a, ms):
    """Each run's job length, ms: ms and a share of the recorder's sampling
    interval, spread evenly over it (golden-ratio steps) and the same for
    every launcher. A recorder takes its last frame at the first deadline
    after the job's end, so a job of a whole number of intervals would make
    it wait a whole one; a real job's end falls anywhere in one."""
    return [ms + int(SPREAD_MS * ((i * 0.6180339887) % 1.0)) for i in range(a.runs)]


def run_loop(a, cmd, tmp, tag, ms):
    """A bash loop of cmd + the job: its jobs, gaps, and bash's times around each run."""
    out, times = os.path.join(tmp, f"{tag}.jobs"), os.path.join(tmp, f"{tag}.times")
    t0 = time.monotonic()
    subprocess.run(["bash", "-c", LOOP_SH, "loop", out, times, a.job,
                    " ".join(map(str, lengths(a, ms)))] + cmd, check=True)
    wall = time.monotonic() - t0
    jobs = read_jobs(out)
    startup, teardown = [], []
    with open(times) as f:
        for line in f:
            i, b0, b1 = line.split()
            s, e, _ = jobs[i]
            startup.append((s - float(b0) * 1e9) / 1e6)
            teardown.append((float(b1) * 1e9 - e) / 1e6)
    return jobs, wall, {"startup_ms": startup, "teardown_ms": teardown}


def sweep_file(a, path, out, ms, runs):
    """N workloads of `runs` runs each, the jobs' lengths as the loops'."""
    with open(path, "w") as f:
        f.write(f"experiment: sweep-overhead\nruns: {runs}\nworkloads:\n")
        for i, length in enumerate(lengths(a, ms)):
            f.write(f"  - workload: w-{i:03d}\n")
            f.write(f"    command: \"'{a.job}' '{out}' {{workload}}.{{run}} {length}\"\n")


def run_sweep(a, store, tmp, tag, ms, runs, prefix=()):
    out, plan = os.path.join(tmp, f"{tag}.jobs"), os.path.join(tmp, f"{tag}.yaml")
    sweep_file(a, plan, out, ms, runs)
    t0 = time.monotonic()
    p = subprocess.run(list(prefix) + [a.strobe, "sweep", "--store", store, "--quiet", plan],
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"sweep_overhead: strobe sweep {plan} exited {p.returncode}: "
                         f"{p.stderr[-500:]}")
    return read_jobs(out), wall, {}


def one(a, launcher, store, tmp, tag, ms):
    if launcher == "floor":
        return run_loop(a, [], tmp, tag, ms)
    if launcher == "loop":
        return run_loop(a, [a.strobe, "run", "--store", store, "--no-report", "-q", "--"], tmp,
                        tag, ms)
    return run_sweep(a, store, tmp, tag, ms, 2 if launcher == "sweep2" else 1)


def measure(a, srv, tmp):
    """Every round, store and job length: each launcher once, alternating."""
    res = {}  # "store/ms/launcher" -> its gaps, pieces and walls, every round
    kinds = ["sqlite"] + (["postgresql"] if srv else [])
    for r in range(a.rounds):
        for kind in kinds:
            for ms in a.job_ms:
                order = LAUNCHERS if r % 2 == 0 else tuple(reversed(LAUNCHERS))
                note(f"round {r + 1}/{a.rounds}, {kind}, jobs of {ms} ms: {' '.join(order)}")
                for launcher in order:
                    tag = f"{kind}-{ms}-{launcher}-{r}"
                    if kind == "sqlite":
                        store = os.path.join(tmp, f"{tag}.db")
                    else:
                        store = srv.create(f"sweep_{r}_{ms}_{launcher}")
                    jobs, wall, pieces = one(a, launcher, store, tmp, tag, ms)
                    if kind == "postgresql":
                        srv.drop(f"sweep_{r}_{ms}_{launcher}")
                    gaps, skews, busy_ms = gaps_of(jobs)
                    acc = res.setdefault(f"{kind}/{ms}/{launcher}", {
                        "store": kind, "job_ms": ms, "launcher": launcher, "gap_ms": [],
                        "skew_ms": [], "round_median_ms": [], "wall_s": [], "startup_ms": [],
                        "teardown_ms": [], "rest_per_run_ms": []})
                    acc["gap_ms"] += gaps
                    acc["skew_ms"] += skews
                    acc["round_median_ms"].append(statistics.median(gaps))
                    acc["wall_s"].append(wall)
                    acc["rest_per_run_ms"].append((wall * 1e3 - busy_ms) / a.runs)
                    for k, v in pieces.items():
                        acc[k] += v
    return res


# ---- one sweep under strace: where a gap goes --------------------------------------

LINE = re.compile(r'^(\d+\.\d+) (\w+)\((.*)\) += (-?\d+)')


def trace_files(prefix):
    """strace -ff's files: {pid: [(t, call, args, ret)]}."""
    procs = {}
    for path in glob.glob(prefix + ".*"):
        pid = int(path.rsplit(".", 1)[1])
        calls = []
        with open(path, errors="replace") as f:
            for line in f:
                m = LINE.match(line)
                if m:
                    calls.append((float(m.group(1)), m.group(2), m.group(3), int(m.group(4))))
                elif "+++ exited" in line or "+++ killed" in line:
                    calls.append((float(line.split()[0]), "exit", line, 0))
        procs[pid] = calls
    return procs


def traced(a, tmp, ms):
    """One sweep of --trace-runs workloads under strace: each gap's steps, ms."""
    prefix = os.path.join(tmp, "trace", "tr")
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    store = os.path.join(tmp, "traced.db")
    n_runs, a.runs = a.runs, a.trace_runs
    try:
        jobs, _, _ = run_sweep(a, store, tmp, "traced", ms, 1,
                               prefix=("strace", "-f", "-ff", "-ttt", "-s", "80", "-o", prefix,
                                       "-e", "trace=execve,read,write,exit_group"))
    finally:
        a.runs = n_runs
    procs = trace_files(prefix)
    rec = {}  # workload -> the recorder's times
    by_pid = {pid: tag for tag, (_, _, pid) in jobs.items()}
    job_exec = {}
    for pid, calls in procs.items():
        if pid in by_pid:
            job_exec[by_pid[pid].rsplit(".", 1)[0]] = next(
                t for t, c, args, _ in calls if c == "execve" and a.job in args)
            continue
        ex = next(((t, args) for t, c, args, _ in calls if c == "execve" and '"run"' in args), None)
        if not ex or "--start-gate=" not in ex[1]:
            continue
        wl = re.search(r'"--workload=([^"]+)"', ex[1]).group(1)
        rfd, gfd = re.search(r'"--start-gate=(\d+),(\d+)"', ex[1]).groups()
        writes = [(t, args) for t, c, args, _ in calls
                  if c == "write" and args.startswith(rfd + ",")]
        ready = next(t for t, args in writes if re.match(r'\d+, "[0-9a-f]{16}\\n"', args))
        end = next(t for t, args in writes if '"end ' in args)
        gate = next(t for t, c, args, ret in calls if c == "read" and args.startswith(gfd + ",")
                    and ret == 1)
        gone = max(t for t, c, _, _ in calls)
        rec[wl] = {"exec": ex[0], "ready": ready, "gate": gate, "end": end, "exit": gone}
    # the sweep's own writes of a gate's byte: the first after each "end" it heard
    sweep_pid = next(pid for pid, calls in procs.items()
                     if any(c == "execve" and '"sweep"' in args for _, c, args, _ in calls))
    g_writes = [t for t, c, args, _ in procs[sweep_pid] if c == "write" and args.endswith('"g", 1')]
    order = sorted(rec, key=lambda w: rec[w]["gate"])
    steps = {k: [] for k in ("exit_to_end", "end_to_go", "go_to_gate_read", "gate_to_exec",
                             "exec_to_main", "gap", "startup", "teardown", "ready_before_end")}
    for w in order:
        r = rec[w]
        steps["startup"].append((r["ready"] - r["exec"]) * 1e3)
        steps["teardown"].append((r["exit"] - r["end"]) * 1e3)
    for prev, nxt in zip(order, order[1:]):
        p, q = rec[prev], rec[nxt]
        job_end = jobs[prev + ".0"][1] / 1e9
        job_start = jobs[nxt + ".0"][0] / 1e9
        go = next((t for t in g_writes if t >= p["end"]), None)
        if go is None:
            continue
        steps["exit_to_end"].append((p["end"] - job_end) * 1e3)
        steps["end_to_go"].append((go - p["end"]) * 1e3)
        steps["go_to_gate_read"].append((q["gate"] - go) * 1e3)
        steps["gate_to_exec"].append((job_exec[nxt] - q["gate"]) * 1e3)
        steps["exec_to_main"].append((job_start - job_exec[nxt]) * 1e3)
        steps["gap"].append((job_start - job_end) * 1e3)
        steps["ready_before_end"].append(1 if q["ready"] < job_end else 0)
    return steps


# ---- the report ------------------------------------------------------------------------

def fmt(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def report(res, a):
    out = []
    w = out.append
    m = res["machine"]
    w(f"## 17. strobe sweep's overhead per run (bench/sweep_overhead.py; goal {GOAL_MS:.0f} ms)")
    w("")
    w(f"The time from one job's end to the next job's start, as the jobs recorded them "
      f"(bench/sweep_job.c, static, CLOCK_REALTIME at the top and bottom of its main). "
      f"{a.rounds} round{'s' if a.rounds > 1 else ''} of {a.runs} runs per launcher, "
      f"alternating; every gap of every round pooled. Load average {' '.join(m['loadavg'])} "
      f"at the start, {' '.join(m['loadavg_end'])} at the end; {m['nproc']} CPUs.")
    w("")
    for kind in m["stores"]:
        for ms in a.job_ms:
            rows = {l: res["cells"].get(f"{kind}/{ms}/{l}") for l in LAUNCHERS}
            loop, sweep = rows["loop"], rows["sweep"]
            w(f"### {'SQLite' if kind == 'sqlite' else 'PostgreSQL'}, jobs of {ms}-"
              f"{ms + SPREAD_MS - 1} ms")
            w("")
            w("| launcher | gaps | median | p90 | max | round medians | over the floor | "
              "beside the shell loop | wall per run, less the job |")
            w("|---|---|---|---|---|---|---|---|---|")
            floor_med = rows["floor"]["gap"]["median"]
            for l in LAUNCHERS:
                c = rows[l]
                g = c["gap"]
                rm = c["round_median_ms"]
                per_run = statistics.median(c["rest_per_run_ms"])
                name = {"floor": "bash loop, bare job (floor)",
                        "loop": "bash loop of `strobe run`",
                        "sweep": "`strobe sweep`, 1 run a workload",
                        "sweep2": "`strobe sweep`, `runs: 2`"}[l]
                w(f"| {name} | {g['n']} | {fmt(g['median'])} ms | {fmt(g['p90'])} ms | "
                  f"{fmt(g['max'])} ms | {fmt(min(rm))}-{fmt(max(rm))} ms | "
                  f"{fmt(g['median'] - floor_med)} ms | "
                  f"{g['median'] / loop['gap']['median']:.2f}x | {fmt(per_run)} ms |")
            w("")
            ok = sweep["gap"]["median"] <= GOAL_MS
            w(f"Goal: the sweep's median gap {fmt(sweep['gap']['median'])} ms "
              f"{'meets' if ok else 'misses'} {GOAL_MS:.0f} ms "
              f"(p90 {fmt(sweep['gap']['p90'])} ms; `runs: 2` "
              f"{fmt(rows['sweep2']['gap']['median'])} ms, its pairs started "
              f"{fmt(rows['sweep2']['skew']['median'])} ms apart at the median, "
              f"{fmt(rows['sweep2']['skew']['max'])} ms at most). "
              f"The sweep's gap is {sweep['gap']['median'] / loop['gap']['median']:.2f}x the "
              f"shell loop's.")
            w("")
            su, td = loop["startup"], loop["teardown"]
            fl = rows["floor"]
            w(f"The shell loop's gap, piece by piece (medians): the recorder's start-up, "
              f"bash's fork to the job's main, {fmt(su['median'])} ms (p90 {fmt(su['p90'])}; "
              f"the bare job's {fmt(fl['startup']['median'])} ms); its teardown, the job's end "
              f"to the recorder's exit, {fmt(td['median'])} ms (p90 {fmt(td['p90'])}; the bare "
              f"job's {fmt(fl['teardown']['median'])} ms).")
            w("")
    st = res.get("traced")
    if st:
        w(f"### Where a sweep's gap goes (one sweep of {a.trace_runs} runs of {a.trace_ms}-"
          f"{a.trace_ms + SPREAD_MS - 1} ms under "
          f"`strace -f`, SQLite; medians)")
        w("")
        w("strace stops every traced system call, so each step is larger than without it: "
          "read the shares, not the sizes.")
        w("")
        w("| step | median | max |")
        w("|---|---|---|")
        names = [("exit_to_end",
                  "the job's end to its recorder's `end` line (exit, SIGCHLD, wait)"),
                 ("end_to_go", "the `end` line to the sweep's byte on the next gate"),
                 ("go_to_gate_read", "the byte to the next recorder's read of it"),
                 ("gate_to_exec",
                  "that read to the next job's exec (two forks for the log tees, then the job's)"),
                 ("exec_to_main", "the job's exec to its main"),
                 ("gap", "the whole gap"),
                 ("startup",
                  "a recorder's exec to its `ready` (off the gap when the job is longer)"),
                 ("teardown", "a recorder's `end` line to its exit (off the gap)")]
        for k, label in names:
            if st[k]:
                w(f"| {label} | {fmt(statistics.median(st[k]))} ms | {fmt(max(st[k]))} ms |")
        rb = st["ready_before_end"]
        w("")
        w(f"The next recorder was ready before the job ended in {sum(rb)} of {len(rb)} gaps.")
        w("")
    return "\n".join(out)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def session(a, tmp, res):
    """Every launcher into every store, then the traced sweep; into res."""
    srv = None
    try:
        if a.pg:
            import pg_cost  # bench/, beside this file: its throwaway server
            try:
                srv = pg_cost.Server(tmp)
                res["machine"]["stores"].append("postgresql")
                res["machine"]["pg_version"] = srv.version
            except SystemExit as e:
                if e.code != pg_cost.SKIP:
                    raise
                note("PostgreSQL is not installed: SQLite only")
        cells = measure(a, srv, tmp)
    finally:
        if srv:
            srv.stop()
    for c in cells.values():
        for k in ("gap", "skew", "startup", "teardown"):
            c[k] = stats(c[k + "_ms"])
    res["cells"] = cells
    if shutil.which("strace"):
        note(f"one sweep of {a.trace_runs} runs under strace")
        try:
            res["traced"] = traced(a, tmp, a.trace_ms)
        except (StopIteration, AttributeError, ValueError, KeyError) as e:
            note(f"the traced sweep could not be read, left out: {e!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--runs", type=int, default=30, help="runs per launcher and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--job-ms", default="300,0", help="job lengths, ms, comma-separated")
    ap.add_argument("--trace-runs", type=int, default=10)
    ap.add_argument("--trace-ms", type=int, default=1000,
                    help="the traced jobs' length: longer than a recorder's start-up under strace")
    ap.add_argument("--pg", action="store_true", help="PostgreSQL too, when it is installed")
    ap.add_argument("--quick", action="store_true", help="5 runs, 1 round: a smoke test")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.rounds, a.trace_runs = 5, 1, 4
    a.job_ms = [int(x) for x in a.job_ms.split(",")]
    build = os.path.abspath(a.build)
    a.strobe, a.job = os.path.join(build, "strobe"), os.path.join(build, "bench", "sweep_job")
    for f in (a.strobe, a.job):
        if not os.access(f, os.X_OK):
            raise SystemExit(f"sweep_overhead: {f} is missing; run 'make' first")
    res = {"machine": {"nproc": os.cpu_count(), "loadavg": loadavg(), "stores": ["sqlite"]},
           "runs": a.runs, "rounds": a.rounds, "job_ms": a.job_ms}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="strobe-bench-sweep-") as tmp:
        session(a, tmp, res)
    res["seconds"] = time.monotonic() - t0
    res["machine"]["loadavg_end"] = loadavg()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    print(report(res, a))
    note(f"done in {res['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
