#!/usr/bin/python3
"""Host metrics against independent readings: psutil for memory and CPU
shares, workloads of known cost for network, disk, context switches and the
cgroup's memory, the kernel's own PSI totals read around the run, and
/usr/bin/time for the recorder's own CPU."""
import os
import subprocess
import threading
import time

import psutil

from strobetest import *

db = store_path()

# --- memory and CPU shares, sampled by psutil during the same run ------------
# the job makes system time: many small writes to /dev/null for 3 s
job = """
import os, time
fd = os.open('/dev/null', os.O_WRONLY)
end = time.monotonic() + 3.0
while time.monotonic() < end:
    os.write(fd, b'x')
"""
seen = []
def watch(stop):
    psutil.cpu_times_percent(None)
    while not stop.is_set():
        time.sleep(0.5)
        t = psutil.cpu_times_percent(None)
        vm = psutil.virtual_memory()
        seen.append((time.time(), t.system + t.irq + t.softirq, t.user + t.nice, vm.available,
                     psutil.swap_memory().used))
stop = threading.Event()
th = threading.Thread(target=watch, args=(stop,))
th.start()
p = subprocess.run([STROBE, "run", "--quiet", f"--store={db}", "--", PYTHON, "-c", job],
                   capture_output=True, text=True, timeout=60)
stop.set()
th.join()
check("system-time job finished", p.returncode == 0, p.stderr)
r = show(db)
m = r["metrics"]
t0 = min(t for t, _ in points(db, "mem.total_bytes")["mem.total_bytes"])
window = [s for s in seen if t0 + 0.8 <= s[0] <= t0 + 3.0]
# psutil's readings each cover the time since the one before, as strobe's
# points do: time-weighted means over one span of psutil's count the same
# ticks (test_truth_cpu.py), however the load varies within it
a, b = window[0][0], window[-1][0]
sysp = points(db, "cpu.system")["cpu.system"]
near("cpu.system agrees with psutil (system+irq+softirq) over the same span",
     mean_over(sysp, a, b), mean_over([(s[0], s[1]) for s in seen], a, b), 5.0)
userp = points(db, "cpu.user")["cpu.user"]
near("cpu.user agrees with psutil (user+nice) over the same span",
     mean_over(userp, a, b), mean_over([(s[0], s[2]) for s in seen], a, b), 5.0)
check("mem.total_bytes is psutil's total exactly", m["mem.total_bytes"]["max"] == psutil.virtual_memory().total,
      f'{m["mem.total_bytes"]["max"]} vs {psutil.virtual_memory().total}')
avail = median([s[3] for s in window])
near("mem.available_bytes agrees with psutil within 2 %", m["mem.available_bytes"]["p50"] / avail, 1.0, 0.02)
near("mem.swap_used_bytes agrees with psutil (4 MiB)", m["mem.swap_used_bytes"]["p50"],
     median([s[4] for s in window]), 4 << 20)

# --- the recorder's own CPU against /usr/bin/time -------------------------------
# a job that uses no CPU, outside any git work tree (no git probe), at 10 ms,
# with no output tees (--no-logs: processes of their own, whose CPU
# /usr/bin/time would add): what it charges is then the recorder's, which
# strobe.cpu records, and the start-up probes (lscpu)
def timed_run(*job):
    p = subprocess.run(["/usr/bin/time", "-f", "%U %S", STROBE, "run", "--quiet", "--no-logs",
                        f"--store={db}", "--interval", "10ms", "--", *job],
                       capture_output=True, text=True, timeout=60, cwd=TMP)
    return sum(float(x) for x in p.stderr.strip().splitlines()[-1].split())


# the fixed cost of a run (store, probes, start and end), which strobe.cpu
# cannot see, from a job that ends at once; the median of three
fixed = median([timed_run("true") for _ in range(3)])
total = timed_run("sleep", "3")
r = show(db)
strobe_s = r["metrics"]["strobe.cpu"]["mean"] / 100.0 * r["duration_s"]
near("strobe.cpu x duration agrees with /usr/bin/time of the recorder, less a run's fixed cost "
     f"({fixed * 1e3:.0f} ms; 20 % + 20 ms)", strobe_s, total - fixed,
     0.2 * (total - fixed) + 0.02, "s")

# --- context switches: 2000 sleeps of 1 ms are 2000 voluntary switches ---------
p = run(db, PYTHON, "-c", "import time\nfor _ in range(2000): time.sleep(0.001)")
total = show(db)["metrics"]["proc.ctx_switches_per_s"]["total"]
check("2000 sleeps read 2000-2200 context switches (the main thread's, as psutil counts)",
      2000 <= total <= 2200, total)

# --- network: 20 MB over loopback ----------------------------------------------
job = """
import socket, threading
srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)
port = srv.getsockname()[1]
def sink():
    c, _ = srv.accept()
    while c.recv(1 << 16):
        pass
t = threading.Thread(target=sink); t.start()
s = socket.create_connection(('127.0.0.1', port))
s.sendall(b'x' * 20_000_000)
s.close(); t.join()
import time; time.sleep(0.3)
"""


def loopback_bytes():
    """The kernel's own lo counters (/proc/net/dev): received, sent."""
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                fields = rest.split()
                return int(fields[0]), int(fields[8])
    return 0, 0


before = loopback_bytes()
p = run(db, PYTHON, "-c", job)
after = loopback_bytes()
kernel_rx, kernel_tx = after[0] - before[0], after[1] - before[1]
m = show(db)["metrics"]
rx = m["net.rx_bytes_per_s{iface=lo}"]["total"]
tx = m["net.tx_bytes_per_s{iface=lo}"]["total"]
# the job's 20 MB at least, and no more than the kernel counted over the
# whole run; other programs' loopback traffic (a database, a test server)
# counts too, so the 10 % bound on headers holds only on a quiet loopback
quiet = kernel_rx <= 22e6 and kernel_tx <= 22e6
check("loopback carried the 20 MB (+ TCP/IP headers, < 10 % on a quiet loopback), no more than the "
      "kernel's counters over the run",
      20e6 <= rx <= kernel_rx and 20e6 <= tx <= kernel_tx and (not quiet or (rx <= 22e6 and tx <= 22e6)),
      f"rx {rx / 1e6:.2f} MB tx {tx / 1e6:.2f} MB; the kernel's {kernel_rx / 1e6:.2f} and "
      f"{kernel_tx / 1e6:.2f} MB")

# --- disk: 40 MB written and fsynced to the file system under the store --------
target = os.path.join(TMP, "disk.bin")
dev = os.stat(TMP).st_dev
job = f"""
import os
fd = os.open({target!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range(40):
    os.write(fd, b'y' * 1_000_000)
os.fsync(fd); os.close(fd)
import time; time.sleep(0.3)
"""
p = run(db, PYTHON, "-c", job)
m = show(db)["metrics"]
writes = {k: v["total"] for k, v in m.items() if k.startswith("disk.write_bytes_per_s{")}
best = max(writes.values()) if writes else 0
if os.major(dev) == 0:
    skip("disk writes reach a block device", "the scratch directory is not on a block device")
else:
    check("a disk saw the 40 MB (plus journal, other writers < +60 %)", 40e6 <= best <= 64e6,
          {k: round(v / 1e6, 1) for k, v in writes.items()})

# --- cgroup memory: 200 MiB allocated and touched --------------------------------
# The whole process's peak RSS, by getrusage, is what the cgroup gains: the
# 200 MiB and the interpreter (about 10 MiB) the run's first sample did not
# hold yet.
job = """
import resource, time
b = bytearray(200 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
time.sleep(1.0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""
p = run(db, PYTHON, "-c", job)
m = show(db)["metrics"]
peak = int(p.stdout.split()[-1]) if p.returncode == 0 and p.stdout.split() else 0
if "cgroup.mem_used_bytes" not in m:
    skip("cgroup memory follows the job", "no cgroup memory accounting here")
else:
    rise = m["cgroup.mem_used_bytes"]["max"] - m["cgroup.mem_used_bytes"]["min"]
    near("cgroup.mem_used_bytes rises by the job's peak RSS (getrusage; ±10 %)",
         rise / peak if peak else None, 1.0, 0.1)

# --- PSI: the kernel's own totals, read around a run that overloads the CPUs -----
def psi_total():
    for line in open("/proc/pressure/cpu"):
        if line.startswith("some"):
            return int(line.split("total=")[1])
job = "import multiprocessing as mp, time\n" \
      "def burn():\n    end = time.monotonic() + 2.5\n    while time.monotonic() < end: pass\n" \
      "ps = [mp.Process(target=burn) for _ in range(4 * %d)]\n" % os.cpu_count() + \
      "[p.start() for p in ps]; [p.join() for p in ps]\n"
before, t_before = psi_total(), time.monotonic()
p = run(db, PYTHON, "-c", job)
after, t_after = psi_total(), time.monotonic()
m = show(db)["metrics"]
stalled_s = integral(points(db, "psi.cpu_some")["psi.cpu_some"]) / 100.0  # a share over time
kernel_s = (after - before) / 1e6
check("overloaded CPUs show a CPU stall", m["psi.cpu_some"]["max"] > 20, m["psi.cpu_some"])
check("psi.cpu_some integrates to the kernel's stall total over the run (within 15 % + 0.1 s)",
      abs(stalled_s - kernel_s) <= 0.15 * kernel_s + 0.1 and stalled_s <= kernel_s + 0.1,
      f"strobe {stalled_s:.2f} s, kernel {kernel_s:.2f} s over {t_after - t_before:.1f} s")
done()
