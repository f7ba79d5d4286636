#!/usr/bin/python3
"""Framework events when the job misbehaves: it scribbles random bytes over
the whole shared-memory segment (header, ring controls, records), it is
killed with spans open, it floods its rings far faster than any drain. The
recorder must survive each, keep what it recorded, reject what is garbage
and count what was lost."""
import os
import random

from strobetest import *

db = store_path("evfaults.db")
for suffix in ("", "-wal", "-shm"):
    try:
        os.unlink(db + suffix)
    except FileNotFoundError:
        pass

# 1. garbage over the whole segment, between honest events
SCRIBBLE = r'''
import os, random, time, strobe
for i in range(50):
    with strobe.span("before"):
        pass
time.sleep(0.3)  # drained
path = "/dev/shm" + os.environ["STROBE_SHM"]
rnd = random.Random(7)
with open(path, "r+b") as f:
    size = os.fstat(f.fileno()).st_size
    for _ in range(20):
        f.seek(0)
        f.write(rnd.randbytes(min(size, 1 << 20)))  # header, controls, first rings
        f.flush()
        for i in range(20):
            with strobe.span("after"):
                pass
        time.sleep(0.02)
time.sleep(0.3)
print("scribbled", size)
'''
p = run(db, PYTHON, "-c", SCRIBBLE, opts=("--name", "scribble"))
check("garbage in the segment: the job and the recorder finish", p.returncode == 0,
      (p.returncode, p.stderr[-600:]))
check("garbage in the segment: the job really wrote over it", "scribbled" in p.stdout, p.stdout)
r = show(db, "scribble")
if r:
    check("garbage in the segment: the run is finished", r["status"] == "finished", r["status"])
    check("garbage in the segment: events from before the garbage are kept", r["events"] >= 50,
          r["events"])
    check("garbage in the segment: rejected records and rings are counted",
          r["invalid_events"] > 0,
          r["invalid_events"])
txt = strobe("show", "scribble", store=db)
check("garbage in the segment: show still reads the run", txt.returncode == 0, txt.stderr)

# 2. killed with spans open
KILLED = r'''
import os, signal, time, strobe
strobe.step(1)
with strobe.span("outer"):
    with strobe.span("inner"):
        strobe.log("loss", 0.5)
        time.sleep(0.3)  # drained while open
        os.kill(os.getpid(), signal.SIGKILL)
'''
p = run(db, PYTHON, "-c", KILLED, opts=("--name", "killed"))
check("killed with spans open: exit 137", p.returncode == 137, (p.returncode, p.stderr[-400:]))
r = show(db, "killed")
if r:
    check("killed with spans open: the run is killed", r["status"] == "killed", r["status"])
    check("killed with spans open: its events are kept (step, loss, two open spans)",
          r["events"] >= 4, r["events"])
    check("killed with spans open: the loss reached app", r["app"].get("loss") == 0.5, r["app"])
    check("killed with spans open: nothing invalid", r["invalid_events"] == 0, r["invalid_events"])

# 3. a flood: 400 000 spans as fast as Python makes them, 16 384-record rings
FLOOD = r'''
import strobe
sp = strobe.span("flood")
for i in range(400000):
    with sp:
        pass
print("flooded")
'''
p = run(db, PYTHON, "-c", FLOOD, opts=("--name", "flood"))
check("flood: the job finishes", p.returncode == 0 and "flooded" in p.stdout, p.stderr[-400:])
r = show(db, "flood")
if r:
    check("flood: events were dropped, and counted", r["dropped_events"] > 0,
          (r["events"], r["dropped_events"]))
    check("flood: what arrived and what was dropped add up to the records written "
          "(800 000 records; a span whose both ends arrived is one event)",
          r["events"] <= 400000 and r["events"] + r["dropped_events"] >= 400000 and
          r["dropped_events"] <= 800000, (r["events"], r["dropped_events"]))
    check("flood: nothing invalid", r["invalid_events"] == 0, r["invalid_events"])
p = strobe("run", "--name", "flood2", "--", PYTHON, "-c", FLOOD, store=db)
check("flood: strobe run says how many events were dropped, in one line",
      p.returncode == 0 and "framework events were dropped" in p.stderr, p.stderr[-400:])

# 4. a Python process that exec's Python 140 times: each program claims a
# ring with the same pid and tid; the old one must come back (128 rings)
EXEC_CHAIN = os.path.join(TMP, "exec_chain.py")
with open(EXEC_CHAIN, "w") as f:
    f.write(r'''
import os, sys, strobe
k = int(sys.argv[1])
strobe.log("generation", k)
if k < 140:
    os.execv(sys.executable, [sys.executable, "-S", __file__, str(k + 1)])
print("generations", k + 1)
''')
p = run(db, PYTHON, "-S", EXEC_CHAIN, "0", opts=("--name", "exec-chain", "--no-report"))
check("exec chain: the job finishes", p.returncode == 0 and "generations 141" in p.stdout,
      p.stderr[-400:])
r = show(db, "exec-chain")
if r:
    check("exec chain: one event per program, none dropped (a ring per exec had been kept "
          "for good)", r["events"] == 141 and r["dropped_events"] == 0,
          (r["events"], r["dropped_events"]))

# 5. children that live 50 ms and are reaped by their parent, never sampled
# by the tree: their ppid and comm come from what their rings noted
SHORT = r'''
import os, time, strobe
kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        strobe.instant("k")
        time.sleep(0.05)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
time.sleep(0.3)
print(os.getpid(), *kids)
'''
p = run(db, PYTHON, "-c", SHORT, opts=("--name", "short-lived", "--no-report"))
check("short-lived children: the job finishes", p.returncode == 0, p.stderr[-400:])
if p.returncode == 0:
    parent, *kids = (int(x) for x in p.stdout.split())
    procs = {x["pid"]: x for x in show(db, "short-lived")["processes"]}
    got = {k: (procs.get(k, {}).get("ppid"), procs.get(k, {}).get("comm")) for k in kids}
    check("short-lived children: each has its parent and its name",
          all(v == (parent, "python3") for v in got.values()), got)
done()
