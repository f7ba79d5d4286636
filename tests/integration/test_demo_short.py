#!/usr/bin/python3
"""A real PyTorch training (examples/train.py, a short one) under strobe:
the data-loader workers are in the tree, Python and torch versions and the
environment are in the catalog, the unmodified script's steps and phases are
recorded (as many steps as it says it made), and the summary is readable."""
import re
import os
import subprocess

from strobetest import *

db = store_path()
env = dict(os.environ, OMP_NUM_THREADS="1", MY_API_TOKEN="secret")
p = subprocess.run([STROBE, "run", "--quiet", f"--store={db}", "--name", "short", "--param", "batch=32",
                    "--", PYTHON, "examples/train.py", "--seconds", "6", "--workers", "2", "--batch-size", "32"],
                   capture_output=True, text=True, timeout=120, env=env)
check("training finished", p.returncode == 0, p.stderr[-500:])
check("training output passes through", "done:" in p.stdout, p.stdout[-300:])
r = show(db, "short")
check("python version recorded", (r["python_version"] or "").startswith("3."), r["python_version"])
check("torch version recorded", (r["torch_version"] or "").startswith(("1.", "2.")), r["torch_version"])
check("chosen environment recorded", r["env"].get("OMP_NUM_THREADS") == "1", r["env"])
check("secrets are not recorded", "MY_API_TOKEN" not in r["env"])
check("params recorded: --param, and the script's own --key value arguments",
      r["params"] == {"batch": "32", "seconds": "6", "workers": "2", "batch-size": "32"},
      r["params"])
procs = [m["meta"] for k, m in r["metrics"].items() if k.startswith("proc.cpu{")]
root = [m for m in procs if m["root"]]
check("one root process", len(root) == 1, procs)
workers = [m for m in procs if root and m["ppid"] == root[0]["pid"]]
check("the two data-loader workers are seen as children of the trainer", len(workers) >= 2, procs)
check("proc.count peaked at 3 or more", r["metrics"]["proc.count"]["max"] >= 3, r["metrics"]["proc.count"])
check("the trainer used CPU", r["metrics"]["proc.cpu"]["mean"] > 30, r["metrics"]["proc.cpu"])
check("cwd and command recorded", r["cwd"] == os.getcwd() and r["command"][1] == "examples/train.py", r["command"])
txt = strobe("show", "short", store=db)
check("text summary names the busiest processes", txt.returncode == 0 and "busiest processes" in txt.stdout
      and "cpu.util" in txt.stdout, txt.stdout[-400:])
check("stored size is reported", 0 < r["bytes_per_sample"] < 8, r["bytes_per_sample"])
said = re.search(r"done: (\d+) steps", p.stdout)
steps = (r["steps"] or {}).get("count")
check("the unmodified script's steps are all recorded", said and steps == int(said.group(1)),
      f"strobe {steps}, the script {said.group(1) if said else None}")
check("phases add up to the step time",
      r["phases"] and abs(sum(v["ns"] for k, v in r["phases"].items() if isinstance(v, dict))
                          - r["steps"]["total_ns"]) < 1e3, r["phases"])
check("forward and backward take most of a CPU training step",
      r["phases"] and r["phases"]["forward"]["share"] + r["phases"]["backward"]["share"] > 0.5,
      r["phases"])
roles = sorted((q["role"], q["worker_id"]) for q in r["processes"])
check("the trainer and its two workers are known by role",
      roles == [("dataloader", 0), ("dataloader", 1), ("main", None)], roles)
check("no event was dropped", r["dropped_events"] == 0, r["dropped_events"])
check("events take at most 8 bytes each", r["events"] and r["event_bytes"] / r["events"] <= 8,
      (r["events"], r["event_bytes"]))
check("text summary shows steps and phases", "steps " in txt.stdout and "phases " in txt.stdout,
      txt.stdout[:800])
done()
