#!/usr/bin/python3
"""The figures' formatting the dashboard and the report share
(web/common/format.js), run in node as it ships:

- a figure that rounds up into its next unit reads in it (3.50e+15, 1.00 M,
  1.00 s, 2m 0s, 1h 0m, 1.00 GiB, 1010 MiB), not as '3.50e+6 G',
  '1.00e+3 k', '1.00e+3 ms', '1m 60s', '1024 MiB' or '1.01e+3 MiB';
- a finding's time range reads as `strobe show` writes it
  (src/common/fmt.c's fmt_offset_range, whose cases tests/unit/test_fmt.c
  holds): the same cases here, and tenths against Python's '%.1f' (C's
  printf rounding, ties to even) over a sweep of values, ties included.
The browser tests check that each page puts these on a real run's figures."""
import json
import os
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
