#!/usr/bin/env python3
"""CPU cost of GPU sampling per device per sample, through the production
NVML collector and the test NVML (tests/nvml/fake_nvml.c): `strobe run
--gpu-interval 10ms -- sleep S` with 1, 4 and 8 scripted devices, against
the same run with no NVML library; the difference in strobe's CPU time,
divided by the GPU samples taken and the devices. The test NVML answers
from memory, so this is strobe's side only: a real driver's calls are
ioctls into the kernel module and cost more (scripts/gpu-check measures a
real GPU beside `nvidia-smi --query-gpu -lms 100`).

    bench/gpu_cost.py --strobe build/strobe [--seconds 5] [--runs 3]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile

GiB = 1 << 30


def scenario(n):
    lines = ["sample_period 0.02"]
    for i in range(n):
        lines.append(f'device {i} name "Fake {i}" memory {80 * GiB}')
        for f, v in (("util.gpu", 50), ("util.memory", 20), ("mem.used", GiB), ("power", 300000),
                     ("temp", 60), ("clock.sm", 1400), ("clock.mem", 2600), ("pcie.tx", 100),
                     ("pcie.rx", 100)):
            lines.append(f"at 0 {i} {f} {v}")
    return "\n".join(lines) + "\n"


def run(strobe, lib, scen, seconds, tmp):
    path = os.path.join(tmp, "scenario")
    with open(path, "w") as f:
        f.write(scen)
    env = dict(os.environ, STROBE_NVML_LIB=lib, STROBE_FAKE_NVML=path)
    db = os.path.join(tmp, "gpu.db")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([strobe, "run", "--quiet", "--store", db, "--gpu-interval", "10ms", "--",
                    "sleep", str(seconds)], env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strobe", required=True)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    build = os.path.dirname(os.path.abspath(a.strobe))
    fake = os.path.join(build, "tests", "libnvidia-ml-fake.so")
    rounds = a.seconds / 0.010
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = [run(a.strobe, os.path.join(tmp, "none.so"), "", a.seconds, tmp)
                for _ in range(a.runs)]
        b = statistics.median(base)
        for n in (1, 4, 8):
            cpu = statistics.median(run(a.strobe, fake, scenario(n), a.seconds, tmp)
                                    for _ in range(a.runs))
            rows.append((n, cpu, (cpu - b) / rounds / n * 1e6))
    print(f"GPU sampling every 10 ms for {a.seconds:.0f} s, median of {a.runs} runs; strobe's CPU "
          f"without NVML: {b * 1e3:.1f} ms.\n")
    print("| devices | strobe CPU (ms) | µs per sample round, all devices |")
    print("|---:|---:|---:|")
    for n, cpu, per in rows:
        print(f"| {n} | {cpu * 1e3:.1f} | {(cpu - b) / rounds * 1e6:.1f} |")
    marginal = (rows[-1][1] - rows[0][1]) / rounds / (rows[-1][0] - rows[0][0]) * 1e6
    print(f"\nA sample round costs {(rows[0][1] - b) / rounds * 1e6:.1f} µs with one device (the "
          f"thread's wake-up, the queue, the merge into the series), and each further device "
          f"{marginal:.2f} µs (its 15 or so NVML calls into the test library).")
    print("\nPeer: `nvidia-smi --query-gpu=... -lms 100` needs a GPU; scripts/gpu-check runs both "
          "side by side there.")
    print(json.dumps({"base_cpu_s": b, "rows": rows}))


if __name__ == "__main__":
    main()
