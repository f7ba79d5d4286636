#!/usr/bin/python3
"""The Python package strobe (python/strobe/) and the shared libstrobe, against
a segment of our own: build/tests/strobe-ringcat creates it and prints every
event it drains, and a /usr/bin/python3 child with $STROBE_SHM uses the API.
Checks the exact events (kinds, names, nesting, steps, counter bits, the
decorator, exceptions, a thread, a forked child), drops under a full ring
without an exception, and silence without a recorder."""
import json
import os
import re
import struct
import subprocess
import textwrap

from strobetest import *

BUILD = os.environ.get("STROBE_BUILD", "build")
RINGCAT = os.path.join(BUILD, "tests", "strobe-ringcat")
PKG = os.path.join(BUILD, "python")
EXT = os.path.join(PKG, "strobe", "_strobe.abi3.so")
LIBSO = os.path.join(BUILD, "lib", "libstrobe.so")
API = {"strobe_span_begin", "strobe_span_end", "strobe_span_complete", "strobe_instant",
       "strobe_step", "strobe_counter", "strobe_counter_at_step", "strobe_enabled",
       "strobe_control_seq"}


def sanitizer_env():
    """A sanitizer build's extension needs its runtime loaded first (the
    interpreter is not instrumented): preload what it links, leaks off (the
    interpreter keeps its memory to the end)."""
    p = subprocess.run(["ldd", EXT], capture_output=True, text=True)
    libs = re.findall(r"=> (\S*lib(?:asan|ubsan|tsan)\S*)", p.stdout)
    if not libs:
        return {}
    return {"LD_PRELOAD": " ".join(libs), "ASAN_OPTIONS": "detect_leaks=0",
            "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}


SAN_ENV = sanitizer_env()


def py(code, shm=None, extra_env=None, timeout=60):
    """Run code in a /usr/bin/python3 child that imports the built package."""
    env = {k: v for k, v in os.environ.items() if k != "STROBE_SHM"}
    env["PYTHONPATH"] = PKG
    env.update(SAN_ENV)
    if shm is not None:
        env["STROBE_SHM"] = shm
    env.update(extra_env or {})
    return subprocess.run([PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def unescape(name):
    return re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), name)


class Ringcat:
    """A segment of our own, drained by strobe-ringcat until finish()."""

    def __init__(self, *opts):
        self.proc = subprocess.Popen([RINGCAT, *opts, f"/strobe-pytest-{os.getpid()}-{id(self)}"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.name = self.proc.stdout.readline().strip()

    def finish(self):
        """Stop it; (events, stats). An event is a dict of the line's fields.
        The `step` spans the package's step clock writes at each explicit
        step() and at exit (python/strobe/_steps.py, tested with the PyTorch
        capture) are set aside in self.step_spans."""
        out, err = self.proc.communicate(timeout=30)  # closes stdin: drain once more, exit
        events, stats = [], {}
        for line in out.splitlines():
            f = line.split(" ")
            if f[0] == "stats":
                stats = {k: int(v) for k, v in (x.split("=") for x in f[1:])}
            elif len(f) == 7:
                events.append({"pid": int(f[0]), "tid": int(f[1]), "kind": f[2],
                               "name": unescape(f[3]), "step": int(f[4]), "value": int(f[5]),
                               "ts": int(f[6])})
        self.err = err
        self.step_spans = [e for e in events if (e["kind"], e["name"]) == ("complete", "step")]
        events = [e for e in events if (e["kind"], e["name"]) != ("complete", "step")]
        return events, stats


def bits(v):
    return struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def brief(evs):
    return [(e["kind"], e["name"], e["step"], e["value"]) for e in evs]


def ok_run(name, p):
    return check(f"{name}: exits 0 with nothing on stderr", p.returncode == 0 and p.stderr == "",
                 f"rc={p.returncode} stderr={p.stderr[-2000:]!r}")


# ---- 1. what was built ---------------------------------------------------------------------
def defined_symbols(path):
    p = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    return {line.split()[-1] for line in p.stdout.splitlines() if line.strip()}


def elf_dynamic(path):
    return subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout


syms = defined_symbols(LIBSO)
check("libstrobe.so exports exactly the strobe_* API", syms == API,
      f"extra {sorted(syms - API)}, missing {sorted(API - syms)}")
check("libstrobe.so has soname libstrobe.so.0", "[libstrobe.so.0]" in elf_dynamic(LIBSO))
check("libstrobe.a is built", os.path.getsize(os.path.join(BUILD, "lib", "libstrobe.a")) > 0)
syms = defined_symbols(EXT)
check("the extension exports only PyInit__strobe", syms == {"PyInit__strobe"}, sorted(syms))
dyn = elf_dynamic(EXT)
check("the extension needs no libstrobe or libpython at run time",
      "libstrobe" not in dyn and "libpython" not in dyn, dyn)

# ---- 2. without a recorder -------------------------------------------------------------------
EVERYTHING = """
    import strobe, os
    with strobe.span("a"):
        with strobe.span("b"):
            pass
    @strobe.span("d")
    def f(): return 1
    f()
    strobe.step(); strobe.step(7)
    strobe.log("loss", 0.5); strobe.log("loss", 1, step=3)
    strobe.instant("i"); strobe.complete("c", strobe.monotonic_ns(), 10)
    print(strobe.enabled(), strobe.current_step())
"""
rc = Ringcat()
p = py(EVERYTHING)
ok_run("no STROBE_SHM", p)
check("no STROBE_SHM: enabled() is False, steps still counted", p.stdout.split() == ["False", "7"],
      p.stdout)
p = py(EVERYTHING, shm="/strobe-no-such-segment")
ok_run("STROBE_SHM names no segment", p)
check("STROBE_SHM names no segment: silent, enabled() is False",
      p.stdout.split() == ["False", "7"], p.stdout)
p = py(EVERYTHING, shm="")
ok_run("STROBE_SHM empty", p)
events, stats = rc.finish()
check("no events reach a segment nobody named", events == [] and stats.get("records") == 0,
      f"{events[:5]} {stats}")

# bad arguments raise the same with or without a recorder
BAD = """
    import strobe, json
    bad = [lambda: strobe.span(b"x"), lambda: strobe.span(""), lambda: strobe.span("a\\0b"),
           lambda: strobe.span("x" * 256), lambda: strobe.log("x", "1.0"),
           lambda: strobe.log("x", None), lambda: strobe.log("x", 1 + 2j),
           lambda: strobe.step(-1), lambda: strobe.step(2 ** 32), lambda: strobe.step(1.5),
           lambda: strobe.complete("x", 0, -1), lambda: strobe.instant(3),
           lambda: strobe.span("x")(42), lambda: strobe.log("x", 1.0, step=-2)]
    out = []
    for b in bad:
        try:
            b()
            out.append("no error")
        except Exception as e:
            out.append(type(e).__name__)
    strobe.span("y" * 255); strobe.span("é")  # the longest name; UTF-8 beyond ASCII
    print(json.dumps(out), strobe.current_step())
"""
want_bad = ["TypeError", "ValueError", "ValueError", "ValueError", "TypeError", "TypeError",
            "TypeError", "ValueError", "ValueError", "TypeError", "ValueError", "TypeError",
            "TypeError", "ValueError"]
rc = Ringcat()
for where, shm in (("no recorder", None), ("recorder", rc.name)):
    p = py(BAD, shm=shm)
    ok_run(f"bad arguments, {where}", p)
    got = json.loads(p.stdout.split("\n")[0].rsplit(" ", 1)[0]) if p.returncode == 0 else None
    check(f"bad arguments raise TypeError/ValueError, {where}", got == want_bad,
          f"got {got}, want {want_bad}")
    check(f"a refused step changes nothing, {where}", p.stdout.strip().endswith(" 0"), p.stdout)
rc.finish()

# ---- 3. the events, exactly ----------------------------------------------------------------
MAIN = """
    import json, os, strobe, threading
    from fractions import Fraction
    t0 = strobe.monotonic_ns()
    out = {"enabled": strobe.enabled(), "pid": os.getpid()}
    strobe.step()                                  # 1
    with strobe.span("outer"):
        with strobe.span("inner") as s:
            strobe.instant("mark")
    out["as"] = s is strobe.span("inner") and isinstance(s, strobe.Span)
    strobe.step(5)
    try:
        with strobe.span("boom"):
            raise KeyError("k")
    except KeyError:
        out["caught"] = True

    @strobe.span("deco")
    def f(x):
        "doc of f"
        if x < 0:
            raise ValueError("neg")
        return x * 2

    out["f"] = [f(21), f.__name__, f.__doc__, f.__wrapped__.__name__]
    try:
        f(-1)
    except ValueError:
        out["deco raised"] = True

    class Num:
        def __float__(self):
            return 0.625

    for v in VALUES + [Fraction(1, 3), Num()]:
        strobe.log("v", v)
    strobe.log("late", 2.5, step=3)
    strobe.log("spaced name", 1.0)

    def worker():
        with strobe.span("in thread"):
            pass
    th = threading.Thread(target=worker)
    th.start(); th.join()

    out["step"] = strobe.step()                    # 6
    out["current"] = strobe.current_step()
    strobe.complete("done", 1000, 250)
    out["t0"], out["t1"] = t0, strobe.monotonic_ns()
    print(json.dumps(out))
"""
VALUES = [0.1, -0.0, 1e-300, 5e-324, float("inf"), -float("inf"), 1 / 3, 7, 2 ** 53 + 1, True,
          -1.5e308]
rc = Ringcat()
p = py(MAIN.replace("VALUES", repr(VALUES).replace("inf", "float('inf')")), shm=rc.name)
events, stats = rc.finish()
ok_run("events", p)
out = json.loads(p.stdout) if p.returncode == 0 else {}
check("enabled() is True under a recorder", out.get("enabled") is True, out)
check("the script sees its results: with-as, exception caught, decorator",
      out.get("as") and out.get("caught") and out.get("deco raised")
      and out.get("f") == [42, "f", "doc of f", "f"], out)
check("step() returns and current_step() reports the step", out.get("step") == 6
      and out.get("current") == 6, out)
pid = out.get("pid")
main = [e for e in events if e["pid"] == pid and e["tid"] == pid]
want = [("step", "-", 1, 1),
        ("begin", "outer", 1, 0), ("begin", "inner", 1, 0), ("instant", "mark", 1, 0),
        ("end", "inner", 1, 0), ("end", "outer", 1, 0),
        ("step", "-", 5, 5),
        ("begin", "boom", 5, 0), ("end", "boom", 5, 0),
        ("begin", "deco", 5, 0), ("end", "deco", 5, 0), ("begin", "deco", 5, 0),
        ("end", "deco", 5, 0)]
want += [("counter", "v", 5, bits(v)) for v in VALUES + [1 / 3, 0.625]]
want += [("counter", "late", 3, bits(2.5)), ("counter", "spaced name", 5, bits(1.0)),
         ("step", "-", 6, 6), ("complete", "done", 6, 250)]
got = brief(main)
check("main thread: every event, in order, with its step", got == want,
      "\n".join(f"  got {g}  want {w}" for g, w in zip(got + [None] * 99, want + [None] * 99)
                if g != w and (g or w)))
check("counter values are bit-exact (ints, -0.0, denormals, inf, __float__)",
      [e["value"] for e in main if e["name"] == "v"] == [bits(v) for v in VALUES + [1 / 3, 0.625]])
ts = [e["ts"] for e in main if e["kind"] != "complete"]
check("timestamps are monotonic_ns()'s clock, in order",
      ts == sorted(ts) and out and out["t0"] <= ts[0] and ts[-1] <= out["t1"],
      f"{out.get('t0')} <= {ts[:1]} .. {ts[-1:]} <= {out.get('t1')}")
done_ev = [e for e in main if e["kind"] == "complete"]
check("complete() keeps its start and duration", done_ev and done_ev[0]["ts"] == 1000
      and done_ev[0]["value"] == 250, done_ev)
thread = [e for e in events if e["pid"] == pid and e["tid"] != pid]
check("a thread writes its own ring, in the process's step",
      brief(thread) == [("begin", "in thread", 5, 0), ("end", "in thread", 5, 0)], brief(thread))
check("nothing invalid, nothing dropped", stats.get("invalid") == 0 and stats.get("dropped") == 0
      and stats.get("records") == len(events) + len(rc.step_spans), stats)

# ---- 4. fork ---------------------------------------------------------------------------------
FORK = """
    import json, os, strobe
    strobe.step(2)
    with strobe.span("before fork"):
        pass
    kid = os.fork()
    if kid == 0:
        with strobe.span("child"):
            strobe.log("child.v", 1.5)
        os._exit(0 if strobe.enabled() else 1)
    _, status = os.waitpid(kid, 0)
    strobe.instant("parent after fork")
    print(json.dumps({"pid": os.getpid(), "kid": kid, "status": status}))
"""
rc = Ringcat()
p = py(FORK, shm=rc.name)
events, stats = rc.finish()
ok_run("fork", p)
out = json.loads(p.stdout) if p.returncode == 0 else {"pid": -1, "kid": -2, "status": -1}
parent = [e for e in events if e["pid"] == out["pid"]]
child = [e for e in events if e["pid"] == out["kid"]]
check("the forked child is enabled and exits 0", out["status"] == 0, out)
check("a forked child's events carry its own pid, in a ring of its own",
      brief(child) == [("begin", "child", 2, 0), ("counter", "child.v", 2, bits(1.5)),
                       ("end", "child", 2, 0)] and all(e["tid"] == out["kid"] for e in child),
      brief(child))
check("the parent's ring has only the parent's events",
      brief(parent) == [("step", "-", 2, 2), ("begin", "before fork", 2, 0),
                        ("end", "before fork", 2, 0), ("instant", "parent after fork", 2, 0)],
      brief(parent))

# ---- 5. steps: listeners ---------------------------------------------------------------------
LISTEN = """
    import json, strobe, warnings
    seen = []
    strobe._step_listeners.append(seen.append)
    def bad(n):
        raise RuntimeError("listener bug")
    strobe._step_listeners.append(bad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        strobe.step(); strobe.step(); strobe.step(10); strobe.step()
    strobe._step(20)  # counted for the script: listeners are not told
    print(json.dumps({"seen": seen, "warnings": len(w), "left": len(strobe._step_listeners),
                      "current": strobe.current_step()}))
"""
rc = Ringcat()
p = py(LISTEN, shm=rc.name)
events, stats = rc.finish()
ok_run("step listeners", p)
out = json.loads(p.stdout) if p.returncode == 0 else {}
check("listeners hear each explicit step; a raising one is removed with one warning",
      out == {"seen": [1, 2, 10, 11], "warnings": 1, "left": 1, "current": 20}, out)
check("every step reaches the ring", brief(events) == [("step", "-", n, n)
                                                      for n in (1, 2, 10, 11, 20)], brief(events))

# ---- 6. a full ring drops and counts, never raises -------------------------------------------
FLOOD = """
    import strobe
    for i in range(20000):
        with strobe.span("flood"):
            pass
    print("done")
"""
rc = Ringcat("-q", "-r", "2", "-n", "64")
p = py(FLOOD, shm=rc.name)
events, stats = rc.finish()
ok_run("a full ring", p)
check("a full ring: every event either arrives or is counted as dropped",
      stats.get("dropped", 0) > 0 and stats.get("records", 0) + stats["dropped"] == 40000, stats)

# ---- 7. a 0-d tensor ------------------------------------------------------------------------
TENSOR = """
    import strobe, torch
    strobe.log("t", torch.tensor(0.25, dtype=torch.float64))
    strobe.log("t", torch.tensor(3))
    try:
        strobe.log("t", torch.tensor([1.0, 2.0]))
    except Exception as e:
        print(type(e).__name__)
"""
if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
    skip("a 0-d tensor is logged by value", "torch is not importable")
else:
    rc = Ringcat()
    p = py(TENSOR, shm=rc.name, timeout=120)
    events, stats = rc.finish()
    check("a 0-d tensor is logged by value; a tensor of two raises",
          p.returncode == 0 and brief(events) == [("counter", "t", 0, bits(0.25)),
                                                  ("counter", "t", 0, bits(3.0))]
          and p.stdout.strip() in ("ValueError", "RuntimeError", "TypeError"),
          f"{brief(events)} {p.stdout!r} {p.stderr[-500:]!r}")

# ---- 8. the shared libstrobe from another program (ctypes) -----------------------------------
CTYPES = f"""
    import ctypes
    lib = ctypes.CDLL({os.path.abspath(LIBSO)!r})
    lib.strobe_counter_at_step.argtypes = [ctypes.c_char_p, ctypes.c_double, ctypes.c_uint32]
    lib.strobe_step(4)
    lib.strobe_instant(b"from c")
    lib.strobe_counter_at_step(b"c.v", 0.5, 2)
    print(lib.strobe_enabled())
"""
rc = Ringcat()
p = py(CTYPES, shm=rc.name)
events, stats = rc.finish()
ok_run("libstrobe.so through ctypes", p)
check("libstrobe.so records through a segment",
      p.stdout.strip() == "1" and brief(events) == [("step", "-", 4, 4), ("instant", "from c", 4, 0),
                                                    ("counter", "c.v", 2, bits(0.5))],
      f"{p.stdout!r} {brief(events)}")
done()
