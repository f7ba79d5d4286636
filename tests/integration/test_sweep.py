#!/usr/bin/python3
"""strobe sweep, with real processes and a real store.

On real training (examples/train.py on the CPU):
- a YAML campaign (a grid of batch sizes and worker counts, a solo run, and
  the same run twice at once) killed halfway with SIGKILL to its process
  group, then run again: the killed workload reads lost and runs again,
  every combination ends finished exactly once with its parameters, and no
  run is left running;
- the collocated runs start within a second of each other, by the store's
  starts and by the jobs' own clocks;
- strobe sweep status, table and JSON: statuses, samples/s per device, the
  pair against its solo run, and the best workload;
- radT's own CSV and YAML shapes (its columns and keys, generated here), run
  with --write-back: Status and Run, or radT's status block, filled in and
  the rest of the file kept; a row that names GPU 0 on this machine without
  a GPU is an error at its line and column.

On quick jobs (a small script that logs its start, sleeps and exits as told):
- --dry-run prints the plan and its commands, makes no store, runs nothing;
- run again, a finished campaign records nothing; --rerun runs it all; a
  failed workload (exit 1) fails the campaign (exit 1) while the next one
  still runs, and the next sweep runs only it; retries: 1 tries it once
  more; timeout: 2 ends a job, and a shell's child with it;
- SIGINT to the sweep (kill(1)), to its process group, and Ctrl-C on its
  terminal: the jobs stop, exit 130, the workload reads interrupted and the
  next sweep runs it again;
- --parallel runs two workloads that name no device one after the other;
- a campaign another live sweep owns is refused; the owner killed alone
  takes its runs with it (PR_SET_PDEATHSIG) and leaves the workload lost;
- a bad file is exit 2 and one line "strobe: FILE:LINE:COL: ...", before
  anything is recorded."""
import csv
import json
import os
import pty
import re
import shlex
import signal
import subprocess
import time

import yaml

from strobetest import *

TRAIN = os.path.join(EXAMPLES, "train.py")
ENV = example_env()
try:  # GPU 0, where the machine has one: a file may name it there
    GPU0 = "GPU 0:" in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                      timeout=60).stdout
except (OSError, subprocess.TimeoutExpired):
    GPU0 = False


def write(path, text):
    """text into path (under TEST_TMP when relative); the path."""
    path = os.path.join(TMP, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def sweep(*args, store, timeout=300):
    """strobe sweep --store=STORE ARGS..."""
    return subprocess.run([STROBE, "sweep", f"--store={store}", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


def status(store, target, as_json=True):
    p = subprocess.run([STROBE, "sweep", "status", f"--store={store}"] +
                       (["--json"] if as_json else []) + [target],
                       capture_output=True, text=True, timeout=60, env=ENV)
    if p.returncode != 0:
        raise RuntimeError(f"strobe sweep status exited with {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout) if as_json else p.stdout


def shown(store, target):
    """{workload: status} as strobe sweep status --json shows them."""
    return {w["name"]: w["status"] for w in status(store, target)["workloads"]}


def runs_of(store):
    p = strobe("ls", "--json", store=store)
    return json.loads(p.stdout) if p.returncode == 0 else []


def plan(stdout):
    """{workload: action} from the plan strobe sweep prints first."""
    rows, table = {}, False
    for line in stdout.splitlines():
        if line.startswith("WORKLOAD "):
            table = True
        elif table and not line.startswith("    "):  # (a dry run's commands are indented)
            m = re.match(r"(\S+)\s+\d+\s+\S+\s+\S+\s+(run|run again|rerun|skip|skip \(file\))$",
                         line)
            if not m:
                break  # the jobs' output follows
            rows[m.group(1)] = m.group(2)
    return rows


def job_starts(store, ids):
    """Each run's "job start T" line, as its job printed it (strobe logs)."""
    out = {}
    for rid in ids:
        p = strobe("logs", rid, store=store)
        m = re.search(r"^job start ([\d.]+)$", p.stdout, re.M)
        out[rid] = float(m.group(1)) if m else None
    return out


def group_left(pgid):
    """The live (not zombie) processes of process group pgid."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            left.append(int(pid))
    return left


def alive(marker):
    """Pids of live processes whose command line holds marker."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z" and int(pid) != os.getpid():
            pids.append(int(pid))
    return pids


def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # an async shell's child ignores it


def start_sweep(store, path, **kw):
    """strobe sweep in the background, its output to a file (said())."""
    out = open(os.path.join(TMP, f"sweep-{time.monotonic_ns()}.out"), "w+")
    p = subprocess.Popen([STROBE, "sweep", f"--store={store}", path], stdout=out,
                         stderr=subprocess.STDOUT, env=ENV, preexec_fn=default_sigint, **kw)
    p.out = out
    return p


def said(p):
    p.out.seek(0)
    return p.out.read()


def wait_running(store, path, name, proc, timeout=60):
    """Until workload name is running (its jobs started)."""
    def running():
        try:
            return shown(store, path).get(name) == "running"
        except (RuntimeError, ValueError):
            return False
    return wait_for(lambda: proc.poll() is None and running(), timeout=timeout, step=0.1)


began = time.monotonic()

# the wrapper of the collocated runs: the job's own clock at its start
WRAP = write("jobs/timed_train.py", f'''import runpy, sys, time
print(f"job start {{time.time():.6f}}", flush=True)
sys.argv = [{TRAIN!r}] + sys.argv[1:]
runpy.run_path({TRAIN!r}, run_name="__main__")
''')

# ---- 1. a CPU campaign, killed halfway and resumed ----------------------------------------------
db = store_path("campaign.db")
CAMPAIGN = write("campaign.yaml", f"""\
# examples/train.py on the CPU: a grid, one run alone, the same run twice at once
experiment: cpu-campaign
workloads:
  - workload: grid
    file: {TRAIN}
    method: grid
    parameters:
      batch-size: {{values: [16, 32]}}
      workers: {{values: [0, 1]}}
      steps: {{value: 20}}
  - workload: solo
    command: {PYTHON} {WRAP} --batch-size {{batch-size}} --workers {{workers}} --steps {{steps}}
    parameters: &one
      batch-size: {{value: 16}}
      workers: {{value: 0}}
      steps: {{value: 20}}
  - workload: pair
    runs: 2
    command: {PYTHON} {WRAP} --batch-size {{batch-size}} --workers {{workers}} --steps {{steps}}
    parameters: *one
""")
ORDER = ["grid-000", "grid-001", "grid-002", "grid-003", "solo", "pair"]
WANT = {"grid-000": (16, 0), "grid-001": (16, 1), "grid-002": (32, 0), "grid-003": (32, 1),
        "solo": (16, 0), "pair": (16, 0)}
out = open(os.path.join(TMP, "first.out"), "w+")
first = subprocess.Popen([STROBE, "sweep", f"--store={db}", "--python", PYTHON, CAMPAIGN],
                         stdout=out, stderr=subprocess.STDOUT, env=ENV, start_new_session=True)
# kill it as soon as the third workload or a later one is seen running: its
# job has just started (a training takes over a second), so it is cut short
seen, killed = set(), None
deadline = time.monotonic() + 120
while killed is None and first.poll() is None and time.monotonic() < deadline:
    try:
        st = status(db, CAMPAIGN)
    except (RuntimeError, ValueError):
        time.sleep(0.1)  # the store or the campaign is not there yet
        continue
    for w in st["workloads"]:
        if w["status"] == "running" and w["name"] not in seen:
            seen.add(w["name"])
            if ORDER.index(w["name"]) >= 2:
                killed = w["name"]
    if killed:
        os.killpg(first.pid, signal.SIGKILL)
    time.sleep(0.1)
first.wait(timeout=60)
check("the first sweep was killed halfway, by SIGKILL to its process group",
      killed is not None and first.returncode == -signal.SIGKILL,
      f"killed {killed}, rc {first.returncode}; {open(out.name).read()[-2000:]}")
check("nothing of the killed campaign runs on (recorders, jobs, data-loader workers)",
      wait_for(lambda: not group_left(first.pid), timeout=20), group_left(first.pid))
st = status(db, CAMPAIGN)
was = shown(db, CAMPAIGN)
k = ORDER.index(killed) if killed else 0
# the one before it may be lost too: its jobs had ended (so this one went)
# but its recorders were still saving
lost = [n for n in ORDER if was.get(n) == "lost"]
check("status --json: the killed workload is lost, those before it finished, none running",
      killed and was.get(killed) == "lost" and not st["running"] and
      all(was[n] == "finished" for n in ORDER[:k - 1]) and
      was[ORDER[k - 1]] in ("finished", "lost") and
      all(was[n] == "pending" for n in ORDER[k + 1:]), (killed, was))
# a lost workload whose runs were all saved finished (its recorders were
# done, the sweep had not heard yet) is settled from them; the others run
# again, and their runs read lost
stored = {r["id"]: r["status"] for r in runs_of(db)}
ids_of = {w["name"]: w["runs"] for w in st["workloads"]}
settled = [n for n in lost if all(stored.get(rid) == "finished" for rid in ids_of[n])]
check("the killed workload's own runs were cut short", killed and killed not in settled,
      (killed, settled))
lost_ids = [rid for n in lost if n not in settled for rid in ids_of[n]]
print(f"# killed while {killed} ran; lost: {lost}, of which settled by their runs: {settled}",
      flush=True)
table = status(db, CAMPAIGN, as_json=False)
check("status (table) says the sweep is gone and shows the workload lost",
      "(its sweep is gone)" in table and re.search(rf"^{killed}\s.*\slost\s", table, re.M), table)

p = sweep("--python", PYTHON, CAMPAIGN, store=db)
again = plan(p.stdout)
check("run again, the campaign finishes (exit 0)", p.returncode == 0, p.stdout + p.stderr[-2000:])
check("the plan runs the lost workloads again (but one whose runs were saved), skips the "
      "finished ones, runs the rest",
      again == {n: "skip" if n in settled else
                {"lost": "run again", "finished": "skip", "pending": "run"}[was[n]]
                for n in ORDER}, (again, was, settled))
print(f"# the campaign, killed and resumed, took {time.monotonic() - began:.1f} s", flush=True)

st = status(db, CAMPAIGN)
wl = {w["name"]: w for w in st["workloads"]}
check("status by the experiment's name is status by the file", status(db, "cpu-campaign") == st)
check("status --json lists every workload of the file, in order", [w["name"] for w in
      st["workloads"]] == ORDER, [w["name"] for w in st["workloads"]])
check("every workload finished", all(w["status"] == "finished" for w in wl.values()),
      {n: w["status"] for n, w in wl.items()})
check("a lost workload's attempt does not count: it finished at its first (or was settled)",
      lost and all(wl[n]["attempts"] == 1 for n in lost), {n: wl[n]["attempts"] for n in lost})
runs = runs_of(db)
for name in ORDER:
    ended = sorted(r["id"] for r in runs if r["workload"] == name and r["status"] == "finished")
    check(f"{name}: finished exactly once ({len(wl[name]['runs'])} run(s)), the campaign's runs",
          ended == sorted(wl[name]["runs"]) and len(ended) == (2 if name == "pair" else 1),
          f"finished {ended}, campaign {wl[name]['runs']}")
bad, grid = [], []
for name in ORDER:
    for rid in wl[name]["runs"]:
        r = show(db, rid)
        bs, workers = WANT[name]
        if name.startswith("grid-"):
            grid.append((r["params"].get("batch-size"), r["params"].get("workers")))
        if r["params"] != {"batch-size": str(bs), "workers": str(workers), "steps": "20"} or \
                r["experiment"] != "cpu-campaign" or r["tags"].get("sweep") != "cpu-campaign":
            bad.append((name, r["params"], r["experiment"], r["tags"]))
check("each run has its parameters (batch-size, workers, steps), experiment and sweep tag",
      not bad, bad)
check("the grid's runs are every combination of batch size and worker count once",
      sorted(grid) == [("16", "0"), ("16", "1"), ("32", "0"), ("32", "1")], grid)
check("no run is left running; the killed attempt's runs read lost",
      not [r for r in runs if r["status"] == "running"] and
      all(r["status"] == "lost" for r in runs if r["id"] in lost_ids),
      [(r["name"], r["status"]) for r in runs])

# the collocated pair: started together, by the store and by the jobs
pair = [show(db, rid) for rid in wl["pair"]["runs"]]
starts = [r["start_ns"] / 1e9 for r in pair]
check("the pair's recorded starts are within 1 s of each other",
      len(starts) == 2 and abs(starts[0] - starts[1]) < 1.0, starts)
clocks = list(job_starts(db, wl["pair"]["runs"]).values())
check("the pair's jobs started within 1 s of each other by their own clocks",
      len(clocks) == 2 and None not in clocks and abs(clocks[0] - clocks[1]) < 1.0, clocks)
check("each job started after the run's recorded start (the gate opened first)",
      None not in clocks and all(c >= s - 0.05 for c, s in zip(clocks, starts)), (clocks, starts))

# status: samples/s per device, the pair against its solo run, the best workload
per = {n: w["samples_per_s_per_device"] for n, w in wl.items()}
check("every workload has samples/s, the host its one device",
      all(w["samples_per_s"] and w["samples_per_s"] > 0 and w["devices"] == "" and
          abs(w["samples_per_s_per_device"] - w["samples_per_s"]) < 1e-6 for w in wl.values()),
      per)
want_vs = per["pair"] / per["solo"] if per.get("solo") else None
check("vs_solo: the pair's samples/s per device over the solo run's (same parameters and command)",
      wl["pair"]["vs_solo"] is not None and want_vs is not None and
      abs(wl["pair"]["vs_solo"] - want_vs) < 1e-6 * want_vs, (wl["pair"]["vs_solo"], want_vs))
check("vs_solo only for the collocated workload",
      all(wl[n]["vs_solo"] is None for n in ORDER if n != "pair"),
      {n: wl[n]["vs_solo"] for n in ORDER})
table = status(db, CAMPAIGN, as_json=False)
rows = {}
for line in table.splitlines():
    f = line.split()
    if f and f[0] in ORDER:
        rows[f[0]] = f
check("status (table): every workload, finished, with its run count",
      set(rows) == set(ORDER) and all(rows[n][4] == "finished" and
                                      rows[n][3] == ("2" if n == "pair" else "1") for n in ORDER),
      table)
check("status (table): samples/s per device as the JSON has them",
      all(abs(float(rows[n][7]) - per[n]) <= 0.051 for n in ORDER), table)
check("status (table): the pair's VS SOLO", rows.get("pair", [""] * 9)[8] ==
      f"{wl['pair']['vs_solo']:.2f}x" and all(rows[n][8] == "-" for n in ORDER if n != "pair"),
      table)
m = re.search(r"^most samples/s per device: workload (\S+) \((.*)\), ([\d.]+)$", table, re.M)
best = max(per, key=per.get)
check("the 'most samples/s per device' line names the workload with the highest figure",
      m and m.group(1) == best and abs(float(m.group(3)) - per[best]) <= 0.051 and
      ("collocated" if best == "pair" else "solo") in m.group(2), (m and m.group(0), per))

# ---- 2. radT's own shapes, with --write-back ---------------------------------------------------
# the job radT's examples name (../pytorch/cifar10_context.py), here a few steps of train.py
write("radt/pytorch/cifar10_context.py", f'''import argparse, runpy, sys, time
print(f"job start {{time.time():.6f}}", flush=True)
p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=128)
p.add_argument("--learning-rate", type=float, default=0.01)
a = p.parse_args()
sys.argv = [{TRAIN!r}, "--steps", "10", "--workers", "0", "--batch-size", str(a.batch_size),
            "--lr", str(a.learning_rate)]
runpy.run_path({TRAIN!r}, run_name="__main__")
''')
HEADER = "Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Listeners,Params"
FILE = "../pytorch/cifar10_context.py"
ARGS = "--batch-size 16 --learning-rate 0.01"
rows_in = [
    ["0", "1", "no sharing", "", "", "-", "-", FILE, "smi+top", ARGS],
    ["0", "2", "shared 1", "", "", "", "-", FILE, "smi+top", ARGS],
    ["0", "2", "shared 2", "", "", "-", "-", FILE, "smi+top", ARGS],
]
text = HEADER + "\n" + "\n".join(",".join(r) for r in rows_in[:2]) + "\n" + \
    ",".join(rows_in[2][:9]) + ',"' + rows_in[2][9] + '"\n'  # a quoted cell, as pandas may write
CSV = write("radt/csv/experiment_collocation.csv", text)
rdb = store_path("radt-csv.db")
p = sweep("--write-back", "--python", PYTHON, CSV, store=rdb)
check("radT's CSV runs as it is (Devices '-' and empty, Collocation '-', Listeners smi+top)",
      p.returncode == 0 and plan(p.stdout) == {"1": "run", "2": "run"},
      p.stdout + p.stderr[-2000:])
with open(CSV, newline="") as f:
    after = list(csv.reader(f))
by_id = {r["id"]: r for r in runs_of(rdb)}
check("--write-back keeps the header", after[0] == HEADER.split(","), after[0])
check("--write-back: each row's Status is FINISHED and its run's name",
      [r[3] for r in after[1:]] == [f"FINISHED {r[2]}" for r in rows_in], [r[3] for r in after[1:]])
check("--write-back: each row's Run is the id of its run in the store, of that name",
      all(r[4] in by_id and by_id[r[4]]["name"] == r[2] and by_id[r[4]]["status"] == "finished"
          for r in after[1:]), [(r[2], r[4]) for r in after[1:]])
check("--write-back: every other cell is unchanged",
      [[c for i, c in enumerate(r) if i not in (3, 4)] for r in after[1:]] ==
      [[c for i, c in enumerate(r) if i not in (3, 4)] for r in rows_in], after)
pair = [by_id[r[4]] for r in after[2:]]
clocks = list(job_starts(rdb, [r["id"] for r in pair]).values())
check("the CSV's collocated rows (workload 2) started within 1 s, by the store and the jobs",
      abs(pair[0]["start_ns"] - pair[1]["start_ns"]) < 1e9 and None not in clocks and
      abs(clocks[0] - clocks[1]) < 1.0, ([r["start_ns"] for r in pair], clocks))
st = status(rdb, CSV)
check("radT's Params are the runs' parameters",
      all(w["params"] == {"batch-size": "16", "learning-rate": "0.01"} for w in st["workloads"]),
      [w["params"] for w in st["workloads"]])
vs = {w["name"]: w["vs_solo"] for w in st["workloads"]}
check("workload 2 is compared with workload 1, the same job alone", vs["1"] is None and
      vs["2"] is not None and vs["2"] > 0, vs)
# the file says FINISHED: a store that never saw the campaign runs nothing
fresh = store_path("radt-fresh.db")
p = sweep("--python", PYTHON, CSV, store=fresh)
check("a written-back CSV run on a new store skips its FINISHED workloads, records no run",
      p.returncode == 0 and plan(p.stdout) == {"1": "skip (file)", "2": "skip (file)"} and
      runs_of(fresh) == [], p.stdout + p.stderr)

YAML_TEXT = """\
name: Sweep name
experiment: 0
collocation: "-"
devices:
listeners: smi+top
file: ../pytorch/cifar10_context.py
method: grid
parameters:
  batch-size:
    values: [8, 16]
  learning-rate: 
    values: [0.001]
"""
YML = write("radt/yaml/experiment_grid_context.yaml", YAML_TEXT)
ydb = store_path("radt-yaml.db")
p = sweep("--write-back", "--python", PYTHON, YML, store=ydb)
check("radT's YAML runs as it is (grid, radT's keys, no device)",
      p.returncode == 0 and plan(p.stdout) == {"000": "run", "001": "run"},
      p.stdout + p.stderr[-2000:])
written = open(YML).read()
check("--write-back keeps the YAML byte for byte and adds a status block",
      written.startswith(YAML_TEXT) and written[len(YAML_TEXT):].startswith("status:\n"),
      written)
block = yaml.safe_load(written).get("status") or {}
by_id = {r["id"]: r for r in runs_of(ydb)}
ok = sorted(block) == [0, 1]
for key, bs in ((0, 8), (1, 16)):
    m = re.fullmatch(r"FINISHED (\S+) \((.*)\)", str(block.get(key, "")))
    rid = m and m.group(1)
    ok = ok and m and m.group(2) == f"--batch-size {bs} --learning-rate 0.001" and \
        rid in by_id and by_id[rid]["workload"] == f"{key:03}" and \
        show(ydb, rid)["params"] == {"batch-size": str(bs), "learning-rate": "0.001"}
    # radT reads the parameters back as " ".join(value.split()[2:])[1:-1]
    ok = ok and " ".join(str(block[key]).split()[2:]).strip()[1:-1] == \
        f"--batch-size {bs} --learning-rate 0.001"
check("the status block is radT's: workload number to 'FINISHED RUN_ID (--k v ...)'", ok, block)
p = sweep("--write-back", "--python", PYTHON, YML, store=ydb)
check("run again: both skipped, nothing recorded, the file unchanged",
      p.returncode == 0 and plan(p.stdout) == {"000": "skip", "001": "skip"} and
      len(runs_of(ydb)) == 2 and open(YML).read() == written, p.stdout + p.stderr)

# GPU 0 on a machine without one: the cell's line and column, nothing recorded
gpu_row = ["0", "1", "on gpu", "", "", "0", "-", FILE, "smi+top", "--batch-size 16"]
GPU_CSV = write("radt/csv/experiment_gpu.csv",
                HEADER + "\n" + ",".join(rows_in[0]) + "\n" + ",".join(gpu_row) + "\n")
GPU_YML = write("radt/yaml/experiment_gpu.yaml",
                YAML_TEXT.replace("devices:\n", "devices: 0\n"))
gdb = store_path("radt-gpu.db")
if GPU0:
    skip("Devices '0' is an error without a GPU", "this machine has GPU 0")
else:
    p = sweep("--python", PYTHON, GPU_CSV, store=gdb)
    col = len(",".join(gpu_row[:5])) + 2
    check("Devices '0' without a GPU: exit 2 and one line naming the cell's line:col",
          p.returncode == 2 and p.stderr.count("\n") == 1 and
          p.stderr.startswith(f"strobe: {GPU_CSV}:3:{col}: unknown device '0'"), p.stderr)
    check("... and nothing is recorded (no store made)", not os.path.exists(gdb))
    p = sweep("--python", PYTHON, GPU_YML, store=gdb)
    check("devices: 0 in radT's YAML: exit 2, one line at 4:10",
          p.returncode == 2 and p.stderr.count("\n") == 1 and
          p.stderr.startswith(f"strobe: {GPU_YML}:4:10: unknown device '0'") and
          not os.path.exists(gdb), p.stderr)

# ---- 3. quick jobs: the campaign's state, failures, signals -------------------------------------
LOG = os.path.join(TMP, "jobs.log")
JOB = write("job.py", f'''import os, sys, time
# job.py TAG SECONDS CODE: each a number, or a file that holds one
def value(arg):
    return open(arg).read().strip() if os.path.isfile(arg) else arg
tag, seconds, code = sys.argv[1], float(value(sys.argv[2])), int(value(sys.argv[3]))
with open({LOG!r}, "a") as f:
    f.write(f"{{tag}} start {{time.time():.6f}} {{os.getpid()}}\\n")
print("start", tag, f"{{time.time():.6f}}", flush=True)
time.sleep(seconds)
print("end", tag, f"{{time.time():.6f}}", flush=True)
sys.exit(code)
''')


def job(tag, seconds=0, code=0):
    """A job's command in a sweep file."""
    return f"{PYTHON} {JOB} {tag} {seconds} {code}"


def value_file(name, v):
    """A file that holds v, for a job to read when it starts."""
    return write(name, str(v))


def started(tag):
    """How many times job TAG has started."""
    if not os.path.exists(LOG):
        return 0
    return sum(1 for line in open(LOG) if line.split()[0] == tag)


# ---- --dry-run ----------------------------------------------------------------------------------
db = store_path("resume.db")
code = value_file("code", 1)
RESUME = write("resume.yaml", f"""\
experiment: resume
workloads:
  - workload: first
    command: {job("first")}
  - workload: flips
    command: {job("flips", 0, code)}
  - workload: third
    command: {job("third")}
""")
p = sweep("--dry-run", RESUME, store=db)
check("--dry-run prints the plan: every workload to run, and each run's command",
      p.returncode == 0 and plan(p.stdout) == {"first": "run", "flips": "run", "third": "run"} and
      f"    first: {job('first')}" in p.stdout and
      f"    flips: {job('flips', 0, code)}" in p.stdout,
      p.stdout + p.stderr)
check("--dry-run makes no store and runs nothing",
      not os.path.exists(db) and started("first") == 0 and
      not os.path.exists(os.path.join(TMP, "strobe-sweep-resume")), os.listdir(TMP))
QUOTED = write("quoted.yaml", "experiment: quoted\ncommand: sh -c \"exit 0; echo 'a b'\" ''\n")
p = sweep("--dry-run", QUOTED, store=db)
m = re.search(r"^    000: (.*)$", p.stdout, re.M)
check("--dry-run prints each word of a command as a shell reads it back",
      p.returncode == 0 and m and shlex.split(m.group(1)) == ["sh", "-c", "exit 0; echo 'a b'", ""],
      p.stdout + p.stderr)

# ---- failures, resume, --rerun ------------------------------------------------------------------
p = sweep(RESUME, store=db)
st = shown(db, RESUME)
check("a workload that exits 1 fails the campaign: exit 1", p.returncode == 1,
      f"rc={p.returncode} {p.stderr}")
check("... it reads failed, and the workload after it still ran and finished",
      st == {"first": "finished", "flips": "failed", "third": "finished"} and
      started("third") == 1, st)
note = {w["name"]: w["note"] for w in status(db, RESUME)["workloads"]}
check("the failed workload's note says which run failed", note["flips"] == "run flips: failed",
      note)
n_runs = len(runs_of(db))
p = sweep(RESUME, store=db)
check("run again: only the failed workload runs again (it fails again: exit 1)",
      p.returncode == 1 and plan(p.stdout) == {"first": "skip", "flips": "run again",
                                               "third": "skip"} and
      len(runs_of(db)) == n_runs + 1 and started("flips") == 2 and started("first") == 1,
      p.stdout + p.stderr)
value_file("code", 0)
p = sweep(RESUME, store=db)
check("fixed, it runs again and the campaign finishes: exit 0",
      p.returncode == 0 and plan(p.stdout)["flips"] == "run again" and
      shown(db, RESUME) == {"first": "finished", "flips": "finished", "third": "finished"},
      p.stdout + p.stderr)
n_runs = len(runs_of(db))
p = sweep(RESUME, store=db)
check("a finished campaign run again skips everything and records nothing",
      p.returncode == 0 and set(plan(p.stdout).values()) == {"skip"} and
      len(runs_of(db)) == n_runs and started("first") == 1, p.stdout + p.stderr)
ids = {w["name"]: w["runs"] for w in status(db, RESUME)["workloads"]}
p = sweep("--rerun", RESUME, store=db)
after = {w["name"]: w["runs"] for w in status(db, RESUME)["workloads"]}
check("--rerun runs every workload again: new runs, all finished",
      p.returncode == 0 and set(plan(p.stdout).values()) == {"rerun"} and
      len(runs_of(db)) == n_runs + 3 and all(after[n] != ids[n] for n in ids) and
      set(shown(db, RESUME).values()) == {"finished"}, p.stdout + p.stderr)

# ---- retries and timeouts -----------------------------------------------------------------------
flag = os.path.join(TMP, "flaky-once")
FLAKY = write("flaky.py", f"import os, sys\nfirst = not os.path.exists({flag!r})\n"
              f"open({flag!r}, 'a').close()\nsys.exit(1 if first else 0)\n")
tdb = store_path("tries.db")
TRIES = write("tries.yaml", f"""\
experiment: tries
workloads:
  - workload: flaky
    retries: 1
    command: {PYTHON} {FLAKY}
  - workload: broken
    retries: 1
    command: {job("broken", 0, 3)}
  - workload: slow
    timeout: 2
    command: {job("slow", 30)}
  - workload: shell
    timeout: 2
    command: sh -c "sleep 37.25; echo not reached"
""")
t0 = time.monotonic()
p = sweep(TRIES, store=tdb)
took = time.monotonic() - t0
wl = {w["name"]: w for w in status(tdb, TRIES)["workloads"]}
runs = runs_of(tdb)
check("retries: 1: a workload that fails once is tried again and finishes (2 attempts, 2 runs)",
      wl["flaky"]["status"] == "finished" and wl["flaky"]["attempts"] == 2 and
      sorted(r["status"] for r in runs if r["workload"] == "flaky") == ["failed", "finished"],
      (wl["flaky"], [(r["name"], r["status"]) for r in runs]))
check("retries: 1: one that always fails is tried twice, not more, and fails",
      wl["broken"]["status"] == "failed" and wl["broken"]["attempts"] == 2 and
      started("broken") == 2, wl["broken"])
slow = [r for r in runs if r["workload"] == "slow"]
check("timeout: 2 ends a sleeping job: killed, after 2 s and within 2 s + the 10 s grace",
      wl["slow"]["status"] == "failed" and len(slow) == 1 and slow[0]["status"] == "killed" and
      2.0 <= slow[0]["duration_s"] <= 12.0 and "timed out after" in (wl["slow"]["note"] or ""),
      (wl["slow"], slow))
shell = [r for r in runs if r["workload"] == "shell"]
check("timeout: 2 on a shell ends the shell's child too (no sleep left)",
      len(shell) == 1 and shell[0]["status"] == "killed" and
      wait_for(lambda: not alive("sleep 37.25"), timeout=5), (shell, alive("sleep 37.25")))
check("the campaign exits 1 and took well under the 30 s the job asked for",
      p.returncode == 1 and took < 25, f"rc={p.returncode}, {took:.1f} s")
for pid in alive("sleep 37.25"):
    os.kill(pid, signal.SIGKILL)

# ---- interrupts ---------------------------------------------------------------------------------
long_s = value_file("long-seconds", 30)
INTR = write("interrupt.yaml", f"""\
experiment: interrupt
workloads:
  - workload: before
    command: {job("before")}
  - workload: long
    runs: 2
    command: {job("long", long_s)}
  - workload: after
    command: {job("after")}
""")


def read_pty(fd, until=None):
    """What the other end of a pty says: up to until, or up to its end."""
    out = b""
    while until is None or until not in out:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other end has closed
            break
        if not chunk:
            break
        out += chunk
    return out


def by_terminal(store, base):
    """Ctrl-C on the sweep's terminal once both long jobs run: its exit
    status, the seconds from the signal to its exit, its output."""
    pid, master = pty.fork()
    if pid == 0:
        default_sigint()
        os.execve(STROBE, [STROBE, "sweep", f"--store={store}", INTR], ENV)
    out = read_pty(master, b"workload long: 2 runs started")
    wait_for(lambda: started("long") >= base + 2, timeout=20)
    t = time.monotonic()
    os.write(master, b"\x03")  # the terminal's interrupt character
    out += read_pty(master)
    _, wstatus = os.waitpid(pid, 0)
    os.close(master)
    return os.waitstatus_to_exitcode(wstatus), time.monotonic() - t, out.decode(errors="replace")


def by_kill(store, base, group):
    """SIGINT with kill(2) to the sweep, or to its process group, once both
    long jobs run: as by_terminal."""
    proc = start_sweep(store, INTR, start_new_session=group)
    if not wait_running(store, INTR, "long", proc) or \
            not wait_for(lambda: started("long") >= base + 2, timeout=20):
        proc.kill()
        proc.wait()
        return None, 0, said(proc)
    t = time.monotonic()
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    return rc, time.monotonic() - t, said(proc)


for how, what in (("sweep", "SIGINT sent to the sweep (kill(1))"),
                  ("group", "SIGINT to the sweep's process group"),
                  ("terminal", "Ctrl-C on the sweep's terminal")):
    idb = store_path(f"interrupt-{how}.db")
    value_file("long-seconds", 30)
    base, after_base = started("long"), started("after")
    rc, secs, out = by_terminal(idb, base) if how == "terminal" else \
        by_kill(idb, base, how == "group")
    st = shown(idb, INTR)
    long_runs = [r for r in runs_of(idb) if r["workload"] == "long"]
    check(f"{what}: the sweep exits 130, soon", rc == 130 and secs < 15,
          f"rc={rc} {secs:.1f} s\n{out}")
    check(f"{what}: the running jobs stopped (both long runs killed by SIGINT)",
          len(long_runs) == 2 and all(r["status"] == "killed" and r["signal"] == 2
                                      for r in long_runs) and
          wait_for(lambda: not alive(f"{JOB} long"), timeout=10),
          ([(r["name"], r["status"], r["signal"]) for r in long_runs], alive(f"{JOB} long")))
    check(f"{what}: status shows long interrupted; after never ran",
          st["before"] == "finished" and st["long"] == "interrupted" and
          st["after"] in ("interrupted", "pending") and started("after") == after_base, st)
    value_file("long-seconds", 0.2)
    p = sweep(INTR, store=idb)
    again = plan(p.stdout)
    check(f"{what}: the next sweep runs long again (and after), and finishes",
          p.returncode == 0 and again.get("before") == "skip" and
          again.get("long") == "run again" and again.get("after") in ("run", "run again") and
          shown(idb, INTR) == {"before": "finished", "long": "finished", "after": "finished"},
          p.stdout + p.stderr)

# ---- --parallel on the host ---------------------------------------------------------------------
pdb = store_path("parallel.db")
PAR = write("parallel.yaml", f"""\
experiment: parallel
workloads:
  - workload: one
    command: {job("par-one", 0.5)}
  - workload: two
    command: {job("par-two", 0.5)}
""")
p = sweep("--parallel", PAR, store=pdb)
runs = {r["workload"]: r for r in runs_of(pdb)}
spans = {}
for line in p.stdout.splitlines():
    f = line.split()
    if len(f) == 3 and f[0] in ("start", "end"):
        spans.setdefault(f[1], {})[f[0]] = float(f[2])
check("--parallel with two workloads on no device: both finish", p.returncode == 0 and
      set(shown(pdb, PAR).values()) == {"finished"}, p.stdout + p.stderr)
check("... one after the other: the second run starts after the first ends (the host is one "
      "device)", len(runs) == 2 and runs["two"]["start_ns"] >= runs["one"]["end_ns"],
      {n: (r["start_ns"], r["end_ns"]) for n, r in runs.items()})
check("... and by the jobs' own clocks", spans.get("par-two", {}).get("start", 0) >=
      spans.get("par-one", {}).get("end", 1e20), spans)

# ---- a campaign another sweep owns; its owner killed alone --------------------------------------
odb = store_path("owned.db")
own_s = value_file("own-seconds", 60)
OWN = write("owned.yaml", f"experiment: owned\ncommand: {job('owned', own_s)}\n")
owner = start_sweep(odb, OWN)
if not wait_running(odb, OWN, "000", owner):
    check("the owning sweep started its workload", False, said(owner))
n_runs = len(runs_of(odb))
p = sweep(OWN, store=odb)
check("a campaign another live sweep runs is refused: exit 1, one line naming its pid",
      p.returncode == 1 and p.stderr == f"strobe: campaign owned is running: strobe sweep, pid "
      f"{owner.pid} on {os.uname().nodename}\n", repr(p.stderr))
check("... and the refused sweep recorded nothing", len(runs_of(odb)) == n_runs and
      started("owned") == 1, (len(runs_of(odb)), n_runs))
check("status --json says the campaign is running", status(odb, OWN)["running"] is True)
os.kill(owner.pid, signal.SIGKILL)
owner.wait(timeout=30)
check("the owner killed alone: its job ends with it (its recorder had PR_SET_PDEATHSIG)",
      wait_for(lambda: not alive(f"{JOB} owned"), timeout=15), alive(f"{JOB} owned"))
check("... the workload reads lost and its run ends killed, not running",
      shown(odb, OWN) == {"000": "lost"} and
      wait_for(lambda: [r["status"] for r in runs_of(odb)] == ["killed"], timeout=15),
      (shown(odb, OWN), [r["status"] for r in runs_of(odb)]))
value_file("own-seconds", 0)
p = sweep(OWN, store=odb)
check("a campaign whose owner is gone is taken over and finished",
      p.returncode == 0 and plan(p.stdout) == {"000": "run again"} and
      shown(odb, OWN) == {"000": "finished"}, p.stdout + p.stderr)

# ---- a sweep killed after its runs ended, before it saved what they gave -------------------------
sdb = store_path("settle.db")
SETTLE = write("settle.yaml", f"""\
experiment: settle
workloads:
  - workload: unsaid
    command: {job("unsaid", 1)}
  - workload: next
    command: {job("next")}
""")
proc = start_sweep(sdb, SETTLE, start_new_session=True)
running = wait_running(sdb, SETTLE, "unsaid", proc)
os.kill(proc.pid, signal.SIGSTOP)  # the sweep alone: its recorder goes on and saves the run
saved = wait_for(lambda: [r["status"] for r in runs_of(sdb) if r["workload"] == "unsaid"] ==
                 ["finished"], timeout=30)
os.killpg(proc.pid, signal.SIGKILL)
proc.wait(timeout=30)
check("a sweep killed after its workload's run was saved, before it heard: the workload is lost",
      running and saved and shown(sdb, SETTLE)["unsaid"] == "lost",
      (running, saved, shown(sdb, SETTLE), said(proc)))
p = sweep(SETTLE, store=sdb)
check("the next sweep takes its finished run from the store: it does not run it again",
      p.returncode == 0 and plan(p.stdout) == {"unsaid": "skip", "next": "run"} and
      started("unsaid") == 1 and started("next") == 1 and
      shown(sdb, SETTLE) == {"unsaid": "finished", "next": "finished"} and
      [r["status"] for r in runs_of(sdb) if r["workload"] == "unsaid"] == ["finished"],
      p.stdout + p.stderr)

# ---- errors in the file -------------------------------------------------------------------------
edb = store_path("errors.db")
sweep(write("ok.yaml", f"experiment: fine\ncommand: {job('fine')}\n"), store=edb)
before = runs_of(edb)
CASES = [
    ("unknown-key.yaml", f"experiment: e\ncommand: {job('e')}\nbogus: 1\n",
     "3:1", "unknown key 'bogus'"),
    ("bad-timeout.yaml", f"experiment: e\ncommand: {job('e')}\ntimeout: soon\n",
     "3:10", "'soon' is not a duration"),
    ("bad-retries.yaml", f"experiment: e\nworkloads:\n  - command: {job('e')}\n    retries: -1\n",
     "4:14", "retries '-1' is not a whole number from 0 to 100"),
    ("bad-method.yaml", f"experiment: e\ncommand: {job('e')}\nmethod: sideways\n",
     "3:9", "method 'sideways' is not grid or random"),
    ("unknown-device.yaml", f"experiment: e\ncommand: {job('e')}\ndevices: 99\n",
     "3:10", "unknown device '99'"),
    ("missing-param.yaml", "experiment: e\ncommand: echo {lr}\nparameters:\n  bs: {values: [1]}\n",
     "2:15", "command: {lr} names no parameter"),
    ("missing-param-quoted.yaml",
     "experiment: e\nparameters:\n  bs: {values: [1]}\ncommand: \"echo {bs} 'x {lr}'\"\n",
     "4:24", "command: {lr} names no parameter"),
    ("reserved-name.yaml", f"experiment: e\nworkloads:\n  - workload: last\n"
     f"    command: {job('e')}\n", "3:15", "run name 'last' is reserved"),
    ("unknown-column.csv", "Experiment,Workload,Command,Gpus\ne,1,true,0\n",
     "1:29", "unknown column 'Gpus'"),
    ("bad-retries.csv", "Experiment,Workload,Command,Retries\ne,1,true,lots\n",
     "2:10", "Retries 'lots' is not a whole number"),
    ("missing-param.csv", "Experiment,Workload,Command\ne,1,\"echo {lr}\"\n",
     "2:11", "command: {lr} names no parameter"),
]
for name, text, place, what in CASES:
    path = write(name, text)
    for store in (edb, store_path("never.db")):
        p = sweep(path, store=store)
        check(f"{name}: exit 2, one line 'strobe: {name}:{place}: {what}...'" +
              (" (existing store)" if store == edb else " (no store)"),
              p.returncode == 2 and p.stderr.count("\n") == 1 and
              p.stderr.startswith(f"strobe: {path}:{place}: {what}"), repr(p.stderr))
check("a bad file records nothing: no run, no campaign, no store made",
      runs_of(edb) == before and not os.path.exists(store_path("never.db")) and
      subprocess.run([STROBE, "sweep", "status", f"--store={edb}", "e"], capture_output=True,
                     env=ENV).returncode == 1 and started("e") == 0)

print(f"# took {time.monotonic() - began:.1f} s", flush=True)
done()
