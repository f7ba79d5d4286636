#!/usr/bin/python3
"""strobe run without its Python package (a binary built alone, copied
alone, or a package missing its extension): a Python command gets one
warning line saying what was not found, where strobe looked and what to
run, and the run still records the system; commands that would not be
captured anyway (not Python, --no-framework) get no warning."""
import os
import shutil
import subprocess
import tempfile

from strobetest import *

BUILD = os.path.dirname(os.path.abspath(STROBE))
SCRIPT = "import os, time; print('pid', os.getpid(), flush=True); time.sleep(0.5)"


def env_without_package(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("STROBE_PYTHON_DIR", "PYTHONPATH")}
    env.update(extra)
    return env


def record(binary, db, *cmd, opts=(), env=None):
    return subprocess.run([binary, "run", "--quiet", "--no-report", f"--store={db}", *opts, "--",
                           *cmd], capture_output=True, text=True, timeout=120,
                          env=env or env_without_package())


def warnings(p):
    return [line for line in p.stderr.splitlines() if line.startswith("strobe: warning:")]


def check_warning(name, p, looked_in):
    """One warning line: what is missing, every directory looked in, what to run."""
    w = warnings(p)
    check(f"{name}: exactly one warning line", len(w) == 1, p.stderr)
    line = w[0] if w else ""
    check(f"{name}: it says what was not found", "Python package was not found" in line, line)
    check(f"{name}: it names where it looked", all(d in line for d in looked_in),
          f"got {line!r}, want {looked_in}")
    check(f"{name}: it says what to run", "run 'make' in strobe's source tree" in line, line)


with tempfile.TemporaryDirectory(dir=TMP) as top:
    db = os.path.join(top, "t.db")
    alone = os.path.join(top, "bin")
    os.makedirs(alone)
    lone = os.path.join(alone, "strobe")
    shutil.copy(STROBE, lone)

    # the binary alone: neither bin/python nor lib/strobe/python exists
    p = record(lone, db, PYTHON, "-c", SCRIPT)
    check("lone binary: the Python job runs", p.returncode == 0 and "pid " in p.stdout,
          (p.returncode, p.stderr[-300:]))
    check_warning("lone binary", p, [os.path.join(alone, "python"),
                                     os.path.join(top, "lib", "strobe", "python")])
    r = show(db)
    pid = int(p.stdout.split()[1]) if p.stdout.startswith("pid ") else None
    roots = [m["meta"]["pid"] for k, m in r["metrics"].items()
             if k.startswith("proc.cpu{") and m["meta"]["root"]]
    check("lone binary: the job's process is recorded (its own pid)", roots == [pid],
          f"got {roots}, want [{pid}]")
    with open("/proc/meminfo") as f:
        total = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemTotal:"))
    mem = r["metrics"].get("mem.total_bytes", {})
    check("lone binary: the host series are recorded (memory as /proc/meminfo says)",
          r["metrics"].get("cpu.util", {}).get("count", 0) > 0 and mem.get("max") == total,
          f"got {mem.get('max')}, want {total}")
    check("lone binary: no steps (nothing captured them)", not (r["steps"] or {}).get("count"),
          r["steps"])

    # what is not captured anyway needs no warning
    p = record(lone, db, "/bin/sh", "-c", "exit 0")
    check("not a Python command: no warning", p.returncode == 0 and not warnings(p), p.stderr)
    p = record(lone, db, PYTHON, "-c", SCRIPT, opts=("--no-framework",))
    check("--no-framework: no warning", p.returncode == 0 and not warnings(p), p.stderr)

    # $STROBE_PYTHON_DIR is the only place looked in when set
    nowhere = os.path.join(top, "nowhere")
    p = record(lone, db, PYTHON, "-c", SCRIPT, env=env_without_package(STROBE_PYTHON_DIR=nowhere))
    check_warning("STROBE_PYTHON_DIR without the package", p, [nowhere])
    check("STROBE_PYTHON_DIR without the package: only it is named",
          os.path.join(alone, "python") not in p.stderr, p.stderr)

    # a package beside the binary that lacks its C extension cannot capture
    shutil.copytree(os.path.join(BUILD, "python"), os.path.join(alone, "python"))
    os.unlink(os.path.join(alone, "python", "strobe", "_strobe.abi3.so"))
    p = record(lone, db, PYTHON, "-c", SCRIPT)
    check_warning("package without its extension", p, [os.path.join(alone, "python")])

    # the whole package: no warning
    shutil.copy(os.path.join(BUILD, "python", "strobe", "_strobe.abi3.so"),
                os.path.join(alone, "python", "strobe"))
    p = record(lone, db, PYTHON, "-c", SCRIPT)
    check("whole package beside the binary: no warning", p.returncode == 0 and not warnings(p),
          p.stderr)
done()
