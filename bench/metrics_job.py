#!/usr/bin/env python3
"""The job that bench/metrics_cost.py scrapes: 10 processes on 8 GPUs.

    bench/metrics_job.py --dir DIR [--step-ms 100]

The parent is a launcher, as torchrun is: it starts 8 ranks and one helper,
then waits. Each rank sets RANK, LOCAL_RANK and WORLD_SIZE and announces them
to strobe, as the torch integration does. It lists its pid on its GPU: the
file DIR/gpu<rank>.procs is the test NVML's processes_file of device
<rank>. Then it runs steps with the four phases as spans, logs a loss, and
burns CPU in its forward and backward spans. Even ranks burn 6 ms a step,
odd ranks 1 ms: some processes are busy, none saturates a core, so the
2-core machine keeps room for the recorder and the scraper. The helper
sleeps, as a checkpoint or logging process does.

The job ends when DIR/stop exists (the benchmark creates it): ranks and the
helper exit, then the parent. Without strobe's Python package on the path
the job still runs; it then has no steps.
"""
import argparse
import os
import subprocess
import sys
import time

try:
    import strobe
except ImportError:  # the job must run anyway; it then records no steps
    strobe = None

WORLD = 8


def burn(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def span(name):
    return strobe.span(name) if strobe else _NoSpan()


class _NoSpan:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def list_on_gpu(d, rank):
    """The test NVML reads the file at each call: write it whole, then rename."""
    path = os.path.join(d, f"gpu{rank}.procs")
    used = (rank + 1) << 30
    with open(path + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {used} {40 + rank * 5} {10 + rank}\n")
    os.replace(path + ".tmp", path)


def rank_main(d, rank, step_s):
    if strobe:
        for key, value in (("rank", rank), ("local_rank", rank), ("world_size", WORLD)):
            strobe.log("strobe." + key, value)
    list_on_gpu(d, rank)
    busy = 0.006 if rank % 2 == 0 else 0.001
    stop = os.path.join(d, "stop")
    step, loss = 0, 2.3
    while not os.path.exists(stop):
        t0 = time.perf_counter()
        step += 1
        if strobe:
            strobe.step(step)
        with span("data"):
            time.sleep(step_s * 0.1)
        with span("forward"):
            burn(busy / 3)
        with span("backward"):
            burn(busy * 2 / 3)
        with span("optimizer"):
            loss *= 0.999
        if strobe:
            strobe.log("loss", loss)
        time.sleep(max(0.0, step_s - (time.perf_counter() - t0)))


def helper_main(d):
    stop = os.path.join(d, "stop")
    while not os.path.exists(stop):
        time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--step-ms", type=float, default=100)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--helper", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.rank is not None:
        return rank_main(a.dir, a.rank, a.step_ms / 1e3)
    if a.helper:
        return helper_main(a.dir)
    me = [sys.executable, os.path.abspath(__file__), "--dir", a.dir, "--step-ms", str(a.step_ms)]
    kids = []
    for r in range(WORLD):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(WORLD))
        kids.append(subprocess.Popen(me + ["--rank", str(r)], env=env))
    kids.append(subprocess.Popen(me + ["--helper"]))
    rc = 0
    for k in kids:
        rc = rc or k.wait()
    return rc


if __name__ == "__main__":
    sys.exit(main())
