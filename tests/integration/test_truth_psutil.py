#!/usr/bin/python3
"""RSS, threads and CPU of a process tree agree with psutil sampling the same
tree in the same run, from outside it.

The job allocates memory in steps (0, 64, 192 MiB) held 1.2 s each while a
forked child burns CPU and two threads idle. A watcher thread here reads the
tree with psutil every 50 ms. strobe and psutil sample at different instants,
so an RSS point is compared only where psutil's readings within ±150 ms of it
agree among themselves (the memory is not moving): there the two must match
to 1 % (both read the kernel's RSS counters: strobe /proc/PID/stat, psutil
/proc/PID/statm). CPU time of the whole tree, which psutil gets from
cpu_times() including reaped children, must agree to 5 %."""
import subprocess
import threading
import time

import psutil

from strobetest import *

db = store_path()
job = r"""
import os, threading, time
def idle():
    time.sleep(5)
for _ in range(2):
    threading.Thread(target=idle, daemon=True).start()
pid = os.fork()
if pid == 0:
    end = time.monotonic() + 2.5
    while time.monotonic() < end:
        pass
    os._exit(0)
blocks = []
for mib in (0, 64, 128):
    if mib:
        b = bytearray(mib << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        blocks.append(b)
    time.sleep(1.2)
os.waitpid(pid, 0)
"""

proc = subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--interval", "100ms", "--",
                         PYTHON, "-c", job])
seen = []  # (time, rss, cpu_seconds_incl_reaped, threads)
root = None
def tree_of(p):
    try:
        return [p] + p.children(recursive=True)
    except psutil.Error:
        return []
while proc.poll() is None:
    try:
        # The job once it has exec'd: strobe's other children (git, the version
        # probe, the output tees) and the job's own fork before its exec are
        # forks of strobe, whose command line holds the job's too
        kids = [k for k in psutil.Process(proc.pid).children() if k.cmdline()[:3] == [PYTHON, "-c", job]]
        if kids:
            root = kids[0]
            break
    except psutil.Error:
        pass
    time.sleep(0.01)
while proc.poll() is None and root is not None:
    rss = cpu = threads = 0
    complete = True
    for p in tree_of(root):
        try:
            with p.oneshot():
                rss += p.memory_info().rss
                ct = p.cpu_times()
                cpu += ct.user + ct.system + (ct.children_user + ct.children_system if p.pid == root.pid else 0)
                threads += p.num_threads()
        except psutil.Error:  # a process came or went mid-read: drop the reading
            complete = False
    if complete and rss:
        seen.append((time.time(), rss, cpu, threads))
    time.sleep(0.05)
proc.wait(timeout=60)
check("job finished", proc.returncode == 0, f"rc={proc.returncode}")
check("psutil watched the tree", len(seen) > 40, len(seen))

rss = points(db, "proc.rss_bytes")["proc.rss_bytes"]
compared = mismatched = 0
worst = 0.0
for ts, v in rss:
    around = [s[1] for s in seen if abs(s[0] - ts) <= 0.15]
    if len(around) < 4 or max(around) - min(around) > 0.002 * max(around):
        continue
    compared += 1
    ref = median(around)
    err = abs(v - ref) / ref
    worst = max(worst, err)
    mismatched += err > 0.01
    if err > 0.01:
        print(f"# t={ts - rss[0][0]:.2f}s strobe {v} psutil {ref} around {sorted(set(around))}")
check("RSS compared at steady points", compared >= 15, compared)
check("tree RSS matches psutil within 1 %", mismatched == 0, f"worst {worst:.4f} over {compared} points")
check("RSS saw the 192 MiB step", max(v for _, v in rss) > 190 << 20, max(v for _, v in rss))

cpu = points(db, "proc.cpu")["proc.cpu"]
strobe_s = integral(cpu) / 100.0
psutil_s = seen[-1][2]
near("tree CPU seconds: strobe vs psutil", strobe_s, psutil_s, 0.05 * psutil_s + 0.05, "s")

threads = points(db, "proc.threads")["proc.threads"]
check("threads of the tree: 3 in the parent + 1 in the child at their peak",
      max(v for _, v in threads) == 4, max(v for _, v in threads))
done()
