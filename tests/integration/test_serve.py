#!/usr/bin/env python3
"""strobe serve end to end over a store of real `strobe run` recordings: every
endpoint checked against `strobe show --json`, the store read with sqlite3
and `strobe export --format jsonl` (downsampled buckets against the raw
points of each bucket); a hostile run name; paths that try to leave the
asset set; methods, bodies, URI length; non-loopback without a token; token
checks; the rate limit; a live run; a clean stop."""
import http.client
import json
import math
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.parse

from strobetest import PYTHON, STROBE, check, done, near, show, store_path, strobe

HOSTILE = "<img src=x onerror=alert(1)>"

# 20 ms steps, 40 % data and 60 % forward, through strobe's Python API
WORKLOAD = r"""
import time, strobe
T0 = time.monotonic()
while time.monotonic() - T0 < SECONDS:
    with strobe.span("data"):
        time.sleep(0.008)
    with strobe.span("forward"):
        x = sum(range(20000)); time.sleep(0.010)
    strobe.step()
"""


def record(db, name, seconds, opts=()):
    p = strobe("run", "--quiet", "--interval", "20ms", "--name", name, *opts, "--",
               PYTHON, "-c", "SECONDS=%s\n" % seconds + WORKLOAD, store=db)
    check(f"recorded {name!r}", p.returncode == 0, p.stderr)


class Server:
    def __init__(self, db, *args):
        self.p = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0",
                                   *args], stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        self.line = line
        self.port = int(line.split("127.0.0.1:")[1].split("/")[0]) if "serving" in line else 0

    def request(self, path, method="GET", headers=None, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body.encode() if body is not None else None)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def json(self, path, **kw):
        status, headers, data = self.request(path, **kw)
        return status, json.loads(data) if data else None, headers

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = None
        return rc, self.p.stderr.read()


def q(**kw):
    return "?" + urllib.parse.urlencode(kw)


def raw_points(db, run_id, metric):
    p = strobe("export", "--format", "jsonl", "--metric", metric, run_id, store=db)
    pts = []
    for line in p.stdout.splitlines():
        o = json.loads(line)
        if o["metric"] == metric and not o.get("labels"):
            pts.append((o["time_ns"], o["value"]))
    return sorted(pts)


def check_buckets(name, resp, pts):
    """Non-empty buckets of the response against buckets of the raw points."""
    lo, hi, w = resp["from_ns"], resp["to_ns"], resp["bucket_ns"]
    want = {}
    for t, v in pts:
        if lo <= t <= hi:
            want.setdefault((t - lo) // w, []).append((t, v))
    keys = sorted(want)
    got = list(zip(resp["t"], resp["min"], resp["max"], resp["mean"], resp["count"]))
    check(f"{name}: as many buckets as the raw points fill", len(got) == len(keys),
          f"{len(got)} vs {len(keys)}")
    bad = []
    for (t, mn, mx, mean, n), k in zip(got, keys):
        vs = [v for _, v in want[k] if v is not None and not math.isnan(v)]
        first = (want[k][0][0] - resp["t0_ns"]) / 1e9
        ok = (n == len(want[k]) and abs(t - first) < 1e-6 and mn == min(vs) and mx == max(vs)
              and abs(mean - sum(vs) / n) <= 1e-6 * max(1, abs(mean)))
        if not ok:
            bad.append((k, (t, mn, mx, mean, n), (first, min(vs), max(vs), sum(vs) / n,
                                                   len(want[k]))))
    check(f"{name}: count, first time, min, max and mean of every bucket equal the raw points'",
          not bad, str(bad[:3]))


def check_connections(s):
    """Idle and many connections from one address (every loopback user is
    127.0.0.1): they must not lock others out, and none is reset."""
    idle = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(64)]
    for x in idle:
        x.sendall(b"GET /api/runs HTTP/1.1\r\n")  # a request line, never the headers' end
    opened = time.monotonic()
    st, _, _ = s.request("/api/runs?limit=1")
    check("64 idle half-sent requests open: a request is still answered", st == 200, f"{st}")

    answers = []

    def one():
        try:
            answers.append(s.request("/api/runs?limit=1")[0])
        except OSError as e:
            answers.append(repr(e))
    threads = [threading.Thread(target=one) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    check("64 concurrent requests: every one gets an HTTP answer, none reset",
          answers.count(200) == 64, str(sorted(set(map(str, answers)))))

    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    seen = []
    for path in ("/api/runs?limit=1", "/api/nothing", "/api/runs?limit=1"):
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        seen.append((r.status, r.getheader("Connection"), c.sock is not None))
    c.close()
    check("keep-alive: three requests, errors too, answered on one connection, none closing it",
          seen == [(200, None, True), (404, None, True), (200, None, True)], str(seen))
    p = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    p.sendall(b"GET /api/runs HTTP/1.1\r\nHost: x\r\n\r\nGET /api/nothing HTTP/1.1\r\n"
              b"Host: x\r\nConnection: close\r\n\r\n")
    got = b""
    while True:
        b = p.recv(65536)
        if not b:
            break
        got += b
    p.close()
    check("pipelined requests: each gets its answer, in order",
          re.findall(rb"HTTP/1.1 (\d+)", got) == [b"200", b"404"], got[:200])

    # the idle ones are closed after the connection timeout (10 s), well
    # before the 30 s they used to hold their place
    idle[0].settimeout(60)
    try:
        closed = idle[0].recv(100) == b""
    except OSError:
        closed = True
    waited = time.monotonic() - opened
    check("an idle half-sent request is closed well within 30 s", closed and waited < 25,
          f"{waited:.1f} s")
    for x in idle:
        x.close()


HEAD_KEYS = ("id", "name", "experiment", "workload", "status", "exit_code", "signal", "start_ns",
             "end_ns", "duration_s")


def report_run(db, rid):
    """The run object embedded in strobe report's page."""
    p = strobe("report", "-o", "-", rid, store=db)
    m = re.search(r'<script type="application/json" id="strobe-data">(.*?)</script>', p.stdout, re.S)
    return json.loads(m.group(1))["run"] if p.returncode == 0 and m else {}


def check_run_heads(db, s, ids):
    """Every view of a run starts with the same members, equal: ls --json,
    show --json, /api/runs, /api/runs/ID and the report's data (one writer,
    run_record_json_head). The workload tag counts as the workload in each."""
    ls = {r["id"]: r for r in json.loads(strobe("ls", "--json", store=db).stdout)}
    _, api, _ = s.json("/api/runs")
    api = {r["id"]: r for r in api["runs"]}
    for name, rid in sorted(ids.items()):
        _, one, _ = s.json(f"/api/runs/{rid}")
        views = {"ls": ls.get(rid, {}), "show": show(db, rid), "api list": api.get(rid, {}),
                 "api run": one, "report": report_run(db, rid)}
        heads = {v: [x.get(k, "absent") for k in HEAD_KEYS] for v, x in views.items()}
        want = heads["show"]
        check(f"run {rid[:6]}: ls, show, the API and the report agree on {', '.join(HEAD_KEYS)}",
              all(h == want for h in heads.values()) and want[5] == 0 and want[8] is not None,
              {v: h for v, h in heads.items() if h != want} or want)
    check("run heads: the workload tag is the workload in ls too", ls[ids["b64"]]["workload"] == "w1",
          ls[ids["b64"]]["workload"])


def main():
    db = store_path("serve.db")
    record(db, HOSTILE, 3, ("--experiment", "exp1", "--param", "bs=32", "--tag", "team=vision"))
    record(db, "b64", 2, ("--experiment", "exp1", "--param", "bs=64", "--tag", "workload=w1"))
    p = strobe("run", "--quiet", "--name", "other", "--experiment", "exp2", "--workload", "w2",
               "--", "sh", "-c",
               "printf 'hello from other\\000!\\n'; echo '<b>oops</b>' >&2; sleep 0.5",
               store=db)
    con = sqlite3.connect(db)
    ids = {name: i for i, name in con.execute("SELECT id, name FROM runs")}
    check("three runs recorded", len(ids) == 3, str(ids))
    hid, bid = ids[HOSTILE], ids["b64"]

    s = Server(db, "--rate", "0")
    check("serve prints where it listens", s.port > 0, s.line)

    # ---- runs list
    st, runs, h = s.json("/api/runs")
    check("runs: 200, JSON, nosniff", st == 200 and h["content-type"].startswith(
        "application/json") and h.get("x-content-type-options") == "nosniff", str(h))
    check("runs: total and ids as in the store", runs["total"] == 3 and
          {r["id"] for r in runs["runs"]} == set(ids.values()))
    byid = {r["id"]: r for r in runs["runs"]}
    check("runs: the hostile name comes back as that exact JSON string",
          byid[hid]["name"] == HOSTILE, byid[hid]["name"])
    starts = [r["start_ns"] for r in runs["runs"]]
    check("runs: newest first by default", starts == sorted(starts, reverse=True))
    for rid in (hid, bid):
        sj = show(db, rid)
        r = byid[rid]
        check(f"runs {rid[:6]}: steps as show", r["steps"] == sj["steps"]["count"],
              f"{r['steps']} vs {sj['steps']}")
        near(f"runs {rid[:6]}: step p50 as show", r["step_p50_s"],
             sj["steps"]["p50_ns"] / 1e9, 1e-6)
        near(f"runs {rid[:6]}: duration as show", r["duration_s"], sj["duration_s"], 1e-9)
        cnt, tot = con.execute(
            "SELECT SUM(b.count), SUM(b.sum) FROM blocks b JOIN series s ON s.id=b.series_id"
            " WHERE s.run_id=? AND s.name='cpu.util' AND s.labels=''", (rid,)).fetchone()
        near(f"runs {rid[:6]}: mean CPU from block sums", r["cpu_util_pct"], tot / cnt, 1e-9)
        check(f"runs {rid[:6]}: findings as show", r["findings"] == len(sj["findings"]))
        # no throughput logged: the bs parameter over show's mean step
        near(f"runs {rid[:6]}: samples/s = bs / mean step", r["samples_per_s"],
             int(sj["params"]["bs"]) / (sj["steps"]["mean_ns"] / 1e9), 1e-6)
    check("runs: params and tags", byid[hid]["params"] == {"bs": "32"} and
          byid[hid]["tags"] == {"team": "vision"} and byid[hid]["experiment"] == "exp1")
    check("runs: workload from the workload tag", byid[bid]["workload"] == "w1" and
          byid[hid]["workload"] is None)
    check_run_heads(db, s, ids)
    for args, want in (({"experiment": "exp1"}, {hid, bid}), ({"param": "bs:64"}, {bid}),
                       ({"tag": "team:vision"}, {hid}), ({"workload": "w1"}, {bid}),
                       ({"status": "finished"}, set(ids.values())), ({"tag": "team"}, {hid}),
                       ({"experiment": "none"}, set())):
        st, r, _ = s.json("/api/runs" + q(**args))
        check(f"runs filter {args}", st == 200 and {x["id"] for x in r["runs"]} == want,
              str([x["name"] for x in r["runs"]]))
    st, r, _ = s.json("/api/runs" + q(sort="name"))
    check("runs sort=name", [x["name"] for x in r["runs"]] == sorted(ids))
    st, r, _ = s.json("/api/runs" + q(sort="-steps", limit=1, offset=0))
    check("runs sort=-steps limit=1", r["total"] == 3 and [x["id"] for x in r["runs"]] == [hid])
    # the text columns sort on the server too, over every run (not a page of
    # them); runs without a value last either way
    for key, want in (("workload", [bid, ids["other"], hid]), ("-workload", [ids["other"], bid, hid])):
        st, r, _ = s.json("/api/runs" + q(sort=key))
        check(f"runs sort={key}: by the workload as listed (the tag too), none last",
              st == 200 and [x["id"] for x in r["runs"]] == want, str([x["name"] for x in r.get("runs", [])]))
    st, r, _ = s.json("/api/runs" + q(sort="-experiment"))
    check("runs sort=-experiment", st == 200 and [x["experiment"] for x in r["runs"]] == ["exp2", "exp1", "exp1"],
          str(r)[:200])
    st, r, _ = s.json("/api/runs" + q(sort="status"))
    check("runs sort=status", st == 200 and r["total"] == 3, str(r)[:200])
    st, r, _ = s.json("/api/runs" + q(sort="bogus"))
    check("runs: a bad sort is 400", st == 400 and "error" in r)

    st, r, _ = s.json("/api/runs" + q(workload="w2"))
    check("runs: workload from strobe run --workload", st == 200 and
          [x["id"] for x in r["runs"]] == [ids["other"]] and r["runs"][0]["workload"] == "w2",
          str(r)[:300])

    # ---- the texts kept with a run: the job's output, the environment
    oid = ids["other"]
    st, t, _ = s.json(f"/api/runs/{oid}/texts")
    kinds = {x["kind"]: x for x in t.get("texts", [])} if st == 200 else {}
    check("texts: the list has the job's stdout and stderr and lscpu",
          {"stdout", "stderr", "lscpu"} <= set(kinds), str(t)[:300])
    st, out, _ = s.json(f"/api/runs/{oid}/texts/stdout")
    check("texts: stdout as the job printed it, a NUL byte and what follows it too, with its size",
          st == 200 and out["text"] == "hello from other\0!\n" and out["bytes"] == 19, str(out))
    st, err, _ = s.json(f"/api/runs/{oid}/texts/stderr")
    check("texts: stderr is a JSON string (markup stays text)",
          st == 200 and err["text"] == "<b>oops</b>\n", str(err))
    st, t, _ = s.json(f"/api/runs/{hid}/texts/packages")
    check("texts: a Python run has its package list", st == 200 and "==" in t.get("text", ""))
    st, t, _ = s.json(f"/api/runs/{oid}/texts/nvidia-smi")
    check("texts: one the run lacks is 404", st == 404 and "error" in t, str(t))
    st, t, _ = s.json(f"/api/runs/{oid}/texts/..%2f..%2fetc%2fpasswd")
    check("texts: a hostile kind is 404", st == 404, str(t))

    # ---- one run
    st, r, _ = s.json(f"/api/runs/{hid}")
    check("run: the record as show --json", st == 200 and r == show(db, hid))
    st, r, _ = s.json("/api/runs/ffffffffffff")
    check("run: unknown is 404", st == 404 and "error" in r)
    st, m, _ = s.json(f"/api/runs/{hid}/metrics")
    want = {(n, l): c for n, l, c in con.execute(
        "SELECT s.name, s.labels, COALESCE(SUM(b.count),0) FROM series s LEFT JOIN blocks b"
        " ON b.series_id=s.id WHERE s.run_id=? GROUP BY s.id", (hid,))}
    got = {(x["name"], x["labels"]): x["count"] for x in m["metrics"]}
    check("metrics: every series with its count, as in the store", got == want,
          str(set(got.items()) ^ set(want.items()))[:300])

    pts = raw_points(db, hid, "cpu.util")
    for points in (1, 7, 40, 1000):
        st, d, _ = s.json(f"/api/runs/{hid}/series" + q(name="cpu.util", points=points))
        check(f"series points={points}: 200, at most that many", st == 200 and
              len(d["t"]) <= points and set(d) >= {"t", "min", "max", "mean"})
        check_buckets(f"series cpu.util points={points}", d, pts)
    st, d, _ = s.json(f"/api/runs/{hid}/series" + q(name="cpu.util", points=9, **{"from": 0.5,
                                                                                 "to": 1.7}))
    check("series from/to: the range asked for", d["from_ns"] == d["t0_ns"] + 500000000 and
          d["to_ns"] == d["t0_ns"] + 1700000000)
    check_buckets("series cpu.util from 0.5 to 1.7 s", d, pts)
    mem = raw_points(db, hid, "mem.used_bytes")
    st, d, _ = s.json(f"/api/runs/{hid}/series" + q(name="mem.used_bytes", points=13))
    check_buckets("series mem.used_bytes points=13", d, mem)
    st, d, _ = s.json(f"/api/runs/{hid}/series" + q(name="no.such"))
    check("series: unknown name is 404", st == 404)
    st, d, _ = s.json(f"/api/runs/{hid}/series" + q(name="cpu.util", points=0))
    check("series: points=0 is 400", st == 400)

    sj = show(db, hid)
    st, d, _ = s.json(f"/api/runs/{hid}/steps")
    check("steps: one entry per step", st == 200 and d["steps"] == sj["steps"]["count"] and
          len(d["t"]) == d["steps"] and not d["grouped"], f"{d['steps']} vs {sj['steps']}")
    near("steps: mean duration as show", sum(d["dur_mean_ms"]) / len(d["dur_mean_ms"]),
         sj["steps"]["mean_ns"] / 1e6, 0.01)
    near("steps: data phase about 8 ms", sorted(d["phases_ms"]["data"])[len(d["t"]) // 2], 8.5,
         3)
    st, g, _ = s.json(f"/api/runs/{hid}/steps" + q(points=10))
    check("steps points=10: grouped, every step counted", g["grouped"] and len(g["t"]) <= 10 and
          sum(g["count"]) == d["steps"])
    check("steps points=10: min/max of each group from the steps",
          min(g["dur_min_ms"]) == min(d["dur_min_ms"]) and
          max(g["dur_max_ms"]) == max(d["dur_max_ms"]))
    # a run recorded without --py-sample: flame data with nothing counted
    st, fl, _ = s.json(f"/api/runs/{hid}/flame" + q(role="main", phase="data", steps="1-3"))
    check("flame: a run with no samples has empty flame data",
          st == 200 and fl["run"] == hid and fl["samples"] == 0 and fl["counts"] == [] and
          fl["filters"] == {"role": "main", "phase": "data", "steps": [1, 3], "idle": False}, fl)
    check("flame: its phases and states named", "data" in fl.get("phases", []) and
          fl.get("states", [None])[0] == "running", fl)
    for bad in (q(phase="lunch"), q(steps="3-1"), q(steps="x"), q(idle="2")):
        st, e, _ = s.json(f"/api/runs/{hid}/flame" + bad)
        check(f"flame{bad}: 400 with its reason", st == 400 and e.get("error"), (st, e))
    st, f, _ = s.json(f"/api/runs/{hid}/findings")
    keys = ("rule", "severity", "scope", "start_ns", "end_ns", "evidence")
    check("findings: as show's", [{k: x[k] for k in keys} for x in f["findings"]] ==
          [{k: x[k] for k in keys} for x in sj["findings"]])

    st, c, _ = s.json("/api/compare" + q(runs=f"{hid},b64"))
    check("compare: two runs in order", st == 200 and [x["id"] for x in c["runs"]] == [hid, bid])
    bs = [x for x in c["params"] if x["key"] == "bs"]
    check("compare: bs differs", bs and bs[0]["values"] == ["32", "64"] and bs[0]["differs"])
    steps = [x for x in c["summary"] if x["key"] == "steps"][0]
    check("compare: steps and their change", steps["values"][0] == byid[hid]["steps"] and
          steps["delta_pct"][0] == 0)
    tags = {x["key"]: (x["values"], x["differs"]) for x in c["tags"]}
    check("compare: tags, each key once, null where a run has none",
          tags == {"team": (["vision", None], True), "workload": ([None, "w1"], True)}, tags)
    # the analysis is strobe compare's own judgement of the same runs
    cli = strobe("compare", "--json", hid, bid, store=db)
    check("compare: analysis is exactly `strobe compare --json`",
          cli.returncode == 0 and c.get("analysis") == json.loads(cli.stdout),
          (cli.stderr, c.get("analysis")))
    dd = c.get("analysis", {}).get("diff", {}).get(bid, {})
    check("compare: the diff carries the step change, its judgement and phase marks",
          all(k in dd for k in ("step_mean_pct", "step_significant", "phase_points",
                                "phase_significant", "explained_by")), dd)
    st, c5, _ = s.json("/api/compare" + q(runs=f"{hid},b64", analysis="0"))
    check("compare analysis=0: the rest, the same, without the analysis",
          st == 200 and "analysis" not in c5 and
          {k: v for k, v in c.items() if k != "analysis"} == c5, (st, list(c5)))
    st, c6, _ = s.json("/api/compare" + q(runs=f"{hid},b64", analysis="yes"))
    check("compare analysis=yes is 400", st == 400, (st, c6))
    st, c3, _ = s.json("/api/compare" + q(runs=f"{hid}"))
    check("compare: one run is its own baseline, with no diff",
          st == 200 and c3["analysis"]["baseline"] == hid and c3["analysis"]["diff"] == {},
          c3.get("analysis"))
    st, c4, _ = s.json("/api/compare" + q(runs=f"{hid},{hid[:8]}"))
    check("compare: the same run twice (id and prefix) is 400, as strobe compare refuses it",
          st == 400 and "twice" in c4.get("error", ""), (st, c4))
    st, c, _ = s.json("/api/compare" + q(runs=f"{hid},nope"))
    check("compare: an unknown run is 404", st == 404)

    # ---- assets and paths
    st, h, body = s.request("/")
    check("/: the placeholder dashboard with a strict CSP", st == 200 and b"/api/runs" in
          s.request("/assets/index.js")[2] and "default-src 'self'" in
          h.get("content-security-policy", "") and h["content-type"].startswith("text/html"))
    st, h, _ = s.request("/assets/index.js")
    check("/assets/index.js: JavaScript", st == 200 and "javascript" in h["content-type"])
    st, h, _ = s.request("/assets/uPlot.iife.min.js")
    check("/assets/uPlot.iife.min.js: uPlot is embedded", st == 200)
    for path in ("/assets/../Makefile", "/../Makefile", "/assets/%2e%2e/Makefile",
                 "/assets/%2e%2e%2fMakefile", "/assets/..%2fMakefile", "/assets//etc/passwd",
                 "/assets/%2fetc%2fpasswd", "/etc/passwd", "/assets/", "/assets/index.html/",
                 "/web/dashboard/index.html", "/%2e%2e/%2e%2e/etc/passwd"):
        st, _, body = s.request(path)
        check(f"{path}: 404", st == 404 and b"root:" not in body, f"{st}")
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        st, h, _ = s.request("/api/runs", method=method, body="" if method != "DELETE" else None)
        check(f"{method}: 405 with Allow", st == 405 and "GET" in h.get("allow", ""), f"{st}")
    st, _, _ = s.request("/api/runs", body="x" * 100)
    check("a GET with a body: 413", st == 413, f"{st}")
    st, _, _ = s.request("/api/runs?x=" + "a" * 5000)
    check("a 5000-byte URI: 414", st == 414, f"{st}")
    st, _, _ = s.request("/api/nothing")
    check("unknown endpoint: 404", st == 404)
    check_connections(s)

    # ---- a live run: served while it records, growing as it commits
    live = subprocess.Popen([STROBE, "run", "--store", db, "--quiet", "--interval", "20ms",
                             "--name", "live", "--", PYTHON, "-c", "SECONDS=4\n" + WORKLOAD],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = []
    deadline = time.time() + 3.5
    while time.time() < deadline:
        st, r, _ = s.json("/api/runs" + q(status="running"))
        if st == 200 and r["runs"]:
            st, d, _ = s.json(f"/api/runs/{r['runs'][0]['id']}/series" + q(name="cpu.util"))
            if st == 200:
                seen.append(sum(d["count"]))
        time.sleep(0.4)
    live.wait(timeout=30)
    check("live run: listed as running, its series growing", len(seen) >= 2 and
          seen[-1] > seen[0], str(seen))

    rc, err = s.stop()
    check("SIGTERM stops it cleanly", rc == 0 and "stopping" in err, f"rc {rc}: {err}")

    # ---- safe by default
    p = subprocess.run([STROBE, "serve", "--store", db, "--listen", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=10)
    check("non-loopback without a token refuses to start (exit 2, one line)",
          p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "token" in p.stderr,
          f"{p.returncode}: {p.stderr}")
    p = subprocess.run([STROBE, "serve", "--store", db, "--listen", "[::]:0"],
                       capture_output=True, text=True, timeout=10)
    check("non-loopback IPv6 without a token refuses too", p.returncode == 2, p.stderr)

    t = Server(db, "--token", "s3cret-token", "--rate", "0")
    st, _, _ = t.request("/api/runs")
    check("token: none is 401", st == 401)
    st, _, _ = t.request("/api/runs", headers={"Authorization": "Bearer wrong"})
    check("token: a wrong one is 401", st == 401)
    st, _, _ = t.request("/api/runs", headers={"Authorization": "Bearer s3cret-token"})
    check("token: the right bearer is 200", st == 200)
    for scheme in ("bearer", "BEARER"):
        st, _, _ = t.request("/api/runs", headers={"Authorization": scheme + " s3cret-token"})
        check(f"token: the scheme is case-insensitive ({scheme})", st == 200, f"{st}")
    st, _, _ = t.request("/api/runs?token=s3cret-token")
    check("token: ?token= is 200", st == 200)
    st, _, _ = t.request("/api/runs?token=s3cret-tokeX")
    check("token: a near miss is 401", st == 401)
    st, _, _ = t.request("/")
    check("token: assets need it too", st == 401)
    st, h, _ = t.request("/?token=s3cret-token")
    cookie = h.get("set-cookie", "")
    check("token: the page opened with ?token= sets an HttpOnly, SameSite=Strict cookie",
          st == 200 and cookie.startswith("strobe_token=s3cret-token;") and "HttpOnly" in cookie
          and "SameSite=Strict" in cookie, cookie)
    st, _, _ = t.request("/api/runs", headers={"Cookie": "strobe_token=s3cret-token"})
    check("token: the page's own requests pass with the cookie", st == 200)
    st, _, _ = t.request("/api/runs", headers={"Cookie": "strobe_token=s3cret-tokeX"})
    check("token: a wrong cookie is 401", st == 401)
    p = strobe("serve", "--listen", "127.0.0.1:0", "--token", "a b;c", store=db, timeout=10)
    check("token: one that cannot travel in a cookie is refused in one line",
          p.returncode == 2 and p.stderr.count("\n") == 1 and "--token" in p.stderr, p.stderr)
    rc, _ = t.stop()
    check("token server stops cleanly", rc == 0)

    r = Server(db, "--rate", "5", "--burst", "10")
    codes = [r.request("/api/runs?limit=1")[0] for _ in range(40)]
    check("rate: a burst past the limit gets 429, the first ones 200",
          codes[:10] == [200] * 10 and codes.count(429) >= 20, str(codes))
    time.sleep(0.5)
    check("rate: tokens come back", r.request("/api/runs?limit=1")[0] == 200)
    rc, _ = r.stop()
    check("rate server stops cleanly", rc == 0)
    con.close()


main()
done()
