#!/usr/bin/python3
"""Faults: the recorder killed with SIGKILL leaves the job running and the
store readable; an unusable store fails before the job starts; a full file
system gives a warning and the job still completes."""
import os
import signal
import sqlite3
import subprocess
import time

from strobetest import *

db = store_path()
marker = store_path("marker")

# 1. kill -9 of the recorder mid-run
job = f"import time; time.sleep(2.5); open({marker!r}, 'w').write('done')"
proc = subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--name", "victim", "--",
                         PYTHON, "-c", job])
time.sleep(1.6)  # past at least one commit (they come once a second)
proc.send_signal(signal.SIGKILL)
proc.wait()
check("job keeps running after the recorder is killed", wait_for(lambda: os.path.exists(marker), 10))
r = show(db, "victim")
check("the store is readable with what was committed", r["samples"] >= 5 and
      r["metrics"]["cpu.util"]["count"] >= 5, r["samples"])
check("the run shows as lost (its recorder died)", r["status"] == "lost", r["status"])
p = strobe("show", "victim", store=db)
status_line = next((l for l in p.stdout.splitlines() if l.startswith("status")), "")
check("show says what lost means: its recorder's pid, and data up to its last commit",
      f"pid {proc.pid}" in status_line and "last commit" in status_line, status_line)
integrity = sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0]
check("store integrity_check is ok", integrity == "ok", integrity)

# a truncated store: one clear line from the read commands, no crash
trunc = os.path.join(TMP, "trunc.db")
sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
open(trunc, "wb").write(open(db, "rb").read()[: max(4096, os.path.getsize(db) // 3)])
for cmd in (["ls"], ["show", "victim"], ["export", "--format", "csv", "victim"]):
    p = strobe(*cmd, store=trunc)
    lines = p.stderr.strip().splitlines()
    check(f"truncated store: '{cmd[0]}' fails in one line", p.returncode != 0 and len(lines) == 1
          and "malformed" in lines[0] and "Traceback" not in p.stderr and p.returncode < 128,
          f"rc={p.returncode} {p.stderr!r}")

# 2. stores that cannot be used fail before the job starts
def refused(name, store):
    if os.path.exists(marker):
        os.unlink(marker)
    p = strobe("run", "--quiet", "--", "sh", "-c", f"touch {marker}", store=store)
    lines = p.stderr.strip().splitlines()
    check(f"{name}: exit 125 and one line", p.returncode == 125 and len(lines) == 1, f"{p.returncode} {p.stderr!r}")
    check(f"{name}: the job did not start", not os.path.exists(marker))

refused("store in a missing directory", os.path.join(TMP, "no", "such", "dir", "s.db"))
os.mkdir(os.path.join(TMP, "adir"))
refused("store path is a directory", os.path.join(TMP, "adir"))
junk = os.path.join(TMP, "junk.db")
open(junk, "wb").write(os.urandom(8192))
refused("store is not a database", junk)
other = os.path.join(TMP, "other.db")
c = sqlite3.connect(other); c.execute("create table t(x)"); c.commit(); c.close()
refused("store is someone else's database", other)
ro = os.path.join(TMP, "ro.db")
strobe("run", "--quiet", "--", "true", store=ro)
os.chmod(ro, 0o444)
if os.getuid() == 0:
    # root ignores file modes; a read-only bind mount is what stops root
    mnt = os.path.join(TMP, "romnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt]).returncode == 0:
        strobe("run", "--quiet", "--", "true", store=os.path.join(mnt, "s.db"))
        subprocess.run(["mount", "-o", "remount,ro", mnt])
        refused("store on a read-only file system", os.path.join(mnt, "s.db"))
        subprocess.run(["umount", mnt])
    else:
        skip("store on a read-only file system", "cannot mount tmpfs")
else:
    refused("read-only store file", ro)

# 3. a full file system: a 400 KiB tmpfs fills during the run
mnt = os.path.join(TMP, "full")
os.mkdir(mnt)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", mnt]).returncode != 0:
    skip("full file system", "cannot mount a tmpfs here (needs root)")
else:
    try:
        fdb = os.path.join(mnt, "s.db")
        if os.path.exists(marker):
            os.unlink(marker)
        job = f"import time; time.sleep(6); open({marker!r}, 'w').write('done')"
        p = subprocess.run([STROBE, "run", f"--store={fdb}", "--interval", "2ms", "--name", "full", "--",
                            PYTHON, "-c", job], capture_output=True, text=True, timeout=60)
        check("full disk: the job completes with its exit code", p.returncode == 0 and os.path.exists(marker),
              f"rc={p.returncode}")
        check("full disk: a warning says so", "full" in p.stderr and "warning" in p.stderr, p.stderr[-500:])
        lines = [l for l in p.stderr.splitlines() if "full" in l]
        check("full disk: warned once, not once per commit", len(lines) <= 3, len(lines))
        r = subprocess.run([STROBE, "ls", f"--store={fdb}"], capture_output=True, text=True)
        check("full disk: the store still opens", r.returncode == 0 and "full" in r.stdout, r.stderr)
    finally:
        subprocess.run(["umount", "-l", mnt])
done()
