#!/usr/bin/python3
"""strobe run --on-finding RULE=ACTION, on real processes: a job that waits
on its data (InputBound fires in its first 1 s window, judged 2 s later)
and would run a minute;

- stop ends it (SIGTERM, exit 143), the run is `stopped`, the finding and
  the action stored; a job that ignores SIGTERM gets SIGKILL after
  --stop-grace (exit 137);
- signal:USR1 reaches a job that traps it, and the run finishes;
- exec: gets the finding as JSON on stdin, with STROBE_RUN_ID and
  STROBE_RULE; a command that hangs stalls neither the sampling nor the
  end of the run, and one that fails is one warning;
- a bad rule, action or signal is one line, exit 125, and no run;
- strobe show names the action that stopped the run and lists every
  action, in text and in --json."""
import json
import os
import re
import signal
import sqlite3
import time

from strobetest import PYTHON, TMP, check, done, show, store_path, strobe

# InputBound: 60 % of each 20 ms step in a "data" span
JOB = r"""
import os, signal, sys, time, strobe
if "ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if len(sys.argv) > 2:
    def usr1(signo, frame):
        with open(sys.argv[2], "w") as f:
            f.write("USR1\n")
    signal.signal(signal.SIGUSR1, usr1)
T0 = time.monotonic()
while time.monotonic() - T0 < float(sys.argv[1]):
    with strobe.span("data"):
        time.sleep(0.012)
    with strobe.span("forward"):
        time.sleep(0.008)
    strobe.step()
"""
RULES = ("--no-report", "--rules", "InputBound", "--rule-interval", "1s")


def job(seconds, *extra):
    return [PYTHON, "-c", JOB, str(seconds), *extra]


def record(db, *opts, cmd):
    """strobe run; (CompletedProcess, seconds it took)."""
    t0 = time.monotonic()
    p = strobe("run", *RULES, *opts, "--", *cmd, store=db, timeout=90)
    return p, time.monotonic() - t0


def actions(db, ref="last"):
    p = strobe("logs", "--kind", "actions", ref, store=db)
    return json.loads(p.stdout) if p.returncode == 0 else []


def tmp(name):
    return os.path.join(TMP, name)


# ---- stop, and exec: with the finding on its stdin --------------------------
db = store_path("on-finding.db")
got, env_got = tmp("finding.json"), tmp("finding.env")
p, took = record(db, "--on-finding", "InputBound=stop", "--on-finding",
                 f"*=exec:cat > {got}; echo \"$STROBE_RUN_ID $STROBE_RULE\" > {env_got}",
                 cmd=job(60))
check("stop: the job is ended by SIGTERM: exit 143", p.returncode == 143, (p.returncode, p.stderr))
check("stop: well before its minute", took < 30, took)
r = show(db)
check("stop: the run is 'stopped', signal 15", r["status"] == "stopped" and r["signal"] == 15,
      (r["status"], r["signal"]))
check("stop: the finding is stored", [f["rule"] for f in r["findings"]] == ["InputBound"],
      r["findings"])
acts = actions(db)
stops = [a for a in acts if a["action"] == "stop"]
check("stop: the action is kept with the run, as the one that stopped it",
      len(stops) == 1 and stops[0]["rule"] == "InputBound" and stops[0]["stopped_run"]
      and stops[0]["ok"] and "SIGTERM" in stops[0]["result"], acts)
check("stop: each action is one line on stderr",
      sum("on-finding InputBound [node]: " in l for l in p.stderr.splitlines()) == 2, p.stderr)
check("show --json: stopped_by names the finding",
      r.get("stopped_by") and r["stopped_by"]["rule"] == "InputBound"
      and r["stopped_by"]["scope"] == "node" and r["stopped_by"]["at_ns"] == stops[0]["at_ns"]
      if stops else False, r.get("stopped_by"))
check("show --json: actions lists both, as kept",
      [a["action"] for a in r.get("actions", [])] == [a["action"] for a in acts]
      and r["actions"] == acts, (r.get("actions"), acts))
said = strobe("show", "last", store=db).stdout
check("show: the status says by what", "status    stopped (signal 15) by InputBound [node]" in said,
      said[:300])
check("show: the actions are listed", "actions   2 (run --on-finding)" in said
      and re.search(r"^  \+\S+ +InputBound \[node\] stop: SIGTERM to pid \d+", said, re.M)
      and re.search(r"^  \+\S+ +InputBound \[node\] exec: pid \d+ started", said, re.M), said)
p = strobe("ls", "--json", "--status", "stopped", store=db)
check("ls --status stopped lists it",
      p.returncode == 0 and [x["id"] for x in json.loads(p.stdout)] == [r["id"]], p.stdout)

ok = False
for _ in range(50):  # the command may still be writing when strobe exits
    if os.path.exists(env_got) and os.path.getsize(env_got):
        break
    time.sleep(0.1)
try:
    with open(got) as f:
        finding = json.load(f)
    ok = True
except (OSError, ValueError) as e:
    finding = {"error": str(e)}
check("exec: stdin is one JSON object", ok, finding)
want = ("run_id", "rule", "severity", "scope", "start_ns", "end_ns", "start", "end", "evidence",
        "recommendation")
check("exec: it has the run, the rule and the finding's fields",
      all(k in finding for k in want) and finding.get("run_id") == r["id"]
      and finding.get("rule") == "InputBound" and finding.get("severity") == "high"
      and finding.get("scope") == "node", finding)
stored = r["findings"][0] if r["findings"] else {}
# the stored finding is the same one, grown by the windows it fired in after
check("exec: it is the stored finding when it first fired",
      finding.get("start_ns") == stored.get("start_ns")
      and finding.get("start_ns", 0) < finding.get("end_ns", 0) <= stored.get("end_ns", 0)
      and "waiting for data took" in finding.get("evidence", ""), (finding, stored))
start_iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stored.get("start_ns", 0) // 10**9))
check("exec: start is also ISO 8601 UTC", str(finding.get("start", "")).startswith(start_iso)
      and str(finding.get("start", "")).endswith("Z"), (finding.get("start"), start_iso))
try:
    with open(env_got) as f:
        env_line = f.read().split()
except OSError:
    env_line = []
check("exec: STROBE_RUN_ID and STROBE_RULE are set", env_line == [r["id"], "InputBound"], env_line)

# ---- a job that ignores SIGTERM ----------------------------------------------
p, took = record(db, "--on-finding", "InputBound=stop", "--stop-grace", "1s",
                 cmd=job(60, "ignore-term"))
check("stop: a job that ignores SIGTERM gets SIGKILL after --stop-grace: exit 137",
      p.returncode == 137 and took < 30, (p.returncode, took, p.stderr))
r = show(db)
check("stop: that run is 'stopped' too, signal 9", r["status"] == "stopped" and r["signal"] == 9,
      (r["status"], r["signal"]))
check("stop: the SIGKILL is said and kept",
      "SIGKILL" in p.stderr and any("still running after 1.0s: SIGKILL" in a["result"] for a in actions(db)),
      (p.stderr, actions(db)))

# ---- signal:USR1, a hanging exec, a failing exec ---------------------------------
marker, pidfile = tmp("usr1"), tmp("hang.pid")
p, took = record(db, "--on-finding", "InputBound=signal:USR1", "--on-finding",
                 f"InputBound=exec:echo $$ > {pidfile}; exec sleep 300", "--on-finding",
                 "all=exec:exit 3", cmd=job(8, marker))
try:
    with open(pidfile) as f:
        os.kill(int(f.read()), signal.SIGKILL)
except (OSError, ValueError):
    pass
check("signal: the run finishes normally, exit 0", p.returncode == 0, (p.returncode, p.stderr))
check("signal: USR1 reached the job's handler", os.path.exists(marker))
r = show(db)
check("signal: the run is 'finished', stopped by nothing",
      r["status"] == "finished" and r["stopped_by"] is None, (r["status"], r.get("stopped_by")))
acts = actions(db)
check("signal: the action is kept", any(a["action"] == "signal" and a["ok"] and
                                        "SIGUSR1 to pid" in a["result"] for a in acts), acts)
check("exec: a hanging command does not hold up the end of the run", took < 20, took)
check("exec: nor the sampling: samples every 100 ms, none missed",
      r["samples"] >= 0.9 * r["duration_s"] * 10 and r["missed"] <= 2,
      (r["samples"], r["duration_s"], r["missed"]))
warned = [l for l in p.stderr.splitlines() if "warning" in l and "exited 3" in l]
check("exec: a command that fails is one warning", len(warned) == 1, p.stderr)
check("exec: the hanging one is said to be left running",
      any("still runs" in l for l in p.stderr.splitlines()), p.stderr)

# ---- an actions text another tool wrote ------------------------------------------
# show reads it as outside input: an element that is no action is left out
con = sqlite3.connect(db)
con.execute("UPDATE run_texts SET text = ? WHERE run_id = ? AND kind = 'actions'",
            ('[1, {"rule": "\\u001b[2J", "action": "stop", "at_ns": 5, "stopped_run": true},'
             ' {"rule": "X"}]', r["id"]))
con.commit()
con.close()
r = show(db)
check("show --json: a foreign actions text keeps only what is an action",
      [a["rule"] for a in r["actions"]] == ["\u001b[2J"] and r["stopped_by"]["at_ns"] == 5,
      r["actions"])
p = strobe("show", "last", store=db)
check("show: its text is printed terminal-safe", p.returncode == 0 and "\\x1b[2J" in p.stdout
      and "\x1b" not in p.stdout, p.stdout[:400])
con = sqlite3.connect(db)
con.execute("UPDATE run_texts SET text = 'not json' WHERE run_id = ? AND kind = 'actions'",
            (r["id"],))
con.commit()
con.close()
r = show(db)
check("show --json: an actions text that is not JSON is none",
      r["actions"] == [] and r["stopped_by"] is None, r["actions"])

# ---- errors before the job starts ----------------------------------------------
bad_db = store_path("on-finding-bad.db")
for spec, why in (("NoSuchRule=stop", "unknown rule"), ("InputBound=reboot", "not an action"),
                  ("InputBound=signal:BOGUS", "not a signal"),
                  ("InputBound=signal:99999", "not a signal")):
    p = strobe("run", "--on-finding", spec, "--", "touch", tmp("ran"), store=bad_db)
    check(f"--on-finding {spec}: one line, exit 125, no run", p.returncode == 125
          and len(p.stderr.strip().splitlines()) == 1 and why in p.stderr
          and not os.path.exists(bad_db) and not os.path.exists(tmp("ran")),
          (p.returncode, p.stderr))
p = strobe("run", "--rules", "StepOutlier", "--on-finding", "InputBound=stop", "--", "true",
           store=bad_db)
check("--on-finding of a rule --rules leaves out: one line, exit 125",
      p.returncode == 125 and len(p.stderr.strip().splitlines()) == 1
      and not os.path.exists(bad_db), (p.returncode, p.stderr))
done()
