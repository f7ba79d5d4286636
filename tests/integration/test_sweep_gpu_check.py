#!/usr/bin/python3
"""scripts/gpu-check --sweep without a GPU.

1. `scripts/gpu-check --sweep --self-test` runs its campaign (solo, plain
   sharing, MPS, MIG 1g slices) with the strobe under test against fakes of
   nvidia-smi, nvidia-cuda-mps-control and a torch that numbers GPUs as CUDA
   does (fastest first without CUDA_DEVICE_ORDER, renumbered by an MPS
   server): every check must pass on a good machine, and exactly the
   teardown checks must fail where the daemon ignores "quit" and a GPU
   instance will not go. The files it writes are read back here.
2. The command line: usage errors, and a machine without nvidia-smi."""
import json
import os
import re
import subprocess

from strobetest import *

SCRIPT = os.path.join(os.getcwd(), "scripts", "gpu-check")


def gpu_check(*args, env=None, timeout=180):
    return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, GPU_CHECK_STROBE=STROBE, **(env or {})))


# ---- 1. the self-test
out = os.path.join(TMP, "sweep-selftest")
p = gpu_check("--sweep", "--self-test", out)
lines = p.stdout.splitlines()
passed = [l for l in lines if l.startswith("ok - ")]
failed = [l for l in lines if l.startswith("not ok - ")]
check("sweep self-test exits 0", p.returncode == 0, (p.stdout[-1500:], p.stderr[-800:]))
for l in failed:
    check("sweep self-test: " + l[len("not ok - "):], False)
m = re.search(r"^sweep self-test: (\d+) passed, (\d+) failed", p.stdout, re.M)
check("sweep self-test ends with its count, every case passed",
      m and int(m.group(1)) == len(passed) >= 7 and m.group(2) == "0", m and m.group(0))

good = open(os.path.join(out, "good", "sweep-check.md")).read()
bad = open(os.path.join(out, "faulty", "sweep-check.md")).read()
root = os.geteuid() == 0
table = "4 of 4" if root else "3 of 3"  # MIG needs root
check("good machine: no check failed, the status table is in the report",
      "**FAILED**" not in good and f"campaign gpucheck: {table} workloads done" in good,
      good[-1500:])
for run in ("solo", "plain-a", "plain-b", "mps-a", "mps-b") + (("mig-a", "mig-b") if root else ()):
    check(f"good machine: {run} is checked", f"**ok** {run}: CUDA shows it one device" in good)
want = ["MPS: no daemon or server is left"] + (
    ["MIG: no GPU instance is left on GPU 1 (nvidia-smi mig -lgi)"] if root else [])
check("faulty machine: exactly the teardown checks failed",
      bad.count("**FAILED**") == len(want) and all(f"**FAILED** {w}:" in bad for w in want),
      re.findall(r"\*\*FAILED\*\* .*", bad))
runs = json.load(open(os.path.join(out, "good", "sweep-runs.json")))
check("good machine: the MPS runs got GPU 0's UUID, the plain ones its index",
      runs["mps-a"]["env"]["CUDA_VISIBLE_DEVICES"].startswith("GPU-") and
      runs["plain-a"]["env"]["CUDA_VISIBLE_DEVICES"] == "0", runs.get("mps-a"))
campaign = open(os.path.join(out, "good", "sweep-campaign.csv")).read()
check("the campaign is a radT CSV with a Command column",
      campaign.startswith("Experiment,Workload,Name,Devices,Collocation,Command\n")
      and ",MPS," in campaign, campaign[:300])

# ---- 2. the command line
p = gpu_check("--sweep", "--compare", out)
check("--sweep --compare: exit 2 and a usage line", p.returncode == 2 and "usage:" in p.stderr,
      (p.returncode, p.stderr))
p = gpu_check("--sweep", os.path.join(TMP, "no-gpu"),
              env={"PATH": "/usr/bin:/bin", "GPU_CHECK_NVIDIA_SMI": ""})
no_smi = os.path.exists("/usr/bin/nvidia-smi") or os.path.exists("/bin/nvidia-smi")
if no_smi:
    skip("--sweep without nvidia-smi", "this machine has nvidia-smi")
else:
    check("--sweep without nvidia-smi: exit 1, one line saying so",
          p.returncode == 1 and p.stderr.strip().startswith("gpu-check: nvidia-smi not found") and
          len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr))
done()
