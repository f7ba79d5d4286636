#!/usr/bin/env python3
"""What a scrape of /metrics costs (issue 28): a job of 10 processes on 8
GPUs (bench/metrics_job.py, the test NVML), recorded by `strobe run
--listen`, scraped N times in each format. The same for `strobe serve`'s
/metrics over the same store, then over PostgreSQL (a second recording, on
a throwaway server; skipped when PostgreSQL is not installed). The peer is
Debian's prometheus-node-exporter, scraped the same way in the same session.

    bench/metrics_cost.py --strobe build/strobe [--scrapes 200] [--rounds 10]
                          [--no-pg] [--quick] [--json FILE]

Per target and format:
- latency: one GET on a fresh connection, no compression asked, to the
  last byte of the body; median and p90 of every scrape (the scrapes come
  from 32 loopback addresses in turn: --listen allows 20 a second to one);
- CPU per scrape: the server process's CPU clock (clock_gettime on its pid:
  every thread, the exited ones too, in ns; /proc/PID/stat's utime+stime
  is the same sum in 10 ms ticks, kept in the JSON as a check) over a
  round of back-to-back scrapes, less its CPU over an idle window of the
  same length right after, divided by the round's scrapes; median of
  rounds. The idle window takes out what the recorder does anyway
  (sampling, its snapshot a second, its commits);
- bytes of the body and samples in it (lines not starting with '#').

The recorder runs at its defaults (100 ms sampling, GPU at 100 ms). Prints a
markdown section; raw figures to --json. Exits 77 when prometheus-node-
exporter is not installed (scripts/packages.txt lists it).
"""
import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PGSERVER = os.path.join(ROOT, "tests", "tools", "pgserver")
PEER = "prometheus-node-exporter"
OPENMETRICS = "application/openmetrics-text; version=1.0.0"
GPUS, PROCS = 8, 10
SOURCES = 32
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ns(pid):
    """The whole process's CPU time, every thread's, the exited ones too."""
    return int(time.clock_gettime(((~pid) << 3) | 2) * 1e9)


def stat_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, fields 14 and 15


def scrape(port, openmetrics):
    """One scrape as Prometheus makes it, less compression: ms, body, content type.
    `strobe run --listen` allows a client 20 requests a second (a burst of
    40): the scrapes come from SOURCES loopback addresses in turn, each
    well inside its burst, so none is refused and every server is asked
    alike."""
    headers = {"Accept": OPENMETRICS if openmetrics else "text/plain;version=0.0.4"}
    scrape.n = getattr(scrape, "n", 0) + 1
    source = (f"127.0.1.{1 + scrape.n % SOURCES}", 0)
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=source)
    c.request("GET", "/metrics", headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    ms = (time.perf_counter() - t0) * 1e3
    if r.status != 200:
        raise SystemExit(f"metrics_cost: port {port}: /metrics: HTTP {r.status}: {body[:200]!r}")
    return ms, body, r.getheader("Content-Type", "")


def samples_in(body):
    return sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))


def labels_seen(body, key):
    return set(re.findall(rb'[{,]' + key.encode() + rb'="([^"]*)"', body))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


class Tally:
    """One target's scrapes in one format."""

    def __init__(self, name, pid, port, openmetrics):
        self.name, self.pid, self.port, self.openmetrics = name, pid, port, openmetrics
        self.lat, self.cpu_per_scrape, self.body, self.ctype = [], [], b"", ""
        self.busy_ns = self.idle_ns = 0
        self.cpu0, self.ticks0 = cpu_ns(pid), stat_ticks(pid)

    def round(self, per):
        """per back-to-back scrapes, then an idle window as long."""
        c0, w0 = cpu_ns(self.pid), time.perf_counter()
        for _ in range(per):
            ms, self.body, self.ctype = scrape(self.port, self.openmetrics)
            self.lat.append(ms)
        c1, w1 = cpu_ns(self.pid), time.perf_counter()
        time.sleep(w1 - w0)
        c2 = cpu_ns(self.pid)
        self.busy_ns += c1 - c0
        self.idle_ns += c2 - c1
        self.cpu_per_scrape.append(((c1 - c0) - (c2 - c1)) / per)

    def result(self, rounds):
        n, body = len(self.lat), self.body
        return {"target": self.name, "openmetrics": self.openmetrics,
                "content_type": self.ctype, "scrapes": n, "rounds": rounds,
                "lat_p50_ms": statistics.median(self.lat), "lat_p90_ms": pct(self.lat, 0.9),
                "cpu_us": statistics.median(self.cpu_per_scrape) / 1e3,
                "cpu_us_rounds": [x / 1e3 for x in self.cpu_per_scrape],
                "cpu_us_pooled": (self.busy_ns - self.idle_ns) / n / 1e3,
                "cpu_clock_total_ms": (cpu_ns(self.pid) - self.cpu0) / 1e6,
                "stat_ticks_total_ms": (stat_ticks(self.pid) - self.ticks0) * 1e3 / TICK,
                "bytes": len(body), "samples": samples_in(body),
                "pids": len(labels_seen(body, "pid")), "gpus": len(labels_seen(body, "gpu"))}


def side_by_side(target, peer, a):
    """target and the peer in turns, round by round, in each format: the
    machine's load moves both alike. Returns their rows."""
    rows = []
    for om in (False, True):
        t = Tally(*target, om)
        p = Tally("node-exporter", *peer, om)
        per = max(1, a.scrapes // a.rounds)
        for i in range(a.rounds):
            for x in ((t, p) if i % 2 == 0 else (p, t)):
                x.round(per)
        r, q = t.result(a.rounds), p.result(a.rounds)
        q["beside"] = target[0]
        rows += [r, q]
    return rows


def wait_ready(port, what, need_job, proc, timeout=90):
    """Until /metrics answers, with the job's 10 pids and 8 GPUs when need_job."""
    deadline, seen = time.monotonic() + timeout, "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"metrics_cost: {what} exited ({proc.returncode}) before it served")
        try:
            _, body, _ = scrape(port, False)
            pids, gpus = labels_seen(body, "pid"), labels_seen(body, "gpu")
            seen = f"{len(pids)} pids, {len(gpus)} GPUs, {samples_in(body)} samples"
            if not need_job or (len(pids) >= PROCS and len(gpus) >= GPUS):
                return
        except (OSError, http.client.HTTPException, SystemExit) as e:
            seen = str(e)
        time.sleep(0.5)
    raise SystemExit(f"metrics_cost: {what} not ready after {timeout} s: {seen}")


def scenario(d):
    """8 scripted GPUs; each lists the rank that writes its processes file."""
    lines = ["sample_period 0.02"]
    for i in range(GPUS):
        lines.append(f'device {i} name "NVIDIA H100 80GB HBM3" memory {80 << 30}')
        for f, v in (("util.gpu", 60 + i), ("util.memory", 30), ("mem.used", (i + 1) << 30),
                     ("power", 300000 + i * 1000), ("temp", 55 + i), ("clock.sm", 1980),
                     ("clock.mem", 2619), ("pcie.tx", 1200), ("pcie.rx", 85000)):
            lines.append(f"at 0 {i} {f} {v}")
        lines.append(f"processes_file {i} {d}/gpu{i}.procs")
    path = os.path.join(d, "gpu.scenario")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class Recording:
    """strobe run --listen over the job, into store."""

    def __init__(self, strobe, store, d):
        self.d = d
        os.makedirs(d, exist_ok=True)
        build = os.path.dirname(os.path.abspath(strobe))
        env = dict(os.environ, STROBE_NVML_LIB=os.path.join(build, "tests", "libnvidia-ml-fake.so"),
                   STROBE_FAKE_NVML=scenario(d))
        self.port = free_port()
        self.proc = subprocess.Popen(
            [strobe, "run", "--quiet", "--no-report", "--store", store, "--listen",
             f"127.0.0.1:{self.port}", "--name", "metrics-cost", "--", sys.executable,
             os.path.join(HERE, "metrics_job.py"), "--dir", d], env=env,
            stdout=subprocess.DEVNULL)

    def stop(self):
        open(os.path.join(self.d, "stop"), "w").close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Server:
    """A server process on a free port of 127.0.0.1."""

    def __init__(self, argv, port=None):
        self.port = port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        if port is None:  # strobe serve says where: "serving http://127.0.0.1:PORT/ ..."
            line = self.proc.stderr.readline()
            m = re.search(r"127\.0\.0\.1:(\d+)/", line)
            if not m:
                raise SystemExit(f"metrics_cost: {argv[0]}: no address in {line!r}")
            self.port = int(m.group(1))
        # a server that logs as it serves (node exporter, a collector's
        # error every scrape) would block once the pipe is full
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def serve(strobe, store):
    return Server([strobe, "serve", "--store", store, "--listen", "127.0.0.1:0", "--rate", "0"])


def start_peer():
    port = free_port()
    s = Server([PEER, f"--web.listen-address=127.0.0.1:{port}"], port)
    wait_ready(port, PEER, False, s.proc)
    return s


def scrape_store(rows, peer, a, store, d, kind, listen):
    """Record the job into store; scrape its recorder (when listen) and
    strobe serve over store, each beside the peer."""
    rec = Recording(a.strobe, store, d)
    try:
        wait_ready(rec.port, f"strobe run --listen ({kind})", True, rec.proc)
        if listen:
            rows += side_by_side(("run --listen", rec.proc.pid, rec.port), peer, a)
        srv = serve(a.strobe, store)
        try:
            wait_ready(srv.port, f"strobe serve ({kind})", True, srv.proc)
            rows += side_by_side((f"serve, {kind}", srv.proc.pid, srv.port), peer, a)
        finally:
            srv.stop()
    finally:
        rec.stop()


def strobe_pg(rows, peer, a, tmp):
    """A second recording of the job, into a throwaway PostgreSQL; None when run."""
    if a.no_pg:
        return "not run (--no-pg)"
    d = os.path.join(tmp, "pg")
    p = subprocess.run([PGSERVER, "start", d, "--watch", str(os.getpid())], capture_output=True,
                       text=True)
    if p.returncode != 0:
        return f"not run: pgserver: {(p.stderr.strip().splitlines() or ['failed'])[-1]}"
    uri = p.stdout.strip().splitlines()[-1]
    try:
        scrape_store(rows, peer, a, uri, os.path.join(tmp, "pgjob"), "PostgreSQL", False)
    finally:
        subprocess.run([PGSERVER, "stop", d], capture_output=True)
    return None


def fmt_name(r):
    """The format served; the one asked for too when the server answered another."""
    served = r["content_type"].startswith("application/openmetrics-text")
    name = "OpenMetrics" if served else "text 0.0.4"
    return name if served == r["openmetrics"] else f"{name} (asked OpenMetrics)"


def per_sample_ns(r):
    return r["cpu_us"] * 1e3 / max(r["samples"], 1)


def report(rows, a, pg_note):
    print(f"{a.scrapes} scrapes a target and format, in {a.rounds} rounds, each followed by an "
          "idle window as long, in turns with the peer's rounds. The job: "
          f"{PROCS} processes on {GPUS} test-NVML GPUs (bench/metrics_job.py), the recorder "
          "at its defaults.\n")
    print("| target | format | latency p50 | p90 | CPU per scrape | bytes | samples | "
          "CPU per sample | bytes per sample |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        name = r["target"] + (f" (beside {r['beside']})" if "beside" in r else "")
        print(f"| {name} | {fmt_name(r)} | {r['lat_p50_ms']:.2f} ms | "
              f"{r['lat_p90_ms']:.2f} ms | {r['cpu_us']:.0f} µs | {r['bytes']:,} | "
              f"{r['samples']:,} | {per_sample_ns(r):.0f} ns | "
              f"{r['bytes'] / max(r['samples'], 1):.0f} |")
    if pg_note:
        print(f"\n`strobe serve` over PostgreSQL: {pg_note}.")
    print("\nstrobe ÷ prometheus-node-exporter, the peer's rounds taken in turns with strobe's "
          "(below 1: strobe costs less):\n")
    print("| target | format | CPU per scrape | latency p50 | CPU per sample |")
    print("|---|---|---:|---:|---:|")
    for r, p in zip(rows[0::2], rows[1::2]):
        print(f"| {r['target']} | {fmt_name(r)} | {r['cpu_us'] / p['cpu_us']:.2f}× | "
              f"{r['lat_p50_ms'] / p['lat_p50_ms']:.2f}× | "
              f"{per_sample_ns(r) / per_sample_ns(p):.2f}× |")
    live = [r for r in rows if r["target"] == "run --listen"]
    if live:
        worst = max(r["cpu_us"] for r in live)
        print(f"\nScraped once a second, `--listen` costs the recorder {worst / 1e4:.3f} % of "
              f"one core (the dearer format). Each page held {live[0]['pids']} pids and "
              f"{live[0]['gpus']} GPUs.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--quick", action="store_true", help="20 scrapes in 2 rounds: a smoke test")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.scrapes, a.rounds = 20, 2
    if not shutil.which(PEER):
        print(f"metrics_cost: {PEER} is not installed (scripts/packages.txt)", file=sys.stderr)
        return 77
    rows = []
    with tempfile.TemporaryDirectory(prefix="strobe-metrics-cost-") as tmp:
        srv = start_peer()
        try:
            peer = (srv.proc.pid, srv.port)
            scrape_store(rows, peer, a, os.path.join(tmp, "live.db"),
                         os.path.join(tmp, "sqlite"), "SQLite", True)
            pg_note = strobe_pg(rows, peer, a, tmp)
        finally:
            srv.stop()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "pg": pg_note}, f, indent=1)
    report(rows, a, pg_note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
