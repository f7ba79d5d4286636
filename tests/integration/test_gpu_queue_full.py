#!/usr/bin/python3
"""The GPU thread's queue when the recorder's main thread stops taking from
it: eight test-NVML GPUs at --gpu-interval 10 ms give some 25 000 values a
second; this test stops the recorder's main thread alone for 4 s (ptrace
stops one thread; the GPU thread runs on) so the 65 536-value queue
(GPU_QUEUE_MAX) fills and the rest must be dropped and counted:

- the job is not touched: it ends with its own exit code and duration;
- the run says how many GPU readings were dropped, in one warning that
  --quiet does not silence (it did: the warnings came after --quiet's
  early return), and show --json's `dropped` holds them;
- what was queued is kept: the GPU series have points from before the
  stall, and again after it; in between, a gap where the values went;
- the recorder's peak memory (VmHWM) does not grow with the stall: the
  queue is bounded.
Needs ptrace of a process this test started (root here)."""
import ctypes
import json
import os
import re
import subprocess
import time

from strobetest import PYTHON, STROBE, TMP, check, done, points, sanitized, show, skip, store_path

BUILD = os.path.dirname(os.path.abspath(STROBE))
FAKE = os.path.join(BUILD, "tests", "libnvidia-ml-fake.so")
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000
STALL_S, JOB_S = 4.0, 7.0

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def stop_thread(tid):
    """Stop one thread (not its process) until resume_thread."""
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) < 0 or libc.ptrace(PTRACE_INTERRUPT, tid, None, None) < 0:
        return os.strerror(ctypes.get_errno())
    os.waitpid(tid, WALL)
    return None


def resume_thread(tid):
    libc.ptrace(PTRACE_DETACH, tid, None, None)


def hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


if not os.path.exists(FAKE):
    skip("the GPU queue when full", "no test NVML library " + FAKE)
    done()
scenario = os.path.join(TMP, "queue_full.nvml")
with open(scenario, "w") as f:
    f.write("sample_period 0.001\n")
    for g in range(8):
        f.write(f"device {g}\nat 0 {g} util.gpu 50\nat 0 {g} power 100000\nat 0 {g} temp 40\n")
db = store_path("queue_full.db")
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(db + suffix):
        os.remove(db + suffix)
env = dict(os.environ, STROBE_NVML_LIB=FAKE, STROBE_FAKE_NVML=scenario)
job = f"import time; t = time.monotonic(); time.sleep({JOB_S}); print(round(time.monotonic() - t, 2))"
rec = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--name", "stalled", "--store", db,
                        "--gpu-interval", "10ms", "--", PYTHON, "-c", job],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
time.sleep(1.5)
hwm_before = hwm_kib(rec.pid)
t_stop = time.time()
why = stop_thread(rec.pid)
if why:
    rec.kill()
    rec.wait()
    skip("the GPU queue when full", "cannot stop the recorder's main thread: " + why)
    done()
time.sleep(STALL_S)
t_resume = time.time()
resume_thread(rec.pid)
time.sleep(0.5)
hwm_after = hwm_kib(rec.pid)
out, err = rec.communicate(timeout=60)

check("the job ends with its own code and length while the recorder stalls",
      rec.returncode == 0 and abs(float(out.strip() or 0) - JOB_S) < 0.5, (rec.returncode, out, err[-300:]))
said = re.findall(r"(\d+) GPU readings were dropped: the GPU queue was full", err)
check("one warning says how many GPU readings were dropped, --quiet or not", len(said) == 1, err[-500:])
r = show(db, "stalled")
dropped = int(said[0]) if said else 0
check("show --json's dropped holds them (well over a stall's worth past the queue's 65536)",
      dropped > 10000 and r["dropped"] >= dropped, (dropped, r["dropped"]))

temp = points(db, "gpu.temp_c", "stalled")
pts = sorted(t for series in temp.values() for t, _ in series)
before = [t for t in pts if t < t_stop]
after = [t for t in pts if t > t_resume + 0.1]
gaps = [b - a for a, b in zip(pts, pts[1:]) if t_stop <= b and a <= t_resume]
check("the GPU series have points before the stall and again after it",
      len(before) > 8 * 50 and len(after) > 8 * 50, (len(before), len(after)))
check("in between, a gap where the dropped values went (the queue keeps the oldest)",
      gaps and max(gaps) > 0.5, max(gaps) if gaps else None)
if sanitized():
    skip("the recorder's peak memory over the stall", "a sanitizer build: its memory is the sanitizer's")
else:
    check("the recorder's peak memory does not grow with the stall (the queue is bounded)",
          hwm_after - hwm_before < 4096, (hwm_before, hwm_after))
done()
