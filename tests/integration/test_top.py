#!/usr/bin/python3
"""strobe top on real recordings, against independent readings.

Two jobs record into one store while the test reads it: b-burn burns one
core in steps of 100 ms of CPU (strobe.step() each), holds 200 MiB, and
logs its own step times; a-idle sleeps. Two fake GPUs (the test NVML) sit
at 80 % and 40 %, 8 and 4 GiB.

- `strobe top --once`: b-burn's CPU against psutil's reading of the job
  over the same seconds, its RSS against psutil's, its step p50 against
  the median of the script's own step log, steps/s against the script's
  own count over the last 10 s, the GPU column against the scenario.
- `strobe top` in tmux: both runs listed, a hostile name (escapes, a
  newline, CJK) kept in its cell, sort keys, the detail of b-burn with its
  pid and GPUs, back, q: the process ends and the terminal is sane again.
  Redraws are counted from STROBE_TOP_FRAME_LOG's lines (each stamped
  with the monotonic clock by strobe top itself): at most 4 in any 3 s.

The jobs run until the test writes a file: nothing depends on the
machine's speed.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time

import psutil

from strobetest import *

BURN = r'''
import os, sys, time
import strobe
done, log = sys.argv[1], sys.argv[2]
hold = bytearray(200 << 20)
for i in range(0, len(hold), 4096):
    hold[i] = 1  # touched: resident
with open(log + ".pid", "w") as f:
    f.write(str(os.getpid()))
last = None
while not os.path.exists(done):
    strobe.step()
    now = time.monotonic()
    if last is not None:
        with open(log, "a") as f:
            f.write(f"{last} {now}\n")  # a step: from one step() to the next
    last = now
    end = time.process_time() + 0.1
    while time.process_time() < end:
        pass
'''

IDLE = r'''
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
'''

SCENARIO = """sample_period 0.02
device 0
device 1
at 0 0 util.gpu 80
at 0 1 util.gpu 40
at 0 0 mem.used 8589934592
at 0 1 mem.used 4294967296
at 0 0 power 250000
at 0 1 power 100000
at 0 0 temp 61
at 0 1 temp 45
"""

HOSTILE = "a-idle\x1b[2J\x1b[31m\nred \u8a13\u7df4"
HOSTILE_SHOWN = "a-idle\\x1b[2J\\x1b[31m\\nred \u8a13\u7df4"

tmp = tempfile.mkdtemp(prefix="strobe-top-", dir=TMP)
db = os.path.join(tmp, "t.db")
stop_file = os.path.join(tmp, "done")
steplog = os.path.join(tmp, "steps.log")
fake = os.path.join(os.path.dirname(os.path.abspath(STROBE)), "tests", "libnvidia-ml-fake.so")
scen = os.path.join(tmp, "gpu.scenario")
with open(scen, "w") as f:
    f.write(SCENARIO)
env = dict(os.environ, STROBE_NVML_LIB=fake, STROBE_FAKE_NVML=scen)
have_gpu = os.path.exists(fake)
if not have_gpu:
    skip("the GPU column", "no test NVML library " + fake)

jobs = [subprocess.Popen([STROBE, "run", "--quiet", f"--store={db}", "--name", name, "--", PYTHON,
                          "-c", code, stop_file, steplog], env=env if name == "b-burn" else None,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for name, code in (("b-burn", BURN), ("a-idle", IDLE))]


def finish():
    open(stop_file, "w").close()
    for j in jobs:
        try:
            j.wait(timeout=60)
        except subprocess.TimeoutExpired:
            j.kill()


def top_json():
    p = strobe("top", "--json", store=db, timeout=30)
    return json.loads(p.stdout) if p.returncode == 0 else {"runs": []}


def run_of(doc, name):
    return next((r for r in doc["runs"] if r["name"] == name), None)


def steps_logged():
    try:
        with open(steplog) as f:
            return [tuple(map(float, line.split())) for line in f if line.count(" ") == 1]
    except FileNotFoundError:
        return []


def ready():
    """b-burn live with step times, more than 10 s of steps, and a-idle listed."""
    doc = top_json()
    burn = run_of(doc, "b-burn")
    steps = steps_logged()
    return (burn and burn["state"] == "live" and burn["step_p50_seconds"] is not None
            and run_of(doc, "a-idle") and steps and steps[-1][1] - steps[0][0] > 12)


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}


def parse_bytes(cell):
    m = re.fullmatch(r"([\d.]+) (\w+)", cell)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def parse_time(cell):
    m = re.fullmatch(r"([\d.]+)(ns|us|ms|s)", cell)
    return float(m.group(1)) * TIME_UNITS[m.group(2)] if m else None


def table_row(text, name):
    """The cells of name's row in --once's table, by its header."""
    lines = text.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    for line in lines[1:]:
        if line.startswith(name + " "):
            return dict(zip([h.rstrip("*") for h in header], re.split(r"\s{2,}", line.strip())))
    return None


def body():
    if not check("both runs show up in strobe top --json, b-burn live with steps",
                 wait_for(ready, timeout=90, step=0.5), json.dumps(top_json())[:2000]):
        return
    with open(steplog + ".pid") as f:
        pid = int(f.read())
    proc = psutil.Process(pid)

    # --- the one-shot table against psutil and the script's own log ------------------
    cpu_before, t_before = sum(proc.cpu_times()[:2]), time.monotonic()
    readings = []
    for _ in range(5):
        time.sleep(1)
        p = strobe("top", "--once", store=db, timeout=30)
        row = table_row(p.stdout, "b-burn")
        if p.returncode == 0 and row:
            readings.append((row, proc.memory_info().rss, steps_logged()))
    cpu_after, t_after = sum(proc.cpu_times()[:2]), time.monotonic()
    check("top --once: a row for b-burn each time, no escapes", len(readings) == 5
          and "\x1b" not in p.stdout, p.stdout + p.stderr)
    psutil_cpu = 100 * (cpu_after - cpu_before) / (t_after - t_before)
    top_cpu = median([float(r["CPU"].rstrip("%")) for r, _, _ in readings])
    near("b-burn's CPU (% of a core, median of 5) is psutil's over the same 5 s", top_cpu,
         psutil_cpu, 15, "points")
    row, rss, steps = readings[-1]
    near("b-burn's RSS is psutil's (MiB)", parse_bytes(row["RSS"]) / 2**20, rss / 2**20,
         0.02 * rss / 2**20 + 2)
    own = [b - a for a, b in steps[-256:]]
    near("b-burn's step p50 is the median of the script's own steps (ms)",
         parse_time(row["STEP P50"]) * 1e3, median(own) * 1e3, 0.05 * median(own) * 1e3 + 2)
    end = steps[-1][1]
    own_rate = sum(1 for a, b in steps if b > end - 10) / 10
    near("b-burn's steps/s is the script's own count over the last 10 s", float(row["STEPS/S"]),
         own_rate, 0.15 * own_rate + 0.3)
    idle = table_row(p.stdout, "a-idle")
    check("a-idle's row: no GPU, no steps", idle and idle["GPU"] == "-" and idle["STEP P50"] == "-",
          str(idle))
    if have_gpu:
        check("b-burn's GPU is the mean of the fake GPUs' 80 % and 40 %", row["GPU"] == "60%",
              str(row))
        burn = run_of(top_json(), "b-burn")
        check("--json: GPU memory is the scenario's 8 + 4 GiB",
              burn["gpu_mem_used_bytes"] == 12 * 2**30, str(burn["gpu_mem_used_bytes"]))
        gpus = {g["gpu"]: g for g in burn["gpus"]}
        check("--json: each GPU's power and temperature as the scenario sets them",
              gpus.get("0", {}).get("power_watts") == 250 and gpus.get("1", {}).get("temp_celsius") == 45,
              json.dumps(burn["gpus"]))
    burn = run_of(top_json(), "b-burn")
    check("--json: b-burn's processes hold the job's pid", pid in [q["pid"] for q in burn["processes"]],
          json.dumps(burn["processes"]))

    # --- a hostile name, then the live view in tmux ------------------------------------
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET name=? WHERE name='a-idle'", (HOSTILE,))
    if not shutil.which("tmux"):
        skip("strobe top in tmux", "no tmux")
        return
    sock = os.path.join(tmp, "tmux.sock")
    frames = os.path.join(tmp, "frames.log")
    after = os.path.join(tmp, "after")
    shell = (f"STROBE_TOP_FRAME_LOG={frames} {os.path.abspath(STROBE)} top --store={db}; "
             f"echo exit=$? > {after}; stty -a >> {after}; echo restored; sleep 60")
    tmux = ["tmux", "-S", sock, "-f", "/dev/null"]
    subprocess.run(tmux + ["new-session", "-d", "-x", "200", "-y", "50", "-s", "top", shell],
                   check=True, env=dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8"))

    def screen():
        return subprocess.run(tmux + ["capture-pane", "-p", "-t", "top"], capture_output=True,
                              text=True).stdout

    def keys(*k):
        subprocess.run(tmux + ["send-keys", "-t", "top"] + list(k), check=True)

    def rows():
        """The run names in the table's order."""
        lines = screen().splitlines()
        head = next((i for i, l in enumerate(lines) if l.startswith("RUN")), None)
        return [] if head is None else [l.split("  ")[0] for l in lines[head + 1:] if l.strip()]

    check("tmux: the table lists both runs",
          wait_for(lambda: any(r.startswith("b-burn") for r in rows()) and len(rows()) == 2, 15),
          screen())
    check("tmux: the hostile name is shown escaped, in its row", wait_for(
        lambda: any(r.startswith(HOSTILE_SHOWN) for r in rows()), 10), screen())
    check("tmux: the screen is the table's 1 + 1 + 2 lines (the name broke no line)",
          len([l for l in screen().splitlines() if l.strip()]) == 4, screen())

    # redraws: counted by strobe top's own log, over 3 s without keys
    time.sleep(3.5)
    with open(frames) as f:
        stamps = [int(line.split()[2]) for line in f]
    most = max(sum(1 for u in stamps if t <= u <= t + 3_000_000_000) for t in stamps)
    check("redraws without keys: at most 4 in any 3 s", most <= 4, f"{most} of {stamps}")
    check("it redraws by itself (more than one frame in 3.5 s)", len(stamps) > 1, str(stamps))

    keys("c")
    check("c: sorted by CPU, b-burn first", wait_for(
        lambda: "CPU*" in screen() and rows()[:1] and rows()[0].startswith("b-burn"), 10), screen())
    keys("n")
    check("n: sorted by name, a-idle first", wait_for(
        lambda: "RUN*" in screen() and rows()[:1] and rows()[0].startswith("a-idle"), 10), screen())
    keys("Right")
    check("Right: the next sort column (CPU)", wait_for(lambda: "CPU*" in screen(), 10), screen())
    keys("m")
    check("m: sorted by RSS, b-burn (200 MiB) first", wait_for(
        lambda: "RSS*" in screen() and rows()[:1] and rows()[0].startswith("b-burn"), 10), screen())
    keys("Up", "Up", "Enter")
    check("Enter: b-burn's detail with the job's pid", wait_for(
        lambda: re.search(rf"^{pid}\s+python", screen(), re.M) and "run b-burn" in screen(), 10),
        screen())
    if have_gpu:
        check("the detail lists each GPU: util, power, temperature", wait_for(
            lambda: re.search(r"^0\s+80%.*250 W\s+61 C", screen(), re.M)
            and re.search(r"^1\s+40%.*100 W\s+45 C", screen(), re.M), 10), screen())
    check("the detail has a rank row with b-burn's step time", re.search(r"^RANK\s+STEP P50", screen(), re.M),
          screen())
    keys("Escape")
    check("Esc: back to the table", wait_for(lambda: len(rows()) == 2, 10), screen())
    keys("Enter")
    wait_for(lambda: "run b-burn" in screen(), 10)
    keys("BSpace")
    check("Backspace: back to the table", wait_for(lambda: len(rows()) == 2, 10), screen())
    keys("q")
    check("q: strobe top ends, exit 0", wait_for(lambda: os.path.exists(after)
                                                 and "exit=0" in open(after).read(), 10),
          screen())
    stty = open(after).read()
    check("the terminal is given back: icanon and echo on",
          re.search(r"(?<!-)icanon", stty) and re.search(r"(?<!-)\becho\b", stty), stty)
    check("the normal screen is back (the table is gone)",
          wait_for(lambda: "restored" in screen() and "STEP P50" not in screen(), 10), screen())

    # SIGTERM restores too
    os.unlink(after)
    subprocess.run(tmux + ["kill-session", "-t", "top"])
    subprocess.run(tmux + ["new-session", "-d", "-x", "120", "-y", "30", "-s", "top", shell],
                   check=True)
    wait_for(lambda: "RUN" in screen(), 15)
    tops = [q for q in psutil.process_iter(["cmdline"])
            if q.info["cmdline"] and q.info["cmdline"][1:2] == ["top"]
            and f"--store={db}" in q.info["cmdline"]]
    for q in tops:
        q.terminate()
    check("SIGTERM: strobe top dies of it (143) and gives the terminal back", len(tops) == 1 and wait_for(
        lambda: os.path.exists(after) and "-icanon" not in open(after).read()
        and "exit=143" in open(after).read(), 10), screen())
    subprocess.run(tmux + ["kill-server"])


try:
    body()
finally:
    finish()
    for j in jobs:
        err = j.stderr.read()
        check(f"job {j.args[5]} recorded, exit 0", j.returncode == 0, err)
    shutil.rmtree(tmp, ignore_errors=True)
done()
