#!/usr/bin/python3
"""Live metrics (docs/openmetrics.md) against independent readings.

A job of two ranks, each a process of its own, steps with known costs:
rank 0 burns 40 ms of CPU in "forward" and sleeps 60 ms in "data", rank 1
burns 80 ms and sleeps 60 ms, and each logs every step's time and its loss.
While it records, /metrics of `strobe run --listen` is read and checked
against the job's own log and against /proc: step time per rank, step
counts, forward seconds, the CPU seconds and RSS of each process, its
labels, and InputBound's finding. Then strobe serve's /metrics over the
same store, a stale and a garbled snapshot, the token, and the refusals.
"""
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strobetest import (PYTHON, STROBE, TMP, check, done, example_env, median, near, store_path,
                        strobe, wait_for)

JOB = r'''
import os, subprocess, sys, time
if len(sys.argv) == 1:
    kids = [subprocess.Popen([sys.executable, __file__, str(r)]) for r in (0, 1)]
    sys.exit(max(k.wait() for k in kids))
import strobe
rank = int(sys.argv[1])
strobe.log("strobe.rank", rank)
burn = (0.040, 0.080)[rank]
log = open(os.path.join(os.environ["OUT"], f"rank{rank}.log"), "w", buffering=1)
log.write(f"pid {os.getpid()}\n")
end = time.time() + float(os.environ["SECONDS_"])
prev = None
step = 0
while time.time() < end:
    strobe.step()
    now = time.monotonic()
    if prev is not None:
        log.write(f"step {step} {now - prev:.6f} {time.time():.6f}\n")
    prev = now
    step += 1
    w0 = time.monotonic()
    with strobe.span("forward"):
        t0 = time.thread_time()
        while time.thread_time() - t0 < burn:
            pass
    log.write(f"forward {time.monotonic() - w0:.6f} {time.time():.6f}\n")
    with strobe.span("data"):
        time.sleep(0.060)
    strobe.log("loss", step)
'''

OM = "application/openmetrics-text; version=1.0.0"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, accept=None, token=None):
    req = urllib.request.Request(url)
    if accept:
        req.add_header("Accept", accept)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()
    except OSError as e:
        return 0, None, str(e)


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """[(name, {labels}, value)] of an exposition's samples."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, line
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                  for k, v in LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def pick(samples, family, **want):
    return [(l, v) for n, l, v in samples if n == family and all(l.get(k) == w for k, w in want.items())]


def one(samples, family, **want):
    got = pick(samples, family, **want)
    return got[0][1] if len(got) == 1 else None


def promtool(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    return p.returncode == 0, p.stdout + p.stderr


def rank_log(out, rank):
    steps, forward, pid = [], [], None
    with open(os.path.join(out, f"rank{rank}.log")) as f:
        for line in f:
            w = line.split()
            if w[0] == "pid":
                pid = int(w[1])
            elif w[0] == "step" and len(w) == 4:
                steps.append((float(w[2]), float(w[3])))
            elif w[0] == "forward" and len(w) == 3:
                forward.append((float(w[1]), float(w[2])))
    return pid, steps, forward


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def record(db, out, seconds, *opts):
    env = example_env()
    env.update(OUT=out, SECONDS_=str(seconds))
    job = os.path.join(out, "job.py")
    with open(job, "w") as f:
        f.write(JOB)
    return subprocess.Popen([STROBE, "run", f"--store={db}", "--no-report", "--name", 'live "one"',
                             "--rules", "InputBound", "--rule-interval", "1s", *opts, "--",
                             PYTHON, job], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def check_live(url, out):
    """The checks while the job runs: each number against the job's own."""
    ok = wait_for(lambda: get(url)[0] == 200 and "strobe_step_duration_seconds" in get(url)[2]
                  and "strobe_finding_windows_total" in get(url)[2], timeout=20, step=0.2)
    check("live: /metrics answers with steps and a finding", ok)
    # the job's processes, as /proc sees them, right at the scrape
    logs = {r: rank_log(out, r) for r in (0, 1)}
    cpu = {r: proc_cpu_s(logs[r][0]) for r in (0, 1)}
    rss = {r: proc_rss(logs[r][0]) for r in (0, 1)}
    status, ctype, text = get(url)
    after = {r: proc_cpu_s(logs[r][0]) for r in (0, 1)}
    check("live: text format by default", status == 200 and ctype.startswith("text/plain; version=0.0.4"),
          ctype)
    good, why = promtool(text)
    check("live: promtool check metrics passes", good, why)
    s = parse(text)
    snap = one(s, "strobe_snapshot_timestamp_seconds")
    check("live: run labels", one(s, "strobe_run_info", run_name='live "one"', experiment="") == 1,
          [l for n, l, v in s if n == "strobe_run_info"])
    for r in (0, 1):
        pid, steps, forward = rank_log(out, r)
        rk = str(r)
        # steps that had ended when the snapshot was taken (the drain lags up to 0.1 s)
        ended = [d for d, t in steps if t <= snap]
        count = one(s, "strobe_step_duration_seconds_count", rank=rk)
        check(f"live: rank {r} step count is the job's", count is not None and
              len(ended) - 3 <= count <= len(ended) + 1, f"{count} against {len(ended)}")
        p50 = one(s, "strobe_step_duration_seconds", rank=rk, quantile="0.5")
        near(f"live: rank {r} step p50 is the job's", p50, median([d for d in ended[-256:]]),
             0.1 * median(ended), "s")
        fwd = one(s, "strobe_phase_seconds_total", rank=rk, phase="forward")
        # spans reach the recorder within a drain (0.1 s) of their end
        lo = sum(d for d, t in forward if t <= snap - 0.25)
        hi = sum(d for d, t in forward if t <= snap)
        check(f"live: rank {r} forward seconds are the job's own", fwd is not None and
              lo - 0.001 <= fwd <= hi + 0.001, f"{fwd} against {lo}..{hi}")
        rate = one(s, "strobe_steps_per_second", rank=rk)
        want = 1 / median(ended)
        near(f"live: rank {r} steps per second", rate, want, 0.2 * want)
        labels = pick(s, "strobe_proc_cpu_seconds_total", pid=str(pid))
        check(f"live: rank {r}'s process has role and rank", len(labels) == 1 and
              labels[0][0].get("role") == "rank" and labels[0][0].get("rank") == rk and
              labels[0][0].get("comm", "").startswith("python"), labels)
        # CPU seconds: the integral lags /proc by up to a frame and the snapshot's age
        got = labels[0][1] if labels else None
        check(f"live: rank {r} CPU seconds within /proc's reading", got is not None and
              cpu[r] - 1.3 <= got <= after[r] + 0.05, f"{got} against {cpu[r]}..{after[r]}")
        near(f"live: rank {r} RSS is /proc's", one(s, "strobe_proc_rss_bytes", pid=str(pid)),
             rss[r], 0.1 * rss[r], "bytes")
        loss = one(s, "strobe_app", name="loss", rank=rk)
        check(f"live: rank {r} loss is the job's", loss is not None and
              len(ended) - 2 <= loss <= len(ended) + 2, f"{loss} against {len(ended)} steps")
    main = [l for l, v in pick(s, "strobe_proc_cpu_ratio") if l.get("role") == "main"]
    check("live: the job's main process is role main", len(main) == 1, main)
    tree = [v for l, v in pick(s, "strobe_proc_cpu_ratio") if "pid" not in l]
    check("live: the tree's CPU is one sample without pid", len(tree) == 1)
    f = pick(s, "strobe_finding_windows_total", rule="InputBound")
    check("live: InputBound is a metric, with severity and scope",
          len(f) >= 1 and f[0][0].get("severity") == "high" and f[0][1] >= 1, f)
    status, ctype, om = get(url, accept=OM)
    check("live: OpenMetrics when asked", status == 200 and ctype.startswith(
        "application/openmetrics-text") and om.endswith("# EOF\n") and
        "# UNIT strobe_proc_cpu_seconds seconds" in om, ctype)
    return s


def main():
    out = os.path.join(TMP, "live")
    os.makedirs(out, exist_ok=True)
    db = store_path("live.db")
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    p = record(db, out, 9, "--listen", f"127.0.0.1:{port}")
    try:
        check_live(url, out)
        # strobe serve over the same store reads the stored snapshot
        sport = free_port()
        serve = subprocess.Popen([STROBE, "serve", f"--store={db}", "--listen",
                                  f"127.0.0.1:{sport}"], stderr=subprocess.DEVNULL)
        try:
            surl = f"http://127.0.0.1:{sport}/metrics"
            wait_for(lambda: get(surl)[0] == 200, timeout=10)
            st, _, text = get(surl)
            good, why = promtool(text)
            check("serve: /metrics of the running run passes promtool", st == 200 and good, why)
            s = parse(text)
            check("serve: it has the run's step time per rank",
                  len(pick(s, "strobe_step_duration_seconds_count")) == 2, text[:500])
            check("serve: an unknown path is 404 there too", get(surl + "x")[0] == 404)
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(10)
        check("--listen: only /metrics", get(url.replace("/metrics", "/api/runs"))[0] == 404)
    finally:
        _, err = p.communicate(timeout=60)
    check("the job ends well", p.returncode == 0, err)
    check("the address is said once", err.count(f"metrics at http://127.0.0.1:{port}/metrics") == 1, err)
    r = strobe("logs", "--kind", "metrics", "last", store=db)
    check("the last snapshot is kept with the run",
          r.returncode == 0 and r.stdout.startswith("strobe-snapshot 1 "), r.stderr)
    check_serve_edges(db)
    check_refusals()
    check_token(out)
    done()


def check_serve_edges(db):
    """A run marked running whose snapshot is old, or garbled, is left out."""
    con = sqlite3.connect(db)
    run_id, text = con.execute("SELECT run_id, text FROM run_texts WHERE kind='metrics'").fetchone()
    con.execute("UPDATE runs SET status='running', end_ns=NULL")
    # a copy of the run that is fresh, one that is stale, one that is garbled
    fresh = re.sub(r"^strobe-snapshot 1 \d+", f"strobe-snapshot 1 {time.time_ns()}", text)
    stale = re.sub(r"^strobe-snapshot 1 \d+", f"strobe-snapshot 1 {time.time_ns() - 120 * 10**9}", text)
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    row = con.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
    for rid, t in (("f" * 16, fresh.replace(run_id, "f" * 16)), ("e" * 16, stale.replace(run_id, "e" * 16)),
                   ("d" * 16, "strobe-snapshot 1 5\nF\tstrobe_x\tgauge\t-\th\nS\t-\tx=\"\t1\n")):
        vals = [rid if c == "id" else v for c, v in zip(cols, row)]
        con.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(vals))})", vals)
        con.execute("INSERT INTO run_texts(run_id, kind, bytes, text) VALUES(?, 'metrics', ?, ?)",
                    (rid, len(t), t))
    con.execute("UPDATE run_texts SET text=? WHERE run_id=? AND kind='metrics'", (stale, run_id))
    con.commit()
    con.close()
    port = free_port()
    serve = subprocess.Popen([STROBE, "serve", f"--store={db}", "--listen", f"127.0.0.1:{port}"],
                             stderr=subprocess.DEVNULL)
    try:
        u = f"http://127.0.0.1:{port}/metrics"
        wait_for(lambda: get(u)[0] == 200, timeout=10)
        st, _, text = get(u)
        ids = {l["run_id"] for n, l, v in parse(text) if "run_id" in l}
        check("serve: a fresh snapshot is in, a stale and a garbled one are not",
              st == 200 and ids == {"f" * 16}, ids)
        good, why = promtool(text)
        check("serve: promtool passes with them", good, why)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(10)


def check_refusals():
    db = store_path("live-refused.db")
    r = strobe("run", "--listen", "0.0.0.0:0", "--", "true", store=db)
    check("--listen off loopback without --token: exit 125, one line",
          r.returncode == 125 and r.stderr.strip().count("\n") == 0 and "--token" in r.stderr, r.stderr)
    r = strobe("run", "--listen", "nonsense", "--", "true", store=db)
    check("--listen without a port: exit 125", r.returncode == 125 and "HOST:PORT" in r.stderr, r.stderr)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        r = strobe("run", "--listen", f"127.0.0.1:{busy.getsockname()[1]}", "--", "true", store=db)
    check("--listen on a busy port: exit 125, one line",
          r.returncode == 125 and r.stderr.strip().count("\n") == 0 and "cannot listen" in r.stderr,
          r.stderr)
    r = strobe("ls", "--json", store=db)
    check("no run was stored for a refused --listen", r.returncode != 0 or r.stdout.strip() in ("", "[]"),
          r.stdout)
    r = strobe("run", "--listen", "127.0.0.1:0", "--token", "a b", "--", "true", store=db)
    check("a token with a space: exit 125", r.returncode == 125 and "--token" in r.stderr, r.stderr)


def check_token(out):
    db = store_path("live-token.db")
    port = free_port()
    p = record(db, out, 4, "--listen", f"0.0.0.0:{port}", "--token", "s3cret")
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        wait_for(lambda: get(url, token="s3cret")[0] == 200, timeout=15)
        check("token: a scrape without it is 401", get(url)[0] == 401)
        check("token: a wrong one is 401", get(url, token="s3creT")[0] == 401)
        st, _, text = get(url, token="s3cret")
        check("token: with it, 200 and metrics", st == 200 and "strobe_run_info" in text)
    finally:
        p.communicate(timeout=60)


main()
