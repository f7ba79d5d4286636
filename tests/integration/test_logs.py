#!/usr/bin/python3
"""What strobe run keeps about a run beyond its metrics (issue 7): the job's
stdout and stderr passed on unchanged and kept (the start and the end of
long output, with a note), a terminal still a terminal to the job, a closed
reader still a SIGPIPE, a killed recorder no break in the job's output;
--workload, and a Python script's own --key value arguments as parameters;
the package list and lscpu kept with the run."""
import os
import signal
import sqlite3
import subprocess
import time

from strobetest import *

db = store_path("logs.db")


def texts(run_id):
    con = sqlite3.connect(db)
    rows = {k: (b, t) for k, b, t in con.execute(
        "SELECT kind, bytes, text FROM run_texts WHERE run_id=?", (run_id,))}
    con.close()
    return rows


# ---- stdout and stderr pass through, and are kept --------------------------
JOB = r"""
import sys
for i in range(1000):
    print(f"out {i}")
    if i % 100 == 0:
        print(f"err {i}", file=sys.stderr)
sys.exit(3)
"""
want_out = "".join(f"out {i}\n" for i in range(1000))
want_err = "".join(f"err {i}\n" for i in range(0, 1000, 100))
p = run(db, PYTHON, "-c", JOB, opts=("--no-report",))
check("the job's exit status is strobe run's", p.returncode == 3, p.returncode)
check("its stdout passes through unchanged", p.stdout == want_out, p.stdout[-200:])
check("its stderr passes through unchanged", want_err in p.stderr, p.stderr[-300:])
r = show(db)
t = texts(r["id"])
check("stdout is kept, byte for byte", t.get("stdout") == (len(want_out), want_out),
      (t.get("stdout") or ("?", ""))[0])
check("stderr is kept, byte for byte", t.get("stderr") == (len(want_err), want_err),
      t.get("stderr"))
o = strobe("logs", "last", store=db)
check("strobe logs prints the stdout", o.returncode == 0 and o.stdout == want_out, o.stderr)
o = strobe("logs", "--stderr", "last", store=db)
check("strobe logs --stderr prints the stderr", o.returncode == 0 and o.stdout == want_err,
      o.stderr)
o = strobe("logs", "--list", "last", store=db)
check("strobe logs --list names what is kept",
      all(k in o.stdout for k in ("stdout", "stderr", "packages", "lscpu")), o.stdout)
o = strobe("logs", "--kind", "nvidia-smi", "last", store=db)
check("a text that is not there: one line, exit 1",
      o.returncode == 1 and o.stderr.count("\n") == 1 and "no nvidia-smi" in o.stderr, o.stderr)

# ---- long output: the first 256 KiB and the last 768 KiB, a note between ---
BIG = r"""
import sys
line = "%07d " + "x" * 91 + "\n"  # 100 bytes
for i in range(30000):
    sys.stdout.write(line % i)
"""
p = run(db, PYTHON, "-c", BIG, opts=("--no-report",))
total = 30000 * 100
check("3 MB of output pass through whole", p.returncode == 0 and len(p.stdout) == total,
      len(p.stdout))
bytes_, kept = texts(show(db)["id"]).get("stdout", (0, ""))
check("the stored size is everything written", bytes_ == total, bytes_)
head, _, rest = kept.partition("\n[strobe: ")
note, _, tail = rest.partition("]\n")
check("the first 256 KiB are kept", head == p.stdout[:256 * 1024], len(head))
check("the last 768 KiB are kept", tail == p.stdout[-768 * 1024:], len(tail))
check("the note says how much was cut",
      note.startswith(f"{total - 1024 * 1024} bytes cut here"), note[:80])

# ---- a terminal stays a terminal to the job ---------------------------------
TTY = "import sys; print('tty', sys.stdout.isatty(), sys.stderr.isatty()); print('a\\nb')"
p = subprocess.run(["script", "-qec", f"{STROBE} run --quiet --no-report --store {db} -- "
                    f"{PYTHON} -c \"{TTY}\"", "/dev/null"], capture_output=True, text=True,
                   timeout=60)
check("under a terminal the job still sees one (stdout and stderr)",
      "tty True True" in p.stdout, p.stdout[-300:])
out = texts(show(db)["id"]).get("stdout", (0, ""))[1]
check("and what it printed is kept without the terminal's \\r\\n", out == "tty True True\na\nb\n",
      repr(out))

# ---- a reader that goes away: the job gets SIGPIPE, as without strobe ---------
p = subprocess.run(f"{STROBE} run --quiet --no-report --store {db} -- {PYTHON} -c "
                   "\"while True: print('y' * 100)\" | head -c 1000 >/dev/null; "
                   "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                   capture_output=True, text=True, timeout=60)
code = int(p.stdout.strip() or -1)
check("a job whose reader stops ends (SIGPIPE or BrokenPipeError) instead of hanging",
      code in (1, 120, 128 + signal.SIGPIPE), (code, p.stderr[-300:]))

# ---- the recorder killed: the job's output goes on --------------------------
out_file = os.path.join(TMP, "after-kill.txt")
LATE = r"""
import time, sys
print("before", flush=True)
time.sleep(1.5)
print("after the recorder died", flush=True)
"""
with open(out_file, "w") as f:
    rec = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", f"--store={db}", "--",
                            PYTHON, "-c", LATE], stdout=f, stderr=subprocess.DEVNULL)
    wait_for(lambda: "before" in open(out_file).read(), timeout=20)
    rec.kill()
    rec.wait()
    wait_for(lambda: "after" in open(out_file).read(), timeout=10)
check("kill -9 of the recorder: the job's later output still arrives",
      open(out_file).read() == "before\nafter the recorder died\n", open(out_file).read())

# ---- --no-logs ----------------------------------------------------------------
p = run(db, PYTHON, "-c", "print('hi')", opts=("--no-report", "--no-logs"))
t = texts(show(db)["id"])
check("--no-logs: the output passes, nothing is kept",
      p.stdout == "hi\n" and "stdout" not in t and "stderr" not in t, sorted(t))

# ---- workload, parameters from the script's arguments, environment ----------
script = os.path.join(TMP, "args.py")
with open(script, "w") as f:
    f.write("import sys; print(sys.argv[1:])\n")
p = run(db, PYTHON, "-u", script, "--lr", "0.1", "--batch-size=64", "--fixed", "--name", "x y",
        "pos", opts=("--no-report", "--experiment", "sweep", "--workload", "bs64",
                     "--param", "lr=0.5", "--param", "seed=7"))
r = show(db)
check("--workload is recorded", r.get("workload") == "bs64", r.get("workload"))
check("the script's --key value arguments are parameters; --param wins",
      r["params"] == {"lr": "0.5", "seed": "7", "batch-size": "64", "fixed": "true",
                      "name": "x y"}, r["params"])
ls = json.loads(strobe("ls", "--json", "--workload", "bs64", store=db).stdout)
check("strobe ls --workload lists that workload's runs",
      [x["id"] for x in ls] == [r["id"]] and ls[0]["workload"] == "bs64", ls)
t = texts(r["id"])
pk = t.get("packages", (0, ""))[1]
check("the interpreter's packages are kept (name==version lines)",
      "psutil==" in pk and all("==" in line for line in pk.splitlines()), pk[:200])
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
check("lscpu is kept as lscpu prints it",
      t.get("lscpu", (0, ""))[1].splitlines()[:3] == lscpu.splitlines()[:3],
      t.get("lscpu", (0, ""))[1][:200])
p = run(db, PYTHON, "-c", "print(1)", "--not", "a-param", opts=("--no-report",))
check("python -c has no script arguments to take", show(db)["params"] == {}, show(db)["params"])
done()
