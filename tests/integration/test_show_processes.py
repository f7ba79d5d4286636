#!/usr/bin/python3
"""strobe show's busiest processes count and rank every process, however many
there are: the list once held 4096, said "4096 seen" of a run with more and
left the busiest of the rest out. A synthetic run (bench/rules_synth
--procs) has 4200 processes with a proc.cpu series each, the k-th at
(k + 1) / 100 % of a core, so the busiest are the last ones, past the 4096th."""
import os
import re
import subprocess

from strobetest import *

BUILD = os.environ.get("STROBE_BUILD", os.path.dirname(os.path.abspath(STROBE)))
SYNTH = os.path.join(BUILD, "bench", "rules_synth")
PROCS = 4200

db = store_path("procs.db")
p = subprocess.run([SYNTH, "--store", db, "--hours", "0.002", "--steps", "20", "--procs",
                    str(PROCS), "--name", "procs"], capture_output=True, text=True, timeout=120)
check("rules_synth writes the run", p.returncode == 0, p.stderr[-500:])

r = show(db, "procs")
per_proc = [k for k in r["metrics"] if k.startswith("proc.cpu{pid=")]
check(f"show --json has all {PROCS} processes' proc.cpu", len(per_proc) == PROCS, len(per_proc))

t = strobe("show", "procs", store=db)
check("show exits 0", t.returncode == 0, t.stderr[-500:])
m = re.search(r"^busiest processes \((\d+) seen\)$", t.stdout, re.M)
check(f"it says {PROCS} seen", m and int(m.group(1)) == PROCS, m and m.group(0))
section = t.stdout[m.end():].split("\n\n")[0].splitlines()[2:] if m else []
pids = [int(l.split()[0]) for l in section if l.split() and l.split()[0].isdigit()]
want = [100000 + PROCS - 1 - i for i in range(10)]
check("it lists the ten busiest, the last ten of 4200, busiest first", pids == want, pids)
done()
