#!/usr/bin/python3
"""Options of 'strobe run' that name things are checked before the job
starts: an unknown collector is one line and exit 125, naming the known ones;
a tag or parameter with an empty value is refused (values are 1 to 200 bytes)."""
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
for flag in ("--tag", "--param"):
    p = strobe("run", "--no-report", flag, "k=", "--", "touch", marker, store=db)
    check(f"{flag} k=: exit 125, one line", p.returncode == 125 and
          len(p.stderr.strip().splitlines()) == 1 and "1 to 200 bytes" in p.stderr,
          f"{p.returncode} {p.stderr!r}")
    check(f"{flag} k=: the job did not start", not os.path.exists(marker))
done()
