#!/usr/bin/python3
"""The figures' formatting the dashboard and the report share
(web/common/format.js), run in node as it ships:

- a figure that rounds up into its next unit reads in it (3.50e+15, 1.00 M,
  1.00 s, 2m 0s, 1h 0m, 1.00 GiB, 1010 MiB), not as '3.50e+6 G',
  '1.00e+3 k', '1.00e+3 ms', '1m 60s', '1024 MiB' or '1.01e+3 MiB';
- a finding's time range reads as `strobe show` writes it
  (src/common/fmt.c's fmt_offset_range, whose cases tests/unit/test_fmt.c
  holds): the same cases here, and tenths against Python's '%.1f' (C's
  printf rounding, ties to even) over a sweep of values, ties included;
- a chart axis' ticks (ticks(unit, lo, hi, minIncr), which axis() gives
  uPlot): labels in one unit an axis, on round steps of it (binary for
  bytes), each reading back (by this test's own parser) as its tick's value,
  rising, never twice, at least two, over ranges from 1e-12 to 1e18.
The browser tests check that each page puts these on a real run's figures."""
import json
import math
import os
import re
import shutil
import subprocess

from strobetest import check, done, skip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "tests", "integration", "web_format.js")
FORMAT_JS = os.path.join(ROOT, "web", "common", "format.js")


def run_cases(cases):
    """[(fn, args...)] -> what each call returned in node."""
    p = subprocess.run(["node", HARNESS, FORMAT_JS], input=json.dumps(cases), capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        return ["node failed: " + p.stderr[-300:]] * len(cases)
    return json.loads(p.stdout)


def expect(title, table):
    """table: [((fn, args...), wanted)]; one check for the lot, the misses shown."""
    got = run_cases([list(c) for c, _ in table])
    bad = [(c, g, w) for (c, w), g in zip(table, got) if g != w]
    check(title, not bad, bad)


if not shutil.which("node"):
    skip("the pages' formatting", "no node (scripts/bootstrap)")
    done()

expect("counts: three digits in a unit of 1000, past T as 3.50e+15", [
    (("num", 3.5e15), "3.50e+15"), (("num", 2e12), "2.00 T"), (("num", 999960), "1.00 M"),
    (("num", 999.96e6), "1.00 G"), (("num", 12345), "12.3 k"), (("num", 99.96), "100"),
    (("num", 0.5), "0.500"), (("num", 150.25), "150.3"), (("num", -2500000), "-2.50 M"),
    (("num", 42), "42"), (("num", "NaN"), "–"), (("num", "null"), "–")])
expect("durations: a figure that rounds to the next unit reads in it", [
    (("dur", 0.0009996), "1.00 ms"), (("dur", 0.99996), "1.00 s"), (("dur", 9.9996), "10.0 s"),
    (("dur", 59.97), "1m 0s"), (("dur", 119.7), "2m 0s"), (("dur", 3599.6), "1h 0m"),
    (("dur", 7199.9), "2h 0m"), (("dur", 0.25), "250 ms"), (("dur", 0.0000125), "12.5 µs"),
    (("dur", 0), "0"), (("dur", -1.5), "-1.50 s"), (("dur", 75.2), "1m 15s"), (("dur", "NaN"), "–")])
expect("bytes: units of 1024 from where the one below rounds to 1024; 1000 to 1023 whole", [
    (("bytes", 1023.7), "1.00 KiB"), (("bytes", 1010 * 1048576), "1010 MiB"),
    (("bytes", 1023.7 * 1048576), "1.00 GiB"), (("bytes", 9.996 * 1024), "10.0 KiB"),
    (("bytes", 512), "512 B"), (("bytes", 1536), "1.50 KiB"), (("bytes", 8 << 30), "8.00 GiB"),
    (("bytes", "null"), "–")])
expect("a metric's value by its unit", [
    (("byUnit", 50, "pct"), "50 %"), (("byUnit", 2048, "bytes/s"), "2.00 KiB/s"),
    (("byUnit", 1048576, "bytes"), "1.00 MiB"), (("byUnit", 12.5, "ms"), "12.5 ms"),
    (("byUnit", 90, "s"), "1m 30s"), (("byUnit", 3, "count"), "3"), (("byUnit", 3, "W"), "3 W"),
    (("byUnit", 3, ""), "3"), (("byUnit", "NaN", "pct"), "–")])

# ---- the ticks of a chart's axis (ticks(unit, lo, hi, minIncr)) ----------
# The report's disk chart read "0, 7.7 MiB/s, 5.4 MiB/s": decimal ticks
# (2e7 B/s...) written in MiB with three digits were too wide for its axis.
expect("axis ticks: round numbers of the unit the labels are in (binary for bytes)", [
    (("ticks", "bytes/s", 0, 8.1e6, 2.5e6), {"splits": [0, 2.5 * 2 ** 20, 5 << 20, 7.5 * 2 ** 20],
                                          "labels": ["0 MiB/s", "2.5 MiB/s", "5.0 MiB/s", "7.5 MiB/s"],
                                          "incr": 2.5 * 2 ** 20, "name": "MiB/s"}),
    (("ticks", "bytes/s", 0, 4e7, 8e6), {"splits": [0, 10 << 20, 20 << 20, 30 << 20],
                                       "labels": ["0 MiB/s", "10 MiB/s", "20 MiB/s", "30 MiB/s"], "incr": 10 << 20,
                                       "name": "MiB/s"}),
    (("ticks", "s", 0, 4.3, 0.9), {"splits": [0, 1, 2, 3, 4], "labels": ["0 s", "1 s", "2 s", "3 s", "4 s"], "incr": 1,
                                   "name": "s"}),
    (("ticks", "ms", 0, 25, 6), {"splits": [0, 10, 20], "labels": ["0 ms", "10 ms", "20 ms"], "incr": 10, "name": "ms"}),
    (("ticks", "pct", 0, 100, 20), {"splits": [0, 20, 40, 60, 80, 100],
                                    "labels": ["0 %", "20 %", "40 %", "60 %", "80 %", "100 %"], "incr": 20, "name": "%"}),
    (("ticks", "int", 0, 3, 0.2), {"splits": [0, 1, 2, 3], "labels": ["0", "1", "2", "3"], "incr": 1, "name": ""}),
])

LABELS = [  # (unit, lo, hi, minIncr), the labels
    (("bytes", 0, 1.5 * 2 ** 30, 2 ** 28), ["0 GiB", "0.25 GiB", "0.50 GiB", "0.75 GiB", "1.00 GiB", "1.25 GiB", "1.50 GiB"]),
    (("bytes", 0, 1000, 300), ["0 B", "500 B", "1000 B"]),
    (("ms", 0, 0.003, 0.0004), ["0 µs", "0.5 µs", "1.0 µs", "1.5 µs", "2.0 µs", "2.5 µs", "3.0 µs"]),
    (("s", 0, 700, 100), ["0 min", "2 min", "4 min", "6 min", "8 min", "10 min"]),
    (("s", 0, 86400, 3 * 3600), ["0 h", "3 h", "6 h", "9 h", "12 h", "15 h", "18 h", "21 h", "24 h"]),
    (("s", 50000, 50001, 0.2), ["50000.0 s", "50000.2 s", "50000.4 s", "50000.6 s", "50000.8 s", "50001.0 s"]),
    (("", 0, 3.5e15, 5e14), ["0", "5e+14", "1.0e+15", "1.5e+15", "2.0e+15", "2.5e+15", "3.0e+15", "3.5e+15"]),
    (("", -1e-7, 2e-7, 3e-8), ["-1.0e-7", "-5e-8", "0", "5e-8", "1.0e-7", "1.5e-7", "2.0e-7"]),
    (("W", 0, 25000, 4000), ["0 W", "5 k W", "10 k W", "15 k W", "20 k W", "25 k W"]),
    (("", -2.44, -1.54, 0.27), ["-2.25", "-2.00", "-1.75"]),  # two ticks at least
    (("int", 0, 300, 33), ["0", "50", "100", "150", "200", "250", "300"]),
    (("pct", 0, 0, 0), ["0 %"]),
]
got = run_cases([["ticks", *c] for c, _ in LABELS])
bad = [(c, g.get("labels") if isinstance(g, dict) else g, w) for (c, w), g in zip(LABELS, got)
       if not isinstance(g, dict) or g.get("labels") != w]
check("axis labels: µs to hours, 1e-7 to 3.5e15, negative, zoomed far from zero, k W, whole counts", not bad, bad)

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "TiB": 1024 ** 4, "PiB": 1024 ** 5, "EiB": 1024 ** 6,
         "ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_tick(label, unit):
    """A tick label back to a value of the scale, by this test's own reading
    of the units; None when it is not a label of that unit."""
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?(?:e[+-]\d+)?)(?: (.*))?", label)
    if not m:
        return None
    v, rest = float(m.group(1)), m.group(2) or ""
    if unit in ("bytes", "bytes/s"):
        suffix = "/s" if unit == "bytes/s" else ""
        u = rest[:-len(suffix)] if suffix and rest.endswith(suffix) else (rest if not suffix else None)
        return v * UNITS[u] if u in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB") else None
    if unit in ("s", "ms"):
        return v * UNITS[rest] / (1e-3 if unit == "ms" else 1) if rest in ("ns", "µs", "ms", "s", "min", "h") else None
    if unit == "pct":
        return v if rest == "%" else None
    own = "" if unit in ("", "count", "int") else unit
    words = rest.split(" ") if rest else []
    if words and words[0] in ("k", "M", "G", "T"):
        v *= UNITS[words.pop(0)]
    if unit == "int" and abs(v - round(v)) > 1e-9 * max(1, abs(v)):
        return None
    return v if " ".join(words) == own else None


def number(label):
    """The figure a label writes, before its unit."""
    return float(label.split(" ")[0])


def round_step(x):
    """Whether a step is 1, 1.5, 2, 2.5, 3, 5 or 6 times a power of ten."""
    e = math.floor(math.log10(x))
    mant = x / 10 ** e
    return any(abs(mant - r) < 1e-9 for r in (1, 1.5, 2, 2.5, 3, 5, 6, 10))


# ranges from 1e-12 to 1e18 wide, at zero, off zero and negative, flat, and
# a fraction of a px per unit to hundreds: whatever scale uPlot gives an axis
cases = []
for unit in ("bytes", "bytes/s", "pct", "ms", "s", "count", "", "W", "1/s", "int"):
    for e in range(-12, 19, 2):
        for lo_f, hi_f in ((0, 1), (0, 7.7), (-3, 2), (100, 101.5), (0.999, 1.001), (-9, -1)):
            for n in (2, 5, 12):
                lo, hi = lo_f * 10 ** e, hi_f * 10 ** e
                if unit == "int" and hi - lo < 3:
                    continue
                cases.append((unit, lo, hi, (hi - lo) / n))
    for x in (0, 5, -5, 1e9):
        cases.append((unit, x, x, 0))
got = run_cases([["ticks", *c] for c in cases])
bad = []
for (unit, lo, hi, want), t in zip(cases, got):
    if not isinstance(t, dict):
        bad.append(((unit, lo, hi, want), t))
        continue
    sp, lb, inc = t["splits"], t["labels"], t["incr"]
    vals = [parse_tick(x, unit) for x in lb]
    why = None
    if not sp or len(sp) != len(lb):
        why = "no ticks" if not sp else "labels and ticks differ in number"
    elif any(v is None for v in vals):
        why = "a label not of the unit"
    elif any(abs(v - s) > 0.01 * (inc or abs(s) or 1) for v, s in zip(vals, sp)):
        why = "a label does not read as its tick"
    elif any(b <= a for a, b in zip(vals, vals[1:])) or len(set(lb)) != len(lb):
        why = "labels not rising, or one twice"
    elif any(s < lo - 1e-9 * abs(inc or 1) or s > hi + 1e-9 * abs(inc or 1) for s in sp):
        why = "a tick outside the range"
    elif hi > lo and (inc < want / 4 * (1 - 1e-9) or len(sp) > 400 or (inc < want * (1 - 1e-9) and len(sp) > 5)):
        why = "ticks closer than asked (other than to have two, down to a quarter)"
    elif hi > lo and hi - lo >= want * 4 and len(sp) < 2:
        why = "one tick where two fit"
    elif len(lb) > 1 and "e" not in lb[0] + lb[1] and not round_step(abs(number(lb[1]) - number(lb[0]))):
        why = "a step that is not a round number of the unit written"
    elif len({re.sub(r"^-?[\d.e+-]+", "", x) for x in lb if number(x) != 0}) > 1:  # zero: "0", not "0 k"
        why = "labels of one axis in more than one unit"
    if why:
        bad.append(((unit, lo, hi, want), why, lb[:8]))
check("axis ticks over %d ranges (1e-12 to 1e18, negative, flat): each label reads as its tick in the series' "
      "unit, rising, distinct, one unit an axis, round steps, two at least, none closer than asked" % len(cases), not bad, bad[:8])

# the cases of tests/unit/test_fmt.c, with what fmt_offset_range writes
expect("a finding's range as strobe show writes it (tenths under a minute, then a clock)", [
    (("offsetRange", 0.04, 1.62), "0.0-1.6 s"), (("offsetRange", 12.25, 30), "12.2-30.0 s"),
    (("offsetRange", 45, 130), "0:45-2:10"), (("offsetRange", 10.2, 59.96), "0:10-1:00"),
    (("offsetRange", 3602, 3720), "1:00:02-1:02:00"), (("offsetRange", 30, 3600), "0:00:30-1:00:00"),
    (("offsetRange", -0.5, 2), "0.0-2.0 s"), (("offsetRange", 5, 3), "5.0-5.0 s"),
    (("offsetRange", 59.5, 60.5), "1:00-1:01"), (("offsetRange", 0, 59.94), "0.0-59.9 s"),
    (("offsetRange", "NaN", 3), "-")])

# tenths against C's rounding ('%.1f' in Python is correctly rounded, ties to
# even, as glibc's printf): every hundredth and every quarter under a minute
xs = sorted({k / 100 for k in range(0, 5990)} | {k / 4 for k in range(0, 239)} | {0.05, 0.15, 0.35, 1.45, 2.675})
got = run_cases([["offsetRange", x, x] for x in xs])
bad = [(x, g, "%.1f-%.1f s" % (x, x)) for x, g in zip(xs, got) if g != "%.1f-%.1f s" % (x, x)]
check("tenths round as printf does, exact ties (0.25, 12.25) to even, over %d values" % len(xs), not bad, bad[:10])
done()
