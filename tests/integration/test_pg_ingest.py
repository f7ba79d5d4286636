#!/usr/bin/python3
"""bench/pg_ingest, the cluster-ingest benchmark (bench/pg_cost.py times it),
writes what it says, on a PostgreSQL server of the test's own:

1. strobe's layout: one running run a node, 150 series of 10 points a
   second, events sealed at 5 s as the recorder's sink seals them, all read
   back by `strobe ls`, `show` and `export` from the store.
2. The pipelined variant writes the same rows: every series exports the
   same points as from strobe's layout.
3. MLflow's rows: one row a sample with the same values, latest_metrics
   holding each key's last one, and MLflow's keys and index.

Not timed. Skips, saying why, where PostgreSQL is not installed.
"""
import json
import os
import subprocess

from strobetest import *

BUILD = os.environ.get("STROBE_BUILD", os.path.dirname(os.path.abspath(STROBE)))
INGEST = os.path.join(BUILD, "bench", "pg_ingest")
NODES, SECONDS = 2, 6
SAMPLES = NODES * SECONDS * 150 * 10


def ingest(uri, layout):
    p = subprocess.run([INGEST, "--store", uri, "--layout", layout, "--nodes", str(NODES),
                        "--seconds", str(SECONDS), "--warmup", "1"],
                       capture_output=True, text=True, timeout=120)
    check(f"pg_ingest --layout {layout} runs", p.returncode == 0, p.stderr[-500:])
    return json.loads(p.stdout) if p.returncode == 0 else {}


def series_points(uri, run):
    """{series key: [(time_ns, value), ...]} of every series of run."""
    p = strobe("export", "--format", "jsonl", run, store=uri)
    out = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        labels = ",".join(f"{k}={v}" for k, v in r["labels"].items())
        key = r["metric"] + (f"{{{labels}}}" if labels else "")
        out.setdefault(key, []).append((r["time_ns"], r["value"]))
    return out


why = pg_missing() or (None if os.access(INGEST, os.X_OK) else f"{INGEST} is not built")
if why:
    skip("pg_ingest", why)
else:
    with pg_server() as uri:
        dbs = {}
        for layout in ("strobe", "pipelined", "rows"):
            psql(uri, f"CREATE DATABASE layout_{layout}")
            dbs[layout] = uri.replace("/strobe?", f"/layout_{layout}?")

        # 1. strobe's layout, read back by strobe
        said = ingest(dbs["strobe"], "strobe")
        check("it counts every sample and event", said.get("samples") == SAMPLES
              and said.get("metered_samples") == SAMPLES * (SECONDS - 1) // SECONDS
              and said.get("events") == NODES * SECONDS * 200, said)
        check("its sizes cover the samples' and the events' tables",
              set(said.get("tables", {})) == {"runs", "run_attrs", "series", "blocks",
                                              "event_names", "processes", "event_blocks"}
              and 0 < said["sample_bytes"] < said["bytes"], said.get("tables"))
        runs = json.loads(strobe("ls", "--json", store=dbs["strobe"]).stdout)
        names = sorted(r["name"] for r in runs)
        check(f"{NODES} runs, one a node, still running",
              names == [f"ingest-node{i:03d}" for i in range(NODES)]
              and all(r["status"] == "running" for r in runs), runs)
        r = show(dbs["strobe"], "ingest-node001")
        m = r["metrics"]
        check("150 series", len(m) == 150, sorted(m))
        off = {k: v["count"] for k, v in m.items() if v["count"] != SECONDS * 10}
        check(f"{SECONDS * 10} points each", not off, off)
        check("the run's counters are the commits'", r["points"] == SECONDS * 1500
              and r["samples"] == SECONDS * 10, (r["points"], r["samples"]))
        check("8 GPUs busy, in 0..100",
              all(0 <= m[f"gpu.util{{gpu={g}}}"]["min"] and m[f"gpu.util{{gpu={g}}}"]["max"]
                  <= 100 and m[f"gpu.util{{gpu={g}}}"]["p50"] > 50 for g in range(8)), "")
        check("constants are constant", m["mem.total_bytes"]["min"] == m["mem.total_bytes"]["max"]
              == 2 ** 40, m["mem.total_bytes"])
        steps = r["steps"] or {}
        check("the events sealed at 5 s: 200 steps of a 25 ms loop", steps.get("count") == 200
              and steps.get("p50_ns") == steps.get("max_ns") == 25_000_000, steps)
        ph = r["phases"] or {}
        check("every phase is there", all(ph.get(k, {}).get("share", 0) > 0.05
                                          for k in ("data", "forward", "backward", "optimizer")),
              ph)
        pts = series_points(dbs["strobe"], "ingest-node001")
        t = [ts for ts, _ in pts.get("cpu.util", [])]
        check("a point every 100 ms", t and all(b - a == 100_000_000 for a, b in zip(t, t[1:])),
              t[:5])

        # 2. the pipelined variant stores the same blocks
        said = ingest(dbs["pipelined"], "pipelined")
        check("the pipelined variant says so", said.get("layout") == "pipelined", said)
        same = [i for i in range(NODES)
                if series_points(dbs["pipelined"], f"ingest-node{i:03d}")
                == series_points(dbs["strobe"], f"ingest-node{i:03d}")]
        check("every series holds the same points as through the store", len(same) == NODES,
              same)
        r = show(dbs["pipelined"], "ingest-node000")
        check("and the run's counters", r["points"] == SECONDS * 1500, r["points"])

        # 3. MLflow's rows: the same values, one row each
        said = ingest(dbs["rows"], "rows")
        check("the rows count every sample, no event", said.get("samples") == SAMPLES
              and said.get("events") == 0, said)
        rows = int(psql(dbs["rows"], "SELECT count(*) FROM metrics"))
        check("one row a sample", rows == SAMPLES, rows)
        uuid = psql(dbs["rows"], "SELECT run_uuid FROM runs WHERE name = 'ingest-node001'").strip()
        got = psql(dbs["rows"], "SELECT timestamp, value FROM metrics WHERE key = 'gpu.util{gpu=3}'"
                   f" AND run_uuid = '{uuid}' ORDER BY timestamp").split()
        want = [f"{ts // 1_000_000}|{v:g}" for ts, v in pts["gpu.util{gpu=3}"]]
        check("the same values at the same times (ms)", got == want, (got[:3], want[:3]))
        latest = psql(dbs["rows"], "SELECT count(*), min(timestamp), max(timestamp)"
                      " FROM latest_metrics").strip().split("|")
        last_ms = pts["gpu.util{gpu=3}"][-1][0] // 1_000_000
        check("latest_metrics: each key's last sample", latest == [str(NODES * 150),
                                                                   str(last_ms), str(last_ms)],
              latest)
        idx = psql(dbs["rows"], "SELECT indexname, indexdef FROM pg_indexes"
                   " WHERE tablename = 'metrics' ORDER BY 1")
        check("MLflow's primary key and index on metrics",
              "metric_pk|CREATE UNIQUE INDEX metric_pk ON public.metrics USING btree (key, "
              "\"timestamp\", step, run_uuid, value, is_nan)" in idx
              and "index_metrics_run_uuid|CREATE INDEX index_metrics_run_uuid ON public.metrics "
              "USING btree (run_uuid)" in idx, idx)
done()
