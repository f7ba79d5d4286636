#!/usr/bin/env python3
"""strobe serve: series query latency over a 10 M-sample series (p50, p99 of
--requests at 1000 points; budget 50 ms), runs-list latency with 1,000 runs
in the store (the first request, which computes every run's summary, and
warm ones from the server's cache), and bytes per chart against the
raw-points approach (every sample as JSON: `strobe export --format jsonl`
of the series, actually produced and counted). The store comes from
bench/serve_synth.c, cached in $TMPDIR/strobe-bench-serve. Prints a markdown
section; raw figures to --json.

  bench/serve_cost.py --strobe build/strobe --synth build/bench/serve_synth
                      [--points 10000000] [--runs 1000] [--requests 200] [--json FILE]
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def get(port, path):
    """One request on its own connection, as a browser's first fetch: ms, bytes."""
    ms, body = get_body(port, path)
    return ms, len(body)


def get_body(port, path):
    """The same request: ms, and the body itself."""
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    ms = (time.perf_counter() - t0) * 1e3
    if r.status != 200:
        raise SystemExit(f"serve_cost: {path}: HTTP {r.status}: {body[:200]!r}")
    return ms, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--points", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--json")
    a = ap.parse_args()
    cache = os.path.join(os.environ.get("TMPDIR", tempfile.gettempdir()), "strobe-bench-serve")
    os.makedirs(cache, exist_ok=True)
    db = os.path.join(cache, f"serve-{a.points}-{a.runs}.db")
    if not os.path.exists(db + ".ok"):
        for f in (db, db + "-wal", db + "-shm"):
            if os.path.exists(f):
                os.unlink(f)
        print(f"serve_cost: generating {a.points} points and {a.runs} runs", file=sys.stderr)
        subprocess.run([a.synth, "--store", db, "--points", str(a.points), "--runs",
                        str(a.runs)], check=True, capture_output=True)
        open(db + ".ok", "w").close()
    run_id = "000000005e000000"  # serve_synth's long run
    # the rate limit is lifted: the benchmark is one client asking on purpose
    srv = subprocess.Popen([a.strobe, "serve", "--store", db, "--listen", "127.0.0.1:0",
                            "--rate", "0"], stderr=subprocess.PIPE, text=True)
    line = srv.stderr.readline()
    try:
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        series = f"/api/runs/{run_id}/series?name=cpu.util&points=1000"
        get(port, series)  # first touch of the file: page cache, prepared statements
        lat, nbytes = [], 0
        for _ in range(a.requests):
            ms, nbytes = get(port, series)
            lat.append(ms)
        cold_ms, list_bytes = get(port, "/api/runs")
        warm = [get(port, "/api/runs")[0] for _ in range(50)]
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    # the raw-points approach: every sample as JSON, produced for real
    t0 = time.perf_counter()
    p = subprocess.Popen([a.strobe, "export", "--store", db, "--format", "jsonl", "--metric",
                          "cpu.util", run_id], stdout=subprocess.PIPE)
    raw_bytes = 0
    while True:
        chunk = p.stdout.read(1 << 20)
        if not chunk:
            break
        raw_bytes += len(chunk)
    p.wait()
    raw_s = time.perf_counter() - t0
    res = {"points": a.points, "runs": a.runs, "requests": a.requests,
           "series_p50_ms": statistics.median(lat), "series_p99_ms": pct(lat, 0.99),
           "series_bytes": nbytes, "runs_list_cold_ms": cold_ms,
           "runs_list_p50_ms": statistics.median(warm), "runs_list_p99_ms": pct(warm, 0.99),
           "runs_list_bytes": list_bytes, "raw_json_bytes": raw_bytes, "raw_json_s": raw_s,
           "budget_ms": 50}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f)
    ok = "within budget" if res["series_p99_ms"] <= 50 else "**over budget**"
    print(f"`strobe serve` over a store with a {a.points / 1e6:g} M-sample series and "
          f"{a.runs} runs (bench/serve_synth.c), one connection per request:\n")
    print("| what | p50 | p99 | bytes |\n|---|---|---|---|")
    print(f"| series, 1000 points, {a.requests} requests | {res['series_p50_ms']:.1f} ms | "
          f"{res['series_p99_ms']:.1f} ms ({ok}, 50 ms) | {nbytes:,} |")
    print(f"| runs list, {a.runs} runs, warm (50 requests) | {res['runs_list_p50_ms']:.1f} ms | "
          f"{res['runs_list_p99_ms']:.1f} ms | {list_bytes:,} |")
    print(f"| runs list, first request (every summary computed) | {cold_ms:.0f} ms | | |")
    print(f"| raw points as JSON (`strobe export --format jsonl`) | {raw_s * 1e3:.0f} ms | | "
          f"{raw_bytes:,} ({raw_bytes / max(nbytes, 1):,.0f} x the chart) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
