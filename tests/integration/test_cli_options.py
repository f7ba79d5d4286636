#!/usr/bin/python3
"""Options of 'strobe run' that name things are checked before the job
starts: an unknown collector is one line and exit 125, naming the known ones."""
import os

from strobetest import *

db = store_path()
marker = store_path("marker")
for bad in ("bogus", "cpu,bogus", "cpu,,mem", ""):
    p = strobe("run", "--no-report", "--collectors", bad, "--", "touch", marker, store=db)
    lines = p.stderr.strip().splitlines()
    check(f"--collectors '{bad}': exit 125, one line naming the known collectors",
          p.returncode == 125 and len(lines) == 1 and "cpu, mem, psi" in lines[0],
          f"{p.returncode} {p.stderr!r}")
    check(f"--collectors '{bad}': the job did not start", not os.path.exists(marker))
p = run(db, "true", opts=("--no-report", "--collectors", "cpu,mem"))
check("--collectors cpu,mem records", p.returncode == 0 and "mem.used_bytes" in show(db)["metrics"],
      p.stderr)
done()
