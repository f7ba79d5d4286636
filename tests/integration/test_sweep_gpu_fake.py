#!/usr/bin/python3
"""strobe sweep's GPU sharing against fakes of NVIDIA's tools (no GPU here).

The fakes are scripts/gpu-check's (its --sweep --self-test runs them too),
written into a folder first on PATH: `nvidia-smi` and
`nvidia-cuda-mps-control` print what the real ones print (the formats of
NVIDIA's MIG and MPS guides), keep a little state in one JSON file (each
GPU's MIG mode, the GPU and compute instances made with their MIG UUIDs,
an MPS daemon per pipe folder, a process until "quit") and log every call
with its arguments, the CUDA variables it was given, its stdin and its
uid; `nsys` writes its report and runs the rest. The jobs are a tiny
Python script that writes the variables it got, and the fakes' state at
its start, to a file.

Checked: plain sharing (indexes, "0+1", GPU UUIDs, the PCI order), MPS (one
daemon per workload before the jobs, with folders of its own and the GPU's
UUID; the runs get the same; a thread share; "quit" after; a daemon that
fails to start fails its workload only), MIG (refused before anything
starts when the GPU is not in MIG mode and when strobe is not root; a GPU
and compute instance per run, each run its own MIG UUID, both destroyed
after, also when the job fails or the compute instance cannot be made; the
calls in order), an unknown device, device locks between two campaigns
(waiting, sharing with share_devices, one lock for an index and its UUID,
across users), and the nsys listener (its report named in the run's tags;
refused when nsys is not installed)."""
import atexit
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from strobetest import *

# nobody must reach the fakes and a store for the "not root" case: a world
# of our own under /tmp (the test's TMP is root's alone)
W = tempfile.mkdtemp(prefix="strobe-sweep-gpu-", dir="/tmp")
os.chmod(W, 0o755)
atexit.register(shutil.rmtree, W, True)
BIN = os.path.join(W, "bin")
STATE = os.path.join(W, "state")
OUT = os.path.join(W, "out")
LOCKS = os.path.join(W, "locks")
for d in (BIN, STATE, OUT):
    os.makedirs(d)
    os.chmod(d, 0o777)
STATE_FILE = os.path.join(STATE, "state.json")
CALLS = os.path.join(STATE, "calls.jsonl")

# ---- the fakes ----------------------------------------------------------------
loader = importlib.machinery.SourceFileLoader(
    "gpu_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                              "gpu-check"))
gpu_check = importlib.util.module_from_spec(importlib.util.spec_from_loader("gpu_check", loader))
loader.exec_module(gpu_check)
UUID0, UUID1 = gpu_check.FAKE_UUIDS[:2]
atexit.register(gpu_check.fake_daemons_stop, STATE)

# nsys profile ... -o OUT CMD...: a report at OUT (.nsys-rep added as nsys does), then CMD
FAKE_NSYS = r'''#!/bin/sh
out=""
while [ $# -gt 0 ]; do
    case "$1" in
    -o) out=$2; shift 2; break ;;
    *) shift ;;
    esac
done
case "$out" in *.nsys-rep) ;; *) out="$out.nsys-rep" ;; esac
echo "fake nsys report" >"$out"
exec "$@"
'''

# the job: the CUDA variables it got, and the fakes' state at its start
JOB = os.path.join(W, "job.py")
JOB_PY = r'''import json, os, sys, time
out, name = sys.argv[1], sys.argv[2]
sleep = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
status = int(sys.argv[4]) if len(sys.argv) > 4 else 0
with open(os.path.join(%r, "state.json")) as f:
    st = json.load(f)
keys = ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_DEVICE_ORDER")
rec = {"env": {k: os.environ[k] for k in keys if k in os.environ}, "start": time.time(),
       "mps": st["mps"], "instances": st["instances"]}
open(os.path.join(out, name + ".started"), "w").close()
time.sleep(sleep)
rec["end"] = time.time()
with open(os.path.join(out, name + ".json"), "w") as f:
    json.dump(rec, f)
sys.exit(status)
''' % STATE

with open(os.path.join(BIN, "nsys"), "w") as f:
    f.write(FAKE_NSYS)
os.chmod(os.path.join(BIN, "nsys"), 0o755)
with open(JOB, "w") as f:
    f.write(JOB_PY)
os.chmod(JOB, 0o644)


def reset(gpus=2, mig=("Disabled",) * 4, fail=None):
    """A fresh machine: gpus GPUs with their MIG modes, no instance, no
    daemon, an empty call log and no job output."""
    gpu_check.fake_daemons_stop(STATE)
    gpu_check.fake_machine(BIN, STATE, gpus=gpus, mig=mig, fail=fail)
    for n in os.listdir(OUT):  # job records and start marks
        os.unlink(os.path.join(OUT, n))


def state():
    with open(STATE_FILE) as f:
        return json.load(f)


def calls(tool=None, recorder=False):
    """The logged calls, in order; without `nvidia-smi -q` (strobe run's
    machine description) unless recorder."""
    with open(CALLS) as f:
        out = [json.loads(line) for line in f if line.strip()]
    return [c for c in out if (tool is None or c["tool"] == tool)
            and (recorder or c["argv"] != ["-q"])]


def job_out(name):
    try:
        with open(os.path.join(OUT, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def env(**extra):
    """strobe sweep's environment: the fakes first on PATH, locks of our own."""
    e = dict(os.environ, STROBE_LOCK_DIR=LOCKS)
    e.update(extra)
    e.pop("CUDA_VISIBLE_DEVICES", None)
    e["PATH"] = BIN + ":" + e.get("PATH", "/usr/bin:/bin")
    return e


CMD = f"{PYTHON} {JOB} {OUT}"
HEADER = "Experiment,Workload,Name,Devices,Collocation,Command\n"


def write(name, text):
    path = os.path.join(W, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def sweep(path, db, *args, e=None, user=None, timeout=120):
    cmd = [STROBE, "sweep", f"--store={db}", *args, path]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=e or env(), cwd=W)


def runs_in(db):
    """The runs a store holds (none when there is no store)."""
    if not os.path.exists(db):
        return 0
    c = sqlite3.connect(db)
    try:
        return c.execute("select count(*) from runs").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        c.close()


def status_json(db, path):
    p = subprocess.run([STROBE, "sweep", "status", f"--store={db}", "--json", path],
                       capture_output=True, text=True, timeout=60, env=env())
    return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr}


def statuses(db, path):
    return {w["name"]: w["status"] for w in status_json(db, path).get("workloads", [])}


def tags_of(db, name):
    r = show(db, name)
    return r.get("tags", {})


# ---- 1. plain sharing -----------------------------------------------------------
reset()
db = os.path.join(W, "plain.db")
path = write("plain.csv", HEADER +
             f"plain,two,a,0,-,{CMD} two-{{run}} 0.5\n"
             f"plain,two,b,0,-,{CMD} two-{{run}} 0.5\n"
             f"plain,both,c,0+1,-,{CMD} both\n"
             f"plain,uuid,d,{UUID1},-,{CMD} uuid\n"
             f"plain,uuids,e,{UUID0}+{UUID1},-,{CMD} uuids\n")
p = sweep(path, db)
check("plain: the campaign finishes", p.returncode == 0, p.stderr[-800:])
got = {n: (job_out(n) or {}).get("env", {}).get("CUDA_VISIBLE_DEVICES")
       for n in ("two-0", "two-1", "both", "uuid")}
check("plain: two runs on device 0 both get CUDA_VISIBLE_DEVICES=0",
      got["two-0"] == "0" and got["two-1"] == "0", got)
check("plain: devices 0+1 give CUDA_VISIBLE_DEVICES=0,1", got["both"] == "0,1", got)
check("plain: a GPU UUID is a device, passed as it is", got["uuid"] == UUID1, got)
both = f"{UUID0},{UUID1}"
check("plain: two UUIDs are passed, and tagged, whole",
      (job_out("uuids") or {}).get("env", {}).get("CUDA_VISIBLE_DEVICES") == both and
      tags_of(db, "e").get("devices") == both, (job_out("uuids"), tags_of(db, "e")))
orders = {n: (job_out(n) or {}).get("env", {}).get("CUDA_DEVICE_ORDER") for n in got}
check("plain: CUDA numbers the GPUs as nvidia-smi does (CUDA_DEVICE_ORDER=PCI_BUS_ID)",
      set(orders.values()) == {"PCI_BUS_ID"}, orders)
t1, t2 = job_out("two-0"), job_out("two-1")
check("plain: the two runs of a workload run at once",
      t1 and t2 and t1["start"] < t2["end"] and t2["start"] < t1["end"], (t1, t2))
check("plain: no MPS or MIG call (nvidia-smi -L only)", calls("nvidia-cuda-mps-control") == [] and
      {tuple(c["argv"]) for c in calls("nvidia-smi")} == {("-L",)}, [c["argv"] for c in calls()])
check("plain: the runs are tagged with their devices",
      tags_of(db, "c").get("devices") == "0,1" and tags_of(db, "a").get("collocation") == "-",
      tags_of(db, "c"))

# the plan of a workload on many GPUs (the dry run's table has room for few)
reset(gpus=4)
many = gpu_check.FAKE_UUIDS
path = write("many.csv", HEADER + "many,w,a," + "+".join(many + ["0", "1", "2", "3"]) +
             f",-,{CMD} many\n")
p = sweep(path, os.path.join(W, "many.db"), "--dry-run")
check("a dry run of a workload on eight devices prints its plan",
      p.returncode == 0 and "CUDA_VISIBLE_DEVICES=" + UUID0 in p.stdout, (p.returncode, p.stderr))

# ---- 2. an unknown device -------------------------------------------------------
reset()
db = os.path.join(W, "unknown.db")
path = write("unknown.csv", HEADER + f"u,1,a,0,-,{CMD} a\nu,2,b,3,-,{CMD} b\n")
p = sweep(path, db)
check("unknown device: exit 2", p.returncode == 2, (p.returncode, p.stderr))
check("unknown device: FILE:LINE:COL names it",
      re.search(r"unknown\.csv:3:7: unknown device '3'", p.stderr), p.stderr)
check("unknown device: nothing ran", job_out("a") is None and runs_in(db) == 0, runs_in(db))

# ---- 3. MPS ---------------------------------------------------------------------
reset()
db = os.path.join(W, "mps.db")
path = write("mps.csv", HEADER +
             f"m,mps,a,1,MPS,{CMD} mps-0 0.3\n"
             f"m,mps,b,1,MPS,{CMD} mps-1 0.3\n"
             f"m,half/2,c,0,MPS:50,{CMD} half-0\n"
             f"m,half/2,d,0,MPS:50,{CMD} half-1\n")
p = sweep(path, db)
check("MPS: the campaign finishes", p.returncode == 0, p.stderr[-800:])
mc = calls("nvidia-cuda-mps-control")
check("MPS: one start and one quit per workload, in order",
      [(c["argv"], c["stdin"]) for c in mc] == [(["-d"], ""), ([], "quit\n")] * 2,
      [(c["argv"], c["stdin"]) for c in mc])
if len(mc) == 4:
    start, quit_ = mc[0], mc[1]
    pipe = start["env"].get("CUDA_MPS_PIPE_DIRECTORY")
    logdir = start["env"].get("CUDA_MPS_LOG_DIRECTORY")
    check("MPS: the daemon has a pipe and a log folder of its own, made for it",
          pipe and logdir and pipe != logdir and pipe != "/tmp/nvidia-mps" and os.path.isdir(pipe)
          and os.path.isdir(logdir), start["env"])
    check("MPS: the daemon sees its GPU by UUID (MPS renumbers its clients' devices)",
          start["env"].get("CUDA_VISIBLE_DEVICES") == UUID1, start["env"])
    check("MPS: quit goes to the same daemon",
          quit_["env"].get("CUDA_MPS_PIPE_DIRECTORY") == pipe and
          quit_["env"].get("CUDA_MPS_LOG_DIRECTORY") == logdir, quit_["env"])
    check("MPS: another workload, another daemon",
          mc[2]["env"].get("CUDA_MPS_PIPE_DIRECTORY") not in (None, pipe)
          and mc[2]["env"].get("CUDA_VISIBLE_DEVICES") == UUID0, mc[2]["env"])
    for n in ("mps-0", "mps-1"):
        j = job_out(n) or {"env": {}, "mps": {}}
        check(f"MPS: run {n} gets the daemon's folders and its GPU's UUID",
              j["env"].get("CUDA_MPS_PIPE_DIRECTORY") == pipe and
              j["env"].get("CUDA_MPS_LOG_DIRECTORY") == logdir and
              j["env"].get("CUDA_VISIBLE_DEVICES") == UUID1, j["env"])
        check(f"MPS: the daemon was running when run {n} started",
              j["mps"].get(pipe, {}).get("running") is True, j["mps"])
        check(f"MPS: run {n} has no thread share",
              "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in j["env"],
              j["env"])
    for n in ("half-0", "half-1"):
        j = job_out(n) or {"env": {}}
        check(f"MPS:50: run {n} gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50",
              j["env"].get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "50", j["env"])
    jobs = [job_out(n) for n in ("mps-0", "mps-1")]
    check("MPS: the daemon started before the jobs, quit after they ended",
          all(j and start["t"] <= j["start"] and j["end"] <= quit_["t"] for j in jobs),
          (start["t"], quit_["t"], jobs))
    daemons = state()["mps"].values()
    check("MPS: no daemon is left running (quit ended both)",
          len(daemons) == 2 and not any(d["running"] for d in daemons) and
          wait_for(lambda: not any(gpu_check.alive(d["pid"]) for d in daemons), 5),
          state()["mps"])
check("MPS: the workloads are tagged MPS and MPS:50",
      tags_of(db, "a").get("collocation") == "MPS" and
      tags_of(db, "c").get("collocation") == "MPS:50",
      (tags_of(db, "a"), tags_of(db, "c")))

# mps_threads in YAML
reset()
db = os.path.join(W, "mpsy.db")
path = write("mps.yaml", f"""experiment: my
workload: y
devices: 0
collocation: MPS
mps_threads: 25
runs: 2
command: {CMD} y-{{run}}
""")
p = sweep(path, db)
ys = [job_out("y-0"), job_out("y-1")]
check("MPS (YAML): mps_threads: 25 gives each run CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25",
      p.returncode == 0 and all(j and j["env"].get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "25"
                                for j in ys), (p.stderr[-400:], ys))

# a daemon that does not start: that workload fails, the campaign goes on
reset(fail={"mps": True})
db = os.path.join(W, "mpsfail.db")
path = write("mpsfail.csv", HEADER +
             f"f,bad,a,0,MPS,{CMD} bad-0\n"
             f"f,bad,b,0,MPS,{CMD} bad-1\n"
             f"f,next,c,0,-,{CMD} next\n")
p = sweep(path, db)
check("MPS start fails: exit 1", p.returncode == 1, (p.returncode, p.stderr[-600:]))
check("MPS start fails: the message says why",
      "nvidia-cuda-mps-control -d exited with 1: An instance of this daemon is already running"
      in p.stderr, p.stderr[-600:])
check("MPS start fails: its jobs never ran", job_out("bad-0") is None and job_out("bad-1") is None)
check("MPS start fails: the campaign goes on to the next workload", job_out("next") is not None)
st_ = statuses(db, path)
check("MPS start fails: that workload failed, the next finished",
      st_ == {"bad": "failed", "next": "finished"}, (st_, status_json(db, path)))
check("MPS start fails: no quit sent to a daemon that never ran",
      [c["argv"] for c in calls("nvidia-cuda-mps-control")] == [["-d"]],
      [c["argv"] for c in calls("nvidia-cuda-mps-control")])

# ---- 4. MIG ---------------------------------------------------------------------
MIG_CSV = (HEADER + f"g,mig,a,0,3g.20gb,{CMD} mig-0 0.2\n"
           f"g,mig,b,0,3g.20gb,{CMD} mig-1 0.2 {{fail}}\n")


def mig_file(name, fail=0):
    return write(name, MIG_CSV.replace("{fail}", str(fail)))


# not in MIG mode: refused before anything starts
reset()
db = os.path.join(W, "mig-off.db")
path = mig_file("mig-off.csv")
p = sweep(path, db)
check("MIG mode off: exit 2", p.returncode == 2, (p.returncode, p.stderr))
check("MIG mode off: the message names the file, the GPU and the fix",
      re.search(r"mig-off\.csv:2(:\d+)?: .*GPU 0 is not in MIG mode.*nvidia-smi -i 0 -mig 1",
                p.stderr), p.stderr)
check("MIG mode off: no run recorded, no job ran", runs_in(db) == 0 and job_out("mig-0") is None,
      runs_in(db))
check("MIG mode off: nothing made (only queries)",
      all(c["argv"][0] != "mig" for c in calls("nvidia-smi")), [c["argv"] for c in calls()])

# not root: refused before anything starts
reset(mig=("Enabled", "Disabled"))
nob = os.path.join(W, "nobody")
os.makedirs(nob)
os.chmod(nob, 0o777)
db = os.path.join(nob, "mig.db")
path = mig_file("mig-user.csv")
p = sweep(path, db, user="65534", e=env(STROBE_LOCK_DIR=os.path.join(nob, "locks")))
check("MIG as a user: exit 2", p.returncode == 2, (p.returncode, p.stderr))
check("MIG as a user: the message says root is needed",
      re.search(r"mig-user\.csv:2(:\d+)?: .*need root", p.stderr), p.stderr)
check("MIG as a user: no run recorded, nothing made",
      runs_in(db) == 0 and all(c["argv"][0] != "mig" for c in calls("nvidia-smi")),
      [c["argv"] for c in calls()])

# MIG mode on, as root: a slice per run, destroyed after
for fail in (0, 3):
    what = "a job fails" if fail else "the jobs succeed"
    reset(mig=("Enabled", "Disabled"))
    db = os.path.join(W, f"mig-{fail}.db")
    path = mig_file(f"mig-{fail}.csv", fail)
    p = sweep(path, db)
    check(f"MIG ({what}): exit {1 if fail else 0}", p.returncode == (1 if fail else 0),
          (p.returncode, p.stderr[-600:]))
    smi = [c["argv"] for c in calls("nvidia-smi")]
    q = ["-i", "0", "--query-gpu=mig.mode.current", "--format=csv,noheader"]
    j0, j1 = job_out("mig-0"), job_out("mig-1")
    u0 = (j0 or {}).get("env", {}).get("CUDA_VISIBLE_DEVICES", "")
    u1 = (j1 or {}).get("env", {}).get("CUDA_VISIBLE_DEVICES", "")
    want = [["-L"], q, q,  # the file's devices, then MIG mode per run, before anything starts
            ["-L"],  # the lock's name: GPU 0's UUID
            ["-L"], ["mig", "-i", "0", "-cgi", "3g.20gb", "-C"], ["-L"],
            ["-L"], ["mig", "-i", "0", "-cgi", "3g.20gb", "-C"], ["-L"],
            ["mig", "-i", "0", "-dci", "-gi", "1"], ["mig", "-i", "0", "-dgi", "-gi", "1"],
            ["mig", "-i", "0", "-dci", "-gi", "2"], ["mig", "-i", "0", "-dgi", "-gi", "2"]]
    check(f"MIG ({what}): the calls, in order: list, check, create and list per run, "
          "then dci and dgi per slice", smi == want, "\n" + "\n".join(map(str, smi)))
    check(f"MIG ({what}): each run gets its own MIG UUID",
          u0.startswith("MIG-") and u1.startswith("MIG-") and u0 != u1, (u0, u1))
    check(f"MIG ({what}): each run's slice existed when it started",
          j0 and j1 and any(x["uuid"] == u0 and x["ci"] == 0 for x in j0["instances"]) and
          any(x["uuid"] == u1 and x["ci"] == 0 for x in j1["instances"]), (j0, j1))
    check(f"MIG ({what}): no instance is left", state()["instances"] == [], state()["instances"])
    check(f"MIG ({what}): the runs are tagged with the profile",
          tags_of(db, "a").get("collocation") == "3g.20gb", tags_of(db, "a"))
    if fail:
        check("MIG (a job fails): the workload failed", statuses(db, path) == {"mig": "failed"},
              status_json(db, path))

# a compute instance that cannot be made: the GPU instance made with it is destroyed
reset(mig=("Enabled", "Disabled"), fail={"cci": True})
db = os.path.join(W, "mig-cci.db")
path = mig_file("mig-cci.csv")
p = sweep(path, db)
smi = [c["argv"] for c in calls("nvidia-smi") if c["argv"][0] == "mig"]
check("MIG, no compute instance: the workload fails", p.returncode == 1 and
      statuses(db, path) == {"mig": "failed"}, (p.returncode, p.stderr[-600:]))
check("MIG, no compute instance: the message is nvidia-smi's",
      "Insufficient Resources" in p.stderr, p.stderr[-600:])
check("MIG, no compute instance: the GPU instance is destroyed, nothing is left",
      ["mig", "-i", "0", "-dgi", "-gi", "1"] in smi and state()["instances"] == [],
      (smi, state()["instances"]))
check("MIG, no compute instance: no job ran", job_out("mig-0") is None and job_out("mig-1") is None)

# ---- 5. device locks between campaigns --------------------------------------------
reset()


def two_campaigns(key, share=False, dev_a="0", dev_b="0", user_b=None):
    """Campaign A (a 2 s job on dev_a), then B on dev_b once A's job runs:
    (A's and B's job records, B's finished process, A's exit status)."""
    paths = []
    for k, dev in (("A", dev_a), ("B", dev_b)):
        extra = "share_devices: true\n" if share else ""
        paths.append(write(f"lock-{k}-{key}.yaml", f"experiment: lock{k}{key}\n"
                           f"workload: w\ndevices: {dev}\n{extra}"
                           f"command: {CMD} lock-{k}-{key} 2\n"))
    a = subprocess.Popen([STROBE, "sweep", f"--store={W}/lock-A-{key}.db", paths[0]], env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=W)
    wait_for(lambda: os.path.exists(os.path.join(OUT, f"lock-A-{key}.started")), timeout=20)
    db_b = f"{nob}/lock-B-{key}.db" if user_b else f"{W}/lock-B-{key}.db"
    b = sweep(paths[1], db_b, user=user_b, timeout=60)
    a.communicate(timeout=60)
    return job_out(f"lock-A-{key}"), job_out(f"lock-B-{key}"), b, a.returncode


ja, jb, b, arc = two_campaigns("wait")
check("locks: both campaigns finish", arc == 0 and b.returncode == 0, b.stderr[-600:])
check("locks: the second says it waits, and who holds the GPU",
      re.search(r"waits: GPU 0 is held by strobe sweep \(pid \d+\)", b.stderr), b.stderr[-600:])
check("locks: the second's job starts after the first's ended",
      ja and jb and jb["start"] >= ja["end"], (ja, jb))
ja, jb, b, arc = two_campaigns("share", share=True)
check("locks, share_devices: both campaigns finish", arc == 0 and b.returncode == 0,
      b.stderr[-600:])
check("locks, share_devices: no wait", "waits" not in b.stderr, b.stderr[-600:])
check("locks, share_devices: the two jobs run at once",
      ja and jb and jb["start"] < ja["end"] and ja["start"] < jb["end"], (ja, jb))
ja, jb, b, arc = two_campaigns("uuid", dev_b=UUID0)
check("locks: GPU 0 by index and by UUID is one lock",
      arc == 0 and b.returncode == 0 and "waits: GPU " + UUID0 + " is held" in b.stderr and
      ja and jb and jb["start"] >= ja["end"], (b.stderr[-600:], ja, jb))
ja, jb, b, arc = two_campaigns("user", user_b="65534")
check("locks: another user's campaign waits for root's, then runs (the lock is for everyone)",
      arc == 0 and b.returncode == 0 and "waits: GPU 0 is held" in b.stderr and
      ja and jb and jb["start"] >= ja["end"], (b.stderr[-600:], ja, jb))
lock_files = [os.path.join(LOCKS, n) for n in os.listdir(LOCKS)]
check("locks: the lock folder is sticky and world-writable, the locks are one per GPU UUID",
      os.stat(LOCKS).st_mode & 0o7777 == 0o1777 and
      sorted(os.path.basename(f) for f in lock_files) == [f"gpu-{UUID1}.lock", f"gpu-{UUID0}.lock"]
      and all(os.stat(f).st_mode & 0o777 == 0o666 for f in lock_files),
      (oct(os.stat(LOCKS).st_mode), lock_files))

# ---- 6. the nsys listener ---------------------------------------------------------
reset()
db = os.path.join(W, "nsys.db")
path = write("nsys.csv", "Experiment,Workload,Name,Devices,Collocation,Listeners,Command\n"
             f"n,1,prof,0,-,smi+nsys,{CMD} nsys\n")
p = sweep(path, db)
check("nsys: the campaign finishes", p.returncode == 0, p.stderr[-600:])
art = tags_of(db, "prof").get("artifact", "")
check("nsys: the run's artifact tag names the report nsys wrote",
      art.endswith(".nsys-rep") and os.path.isfile(art),
      (art, os.listdir(os.path.dirname(art)) if art else None))
check("nsys: the job ran under it", job_out("nsys") is not None)
path_no = os.pathsep.join(d for d in env()["PATH"].split(os.pathsep)
                          if d != BIN and not os.path.exists(os.path.join(d, "nsys")))
os.unlink(os.path.join(BIN, "nsys"))
reset()
db = os.path.join(W, "nsys-none.db")
p = sweep(path, db, e=env(PATH=BIN + os.pathsep + path_no))
check("nsys absent: exit 2 with FILE:LINE:COL",
      p.returncode == 2 and re.search(r"nsys\.csv:2:\d+: listener 'nsys' needs nsys, which is "
                                      r"not installed", p.stderr), (p.returncode, p.stderr))
check("nsys absent: nothing ran", runs_in(db) == 0 and job_out("nsys") is None)

done()
