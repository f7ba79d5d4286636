#!/usr/bin/python3
"""strobe copy: runs from one store to another (docs/cli.md, strobe copy).

1. A real job (steps, logged values, rules, its output) recorded into
   SQLite is copied to PostgreSQL, and from there to a second SQLite file.
   The run keeps its id, so show --json, export --format jsonl, trace,
   rules --json, logs and ls --json print the same bytes from all three.
2. Copying again changes nothing: one line "already there", and ls lists
   one run. --dry-run says what it would do and writes nothing, not even
   a new store file. Filters (--name) pick the runs as rm's do.
3. A run copied while it records is copied with a warning, as it stands;
   copied again once it finished, it replaces the copy (strobe push's case).
4. A bad URI, a refused connection, a missing source and a missing run
   are one line and exit 1; --to missing is exit 2. The password in a
   --to URI shows in no output.

Without PostgreSQL the middle store is a SQLite file, and the checks of
the password and of the connection errors skip, saying why.
"""
import json
import os
import subprocess
import urllib.parse

from strobetest import *

said = []  # every output: none may hold the password


def sx(*args, **kw):
    p = strobe(*args, **kw)
    said.append(p.stdout + p.stderr)
    return p


def one_line(what, p, rc, want=None):
    lines = p.stderr.strip().splitlines()
    check(f"{what}: exit {rc}", p.returncode == rc, (p.returncode, p.stderr[-300:]))
    check(f"{what}: one line on stderr, in strobe's voice",
          len(lines) == 1 and lines[0].startswith("strobe: ") and not p.stdout,
          (p.stdout[-200:], p.stderr[-300:]))
    if want:
        check(f"{what}: says {want!r}", want in p.stderr, p.stderr)


PY_JOB = """
import strobe, sys, time
for i in range(10):
    strobe.step()
    with strobe.span("work"):
        time.sleep(0.01)
    strobe.log("loss", 1.0 / (i + 1))
print("epoch done")
print("a warning", file=sys.stderr)
"""


def outputs(store, ref, cwd):
    """What each reader prints of run ref in store: {what: bytes}."""
    os.makedirs(cwd, exist_ok=True)
    out = {}
    for what, args in (("show --json", ["show", "--json", ref]),
                       ("export jsonl", ["export", "--format", "jsonl", ref]),
                       ("rules --json", ["rules", "--json", ref]),
                       ("logs", ["logs", ref]),
                       ("logs --stderr", ["logs", "--stderr", ref]),
                       ("ls --json", ["ls", "--json"])):
        p = sx(*args, store=store, cwd=cwd)
        out[what] = (p.returncode, p.stdout)
    p = sx("trace", "-o", "t.json", ref, store=store, cwd=cwd)
    path = os.path.join(cwd, "t.json")
    out["trace"] = (p.returncode, open(path, "rb").read() if os.path.exists(path) else b"")
    return out


def agree(what, a, b):
    for k in a:
        check(f"{what}: {k} exits 0", a[k][0] == 0 and b[k][0] == 0, (a[k][0], b[k][0]))
        check(f"{what}: {k}, byte for byte", a[k][1] == b[k][1] and len(a[k][1]) > 0,
              (str(a[k][1])[:300], str(b[k][1])[:300]))


def ids(store):
    p = sx("ls", "--json", store=store)
    return [r["id"] for r in json.loads(p.stdout)] if p.returncode == 0 else None


def body(uri, pg, password):
    src, back = store_path("copy-src.db"), store_path("copy-back.db")
    for f in (src, back, store_path("copy-none.db"), store_path("copy-mid.db")):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f + suffix):
                os.unlink(f + suffix)
    mid = uri if pg else store_path("copy-mid.db")

    # ---- 1. SQLite -> middle -> SQLite ---------------------------------------------
    p = sx("run", "--quiet", "--no-report", "--name", "real", "--interval", "50ms", "--", PYTHON,
           "-c", PY_JOB, store=src, env=example_env())
    check("a real job into SQLite: exit 0", p.returncode == 0, p.stderr[-500:])
    rid = (ids(src) or ["?"])[0]
    p = sx("copy", "--to", mid, "real", store=src)
    check("copy to the middle store: exit 0", p.returncode == 0, p.stderr[-300:])
    check("copy says one line: copied run ID 'real' (N series, N blocks, size)",
          re.fullmatch(rf"copied run {rid} 'real' \(\d+ series, \d+ blocks, [\d.]+ \w+\)\n",
                       p.stdout) is not None, p.stdout)
    p = sx("copy", "--from", mid, "--to", back, rid)
    check("copy back to a second SQLite file: exit 0", p.returncode == 0, p.stderr[-300:])
    check("the run keeps its id in both", ids(mid) == [rid] and ids(back) == [rid],
          (ids(mid), ids(back), rid))
    a = outputs(src, rid, os.path.join(TMP, "copy-a"))
    agree("source and middle", a, outputs(mid, rid, os.path.join(TMP, "copy-b")))
    agree("source and the copy back", a, outputs(back, rid, os.path.join(TMP, "copy-c")))
    shown = json.loads(a["show --json"][1] or "{}")
    check("the run has steps to carry",
          (shown.get("steps") or {}).get("count") == 10, shown.get("steps"))

    # ---- 2. again: nothing new ------------------------------------------------------
    p = sx("copy", "--to", mid, rid, store=src)
    check("a second copy: exit 0, 'already there'",
          p.returncode == 0 and p.stdout == f"skipped run {rid} 'real': already there\n",
          (p.returncode, p.stdout, p.stderr))
    check("a second copy: ls lists one run", ids(mid) == [rid], ids(mid))
    none = store_path("copy-none.db")
    p = sx("copy", "--dry-run", "--to", none, "last", store=src)
    check("--dry-run: 'would copy', exit 0",
          p.returncode == 0 and p.stdout.startswith(f"would copy run {rid} 'real' ("), p.stdout)
    check("--dry-run: no store file made", not os.path.exists(none))
    p = sx("copy", "--dry-run", "--to", mid, "--name", "re*", store=src)
    check("--dry-run by --name: 'would skip ... already there'",
          p.stdout == f"would skip run {rid} 'real': already there\n", (p.stdout, p.stderr))
    p = sx("copy", "--to", none, "--name", "no-such-*", store=src)
    check("a filter that matches nothing: exit 0, a note", p.returncode == 0 and
          "no run matches" in p.stderr and not p.stdout, (p.returncode, p.stdout, p.stderr))
    p = sx("copy", "--to", mid, "--name", "x", "real", store=src)
    check("RUNs and filters together: exit 2", p.returncode == 2, p.stderr)

    # ---- 3. a run still recording, then finished ------------------------------------
    job = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", f"--store={src}", "--name",
                            "live", "--interval", "50ms", "--", PYTHON, "-c",
                            "import time; print('up', flush=True); time.sleep(4)"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def recording():
        p = strobe("ls", "--json", "--name", "live", store=src)
        runs = json.loads(p.stdout) if p.returncode == 0 and p.stdout else []
        return runs and runs[0]["status"] == "running" and runs[0]["samples"] > 2

    if check("a live run records", wait_for(recording, timeout=20)):
        p = sx("copy", "--to", mid, "live", store=src)
        check("a live run: exit 0, copied", p.returncode == 0 and
              p.stdout.startswith("copied run "), (p.returncode, p.stdout, p.stderr))
        check("a live run: one warning that it is still recording",
              p.stderr.startswith("strobe: warning: run ") and "still recording" in p.stderr
              and len(p.stderr.splitlines()) == 1, p.stderr)
        live = json.loads(sx("show", "--json", "live", store=mid).stdout or "{}")
        check("a live run: running in the copy", live.get("status") == "running",
              live.get("status"))
    out, err = job.communicate(timeout=60)
    check("the live run finished", job.returncode == 0, err[-300:])
    p = sx("copy", "--to", mid, "live", store=src)
    check("copied again once finished: replaced", p.returncode == 0 and
          p.stdout.startswith("replaced run ") and "the copy there was behind" in p.stdout,
          (p.returncode, p.stdout, p.stderr))
    x = sx("show", "--json", "live", store=src).stdout
    y = sx("show", "--json", "live", store=mid).stdout
    check("the replaced copy is the finished run", x == y and '"finished"' in y, (x[:200], y[:200]))
    check("still one run of each", len(ids(mid) or []) == 2, ids(mid))
    p = sx("copy", "--from", back, "--to", mid, rid)
    check("a copy of the copy: 'already there'",
          p.stdout.endswith("already there\n"), p.stdout)

    # ---- 4. errors ------------------------------------------------------------------
    p = sx("copy", "--to", back, "nosuchrun", store=src)
    one_line("a missing run", p, 1, "no run 'nosuchrun'")
    p = sx("copy", "--from", store_path("copy-absent.db"), "--to", back, "last")
    one_line("a missing source", p, 1, "no store at")
    p = sx("copy", "--to", "/nonexistent-dir/x.db", "last", store=src)
    one_line("a destination that cannot be made", p, 1, "cannot open store")
    p = sx("copy", "last", store=src)
    one_line("no --to", p, 2, "--to is required")
    p = sx("copy", "--to", src, "last", store=src)
    one_line("the same store twice", p, 1, "the same store")
    if not pg:
        skip("the connection errors and the password", "no PostgreSQL here")
        return
    u = urllib.parse.urlsplit(uri)
    bad = f"postgresql://{u.username}:{password}@127.0.0.1:99999/strobe"
    one_line("a bad URI", sx("copy", "--to", bad, "last", store=src), 1)
    down = f"postgresql://{u.username}:{password}@127.0.0.1:1/strobe?connect_timeout=2"
    one_line("a refused connection", sx("copy", f"--to={down}", "last", store=src), 1)
    one_line("a refused source", sx("copy", "--from", down, "--to", back, "last"), 1)
    p = sx("copy", f"--to={uri}", "--dry-run", "last", store=src)
    check("--to=URI: taken", p.returncode == 0, p.stderr)
    check("the password shows in no output", all(password not in s for s in said),
          [s[:200] for s in said if password in s][:2])


why = pg_missing()
if why:
    skip("copy to and from PostgreSQL", why)
    body(None, False, None)
else:
    with pg_server() as uri:
        password = urllib.parse.urlsplit(uri).password
        check("the server's URI holds a password", bool(password))
        body(uri, True, password)
done()
