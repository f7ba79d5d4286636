#!/usr/bin/python3
"""strobe run into PostgreSQL while the server goes away or hangs: the
recorder spools to a SQLite file, uploads it when the server answers again,
and strobe push sends a spool left at the end (record/spool.h;
docs/store-format.md, "When the database is slow or gone").

The job is a Python script of STEPS steps: each calls strobe.step(), sleeps
50 ms and prints the step's duration. Every tenth starts a child that
lives 0.3 s. Sampling is every 100 ms. An open block is stored again whole
at each commit, so a batch lost while the block is open is made good by
the next; a block sealed is sent once. The children's series are sealed
when each ends: one missing in the store is a batch lost.

0. Baseline: the job into SQLite, undisturbed. Its per-frame series (a
   point every frame) and its step durations are what the others must
   match.
1. Outage: the server goes down 2 s into the run (pg_ctl stop -m fast)
   and comes back 3 s later. The run completes in PostgreSQL: frames
   sampled plus missed deadlines match the duration over the interval;
   every per-frame series has a point for every frame, from the start to
   the end, with no gap beyond 2 intervals but for missed deadlines; the
   steps and events are the job's own count. The spool was uploaded
   during the run and removed.
2. Down at the end: the server goes down and stays down. The recorder
   exits with the job's exit code and names the spool and the strobe push
   command; strobe show reads the spool. Once the server is back, push
   sends it: the run in PostgreSQL is whole. A second push writes nothing:
   show --json and export jsonl print the same bytes.
3. Held up: the server and its processes are stopped (SIGSTOP) for 6 s.
   The job's steps take as long as in the baseline (the median; none near
   the writer's 5 s wait); the recorder spooled, and the run in PostgreSQL
   is whole.
4. Hostile pushes: a file that is no store, a missing one, a refused
   connection: one line each, exit 1, nothing written.

The password shows in no output. Skips, saying why, without PostgreSQL.
"""
import hashlib
import json
import os
import re
import subprocess
import time

from strobetest import *

STEPS = 200
INTERVAL = 0.1
JOB = """
import strobe, subprocess, sys, time
kids = []
for i in range(int(sys.argv[1])):
    t = time.monotonic()
    strobe.step()
    kids = [k for k in kids if k.poll() is None]  # reaped as they end
    if i % 10 == 5:
        kids.append(subprocess.Popen(["sleep", "0.3"]))
        print(f"child {kids[-1].pid}", flush=True)
    time.sleep(0.05)
    print(f"step {i} {time.monotonic() - t:.6f}", flush=True)
for k in kids:
    k.wait()
sys.exit(int(sys.argv[2]))
"""
PASSWORD = "s3cret-Tq8vZ2wK"  # tests/tools/pgserver's
said = []  # every output: none may hold the password


def sx(*args, **kw):
    p = strobe(*args, **kw)
    said.append(p.stdout + p.stderr)
    return p


def start_job(store, name, state, steps=STEPS, code=0, extra=()):
    """strobe run of the job in the background, its spool under state."""
    env = dict(example_env(), XDG_STATE_HOME=state)
    cmd = [STROBE, "run", f"--store={store}", "--no-report", "--name", name, "--interval",
           "100ms", *extra, "--", PYTHON, "-c", JOB, str(steps), str(code)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


class Job:
    """What the job said of itself, and strobe run's exit and stderr."""

    def __init__(self, p):
        out, self.err = p.communicate(timeout=120)
        said.append(out + self.err)
        self.rc = p.returncode
        self.durations = [float(m[1]) for m in re.finditer(r"^step \d+ ([\d.]+)$", out, re.M)]
        self.children = re.findall(r"^child (\d+)$", out, re.M)


def spool_files(state):
    d = os.path.join(state, "strobe", "spool")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def series_points(store, ref):
    """{series: [time_s, ...]} of every series of the run."""
    out = {}
    for key, pts in points(store, "*", ref).items():
        out[key] = [t for t, _ in pts]
    return out


def per_frame(store, ref, samples):
    """The series with a point every frame (all but the first two, at the
    most: a rate has none at the baseline frame)."""
    return {k for k, ts in series_points(store, ref).items()
            if len(ts) >= samples - 2 and "pid=" not in k}


def check_whole(what, store, ref, frame_series, job):
    """The run in store has all its frames, series, steps and events."""
    shown = json.loads(sx("show", "--json", ref, store=store).stdout or "{}")
    samples, missed = shown.get("samples", 0), shown.get("missed", 0)
    dur = shown.get("duration_s", 0)
    # a frame on every deadline from the baseline one (at 0) to the one
    # after the job's exit: duration/interval + 1 of them, +-1 for where
    # within an interval the job ended, and 1 for the final frame's place
    deadlines = dur / INTERVAL + 1
    check(f"{what}: frames sampled + missed = duration / interval + 1 (+-2)",
          abs(samples + missed - deadlines) <= 2, (samples, missed, dur))
    pts = series_points(store, ref)
    start, end = shown.get("start_ns", 0) / 1e9, shown.get("end_ns", 0) / 1e9
    missing = sorted(frame_series - pts.keys())
    check(f"{what}: every per-frame series of the baseline is there ({len(frame_series)})",
          not missing, missing[:5])
    bad = []
    for k in sorted(frame_series & pts.keys()):
        ts = pts[k]
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        # each missed deadline widens one gap by an interval; the final
        # frame may sit off the grid, so one more
        extra = sum(max(0, round(g / INTERVAL) - 1) for g in gaps)
        if (len(ts) < samples - 2 or ts[0] > start + 2.5 * INTERVAL or
                ts[-1] < end - 2.5 * INTERVAL or extra > missed + 1 or
                max(gaps) > (2 + missed) * INTERVAL):
            bad.append((k, len(ts), round(ts[0] - start, 2), round(end - ts[-1], 2),
                        round(max(gaps), 2)))
    check(f"{what}: every per-frame series spans the run, a point a frame, no gap",
          not bad, bad[:5])
    lost = [c for c in job.children if not pts.get(f"proc.cpu{{pid={c}}}")]
    check(f"{what}: each of the job's children has its series, sealed as it ended "
          f"({len(job.children)})", job.children and not lost, lost)
    steps = len(job.durations)
    check(f"{what}: the steps are the job's own ({steps})",
          (shown.get("steps") or {}).get("count") == steps, shown.get("steps"))
    check(f"{what}: no event dropped", shown.get("dropped_events") == 0,
          shown.get("dropped_events"))
    return shown


def one_line(what, p, want):
    lines = p.stderr.strip().splitlines()
    check(f"{what}: exit 1", p.returncode == 1, (p.returncode, p.stderr[-300:]))
    check(f"{what}: one line on stderr, nothing on stdout",
          len(lines) == 1 and lines[0].startswith("strobe: ") and not p.stdout,
          (p.stdout[-200:], p.stderr[-300:]))
    check(f"{what}: says {want!r}", want in p.stderr, p.stderr)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def baseline():
    """The job into SQLite, undisturbed: its per-frame series, its step
    durations and its event count."""
    db = store_path("spool-base.db")
    job = Job(start_job(db, "base", os.path.join(TMP, "state0")))
    check("baseline: exit 0", job.rc == 0, job.err[-500:])
    shown = check_whole("baseline", db, "base", set(), job)
    frames = per_frame(db, "base", shown.get("samples", 0))
    check("baseline: some per-frame series", len(frames) >= 5, sorted(frames))
    return frames, job.durations, shown.get("events")


def outage(uri, frames, events):
    state = os.path.join(TMP, "state1")
    p = start_job(uri, "outage", state)
    time.sleep(2)
    pg_control(uri, "down")
    t_down = time.monotonic()
    time.sleep(3)
    pg_control(uri, "up")
    print(f"# outage: the server was down {time.monotonic() - t_down:.1f} s")
    job = Job(p)
    err = job.err
    check("outage: exit 0", job.rc == 0, err[-500:])
    check("outage: the recorder said it spooled", "spooling to" in err, err[-500:])
    check("outage: and that the spool went into the store", "answers again" in err, err[-500:])
    check("outage: no spool left", spool_files(state) == [], spool_files(state))
    shown = check_whole("outage", uri, "outage", frames, job)
    check("outage: the job logged every step", len(job.durations) == STEPS, len(job.durations))
    check("outage: the events are the baseline's", shown.get("events") == events,
          (shown.get("events"), events))
    m = re.search(r"(\d+) batches \((\d+) points\) went to the spool", err)
    print(f"# outage: {m.group(0) if m else 'no count'}; {shown.get('samples')} samples, "
          f"{shown.get('missed')} missed in {shown.get('duration_s', 0):.2f} s")


def open_rarely(uri, frames):
    """--open-every 60s: while the job runs, the store's last sample stays
    at the first batch's; at the end the last batch still carries every
    point."""
    state = os.path.join(TMP, "state5")
    p = start_job(uri, "rarely", state, extra=("--open-every", "60s"))
    time.sleep(4)
    live = json.loads(sx("show", "--json", "rarely", store=uri).stdout or "{}")
    check("open every 60 s: the running run's last sample is its first batch's (< 2.5 s)",
          live.get("status") == "running" and 0 < live.get("duration_s", 0) < 2.5,
          (live.get("status"), live.get("duration_s")))
    job = Job(p)
    check("open every 60 s: exit 0", job.rc == 0, job.err[-500:])
    check_whole("open every 60 s", uri, "rarely", frames, job)


def down_at_end(uri, frames):
    """The spool left at the end; returns its path."""
    state = os.path.join(TMP, "state2")
    steps = 60
    p = start_job(uri, "downend", state, steps=steps, code=3)
    time.sleep(1.5)
    pg_control(uri, "down")
    job = Job(p)
    err = job.err
    check("down at the end: the job's exit code (3)", job.rc == 3, (job.rc, err[-500:]))
    m = re.search(r"is in the spool '([^']+)' .*send it with: strobe push (\S+) --store (\S+)$",
                  err, re.M)
    check("down at the end: one line names the spool and the push command", m is not None,
          err[-800:])
    if not m:
        pg_control(uri, "up")
        return None
    path = m.group(1)
    check("down at the end: the command names the spool", m.group(2) == path, m.group(0))
    check("down at the end: the command's store is the URI without its password",
          m.group(3).strip("'") == uri.replace(f":{PASSWORD}@", "@"), m.group(3))
    check("down at the end: the spool is there", os.path.exists(path), spool_files(state))
    p = sx("show", "--json", "last", store=path)
    spooled = json.loads(p.stdout or "{}")
    check("down at the end: strobe show reads the spool: the whole run's row",
          p.returncode == 0 and spooled.get("status") == "failed" and spooled.get("exit_code") == 3,
          (p.returncode, p.stderr, spooled.get("status")))
    pg_control(uri, "up")
    p = sx("push", path, store=uri)
    check("push: exit 0, 'pushed run'", p.returncode == 0 and p.stdout.startswith("pushed run "),
          (p.returncode, p.stdout, p.stderr))
    shown = check_whole("pushed", uri, "downend", frames, job)
    check("pushed: the run's end is the spool's (failed, exit 3)",
          shown.get("status") == "failed" and shown.get("exit_code") == 3, shown.get("status"))
    check("pushed: the samples are the spool's", shown.get("samples") == spooled.get("samples"),
          (shown.get("samples"), spooled.get("samples")))
    before = [sx(*a, store=uri).stdout for a in
              (["show", "--json", "downend"], ["export", "--format", "jsonl", "downend"])]
    p = sx("push", path, store=uri)
    check("a second push: exit 0, 'already there'",
          p.returncode == 0 and p.stdout.endswith(": already there\n"), (p.stdout, p.stderr))
    after = [sx(*a, store=uri).stdout for a in
             (["show", "--json", "downend"], ["export", "--format", "jsonl", "downend"])]
    check("a second push: show --json and export print the same bytes",
          before == after and before[0], [len(x) for x in before + after])
    runs = json.loads(sx("ls", "--json", "--name", "downend", store=uri).stdout or "[]")
    check("a second push: one run", len(runs) == 1, len(runs))
    return path


def held_up(uri, frames, base_durations):
    state = os.path.join(TMP, "state3")
    p = start_job(uri, "frozen", state)
    time.sleep(2)
    pg_control(uri, "freeze")
    time.sleep(6)
    pg_control(uri, "thaw")
    job = Job(p)
    err, durations = job.err, job.durations
    check("held up: exit 0", job.rc == 0, err[-500:])
    check("held up: the recorder spooled ('did not answer')",
          "spooling to" in err and "did not answer within 5 s" in err, err[-500:])
    check("held up: no spool left", spool_files(state) == [], spool_files(state))
    check_whole("held up", uri, "frozen", frames, job)
    # the job never waits on the recorder: its steps are the baseline's. A
    # job tied to the writer would stall for the writer's whole 5 s bound;
    # a shared 2-core machine's load stalls a step by a few ms, at worst
    # (other jobs running, a sanitizer build) by some hundreds
    slow = lambda ds: sum(d > 0.1 for d in ds)
    p50, b50 = median(durations), median(base_durations)
    check("held up: the job's median step is the baseline's (+-5 ms)",
          p50 is not None and b50 is not None and abs(p50 - b50) <= 0.005, (p50, b50))
    check("held up: no step of the job took 1 s (the writer waited 5 s)",
          durations and max(durations) < 1.0, max(durations or [0]))
    print(f"# held up: step p50 {p50 * 1000:.1f} ms (baseline {b50 * 1000:.1f}), "
          f"max {max(durations) * 1000:.1f} ms (baseline {max(base_durations) * 1000:.1f}), "
          f"{slow(durations)} over 100 ms (baseline {slow(base_durations)})")


def hostile(uri, spool):
    dest = store_path("spool-dest.db")
    garbage = store_path("spool-garbage.db")
    with open(garbage, "wb") as f:
        f.write(os.urandom(8192))
    before, h = sorted(os.listdir(TMP)), digest(garbage)
    p = sx("push", garbage, store=dest)
    one_line("push of a file that is no store", p, "not a database")
    check("push of a file that is no store: the file as it was, no file made",
          digest(garbage) == h and sorted(os.listdir(TMP)) == before and not os.path.exists(dest),
          sorted(os.listdir(TMP)))
    p = sx("push", store_path("spool-none.db"), store=dest)
    one_line("push of a missing spool", p, "cannot read spool")
    check("push of a missing spool: no store made", not os.path.exists(dest))
    p = sx("push", store=dest)
    check("push without a spool: the usage, exit 2", p.returncode == 2, (p.returncode, p.stderr))
    if spool:
        h = digest(spool)
        p = sx("push", spool, store=PG_NOWHERE)
        one_line("push to a refused connection", p, "cannot connect")
        check("push to a refused connection: the spool as it was", digest(spool) == h)
        refused = uri.replace(f"@127.0.0.1:{uri.split(':')[3].split('/')[0]}/", "@127.0.0.1:1/")
        p = sx("push", spool, store=refused)
        one_line("push to a refused connection, a password in the URI", p, "cannot connect")


def main():
    why = pg_missing()
    if why:
        skip("spool", why)
        return
    frames, base_durations, events = baseline()
    with pg_server() as uri:
        outage(uri, frames, events)
        open_rarely(uri, frames)
        spool = down_at_end(uri, frames)
        held_up(uri, frames, base_durations)
        hostile(uri, spool)
    leaked = [s[:200] for s in said if PASSWORD in s]
    check("the password shows in no output", not leaked, leaked[:2])


main()
done()
