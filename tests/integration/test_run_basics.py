#!/usr/bin/python3
"""strobe run: exit codes, statuses, signals, bad options, and the read commands."""
import json
import os
import signal
import subprocess
import time

from strobetest import *

db = store_path()

# exit codes and statuses
p = run(db, "sh", "-c", "exit 3")
check("exit code passes through", p.returncode == 3, f"rc={p.returncode} {p.stderr}")
r = show(db)
check("non-zero exit is 'failed'", r["status"] == "failed" and r["exit_code"] == 3, r["status"])

p = run(db, "true", opts=("--name", "ok-run"))
check("exit 0 passes through", p.returncode == 0)
r = show(db, "ok-run")
check("exit 0 is 'finished'", r["status"] == "finished" and r["exit_code"] == 0, r["status"])
check("show --json has stable keys",
      all(k in r for k in ("id", "name", "status", "exit_code", "start_ns", "end_ns", "duration_s",
                           "samples", "bytes_per_sample", "metrics")), sorted(r))
check("start and end are ns UTC", abs(r["start_ns"] / 1e9 - time.time()) < 60 and r["end_ns"] >= r["start_ns"])

p = run(db, PYTHON, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
check("SIGSEGV gives 128+11", p.returncode == 139, f"rc={p.returncode}")
r = show(db)
check("SIGSEGV is 'crashed' with its signal", r["status"] == "crashed" and r["signal"] == 11,
      f"{r['status']} {r['signal']}")

p = run(db, "sh", "-c", "kill -KILL $$")
check("SIGKILL is 'killed', exit 137", p.returncode == 137 and show(db)["status"] == "killed")

# a command that does not exist
p = run(db, "no-such-command-xyz")
check("missing command exits 127", p.returncode == 127, f"rc={p.returncode}")
lines = [l for l in p.stderr.splitlines() if l.strip()]
check("missing command: one-line error", len(lines) == 1 and "cannot run 'no-such-command-xyz'" in lines[0],
      repr(p.stderr))
r = show(db)
check("missing command: run recorded as failed", r["status"] == "failed" and r["exit_code"] == 127
      and "No such file" in (r["error"] or ""), json.dumps({k: r[k] for k in ("status", "exit_code", "error")}))

# without --quiet too: the one line, no notes about what the run would have
# lacked, and no report for a run that never started
reports = os.path.join(os.path.dirname(db), "reports")
before = set(os.listdir(reports)) if os.path.isdir(reports) else set()
p = strobe("run", "--", "no-such-command-xyz", store=db)
lines = [l for l in p.stderr.splitlines() if l.strip()]
check("missing command, not quiet: exit 127 and one line on stderr",
      p.returncode == 127 and len(lines) == 1 and "cannot run 'no-such-command-xyz'" in lines[0],
      repr(p.stderr))
after = set(os.listdir(reports)) if os.path.isdir(reports) else set()
check("missing command: no report written", after == before, sorted(after - before))
p = strobe("run", "--", "true", store=db)
check("a command that starts still gets its notes and its report",
      p.returncode == 0 and "report: " in p.stderr and "see 'strobe show" in p.stderr, p.stderr)

# signals sent to strobe reach the job
proc = subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--name", "sig", "--",
                         PYTHON, "-c",
                         "import signal, sys, time\n"
                         "signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))\n"
                         "print('ready', flush=True)\n"
                         "time.sleep(30)\n"], stdout=subprocess.PIPE, text=True)
proc.stdout.readline()
proc.send_signal(signal.SIGTERM)
try:
    rc = proc.wait(timeout=20)
except subprocess.TimeoutExpired:
    # seen once in CI and not since: say where everything stood, then fail
    rc = None
    for pid in [proc.pid] + [int(c) for c in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()]:
        st = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open(f"/proc/{pid}/status")}
        print(f"# pid {pid} {st.get('Name')} {st.get('State')} SigPnd {st.get('SigPnd')} "
              f"ShdPnd {st.get('ShdPnd')} SigBlk {st.get('SigBlk')} SigCgt {st.get('SigCgt')} "
              f"wchan {open(f'/proc/{pid}/wchan').read()}")
    proc.kill()
    proc.wait()
check("SIGTERM is forwarded to the job (its handler exits 42)", rc == 42, f"rc={rc}")

# strobe's starter may ignore SIGINT (an async command of a shell): the job
# would inherit that, as it would without strobe; here it is the default
proc = subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--", "sleep", "30"],
                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
time.sleep(0.5)
proc.send_signal(signal.SIGINT)
rc = proc.wait(timeout=20)
check("SIGINT from kill(1) is forwarded: exit 130, killed", rc == 130 and show(db)["status"] == "killed",
      f"rc={rc}")
proc = subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--", "sleep", "30"])
time.sleep(0.5)
proc.send_signal(signal.SIGHUP)
rc = proc.wait(timeout=20)
check("SIGHUP is forwarded: exit 129", rc == 129, f"rc={rc}")

# a run still recording cannot be removed under its recorder
proc = subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--name", "busy", "--", "sleep", "3"])
time.sleep(1.2)
p = strobe("rm", "busy", store=db)
check("rm of a run still recording is refused in one line", p.returncode == 1 and
      "still recording" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr)
proc.wait(timeout=20)
check("that run then finishes normally", show(db, "busy")["status"] == "finished")
p = run(db, PYTHON, "-m", "json.tool", "--help")
check("python -m MODULE is named after the module", show(db)["name"] == "json.tool", show(db)["name"])

# options
for bad in ("0.5ms", "61s", "abc", "-1s", "10xs"):
    p = strobe("run", "--interval", bad, "--", "true", store=db)
    check(f"--interval {bad} is refused with one line", p.returncode == 125 and
          len(p.stderr.strip().splitlines()) == 1, f"rc={p.returncode} {p.stderr!r}")
for good, n in (("1ms", None), ("50ms", None), ("1s", None), ("60s", None)):
    p = strobe("run", "--quiet", "--interval", good, "--", "true", store=db)
    check(f"--interval {good} is accepted", p.returncode == 0, p.stderr)
p = strobe("run", "--name", "bad\nname", "--", "true", store=db)
check("a run name with a newline is refused with one line that says why", p.returncode == 125
      and p.stderr == "strobe: invalid run name: must not contain control characters "
      "(byte 0x0a at 3)\n", repr(p.stderr))
p = strobe("run", "--tag", "k=a\x1bb", "--", "true", store=db)
check("a tag value with an escape is refused, naming the flag", p.returncode == 125 and
      p.stderr.startswith("strobe: invalid --tag: must not contain control characters"),
      repr(p.stderr))
p = strobe("run", "--name", "x" * 201, "--", "true", store=db)
check("a 201-byte run name is refused", p.returncode == 125)
hostile = "r'; DROP TABLE runs; -- \"é\""
p = run(db, "true", opts=("--name", hostile, "--tag", "k=v 1", "--param", "lr=0.1", "--experiment", "exp 1"))
r = show(db, hostile)
check("a hostile name is stored verbatim", r["name"] == hostile and r["params"] == {"lr": "0.1"}
      and r["tags"] == {"k": "v 1"} and r["experiment"] == "exp 1", json.dumps(r)[:300])
p = strobe("run", "--", store=db)
check("no command: usage error", p.returncode == 125)

# ls, show by prefix, rm
p = strobe("ls", "--json", store=db)
runs = json.loads(p.stdout)
check("ls --json lists every run", p.returncode == 0 and len(runs) >= 10, f"{len(runs)}")
check("ls is newest first", all(runs[i]["start_ns"] >= runs[i + 1]["start_ns"] for i in range(len(runs) - 1)))
rid = runs[0]["id"]
check("show accepts an id prefix", show(db, rid[:6])["id"] == rid)
p = strobe("show", "nope-never", store=db)
check("show of an unknown run: one line, exit 1", p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1,
      p.stderr)
p = strobe("ls", "--json", "--experiment", "exp 1", store=db)
check("ls --experiment filters", [x["name"] for x in json.loads(p.stdout)] == [hostile], p.stdout[:200])
def ls_json(*args):
    p = strobe("ls", "--json", *args, store=db)
    return json.loads(p.stdout) if p.returncode == 0 else None


for st in ("failed", "crashed,killed"):
    want = [x["id"] for x in runs if x["status"] in st.split(",")]
    check(f"ls --status {st}: exactly the runs of that status, in order",
          want and [x["id"] for x in ls_json("--status", st)] == want, want)
check("ls --name GLOB matches as the shell does",
      [x["id"] for x in ls_json("--name", "ok-*")] == [x["id"] for x in runs if x["name"] == "ok-run"])
check("ls -n 3: the three newest", [x["id"] for x in ls_json("-n", "3")] == [x["id"] for x in runs[:3]])
check("ls -n after the filters: the newest failed run",
      [x["id"] for x in ls_json("--status", "failed", "-n", "1")] ==
      [x["id"] for x in runs if x["status"] == "failed"][:1])
for bad in (("--status", "done"), ("-n", "-1"), ("-n", "x")):
    p = strobe("ls", *bad, store=db)
    check(f"ls {' '.join(bad)}: one line, exit 2", p.returncode == 2 and
          len(p.stderr.strip().splitlines()) == 1 and not p.stdout, (p.returncode, p.stderr))
p = strobe("rm", "ok-run", store=db)
check("rm removes a run", p.returncode == 0 and strobe("show", "ok-run", store=db).returncode == 1, p.stderr)
# rm by filter: a store of its own, two experiments, a failed run among them
rdb = store_path("rm-filter.db")
for name, exp, cmd in (("keep-a", "e1", "true"), ("drop-b", "e1", "false"),
                       ("keep-c", "e2", "false"), ("drop-d", "e1", "true")):
    strobe("run", "--quiet", "--no-report", "--name", name, "--experiment", exp, "--", cmd,
           store=rdb)
names = lambda: sorted(x["name"] for x in json.loads(strobe("ls", "--json", store=rdb).stdout))
p = strobe("rm", "--dry-run", "--experiment", "e1", "--name", "drop-*", store=rdb)
check("rm --dry-run with filters says what it would remove and removes nothing",
      p.returncode == 0 and sorted(l.split("'")[1] for l in p.stdout.splitlines()) ==
      ["drop-b", "drop-d"] and all(l.startswith("would remove run ") for l in p.stdout.splitlines())
      and names() == ["drop-b", "drop-d", "keep-a", "keep-c"], (p.stdout, names()))
p = strobe("rm", "--experiment", "e1", "--status", "failed", store=rdb)
check("rm --experiment e1 --status failed removes exactly e1's failed run",
      p.returncode == 0 and names() == ["drop-d", "keep-a", "keep-c"], (p.stdout, names()))
p = strobe("rm", "--name", "nothing-*", store=rdb)
check("rm with filters that match nothing: a note, exit 0, nothing removed",
      p.returncode == 0 and "no run matches" in p.stderr and len(names()) == 3, p.stderr)
for bad, why in ((("drop-d", "--status", "failed"), "RUNs and filters"),
                 ((), "neither"), (("--status", "gone"), "a bad status")):
    p = strobe("rm", *bad, store=rdb)
    check(f"rm with {why}: exit 2, nothing removed", p.returncode == 2 and len(names()) == 3,
          (p.returncode, p.stderr))
p = strobe("ls", store=os.path.join(TMP, "missing.db"))
check("ls of a missing store: one line, exit 1, no file created",
      p.returncode == 1 and not os.path.exists(os.path.join(TMP, "missing.db")), p.stderr)
env = dict(os.environ, STROBE_STORE=db)
p = subprocess.run([STROBE, "ls", "--json"], capture_output=True, text=True, env=env)
check("STROBE_STORE selects the store", p.returncode == 0 and len(json.loads(p.stdout)) == len(runs) - 1)

# export formats
p = strobe("export", "--format", "csv", "--metric", "cpu.util", "sig", store=db)
rows = p.stdout.splitlines()
check("export csv has a header and rows", p.returncode == 0 and rows[0] == "time_ns,metric,value" and len(rows) > 3,
      p.stdout[:200])
# every --metric counts, however many (the 65th and later were dropped)
many = [a for i in range(70) for a in ("--metric", f"nothing.{i}")]
p = strobe("export", "--format", "csv", *many, "--metric", "cpu.util", "sig", store=db)
check("export: the 71st --metric still selects its series", p.returncode == 0 and
      p.stdout.splitlines() == rows, (p.returncode, p.stdout[:200], p.stderr))
check("export: each --metric that matches no series is one warning (70 here), the rest exported",
      p.stderr.count("matches no series") == 70 and len(p.stderr.splitlines()) == 70 and
      "'nothing.69'" in p.stderr, p.stderr[-300:])
p = strobe("export", "--format", "csv", "--metric", "cpu.utl", "sig", store=db)
check("export: a misspelt --metric says so (exit 0, the header only)",
      p.returncode == 0 and p.stdout == "time_ns,metric,value\n" and
      p.stderr.strip().endswith("--metric 'cpu.utl' matches no series of run " + show(db, "sig")["id"]),
      (p.returncode, p.stdout[:100], p.stderr))
p = strobe("export", "--format", "xml", "sig", store=db)
check("export of an unknown format is refused", p.returncode == 2)
done()
