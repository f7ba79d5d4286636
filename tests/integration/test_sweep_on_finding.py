#!/usr/bin/python3
"""A sweep's workloads act on findings (issue 26, point 5): a workload's
on_finding, with the rules and window it names, is strobe run's
--on-finding. A job that spends 60 % of each step in "data" fires InputBound
in its first 1 s window; with InputBound=stop it is stopped (it would run a
minute), recorded "stopped" with the finding, and the campaign goes on: the
next workload, whose on_finding is emptied, runs to its end. A rule that
does not exist is refused before anything starts."""
import json
import os
import time

from strobetest import PYTHON, TMP, check, done, strobe

JOB = r"""
import sys, time, strobe
T0 = time.monotonic()
while time.monotonic() - T0 < float(sys.argv[1]):
    with strobe.span("data"):
        time.sleep(0.012)
    with strobe.span("forward"):
        time.sleep(0.008)
    strobe.step()
"""

db = os.path.join(TMP, "s.db")
with open(os.path.join(TMP, "job.py"), "w") as f:
    f.write(JOB)
spec = os.path.join(TMP, "stop.yaml")
with open(spec, "w") as f:
    f.write(f"""experiment: onfinding
command: "{PYTHON} job.py {{s}}"
rules: InputBound
rule_interval: 1s
on_finding: InputBound=stop
workloads:
  - workload: long
    parameters: {{s: {{value: 60}}}}
  - workload: short
    parameters: {{s: {{value: 2}}}}
    on_finding: []
""")

t0 = time.monotonic()
p = strobe("sweep", "-q", "--store", db, spec, timeout=120)
took = time.monotonic() - t0
check("the campaign goes on after a stop: exit 0", p.returncode == 0, p.stderr)
check(f"the 60 s job was stopped early ({took:.1f} s for both)", took < 30, took)

st = json.loads(strobe("sweep", "status", "--json", "--store", db, "onfinding").stdout)
by = {w["name"]: w for w in st["workloads"]}
check("the stopped workload reads stopped", by["long"]["status"] == "stopped", by["long"])
check("the next workload ran to its end", by["short"]["status"] == "finished", by["short"])

run = json.loads(strobe("show", "--json", "--store", db, by["long"]["runs"][0]).stdout)
check("its run is stopped, by InputBound",
      run["status"] == "stopped" and (run.get("stopped_by") or {}).get("rule") == "InputBound",
      {k: run.get(k) for k in ("status", "stopped_by")})
check("the finding is stored with the run",
      "InputBound" in [f["rule"] for f in run.get("findings", [])], run.get("findings"))
short = json.loads(strobe("show", "--json", "--store", db, by["short"]["runs"][0]).stdout)
check("the emptied on_finding took no action on the same finding",
      short["status"] == "finished" and not short.get("stopped_by"),
      {k: short.get(k) for k in ("status", "stopped_by")})

bad = os.path.join(TMP, "bad.yaml")
with open(bad, "w") as f:
    f.write("experiment: bad\ncommand: true\non_finding: NoSuchRule=stop\n")
p = strobe("sweep", "--store", os.path.join(TMP, "bad.db"), bad)
check("an unknown rule in on_finding: exit 2, one line, before anything starts",
      p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "NoSuchRule" in p.stderr,
      p.stderr)
check("nothing ran for the bad file",
      strobe("ls", "--json", "--store", os.path.join(TMP, "bad.db")).stdout.strip() in ("", "[]"),
      "")
done()
