#!/usr/bin/python3
"""GPU metrics through the production NVML collector, against the test NVML
(tests/nvml/fake_nvml.c) loaded through STROBE_NVML_LIB: values match the
scenario at each sample, a GPU lost mid-run is reported once and the rest of
the run is kept, NOT_SUPPORTED functions are tried once, per-process memory
goes to the job's own pids only, an old driver's missing functions are
skipped, a missing library is a note, and a 500 ms driver call does not
delay host sampling. MIG: a GPU in MIG mode lists its MIG devices with their
facts, their memory is sampled through their own handles, CUDA_VISIBLE_DEVICES
names them by MIG- UUID prefix, and a lost MIG GPU is asked nothing more."""
import ctypes.util
import json
import os
import re
import subprocess

from strobetest import *

BUILD = os.path.dirname(os.path.abspath(STROBE))
FAKE = os.path.join(BUILD, "tests", "libnvidia-ml-fake.so")
FAKE_OLD = os.path.join(BUILD, "tests", "libnvidia-ml-fake-old.so")
tmp = os.path.join(TMP, f"strobe-gpu-{os.getpid()}")
os.makedirs(tmp, exist_ok=True)
GiB = 1 << 30

SCENARIO = f"""
driver 550.54.15
sample_period 0.02
device 0 name "NVIDIA H100 80GB HBM3" uuid GPU-aaaaaaaa-0000-0000-0000-000000000000 memory {80 * GiB}
device 1 name "NVIDIA H100 80GB HBM3" uuid GPU-bbbbbbbb-0000-0000-0000-000000000001 memory {80 * GiB}
at 0 0 util.gpu 10
at 0 0 util.memory 5
at 0 0 mem.used {GiB}
at 0 0 power 100000
at 0 0 temp 40
at 0 0 clock.sm 1410
at 0 0 clock.mem 2619
at 0 0 throttle 0x4
at 0 0 pcie.tx 1000
at 0 0 pcie.rx 2000
at 1.5 0 util.gpu 90
at 1.5 0 util.memory 60
at 1.5 0 mem.used {5 * GiB}
at 1.5 0 power 250000
at 1.5 0 temp 70
at 0 1 util.gpu 50
at 0 1 mem.used {2 * GiB}
lost 1.0 1
unsupported 0 nvmlDeviceGetTotalEnergyConsumption
unsupported 1 nvmlDeviceGetPowerUsage
processes_file 0 {tmp}/procs0
nvlinks 0 4
at 0 0 nvlink.tx 1000
at 0 0 nvlink.rx 3000
at 1.5 0 nvlink.tx 5000
"""

JOB = f"""
import os, time
time.sleep(0.2)
with open("{tmp}/procs0.tmp", "w") as f:
    f.write(f"{{os.getpid()}} {2 * GiB} 55 20\\n1 999 7 7\\n")  # ours, and a foreign pid (1)
os.rename("{tmp}/procs0.tmp", "{tmp}/procs0")
time.sleep(2.8)
print("pid", os.getpid())
"""


def env_for(lib, scenario, calls=None):
    path = os.path.join(tmp, "scenario")
    with open(path, "w") as f:
        f.write(scenario)
    e = dict(os.environ, STROBE_NVML_LIB=lib, STROBE_FAKE_NVML=path)
    if calls:
        e["STROBE_FAKE_NVML_CALLS"] = calls
    return e


def series(db, metric):
    return points(db, metric)


def values_between(pts, t0, a, b):
    """Values of points (ts in s) between a and b seconds after t0 (ns)."""
    t0 /= 1e9
    return [v for ts, v in pts if t0 + a <= ts <= t0 + b]


db = store_path("gpu.db")
for suffix in ("", "-wal", "-shm"):
    try:
        os.unlink(db + suffix)
    except FileNotFoundError:
        pass
calls = os.path.join(tmp, "calls")
p = strobe("run", "--name", "gpu", "--", PYTHON, "-c", JOB, store=db,
           env=env_for(FAKE, SCENARIO, calls))
check("the job runs with the test NVML loaded", p.returncode == 0 and "pid" in p.stdout,
      (p.returncode, p.stderr[-500:]))
job_pid = int(p.stdout.split()[-1]) if "pid" in p.stdout else -1
r = show(db, "gpu")
gpus = r.get("gpus", []) if r else []
check("both GPUs are listed with their facts",
      len(gpus) == 2 and gpus[0]["name"] == "NVIDIA H100 80GB HBM3" and
      gpus[0]["uuid"].startswith("GPU-aaaaaaaa") and gpus[0]["memory_total_bytes"] == 80 * GiB
      and gpus[0]["driver"] == "550.54.15", gpus)
start = r["start_ns"] if r else 0
util = points(db, "gpu.util{gpu=0}").get("gpu.util{gpu=0}", [])
# the fake's clock starts at nvmlInit, a little before the run's start: margins of 0.25 s
early, late = values_between(util, start, 0.25, 1.25), values_between(util, start, 1.75, 2.8)
check("gpu.util follows the scenario: 10 % before 1.5 s", early and set(early) == {10}, early[:10])
check("gpu.util follows the scenario: 90 % after", late and set(late) == {90}, late[:10])
check("gpu.util comes from the driver's buffered samples (every 20 ms, not every 100 ms)",
      len(util) >= 100, len(util))
for metric, a, b in (("gpu.mem_used_bytes", GiB, 5 * GiB), ("gpu.power_w", 100, 250),
                     ("gpu.temp_c", 40, 70), ("gpu.mem_util", 5, 60)):
    pts = points(db, metric + "{gpu=0}").get(metric + "{gpu=0}", [])
    e, l = values_between(pts, start, 0.25, 1.25), values_between(pts, start, 1.75, 2.8)
    check(f"{metric} is {a} then {b}", e and l and set(e) == {a} and set(l) == {b},
          (e[:3], l[:3]))
for metric, want in (("gpu.sm_clock_mhz", 1410), ("gpu.mem_clock_mhz", 2619),
                     ("gpu.throttle_reasons", 4), ("gpu.pcie_tx_bytes_per_s", 1000 * 1024),
                     ("gpu.pcie_rx_bytes_per_s", 2000 * 1024),
                     ("gpu.mem_total_bytes", 80 * GiB)):
    pts = points(db, metric + "{gpu=0}").get(metric + "{gpu=0}", [])
    check(f"{metric} reads {want}", pts and {v for _, v in pts} == {want},
          sorted({v for _, v in pts})[:5])

# NVLink: a rate from the per-link counters; none where the GPU has no links
for metric, a, b in (("gpu.nvlink_tx_bytes_per_s", 1000 * 1024, 5000 * 1024),
                     ("gpu.nvlink_rx_bytes_per_s", 3000 * 1024, 3000 * 1024)):
    pts = points(db, metric + "{gpu=0}").get(metric + "{gpu=0}", [])
    e, l = values_between(pts, start, 0.35, 1.25), values_between(pts, start, 1.85, 2.8)
    ok_ = e and l and abs(median(e) / a - 1) < 0.1 and abs(median(l) / b - 1) < 0.1
    check(f"{metric} follows the scenario within 10 % ({a} then {b})", ok_,
          (median(e) if e else None, median(l) if l else None))
check("no NVLink series for a GPU without links",
      not any(k.startswith("gpu.nvlink") and "gpu=1" in k for k in r["metrics"]),
      [k for k in r["metrics"] if k.startswith("gpu.nvlink")])

# a lost GPU: one warning, its series stop, the other GPU and the run go on
check("the lost GPU is reported once", p.stderr.count("warning: GPU 1 ") == 1, p.stderr[-600:])
lost = points(db, "gpu.mem_used_bytes{gpu=1}").get("gpu.mem_used_bytes{gpu=1}", [])
check("the lost GPU's series stop when it was lost",
      lost and max(ts for ts, _ in lost) <= start / 1e9 + 1.2, lost[-3:] if lost else lost)
check("the other GPU is sampled to the end",
      util and max(ts for ts, _ in util) >= start / 1e9 + 2.7, util[-1:] if util else util)
check("the run finished", r["status"] == "finished", r["status"])

# NOT_SUPPORTED: tried once, then never again
got = {}
if os.path.exists(calls):
    for line in open(calls):
        fn, dev, n = line.split()
        got[(fn, int(dev))] = int(n)
check("a NOT_SUPPORTED function is called once (energy on GPU 0)",
      got.get(("nvmlDeviceGetTotalEnergyConsumption", 0)) == 1, got)
check("a NOT_SUPPORTED function is called once (power on GPU 1)",
      got.get(("nvmlDeviceGetPowerUsage", 1)) == 1, got)
check("NVLink fields are asked once of a GPU whose links all say NOT_SUPPORTED",
      got.get(("nvmlDeviceGetFieldValues", 1)) == 1, got)
check("no energy series where energy is not supported",
      "gpu.energy_j{gpu=0}" not in r["metrics"], [k for k in r["metrics"] if "energy" in k])

# per-process memory: the job's pid, not the foreign one
mine = f"gpu.proc_mem_bytes{{gpu=0,pid={job_pid}}}"
check("per-process GPU memory is the job's", mine in r["metrics"] and
      r["metrics"][mine]["max"] == 2 * GiB, [k for k in r["metrics"] if "proc_mem" in k])
check("a process outside the job's tree is left out",
      "gpu.proc_mem_bytes{gpu=0,pid=1}" not in r["metrics"],
      [k for k in r["metrics"] if "proc_" in k and "gpu" in k])
check("per-process SM utilization is recorded for the job's pid",
      f"gpu.proc_sm_util{{gpu=0,pid={job_pid}}}" in r["metrics"],
      [k for k in r["metrics"] if "proc_sm" in k])
txt = strobe("show", "gpu", store=db)
check("show lists the GPUs and their metrics", "gpus " in txt.stdout and "GPU METRIC" in txt.stdout
      and "gpu.util{gpu=0}" in txt.stdout, txt.stdout[-800:])

# CUDA_VISIBLE_DEVICES: which CUDA number the job sees each GPU as
for cvd, want in (("GPU-bbbbbbbb", [None, 0]), ("1,0", [1, 0]), (None, [0, 1]),
                  ("0,banana,1", [0, None])):
    e = env_for(FAKE, SCENARIO)
    e.pop("CUDA_VISIBLE_DEVICES", None)
    if cvd is not None:
        e["CUDA_VISIBLE_DEVICES"] = cvd
    p = strobe("run", "--quiet", "--name", "cvd", "--", "sleep", "0.4", store=db, env=e)
    r = show(db, "cvd")
    got = [g.get("cuda_index") for g in (r or {}).get("gpus", [])]
    check(f"CUDA_VISIBLE_DEVICES={cvd}: the job's CUDA numbers are {want}", got == want, got)

# sixteen GPUs listed by whole UUID, in reverse: 655 bytes of
# CUDA_VISIBLE_DEVICES, every entry counts; and a set but empty value (no
# GPU visible) is recorded as "", not as unset
SIXTEEN = "".join(f"device {i} uuid GPU-{i:08d}-1111-2222-3333-444455556666\n" for i in range(16))
e = env_for(FAKE, SIXTEEN)
e["CUDA_VISIBLE_DEVICES"] = ",".join(f"GPU-{i:08d}-1111-2222-3333-444455556666"
                                     for i in reversed(range(16)))
p = strobe("run", "--quiet", "--name", "cvd16", "--", "true", store=db, env=e)
gpus = sorted((show(db, "cvd16") or {}).get("gpus", []), key=lambda g: g["index"])
check("CUDA_VISIBLE_DEVICES of 16 UUIDs (655 bytes): GPU i is CUDA device 15 - i",
      [g.get("cuda_index") for g in gpus] == list(reversed(range(16))) and
      gpus[0].get("cuda_visible_devices") == e["CUDA_VISIBLE_DEVICES"],
      [(g.get("cuda_index"), len(g.get("cuda_visible_devices") or "")) for g in gpus])
# listed in the order of their numbers, not as text (0, 1, 10, 11, ..., 2)
raw = [g["index"] for g in (show(db, "cvd16") or {}).get("gpus", [])]
text = strobe("show", "cvd16", store=db).stdout
listed = [int(m) for m in re.findall(r"^(?:gpus {5}| {9}) (\d+): ", text, re.M)]
check("16 GPUs: show --json and show list them 0, 1, 2, ... 15",
      raw == list(range(16)) and listed == list(range(16)), (raw, listed))
e["CUDA_VISIBLE_DEVICES"] = ""
p = strobe("run", "--quiet", "--name", "cvd0", "--", "true", store=db, env=e)
gpus = (show(db, "cvd0") or {}).get("gpus", [])
check("CUDA_VISIBLE_DEVICES set but empty: no GPU visible, and recorded as ''",
      gpus and all(g.get("cuda_index") is None and g.get("cuda_visible_devices") == ""
                   for g in gpus), gpus[:1])

# an old driver: no buffered samples, no energy, no _v3 process query
p = strobe("run", "--quiet", "--name", "old", "--", "sleep", "1", store=db,
           env=env_for(FAKE_OLD, SCENARIO))
r = show(db, "old")
check("an old driver: the run works", p.returncode == 0 and r and r["status"] == "finished",
      p.stderr[-300:])
if r:
    u = r["metrics"].get("gpu.util{gpu=0}", {})
    check("an old driver: utilization from the plain rates, once a sample",
          5 <= u.get("count", 0) <= 15, u)

# no library: one note, no GPU metrics, the run goes on
p = strobe("run", "--name", "nolib", "--", "true", store=db,
           env=dict(os.environ, STROBE_NVML_LIB=os.path.join(tmp, "no-such-lib.so")))
check("a missing library is one note, not an error",
      p.returncode == 0 and p.stderr.count("no GPU metrics") == 1 and "error" not in p.stderr,
      p.stderr)

# no library and nothing NVIDIA on the machine: nothing said at all (a CPU
# machine hears nothing about GPUs on every run); where the driver's device
# node or /proc directory is there, the one note
expected = os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia")
env_plain = {k: v for k, v in os.environ.items() if k != "STROBE_NVML_LIB"}
if ctypes.util.find_library("nvidia-ml") is None:  # else the real driver answers
    p = strobe("run", "--no-report", "--name", "nolib2", "--", "true", store=db, env=env_plain)
    check("no library: the note only where an NVIDIA device is present" +
          (" (one is here)" if expected else " (none here)"),
          p.returncode == 0 and ("no GPU metrics" in p.stderr) == expected, p.stderr)

# a driver call that takes 500 ms does not delay the host sampler
slow = SCENARIO + "slow 0 nvmlDeviceGetTemperature 0.5\n"
p = strobe("run", "--no-report", "--name", "slow", "--interval", "100ms", "--", "sleep", "3",
           store=db, env=env_for(FAKE, slow))
m = re.search(r"(\d+) GPU sampling deadlines were missed \(slow driver calls\)", p.stderr)
# rounds of >= 0.5 s on a 100 ms grid: 4 deadlines or more lost each
check("a slow driver: the GPU deadlines it ate are said at the end",
      m is not None and int(m.group(1)) >= 8, p.stderr)
r = show(db, "slow")
if r:
    check("a slow driver: the host sampler misses no deadline", r["missed"] == 0, r["missed"])
    check("a slow driver: host frames keep their 100 ms cadence", 29 <= r["samples"] <= 33,
          r["samples"])
    t = r["metrics"].get("gpu.temp_c{gpu=0}", {})
    check("a slow driver: the slow reading still arrives, at its own pace",
          2 <= t.get("count", 0) <= 7, t)
# a link that flaps: link 0 (all the traffic, 1000 KiB/s each way) answers
# UNKNOWN for 0.3 s. The old collector summed what answered, so the sum fell
# by link 0's whole counter and rose back: a spike of about 10x at the
# return. Now the readings without it give no point and the next spans the gap.
FLAP = """
sample_period 0.02
device 0
nvlinks 0 4
at 0 0 nvlink.tx 1000
at 0 0 nvlink.rx 1000
nvlink_down 0 0 1.0 1.3
"""
p = strobe("run", "--quiet", "--name", "flap", "--", "sleep", "2.5", store=db,
           env=env_for(FAKE, FLAP))
for metric in ("gpu.nvlink_tx_bytes_per_s", "gpu.nvlink_rx_bytes_per_s"):
    pts = points(db, metric + "{gpu=0}", "flap").get(metric + "{gpu=0}", [])
    vals = [v for _, v in pts]
    check(f"a link that flaps: {metric} stays at 1000 KiB/s (within 10 %), no spike, no dip",
          p.returncode == 0 and len(vals) >= 15 and
          all(abs(v / (1000 * 1024) - 1) < 0.1 for v in vals),
          (len(vals), sorted(vals)[:2], sorted(vals)[-2:]))
    gaps = [b - a for (a, _), (b, _) in zip(pts, pts[1:])]
    check(f"a link that flaps: {metric} has one gap of about 0.3 s where the link was down",
          gaps and 0.25 <= max(gaps) <= 0.5, sorted(gaps)[-3:])

# nvmlDeviceGetSamples timing out once (its first two calls: GPU and memory
# utilization of the first round) loses nothing: the next read takes what the
# driver's ring kept, every 20 ms. An error that stays turns to the plain
# rates, one value a round. (The old collector turned to them for good at the
# first error of any kind.)
for name, extra, want, why in (
        ("flaky", "error 0 nvmlDeviceGetSamples TIMEOUT 2\n", lambda n: n >= 100,
         "a passing error: still the ring's samples, every 20 ms"),
        ("broken", "error 0 nvmlDeviceGetSamples UNKNOWN\n", lambda n: 10 <= n <= 40,
         "an error that stays: the plain rates, one a round (100 ms)")):
    p = strobe("run", "--quiet", "--name", name, "--", "sleep", "3", store=db,
               env=env_for(FAKE, SCENARIO + extra))
    n = len(points(db, "gpu.util{gpu=0}", name).get("gpu.util{gpu=0}", []))
    check(f"nvmlDeviceGetSamples, {why}", p.returncode == 0 and want(n), (n, p.stderr[-300:]))
    print("#", name, n)

# a driver call that never returns (GPU 0 hangs 1 s in) must not hold the
# run's end: strobe gives up on the GPU thread 5 s after the job ends, keeps
# what it read before, and ends with the job's status. The old recorder
# waited for the thread for ever: the 60 s limit is a hang check, not timing.
hang = SCENARIO + "hang 1.0 0\n"
try:
    p = strobe("run", "--quiet", "--name", "hang", "--interval", "100ms", "--", "sh", "-c",
               "sleep 2; exit 3", store=db, env=env_for(FAKE, hang), timeout=60)
    hung = False
except subprocess.TimeoutExpired:
    hung = True
check("a hung driver call: strobe still ends", not hung)
if not hung:
    check("a hung driver call: strobe exits with the job's code", p.returncode == 3,
          (p.returncode, p.stderr))
    check("a hung driver call: one warning says strobe ended without the GPU thread",
          p.stderr.count("stuck in an NVML call") == 1, p.stderr)
    r = show(db, "hang")
    if r:
        check("a hung driver call: the run is stored as failed with its code",
              r["status"] == "failed" and r["exit_code"] == 3, (r["status"], r["exit_code"]))
        check("a hung driver call: host frames go on to the job's end", r["samples"] >= 18,
              r["samples"])
        u = r["metrics"].get("gpu.util{gpu=0}", {})
        check("a hung driver call: GPU points before the hang are kept", u.get("count", 0) >= 5,
              u)
# MIG: GPU 0 in MIG mode with MIG devices 0 and 2 (index 1 a gap), GPU 1 out of
# MIG mode, GPU 2 on a driver that will not say
MIG0 = "MIG-11111111-aaaa-5555-8888-000000000000"
MIG2 = "MIG-22222222-bbbb-5555-8888-000000000002"
MIG_SCENARIO = f"""
sample_period 0.02
device 0 name "NVIDIA H100 80GB HBM3" uuid GPU-cccccccc-0000-0000-0000-000000000000 memory {80 * GiB}
device 1 name "NVIDIA H100 80GB HBM3" uuid GPU-dddddddd-0000-0000-0000-000000000001 memory {80 * GiB}
device 2 uuid GPU-eeeeeeee-0000-0000-0000-000000000002
mig_mode 0 1
mig_mode 1 0
unsupported 2 nvmlDeviceGetMigMode
mig 0 0 uuid {MIG0} name "NVIDIA H100 80GB HBM3 MIG 3g.40gb" memory 42144366592 gi 1 ci 0 used {3 * GiB}
mig 0 2 uuid {MIG2} name "NVIDIA H100 80GB HBM3 MIG 1g.10gb" memory 10468982784 gi 9 ci 1 used {GiB}
at 0 0 mem.used {6 * GiB}
at 0 0 power 120000
"""
WANT_MIG = [
    {"index": 0, "uuid": MIG0, "name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
     "memory_total_bytes": 42144366592, "gpu_instance_id": 1, "compute_instance_id": 0,
     "cuda_index": None},
    {"index": 2, "uuid": MIG2, "name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
     "memory_total_bytes": 10468982784, "gpu_instance_id": 9, "compute_instance_id": 1,
     "cuda_index": None},
]


def read_calls(path):
    """{(function, device): calls}; a MIG device's device is "G:I"."""
    got = {}
    if os.path.exists(path):
        for line in open(path):
            fn, dev, n = line.split()
            got[(fn, dev)] = int(n)
    return got


def mig_run(name, scenario, seconds, cvd=None, calls=None):
    e = env_for(FAKE, scenario, calls)
    e.pop("CUDA_VISIBLE_DEVICES", None)
    if cvd is not None:
        e["CUDA_VISIBLE_DEVICES"] = cvd
    p = strobe("run", "--quiet", "--name", name, "--", "sleep", str(seconds), store=db, env=e)
    return p, show(db, name) if p.returncode == 0 else None


mig_calls = os.path.join(tmp, "mig-calls")
p, r = mig_run("mig", MIG_SCENARIO, 1.5, calls=mig_calls)
check("MIG: the run works", r is not None and r["status"] == "finished", p.stderr[-400:])
gpus = (r or {}).get("gpus", [])
check("MIG: three GPUs listed", len(gpus) == 3, gpus)
if len(gpus) == 3:
    check("MIG: the GPU in MIG mode says so", gpus[0].get("mig_mode") == 1, gpus[0])
    check("MIG: its MIG devices are listed with their exact facts",
          gpus[0].get("mig") == WANT_MIG, gpus[0].get("mig"))
    check("MIG: the GPU's own facts stay the GPU's",
          gpus[0]["uuid"] == "GPU-cccccccc-0000-0000-0000-000000000000" and
          gpus[0]["memory_total_bytes"] == 80 * GiB and gpus[0]["cuda_index"] == 0, gpus[0])
    check("MIG: a GPU out of MIG mode has mig_mode 0 and no MIG devices",
          gpus[1].get("mig_mode") == 0 and gpus[1].get("mig") == [], gpus[1])
    check("MIG: a driver that will not say gives mig_mode null",
          "mig_mode" in gpus[2] and gpus[2]["mig_mode"] is None and gpus[2].get("mig") == [],
          gpus[2])
for mig, want in ((0, 3 * GiB), (2, GiB)):
    key = f"gpu.mig_mem_used_bytes{{gpu=0,mig={mig}}}"
    pts = points(db, "gpu.mig_mem_used_bytes", "mig").get(key, [])
    check(f"MIG: {key} reads the scripted {want}",
          len(pts) >= 10 and {v for _, v in pts} == {want}, (len(pts), sorted({v for _, v in pts})))
mig_series = [k for k in (r or {}).get("metrics", {}) if k.startswith("gpu.mig_")]
check("MIG: MIG series only for the MIG devices",
      sorted(mig_series) == ["gpu.mig_mem_used_bytes{gpu=0,mig=0}",
                             "gpu.mig_mem_used_bytes{gpu=0,mig=2}"], mig_series)
check("MIG: no utilization for the GPU in MIG mode, the other metrics go on",
      r is not None and "gpu.util{gpu=0}" not in r["metrics"] and
      "gpu.util{gpu=1}" in r["metrics"] and
      r["metrics"].get("gpu.mem_used_bytes{gpu=0}", {}).get("max") == 6 * GiB and
      r["metrics"].get("gpu.power_w{gpu=0}", {}).get("max") == 120,
      sorted(k for k in (r or {}).get("metrics", {}) if "gpu=0" in k))
got = read_calls(mig_calls)
check("MIG: utilization under MIG is asked once (each way) and not again",
      got.get(("nvmlDeviceGetUtilizationRates", "0")) == 1 and
      got.get(("nvmlDeviceGetSamples", "0")) == 2, got)
check("MIG: MIG devices are found once, by every index up to the maximum",
      got.get(("nvmlDeviceGetMigDeviceHandleByIndex", "0")) == 7 and
      ("nvmlDeviceGetMigDeviceHandleByIndex", "1") not in got, got)
check("MIG: each MIG device's memory is read through its own handle, every sample",
      got.get(("nvmlDeviceGetMemoryInfo", "0:0"), 0) >= 10 and
      got.get(("nvmlDeviceGetMemoryInfo", "0:2"), 0) >= 10, got)
txt = strobe("show", "mig", store=db)
check("MIG: show lists the MIG devices under their GPU",
      f"mig 0: {MIG0}, NVIDIA H100 80GB HBM3 MIG 3g.40gb," in txt.stdout and
      f"mig 2: {MIG2}, NVIDIA H100 80GB HBM3 MIG 1g.10gb," in txt.stdout and
      txt.stdout.index("GPU-cccccccc") < txt.stdout.index(MIG0) < txt.stdout.index("GPU-dddddddd"),
      txt.stdout[:900])

# CUDA_VISIBLE_DEVICES by MIG- UUID prefix: that MIG device is the job's, the GPUs not
for cvd, want_mig, want_gpus in (("MIG-22222222", [None, 0], [None, None, None]),
                                 (f"{MIG2[:17]},MIG-11111111", [1, 0], [None, None, None]),
                                 ("MIG-11111111,1", [0, None], [None, 1, None]),
                                 ("MIG-,0", [None, None], [None, None, None])):
    p, r = mig_run("mig-cvd", MIG_SCENARIO, 0.4, cvd=cvd)
    gpus = (r or {}).get("gpus", [])
    got_mig = [m.get("cuda_index") for m in gpus[0].get("mig", [])] if gpus else None
    got_gpus = [g.get("cuda_index") for g in gpus]
    check(f"MIG: CUDA_VISIBLE_DEVICES={cvd}: MIG devices {want_mig}, GPUs {want_gpus}",
          got_mig == want_mig and got_gpus == want_gpus, (got_mig, got_gpus))

# The rules on a GPU in MIG mode: NVML gives an unprivileged caller no
# utilization and no whole-GPU memory, only the MIG devices' memory. The GPU
# is there, so the rules that read utilization are n/a for that reason (not
# "no GPU"), and BatchSize does not judge the job by its CPU alone as it
# would a job without a GPU.
GPU_RULES = ("CPUBottleneck", "IOBottleneck", "LowGPUUtilization", "GPUMemoryIncrease", "BatchSize",
             "GPUThrottling")
MIG_ONLY = f"""
sample_period 0.02
device 0 name "NVIDIA H100 80GB HBM3" uuid GPU-cccccccc-0000-0000-0000-000000000000 memory {80 * GiB}
mig_mode 0 1
error 0 nvmlDeviceGetMemoryInfo NO_PERMISSION
mig 0 0 uuid {MIG0} name "NVIDIA H100 80GB HBM3 MIG 3g.40gb" memory 42144366592 gi 1 ci 0 used {3 * GiB}
at 0 0 power 120000
"""


def rule_statuses(name):
    p = strobe("rules", "--json", name, store=db)
    rules = json.loads(p.stdout).get("rules", []) if p.returncode == 0 else []
    return p, {x["rule"]: x for x in rules}


p, r = mig_run("mig-rules", MIG_ONLY, 1.5)
m = (r or {}).get("metrics", {})
check("MIG rules: the run records the MIG device's memory and no utilization or whole-GPU memory",
      "gpu.mig_mem_used_bytes{gpu=0,mig=0}" in m and not any(k.startswith(("gpu.util", "gpu.mem_used"))
                                                           for k in m), sorted(m))
p, got = rule_statuses("mig-rules")
for rule in GPU_RULES:
    x = got.get(rule, {})
    check(f"MIG rules: {rule} is n/a because NVML reports no utilization in MIG mode, not 'no GPU'",
          x.get("status") == "n/a" and "MIG mode" in x.get("detail", ""), x or p.stderr[-300:])
# beside a GPU out of MIG mode, the rules judge the GPU that reports its use
p, got = rule_statuses("mig")
x = got.get("LowGPUUtilization", {})
check("MIG rules: beside a GPU out of MIG mode, LowGPUUtilization judges that one",
      x.get("status") not in (None, "n/a"), x or p.stderr[-300:])

# a GPU in MIG mode lost mid-run: one warning, its MIG series stop, no more calls
lost_calls = os.path.join(tmp, "mig-lost-calls")
p, r = mig_run("mig-lost", MIG_SCENARIO + "lost 1.0 0\n", 2.5, calls=lost_calls)
check("MIG: a lost MIG GPU is reported once", p.stderr.count("warning: GPU 0 ") == 1,
      p.stderr[-400:])
if r:
    start = r["start_ns"] / 1e9
    pts = points(db, "gpu.mig_mem_used_bytes", "mig-lost")
    last = max((ts for v in pts.values() for ts, _ in v), default=0)
    check("MIG: the lost GPU's MIG series stop when it was lost",
          pts and last <= start + 1.2, (sorted(pts), last - start))
got = read_calls(lost_calls)
n0, n2 = got.get(("nvmlDeviceGetMemoryInfo", "0:0"), 0), got.get(("nvmlDeviceGetMemoryInfo", "0:2"), 0)
check("MIG: after the loss its MIG devices are asked nothing more (about 1 s of samples, not 2.5)",
      5 <= n0 <= 16 and n2 <= n0, (n0, n2))

# a GPU in MIG mode that refuses its whole memory (unprivileged): its facts
# and MIG list are stored all the same
p, r = mig_run("mig-noperm", MIG_SCENARIO + "error 0 nvmlDeviceGetMemoryInfo NO_PERMISSION\n", 0.5)
gpus = (r or {}).get("gpus", [])
check("MIG without permission for the GPU's memory: the GPU and its MIG list are kept",
      gpus and gpus[0].get("mig") == WANT_MIG, gpus[:1])
check("MIG without permission: no gpu.mem_total_bytes points for that GPU",
      (r or {}).get("metrics", {}).get("gpu.mem_total_bytes{gpu=0}", {}).get("count") == 0,
      (r or {}).get("metrics", {}).get("gpu.mem_total_bytes{gpu=0}"))

# eight GPUs whose drivers buffer many utilization samples between two reads
# (a long --gpu-interval: here 120 samples per type and GPU at each 1 s read):
# every GPU keeps all of its values, not only the first GPUs of a round
MANY = "sample_period 0.005\n" + "".join(
    f"device {i}\nat 0 {i} util.gpu 50\nat 0 {i} util.memory 20\nat 0 {i} temp 40\n"
    for i in range(8))
p = strobe("run", "--quiet", "--name", "many", "--gpu-interval", "1s", "--", "sleep", "2.2",
           store=db, env=env_for(FAKE, MANY))
r = show(db, "many")
m = r["metrics"] if r else {}
temps = [m.get(f"gpu.temp_c{{gpu={i}}}", {}).get("count", 0) for i in range(8)]
utils = [m.get(f"gpu.util{{gpu={i}}}", {}).get("count", 0) for i in range(8)]
check("eight GPUs with full sample buffers: each GPU has a point per round",
      p.returncode == 0 and temps[0] >= 3 and temps == [temps[0]] * 8, temps)
check("eight GPUs with full sample buffers: each GPU keeps its buffered samples (240 in 2 reads)",
      utils[0] >= 240 and all(abs(u - utils[0]) <= 2 for u in utils), utils)

# the energy counter starting again mid-run (a GPU reset): the run's energy
# goes on from where it was, not from an unsigned wrap (1.8e16 J)
RESET = """device 0
at 0 0 energy 5000000
at 0.5 0 energy 5100000
at 1.0 0 energy 2000
at 1.5 0 energy 52000
"""
p = strobe("run", "--quiet", "--name", "ereset", "--gpu-interval", "250ms", "--", "sleep", "2",
           store=db, env=env_for(FAKE, RESET))
e = [v for _, v in points(db, "gpu.energy_j{gpu=0}", "ereset").get("gpu.energy_j{gpu=0}", [])]
check("energy after a counter reset: the rises before (100 J) and after (50 J) add up",
      p.returncode == 0 and e and e[-1] == 150 and max(e) == 150 and e == sorted(e), e)

# a GPU already lost when the run starts (fallen off the bus): said once, as
# for a GPU lost mid-run, instead of leaving it out of the list silently
p = strobe("run", "--name", "lost0", "--", "sleep", "0.3", store=db,
           env=env_for(FAKE, "device 0\ndevice 1\nat 0 0 temp 40\nlost 0 1\n"))
gpus = (show(db, "lost0") or {}).get("gpus", [])
check("a GPU lost before the start: one warning naming it, the other GPU sampled",
      p.returncode == 0 and p.stderr.count("warning: GPU 1 is lost") == 1 and
      [g["index"] for g in gpus] == [0], (p.stderr[-300:], [g["index"] for g in gpus]))

# a slow host interval (--interval 10s) with fast GPU sampling on 16 GPUs:
# the GPU thread's queue (65536 values, about 340 rounds here) is emptied
# often enough, not only at host ticks: every temperature read is stored
SIXTEEN_FAST = "".join(f"device {i}\nat 0 {i} temp 40\n" for i in range(16))
fast_calls = os.path.join(tmp, "fast-calls")
p = strobe("run", "--quiet", "--name", "slowhost", "--interval", "10s", "--gpu-interval", "10ms",
           "--", "sleep", "5", store=db, env=env_for(FAKE, SIXTEEN_FAST, calls=fast_calls))
m = (show(db, "slowhost") or {}).get("metrics", {})
got = read_calls(fast_calls)
reads = [got.get(("nvmlDeviceGetTemperature", str(i)), 0) for i in range(16)]
stored = [m.get(f"gpu.temp_c{{gpu={i}}}", {}).get("count", 0) for i in range(16)]
check("--interval 10s, --gpu-interval 10ms, 16 GPUs: every GPU reading is stored",
      p.returncode == 0 and reads[0] > 0 and stored == reads, (reads[:3], stored[:3]))

done()
