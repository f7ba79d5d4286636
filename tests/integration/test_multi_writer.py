#!/usr/bin/python3
"""Several recorders write one store at once (WAL, short transactions)."""
import subprocess

from strobetest import *

db = store_path()
procs = [subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--name", f"w{i}",
                           "--interval", "10ms", "--", "sleep", "2.5"],
                          stderr=subprocess.PIPE, text=True) for i in range(3)]
errs = [p.communicate(timeout=60)[1] for p in procs]
check("three recorders on one store all exit 0", all(p.returncode == 0 for p in procs), errs)
check("no store warnings", not any("warning" in e for e in errs), errs)
for i in range(3):
    r = show(db, f"w{i}")
    # cpu.* have a point per frame but for the odd 10 ms window in which
    # /proc/stat counted no tick (it runs on into the next frame)
    cpu = r["metrics"]["cpu.util"]["count"]
    check(f"run w{i} is complete", r["status"] == "finished" and r["samples"] > 150
          and cpu >= 0.8 * r["samples"], f"{r['status']} {r['samples']} samples, cpu.util {cpu}")
done()
