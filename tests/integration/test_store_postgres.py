#!/usr/bin/python3
"""The PostgreSQL store against the SQLite one, on a server of the test's own
(tests/tools/pgserver, strobetest.pg_server).

1. The same SageMaker directory (written here, deterministic) imported into
   both stores, twice: ls, show (text and --json), export (csv, jsonl,
   sagemaker), trace (chrome, perfetto), report, rules --json, logs and
   compare print the same bytes once the run ids and the store's name are
   replaced; so do serve's /api/runs and /api/runs/ID. Then rm.
2. A real job (strobe run of a Python script with strobe.step() and
   strobe.log()) into both: the same steps and logged values.
3. The errors: a bad URI, a refused connection, a wrong password and a
   schema from a newer strobe each give one line; strobe run exits 125
   before the job starts (the job would make a file), read commands exit 1.
4. The password: in none of the commands' output, show --json, the report,
   the files the run wrote, the stored rows (pg_dump) or the recorder's
   /proc/PID/cmdline while it records; with the URI in $STROBE_STORE too.

Skips, saying why, where PostgreSQL is not installed or the strobe under
test has no PostgreSQL backend.
"""
import difflib
import glob
import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from strobetest import *

said = []  # (what, text) of every strobe command: none may hold the password


def sx(*args, **kw):
    p = strobe(*args, **kw)
    said.append((" ".join(args[:2]), p.stdout + p.stderr))
    return p


# ---- a SageMaker Debugger directory -------------------------------------------
T0 = 1700000130.0  # 2023-11-14 22:15:30 UTC
STEPS = 30


def write_sagemaker(base, t0):
    """Two nodes, 2 cores and 1 GPU each, a snapshot every 500 ms for 20 s
    from t0 (the runs' order in ls), and STEPS steps each with data, forward
    and optimizer spans: the same bytes every time."""
    rnd = random.Random(25)
    hour = time.strftime("%Y%m%d%H", time.gmtime(t0))
    for node in ("algo-1", "algo-2"):
        lines = []
        for k in range(40):
            ts = round(t0 + 0.5 * k, 6)
            for typ, name, dim in (("cpu", "cpu0", "CPUUtilization"),
                                   ("cpu", "cpu1", "CPUUtilization"),
                                   ("memory", "MemoryUsedPercent", ""),
                                   ("gpu", "gpu0", "GPUUtilization")):
                lines.append(json.dumps({"Type": typ, "Name": name, "Dimension": dim,
                                         "Value": rnd.random() * 100, "NodeId": node,
                                         "Timestamp": ts}))
        d = os.path.join(base, "system", "incremental", hour)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{int(t0)}.{node}.json"), "w") as f:
            f.write("\n".join(lines) + "\n")
        start_us = int(t0 * 1e6)
        phases = ["Step:ModeKeys.TRAIN", "DataLoaderIter", "Forward", "Optimizer"]
        evs = [{"name": "process_name", "ph": "M", "pid": 0,
                "args": {"start_time_since_epoch_in_micros": start_us}}]
        evs += [{"name": "process_name", "ph": "M", "pid": i + 1, "args": {"name": ph}}
                for i, ph in enumerate(phases)]
        end = 0
        for k in range(1, STEPS + 1):
            t = int(k * 500000 + rnd.uniform(0, 2000))
            data, fwd, opt = 100000 + k * 1000, 200000, 50000
            for pid, name, at, dur in ((1, "Step:ModeKeys.TRAIN", t, data + fwd + opt + 3000),
                                       (2, "_SingleProcessDataLoaderIter::GetNext", t + 1000, data),
                                       (3, "Net", t + 2000 + data, fwd),
                                       (4, "Optimizer.step", t + 3000 + data + fwd, opt)):
                evs.append({"name": name, "pid": pid, "ph": "X", "ts": at, "dur": dur,
                            "args": {"pid": 4242, "step_num": k}})
            end = t + 500000
        d = os.path.join(base, "framework", "pevents", hour)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{start_us + end}_4242-{node}_pythontimeline.json"), "w") as f:
            f.write("[\n" + ",\n".join(json.dumps(e) for e in evs) + "\n]\n")


def ids_by_name(store):
    p = sx("ls", "--json", store=store)
    return {r["name"]: r["id"] for r in json.loads(p.stdout)} if p.returncode == 0 else {}


def redacted(uri):
    """The URI as strobe may print it: without the password."""
    u = urllib.parse.urlsplit(uri)
    netloc = f"{u.username}@{u.hostname}:{u.port}"
    return urllib.parse.urlunsplit((u.scheme, netloc, u.path, u.query, u.fragment))


class Store:
    """One store under test: its URI, the names it prints it by, run ids."""

    def __init__(self, uri, shown):
        self.uri, self.shown, self.ids = uri, shown, {}

    def norm(self, data):
        """Output with this store's run ids (and their 8-digit short forms)
        and names replaced."""
        if isinstance(data, str):
            data = data.encode()
        for name, rid in self.ids.items():
            data = data.replace(rid.encode(), f"<{name}>".encode())
            data = data.replace(rid[:8].encode(), f"<{name}>".encode())
        for s in self.shown:
            data = data.replace(s.encode(), b"<store>")
        return data


def same(what, a, b):
    """a's and b's outputs are the same bytes, normalized."""
    x, y = sq.norm(a), pg.norm(b)
    if x == y:
        return check(f"same bytes: {what}", True)
    diff = list(difflib.unified_diff(x.decode(errors="replace").splitlines(),
                                     y.decode(errors="replace").splitlines(), "sqlite",
                                     "postgresql", n=0, lineterm=""))
    return check(f"same bytes: {what}", False, "\n".join(d[:300] for d in diff[:12]))


def both(what, *args, files=None):
    """Run strobe with args on each store, in a folder of the store's own
    ("{a}"/"{b}" stand for the runs sm-a and sm-b), and compare stdout,
    stderr and exit status; files: an output (a file or a folder, relative
    to that folder) to compare too."""
    out = []
    for st, tag in ((sq, "sqlite"), (pg, "pg")):
        a = [x.format(a=st.ids.get("sm-a", "?"), b=st.ids.get("sm-b", "?")) for x in args]
        cwd = os.path.join(TMP, "out-" + tag)
        os.makedirs(cwd, exist_ok=True)
        p = sx(*a, store=st.uri, cwd=cwd)
        body = b""
        if files:
            path = os.path.join(cwd, files)
            paths = [path] if os.path.isfile(path) else sorted(
                glob.glob(os.path.join(path, "**", "*"), recursive=True))
            for f in paths:
                if os.path.isfile(f):
                    body += os.path.relpath(f, path).encode() + b":\n" + open(f, "rb").read()
        out.append((p, body))
    (p, f), (q, g) = out
    check(f"{what}: exit {p.returncode} on both", p.returncode == q.returncode,
          (p.returncode, q.returncode, q.stderr[-300:]))
    same(f"{what}: stdout", p.stdout, q.stdout)
    # a file's size as stderr gives it ("r.html (142.8 KiB)") differs by the
    # length of the store's name the file names; the file's bytes are
    # compared below, with the name replaced
    sized = re.compile(r"\(\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB)\)")
    same(f"{what}: stderr", sized.sub("(<size>)", p.stderr) if files else p.stderr,
         sized.sub("(<size>)", q.stderr) if files else q.stderr)
    if files:
        check(f"{what}: wrote its output", len(f) > 0, files)
        same(f"{what}: the output", f, g)
    return p, q


def serve(store):
    """strobe serve on store at a free port: (process, port)."""
    p = subprocess.Popen([STROBE, "serve", "--store", store, "--listen", "127.0.0.1:0", "--rate",
                          "0"], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    said.append(("serve", line))
    m = re.search(r"127\.0\.0\.1:(\d+)/", line)
    return p, int(m.group(1)) if m else 0


def api_get(port, path):
    """(status, body) of GET path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    said.append(("serve " + path, body.decode(errors="replace")))
    return status, body


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_line_error(what, p, want_rc, mark=None):
    lines = p.stderr.strip().splitlines()
    check(f"{what}: exit {want_rc}", p.returncode == want_rc, (p.returncode, p.stderr[-300:]))
    check(f"{what}: one line on stderr, in strobe's voice",
          len(lines) == 1 and lines[0].startswith("strobe: "), p.stderr[-500:])
    if mark is not None:
        check(f"{what}: the job did not run", not os.path.exists(mark), mark)


PY_JOB = """
import strobe, time
for i in range(12):
    strobe.step()
    with strobe.span("work"):
        time.sleep(0.01)
    strobe.log("loss", 1.0 / (i + 1))
"""

why = pg_missing()
if why:
    skip("PostgreSQL store tests", why)
    done()

with pg_server() as uri:
    PASSWORD = urllib.parse.urlsplit(uri).password
    check("the server's URI holds a password", bool(PASSWORD), uri.replace(PASSWORD or "", "***"))
    sq_path = store_path("same.db")
    sq = Store(sq_path, [sq_path])
    pg = Store(uri, [uri, redacted(uri)])

    # ---- 1. the same import on both ---------------------------------------------
    src = {}
    for k, name in enumerate(("sm-a", "sm-b", "sm-c")):
        src[name] = os.path.join(TMP, name)
        write_sagemaker(src[name], T0 + 3600 * k)
    for st in (sq, pg):
        for name in ("sm-a", "sm-b"):
            p = sx("import", "sagemaker", "--name", name, src[name], store=st.uri)
            check(f"import {name} into {'PostgreSQL' if st is pg else 'SQLite'}: exit 0",
                  p.returncode == 0, p.stderr[-300:])
        st.ids = ids_by_name(st.uri)
    check("both stores list sm-a and sm-b", sorted(sq.ids) == sorted(pg.ids) == ["sm-a", "sm-b"],
          (sq.ids, pg.ids))
    imports = [sx("import", "sagemaker", "--name", "sm-c", src["sm-c"], store=st.uri).stdout
               for st in (sq, pg)]
    for st in (sq, pg):
        st.ids = ids_by_name(st.uri)
    same("import's summary line", *imports)
    both("ls", "ls")
    both("ls --json", "ls", "--json")
    both("ls --name", "ls", "--name", "sm-?", "--json")
    both("show", "show", "{a}")
    both("show --json", "show", "--json", "{a}")
    both("show last", "show", "--json", "last")
    both("export csv", "export", "--format", "csv", "{a}")
    both("export jsonl --metric", "export", "--format", "jsonl", "--metric", "cpu.*", "{a}")
    both("export sagemaker", "export", "--format", "sagemaker", "-o", "sm-out", "{a}",
         files="sm-out")
    both("trace", "trace", "-o", "t.json", "{a}", files="t.json")
    both("trace perfetto", "trace", "--format", "perfetto", "-o", "t.pftrace", "{a}",
         files="t.pftrace")
    both("trace --steps", "trace", "--steps", "3-7", "-o", "s.json", "{a}", files="s.json")
    both("report", "report", "-o", "r.html", "{a}", files="r.html")
    both("rules --json", "rules", "--json", "{a}")
    both("rules --save, then show --json", "rules", "--save", "--rules", "all", "{b}")
    both("show --json after rules --save", "show", "--json", "{b}")
    both("logs --list", "logs", "--list", "{a}")
    both("logs", "logs", "{a}")
    both("compare", "compare", "{a}", "{b}")
    both("compare --json", "compare", "--json", "{a}", "{b}")
    both("show of no such run", "show", "nosuchrun")

    # serve: the same answers from either store
    servers = [serve(sq.uri), serve(pg.uri)]
    check("serve listens on PostgreSQL", servers[1][1] > 0, said[-1])
    if all(port for _, port in servers):
        for what, path in (("/api/runs", "/api/runs"),
                           ("/api/runs/ID", "/api/runs/{a}"),
                           ("/api/runs/ID/texts", "/api/runs/{a}/texts"),
                           ("/api/compare", "/api/compare?runs={a},{b}")):
            got = [api_get(port, path.format(a=st.ids["sm-a"], b=st.ids["sm-b"]))
                   for (_, port), st in zip(servers, (sq, pg))]
            check(f"serve {what}: the same status", got[0][0] == got[1][0],
                  (got[0][0], got[1][0]))
            same(f"serve {what}", got[0][1], got[1][1])
    for proc, _ in servers:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        said.append(("serve", proc.stderr.read()))

    # rm: the run and its rows go
    both("rm --dry-run", "rm", "--dry-run", "sm-c")
    both("rm", "rm", "--force", "sm-c")
    both("ls after rm", "ls", "--json")
    sq.ids, pg.ids = ids_by_name(sq.uri), ids_by_name(pg.uri)
    check("rm: sm-c is gone from PostgreSQL", "sm-c" not in pg.ids, pg.ids)
    left = psql(uri, "SELECT count(*) FROM runs").strip()
    check("rm: two runs are left in the database's runs table", left == "2", left)

    # ---- 2. a real job into both -------------------------------------------------
    real = {}
    for st in (sq, pg):
        p = sx("run", "--quiet", "--name", "real", "--interval", "50ms", "--", PYTHON, "-c",
               PY_JOB, store=st.uri, env=example_env())
        check(f"a real job into {'PostgreSQL' if st is pg else 'SQLite'}: exit 0",
              p.returncode == 0, p.stderr[-500:])
        r = json.loads(sx("show", "--json", "real", store=st.uri).stdout or "{}")
        loss = points(st.uri, "app.loss*", "real")
        real["pg" if st is pg else "sq"] = (r, loss)
    (a, la), (b, lb) = real["sq"], real["pg"]
    check("a real job: finished on both", a.get("status") == b.get("status") == "finished",
          (a.get("status"), b.get("status")))
    steps = [x.get("steps") and x["steps"].get("count") for x in (a, b)]
    check("a real job: 12 steps on both", steps == [12, 12], steps)
    vals = [[v for _, v in sorted(sum(l.values(), []))] for l in (la, lb)]
    check("a real job: the logged values, bit for bit, on both",
          vals[0] == vals[1] == [1.0 / (i + 1) for i in range(12)], vals)
    check("a real job: the same series names on both",
          sorted(k for k in a.get("metrics", {}) if "pid=" not in k) ==
          sorted(k for k in b.get("metrics", {}) if "pid=" not in k))

    # ---- 3. errors: one line, 125 before the job, 1 for readers -------------------
    down = free_port()
    u = urllib.parse.urlsplit(uri)
    bad = {
        "a bad URI": f"postgresql://strobe:{PASSWORD}@127.0.0.1:99999/strobe",
        "a refused connection": f"postgresql://strobe:{PASSWORD}@127.0.0.1:{down}/strobe"
                                f"?sslmode=disable",
        "a wrong password": uri.replace(PASSWORD, "wrong-Zq7"),
    }
    # a newer strobe's store: a database of its own, made by this strobe, then
    # its schema version set past this one's
    psql(uri, "CREATE DATABASE newer")
    newer = uri.replace("/strobe?", "/newer?")
    sx("run", "--quiet", "--no-report", "--", "true", store=newer)
    cols = psql(newer, "SELECT table_name || '.' || column_name FROM information_schema.columns"
                       " WHERE table_schema = current_schema() AND column_name LIKE '%version%'"
                       " AND data_type IN ('integer', 'bigint', 'smallint')").split()
    check("newer: the store has one integer version column", len(cols) == 1, cols)
    if len(cols) == 1:
        table, col = cols[0].split(".")
        psql(newer, f"UPDATE {table} SET {col} = {col} + 100")
        bad["a schema from a newer strobe"] = newer
    for what, store in bad.items():
        mark = os.path.join(TMP, "job-ran")
        p = sx("run", "--quiet", "--", "touch", mark, store=store)
        one_line_error(f"{what}: strobe run", p, 125, mark)
        for cmd in (("ls",), ("show", "last"), ("rules", "last")):
            p = sx(*cmd, store=store)
            one_line_error(f"{what}: strobe {cmd[0]}", p, 1)
        said.append((what, p.stderr))
    check("the wrong password shows nowhere",
          not [w for w, t in said if "wrong-Zq7" in t], [w for w, t in said if "wrong-Zq7" in t])

    # ---- 4. the password, while recording and after --------------------------------
    work = os.path.join(TMP, "pw-cwd")
    os.makedirs(work)
    env = example_env()
    p = subprocess.Popen([STROBE, "run", "--store", uri, "--name", "pw", "--", "sleep", "3"],
                         cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    time.sleep(1.0)
    try:
        cmdline = open(f"/proc/{p.pid}/cmdline", "rb").read().decode(errors="replace")
    except OSError:
        cmdline = ""
    kids = []
    for t in glob.glob(f"/proc/{p.pid}/task/*/children"):
        kids += open(t).read().split()
    job_env = b"".join(open(f"/proc/{k}/environ", "rb").read() for k in kids
                       if os.path.exists(f"/proc/{k}/environ"))
    out, err = p.communicate(timeout=60)
    said.append(("run --store (pw)", out + err))
    check("while recording: the recorder's cmdline is readable", "run" in cmdline, cmdline)
    check("while recording: /proc/<recorder>/cmdline has no password", PASSWORD not in cmdline,
          cmdline.replace("\0", " "))
    check("while recording: the job's environment has no password",
          kids and PASSWORD.encode() not in job_env, kids)
    check("pw run: exit 0", p.returncode == 0, err[-300:])
    # the URI in $STROBE_STORE: the run keeps STROBE_* variables
    env2 = dict(env, STROBE_STORE=uri)
    q = subprocess.run([STROBE, "run", "--name", "pw-env", "--", "true"], cwd=work,
                       capture_output=True, text=True, env=env2, timeout=120)
    said.append(("run $STROBE_STORE", q.stdout + q.stderr))
    check("pw run through $STROBE_STORE: exit 0", q.returncode == 0, q.stderr[-300:])
    for name in ("pw", "pw-env"):
        sx("show", "--json", name, store=uri)
        sx("show", name, store=uri)
        sx("logs", name, store=uri)
        sx("report", "-o", os.path.join(work, f"{name}.html"), name, store=uri)
        sx("export", "--format", "jsonl", name, store=uri)
    files = [f for f in glob.glob(os.path.join(work, "**"), recursive=True) if os.path.isfile(f)]
    check("pw: the runs wrote their reports", len(files) >= 2, files)
    in_files = [f for f in files if PASSWORD in f or PASSWORD.encode() in open(f, "rb").read()]
    check("pw: no file the runs or the report wrote holds it (names included)", not in_files,
          in_files)
    bindir = subprocess.run([PGSERVER, "bindir"], capture_output=True, text=True).stdout.strip()
    dump = subprocess.run([os.path.join(bindir, "pg_dump"), "-d", uri], capture_output=True,
                          text=True, timeout=120)
    check("pg_dump of the store", dump.returncode == 0 and "CREATE TABLE" in dump.stdout,
          dump.stderr[-300:])
    check("pw: no stored row holds it (pg_dump)", PASSWORD not in dump.stdout,
          [l[:200] for l in dump.stdout.splitlines() if PASSWORD in l][:3])
    leaks = [w for w, t in said if PASSWORD in t]
    check(f"pw: no output of the {len(said)} commands holds it", not leaks, leaks[:8])
done()
