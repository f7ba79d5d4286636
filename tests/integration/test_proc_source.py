#!/usr/bin/python3
"""The process tree read through BPF and through procfs gives the same,
true numbers.

One job is recorded twice, once with --proc-source bpf and once with
--proc-source procfs. It forks three children, one of them from a thread
other than the main one and one with a grandchild; each burns a known amount
of CPU (measured by itself with getrusage), one writes 24 MiB with fsync.
Each run must see all five processes with the right parents, each process's
integrated proc.cpu must match its own getrusage reading, the tree's the
job's total (RUSAGE_SELF + RUSAGE_CHILDREN), and the tree's storage writes
the 24 MiB. procfs counts CPU in 10 ms ticks and the kernel brings a running
thread's time up to date at each scheduler tick (4 ms here), so a process is
allowed 0.05 s plus 5 %.

A wide tree (a shell with 1100 children) is followed whole by both, and
a wider one (4200 children: past the per-process series cap, past one BPF
walk of a thread's children, past the fds procfs would keep for all) too,
with one warning for the processes without series of their own. The job
gets the fd limit strobe was started with (strobe raises its own); past
the tree's fd budget procfs reads processes by name, and at limits too low
even for that, the run says how many processes it could not follow.

Run-queue delay (proc.runq_delay): a process with two threads runnable on
one core, against the sum of its threads' own schedstat waits, through
each source, and the two sources against each other.

Then the way in and out of BPF: the source a run used is in show --json
(proc.cpu's meta) and in show's text; a bad --proc-source or
STROBE_PROC_SOURCE is one line and exit 125; --proc-source bpf where BPF
cannot be had (another --proc-root, a user without CAP_BPF) fails before the
job starts, and auto falls back to procfs."""
import json
import sqlite3
import os
import shutil
import subprocess
import tempfile

from strobetest import *

pids_file = store_path("srcpids.json")
out_file = store_path("srcwrite.bin")
job = f"""
import json, os, resource, threading, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
def cpu_s():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime
def child(seconds, report, extra=None):
    pid = os.fork()
    if pid:
        return pid
    if extra:
        extra()
    burn(seconds)
    os.write(report, (json.dumps([os.getpid(), os.getppid(), cpu_s()]) + "\\n").encode())
    os._exit(0)
r, w = os.pipe()
time.sleep(0.3)
pids = [child(0.6, w)]
def grandchild():
    pids_g = child(0.4, w)
    os.waitpid(pids_g, 0)
pids.append(child(0.3, w, grandchild))
def from_thread():
    pids.append(child(0.5, w))
t = threading.Thread(target=from_thread); t.start(); t.join()
with open({out_file!r}, "wb") as f:
    for _ in range(24):
        f.write(os.urandom(1 << 20))
    f.flush(); os.fsync(f.fileno())
burn(0.4)
for p in pids:
    os.waitpid(p, 0)
os.close(w)
seen = [json.loads(l) for l in os.fdopen(r).read().splitlines()]
seen.append([os.getpid(), os.getppid(), cpu_s()])
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
total = cpu_s() + ch.ru_utime + ch.ru_stime
time.sleep(0.3)
open({pids_file!r}, "w").write(json.dumps({{"procs": seen, "total": total}}))
"""


def cpu_integrals(db):
    """{pid: CPU seconds} from each process's proc.cpu, and the tree's."""
    per, tree = {}, None
    for key, series in points(db, "proc.cpu").items():
        secs = integral(series, 0.05) / 100.0
        if key == "proc.cpu":
            tree = secs
        else:
            per[int(key.split("pid=")[1].rstrip("}"))] = secs
    return per, tree


probe = strobe("run", "--quiet", "--proc-source", "bpf", "--", "true", store=store_path("probe.db"))
bpf_why = probe.stderr.strip()
if probe.returncode != 0 and "built without BPF" in bpf_why:
    bpf_ok = None
elif probe.returncode != 0 and os.uname().release.split(".")[:2] < ["6", "7"]:
    bpf_ok = None  # open-coded task iterators came in 6.7
else:
    bpf_ok = probe.returncode == 0
if bpf_ok is None:
    skip("BPF source", bpf_why)
else:
    check("--proc-source bpf starts as root on a kernel with BTF", bpf_ok, bpf_why)

sources = ["procfs"] + (["bpf"] if bpf_ok else [])
tree_cpu = {}
for source in sources:
    db = store_path(f"src-{source}.db")
    p = run(db, PYTHON, "-c", job, opts=("--interval", "50ms", "--proc-source", source))
    if not check(f"{source}: the job ran", p.returncode == 0, p.stderr):
        continue
    truth = json.load(open(pids_file))
    r = show(db)
    check(f"{source}: show --json names the source", r["metrics"]["proc.cpu"].get("meta") ==
          {"source": source}, r["metrics"]["proc.cpu"].get("meta"))
    text = strobe("show", "last", store=db).stdout
    check(f"{source}: show says where the tree came from",
          f"the process tree read through {'BPF' if source == 'bpf' else 'procfs'}" in text)
    metas = {m["meta"]["pid"]: m["meta"] for k, m in r["metrics"].items()
             if k.startswith("proc.cpu{pid=")}
    per, tree = cpu_integrals(db)
    root = truth["procs"][-1][0]
    for pid, ppid, cpu in truth["procs"]:
        role = "root" if pid == root else f"pid {pid}"
        if not check(f"{source}: {role} seen", pid in metas, f"{pid} not in {sorted(metas)}"):
            continue
        if pid != root:
            check(f"{source}: {role}'s parent", metas[pid]["ppid"] == ppid, (metas[pid], ppid))
        near(f"{source}: {role}'s CPU time against its getrusage", per.get(pid), cpu,
             0.05 + 0.05 * cpu, "s")
    near(f"{source}: the tree's CPU time against the job's getrusage", tree, truth["total"],
         0.05 + 0.05 * truth["total"], "s")
    tree_cpu[source] = tree
    written = integral(points(db, "proc.write_bytes_per_s")["proc.write_bytes_per_s"], 0.05)
    near(f"{source}: the tree's storage writes (24 MiB)", written / 2**20, 24, 2.4, "MiB")
    counts = [v for _, v in points(db, "proc.count")["proc.count"]]
    check(f"{source}: proc.count reaches 4 (root, 2 children, then the grandchild or the "
          "thread's child)", max(counts) >= 4, max(counts))

# a wide tree: one shell with 1100 children, more than one page of its
# children file (procfs) and more than one BPF run reads (1024 processes);
# both once lost every child past the 820th and the 512th
for source in sources:
    db = store_path(f"wide-{source}.db")
    p = run(db, "/bin/sh", "-c", "for i in $(seq 1100); do sleep 4 & done; wait",
            opts=("--proc-source", source, "--no-report"))
    if check(f"{source}: the wide job ran", p.returncode == 0, p.stderr):
        counts = [v for _, v in points(db, "proc.count")["proc.count"]]
        check(f"{source}: all 1101 processes of the wide tree are followed at once",
              max(counts) == 1101, max(counts))

# wider than the per-process series cap (4096), and than the fds procfs
# would keep for every process (six each: 25000 > this machine's 20000):
# both sources follow every process (procfs past its fd budget reads a
# process's files by name), the processes past the series cap count in the
# totals, and the run says how many went without series of their own, in
# one warning (they were left out without a word). The job forks nothing
# but its 4200 sleeps and `sleep 1`, during which all 4202 live at once.
for source in sources:
    db = store_path(f"wider-{source}.db")
    p = run(db, "/bin/bash", "-c",
            "for ((i = 0; i < 4200; i++)); do sleep 60 & p+=\" $!\"; done; sleep 1; kill $p; wait",
            opts=("--proc-source", source, "--no-report"))
    if not check(f"{source}: the 4200-child job ran", p.returncode == 0, p.stderr):
        continue
    counts = [v for _, v in points(db, "proc.count")["proc.count"]]
    check(f"{source}: all 4202 processes are counted", max(counts) == 4202, max(counts))
    with sqlite3.connect(db) as c:
        own = c.execute("SELECT count(*) FROM series WHERE name = 'proc.cpu' "
                        "AND labels LIKE 'pid=%'").fetchone()[0]
    check(f"{source}: 4096 processes have series of their own", own == 4096, own)
    said = [l for l in p.stderr.splitlines() if "had no series of their own" in l]
    check(f"{source}: one warning says the other 106 had none",
          len(said) == 1 and " 106 processes" in said[0], said)
    check(f"{source}: and nothing else was lost", "could not be followed" not in p.stderr,
          p.stderr)


def nofile(soft, hard=None):
    """A preexec_fn setting RLIMIT_NOFILE (the hard limit kept unless given)."""
    import resource
    def set_limit():
        h = resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard is None else hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, h), h))
    return set_limit


# strobe raises its own fd limit to the hard one; the job gets the limit
# strobe was started with
ulimits = "ulimit -n; ulimit -Hn"
alone = subprocess.run(["/bin/bash", "-c", ulimits], capture_output=True, text=True,
                       preexec_fn=nofile(512))
p = run(store_path("ulimit.db"), "/bin/bash", "-c", ulimits, opts=("--no-report",),
        preexec_fn=nofile(512))
check("the job's ulimit -n and -Hn are what they are without strobe",
      p.returncode == 0 and p.stdout == alone.stdout and alone.stdout.strip(),
      (p.stdout, alone.stdout, p.stderr))

# past the fd budget (a hard limit of 256 leaves room for the fds of about
# 18 processes through procfs, 56 through BPF): the rest are read by name,
# all of them, without a word
for source in sources:
    db = store_path(f"budget-{source}.db")
    p = run(db, "/bin/bash", "-c",
            "for ((i = 0; i < 400; i++)); do sleep 60 & p+=\" $!\"; done; sleep 1; kill $p; wait",
            opts=("--proc-source", source, "--no-report"), preexec_fn=nofile(256, 256))
    if check(f"{source}: the 400-child job ran under a hard fd limit of 256", p.returncode == 0,
             p.stderr):
        counts = [v for _, v in points(db, "proc.count")["proc.count"]]
        check(f"{source}: all 402 processes are followed past the fd budget", max(counts) == 402,
              max(counts))
        check(f"{source}: without a warning", "could not be followed" not in p.stderr, p.stderr)

# no silent cap: at fd limits too low to read every process, the run says
# how many it could not follow, and why; above them it follows all
warned = 0
for limit in range(24, 64, 4):
    db = store_path(f"fds-{limit}.db")
    p = run(db, "/bin/bash", "-c",
            "for ((i = 0; i < 100; i++)); do sleep 60 & p+=\" $!\"; done; sleep 1; kill $p; wait",
            opts=("--proc-source", "procfs", "--no-report"), preexec_fn=nofile(limit, limit))
    if p.returncode != 0:
        continue  # too few fds for strobe itself: it says so and exits
    said = [l for l in p.stderr.splitlines() if "could not be followed" in l]
    counts = [v for _, v in points(db, "proc.count")["proc.count"]]
    check(f"fd limit {limit}: every process followed, or one warning says how many were not",
          max(counts) == 102 and not said or
          len(said) == 1 and "ran out of file descriptors (ulimit -n" in said[0],
          (max(counts), p.stderr))
    warned += len(said)
check("some fd limit was too low to read every process, and the run said so", warned > 0)

# RSS to the page: two processes hold still for a second (their own statm
# the same before and after) after touching memory, some of it a few pages
# at a time, which stays in a CPU's share of the kernel's RSS counters. Every
# point inside the still window must be statm's figure exactly: the BPF
# program sums the central counts and each online CPU's share, as statm does
# on this kernel, and a sum that missed the shares would be pages off.
still_file = store_path("still.json")
still_job = f"""
import json, mmap, os, time
page = os.sysconf("SC_PAGE_SIZE")
def touch(m, pages):
    for i in range(pages):
        m[i * page] = 1
def statm():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1])
def still():
    statm()
    for _ in range(5):
        a, t0 = statm(), time.time_ns()
        time.sleep(1.0)
        t1, b = time.time_ns(), statm()
        if a == b:
            return [os.getpid(), t0, t1, a * page]
    return [os.getpid(), 0, 0, 0]
big, small = mmap.mmap(-1, 8 << 20), mmap.mmap(-1, 64 * page)
touch(big, 2048)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    touch(small, 23)
    os.write(w, json.dumps(still()).encode())
    os._exit(0)
touch(small, 7)
mine = still()
os.waitpid(pid, 0)
os.close(w)
theirs = json.loads(os.read(r, 4096))
open({still_file!r}, "w").write(json.dumps([mine, theirs]))
"""
for source in sources:
    db = store_path(f"still-{source}.db")
    p = run(db, PYTHON, "-c", still_job, opts=("--interval", "50ms", "--proc-source", source,
                                                "--no-report"))
    if not check(f"{source}: the still job ran", p.returncode == 0, p.stderr):
        continue
    series = points(db, "proc.rss_bytes")
    for pid, t0, t1, rss in json.load(open(still_file)):
        if not check(f"{source}: pid {pid} held still for a second", t1 > t0, "statm kept moving"):
            continue
        inside = [v for ts, v in series.get(f"proc.rss_bytes{{pid={pid}}}", [])
                  if t0 / 1e9 + 0.1 <= ts <= t1 / 1e9 - 0.1]
        check(f"{source}: pid {pid}'s RSS is statm's to the page at every point of the window",
              len(inside) >= 10 and set(inside) == {rss},
              f"statm {rss}, strobe {sorted(set(inside))} over {len(inside)} points")

if len(tree_cpu) == 2:
    a, b = tree_cpu["procfs"], tree_cpu["bpf"]
    near("both sources give the same tree CPU time", b, a, 0.1 + 0.05 * a, "s")

# Run-queue delay: a child pins itself to one core and runs two threads
# that hash (the GIL let go, so both stay runnable) for 2 s: each waits for
# the core about half the time (more when other work lands on that core).
# The threads then idle for 1.5 s before they exit (an exited thread takes
# the wait since its last reading along: up to a second through procfs),
# and the child reads every thread's schedstat itself: proc.runq_delay of
# the child integrated over the run must equal the sum of its threads'
# waits, and the tree's that plus the root's own.
runq_file = store_path("runq.json")
runq_job = f"""
import hashlib, json, os, threading, time
def waits():
    w = {{}}
    for tid in os.listdir("/proc/self/task"):
        try:  # proc(5) schedstat: the second field, time waiting on a runqueue (ns)
            w[int(tid)] = int(open(f"/proc/self/task/{{tid}}/schedstat").read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return w
time.sleep(0.3)
r, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {{max(os.sched_getaffinity(0))}})
    stop, leave = threading.Event(), threading.Event()
    def spin():
        buf = bytes(1 << 20)
        while not stop.is_set():
            hashlib.sha256(buf)
        leave.wait()
    ts = [threading.Thread(target=spin) for _ in range(2)]
    for t in ts:
        t.start()
    a, ta = waits(), time.monotonic()
    time.sleep(2.0)
    b, tb = waits(), time.monotonic()
    stop.set()
    time.sleep(1.5)
    end = waits()
    leave.set()
    for t in ts:
        t.join()
    os.write(wfd, json.dumps({{"pid": os.getpid(), "total": sum(end.values()) / 1e9,
                              "busy_s": tb - ta,
                              "spin": [(b[t.native_id] - a[t.native_id]) / 1e9 for t in ts]}}).encode())
    os._exit(0)
os.close(wfd)
child = json.loads(os.fdopen(r).read())
os.waitpid(pid, 0)
child["root"], child["root_pid"] = sum(waits().values()) / 1e9, os.getpid()
time.sleep(0.3)
open({runq_file!r}, "w").write(json.dumps(child))
"""
runq_ratio = {}
for source in sources:
    db = store_path(f"runq-{source}.db")
    p = run(db, PYTHON, "-c", runq_job, opts=("--interval", "50ms", "--proc-source", source,
                                              "--no-report"))
    if not check(f"{source}: the run-queue job ran", p.returncode == 0, p.stderr):
        continue
    truth = json.load(open(runq_file))
    series = points(db, "proc.runq_delay")
    # points once a second: a newborn's first covers the second before it
    got = {k: integral(v, 1.0) / 100.0 for k, v in series.items()}
    child_s = got.get(f"proc.runq_delay{{pid={truth['pid']}}}")
    print(f"# {source}: the spinning threads waited {truth['spin'][0]:.3f} and "
          f"{truth['spin'][1]:.3f} s of {truth['busy_s']:.3f} s (their own schedstat)")
    near(f"{source}: the child's run-queue delay against its threads' own schedstat", child_s,
         truth["total"], 0.05 + 0.05 * truth["total"], "s")
    want_tree = truth["total"] + truth["root"]
    near(f"{source}: the tree's run-queue delay against the child's and the root's own",
         got.get("proc.runq_delay"), want_tree, 0.1 + 0.05 * want_tree, "s")
    if child_s is not None and truth["total"] > 0:
        runq_ratio[source] = child_s / truth["total"]
if len(runq_ratio) == 2:
    near("both sources give the same run-queue delay (each over its job's own reading)",
         runq_ratio["bpf"], runq_ratio["procfs"], 0.05)

bad = strobe("run", "--proc-source", "ebpf", "--", "true", store=store_path("bad.db"))
check("a bad --proc-source is one line and exit 125",
      bad.returncode == 125 and len(bad.stderr.strip().splitlines()) == 1, (bad.returncode, bad.stderr))
env = dict(os.environ, STROBE_PROC_SOURCE="kernel")
bad = strobe("run", "--", "true", store=store_path("bad.db"), env=env)
check("a bad STROBE_PROC_SOURCE is one line and exit 125",
      bad.returncode == 125 and "STROBE_PROC_SOURCE" in bad.stderr, (bad.returncode, bad.stderr))

fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "proc-a", "t0")
p = strobe("run", "--quiet", "--proc-source", "bpf", "--proc-root", fixture, "--", "true",
           store=store_path("fix.db"))
check("--proc-source bpf with another --proc-root fails before the job",
      p.returncode == 125 and "another proc root" in p.stderr, (p.returncode, p.stderr))

if os.geteuid() == 0:
    # the test's own TMP is root's alone: nobody's store goes beside it
    d = tempfile.mkdtemp(prefix="strobe-nobody-", dir="/tmp")
    os.chmod(d, 0o777)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", STROBE, "run",
                 "--quiet", f"--store={d}/n.db", "--no-report"]
    p = subprocess.run(as_nobody + ["--", "true"], capture_output=True, text=True, timeout=60)
    check("without CAP_BPF, auto records through procfs", p.returncode == 0, p.stderr)
    if p.returncode == 0:
        meta = show(f"{d}/n.db")["metrics"]["proc.cpu"].get("meta")
        check("... and says so", meta == {"source": "procfs"}, meta)
    if bpf_ok:
        p = subprocess.run(as_nobody + ["--proc-source", "bpf", "--", "true"], capture_output=True,
                           text=True, timeout=60)
        check("without CAP_BPF, --proc-source bpf fails in one line naming what it needs",
              p.returncode == 125 and "CAP_BPF" in p.stderr and
              len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr))
        # file capabilities instead of root: a copy of strobe with CAP_BPF and
        # CAP_PERFMON reads through BPF for an ordinary user, and the job
        # it starts holds no capability at all
        capped = os.path.join(d, "strobe")
        shutil.copy(STROBE, capped)
        if shutil.which("setcap") and subprocess.run(
                ["setcap", "cap_bpf,cap_perfmon+ep", capped], capture_output=True).returncode == 0:
            job_caps = os.path.join(d, "caps.txt")
            p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                capped, "run", "--quiet", f"--store={d}/c.db", "--no-report",
                                "--proc-source", "bpf", "--", "sh", "-c",
                                f"grep CapEff /proc/self/status > {job_caps}"],
                               capture_output=True, text=True, timeout=60)
            check("with file capabilities an ordinary user records through BPF",
                  p.returncode == 0, p.stderr)
            if p.returncode == 0:
                meta = show(f"{d}/c.db")["metrics"]["proc.cpu"].get("meta")
                check("... and says so", meta == {"source": "bpf"}, meta)
                eff = open(job_caps).read().split()
                check("... and the job holds no capability", eff[-1:] == ["0000000000000000"], eff)
        else:
            skip("file capabilities", "setcap is missing or the file system has no xattrs")
    shutil.rmtree(d, ignore_errors=True)
else:
    skip("as another user", "needs root to switch users")
done()
