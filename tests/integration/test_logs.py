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
import threading
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

# ---- checkpoints: a running job's output is in the store, and stays there
# when the recorder is killed. The job writes a stream whose byte at position
# p is known from p alone: numbered 100-byte lines, 100000 of them, over and
# over (the numbers are unique within 10 MB, more than the 1 MiB kept).
STREAM = r"""
import sys, time
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
block = "".join("%07d " % i + "y" * 91 + "\n" for i in range(100000)).encode()
out = sys.stdout.buffer
sent, t0 = 0, time.monotonic()
while time.monotonic() - t0 < seconds:
    due = int(rate * (time.monotonic() - t0)) - sent
    while due > 0:
        off = sent % len(block)
        n = min(due, len(block) - off, 1 << 16)
        out.write(block[off:off + n])
        sent += n
        due -= n
    out.flush()
    time.sleep(0.005)
"""
BLOCK = "".join("%07d " % i + "y" * 91 + "\n" for i in range(100000))


def stream_bytes(start, end):
    """The job's bytes [start, end)."""
    out = []
    while start < end:
        off = start % len(BLOCK)
        n = min(end - start, len(BLOCK) - off)
        out.append(BLOCK[off:off + n])
        start += n
    return "".join(out)


def stored_stdout(con, name):
    try:
        row = con.execute("SELECT r.status, t.bytes, t.text FROM runs r JOIN run_texts t "
                          "ON t.run_id = r.id AND t.kind = 'stdout' WHERE r.name = ?",
                          (name,)).fetchone()
    except sqlite3.OperationalError:  # the recorder has not made the schema yet
        row = None
    return row or (None, 0, "")


def checkpointed(name, rate, seconds, until):
    """Record the stream, wait for a checkpoint that until() accepts, kill -9
    the recorder: (the checkpoint seen while running, strobe logs then, what
    the store holds after the kill)."""
    path = store_path(f"logs-{name}.db")
    rec = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--name", name,
                            f"--store={path}", "--", PYTHON, "-c", STREAM, str(rate),
                            str(seconds)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    seen, o, after = (None, 0, ""), None, (None, 0, "")
    try:
        wait_for(lambda: os.path.exists(path), timeout=10)
        con = sqlite3.connect(path, timeout=5)
        wait_for(lambda: until(stored_stdout(con, name)), timeout=seconds - 2)
        seen = stored_stdout(con, name)
        if seen[1]:
            o = strobe("logs", name, store=path)
        rec.kill()
        rec.wait()
        after = stored_stdout(con, name)
        con.close()
    finally:
        if rec.poll() is None:
            rec.kill()
        subprocess.run(["pkill", "-f", "rate, seconds = float"], check=False)
    return seen, o, after


# 300 KB/s: the first checkpoint, about 1 s in, holds the start whole
seen, o, after = checkpointed("ckpt", 300e3, 12, lambda r: r[1] > 0)
check("while the job runs its output so far is in the store, byte for byte",
      seen[0] == "running" and 0 < seen[1] < 1024 * 1024 and
      seen[2] == stream_bytes(0, seen[1]), (seen[0], seen[1], seen[2][-120:]))
check("and strobe logs prints it while the run is running",
      o is not None and o.returncode == 0 and o.stdout.startswith(stream_bytes(0, seen[1])), o)
check("kill -9 of the recorder leaves that output in the store",
      after[0] == "running" and after[1] >= seen[1] and
      after[2] == stream_bytes(0, after[1]), (after[0], after[1]))

# 40 MB/s: the ring has wrapped many times over, and the tee writes into it
# while a checkpoint copies it, over the oldest bytes: the copy must leave
# those out (or take itself again) and still be the bytes just before its
# count, and its note must say what it cut
_, _, (status, nbytes, kept) = checkpointed("flood", 40e6, 12,
                                            lambda r: r[1] > 4 * 1024 * 1024)
head, _, rest = kept.partition("\n[strobe: ")
note, _, tail = rest.partition("]\n")
check("a checkpoint of fast output: the first 256 KiB, as written",
      status == "running" and nbytes > 4 * 1024 * 1024 and
      head == stream_bytes(0, 256 * 1024), (status, nbytes, len(head)))
check("and the bytes just before its count, the newest 512 KiB or more, none overwritten",
      tail == stream_bytes(nbytes - len(tail), nbytes) and len(tail) >= (768 - 256) * 1024,
      (len(tail), tail[:40]))
check("its note counts what it cut",
      note == f"{nbytes - 256 * 1024 - len(tail)} bytes cut here; the first {256 * 1024} and "
      f"the last {len(tail)} kept", note[:120])

# ---- strobe logs -f: a running job's output as it is stored, to its end ------
fdb = store_path("logs-follow.db")
TICKS = "import time\nfor i in range(25):\n    print('tick', i, flush=True)\n    time.sleep(0.3)\n"
direct = os.path.join(TMP, "follow-direct.txt")
with open(direct, "w") as out:
    rec = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--name", "follow",
                            f"--store={fdb}", "--", PYTHON, "-c", TICKS], stdout=out,
                           stderr=subprocess.DEVNULL)
    # reaped as soon as it exits, as a shell would: a zombie's pid still answers
    reaper = threading.Thread(target=rec.wait)
    reaper.start()
    wait_for(lambda: strobe("show", "follow", store=fdb).returncode == 0, timeout=10)
    f = strobe("logs", "-f", "follow", store=fdb, timeout=60)
    reaper.join()
want = "".join(f"tick {i}\n" for i in range(25))
check("logs -f prints the running job's output as it comes, whole, and ends with the run",
      f.returncode == 0 and f.stdout == want and open(direct).read() == want,
      (f.returncode, f.stdout[-80:], f.stderr))
# just after a run's end: without knowing its recorder has exited, -f would
# wait until 3 s past the end for the whole text; it knows, so it returns
p = strobe("run", "--quiet", "--no-report", "--name", "short", "--", PYTHON, "-c", "print('hi')",
           store=fdb)
# counted, not timed: the follow loop naps (nanosleep) only while it waits
f, slept = strobe_naps("logs", "-f", "short", store=fdb)
check("logs -f of a run whose recorder has just exited prints it and returns without waiting",
      p.returncode == 0 and f.returncode == 0 and f.stdout == "hi\n" and not slept,
      (f.stdout, f.stderr, slept[:3]))
f = strobe("logs", "-f", "--list", "follow", store=fdb)
check("logs -f --list: one line, exit 2", f.returncode == 2 and len(f.stderr.splitlines()) == 1,
      f.stderr)

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
p = strobe("run", "--no-report", "--param", "set=cli", "--", PYTHON, script, "--long", "x" * 201,
           "--nl", "a\nb", "--empty=", "--dup", "1", "--dup", "2", "--set", "script",
           "--" + "k" * 201, "--ok=" + "v" * 200, store=db)
r2 = show(db)
check("script parameters: the last of a repeated one wins (as argparse), --param still wins, and "
      "a key or value --param would refuse (over 200 bytes, empty, control characters) is not kept",
      r2["params"] == {"set": "cli", "dup": "2", "ok": "v" * 200}, r2["params"])
check("each script parameter not kept is one note",
      p.stderr.count("strobe: script parameter --") == 4 and
      "--nl not kept: value: must not contain control characters" in p.stderr, p.stderr)
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
