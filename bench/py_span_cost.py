#!/usr/bin/python3
"""Cost of `with strobe.span("x"):` from Python, beside its peers.

    bench/py_span_cost.py [--build DIR] [--quick]

Median ns per with-block (timeit, gc off, several repeats; the median of the
repeats) of:
  (a)  an empty Python context manager class, `with Empty():`
  (a') the same with an instance made beforehand, `with empty:`
  (b)  `with strobe.span("x"):` without a recorder
  (c)  `with strobe.span("x"):` under a live segment: build/tests/strobe-ringcat
       drains it every 10 ms (with -q: it validates every record but prints
       none, so the drain does not steal the CPU the writer is measured on)
  (d)  `with torch.autograd.profiler.record_function("x"):`, no profiler active,
       and (d') inside torch.profiler.profile() (CPU activity)
  (e)  a call of a function decorated with @strobe.span("x"), without and with a
       recorder, beside a plain call of the same empty function
Prints a markdown table with the medians and their ratio to (a). Every case runs
in a fresh /usr/bin/python3 with PYTHONPATH=BUILD/python.
"""
import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, timeit
import strobe

N, REPEAT, WHAT = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")


class Empty:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def plain():
    pass


@strobe.span("x")
def decorated():
    pass


g = {"strobe": strobe, "Empty": Empty, "empty": Empty(), "plain": plain, "decorated": decorated}
stmts = {"empty_class": "with Empty(): pass", "empty_instance": "with empty: pass",
         "span": "with strobe.span('x'): pass", "plain_call": "plain()",
         "decorated_call": "decorated()"}
out = {"enabled": strobe.enabled()}


def median_ns(stmt, number, glob):
    times = timeit.repeat(stmt, globals=glob, number=number, repeat=REPEAT)
    return statistics.median(times) / number * 1e9


for w in WHAT:
    if w in stmts:
        out[w] = median_ns(stmts[w], N, g)
    elif w in ("record_function", "record_function_profiled"):
        try:
            import torch
            from torch.autograd.profiler import record_function
        except Exception as e:  # noqa: BLE001 - any failure means: skip
            out[w] = None
            out[w + "_why"] = f"torch not importable ({type(e).__name__})"
            continue
        out["torch"] = torch.__version__
        tg = {"record_function": record_function}
        if w == "record_function":
            out[w] = median_ns("with record_function('x'): pass", max(N // 10, 1000), tg)
        else:  # the profiler keeps every event: fewer of them
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
                out[w] = median_ns("with record_function('x'): pass", max(N // 50, 1000), tg)
print(json.dumps(out))
"""


def child(build, n, repeat, what, shm=None):
    env = {k: v for k, v in os.environ.items() if k != "STROBE_SHM"}
    env["PYTHONPATH"] = os.path.join(build, "python")
    if shm:
        env["STROBE_SHM"] = shm
    p = subprocess.run(["/usr/bin/python3", "-c", CHILD, str(n), str(repeat), ",".join(what)],
                       capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        sys.exit(f"py_span_cost: the benchmark child failed:\n{p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    ringcat = os.path.join(a.build, "tests", "strobe-ringcat")
    ext = os.path.join(a.build, "python", "strobe", "_strobe.abi3.so")
    for f in (ringcat, ext):
        if not os.path.exists(f):
            sys.exit(f"py_span_cost: {f} is missing; run 'make' first")
    n, repeat = (50_000, 3) if a.quick else (500_000, 9)

    off = child(a.build, n, repeat, ["empty_class", "empty_instance", "span", "plain_call",
                                     "decorated_call", "record_function",
                                     "record_function_profiled"])
    # 4 rings of 2^20 records (32 MiB each): room for 10 ms of events at any rate here
    rc = subprocess.Popen([ringcat, "-q", "-r", "4", "-n", str(1 << 20),
                           f"/strobe-py-span-cost-{os.getpid()}"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        shm = rc.stdout.readline().strip()
        on = child(a.build, n, repeat, ["empty_class", "span", "decorated_call"], shm=shm)
    finally:
        tail, _ = rc.communicate(timeout=60)  # stdin closed: last drain, stats, exit
    stats = dict(x.split("=") for x in tail.split()[1:]) if tail.startswith("stats") else {}

    base = off["empty_class"]
    rows = [
        ("(a) empty Python context manager, `with Empty():`", off["empty_class"]),
        ("(a') the same, instance made beforehand, `with empty:`", off["empty_instance"]),
        ("(b) `with strobe.span(\"x\"):`, no recorder", off["span"]),
        ("(c) `with strobe.span(\"x\"):`, recording (strobe-ringcat draining)", on["span"]),
        ("(d) `with record_function(\"x\"):`, no torch profiler", off.get("record_function")),
        ("(d') `with record_function(\"x\"):`, inside torch.profiler.profile()",
         off.get("record_function_profiled")),
        ("plain call of an empty function", off["plain_call"]),
        ("(e) `@strobe.span(\"x\")` function call, no recorder", off["decorated_call"]),
        ("(e) `@strobe.span(\"x\")` function call, recording", on["decorated_call"]),
    ]
    print(f"Median ns per with-block or call, {repeat} repeats of {n} "
          f"(record_function: fewer); /usr/bin/python3 {sys.version.split()[0]}"
          + (f", torch {off['torch']}" if "torch" in off else "") + ".")
    print()
    print("| case | median ns | × (a) |")
    print("|---|---:|---:|")
    for name, v in rows:
        if v is None:
            print(f"| {name} | skipped: {off.get('record_function_why', 'n/a')} | |")
        else:
            print(f"| {name} | {v:.1f} | {v / base:.2f} |")
    print()
    verdict = "pass" if on["span"] <= 300 else "FAIL"
    print(f"Budget: `with strobe.span(...)` recording ≤ 300 ns: {on['span']:.1f} ns, **{verdict}**. "
          f"strobe-ringcat drained {stats.get('records', '?')} events, "
          f"{stats.get('dropped', '?')} dropped, {stats.get('invalid', '?')} invalid; "
          f"enabled() was {off['enabled']} without and {on['enabled']} with the segment.")


if __name__ == "__main__":
    main()
