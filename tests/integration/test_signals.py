#!/usr/bin/python3
"""Signals reach the job as they would without strobe:

- the job stays in strobe's process group, so a signal to the whole group
  (a CI's cancel, `kill -9 -- -PGID`) reaches it, strobe or not;
- sent to strobe itself, a signal reaches the job once;
- from the terminal (Ctrl-C) with strobe in the foreground, the job gets it
  from the terminal and strobe does not send it again;
- a signal strobe's starter ignores (nohup's SIGHUP) stays ignored in the
  job, which had it reset to the default.

The job counts the deliveries of the signal (its wakeup fd) and exits with
the count. (A signal sent to the group with kill(2) reaches the job twice,
directly and from strobe: docs/cli.md says why it cannot be told apart.)"""
import os
import pty
import re
import signal
import subprocess
import time

from strobetest import *

db = store_path("signals.db")
COUNT = r'''
import os, signal, sys, time
# every delivery of the signal writes a byte here, from the C-level handler:
# Python's own handler calls would fold two deliveries that come close
r, w = os.pipe()
os.set_blocking(r, False)
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
signal.signal(signal.SIG, lambda sig, frame: None)
print("ready", os.getpid(), os.getpgid(0), flush=True)
end = time.monotonic() + 2.0
while time.monotonic() < end:  # sleeps that signals interrupt, then go on
    time.sleep(0.05)
try:
    n = len(os.read(r, 100))
except BlockingIOError:
    n = 0
sys.exit(n)
'''


def counter(sig):
    return COUNT.replace("signal.SIG,", f"signal.{sig},")


def default_signals():
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)  # an async shell ignores SIGINT and SIGQUIT


def start(cmd, **kw):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **kw)
    words = p.stdout.readline().split()
    return p, (int(words[1]), int(words[2])) if words[:1] == ["ready"] else (None, None)


RUN = [STROBE, "run", "--quiet", "--no-report", "--no-framework", f"--store={db}", "--"]

# 1. SIGKILL to strobe's process group: the job goes too
p, (job, job_group) = start(RUN + [PYTHON, "-c", counter("SIGTERM")], start_new_session=True)
check("the job started, in strobe's process group", job is not None and job_group == p.pid,
      (job, job_group, p.pid))
os.killpg(p.pid, signal.SIGKILL)
p.wait(timeout=30)
gone = wait_for(lambda: not os.path.exists(f"/proc/{job}") or
                open(f"/proc/{job}/stat").read().split(")")[-1].split()[0] == "Z", timeout=10)
check("SIGKILL to strobe's process group kills the job as well", gone, job)

# 3. SIGINT sent to strobe itself, by kill(1): forwarded once
p, (job, _) = start(RUN + [PYTHON, "-c", counter("SIGINT")], preexec_fn=default_signals)
p.send_signal(signal.SIGINT)
rc = p.wait(timeout=30)
check("SIGINT sent to strobe reaches the job once", rc == 1, f"delivered {rc} times")

# 4. nohup: SIGHUP ignored by strobe's starter stays ignored in the job
def ignore_hup():
    default_signals()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


IGNORED = r'''
import os, sys, time
mask = int(next(l for l in open("/proc/self/status") if l.startswith("SigIgn")).split()[1], 16)
print("ready", os.getpid(), os.getpgid(0), flush=True)
time.sleep(1.0)
sys.exit(0 if mask & (1 << (1 - 1)) else 3)  # SIGHUP is signal 1
'''
p, (job, _) = start(RUN + [PYTHON, "-c", IGNORED], preexec_fn=ignore_hup)
p.send_signal(signal.SIGHUP)
rc = p.wait(timeout=30)
check("nohup: the job still ignores SIGHUP, and a SIGHUP forwarded to it does nothing",
      rc == 0, f"rc={rc} (3: SIGHUP not ignored; 129: killed by it)")

# 5. Ctrl-C on strobe's controlling terminal, strobe in the foreground
pid, master = pty.fork()
if pid == 0:
    default_signals()
    os.execv(STROBE, RUN + [PYTHON, "-c", counter("SIGINT")])
out = b""
# the whole line: a read may end inside "ready PID PGID"
while not re.search(rb"ready \d+ \d+\s", out):
    try:
        chunk = os.read(master, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
words = out.split(b"ready", 1)[1].split()
job, job_group = int(words[0]), int(words[1])
check("in a terminal's foreground: the job shares strobe's process group",
      job_group == os.getpgid(pid), (job_group, os.getpgid(pid)))
os.write(master, b"\x03")  # the terminal's interrupt character
while True:
    try:
        if not os.read(master, 1024):
            break
    except OSError:
        break
_, status = os.waitpid(pid, 0)
rc = os.waitstatus_to_exitcode(status)
os.close(master)
check("Ctrl-C reaches the job once (from the terminal, not again from strobe)", rc == 1,
      f"delivered {rc} times")
done()
