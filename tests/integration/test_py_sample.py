#!/usr/bin/python3
"""strobe run --py-sample / --py-profile on real Python jobs, against what
the jobs measure themselves:

- two functions of known CPU shares: the job times each with
  time.thread_time(); the on-CPU samples split the same way, within 5
  points, and no more samples than the rate allows;
- a data loader whose workers spend their time in decode_sample(): the
  workers' flame graph (--role worker, and each worker's pid as the worker
  printed it) names it; the main process's on-CPU samples do not; with no
  workers, the data phase names it and the forward phase does not;
- a thread blocked on an Event is sampled as waiting (lock), shown only
  with --idle; one that moves from one wait to another shows in both;
- --py-profile A-B samples steps A to B only;
- a running run's flame graph is read while it records, by strobe flame and
  by the dashboard's API, whose data at the end is strobe flame --format json's;
- a process of an unknown CPython version, and one whose memory cannot be
  read, each give one note; the job runs and everything else is recorded."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

from strobetest import PYTHON, TMP, check, done, near, show, skip, store_path, strobe


def api_json(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def flame(store, *args, ref="last"):
    p = strobe("flame", ref, "--format", "collapsed", *args, store=store)
    counts = {}
    for line in p.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        counts[stack] = counts.get(stack, 0) + int(n)
    return p, counts


def share(counts, func):
    """Samples whose stack holds func, and all samples."""
    total = sum(counts.values())
    hit = sum(n for stack, n in counts.items() if any(f.startswith(func + " (")
                                                      for f in stack.split(";")))
    return hit, total


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


SHARES = r"""
import sys, time
def spin(seconds):
    t = time.thread_time() + seconds
    x = 0
    while time.thread_time() < t:
        x += 1
    return x
def heavy():
    return spin(0.007)
def light():
    return spin(0.003)
used = {"heavy": 0.0, "light": 0.0}
t0 = time.monotonic()
while time.monotonic() - t0 < float(sys.argv[1]):
    for f in (heavy, light):
        a = time.thread_time(); f(); used[f.__name__] += time.thread_time() - a
print("USED", used["heavy"], used["light"], time.monotonic() - t0, flush=True)
"""


def test_shares():
    store = store_path("shares.db")
    job = write("shares.py", SHARES)
    p = strobe("run", "--quiet", "--py-sample", "200", "--", PYTHON, job, "6", store=store)
    check("shares: the job ran", p.returncode == 0, p.stderr)
    used = [line.split() for line in p.stdout.splitlines() if line.startswith("USED")]
    if not check("shares: the job logged its CPU", used, p.stdout):
        return
    heavy_s, light_s, wall_s = (float(x) for x in used[0][1:])
    want = 100 * heavy_s / (heavy_s + light_s)
    f, counts = flame(store)
    check("shares: strobe flame answers", f.returncode == 0 and counts, f.stderr)
    heavy, total = share(counts, "heavy")
    light, _ = share(counts, "light")
    check("shares: samples land in heavy and light", heavy > 0 and light > 0, counts)
    got = 100 * heavy / (heavy + light) if heavy + light else None
    near("shares: heavy's share of heavy+light is the job's own (5 points)", got, want, 5.0,
         f"({heavy} and {light} samples)")
    check("shares: no more samples than 200 Hz allows", total <= 200 * (wall_s + 1.0),
          f"{total} samples in {wall_s:.1f} s")
    check("shares: most ticks were sampled", total >= 0.5 * 200 * wall_s,
          f"{total} samples in {wall_s:.1f} s")
    # the functions nest as the code does: spin under heavy under <module>
    nested = [s for s in counts if s.endswith(";heavy (%s:9);spin (%s:3)" % (job, job))]
    check("shares: stacks are root first, with file and first line", nested,
          list(counts)[:5])
    # the timeline: heavy's and light's slices on the main thread's Python track
    out = os.path.join(TMP, "shares-trace.json")
    t = strobe("trace", "last", "-o", out, store=store)
    events = json.load(open(out))["traceEvents"] if t.returncode == 0 else []
    tracks = {e["tid"]: e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    slices = [e for e in events if e.get("cat") == "python" and e.get("ph") == "X"]
    named = {e["name"].split(" (")[0] for e in slices}
    check("trace: the samples are slices on a 'python TID' track",
          slices and all(tracks.get(e["tid"], "").startswith("python ") for e in slices),
          sorted(set(tracks.values()))[:5])
    check("trace: heavy and light are on the timeline", {"heavy", "light"} <= named, named)
    hs = sum(e["dur"] for e in slices if e["name"].startswith("heavy ("))
    ls = sum(e["dur"] for e in slices if e["name"].startswith("light ("))
    near("trace: heavy's share of the time on the track is the job's own (5 points)",
         100 * hs / (hs + ls) if hs + ls else None, want, 5.0)


LOADER = r"""
import os, sys, time, torch
from torch.utils.data import DataLoader, Dataset
def decode_sample(i):
    t = time.thread_time() + 0.004
    x = 0
    while time.thread_time() < t:
        x += i
    return torch.full((16,), float(x % 7))
class Items(Dataset):
    def __len__(self):
        return 4096
    def __getitem__(self, i):
        return decode_sample(i)
def init(worker_id):
    # one write(2): two workers' lines must not interleave
    os.write(1, f"WORKER {worker_id} {os.getpid()}\n".encode())
workers = int(sys.argv[1])
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Items(), batch_size=8, num_workers=workers, worker_init_fn=init)
t0 = time.monotonic()
for step, x in enumerate(loader):
    loss = model(x).sum()
    opt.zero_grad(); loss.backward(); opt.step()
    if time.monotonic() - t0 > float(sys.argv[2]):
        break
print("MAIN", os.getpid(), step, flush=True)
"""


def test_workers():
    store = store_path("workers.db")
    job = write("loader.py", LOADER)
    p = strobe("run", "--quiet", "--py-sample", "100", "--", PYTHON, job, "2", "5", store=store,
               timeout=300)
    check("workers: the job ran", p.returncode == 0, p.stderr[-2000:])
    pids = {int(w[1]): int(w[2]) for w in (l.split() for l in p.stdout.splitlines())
            if w[0] == "WORKER"}
    check("workers: two workers started", len(pids) == 2, p.stdout)
    _, counts = flame(store, "--role", "worker")
    hit, total = share(counts, "decode_sample")
    check("workers: the workers' flame graph names decode_sample, mostly",
          total and hit / total >= 0.5, f"{hit} of {total}: {list(counts)[:5]}")
    for wid, pid in sorted(pids.items()):
        _, c = flame(store, "--pid", str(pid))
        h, t = share(c, "decode_sample")
        check(f"workers: worker {wid} (pid {pid}) spends its time in decode_sample",
              t and h / t >= 0.5, f"{h} of {t}")
        _, c = flame(store, "--role", f"worker {wid}")
        check(f"workers: --role 'worker {wid}' is that worker", sum(c.values()) == t,
              f"{sum(c.values())} against {t}")
    _, main = flame(store, "--role", "main")
    h, t = share(main, "decode_sample")
    check("workers: the main process does not decode", t and h <= 0.02 * t, f"{h} of {t}")
    _, data = flame(store, "--phase", "data")
    h, t = share(data, "decode_sample")
    check("workers: the data phase names decode_sample (the workers' samples)",
          t and h / t >= 0.5, f"{h} of {t}")
    html = os.path.join(TMP, "workers.html")
    r = strobe("report", "last", "-o", html, store=store)
    text = open(html).read() if r.returncode == 0 else ""
    check("workers: the report has the Python hotspots, decode_sample among them",
          "Python hotspots" in text and "decode_sample" in text, r.stderr)

    store = store_path("inline.db")
    p = strobe("run", "--quiet", "--py-sample", "100", "--", PYTHON, job, "0", "4", store=store,
               timeout=300)
    check("no workers: the job ran", p.returncode == 0, p.stderr[-2000:])
    _, data = flame(store, "--phase", "data")
    h, t = share(data, "decode_sample")
    check("no workers: the data phase is decode_sample, mostly", t and h / t >= 0.5,
          f"{h} of {t}")
    _, fwd = flame(store, "--phase", "forward")
    h, t = share(fwd, "decode_sample")
    check("no workers: the forward phase is not", h == 0, f"{h} of {t}")


BLOCKED = r"""
import threading, time, sys
ev = threading.Event()
def wait_here():
    ev.wait()
def first_wait():
    threading.Event().wait(0.8)
def second_wait():
    threading.Event().wait()
def waits_twice():
    first_wait()
    second_wait()
def burn():
    t = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < t:
        pass
threading.Thread(target=wait_here, daemon=True).start()
threading.Thread(target=waits_twice, daemon=True).start()
burn()
"""


def test_idle():
    store = store_path("idle.db")
    job = write("blocked.py", BLOCKED)
    p = strobe("run", "--quiet", "--py-sample", "100", "--", PYTHON, job, "2", store=store)
    check("idle: the job ran", p.returncode == 0, p.stderr)
    _, cpu = flame(store)
    _, idle = flame(store, "--idle")
    h, _ = share(cpu, "wait_here")
    check("idle: a blocked thread is not on-CPU", h == 0, h)
    h, t = share(idle, "wait_here")
    check("idle: --idle shows it waiting in wait_here", h >= 100, f"{h} of {t}")
    # a waiting thread's stack is reused while it does not run: once it
    # runs and waits elsewhere, the new stack must show
    first, _ = share(idle, "first_wait")
    second, _ = share(idle, "second_wait")
    check("idle: a thread that moves from one wait to another shows both",
          first >= 40 and second >= 60, f"first_wait {first}, second_wait {second}")
    j = strobe("flame", "last", "--idle", "--format", "json", store=store)
    data = json.loads(j.stdout) if j.returncode == 0 else {}
    states = data.get("states", [])
    waits = {}
    for stack, role, phase, state, n in data.get("counts", []):
        frames = [data["frames"][i][0] for i in data["stacks"][stack]]
        if "wait_here" in frames:
            waits[states[state]] = waits.get(states[state], 0) + n
    check("idle: waiting on an Event is a lock wait", waits and max(waits, key=waits.get) == "lock",
          waits)


STEPS = r"""
import time, strobe
def work(step):
    t = time.monotonic() + 0.1
    while time.monotonic() < t:
        pass
for step in range(1, 21):
    strobe.step(step)
    work(step)
"""


def test_window():
    store = store_path("window.db")
    job = write("steps.py", STEPS)
    p = strobe("run", "--quiet", "--py-profile", "8-12", "--", PYTHON, job, store=store)
    check("window: the job ran", p.returncode == 0, p.stderr)
    _, inside = flame(store, "--steps", "8-12")
    _, everything = flame(store)
    n_in, n_all = sum(inside.values()), sum(everything.values())
    # five 100 ms steps at 100 Hz: about 50 samples; the window opens when
    # step 7 begins (the recorder learns of a step up to 100 ms late) and
    # closes up to 100 ms into step 13
    check("window: steps 8-12 are sampled whole", 40 <= n_in <= 60, n_in)
    check("window: at most step 7 and a drain's lag outside", n_all - n_in <= 30,
          f"{n_all - n_in} outside")
    for a, b in ((1, 6), (15, 20)):
        _, far = flame(store, "--steps", f"{a}-{b}")
        check(f"window: none in steps {a}-{b}", sum(far.values()) == 0, far)


def test_live():
    store = store_path("live.db")
    job = write("long.py", SHARES)
    proc = subprocess.Popen([os.environ.get("STROBE", "build/strobe"), "run", f"--store={store}",
                             "--quiet", "--py-sample", "100", "--", PYTHON, job, "6"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not seen:
        time.sleep(0.5)
        if os.path.exists(store):
            _, c = flame(store)
            seen = sum(c.values())
    state = show(store).get("status") if os.path.exists(store) else None
    check("live: strobe flame reads a running run", seen > 0 and proc.poll() is None,
          f"{seen} samples, status {state}")
    srv = subprocess.Popen([os.environ.get("STROBE", "build/strobe"), "serve", "--store", store,
                            "--listen", "127.0.0.1:0", "--rate", "0"], stderr=subprocess.PIPE,
                           text=True)
    try:
        m = re.search(r"http://(127\.0\.0\.1:\d+)/", srv.stderr.readline())
        run_id = show(store)["id"]
        url = f"http://{m.group(1)}/api/runs/{run_id}/flame" if m else None
        first = api_json(url)
        time.sleep(1.5)
        second = api_json(url)
        check("live: the dashboard's flame data grows while the run records",
              proc.poll() is None and 0 < first.get("samples", 0) < second.get("samples", 0),
              (first.get("samples"), second.get("samples"), proc.poll()))
        proc.communicate(timeout=60)
        final = api_json(url + "?idle=1")
        cli = strobe("flame", run_id, "--idle", "--format", "json", store=store)
        want = json.loads(cli.stdout) if cli.returncode == 0 else None
        check("live: at the end, the API's flame data is strobe flame --format json's",
              want is not None and final == want,
              (final.get("samples"), want and want.get("samples")))
    finally:
        srv.terminate()
        srv.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()


FAKE = r"""
#include <stdint.h>
#include <unistd.h>
#include <time.h>
unsigned char _PyRuntime[4096];
const unsigned long Py_Version = VERSION;
int main(void)
{
    for (int i = 0; i < 4096; i++)
        _PyRuntime[i] = (unsigned char)(i * 37);
    struct timespec t = {0, 20000000};
    for (int i = 0; i < 100; i++)
        nanosleep(&t, 0);
    return 0;
}
"""


def notes_of(store):
    import sqlite3
    db = sqlite3.connect(store)
    try:
        row = db.execute("SELECT text FROM run_texts WHERE kind = 'py-notes'").fetchone()
    finally:
        db.close()
    return (row[0].decode() if isinstance(row[0], bytes) else row[0]) if row else ""


def test_unreadable():
    for name, version, want in (("3.9", "0x030900f0", "3.9"), ("garbled 3.11", "0x030b02f0", "")):
        src = write("fake.c", FAKE.replace("VERSION", version))
        exe = os.path.join(TMP, "python3.fake")
        cc = subprocess.run(["cc", "-O0", "-rdynamic", "-o", exe, src], capture_output=True,
                            text=True)
        if not check(f"fake python {name}: built", cc.returncode == 0, cc.stderr):
            continue
        store = store_path(f"fake{version}.db")
        p = strobe("run", "--quiet", "--py-sample", "100", "--", exe, store=store)
        check(f"fake python {name}: the job runs to its end", p.returncode == 0, p.stderr)
        s = show(store)
        check(f"fake python {name}: the run is recorded", s.get("status") == "finished" and
              s.get("samples", 0) > 5, s.get("status"))
        notes = notes_of(store)
        check(f"fake python {name}: one note says why", notes.count("\n") == 1 and want in notes
              and "not sampled" in notes, repr(notes))

    if os.geteuid() != 0:
        skip("non-dumpable job: one note", "needs root to run strobe as another user")
        return
    job = write("nodump.py", "import ctypes, time\n"
                "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n"  # PR_SET_DUMPABLE 0
                "t = time.monotonic() + 2\nwhile time.monotonic() < t: pass\n")
    os.chmod(TMP, 0o777)
    os.chmod(job, 0o644)
    store = store_path("nodump.db")
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        os.path.abspath(os.environ.get("STROBE", "build/strobe")), "run",
                        f"--store={store}", "--quiet", "--py-sample", "100", "--", PYTHON, job],
                       capture_output=True, text=True, timeout=120, cwd=TMP)
    check("non-dumpable job: it runs to its end", p.returncode == 0, p.stderr)
    s = show(store)
    check("non-dumpable job: the run is recorded", s.get("samples", 0) > 5, s)
    notes = notes_of(store)
    check("non-dumpable job: one note says its memory cannot be read",
          notes.count("\n") == 1 and "not sampled" in notes, repr(notes))


test_shares()
test_workers()
test_idle()
test_window()
test_live()
test_unreadable()
done()
