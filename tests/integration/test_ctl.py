#!/usr/bin/python3
"""strobe ctl on running runs: tag and note land in the run, interval changes
the spacing of the stored samples, torch-profile N imports a torch.profiler
trace of N steps after the request, another user and a finished run are
refused, and hostile clients neither crash nor stall the recorder.

The jobs run until the test writes a file, so nothing depends on how fast
the machine is. The recorder's socket directory is the test's own
($XDG_RUNTIME_DIR), so the test can open it to another user without
touching anyone else's.

stacks, py-profile and py-sample need the recorder's Python sampler
(pyprof/sampler.c): until a run has one they are skipped with a note.
"""
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time

from strobetest import *
from stored_events import outside_own_step, steps_of, stored_events

XDG = tempfile.mkdtemp(prefix="strobe-ctl-xdg-", dir="/tmp")
ENV = dict(os.environ, XDG_RUNTIME_DIR=XDG)

WAITER = r'''
import os, sys, threading, time
done = sys.argv[1]
def wait_here():
    while not os.path.exists(done):
        threading.Event().wait(0.02)
wait_here()
'''

TRAIN = r'''
import os, sys, time
import torch, torch.nn as nn
import strobe
done, progress = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
crit = nn.CrossEntropyLoss()
while not os.path.exists(done):
    n = strobe.step()
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    loss = crit(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)
    with open(progress + ".part", "w") as f:
        f.write(str(n))
    os.replace(progress + ".part", progress)
'''


def ctl(db, *args, env=ENV):
    return strobe("ctl", "last", *args, store=db, env=env, timeout=30)


def start(db, *cmd):
    return subprocess.Popen([STROBE, "run", f"--store={db}", "--quiet", "--no-report", "--", *cmd],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def fresh(db_name, *names):
    """A store and files of the test's: none of them left from before."""
    paths = [store_path(db_name)] + [os.path.join(TMP, n) for n in names]
    for f in paths:
        if os.path.exists(f):
            os.unlink(f)
    return paths


def wait_answering(db):
    """Until the run's recorder answers a request that changes nothing."""
    return wait_for(lambda: "unknown request" in ctl(db, "bogus").stderr, timeout=30, step=0.1)


def socket_of(db):
    return os.path.join(XDG, "strobe", show(db)["id"] + ".sock")


def raw(path, data, read=True):
    """Send data on the socket as it is; the reply, or the error's name."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(path)
        try:  # a recorder that refuses at once closes before the request is sent
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        out = b""
        while read:
            d = s.recv(65536)
            if not d:
                break
            out += d
        return out.decode(errors="replace")
    except OSError as e:
        return type(e).__name__
    finally:
        s.close()


def stamps(db, ref="last"):
    csv = strobe("export", "--format", "csv", "--metric", "mem.used_bytes", ref, store=db).stdout
    return [int(line.split(",")[0]) for line in csv.splitlines()[1:]]


def as_nobody(fn):
    """fn() in a child running as uid nobody; its string result, or None
    when no other uid can be had (not root)."""
    if os.geteuid() != 0:
        return None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            out = str(fn())
        except BaseException as e:
            out = f"child failed: {e!r}"
        os.write(w, out.encode()[:60000])
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        d = os.read(r, 65536)
        if not d:
            break
        chunks.append(d)
    os.close(r)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode(errors="replace")


def other_user(db, path):
    """Another user: strobe ctl does not reach the run, and even with the
    directory opened to it, the recorder refuses it."""
    def by_strobe():
        p = subprocess.run([STROBE, "ctl", f"--store={db}", "last", "tag", "evil=1"],
                           capture_output=True, text=True, timeout=30, env=ENV)
        return f"{p.returncode} {p.stderr.strip()}"
    said = as_nobody(by_strobe)
    if said is None:
        skip("another user is refused", "not root: no other uid to run the client as")
        return
    check("another user: strobe ctl fails", not said.startswith("0 "), said)
    sockdir = os.path.dirname(path)
    os.chmod(XDG, 0o711)
    os.chmod(sockdir, 0o711)
    os.chmod(path, 0o666)
    try:
        said = as_nobody(lambda: raw(path, b"tag evil=1\n"))
    finally:
        os.chmod(sockdir, 0o700)
        os.chmod(path, 0o600)
    check("another user: the recorder refuses it by its uid",
          said.startswith("error:") and "another user" in said, said)


def hostile(db, path):
    """A 1 MB line, junk, a NUL, and a client that never writes."""
    big = threading.Thread(target=raw, args=(path, b"x" * (1 << 20)))
    big.start()
    junk = raw(path, bytes(range(256)) * 4 + b"\n")
    check("junk: an error reply", junk.startswith("error:"), junk)
    nul = raw(path, b"tag a\x00b=1\n")
    check("a NUL byte: an error reply", nul.startswith("error:"), nul)
    idle = socket.socket(socket.AF_UNIX)
    idle.settimeout(15)
    idle.connect(path)
    p = ctl(db, "note", "while a client idles")
    check("a client that never writes does not stall the recorder", p.returncode == 0,
          p.stderr)
    try:
        said = idle.recv(4096).decode(errors="replace")
    except OSError as e:
        said = type(e).__name__
    idle.close()
    check("the idle client is told off and closed", said.startswith("error:"), said)
    big.join(30)
    p = ctl(db, "note", "after the hostile clients")
    check("the recorder answers after a 1 MB line", p.returncode == 0, p.stderr)


def basics():
    db, done_file = fresh("ctl.db", "ctl-done")
    job = start(db, PYTHON, "-c", WAITER, done_file)
    check("the recorder answers strobe ctl", wait_answering(db))
    path = socket_of(db)
    st = os.stat(path)
    check("the socket is the user's alone (0600)", st.st_mode & 0o777 == 0o600,
          oct(st.st_mode))
    check("its directory is 0700", os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700)

    p = ctl(db, "tag", "phase=warmup")
    check("tag: ok", p.returncode == 0 and "phase=warmup" in p.stdout, p.stderr)
    p = ctl(db, "tag", "phase=steady")
    check("tag again: replaced", p.returncode == 0, p.stderr)
    p = ctl(db, "tag", "novalue")
    check("tag without =: refused (exit 1)", p.returncode == 1 and "KEY=VALUE" in p.stderr,
          (p.returncode, p.stderr))
    p = ctl(db, "note", "lr", "dropped", "to", "1e-4")
    check("note: ok", p.returncode == 0, p.stderr)
    p = ctl(db, "interval", "5s0")
    check("interval with a bad duration: refused", p.returncode == 1, (p.returncode, p.stderr))
    p = ctl(db, "interval", "61s")
    check("interval past 60 s: refused", p.returncode == 1, (p.returncode, p.stderr))

    # interval: let the 100 ms grid lay down points, then change it
    before = wait_for(lambda: len(stamps(db)) >= 8, timeout=30, step=0.2)
    t_ask = time.time_ns()
    p = ctl(db, "interval", "20ms")
    t_told = time.time_ns()
    check("interval 20ms: ok", p.returncode == 0 and "20ms" in p.stdout, (p.stdout, p.stderr))
    check("interval: points laid down before the change", before)
    wait_for(lambda: len([t for t in stamps(db) if t > t_told]) >= 30, timeout=30, step=0.2)

    hostile(db, path)
    other_user(db, path)
    t_hostile = time.time_ns()
    wait_for(lambda: len([t for t in stamps(db) if t > t_hostile]) >= 5, timeout=30, step=0.2)

    with open(done_file, "w"):
        pass
    out, err = job.communicate(timeout=60)
    check("the job exits 0 under the requests", job.returncode == 0, err[-800:])
    check("no socket is left behind", not os.path.exists(path), path)

    r = show(db)
    check("tag: in strobe show --json", r["tags"].get("phase") == "steady", r["tags"])
    texts = [n["text"] for n in r.get("notes", [])]
    check("note: in strobe show --json", "lr dropped to 1e-4" in texts, texts)
    check("interval: its change is a note", any("100ms -> 20ms" in t for t in texts), texts)
    note = next((n for n in r.get("notes", []) if n["text"] == "lr dropped to 1e-4"), None)
    check("a note has its time (ISO 8601, UTC)",
          note and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", note["time"]), note)
    text = strobe("show", "last", store=db).stdout
    check("note: in strobe show", "lr dropped to 1e-4" in text, text[:600])
    check("tag: in strobe show", "tag       phase=steady" in text, text[:600])

    ts = stamps(db)
    old = [b - a for a, b in zip(ts, ts[1:]) if b < t_ask]
    new = [b - a for a, b in zip(ts, ts[1:]) if a > t_told]
    check("interval: before, every spacing a multiple of 100 ms",
          old and all(d % 100_000_000 == 0 for d in old[:-1]), old[:20])
    check("interval: after, every spacing a multiple of 20 ms, most exactly 20 ms",
          len(new) >= 20 and all(d % 20_000_000 == 0 for d in new[:-1]) and
          sum(d == 20_000_000 for d in new) > len(new) // 2,
          sorted(set(new))[:20])
    check("sampling went on past the hostile clients",
          len([t for t in ts if t > t_hostile]) >= 5)

    p = ctl(db, "note", "too late")
    check("a finished run is refused (exit 3)", p.returncode == 3 and "not recording" in p.stderr,
          (p.returncode, p.stderr))
    elsewhere(db)


def elsewhere(db):
    """A run that records on another host: its row says so."""
    copy = store_path("ctl-elsewhere.db")
    shutil.copy(db, copy)
    c = sqlite3.connect(copy)
    # another machine's recorder: another host, booted another time
    c.execute("UPDATE runs SET host='elsewhere.example', status='running', end_ns=NULL, "
              "exit_code=NULL, recorder_boot_id='00000000-0000-0000-0000-000000000000'")
    c.commit()
    c.close()
    p = ctl(copy, "note", "x")
    check("a run on another host is refused (exit 4)",
          p.returncode == 4 and "records on host elsewhere.example" in p.stderr,
          (p.returncode, p.stderr))


def torch_window():
    db, done_file, progress = fresh("ctl-torch.db", "ctl-torch-done", "ctl-torch-step")
    script = os.path.join(TMP, "ctl_train.py")
    with open(script, "w") as f:
        f.write(TRAIN)
    job = start(db, PYTHON, script, done_file, progress)

    def step_now():
        try:
            with open(progress) as f:
                return int(f.read() or 0)
        except (OSError, ValueError):
            return 0
    check("torch: the training runs", wait_for(lambda: step_now() >= 3, timeout=120, step=0.1))
    wait_answering(db)
    p = ctl(db, "torch-profile", "3")
    m = re.search(r"steps (\d+) to (\d+)", p.stdout)
    check("torch-profile 3: ok, naming the steps", p.returncode == 0 and m, (p.stdout, p.stderr))
    first = int(m.group(1)) if m else 0
    p2 = ctl(db, "torch-profile", "2")
    check("a second window while one is open: refused", p2.returncode == 1, (p2.stdout, p2.stderr))
    wait_for(lambda: step_now() >= first + 5, timeout=120, step=0.1)
    with open(done_file, "w"):
        pass
    out, err = job.communicate(timeout=120)
    check("torch: the job exits 0", job.returncode == 0, err[-800:])
    rid = show(db)["id"]
    ev = stored_events(db, rid)
    steps = steps_of(ev)
    ops = [e for e in ev if e["name"].startswith("op:")]
    got = sorted({o["step"] for o in ops})
    check("torch-profile 3: operators of exactly 3 consecutive steps",
          len(got) == 3 and got == list(range(got[0], got[0] + 3)), got)
    # the job opens the window at the first step that begins after it sees the request:
    # the one after the steps the recorder had seen, or the one after that if a step
    # began while the reply was on its way
    check("torch-profile 3: they start at the step after the request",
          got and got[0] in (first, first + 1), (got, first))
    bad = outside_own_step(ops, steps)
    check("torch-profile: each operator inside its own step", ops and not bad,
          f"{len(bad)} of {len(ops)}")


def sampler_requests():
    """stacks, py-profile, py-sample: need the recorder's Python sampler."""
    db, done_file = fresh("ctl-stacks.db", "ctl-stacks-done")
    job = start(db, PYTHON, "-c", WAITER, done_file)
    wait_answering(db)
    p = ctl(db, "stacks")
    deadline = time.monotonic() + 10  # the job may still be starting: ask again, as a user would
    while p.returncode == 0 and "wait_here" not in p.stdout and time.monotonic() < deadline:
        time.sleep(0.2)
        p = ctl(db, "stacks")
    if p.returncode == 1 and "no Python sampler" in p.stderr:
        for name in ("stacks", "py-profile", "py-sample"):
            skip(f"{name} answers", "this build's recorder has no Python sampler")
    else:
        check("stacks: names the function the job waits in",
              p.returncode == 0 and "wait_here" in p.stdout, (p.stdout[-1500:], p.stderr))
        p = ctl(db, "py-profile", "5")
        check("py-profile 5: ok, naming the steps",
              p.returncode == 0 and re.search(r"steps \d+ to \d+", p.stdout), (p.stdout, p.stderr))
        for rate in ("50", "100Hz", "10ms", "off"):
            p = ctl(db, "py-sample", rate)
            check(f"py-sample {rate}: ok", p.returncode == 0, (p.stdout, p.stderr))
        p = ctl(db, "py-sample", "fast")
        check("py-sample fast: refused", p.returncode == 1, (p.stdout, p.stderr))
    p = ctl(db, "py-profile", "0")
    check("py-profile 0: refused", p.returncode == 1, (p.stdout, p.stderr))
    with open(done_file, "w"):
        pass
    job.communicate(timeout=60)


# 300 threads, each 200 calls deep: its stacks are megabytes, more than a
# socket's buffer takes at once
CROWD = r'''
import os, sys, threading
done = sys.argv[1]
ready = threading.Barrier(301)
def descend(n, i):
    if n:
        return descend(n - 1, i)
    ready.wait()
    while not os.path.exists(done):
        threading.Event().wait(0.05)
for i in range(300):
    threading.Thread(target=descend, args=(200, i), daemon=True).start()
ready.wait()
print("READY", flush=True)
while not os.path.exists(done):
    threading.Event().wait(0.05)
'''


def long_reply():
    """stacks of 300 threads 200 deep: the whole reply arrives."""
    db, done_file = fresh("ctl-crowd.db", "ctl-crowd-done")
    job = start(db, PYTHON, "-c", CROWD, done_file)
    job.stdout.readline()  # READY: every thread is at its depth
    wait_answering(db)
    p = ctl(db, "stacks")
    threads = p.stdout.count("  thread ")
    deep = p.stdout.count("    descend (")
    check("stacks of 300 threads 200 deep: every thread, every frame",
          p.returncode == 0 and threads == 301 and deep == 300 * 201 and
          p.stdout.rstrip().endswith(")"),
          (len(p.stdout), threads, deep, p.stderr[-300:]))
    check("... more than a socket's buffer takes at once", len(p.stdout) > 1 << 20,
          len(p.stdout))
    with open(done_file, "w"):
        pass
    job.communicate(timeout=60)


try:
    basics()
    torch_window()
    sampler_requests()
    long_reply()
finally:
    shutil.rmtree(XDG, ignore_errors=True)
done()
