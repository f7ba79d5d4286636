#!/usr/bin/python3
"""Truth checks for CPU: a child that burns one core for 3 s must read
proc.cpu ~ 100 % and cpu.util ~ 50 % on a 2-core machine, its mean the rate
the child measures itself (getrusage over its loop), and the CPU time
strobe integrates must match the child's own getrusage() reading; then the
same at 1 ms, below the resolution of /proc/stat's ticks.

Tolerances: /proc accounts CPU in 10 ms ticks, so one 100 ms sample of a
busy process reads 90-110 %; the median over the busy window is exact to a
tick. cpu.util also carries whatever else the host runs, so it is checked
against psutil.cpu_percent() read in a loop beside it: each of its readings
covers the time since the one before, as strobe's points do, so the two
time-weighted means over one span count the same ticks however the load
varies (within 5 points at 100 ms, 8 at 1 ms)."""
import os
import subprocess
import threading
import time

import psutil

from strobetest import *

db = store_path()
ncpu = os.cpu_count()
report = os.path.join(TMP, "rusage.txt")
burn = f"""
import resource, time
def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
c0, w0 = cpu(), time.monotonic()
end = w0 + 3.0
x = 0
while time.monotonic() < end:
    x += 1
c1, w1 = cpu(), time.monotonic()
open({report!r}, "w").write(f"{{c1}} {{100 * (c1 - c0) / (w1 - w0)}}")
"""

host = []
def watch_host(stop):
    psutil.cpu_percent(None)
    while not stop.is_set():
        time.sleep(0.5)
        host.append((time.time(), psutil.cpu_percent(None)))

stop = threading.Event()
t = threading.Thread(target=watch_host, args=(stop,))
t.start()
p = run(db, PYTHON, "-c", burn)
stop.set()
t.join()
check("burn job finished", p.returncode == 0, p.stderr)

cpu = points(db, "proc.cpu")["proc.cpu"]
util = points(db, "cpu.util")["cpu.util"]
t0 = cpu[0][0]
busy = [v for (ts, v) in cpu if t0 + 0.5 <= ts <= t0 + 2.8]
near("proc.cpu median while burning ~ 100 %", median(busy), 100.0, 10.0)
# the child's own rate over its loop (getrusage / wall): on a host busy with
# other work the burner gets less than a core, and strobe must read that
used, rate = (float(x) for x in open(report).read().split())
near("proc.cpu mean while burning = the child's getrusage rate", sum(busy) / len(busy), rate, 5.0)

strobe_s = integral(cpu) / 100.0
near("CPU seconds: strobe's integral vs the child's getrusage", strobe_s, used, 0.05 * used + 0.05, "s")

busy_util = [v for (ts, v) in util if t0 + 0.5 <= ts <= t0 + 2.8]
host_busy = [v for (ts, v) in host if t0 + 1.0 <= ts <= t0 + 2.8]
want = 100.0 / ncpu
# each psutil reading covers the time since the one before, as strobe's
# points do: their time-weighted means over one span read the same ticks
span = [ts for (ts, _) in host if t0 + 0.5 <= ts <= t0 + 2.8]
a, b = (span[0], span[-1]) if len(span) >= 2 else (t0 + 0.5, t0 + 2.8)
host_mean = mean_over(host, a, b)
near("cpu.util agrees with psutil.cpu_percent over the same span (time-weighted means)",
     mean_over(util, a, b), host_mean, 5.0)
if host_busy and abs(median(host_busy) - want) <= 10:
    near(f"cpu.util ~ {want:.0f} % (one of {ncpu} cores busy)", median(busy_util), want, 10.0)
else:
    skip("cpu.util ~ one core", f"the host is busy with other work ({host_busy})")

# per-core: the busy core reads ~100 %, and the mean over cores is cpu.util
cores = points(db, "cpu.util{core=*}")
check("one series per core", len(cores) == ncpu, sorted(cores))
# while one core's worth of work runs, the per-core readings add up to ~100 %
# plus whatever else the host does: ncpu times psutil's reading, both
# time-weighted over the span above (a median of psutil's readings missed
# by 22 in a sanitizer pass beside other work)
n = min(len(c) for c in cores.values())
summed = [(cores[next(iter(cores))][i][0], sum(cores[k][i][1] for k in cores)) for i in range(n)]
near("per-core util sums to one busy core plus the host's other work (ncpu x psutil's, same span)",
     mean_over(summed, a, b), ncpu * host_mean if host_mean is not None else None, 10.0)

# the same at 1 ms, shorter than the 10 ms ticks /proc/stat counts in: most
# frames see no tick, and reading those as 0 % once put this host at 10 %.
# The cpu series get a point per tick's worth of frames instead; their mean
# must still be psutil's, and proc.cpu's mean the child's own rate.
fine = store_path("fine.db")
host.clear()
stop = threading.Event()
t = threading.Thread(target=watch_host, args=(stop,))
t.start()
p = run(fine, PYTHON, "-c", burn, opts=("--interval", "1ms"))
stop.set()
t.join()
check("burn job at 1 ms finished", p.returncode == 0, p.stderr)
used, rate = (float(x) for x in open(report).read().split())
cpu = points(fine, "proc.cpu")["proc.cpu"]
util = points(fine, "cpu.util")["cpu.util"]
t0 = cpu[0][0]
busy = [v for (ts, v) in cpu if t0 + 0.5 <= ts <= t0 + 2.8]
near("1 ms: proc.cpu mean while burning = the child's getrusage rate", sum(busy) / len(busy),
     rate, 10.0)
span = [ts for (ts, _) in host if t0 + 0.5 <= ts <= t0 + 2.8]
a, b = (span[0], span[-1]) if len(span) >= 2 else (t0 + 0.5, t0 + 2.8)
# 8 points: at 1 ms the two agreed within 5 in 8 runs beside a load that
# came and went every 0.3 s (at 100 ms within 0.3); a median of psutil's
# readings against strobe's mean over another window missed by 11 in CI
near("1 ms: cpu.util agrees with psutil.cpu_percent over the same span (time-weighted means)",
     mean_over(util, a, b), mean_over(host, a, b), 8.0)
gaps = sorted(b[0] - a[0] for a, b in zip(util, util[1:]))
check("1 ms: cpu.util points are at least one 10 ms tick apart", gaps and gaps[0] >= 0.0099,
      gaps[:3])

# the recorder's own cost is on the record
r = show(db)
self_cpu = r["metrics"]["strobe.cpu"]["mean"]
check("strobe.cpu is recorded and small (< 5 % of a core at 100 ms)", 0 < self_cpu < 5, self_cpu)

# The job's last interval in its own series: at 1 s, a 1.7 s burner ends
# inside the second interval, which only the reading of its zombie covers.
burn_for = """
import time
t = time.process_time()
while time.process_time() - t < 1.7:
    pass
print(time.process_time())
"""
db2 = store_path("truth-cpu-final.db")
p = run(db2, PYTHON, "-c", burn_for, opts=("--interval", "1s", "--no-report"))
check("a 1.7 s burner at 1 s finished", p.returncode == 0, p.stderr)
if p.returncode == 0:
    used = float(p.stdout.split()[-1])
    own = {k: v for k, v in points(db2, "proc.cpu{*").items()}
    own_s = sum(integral(v, 1.0) for v in own.values()) / 100
    near("its own proc.cpu{pid} series hold its CPU time to the end", own_s, used,
         0.05 * used + 0.05, "s")

# An orphan that keeps the job's stdout open: the run ends with the job, its
# last frame on time; the orphan's CPU is not piled into that frame.
orphan = ("/usr/bin/python3 -c 'import time\nt = time.process_time()\n"
          "while time.process_time() - t < 1.5: pass' & exit 0")
db3 = store_path("truth-cpu-orphan.db")
p = run(db3, "/bin/sh", "-c", orphan, opts=("--no-report",))
check("a job that leaves a busy orphan holding its stdout finished", p.returncode == 0, p.stderr)
if p.returncode == 0:
    r = show(db3)
    cpu = points(db3, "proc.cpu").get("proc.cpu", [])
    peak = max((v for _, v in cpu), default=float("nan"))
    check("the orphan's CPU is not piled into the last frame (proc.cpu <= 100 % per core)",
          peak <= 100 * ncpu + 10, cpu)
    check("the run lasts as long as the job, not the orphan's hold on stdout",
          r["duration_s"] < 1.0, r["duration_s"])


# ---- a recorder that wakes late: each point still within its physical bound --
# The recorder runs SCHED_IDLE while both cores are busy (the job's burner,
# which sets itself back to SCHED_OTHER, and a spinner outside the run), so
# its wake-ups and reads come late, by tens of ms. The change between two
# late reads over the scheduled 100 ms put a single thread at 146 %; the
# value at each deadline is now interpolated between the reads around it.
# The kernel brings a running task's CPU time up to date at each tick, so
# one point of a one-thread burner may read up to a tick over the interval
# high, plus 2 % for the reads' own times.
def kernel_hz():
    import gzip
    for path, opener in ((f"/boot/config-{os.uname().release}", open), ("/proc/config.gz", gzip.open)):
        try:
            with opener(path, "rt") as f:
                for line in f:
                    if line.startswith("CONFIG_HZ="):
                        return int(line.split("=")[1])
        except OSError:
            pass
    return 100  # the coarsest tick: the widest bound


late_db = store_path("late-reads.db")
spinner = subprocess.Popen([PYTHON, "-c", "import time\nt = time.monotonic()\n"
                            "while time.monotonic() - t < 4.5: pass"])
burner = ("import os, time\ntry:\n    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))\n"
          "except PermissionError:\n    pass  # not root: it stays idle-class, the bound holds\n"
          "t = time.monotonic()\nwhile time.monotonic() - t < 3.5: pass\n")
p = subprocess.run(["chrt", "-i", "0", STROBE, "run", "--quiet", "--no-report", f"--store={late_db}",
                    "--", PYTHON, "-c", burner], capture_output=True, text=True, timeout=60)
spinner.wait()
check("a burner recorded by a recorder that wakes late finished", p.returncode == 0, p.stderr)
if p.returncode == 0:
    cpu = [v for _, v in points(late_db, "proc.cpu").get("proc.cpu", [])]
    bound = 100 + 100 * (1000 / kernel_hz()) / 100 + 2 + 0.25
    check(f"late reads: no point of a one-thread burner reads over {bound:.2f} %",
          cpu and max(cpu) <= bound, f"max {max(cpu, default=None)} of {len(cpu)} points")
done()
