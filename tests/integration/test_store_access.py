#!/usr/bin/python3
"""Store paths and access: the store is always a file path (':memory:' is
refused, 'file:' URIs are not interpreted); WAL mode is checked; a store the
user can read but not write, or one on a read-only mount, can still be read,
with a live recorder's fresh data where the -shm file exists."""
import os
import pwd
import sqlite3
import shutil
import subprocess
import tempfile
import time

from strobetest import *

STROBE_ABS = os.path.abspath(STROBE)
READERS = (["ls"], ["show", "r1"], ["export", "--format", "csv", "r1"], ["logs", "--stderr", "r1"],
           ["rules", "r1"], ["compare", "r1", "r2"])

# 1. special names and URIs
os.chdir(TMP)
p = strobe("run", "--no-report", "--", "true", store=":memory:")
check("':memory:' is refused by run: exit 125, one line",
      p.returncode == 125 and len(p.stderr.strip().splitlines()) == 1 and "file path" in p.stderr,
      f"{p.returncode} {p.stderr!r}")
p = strobe("ls", store=":memory:")
check("':memory:' is refused by ls: exit 1", p.returncode == 1 and "file path" in p.stderr,
      f"{p.returncode} {p.stderr!r}")
for uri, literal in (("file:a%20b.db", "file:a%20b.db"), ("file:m.db?mode=memory", "file:m.db?mode=memory")):
    p = run(uri, "true", opts=("--no-report", "--name", "u"))
    check(f"'{uri}' is a plain file name", p.returncode == 0 and os.path.isfile(literal) and
          not os.path.exists("a b.db") and not os.path.exists("m.db"), f"{p.returncode} {p.stderr!r}")
    check(f"'{uri}' keeps the run", p.returncode == 0 and show(uri, "u")["name"] == "u")
p = run("./:memory:", "true", opts=("--no-report",))
check("'./:memory:' is a file so named", p.returncode == 0 and os.path.isfile(":memory:"), p.stderr)

# 2. read-only access
if os.geteuid() != 0:
    skip("read-only stores", "needs root (a read-only mount, another user)")
    done()

def readers_work(what, db, as_uid=None):
    for cmd in READERS:
        pre = (lambda: os.setuid(as_uid)) if as_uid is not None else None
        p = subprocess.run([STROBE_ABS, cmd[0], f"--store={db}"] + cmd[1:], capture_output=True,
                           text=True, timeout=60, preexec_fn=pre)
        check(f"{what}: '{cmd[0]}' reads it", p.returncode == 0, f"rc={p.returncode} {p.stderr!r}")

def record_two(db):
    for name in ("r1", "r2"):
        run(db, "sh", "-c", "echo hello >&2", opts=("--no-report", "--name", name))

top = tempfile.mkdtemp(dir="/tmp", prefix="strobe-ro-")
os.chmod(top, 0o755)
nobody = pwd.getpwnam("nobody").pw_uid
try:
    # another user's store in a directory the reader cannot write: no -shm can be made
    db = os.path.join(top, "root.db")
    record_two(db)
    readers_work("another user's store", db, as_uid=nobody)

    # the same, made before schema 5 (no recorder identity columns): it
    # cannot be upgraded by a reader who may not write it, and is read as is
    old = os.path.join(top, "v4.db")
    record_two(old)
    con = sqlite3.connect(old)
    for col in ("recorder_boot_id", "recorder_pid_ns", "recorder_time_ns", "recorder_start_ticks"):
        con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    con.execute("PRAGMA user_version = 4")
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    readers_work("another user's store of schema 4", old, as_uid=nobody)
    con = sqlite3.connect(old)
    check("a schema-4 store read by another user is left as it was",
          con.execute("PRAGMA user_version").fetchone()[0] == 4)
    con.close()

    # a live recorder: the -shm exists, and the reader sees its commits
    live = os.path.join(top, "live.db")
    rec = subprocess.Popen([STROBE_ABS, "run", "--quiet", "--no-report", f"--store={live}",
                            "--name", "live", "--", "sleep", "4"])
    wait_for(lambda: os.path.exists(live + "-shm"), 10)
    time.sleep(2.2)  # past two commits
    p = subprocess.run([STROBE_ABS, "show", "--json", f"--store={live}", "live"], capture_output=True,
                       text=True, timeout=60, preexec_fn=lambda: os.setuid(nobody))
    check("another user's live store: show sees the running run's samples",
          p.returncode == 0 and '"running"' in p.stdout and '"samples": 0,' not in p.stdout,
          f"rc={p.returncode} {p.stderr!r}")
    rec.wait()

    # a read-only mount
    mnt = os.path.join(top, "mnt")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "tmpfs", mnt]).returncode != 0:
        skip("read-only mount", "mount -t tmpfs failed")
    else:
        try:
            db = os.path.join(mnt, "s.db")
            record_two(db)
            subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
            readers_work("read-only mount", db)
            p = run(db, "true", opts=("--no-report",))
            check("read-only mount: run fails with 125", p.returncode == 125, p.stderr)
        finally:
            subprocess.run(["umount", mnt])
finally:
    shutil.rmtree(top, ignore_errors=True)
done()
