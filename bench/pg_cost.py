#!/usr/bin/env python3
"""strobe on one PostgreSQL for a cluster (issue 25), beside MLflow's rows.

Starts a throwaway PostgreSQL (tests/tools/pgserver), then in one session:

  ingest    N simulated node recorders (8, 64, 256), 150 series at 100 ms and
            200 events/s each, through strobe's store code, beside the same
            samples as MLflow's one-row-per-sample layout (bench/pg_ingest.c
            says how each side writes). Rounds alternate the two layouts, a
            fresh database each; medians of the rounds.
  real time 8 nodes paced on the wall clock, each layout: does it keep up?
  reads     the runs list with 10,000 runs (`strobe ls`, and /api/runs of
            `strobe serve`), and a 10 M-sample series to the dashboard (the
            serve API's downsampled series; then its parts without HTTP, and
            the blocks' data in one query: bench/pg_series_read.c),
            in the database of the 256-node ingest.
  recorder  one `strobe run -- sleep S` into SQLite and into PostgreSQL: the
            recorder's own CPU (wait4 of strobe; `sleep` costs nothing).
  rules     offline rules over a 256-node hour from PostgreSQL: not yet
            (rules_256_node_hour; full mode only, as it takes minutes; bench/rules_job.py
            times the same job from SQLite).

Time is simulated in the ingest: each node writes T seconds of data as fast as
the machine allows, in per-second commits, interleaved across nodes. The
server's cores needed at real time are then (server CPU per sample) x (N x 150
x 10 samples/s).

    bench/pg_cost.py --build DIR [--mode quick|default|full] [--json OUT]

Prints a markdown section on stdout; the raw figures go to --json. Exits 77
with one line when PostgreSQL is not installed.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from serve_cost import get_body, pct  # one request on its own connection; percentiles

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PGSERVER = os.path.join(ROOT, "tests", "tools", "pgserver")
SKIP = 77

SERIES = 150
SAMPLES_PER_NODE_S = SERIES * 10
GOAL_CORES = 1.0
GOAL_RATIO = 20.0
GOAL_BYTES = 2.0
GOAL_SERIES_MS = 100.0

# what each mode runs: per node count, the rounds and the simulated seconds of
# each layout (strobe's long enough at 8 nodes for blocks to seal and the
# tables to settle: the steady state of the disk)
PLANS = {
    "full": {  # about 15 minutes on 2 cores
        "ingest": [
            {"nodes": 8, "rounds": 3, "strobe_s": 600, "rows_s": 30, "size_every": 300},
            {"nodes": 64, "rounds": 3, "strobe_s": 120, "rows_s": 8, "size_every": 0},
            {"nodes": 256, "rounds": 1, "strobe_s": 120, "rows_s": 5, "size_every": 60},
        ],
        "realtime_s": 30, "points": 10_000_000, "runs": 10_000, "requests": 30,
        "ls_reps": 7, "single_s": 20, "single_rounds": 3,
        "rules_nodes": 256, "rules_hours": 1.0, "rules_runs": 1,
    },
    "default": {  # about 7 minutes
        "ingest": [
            {"nodes": 8, "rounds": 3, "strobe_s": 600, "rows_s": 10, "size_every": 300},
            {"nodes": 64, "rounds": 3, "strobe_s": 30, "rows_s": 4, "size_every": 0},
            {"nodes": 256, "rounds": 1, "strobe_s": 30, "rows_s": 3, "size_every": 0},
        ],
        "realtime_s": 15, "points": 10_000_000, "runs": 10_000, "requests": 20,
        "ls_reps": 5, "single_s": 10, "single_rounds": 3,
    },
    "quick": {  # a smoke test of the scripts, under 2 minutes
        "ingest": [
            {"nodes": 8, "rounds": 1, "strobe_s": 60, "rows_s": 6, "size_every": 30},
            {"nodes": 64, "rounds": 1, "strobe_s": 12, "rows_s": 3, "size_every": 0},
            {"nodes": 256, "rounds": 1, "strobe_s": 6, "rows_s": 3, "size_every": 0},
        ],
        "realtime_s": 5, "points": 1_000_000, "runs": 1_000, "requests": 5,
        "ls_reps": 3, "single_s": 4, "single_rounds": 1,
        "rules_nodes": 8, "rules_hours": 0.1, "rules_runs": 1,
    },
}


def note(msg):
    print(f"pg_cost: {msg}", file=sys.stderr, flush=True)


def load_pgserver():
    """tests/tools/pgserver as a module: its psql() and as_user() helpers."""
    from importlib.machinery import SourceFileLoader
    loader = SourceFileLoader("pgserver", PGSERVER)
    spec = importlib.util.spec_from_loader("pgserver", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class Server:
    """A throwaway PostgreSQL, sized for 256 nodes' connections."""

    def __init__(self, tmp):
        self.pg = load_pgserver()
        self.dir = os.path.join(tmp, "pg")
        p = subprocess.run([PGSERVER, "start", self.dir, "--watch", str(os.getpid())],
                           capture_output=True, text=True)
        if p.returncode == SKIP:
            print("pg_cost: skip: PostgreSQL not installed", file=sys.stderr)
            sys.exit(SKIP)
        if p.returncode != 0:
            raise SystemExit(f"pg_cost: pgserver failed: {p.stderr.strip()}")
        self.st = self.pg.load(self.dir)
        # a connection a node (pgserver allows 100), and buffers a real server
        # would have: 1 GB of this machine's 23
        self.admin("ALTER SYSTEM SET max_connections = 300")
        self.admin("ALTER SYSTEM SET shared_buffers = '1GB'")
        cluster = os.path.join(self.st["data"], "cluster")
        r = self.pg.as_user(self.st["user"], [os.path.join(self.st["bindir"], "pg_ctl"), "-D",
                                              cluster, "-l", os.path.join(self.st["data"],
                                                                          "server.log"),
                                              "-w", "-t", "60", "-m", "fast", "restart"],
                            timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"pg_cost: restart failed: {r.stdout}{r.stderr}")
        with open(os.path.join(cluster, "postmaster.pid")) as f:
            self.pid = int(f.readline())
        self.version = self.admin("SHOW server_version").strip()

    def admin(self, sql):
        r = self.pg.psql(self.st, sql)
        if r.returncode != 0:
            raise SystemExit(f"pg_cost: {sql}: {r.stderr.strip()}")
        return r.stdout

    def uri(self, db):
        return self.pg.uri(self.st["port"], db=db)

    def create(self, db):
        self.admin(f"DROP DATABASE IF EXISTS {db}")
        self.admin(f"CREATE DATABASE {db} OWNER strobe")
        return self.uri(db)

    def drop(self, db):
        self.admin(f"DROP DATABASE IF EXISTS {db}")

    def stop(self):
        subprocess.run([PGSERVER, "stop", self.dir], capture_output=True)


# ---- ingest ---------------------------------------------------------------------

def ingest(build, srv, layout, nodes, seconds, db, **kw):
    uri = srv.create(db)
    argv = [os.path.join(build, "bench", "pg_ingest"), "--store", uri, "--layout", layout,
            "--nodes", str(nodes), "--seconds", str(seconds), "--server-pid", str(srv.pid)]
    for k, v in kw.items():
        if v is True:
            argv.append("--" + k.replace("_", "-"))
        elif v:
            argv += ["--" + k.replace("_", "-"), str(v)]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"pg_cost: pg_ingest {layout} {nodes} nodes: {p.stderr.strip()}")
    return json.loads(p.stdout)


def run_ingest(build, srv, plan):
    """Every node count, rounds alternating the layouts. The last strobe
    database of the largest count is kept for the reads."""
    out = []
    keep = None
    for cfg in plan["ingest"]:
        n = cfg["nodes"]
        res = {"nodes": n, "strobe": [], "strobe_1s": [], "pipelined": [], "rows": []}
        for r in range(cfg["rounds"]):
            note(f"ingest: {n} nodes, round {r + 1}/{cfg['rounds']}: strobe and pipelined "
                 f"{cfg['strobe_s']} s, rows {cfg['rows_s']} s (simulated)")
            for layout in LAYOUTS if r % 2 == 0 else LAYOUTS[::-1]:
                db = f"ingest_{layout}_{n}_{r}"
                secs = cfg["rows_s"] if layout == "rows" else cfg["strobe_s"]
                res[layout].append(ingest(build, srv, layout.split("_")[0], n, secs, db,
                                          warmup=2 if secs > 4 else 1,
                                          open_every=1 if layout == "strobe_1s" else None,
                                          size_every=0 if layout == "rows" else
                                          cfg["size_every"]))
                if layout == "strobe" and n == plan["ingest"][-1]["nodes"]:
                    if keep:
                        srv.drop(keep)
                    keep = db
                else:
                    srv.drop(db)
        out.append(res)
    return out, keep


def run_realtime(build, srv, seconds):
    out = {}
    for layout in ("strobe", "rows"):
        note(f"real time: 8 nodes, {layout}, {seconds} s")
        db = f"realtime_{layout}"
        out[layout] = ingest(build, srv, layout, 8, seconds, db, warmup=1, realtime=True)
        srv.drop(db)
    return out


# ---- reads ----------------------------------------------------------------------

def run_reads(build, srv, db, plan, ingest_runs):
    uri = srv.uri(db)
    strobe = os.path.join(build, "strobe")
    extra = max(plan["runs"] - ingest_runs, 1)
    note(f"reads: {plan['points'] / 1e6:g} M-sample series and {extra} runs into the "
         f"{ingest_runs}-run database")
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(build, "bench", "serve_synth"), "--store", uri, "--points",
                        str(plan["points"]), "--runs", str(extra)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"pg_cost: serve_synth: {p.stderr.strip()}")
    synth = json.loads(p.stdout)
    synth_s = time.monotonic() - t0
    runs = ingest_runs + extra
    ls = []
    for _ in range(plan["ls_reps"]):
        t0 = time.perf_counter()
        p = subprocess.run([strobe, "ls", "--store", uri], capture_output=True, text=True)
        ls.append((time.perf_counter() - t0) * 1e3)
        if p.returncode != 0:
            raise SystemExit(f"pg_cost: strobe ls: {p.stderr.strip()}")
    listed = len(p.stdout.splitlines()) - 1
    srvp = subprocess.Popen([strobe, "serve", "--store", uri, "--listen", "127.0.0.1:0",
                             "--rate", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = srvp.stderr.readline()
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        path = f"/api/runs/{synth['run']}/series?name=cpu.util&points=1000"
        first_ms, _ = get_body(port, path)
        lat, decoded = [], 0
        for _ in range(plan["requests"]):
            ms, body = get_body(port, path)
            lat.append(ms)
            decoded = json.loads(body).get("blocks_decoded", 0)
        runs_cold_ms, body = get_body(port, "/api/runs")
        page = json.loads(body)
        runs_listed, runs_total = len(page.get("runs", [])), page.get("total")
        runs_warm = [get_body(port, "/api/runs")[0] for _ in range(plan["requests"])]
        # every run in one answer, not the first page only
        runs_all = [get_body(port, f"/api/runs?limit={runs + 1}")[0]
                    for _ in range(plan["ls_reps"])]
    finally:
        srvp.terminate()
        srvp.wait(timeout=30)
    # the same series without HTTP: the store's function, and one query for
    # the blocks' data against the store's batches (bench/pg_series_read.c)
    p = subprocess.run([os.path.join(build, "bench", "pg_series_read"), "--store", uri, "--run",
                        synth["run"], "--name", "cpu.util", "--points", "1000", "--reps",
                        str(plan["requests"])], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"pg_cost: pg_series_read: {p.stderr.strip()} {p.stdout.strip()}")
    direct = json.loads(p.stdout)
    return {"direct": direct,"runs": runs, "runs_listed_ls": listed, "runs_listed_api": runs_listed,
            "points": synth["points"], "blocks": synth["blocks"], "synth_s": synth_s,
            "ls_p50_ms": statistics.median(ls), "ls_ms": ls,
            "series_first_ms": first_ms, "series_p50_ms": statistics.median(lat),
            "series_p99_ms": pct(lat, 0.99), "series_blocks_decoded": decoded,
            "requests": plan["requests"], "api_runs_first_ms": runs_cold_ms,
            "api_runs_p50_ms": statistics.median(runs_warm), "api_runs_total": runs_total,
            "api_runs_all_p50_ms": statistics.median(runs_all)}


def rules_256_node_hour(build, srv, plan):
    """Offline rules over a job of plan["rules_nodes"] nodes x plan["rules_hours"]
    from PostgreSQL: bench/rules_job.py's job (rules_synth, a node at a time)
    written into srv, then `strobe rules --store URI --json JOB` timed. None
    when the plan has no such job (default mode: it takes minutes)."""
    nodes, hours = plan.get("rules_nodes", 0), plan.get("rules_hours", 0)
    if not nodes:
        return None
    spec = importlib.util.spec_from_file_location("rules_job", os.path.join(HERE, "rules_job.py"))
    rj = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rj)
    uri = srv.create("rules_job")
    note(f"rules: writing a job of {nodes} nodes x {hours:g} h into PostgreSQL")
    written_s = rj.make_job(os.path.join(build, "bench", "rules_synth"), uri, nodes, hours)
    db_bytes = int(srv.admin(f"SELECT pg_database_size('rules_job')").strip() or 0)
    note(f"rules: strobe rules over the job ({plan['rules_runs']} runs)")
    strobe = os.path.join(build, "strobe")
    job, out = rj.measured([strobe, "rules", "--store", uri, "--json", rj.JOB_ID],
                           plan["rules_runs"])
    verdict = json.loads(out)
    srv.drop("rules_job")
    return {"nodes": nodes, "hours": hours, "written_s": written_s, "db_bytes": db_bytes,
            "job": job, "rules": {r["rule"]: r["status"] for r in verdict.get("rules", [])},
            "findings": len(verdict.get("findings", []))}


# ---- one recorder into SQLite and PostgreSQL -------------------------------------

def recorder_cpu(build, store, seconds):
    """`strobe run -- sleep S`: the recorder's CPU from wait4 (its child, sleep,
    adds under a millisecond) and its own strobe.cpu series."""
    strobe = os.path.join(build, "strobe")
    t0 = time.monotonic()
    p = subprocess.Popen([strobe, "run", "--store", store, "--interval", "100ms", "--quiet",
                          "--no-report", "--", "sleep", str(seconds)])
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"pg_cost: strobe run into {store} failed")
    show = json.loads(subprocess.run([strobe, "show", "--store", store, "--json", "last"],
                                     capture_output=True, text=True, check=True).stdout)
    cpu = ru.ru_utime + ru.ru_stime
    return {"cpu_s": cpu, "wall_s": wall, "pct_of_core": cpu / wall * 100,
            "strobe_cpu_mean_pct": (show["metrics"].get("strobe.cpu") or {}).get("mean"),
            "samples": show.get("samples")}


def run_single(build, srv, tmp, plan):
    out = {"sqlite": [], "postgresql": []}
    uri = srv.create("single")
    for r in range(plan["single_rounds"]):
        note(f"one recorder, round {r + 1}/{plan['single_rounds']}: SQLite and PostgreSQL, "
             f"{plan['single_s']} s each")
        order = ("sqlite", "postgresql") if r % 2 == 0 else ("postgresql", "sqlite")
        for kind in order:
            store = os.path.join(tmp, f"single{r}.db") if kind == "sqlite" else uri
            out[kind].append(recorder_cpu(build, store, plan["single_s"]))
    srv.drop("single")
    return out


# ---- the report -------------------------------------------------------------------

def med(runs, key):
    return statistics.median(r[key] for r in runs)


def spread(runs, key, fmt):
    """'m' for one round, 'm (lo-hi)' for several."""
    xs = [r[key] for r in runs]
    m = statistics.median(xs)
    if len(xs) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def verdict(ok, by):
    return "met" if ok else f"**missed** ({by})"


LAYOUT_NAMES = {"strobe": "strobe (the store's code)",
                "strobe_1s": "strobe, open blocks every 1 s (--open-every 1s)",
                "pipelined": "strobe, writes pipelined", "rows": "MLflow's rows"}
LAYOUTS = tuple(LAYOUT_NAMES)


STEADY_FROM_S = 300  # the open blocks' working set fills in the first minutes


def steady_bytes(x):
    """B/sample the samples' tables grew by between the last two sizes, once
    past STEADY_FROM_S; None without two such sizes."""
    zs = x["sizes"]
    if len(zs) < 2 or zs[-2]["second"] < STEADY_FROM_S:
        return None
    return (zs[-1]["sample_bytes"] - zs[-2]["sample_bytes"]) / (
        (zs[-1]["second"] - zs[-2]["second"]) * x["nodes"] * SAMPLES_PER_NODE_S)


def report(res, plan_name):
    out = []
    w = out.append
    m = res["machine"]
    w(f"PostgreSQL {m['pg_version'].split()[0]} on this machine ({m['nproc']} cores), started "
      "by tests/tools/pgserver: fsync, synchronous_commit and full_page_writes off; "
      "max_connections 300, shared_buffers 1 GB. Mode: " + plan_name + "; load average "
      + " ".join(m.get("loadavg", [])) + " at the start.")
    w("")
    w("### Ingest: N node recorders into one PostgreSQL (bench/pg_ingest.c)")
    w("")
    w("| nodes | layout | rounds × simulated s | sustained samples/s | server CPU µs/sample "
      "| server cores at real time | disk B/sample after the run | WAL B/sample "
      "| client CPU per node |")
    w("|---|---|---|---|---|---|---|---|---|")
    for r in res["ingest"]:
        n = r["nodes"]
        for layout in LAYOUTS:
            runs = r[layout]
            cores = med(runs, "server_cpu_us_per_sample") * n * SAMPLES_PER_NODE_S / 1e6
            w(f"| {n} | {LAYOUT_NAMES[layout]} | {len(runs)} × {runs[0]['seconds']} "
              f"| {spread(runs, 'samples_per_s', '{:,.0f}')} "
              f"| {spread(runs, 'server_cpu_us_per_sample', '{:.2f}')} | {cores:.2f} "
              f"| {spread(runs, 'bytes_per_sample', '{:.1f}')} "
              f"| {med(runs, 'wal_bytes_per_sample'):.0f} "
              f"| {med(runs, 'client_cpu_per_node_s_per_s') * 100:.3f} % of a core |")
    w("")
    w("Ratios of the medians, MLflow's rows ÷ strobe:")
    w("")
    w("| nodes | server CPU per sample | same, open blocks every 1 s | same, writes pipelined "
      "| disk after the run | disk at steady state | WAL per sample |")
    w("|---|---|---|---|---|---|---|")
    sized = [x for r in res["ingest"] for x in r["strobe"] if len(x["sizes"]) > 1]
    sized_1s = [x for r in res["ingest"] for x in r["strobe_1s"] if len(x["sizes"]) > 1]
    steadies = [steady_bytes(x) for x in sized if steady_bytes(x) is not None]
    steady = statistics.median(steadies) if steadies else None
    for r in res["ingest"]:
        s, s1, p, q = r["strobe"], r["strobe_1s"], r["pipelined"], r["rows"]
        rows_b = med(q, "bytes_per_sample")
        w(f"| {r['nodes']} "
          f"| {med(q, 'server_cpu_us_per_sample') / med(s, 'server_cpu_us_per_sample'):.1f}× "
          f"| {med(q, 'server_cpu_us_per_sample') / med(s1, 'server_cpu_us_per_sample'):.1f}× "
          f"| {med(q, 'server_cpu_us_per_sample') / med(p, 'server_cpu_us_per_sample'):.1f}× "
          f"| {rows_b / med(s, 'bytes_per_sample'):.0f}× "
          f"| {f'{rows_b / steady:.0f}×' if steady else ''} "
          f"| {med(q, 'wal_bytes_per_sample') / med(s, 'wal_bytes_per_sample'):.1f}× |")
    w("")
    if sized:
        w("strobe's samples' tables as a run goes on (VACUUM once a simulated minute). The first "
          f"minutes fill the open blocks' working set; the growth after {STEADY_FROM_S} s is "
          "the steady state:")
        w("")
        w("| nodes | open blocks every | simulated s | B/sample so far "
          "| B/sample since the size before | encoded blocks alone, at the end |")
        w("|---|---|---|---|---|---|")
        for x in sized + sized_1s:
            every = f"{x.get('open_every_s', 1)} s"
            prev = None
            for z in x["sizes"]:
                slope = ""
                if prev:
                    grew = z["sample_bytes"] - prev["sample_bytes"]
                    span = (z["second"] - prev["second"]) * x["nodes"] * SAMPLES_PER_NODE_S
                    slope = f"{grew / span:.2f}"
                w(f"| {x['nodes']} | {every} | {z['second']} | {z['bytes_per_sample']:.2f} | {slope} "
                  f"| {x['encoded_bytes_per_sample']:.2f} |")
                prev = z
        w("")
    ev = [x for r in res["ingest"] for x in r["strobe"]]
    w(f"strobe's events take {statistics.median(x['bytes_per_event'] for x in ev):.1f} B/event "
      "on disk (median of the runs), outside the figures per sample.")
    w("")
    big = res["ingest"][-1]
    n = big["nodes"]
    at = {k: med(big[k], "server_cpu_us_per_sample") for k in LAYOUTS}
    cores = at["strobe"] * 256 * SAMPLES_PER_NODE_S / 1e6
    cores_1 = at["strobe_1s"] * 256 * SAMPLES_PER_NODE_S / 1e6
    cores_p = at["pipelined"] * 256 * SAMPLES_PER_NODE_S / 1e6
    cpu_ratio, cpu_ratio_p = at["rows"] / at["strobe"], at["rows"] / at["pipelined"]
    cpu_ratio_1 = at["rows"] / at["strobe_1s"]
    steadies_1 = [steady_bytes(x) for x in sized_1s if steady_bytes(x) is not None]
    steady_1 = f"{statistics.median(steadies_1):.2f}" if steadies_1 else ""
    b_end = med(big["strobe"], "bytes_per_sample")
    disk_ratio = med(big["rows"], "bytes_per_sample") / b_end
    w("### Goals")
    w("")
    w("| goal | strobe (the store's code) | verdict | open blocks every 1 s | writes pipelined |")
    w("|---|---|---|---|---|")
    w(f"| 256 nodes at 100 ms, server under one core | {cores:.2f} cores "
      f"| {verdict(cores < GOAL_CORES, f'{cores / GOAL_CORES:.2f}× the goal')} "
      f"| {cores_1:.2f} cores | {cores_p:.2f} cores |")
    w(f"| ≥ 20× less server CPU than the rows | {cpu_ratio:.1f}× "
      f"| {verdict(cpu_ratio >= GOAL_RATIO, f'{GOAL_RATIO / cpu_ratio:.1f}× short')} "
      f"| {cpu_ratio_1:.1f}× | {cpu_ratio_p:.1f}× |")
    short = f"{GOAL_RATIO / disk_ratio:.1f}× short"
    b_end_1 = med(big["strobe_1s"], "bytes_per_sample")
    w(f"| ≥ 20× less disk than the rows | {disk_ratio:.0f}× after "
      f"{big['strobe'][0]['seconds']} s | {verdict(disk_ratio >= GOAL_RATIO, short)} "
      f"| {med(big['rows'], 'bytes_per_sample') / b_end_1:.0f}× | |")
    if steady is not None:
        w(f"| ≤ 2 B/sample on disk | {steady:.2f} at steady state; {b_end:.1f} after "
          f"{big['strobe'][0]['seconds']} s at {n} nodes "
          f"| {verdict(steady <= GOAL_BYTES, f'{steady / GOAL_BYTES:.2f}× the goal')} "
          f"| {steady_1} at steady state | |")
    w("")
    rt = res["realtime"]
    w("### Real time: 8 nodes on the wall clock")
    w("")
    w("Node i commits second s at s + i/8 s; a commit waits for the one before it.")
    w("")
    w("| layout | seconds | server CPU, % of a core | commit p50 | commit p99 | commit max "
      "| kept up |")
    w("|---|---|---|---|---|---|---|")
    for layout in ("strobe", "rows"):
        x = rt[layout]
        w(f"| {layout} | {x['seconds']} | {x['server_cpu_s'] / x['wall_s'] * 100:.1f} % "
          f"| {x['commit_p50_s'] * 1e3:.1f} ms | {x['commit_p99_s'] * 1e3:.1f} ms "
          f"| {x['commit_max_s'] * 1e3:.1f} ms | {'yes' if x['commit_max_s'] < 1 else 'no'} |")
    w("")
    rd = res["reads"]
    w("### Reads from PostgreSQL")
    w("")
    w(f"In the 256-node database, with serve_synth's runs added to {rd['runs']:,} runs and one "
      f"{rd['points'] / 1e6:g} M-sample series ({rd['blocks']:,} blocks).")
    w("")
    w("| what | p50 | other | goal |")
    w("|---|---|---|---|")
    w(f"| `strobe ls --store URI`, {rd['runs_listed_ls']:,} runs, {len(rd['ls_ms'])} times "
      f"| {rd['ls_p50_ms']:.0f} ms | whole process | |")
    w(f"| `/api/runs`, its first page ({rd['runs_listed_api']:,} of {rd['api_runs_total']:,} "
      f"runs), warm, {rd['requests']} requests | {rd['api_runs_p50_ms']:.0f} ms "
      f"| the first request {rd['api_runs_first_ms']:.0f} ms | |")
    w(f"| `/api/runs?limit=…`, all {rd['api_runs_total']:,} runs, {len(rd['ls_ms'])} requests "
      f"| {rd['api_runs_all_p50_ms']:.0f} ms | | |")
    ok = rd["series_p50_ms"] <= GOAL_SERIES_MS
    by = f"{rd['series_p50_ms'] / GOAL_SERIES_MS:.1f}× the goal"
    w(f"| series to the dashboard, 1000 points, {rd['requests']} requests "
      f"| {rd['series_p50_ms']:.0f} ms | p99 {rd['series_p99_ms']:.0f} ms; "
      f"{rd['series_blocks_decoded']} blocks decoded | ≤ 100 ms: {verdict(ok, by)} |")
    d = rd["direct"]
    w(f"| of it: the run's id resolved (store_resolve_run), {d['reps']} times "
      f"| {d['resolve_p50_ms']:.0f} ms | max {d['resolve_max_ms']:.0f} ms | |")
    w(f"| of it: the series (series_find, downsampler_run), {d['reps']} times "
      f"| {d['store_p50_ms']:.0f} ms | max {d['store_max_ms']:.0f} ms | |")
    w(f"| the series, the {d['blocks_decoded']} blocks' data in one query (not the store's code) "
      f"| {d['one_query_p50_ms']:.0f} ms | max {d['one_query_max_ms']:.0f} ms; the same buckets "
      f"| |")
    w("")
    sg = res["single"]
    w("### One recorder: SQLite against PostgreSQL")
    w("")
    w(f"`strobe run --interval 100ms -- sleep {sg['sqlite'][0]['wall_s']:.0f}`; the recorder's "
      "CPU from wait4 (sleep adds nothing), medians.")
    w("")
    w("| store | recorder CPU, % of a core | strobe.cpu mean | rounds |")
    w("|---|---|---|---|")
    for kind in ("sqlite", "postgresql"):
        xs = sg[kind]
        w(f"| {kind} | {spread(xs, 'pct_of_core', '{:.2f}')} % "
          f"| {statistics.median(x['strobe_cpu_mean_pct'] or 0 for x in xs):.2f} % | {len(xs)} |")
    w("")
    rl = res.get("rules")
    w("### Offline rules over a job from PostgreSQL")
    w("")
    if not rl:
        w("Not measured in this mode (full mode only). `bench/rules_job.py` times the same job "
          "from SQLite.")
    else:
        j = rl["job"]
        w(f"`bench/rules_job.py`'s job, {rl['nodes']} nodes x {rl['hours']:g} h at 10 Hz, written "
          f"by rules_synth a node at a time in {rl['written_s']:.0f} s "
          f"({rl['db_bytes'] / 2**30:.2f} GiB database). `strobe rules --store URI --json JOB`:")
        w("")
        w("| runs | wall (median) | CPU | peak RSS | rules, by status | findings |")
        w("|---|---|---|---|---|---|")
        st = {}
        for v in rl["rules"].values():
            st[v] = st.get(v, 0) + 1
        by = ", ".join(f"{k} {v}" for k, v in sorted(st.items()))
        w(f"| {len(j['walls'])} | {j['wall_s']:.1f} s | {j['cpu_s']:.1f} s "
          f"| {j['rss_mib']:.0f} MiB | {by} | {rl['findings']} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mode", choices=sorted(PLANS), default="default")
    ap.add_argument("--json")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    plan_name = a.mode
    plan = PLANS[plan_name]
    for f in ("strobe", "bench/pg_ingest", "bench/pg_series_read", "bench/serve_synth"):
        if not os.access(os.path.join(build, f), os.X_OK):
            raise SystemExit(f"pg_cost: {build}/{f} is missing; run 'make' first")
    tmp = tempfile.mkdtemp(prefix="strobe-bench-pg-")
    srv = None
    t0 = time.monotonic()
    try:
        srv = Server(tmp)
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        res = {"machine": {"nproc": os.cpu_count(), "pg_version": srv.version, "loadavg": load},
               "plan": plan_name}
        res["ingest"], keep = run_ingest(build, srv, plan)
        res["realtime"] = run_realtime(build, srv, plan["realtime_s"])
        res["reads"] = run_reads(build, srv, keep, plan, plan["ingest"][-1]["nodes"])
        res["rules"] = rules_256_node_hour(build, srv, plan)
        res["single"] = run_single(build, srv, tmp, plan)
    finally:
        if srv:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res["seconds"] = time.monotonic() - t0
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    print(report(res, plan_name))
    note(f"done in {res['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
