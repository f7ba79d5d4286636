#!/usr/bin/python3
"""The whole process tree is followed: processes forked later, a grandchild
that re-parents when its parent exits (a double fork, as daemons do), and a
child forked from a thread other than the main one. Each must appear as its
own series with the right pid, ppid and comm."""
import json

from strobetest import *

db = store_path()
pids_file = store_path("pids.json")
job = f"""
import json, os, threading, time
pids = {{"root": os.getpid()}}
time.sleep(0.3)
# 1: a plain child, later
a = os.fork()
if a == 0:
    time.sleep(2.0); os._exit(0)
pids["child"] = a
# 2: a double fork: the middle process exits at once, its child re-parents
r, w = os.pipe()
m = os.fork()
if m == 0:
    g = os.fork()
    if g == 0:
        time.sleep(2.0); os._exit(0)
    os.write(w, str(g).encode()); os._exit(0)
os.waitpid(m, 0)
pids["orphan"] = int(os.read(r, 32))
# 3: a child forked from a non-main thread
def spawn():
    t = os.fork()
    if t == 0:
        time.sleep(2.5); os._exit(0)
    pids["thread_child"] = t
    os.waitpid(t, 0)
th = threading.Thread(target=spawn); th.start()
time.sleep(0.2)
open({pids_file!r}, "w").write(json.dumps(pids))
os.waitpid(a, 0)
th.join()
time.sleep(0.3)
"""
p = run(db, PYTHON, "-c", job, opts=("--interval", "50ms"))
check("job finished", p.returncode == 0, p.stderr)
pids = json.load(open(pids_file))
r = show(db)
procs = {}
for key, m in r["metrics"].items():
    if key.startswith("proc.cpu{pid="):
        procs[m["meta"]["pid"]] = m["meta"]
for role in ("root", "child", "orphan", "thread_child"):
    check(f"{role} process seen", pids[role] in procs, f"{pids[role]} not in {sorted(procs)}")
root = procs.get(pids["root"], {})
check("root is marked as the root", root.get("root") is True, root)
check("child's ppid is the root", procs.get(pids["child"], {}).get("ppid") == pids["root"])
orphan_ppid = procs.get(pids["orphan"], {}).get("ppid")
check("the orphan was re-parented to strobe (the child subreaper)",
      orphan_ppid is not None and orphan_ppid not in pids.values(), orphan_ppid)
check("comm kept", all(procs[p]["comm"].startswith("python") for p in procs if p in pids.values()),
      [procs[p]["comm"] for p in procs])
count = points(db, "proc.count")["proc.count"]
check("proc.count peaked at 4 (root, child, orphan, thread child)",
      max(v for _, v in count) == 4, sorted(set(v for _, v in count)))
check("proc.count ends at 0 after the job", count[-1][1] == 0, count[-5:])
done()
