#!/usr/bin/env python3
"""The rules end to end: live findings printed once and stored, the same
findings from `strobe rules` offline, other parameters offline, --rules none,
bad options refused before anything is recorded, show's findings."""
import json
import os
import re
import sqlite3

from strobetest import PYTHON, check, done, show, store_path, strobe

# A loop of known shape through strobe's Python API: 20 ms steps, 60 % of
# each spent waiting for data, and every 20th step 10 times longer.
WORKLOAD = r"""
import time, strobe
for i in range(1, 600):
    t = 0.020 * (10 if i % 20 == 0 else 1)
    with strobe.span("data"):
        time.sleep(t * 0.6)
    with strobe.span("forward"):
        time.sleep(t * 0.4)
    strobe.step()
    if time.monotonic() - T0 > SECONDS:
        break
"""


def workload(seconds):
    return ["-c", "import time; T0=time.monotonic(); SECONDS=%s\n" % seconds + WORKLOAD]


def stored(db):
    con = sqlite3.connect(db)
    findings = [dict(zip(("rule", "severity", "start_ns", "end_ns", "scope", "evidence",
                          "events", "recommendation"), r))
                for r in con.execute("SELECT rule, severity, start_ns, end_ns, scope, evidence,"
                                     " events, recommendation FROM findings ORDER BY seq")]
    results = {r[0]: (r[1], r[2]) for r in con.execute(
        "SELECT rule, status, detail FROM rule_results")}
    config = con.execute("SELECT interval_ns, rules, params, mode FROM rule_config").fetchall()
    con.close()
    return findings, results, config


db = store_path("rules.db")
params = ["--rule-param", "StepOutlier.n_outliers=2", "--rule-interval", "4s"]
p = strobe("run", *params, "--", PYTHON, *workload(13), store=db, timeout=120)
check("a run with rules exits 0", p.returncode == 0, p.stderr)
lines = [l for l in p.stderr.splitlines() if "InputBound [" in l]
check("InputBound is announced once while the run goes on", len(lines) == 1, p.stderr)
check("the announcement says why and what to do",
      lines and "waiting for data took" in lines[0] and "->" in lines[0], lines)
check("the closing summary names the findings", "findings: " in p.stderr, p.stderr)

findings, results, config = stored(db)
names = [f["rule"] for f in findings]
check("InputBound and StepOutlier are stored", "InputBound" in names and "StepOutlier" in names,
      names)
check("the settings used are stored with the run",
      config and config[0][0] == 4_000_000_000 and "StepOutlier.n_outliers=2" in config[0][2]
      and config[0][3] == "live", config)
ib = [f for f in findings if f["rule"] == "InputBound"]
if ib:
    share = float(ib[0]["evidence"].split("took ")[1].split(" %")[0])
    check("InputBound's number is the script's 60 % data share (within 5 points)",
          55 <= share <= 65, ib[0]["evidence"])
    check("InputBound carries what the steps showed", ib[0]["events"] and "data" in ib[0]["events"],
          ib[0])
check("GPU rules say n/a without a GPU", results.get("CPUBottleneck", ("",))[0] == "n/a", results)
check("a report rule reports", results.get("OverallFrameworkMetrics", ("",))[0] == "report",
      results)

# offline, with the stored settings: the same findings and verdicts
o = strobe("rules", "--json", "last", store=db)
check("strobe rules exits 0", o.returncode == 0, o.stderr)
off = json.loads(o.stdout) if o.returncode == 0 else {"findings": [], "rules": []}
keys = ("rule", "severity", "start_ns", "end_ns", "scope", "evidence", "events")
check("offline findings equal the live ones, field by field",
      [{k: f[k] for k in keys} for f in off["findings"]] == [{k: f[k] for k in keys}
                                                             for f in findings],
      f"offline {off['findings']}\nlive {findings}")
check("offline verdicts equal the live ones",
      {r["rule"]: (r["status"], r["detail"]) for r in off["rules"]} == results,
      f"offline {[(r['rule'], r['status'], r['detail']) for r in off['rules']]}\nlive {results}")
check("offline reports the interval it used", off.get("interval_s") == 4, off.get("interval_s"))

# show lists them
s = show(db)
check("show --json has the findings with their keys",
      s and len(s["findings"]) == len(findings) and all(
          set(f) >= {"rule", "severity", "start_ns", "end_ns", "scope", "evidence",
                     "recommendation"} for f in s["findings"]), s and s.get("findings"))
t = strobe("show", "last", store=db)
check("show's text lists the findings", "InputBound" in t.stdout and "->" in t.stdout, t.stdout)
# each finding's range, from the run's start, to a tenth of a second (a run under a minute):
# the stored start_ns and end_ns read independently from SQLite
con = sqlite3.connect(db)
run_start = con.execute("SELECT start_ns FROM runs").fetchone()[0]
con.close()
want_ranges = sorted(f"{f['rule']} [{f['scope']}] {(f['start_ns'] - run_start) / 1e9:.1f}-"
                     f"{(f['end_ns'] - run_start) / 1e9:.1f} s" for f in findings)
got_ranges = sorted(re.sub(r"^\s*\w+\s+", "", l) for l in t.stdout.splitlines()
                    if re.search(r"\] [0-9.]+-[0-9.]+ s$", l))
check("show's text gives each finding's range in tenths of a second, as stored",
      got_ranges == want_ranges and want_ranges, f"got {got_ranges}, want {want_ranges}")

# other parameters offline
o2 = strobe("rules", "--json", "--rule-param", "StepOutlier.n_outliers=1000", "last", store=db)
off2 = json.loads(o2.stdout) if o2.returncode == 0 else {"findings": []}
check("a larger n_outliers offline stops StepOutlier",
      "StepOutlier" not in [f["rule"] for f in off2["findings"]], off2["findings"])
o3 = strobe("rules", "--json", "--rules", "InputBound", "last", store=db)
off3 = json.loads(o3.stdout) if o3.returncode == 0 else {"rules": []}
check("--rules LIST evaluates only those", [r["rule"] for r in off3["rules"]] == ["InputBound"],
      off3["rules"])
o6 = strobe("rules", "--rules", "StepOutlier", "--rule-interval", "500ms", "last", store=db)
check("the text gives a window under a second as it is (it said 'windows of 0 s')",
      o6.returncode == 0 and "windows of 0.5 s" in o6.stdout.splitlines()[0], o6.stdout[:200])
o7 = strobe("rules", "--rules", "LowGPUUtilization", "--rule-param", "LowGPUUtilization.patience=1e30",
            "last", store=db)
check("a parameter out of its range is a one-line error, exit 2",
      o7.returncode == 2 and o7.stderr.strip().splitlines() == [
          "strobe: LowGPUUtilization.patience needs a whole number from 0 to 4294967295, not '1e30'"],
      (o7.returncode, o7.stderr))
# a stored value strobe no longer takes: an error that says which, and the
# command line can replace it (in either form)
con = sqlite3.connect(db)
saved = con.execute("SELECT params FROM rule_config WHERE run_id=?", (off["id"],)).fetchone()[0]
con.execute("UPDATE rule_config SET params=? WHERE run_id=?",
            (saved + "CPUBottleneck.threshold=500\n", off["id"]))
con.commit()
o8 = strobe("rules", "--rules", "CPUBottleneck", "last", store=db)
o9 = strobe("rules", "--rules", "CPUBottleneck", "--rule-param", "CPUBottleneck_threshold=50", "last",
            store=db)
con.execute("UPDATE rule_config SET params=? WHERE run_id=?", (saved, off["id"]))
con.commit()
con.close()
check("a stored parameter out of range is named, exit 2",
      o8.returncode == 2 and "CPUBottleneck.threshold" in o8.stderr, (o8.returncode, o8.stderr))
check("and --rule-param replaces it", o9.returncode == 0, (o9.returncode, o9.stderr))
o4 = strobe("rules", "--rule-param", "SageMaker", "last", store=db)
check("a malformed --rule-param is a one-line error, exit 2",
      o4.returncode == 2 and len(o4.stderr.strip().splitlines()) == 1, (o4.returncode, o4.stderr))
for bad in (",", ",,", "none"):
    o = strobe("rules", "--rules", bad, "last", store=db)
    check(f"strobe rules --rules {bad!r} evaluates nothing: a one-line error, exit 2",
          o.returncode == 2 and len(o.stderr.strip().splitlines()) == 1, (o.returncode, o.stderr))
o5 = strobe("rules", "--save", "--rule-param", "InputBound_threshold=90", "last", store=db)
f5, _, c5 = stored(db)
check("--save replaces the stored findings (SageMaker's Rule_param form accepted)",
      o5.returncode == 0 and "InputBound" not in [f["rule"] for f in f5] and c5[0][3] == "offline",
      (o5.returncode, o5.stderr, f5, c5))
lst = strobe("rules", "--list", "--json")
rl = json.loads(lst.stdout) if lst.returncode == 0 else []
check("--list names all 18 rules with their defaults",
      len(rl) == 18 and rl[0]["rule"] == "CPUBottleneck" and rl[0]["params"]["patience"] == 1000,
      rl[:1])

# the same data through SageMaker's format: exported, imported, the same verdicts
sm = store_path("sm")
e = strobe("export", "--format", "sagemaker", "-o", sm, "last", store=db)
i = strobe("import", "sagemaker", sm, store=db)
check("a run exported to SageMaker's format imports again", e.returncode == 0 and
      i.returncode == 0, (e.stderr, i.stderr))
same = ["--rule-param", "InputBound.threshold=30", "--rule-param", "StepOutlier.n_outliers=2"]
imp = json.loads(strobe("rules", "--json", *same,
                        "--rule-interval", "4s", "last", store=db).stdout or "{}")
nat = json.loads(strobe("rules", "--json", *same,
                        "--rule-interval", "4s", findings and off["id"], store=db).stdout or "{}")
def framework_findings(d):
    # the host CPU in the evidence is the mean of the cores after an import,
    # /proc/stat's total line natively: compare what the steps say
    return sorted((f["rule"], f["evidence"].split(" (")[0]) for f in d.get("findings", [])
                  if f["rule"] in ("InputBound", "StepOutlier"))
check("imported SageMaker data fires the same framework rules with the same numbers",
      framework_findings(imp) and framework_findings(imp) == framework_findings(nat),
      f"imported {framework_findings(imp)}\nnative {framework_findings(nat)}")
# windows start at the run's start: the import takes it from the trace
# file's start_time_since_epoch_in_micros, so both runs cut the same windows
check("the imported run starts when the native one did (its rule windows are the same)",
      abs(show(db)["start_ns"] - show(db, off["id"])["start_ns"]) < 1000,
      (show(db)["start_ns"], show(db, off["id"])["start_ns"]))
check("and the same GPU rules say n/a",
      [r["status"] for r in imp.get("rules", []) if r["rule"] == "CPUBottleneck"] == ["n/a"])

# --rules none, and bad options refused before anything is recorded
db2 = store_path("none.db")
p = strobe("run", "--quiet", "--rules", "none", "--", PYTHON, *workload(2), store=db2)
f, r, c = stored(db2)
check("--rules none stores no findings and no verdicts", p.returncode == 0 and not f and not r
      and not c, (p.returncode, f, r, c))
db3 = store_path("bad.db")
for bad in (["--rule-param", "NoSuchRule.x=1"], ["--rule-param", "StepOutlier.stddev=abc"],
            ["--rule-param", "CPUBottleneck.threshold=500"], ["--rule-param", "LowGPUUtilization.window=0"],
            ["--rule-param", "StepOutlier.n_outliers=1e20"],
            ["--rules", "CPUBottleneck,Nope"], ["--rules", ","], ["--rule-interval", "5ms"]):
    p = strobe("run", *bad, "--", "true", store=db3)
    check(f"strobe run {' '.join(bad)} fails before the job: exit 125, one line",
          p.returncode == 125 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr))
check("and records no run", not os.path.exists(db3) or not sqlite3.connect(db3).execute(
    "SELECT count(*) FROM sqlite_master WHERE name='runs'").fetchone()[0]
      or sqlite3.connect(db3).execute("SELECT count(*) FROM runs").fetchone()[0] == 0)

# --quiet: no announcements
db4 = store_path("quiet.db")
p = strobe("run", "--quiet", *params, "--", PYTHON, *workload(9), store=db4)
check("--quiet prints no findings", "InputBound" not in p.stderr, p.stderr)
check("but stores them", "InputBound" in [x["rule"] for x in stored(db4)[0]])
done()
