#!/usr/bin/env python3
"""strobe trace end to end: a real `strobe run` of a small loop through
strobe's Python API, then its timeline as Chrome JSON (plain and .gz) and as
Perfetto protobuf. The counts are checked against the store, read without
strobe trace: sqlite3 (event blocks, findings), `strobe export --format
jsonl` (every sample), `strobe show --json` (steps). The Perfetto file is
decoded by `protoc --decode_raw` and by the small decoder below, and must
hold what the JSON export of the same run holds."""
import collections
import gzip
import json
import os
import shutil
import sqlite3
import subprocess

from stored_events import varint
from strobetest import PYTHON, STROBE, TMP, check, done, skip, store_path, strobe

HOSTILE = 'bad "run" </script> \\ ünï'  # run names refuse control bytes; spans take them
SPAN = 'span "q" </script>\x02\\ end'

# 40 steps of data + forward (with an operator inside), a logged loss, and a
# span on a second thread whose name is hostile.
WORKLOAD = r"""
import ctypes, threading, time, strobe
# a hostile comm too: quotes, a control byte and a byte that is not UTF-8
ctypes.CDLL(None).prctl(15, b'p"</s>\x01\xff', 0, 0, 0)
SPAN = %r
def side():
    with strobe.span(SPAN):
        time.sleep(0.05)
t = threading.Thread(target=side)
t.start()
for i in range(1, 41):
    with strobe.span("data"):
        time.sleep(0.004)
    with strobe.span("forward"):
        time.sleep(0.002)
        with strobe.span("op:aten::mm"):
            time.sleep(0.001)
    strobe.log("loss", 1.0 / i)
    strobe.step()
t.join()
""" % SPAN

db = store_path("trace.db")
p = strobe("run", "--quiet", "--no-report", "--name", HOSTILE, "--", PYTHON, "-c", WORKLOAD,
           store=db, timeout=120)
check("the workload runs under strobe", p.returncode == 0, p.stderr)
# strobe show --json passes a comm's bytes through as they are (not UTF-8 here):
# read it leniently, this test is about the trace
sh = subprocess.run([STROBE, "show", "--store=" + db, "--json", "last"], capture_output=True)
info = json.loads(sh.stdout.decode("utf-8", "replace")) if sh.returncode == 0 else None
check("strobe show reads the run", info is not None, sh.stderr)
run_id = info["id"] if info else ""

# ---- what the store holds, read without strobe trace -------------------------
con = sqlite3.connect(db)
stored_events = con.execute("SELECT COALESCE(SUM(count), 0) FROM event_blocks WHERE run_id = ?",
                            (run_id,)).fetchone()[0]
stored_findings = con.execute("SELECT COUNT(*) FROM findings WHERE run_id = ?",
                              (run_id,)).fetchone()[0]
con.close()
e = strobe("export", "--format", "jsonl", run_id, store=db)
samples = [json.loads(l) for l in e.stdout.splitlines() if l.strip()]
check("strobe export reads the run", e.returncode == 0 and samples, e.stderr)


def key(s):
    labels = ",".join(f"{k}={v}" for k, v in sorted(s["labels"].items()))
    return s["metric"] + ("{%s}" % labels if labels else "")


finite = [s for s in samples if not isinstance(s["value"], str)]  # "nan"/"inf" are strings
app_points = sum(1 for s in samples if s["metric"].startswith("app."))

# ---- Chrome JSON ---------------------------------------------------------------
out = os.path.join(TMP, "t.trace.json")
t = strobe("trace", "-o", out, run_id, store=db)
check("strobe trace exits 0", t.returncode == 0, t.stderr)
raw = open(out, "rb").read() if os.path.exists(out) else b"{}"
try:
    doc = json.loads(raw.decode("utf-8"))  # strict: valid UTF-8, valid JSON
except ValueError as err:
    doc = {"traceEvents": []}
    check("the trace is valid JSON", False, err)
ev = doc.get("traceEvents", [])
check("it is Chrome's object form with ns display", doc.get("displayTimeUnit") == "ns", doc.keys())
slices = [x for x in ev if x["ph"] == "X"]
instants = [x for x in ev if x["ph"] == "i" and x.get("cat") != "finding"]
findings = [x for x in ev if x["ph"] == "i" and x.get("cat") == "finding"]
counters = [x for x in ev if x["ph"] == "C"]
check("slices and instants are every stored event but the logged values (the app.* series)",
      len(slices) + len(instants) == stored_events - app_points,
      f"{len(slices)} + {len(instants)} vs {stored_events} - {app_points}")
steps = [x for x in slices if x["name"] == "step"]
want_steps = (info or {}).get("steps", {}).get("count") if info else None
check("one step slice per step strobe show counts", len(steps) == want_steps,
      f"{len(steps)} vs {want_steps}")
check("step slices carry their numbers", sorted(x["args"]["step"] for x in steps)
      == list(range(1, len(steps) + 1)), [x["args"]["step"] for x in steps])
check("operators are slices of category operator",
      sum(1 for x in slices if x["name"] == "op:aten::mm" and x["cat"] == "operator") == 40,
      collections.Counter((x["name"], x["cat"]) for x in slices))
check("one counter event per finite stored sample", len(counters) == len(finite),
      f"{len(counters)} vs {len(finite)}")
per_track = collections.Counter(x["name"] for x in counters)
check("each series is its own counter track, labels in its name",
      per_track == collections.Counter(key(s) for s in finite),
      set(per_track) ^ set(key(s) for s in finite))
check("findings are instants, as many as stored", len(findings) == stored_findings,
      f"{len(findings)} vs {stored_findings}")
meta = {(x["name"], x["pid"], x.get("tid")): x["args"] for x in ev if x["ph"] == "M"}
names = [a["name"] for (n, _, _), a in meta.items() if n == "process_name"]
check("the process is named by its role and comm", any(n.startswith("main (") for n in names),
      names)
check("threads are named", any(n == "thread_name" for n, _, _ in meta), meta)
start_ns = doc.get("otherData", {}).get("start_ns", 0)
check("the run's start is in the file", start_ns == (info or {}).get("start_ns"), start_ns)

# timestamps: µs with three decimals, on the same axis as the samples
ts_text = raw.decode("utf-8", "replace")
check("times keep the ns (3 decimals)", '"ts":' in ts_text and all(
    abs(x["ts"] * 1000 - round(x["ts"] * 1000)) < 1e-3 for x in slices[:50]), slices[:2])
first = min(s["time_ns"] for s in finite)
check("counters and events are on one axis (µs since the run's start)",
      any(abs(x["ts"] - (first - start_ns) / 1000) < 0.001 for x in counters), first)

# hostile strings survive as text
check("a hostile run name survives", doc.get("otherData", {}).get("run_name") == HOSTILE,
      doc.get("otherData"))
check("a hostile span name survives", any(x["name"] == SPAN for x in slices),
      [x["name"] for x in slices if x["cat"] == "span"])
check("no raw control byte in the file", not any(b < 0x20 and b not in (0x0a,) for b in raw),
      [b for b in raw if b < 0x20 and b != 0x0a][:5])

# ---- --steps A-B ---------------------------------------------------------------
A, B = 5, 9
win = [x for x in steps if A <= x["args"]["step"] <= B]
w0 = min(x["ts"] for x in win) if win else 0
w1 = max(x["ts"] + x["dur"] for x in win) if win else 0
out_w = os.path.join(TMP, "w.trace.json")
t = strobe("trace", "--steps", f"{A}-{B}", "-o", out_w, run_id, store=db)
check("strobe trace --steps exits 0", t.returncode == 0, t.stderr)
wdoc = json.load(open(out_w)) if t.returncode == 0 else {"traceEvents": []}
wev = wdoc["traceEvents"]
wsteps = sorted(x["args"]["step"] for x in wev if x["ph"] == "X" and x["name"] == "step")
check(f"--steps {A}-{B} keeps exactly those steps", wsteps == list(range(A, B + 1)), wsteps)


def overlaps(x):
    s, e = round(x["ts"] * 1000), round((x["ts"] + x["dur"]) * 1000)
    lo, hi = round(w0 * 1000), round(w1 * 1000)
    return lo <= s <= hi if s == e else s < hi and e > lo


want = collections.Counter((x["name"], x["ts"]) for x in slices if overlaps(x))
got = collections.Counter((x["name"], x["ts"]) for x in wev if x["ph"] == "X")
check("the window keeps the slices that overlap it", got == want, (got - want, want - got))
lo_ns, hi_ns = start_ns + round(w0 * 1000), start_ns + round(w1 * 1000)
want_c = sum(1 for s in finite if lo_ns <= s["time_ns"] <= hi_ns)
got_c = sum(1 for x in wev if x["ph"] == "C")
check("the window keeps the samples inside it", got_c == want_c, f"{got_c} vs {want_c}")
bad = strobe("trace", "--steps", "1000-1001", "-o", os.path.join(TMP, "x.json"), run_id, store=db)
check("a step the run does not have is an error", bad.returncode == 1 and "no step" in bad.stderr,
      bad.stderr)
bad = strobe("trace", "--steps", "7-3", run_id, store=db)
check("a backwards range is a usage error", bad.returncode == 2, bad.stderr)

# ---- gzip ------------------------------------------------------------------------
out_gz = os.path.join(TMP, "t.trace.json.gz")
t = strobe("trace", "-o", out_gz, run_id, store=db)
check("strobe trace -o x.gz exits 0", t.returncode == 0, t.stderr)
try:
    gz = gzip.decompress(open(out_gz, "rb").read())
except (OSError, EOFError) as err:
    gz = b""
check("the .gz decompresses to the same trace", gz == raw, f"{len(gz)} vs {len(raw)} bytes")
so = strobe("trace", "-o", "-", run_id, store=db)
check("-o - writes the trace to stdout", so.returncode == 0 and so.stdout.encode() == raw,
      so.stderr)

# ---- Perfetto ----------------------------------------------------------------------


def fields(b):
    """(field, wire type, value) of one message: ints for varints and
    fixed64 (as bytes), bytes for length-delimited fields."""
    i, out = 0, []
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        out.append((f, wt, v))
    if i != len(b):
        raise ValueError("truncated")
    return out


def one(fs, f, default=None):
    return next((v for k, _, v in fs if k == f), default)


out_pf = os.path.join(TMP, "t.perfetto-trace")
t = strobe("trace", "--format", "perfetto", "-o", out_pf, run_id, store=db)
check("strobe trace --format perfetto exits 0", t.returncode == 0, t.stderr)
pf = open(out_pf, "rb").read() if os.path.exists(out_pf) else b""
if shutil.which("protoc"):
    d = subprocess.run(["protoc", "--decode_raw"], stdin=open(out_pf, "rb"), capture_output=True)
    check("protoc --decode_raw decodes it", d.returncode == 0 and b"60 {" in d.stdout,
          d.stderr[:300])
else:
    skip("protoc --decode_raw decodes it", "protoc is not installed (protobuf-compiler)")

names, cats, tracks = {}, {}, {}
types = collections.Counter()
begin_names, counter_tracks, begin_ts = collections.Counter(), collections.Counter(), []
seq_ok, first_flags = True, None
try:
    packets = [v for f, _, v in fields(pf) if f == 1]
    for n, pk in enumerate(packets):
        fs = fields(pk)
        seq_ok &= one(fs, 10) == 1
        if n == 0:
            first_flags = one(fs, 13)
        idata = one(fs, 12)
        if idata is not None:
            for f, _, v in fields(idata):
                e2 = fields(v)
                (cats if f == 1 else names)[one(e2, 1)] = one(e2, 2).decode("utf-8")
        td = one(fs, 60)
        if td is not None:
            tfs = fields(td)
            tracks[one(tfs, 1)] = {"name": (one(tfs, 2) or b"").decode("utf-8"),
                                   "counter": one(tfs, 8) is not None}
        te = one(fs, 11)
        if te is not None:
            efs = fields(te)
            ty, track = one(efs, 9), one(efs, 11)
            findings_track = tracks.get(track, {}).get("name") == "findings"
            types["finding" if findings_track else ty] += 1
            if ty == 1:
                begin_names[names.get(one(efs, 10), "?")] += 1
                begin_ts.append(one(fs, 8))
            if ty == 4:
                counter_tracks[tracks[track]["name"]] += 1
    decoded = True
except (ValueError, IndexError, KeyError, UnicodeDecodeError) as err:
    decoded = False
    check("the decoder in this test reads every packet", False, err)
if decoded:
    check("the decoder in this test reads every packet", True)
    check("every packet is on one sequence, the first clears its state",
          seq_ok and first_flags == 1, (seq_ok, first_flags))
    check("slice begins and ends pair up, as many as the JSON's slices",
          types[1] == types[2] == len(slices), f"{types[1]} {types[2]} vs {len(slices)}")
    check("instants match the JSON's", types[3] == len(instants), f"{types[3]} vs {len(instants)}")
    check("counter values match the JSON's", types[4] == len(counters),
          f"{types[4]} vs {len(counters)}")
    check("counter tracks match the JSON's, point by point", counter_tracks == per_track,
          set(counter_tracks) ^ set(per_track))
    check("findings match the JSON's", types["finding"] == len(findings),
          f"{types['finding']} vs {len(findings)}")
    check("interned names give the JSON's slice names",
          begin_names == collections.Counter(x["name"] for x in slices),
          (begin_names, collections.Counter(x["name"] for x in slices)))
    check("categories are interned", sorted(cats.values()) == sorted(
        ["step", "phase", "comm", "operator", "dataloader", "span", "instant", "finding",
         "python"]), cats)
    check("slice begins are at the JSON's times (UTC ns)", sorted(begin_ts) == sorted(
        start_ns + round(x["ts"] * 1000) for x in slices), begin_ts[:3])
    check("the hostile span name is interned intact", SPAN in names.values(), names)
print(f"# Chrome {len(raw)} bytes, Perfetto {len(pf)} bytes for {len(ev)} events")

# What the lanes cannot hold is said, not left out of sight: on one thread,
# 12 spans that each overlap the next (staggered, none nesting: 8 lanes take
# 8, the last lane takes 4 out of their nesting) and 70 spans nested inside
# each other on their own thread (64 are kept open on a lane).
CROWD = r"""
import threading, strobe
t0 = strobe.monotonic_ns()
for i in range(12):
    strobe.complete("overlap", t0 + i * 1000, 20000)
def deep():
    for i in range(70):
        strobe.complete("nest", t0 + i * 100, 100000 - i * 200)
th = threading.Thread(target=deep)
th.start()
th.join()
"""
db2 = store_path("crowded.db")
p = strobe("run", "--quiet", "--no-report", "--", PYTHON, "-c", CROWD, store=db2, timeout=120)
if check("the crowded workload runs", p.returncode == 0, p.stderr):
    for fmt, out in (("chrome", "crowd.json"), ("perfetto", "crowd.pftrace")):
        p = strobe("trace", "--format", fmt, "-o", os.path.join(TMP, out), "last", store=db2)
        warns = [l for l in p.stderr.splitlines() if "warning" in l]
        check(f"{fmt}: one warning for the 4 slices past 8 lanes",
              any(l.count("4 slices overlapped more than 7 others") for l in warns), warns)
        check(f"{fmt}: one warning for the 6 slices nested past 64",
              any("6 slices nested more than 64 deep" in l for l in warns), warns)
        check(f"{fmt}: two warnings in all, exit 0", len(warns) == 2 and p.returncode == 0,
              (p.returncode, warns))
done()
