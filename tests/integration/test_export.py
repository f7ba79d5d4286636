#!/usr/bin/python3
"""strobe export, show and trace on long series, a damaged block and a full disk:

- a series of some 10^5..10^6 points (a job that logs one metric fast) is
  exported a block at a time: every point the blocks' headers count comes
  out (read from SQLite, not through strobe), in time order, with the
  values the job logged; and export's peak memory (the kernel's ru_maxrss
  of the process) is no more than exporting a 100-point series plus a
  small part of what the series takes as an array (16 B a point), where
  holding it whole added the array (as /usr/bin/time reads the peaks);
- a block whose data is cut in half is skipped with one warning naming the
  series and the count of damaged blocks; every other block's points are
  still written, and the exit status is 0;
- output to a full device (/dev/full) is a one-line error and exit 1;
- `-o -` writes to stdout, as trace and report take it;
- show reads each series a block at a time too, keeping only its values
  for the percentiles (8 B a point, where the points and a copy took 24):
  on a synthetic run of 100 series of 524 161 points (bench/rules_synth),
  its peak RSS past a tiny run's and the store's own pages (mmap'd) stays
  under 16 B a point (the old code took 14 MB, 27 B a point);
- trace reads each counter a block at a time as it writes: on 100 series
  of 54 001 points, the Chrome and Perfetto writers' peak RSS past a tiny
  run's and the store's pages stays within a tenth of the points as an
  array (the old code held them all: 80 MB past, 16 B a point); with a
  damaged block, trace writes every other point, warns once, exits 0."""
import json
import os
import sqlite3
import subprocess

from strobetest import PYTHON, STROBE, check, done, sanitized, show, skip, store_path, strobe

# paced so that the recorder's drain keeps most of it; what is dropped is
# counted and does not matter here (the blocks say what was kept)
LOG_JOB = r"""
import strobe, time
for i in range(600000):
    strobe.log("x", i)
    if i % 2000 == 1999:
        time.sleep(0.01)
"""


def export_peak(db, *args):
    """(exit status, stdout line count, peak RSS in bytes, output path) of
    strobe export, the peak as /usr/bin/time reads it (the kernel's
    ru_maxrss of its child). Not os.wait4 on a child of this process: a
    forked child's peak counts this Python's pages from before the exec."""
    out, rss = store_path("export.out"), store_path("export.rss")
    with open(out, "wb") as f:
        p = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%M", STROBE, "export", "--store", db, *args],
                           stdout=f, stderr=subprocess.DEVNULL, timeout=120)
    with open(rss) as f:
        peak = int(f.read().split()[-1]) * 1024
    with open(out, "rb") as f:
        lines = sum(1 for _ in f)
    return p.returncode, lines, peak, out


def peak_rss(*cmd):
    """(exit status, peak RSS in bytes) of a command, as /usr/bin/time reads it."""
    rss = store_path("peak.rss")
    p = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=300)
    with open(rss) as f:
        return p.returncode, int(f.read().split()[-1]) * 1024


def block_counts(db, run_id, name):
    c = sqlite3.connect(db)
    rows = c.execute("SELECT b.id, b.count FROM blocks b JOIN series s ON s.id = b.series_id "
                     "WHERE s.run_id = ? AND s.name = ? ORDER BY b.start_ns", (run_id, name)).fetchall()
    c.close()
    return rows


SANITIZED = sanitized()
db = store_path("export.db")
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(db + suffix):
        os.remove(db + suffix)
p = strobe("run", "--quiet", "--no-report", "--name", "long", "--", PYTHON, "-c", LOG_JOB, store=db, timeout=300)
check("recorded a job that logs one metric fast", p.returncode == 0, p.stderr)
run = show(db, "long")
if run["dropped_events"]:
    check("--quiet still warns of the dropped events, with their count",
          f"{run['dropped_events']} of " in p.stderr and "framework events were dropped" in p.stderr, p.stderr)
blocks = block_counts(db, run["id"], "app.x")
total = sum(n for _, n in blocks)
if total < 200000:
    skip("export's memory on a long series", f"only {total} points kept (a loaded machine dropped the rest)")
else:
    rc, lines, peak, out = export_peak(db, "--format", "csv", "--metric", "app.x", "long")
    check(f"every point the blocks count is exported ({total} in {len(blocks)} blocks)",
          rc == 0 and lines == total + 1, (rc, lines, total))
    with open(out) as f:
        next(f)
        ts, vals = [], []
        for line in f:
            t, _, v = line.rstrip("\n").split(",")
            ts.append(int(t))
            vals.append(float(v))
    check("in time order, the values the job logged (0 to 599999, rising)",
          ts == sorted(ts) and all(b > a for a, b in zip(vals, vals[1:])) and vals[-1] <= 599999
          and all(v == int(v) for v in vals), (ts[:3], vals[:3], vals[-3:]))
    rc0, lines0, base, _ = export_peak(db, "--format", "csv", "--metric", "cpu.util", "long")
    array = total * 16
    rc, lines, peak_j, _ = export_peak(db, "--format", "jsonl", "--metric", "app.x", "long")
    check("the same count in JSON lines", rc == 0 and lines == total, (rc, lines, total))
    if SANITIZED:
        skip("export's peak memory", "a sanitizer build: its memory is the sanitizer's")
    else:
        check("export's peak memory is a block's, not the series' (/usr/bin/time's peak RSS of the long "
              "series' export, CSV and JSON lines, within a tenth of the series as an array of the short one's)",
              rc0 == 0 and lines0 > 1 and max(peak, peak_j) - base < array / 10,
              f"{peak / 1e6:.1f} and {peak_j / 1e6:.1f} MB against {base / 1e6:.1f} MB; "
              f"the series as an array is {array / 1e6:.1f} MB")

# a damaged block: its data cut in half
blocks = block_counts(db, run["id"], "app.x")
if len(blocks) < 3:
    skip("a damaged block", f"the series has {len(blocks)} blocks")
else:
    bad_id, bad_n = blocks[len(blocks) // 2]
    c = sqlite3.connect(db)
    c.execute("UPDATE blocks SET data = substr(data, 1, length(data) / 2) WHERE id = ?", (bad_id,))
    c.commit()
    c.close()
    total = sum(n for _, n in blocks)
    p = strobe("export", "--format", "csv", "--metric", "app.x", "long", store=db)
    rows = p.stdout.splitlines()
    warn = [l for l in p.stderr.splitlines() if l]
    check("a damaged block: exit 0, every other block's points written",
          p.returncode == 0 and len(rows) == total - bad_n + 1, (p.returncode, len(rows), total, bad_n))
    check("a damaged block: one warning naming the series and the count",
          len(warn) == 1 and "app.x" in warn[0] and "1 damaged block skipped" in warn[0], warn)
    out = store_path("long_trace.json")
    p = strobe("trace", "-o", out, "long", store=db)
    try:
        with open(out) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError) as e:
        events = []
    x_points = sum(1 for e in events if e.get("ph") == "C" and e.get("name", "").startswith("app.x"))
    warn = [l for l in p.stderr.splitlines() if "damaged" in l]
    check("trace with a damaged block: exit 0, every other point of the series in the trace, one warning",
          p.returncode == 0 and x_points == total - bad_n and len(warn) == 1 and "1 damaged block of" in warn[0],
          (p.returncode, x_points, total, bad_n, p.stderr[-300:]))

# show on long series: 100 series of 1.456 h at 100 Hz (just under 2^19
# points each, so the values' array is 4 MiB, not 8 after a doubling)
SYNTH = os.path.join(os.path.dirname(os.path.abspath(STROBE)), "bench", "rules_synth")


def synth_store(name, hours):
    """(rules_synth's exit status, path) of a fresh synthetic run of 100
    series at 100 Hz for hours."""
    sdb = store_path(name)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(sdb + suffix):
            os.remove(sdb + suffix)
    g = subprocess.run([SYNTH, "--store", sdb, "--hours", str(hours), "--hz", "100", "--steps", "10",
                        "--seed", "1"], capture_output=True, text=True, timeout=300)
    return g.returncode, sdb


if SANITIZED:
    skip("show's memory on long series", "a sanitizer build: its memory is the sanitizer's")
elif os.path.exists(SYNTH):
    sizes = {}
    for tag, hours in (("long", 1.456), ("tiny", 0.01)):
        g, sdb = synth_store(f"synth_{tag}.db", hours)
        rc, peak = peak_rss(STROBE, "show", "--json", "--store", sdb, "last")
        sizes[tag] = (g, rc, peak, os.path.getsize(sdb))
    n = round(1.456 * 3600 * 100) + 1
    (g1, rc1, long_peak, long_size), (g2, rc2, tiny_peak, tiny_size) = sizes["long"], sizes["tiny"]
    extra = long_peak - tiny_peak - (long_size - tiny_size)
    check("show on 100 series of %d points holds under 16 B a point past the store's pages" % n,
          g1 == g2 == rc1 == rc2 == 0 and extra < 16 * n,
          f"{extra / 1e6:.1f} MB past a tiny run's {tiny_peak / 1e6:.1f} MB and the store's "
          f"{(long_size - tiny_size) / 1e6:.1f} MB; 16 B a point is {16 * n / 1e6:.1f} MB")
else:
    skip("show's memory on long series", "no " + SYNTH)

# trace on long series: 100 series of 0.15 h at 100 Hz (54 001 points each)
if SANITIZED:
    skip("trace's memory on long series", "a sanitizer build: its memory is the sanitizer's")
elif os.path.exists(SYNTH):
    sizes = {}
    for tag, hours in (("long", 0.15), ("tiny", 0.01)):
        g, sdb = synth_store(f"trace_{tag}.db", hours)
        peaks = [peak_rss(STROBE, "trace", "--store", sdb, "--format", fmt, "-o", "/dev/null", "last")
                 for fmt in ("chrome", "perfetto")]
        sizes[tag] = (g, peaks, os.path.getsize(sdb))
    (g1, long_peaks, long_size), (g2, tiny_peaks, tiny_size) = sizes["long"], sizes["tiny"]
    array = 100 * (round(0.15 * 3600 * 100) - round(0.01 * 3600 * 100)) * 16
    for (fmt, (rc1, long_peak), (rc2, tiny_peak)) in zip(("Chrome", "Perfetto"), long_peaks, tiny_peaks):
        extra = long_peak - tiny_peak - (long_size - tiny_size)
        check(f"trace ({fmt}) holds a block of a counter, not the counters, past the store's pages",
              g1 == g2 == rc1 == rc2 == 0 and extra < array / 10,
              f"{extra / 1e6:.1f} MB past a tiny run's {tiny_peak / 1e6:.1f} MB and the store's "
              f"{(long_size - tiny_size) / 1e6:.1f} MB; the points as an array are {array / 1e6:.1f} MB")
else:
    skip("trace's memory on long series", "no " + SYNTH)

# a full disk
with open("/dev/full", "wb") as full:
    p = subprocess.run([STROBE, "export", "--store", db, "--format", "csv", "--metric", "cpu.util", "long"], stdout=full,
                       stderr=subprocess.PIPE, text=True, timeout=120)
lines = p.stderr.splitlines()
check("output to a full device: a one-line error, exit 1",
      p.returncode == 1 and len(lines) == 1 and "No space left" in lines[0], (p.returncode, p.stderr[-300:]))
# -o - is stdout, as trace and report take it: it once made a file named '-'
cwd = os.path.dirname(db)
plain = subprocess.run([STROBE, "export", "--store", db, "--format", "jsonl", "--metric", "cpu.util", "long"],
                       capture_output=True, timeout=120)
dash = subprocess.run([STROBE, "export", "--store", db, "--format", "jsonl", "--metric", "cpu.util", "-o", "-",
                       "long"], capture_output=True, timeout=120, cwd=cwd)
check("export -o - writes to stdout what export without -o writes, and no file named '-'",
      dash.returncode == 0 and dash.stdout == plain.stdout and plain.stdout
      and not os.path.exists(os.path.join(cwd, "-")), (dash.returncode, dash.stderr[-300:]))
done()
