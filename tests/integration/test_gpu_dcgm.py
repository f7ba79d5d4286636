#!/usr/bin/python3
"""DCGM's profiling fields through the production collector (src/gpu/dcgm.c)
and a test libdcgm (tests/nvml/fake_dcgm.c) loaded through STROBE_DCGM_LIB,
beside the test NVML: values stored in percent per GPU, watched no faster
than 100 ms even when --gpu-interval asks for 10 ms; no host engine, or the
counters in use, is one note and the run goes on; without GPUs DCGM is not
even tried."""
import os
import subprocess

from strobetest import *

BUILD = os.path.dirname(os.path.abspath(STROBE))
NVML = os.path.join(BUILD, "tests", "libnvidia-ml-fake.so")
DCGM = os.path.join(BUILD, "tests", "libdcgm-fake.so")
tmp = os.path.join(TMP, f"strobe-dcgm-{os.getpid()}")
os.makedirs(tmp, exist_ok=True)
scenario = os.path.join(tmp, "nvml")
with open(scenario, "w") as f:
    f.write('device 0 name "Fake A"\ndevice 1 name "Fake B"\nat 0 0 util.gpu 100\n')
db = store_path("dcgm.db")
for suffix in ("", "-wal", "-shm"):
    try:
        os.unlink(db + suffix)
    except FileNotFoundError:
        pass


def env(mode, log=None, nvml=NVML):
    e = dict(os.environ, STROBE_NVML_LIB=nvml, STROBE_FAKE_NVML=scenario, STROBE_DCGM_LIB=DCGM,
             STROBE_FAKE_DCGM=mode)
    if log:
        e["STROBE_FAKE_DCGM_LOG"] = log
    return e


log = os.path.join(tmp, "log")
p = strobe("run", "--quiet", "--name", "dcgm", "--gpu-interval", "10ms", "--", "sleep", "1.5",
           store=db, env=env("gpus=2,sm_active=0.42,sm_occupancy=0.3,tensor_active=0.125,"
                             "dram_active=0.2", log))
check("the run works with a host engine", p.returncode == 0, p.stderr[-400:])
r = show(db, "dcgm")
m = r["metrics"] if r else {}
for name, want in (("gpu.sm_active", 42), ("gpu.sm_occupancy", 30), ("gpu.tensor_active", 12.5),
                   ("gpu.dram_active", 20)):
    for g in (0, 1):
        k = f"{name}{{gpu={g}}}"
        check(f"{k} is the ratio in percent ({want})",
              k in m and abs(m[k]["min"] - want) < 1e-9 and abs(m[k]["max"] - want) < 1e-9,
              m.get(k))
sm = m.get("gpu.sm_active{gpu=0}", {})
check("one value per read at 100 ms, not 10 ms (about 15 in 1.5 s)", 8 <= sm.get("count", 0) <= 17,
      sm)
lines = open(log).read().split("\n") if os.path.exists(log) else []
watch = [int(l.split()[1]) for l in lines if l.startswith("watch ")]
check("the fields are watched at 100 ms, the counters' floor", watch == [100000], watch)
check("DCGM is shut down at the end", "shutdown" in lines, lines[-3:])

# The GPU and DCGM threads sleep to their next deadline, a minute away at
# --gpu-interval 60s: the end of a run wakes them instead of waiting for it.
# (The 30 s limit only tells a hang from a pass: a run takes about 0.3 s.)
try:
    p = strobe("run", "--quiet", "--name", "slowgpu", "--gpu-interval", "60s", "--", "sleep",
               "0.3", store=db, env=env("gpus=2,sm_active=0.5"), timeout=30)
    ended = p.returncode == 0
except subprocess.TimeoutExpired:
    ended = False
check("a run at --gpu-interval 60s ends with its job, not at the GPU threads' next deadline",
      ended)
r = show(db, "slowgpu")
temp = r["metrics"].get("gpu.temp_c{gpu=0}", {}) if r else {}
check("its one GPU sample, taken at the start, is kept", temp.get("count") == 1, temp)

# a host engine that stops answering (the 6th read never returns) must not
# hold the run's end: strobe gives up on the DCGM thread 5 s after the job,
# with one warning, keeping the values read before (the 60 s limit only
# tells a hang from a pass)
try:
    p = strobe("run", "--quiet", "--name", "dcgmhang", "--gpu-interval", "100ms", "--", "sleep",
               "1.5", store=db, env=env("gpus=1,sm_active=0.5,hang_after=5"), timeout=60)
    hung = False
except subprocess.TimeoutExpired:
    hung = True
check("a hung host engine: strobe still ends, with its job's code",
      not hung and p.returncode == 0, "hung" if hung else p.stderr)
if not hung:
    check("a hung host engine: one warning says strobe ended without the DCGM thread",
          p.stderr.count("DCGM sampler is stuck") == 1, p.stderr)
    r = show(db, "dcgmhang")
    sm = r["metrics"].get("gpu.sm_active{gpu=0}", {}) if r else {}
    check("a hung host engine: the 5 reads before the hang are kept", sm.get("count") == 5, sm)
    # the hang is DCGM's thread's alone: NVML's thread and the host sampler
    # go on to the job's end (1.5 s at 100 ms, about 15 points; the hang
    # began at ~0.5 s). gpu.util comes from the driver's buffer of samples,
    # one every 1/6 s in the test NVML: about 9.
    start = r["start_ns"] / 1e9 if r else 0
    for key, least in (("gpu.util{gpu=0}", 7), ("gpu.temp_c{gpu=0}", 12), ("cpu.util", 12)):
        pts = points(db, key.split("{")[0], "dcgmhang").get(key, [])
        last = pts[-1][0] - start if pts else None
        check(f"a hung host engine: {key} is sampled to the job's end ({least}+ points, the last past 1.3 s)",
              len(pts) >= least and last is not None and last >= 1.3, (len(pts), last))

p = strobe("run", "--name", "nohe", "--", "true", store=db, env=env("unreachable"))
check("no host engine: one note, the run goes on",
      p.returncode == 0 and p.stderr.count("no DCGM host engine") == 1, p.stderr)
p = strobe("run", "--name", "busy", "--", "true", store=db, env=env("busy"))
check("counters in use: one note, the run goes on",
      p.returncode == 0 and p.stderr.count("will not watch the profiling fields") == 1, p.stderr)
e = env("gpus=1")
e["STROBE_DCGM_LIB"] = os.path.join(tmp, "no-libdcgm.so")
p = strobe("run", "--name", "nolib", "--", "true", store=db, env=e)
check("no libdcgm: one note", p.returncode == 0 and p.stderr.count("DCGM is not installed") == 1,
      p.stderr)
p = strobe("run", "--name", "nogpu", "--", "true", store=db,
           env=env("gpus=1", nvml=os.path.join(tmp, "no-nvml.so")))
check("no GPU: DCGM is not tried", p.returncode == 0 and "DCGM" not in p.stderr, p.stderr)
done()
