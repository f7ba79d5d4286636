#!/usr/bin/python3
"""A real Prometheus (Debian's) scrapes a recording job: `strobe run --listen
0.0.0.0:P --token T` (Prometheus sends the token as its credentials) and
`strobe serve` on the same store, each second.

The job burns one core: one process in a busy loop. PromQL reads it as
the cores /proc/PID/stat says it had (± 0.15; one, on an idle machine)
through the gauge (`avg_over_time(strobe_proc_cpu_ratio[20s])`) and the
counter (`rate(strobe_proc_cpu_seconds_total[20s])`), from the recorder
and from serve; the counter's increase between two snapshots is /proc's
to 0.05 cores. Its RSS is checked against /proc of its pid,
its step count against the script's own."""
import os
import subprocess
import threading
import time

from strobetest import (PYTHON, STROBE, Prometheus, check, done, free_port, near, scrape,
                        wait_for, work_dir)

tmp = work_dir("prom")
db = os.path.join(tmp, "prom.db")
TOKEN = "prom-secret"
release = os.path.join(tmp, "release")
steps_file = os.path.join(tmp, "steps")
stop_file = os.path.join(tmp, "stop")
pidfile = os.path.join(tmp, "pid")
WINDOW = 20  # seconds of samples a query reads

# one busy process, a step every 2**16 iterations, until the stop file
# appears; then it writes its step count and holds until the release file
BURN = f"""
import os, strobe, time
with open({pidfile!r}, "w") as f:
    f.write(str(os.getpid()))
n = 0
while not os.path.exists({stop_file!r}):
    for _ in range(1 << 16):
        pass
    strobe.step()
    n += 1
with open({steps_file!r} + ".tmp", "w") as f:
    f.write(str(n))
os.rename({steps_file!r} + ".tmp", {steps_file!r})
while not os.path.exists({release!r}):
    time.sleep(0.05)
"""

rport, sport = free_port(), free_port()
job = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--store", db, "--name", "burn",
                        "--listen", f"0.0.0.0:{rport}", "--token", TOKEN, "--", PYTHON, "-c", BURN],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(p):
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p.returncode


class CpuClock(threading.Thread):
    """The CPU time of one process from /proc/PID/stat (utime + stime),
    every 50 ms, with the wall time it was read at."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.readings, self.stopped = pid, [], threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def run(self):
        while not self.stopped.is_set():
            try:
                with open(f"/proc/{self.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                return
            self.readings.append((time.time(), (int(fields[11]) + int(fields[12])) / self.tick))
            time.sleep(0.05)

    def at(self, t):
        """CPU seconds at wall time t, linear between readings."""
        r = self.readings
        for (t0, c0), (t1, c1) in zip(r, r[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        return None

    def cores(self, a, b):
        ca, cb = self.at(a), self.at(b)
        return None if ca is None or cb is None else (cb - ca) / (b - a)


def value(rows):
    return rows[0][1] if len(rows) == 1 else None


wait_for(lambda: scrape(f"http://127.0.0.1:{rport}", token=TOKEN)[0] == 200 or job.poll() is not None,
         timeout=60, step=0.2)
if job.poll() is not None:
    check("the job serves /metrics on --listen", False, job.stderr.read()[-1000:])
    done()
wait_for(lambda: os.path.exists(pidfile), timeout=60)
with open(pidfile) as f:
    pid = f.read().strip()
clock = CpuClock(pid)
clock.start()
# the store exists now
srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", f"127.0.0.1:{sport}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    with Prometheus(jobs={"run": ([f"127.0.0.1:{rport}"], TOKEN),
                          "serve": ([f"127.0.0.1:{sport}"], None)}) as prom:
        check("Prometheus scrapes the recorder (with its token) and serve: both targets up",
              prom.wait_up(timeout=90), prom.targets())
        # twenty seconds of samples in both: rate() and avg_over_time() see a full window
        full = prom.wait_query(f'count_over_time(strobe_proc_cpu_ratio{{pid=""}}[{WINDOW}s]) >= {WINDOW - 1}',
                               lambda r: len(r) == 2, timeout=90)
        check(f"{WINDOW} seconds of scrapes from both", len(full) == 2, full)
        at = time.time()
        # what /proc says the busy loop had over that window: the one core,
        # less what the other work on this machine took from it; strobe's
        # samples reach Prometheus about a second late (snapshot and scrape)
        busy = clock.cores(at - WINDOW - 1, at - 1)
        print(f"# /proc: the busy loop ran {busy:.3f} cores", flush=True)
        ids = {}
        for src in ("run", "serve"):
            info = prom.query(f'strobe_run_info{{job="{src}"}}')
            check(f"{src}: strobe_run_info of the burn run", len(info) == 1 and info[0][1] == 1 and
                  info[0][0].get("run_name") == "burn", info)
            ids[src] = info[0][0].get("run_id") if info else None
            gauge = value(prom.query(f'avg_over_time(strobe_proc_cpu_ratio{{job="{src}",pid=""}}[{WINDOW}s])',
                                     at=at))
            near(f"{src}: avg_over_time of the tree's CPU gauge reads the busy loop's cores (/proc)",
                 gauge, busy, 0.15)
            rate = value(prom.query(f'rate(strobe_proc_cpu_seconds_total{{job="{src}",pid=""}}[{WINDOW}s])',
                                    at=at))
            near(f"{src}: rate() of the CPU counter reads the busy loop's cores (/proc)", rate, busy, 0.15)
            # the counter between two snapshots, at the times they were taken
            cpu = prom.range(f'strobe_proc_cpu_seconds_total{{job="{src}",pid=""}}[{WINDOW}s]', at=at)
            ts = prom.range(f'strobe_snapshot_timestamp_seconds{{job="{src}"}}[{WINDOW}s]', at=at)
            pairs = sorted({(t, v) for t, v in zip(ts, cpu)})
            if len(pairs) >= 2 and len(ts) == len(cpu):
                (t0, v0), (t1, v1) = pairs[0], pairs[-1]
                near(f"{src}: the CPU counter's increase between two snapshots is /proc's (± 0.05 cores)",
                     (v1 - v0) / (t1 - t0), clock.cores(t0, t1), 0.05)
            else:
                check(f"{src}: the CPU counter and snapshot times over the window", False, (ts, cpu))
        check("serve shows the same run as the recorder", ids["run"] and ids["run"] == ids["serve"], ids)

        clock.stopped.set()
        rss = value(prom.query(f'strobe_proc_rss_bytes{{job="run",pid="{pid}"}}'))
        with open(f"/proc/{pid}/status") as f:
            vmrss = next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmRSS:"))
        near("the busy process' RSS is /proc's VmRSS (± 10 %)", rss, vmrss, 0.1 * vmrss)

        # the script stops stepping and says its count; Prometheus comes to the same
        open(stop_file, "w").close()
        wait_for(lambda: os.path.exists(steps_file) or job.poll() is not None, timeout=60)
        with open(steps_file) as f:
            logged = int(f.read())
        for src in ("run", "serve"):
            last = prom.wait_query(f'strobe_last_step{{job="{src}"}}',
                                   lambda r: len(r) == 1 and r[0][1] == logged, timeout=30)
            check(f"{src}: strobe_last_step comes to the script's own count", value(last) == logged,
                  (last, logged))
        open(release, "w").close()
        wait_for(lambda: job.poll() is not None, timeout=60)
        check("the job ends with status 0", job.returncode == 0, job.stderr.read()[-1000:])
        down = prom.wait_query('up{job="run"} == 0', lambda r: len(r) == 1, timeout=30)
        check("the recorder's target goes down when the run ends", len(down) == 1, down)
    check("Prometheus stops cleanly", prom.rc == 0, prom.rc)
finally:
    if job.poll() is None:
        open(release, "w").close()
        stop(job)
    stop(srv)
done()
