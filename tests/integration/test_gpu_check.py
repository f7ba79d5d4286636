#!/usr/bin/python3
"""scripts/gpu-check without a GPU.

1. `scripts/gpu-check --self-test` feeds the comparison two synthetic runs (a
   correct collector and one with planted faults, nvidia-smi's times written
   in UTC+05:30), reads them in the wrong zone, and drives a fake nvidia-smi
   through the real capture code: every case must pass, and the tables it
   writes are read back here independently.
2. The command line: usage errors, --compare on the self-test's directories,
   and the failures a machine without a GPU meets, each one line.
3. A dry run of the real check (skipped when the test NVML is not built):
   `scripts/gpu-check OUT` with the test NVML as libnvidia-ml (STROBE_NVML_LIB),
   a fake nvidia-smi and a fake trainer that follow the same scripted steps,
   and the strobe under test (GPU_CHECK_NO_BUILD): nvidia-smi started and
   stopped, strobe run, export and show, the time alignment, the per-process
   and extra-allocation checks, exit 0 with every verdict agreeing."""
import json
import os
import re
import subprocess

from strobetest import *

SCRIPT = os.path.join(os.getcwd(), "scripts", "gpu-check")


def gpu_check(*args, env=None, timeout=120):
    return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def verdicts(md):
    """{(gpu, nvidia-smi field): verdict} from a comparison.md table."""
    out = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 12 and cells[0].isdigit():
            out[(cells[0], cells[1])] = cells[-1].strip("*")
    return out


# ---- 1. the self-test
st = os.path.join(TMP, "selftest")
p = gpu_check("--self-test", st)
lines = p.stdout.splitlines()
passed = [l for l in lines if l.startswith("ok - ")]
failed = [l for l in lines if l.startswith("not ok - ")]
check("self-test exits 0", p.returncode == 0, (p.stdout[-1500:], p.stderr[-800:]))
for l in failed:
    check("self-test: " + l[len("not ok - "):], False)
check("self-test: all its cases pass (40 or more)", len(passed) >= 40 and not failed,
      f"{len(passed)} passed, {len(failed)} failed")
m = re.search(r"^self-test: (\d+) passed, (\d+) failed", p.stdout, re.M)
check("self-test ends with its count", m and int(m.group(1)) == len(passed) and m.group(2) == "0",
      m and m.group(0))
check("self-test names the wrong-zone offset", "5 h 30 min off strobe's" in p.stdout)

good = open(os.path.join(st, "good", "comparison.md")).read()
bad = open(os.path.join(st, "bad", "comparison.md")).read()
vg, vb = verdicts(good), verdicts(bad)
fields = ["utilization.gpu", "utilization.memory", "memory.used", "memory.total", "power.draw",
          "temperature.gpu", "clocks.sm"]
check("correct collector: the table has all 7 rows for each of 2 GPUs",
      all(("0", f) in vg and ("1", f) in vg for f in fields), sorted(vg))
check("correct collector: every row agrees (gpu 1 has no power: n/a)",
      all(v == "agree" for k, v in vg.items() if k != ("1", "power.draw"))
      and vg.get(("1", "power.draw")) == "n/a", vg)
want = {"utilization.gpu": "agree", "utilization.memory": "differ", "memory.used": "differ",
        "memory.total": "agree", "power.draw": "differ", "temperature.gpu": "differ",
        "clocks.sm": "agree"}
check("planted faults: exactly memory utilization, memory, power and temperature differ",
      all(vb.get(("0", f)) == v for f, v in want.items()), {f: vb.get(("0", f)) for f in fields})
check("planted faults: per-process and allocation checks differ",
      bad.count("- **differ** gpu.proc_mem_bytes") == 1 and "- **differ** extra allocation" in bad)
check("correct collector: per-process and allocation checks agree",
      "- **agree** gpu.proc_mem_bytes" in good and "- **agree** extra allocation" in good)
row = next((l for l in good.splitlines() if "| 0 | utilization.gpu |" in l), "")
n = re.match(r"\|[^|]*\|[^|]*\|[^|]*\|[^|]*\|\s*(\d+)\s*\|", row)
check("the table counts the compared samples (~530 for a 53 s run)",
      n and 500 <= int(n.group(1)) <= 540, row)
for name in ("nvidia-smi.csv", "strobe-gpu.csv", "nvidia-smi-reserved.csv", "comparison.md"):
    check(f"self-test output has {name}", os.path.exists(os.path.join(st, "good", name)))

# ---- 2. the command line
p = gpu_check("--bogus")
check("an unknown option: exit 2 and a usage line", p.returncode == 2 and "usage:" in p.stderr,
      (p.returncode, p.stderr))
p = gpu_check("--compare", os.path.join(st, "good"))
check("--compare on the correct run: exit 0, all agree",
      p.returncode == 0 and "checks agree" in p.stdout, (p.returncode, p.stderr[-400:]))
p = gpu_check("--compare", os.path.join(st, "bad"))
err = p.stderr.strip().splitlines()
check("--compare on the faulty run: exit 1, one 'gpu-check:' line per failure and a total",
      p.returncode == 1 and len(err) == 7 and all(l.startswith("gpu-check: ") for l in err)
      and "6 of 15 checks differ" in err[-1], (p.returncode, err))
p = gpu_check("--compare", os.path.join(st, "good"), "--tz", "UTC0")
check("--compare in the wrong zone: exit 1, one line naming the offset",
      p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "5 h 30 min" in p.stderr,
      (p.returncode, p.stderr))
p = gpu_check("--compare", os.path.join(TMP, "nothing-here"))
check("--compare on a missing directory: one line", p.returncode == 1 and
      len(p.stderr.strip().splitlines()) == 1 and "missing" in p.stderr, (p.returncode, p.stderr))
out = os.path.join(TMP, "out")
p = gpu_check(out, env={"GPU_CHECK_NVIDIA_SMI": os.path.join(TMP, "no-such-nvidia-smi")})
check("no nvidia-smi: exit 1 with one line, before building anything",
      p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
      and "nvidia-smi not found" in p.stderr and not os.path.exists(os.path.join(out, "build.log")),
      (p.returncode, p.stderr))

bindir = os.path.join(TMP, "bin")
os.makedirs(bindir)


def script(name, body):
    path = os.path.join(bindir, name)
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o755)
    return path


smi_L = script("nvidia-smi-list", "#!/bin/sh\necho 'GPU 0: NVIDIA Fake (UUID: GPU-1)'\n")
nocuda = script("python-nocuda", "#!/bin/sh\necho 'torch 2.4.0, cuda None, available False'\nexit 4\n")
p = gpu_check(out, env={"GPU_CHECK_NVIDIA_SMI": smi_L, "GPU_CHECK_PYTHON": nocuda})
check("no torch with CUDA: exit 1 with one line naming the interpreter tried",
      p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
      and "no Python with torch.cuda.is_available()" in p.stderr and nocuda in p.stderr,
      (p.returncode, p.stderr))

# ---- 3. a dry run of the real check with the test NVML
lib = os.path.join(os.environ.get("STROBE_BUILD", "build"), "tests", "libnvidia-ml-fake.so")
if not os.path.exists(lib):
    skip("dry run of the real check", f"no test NVML ({lib})")
    done()

UUID = "GPU-5fb04e1c-1c9a-4e7a-9f52-3d1f6a0b7c21"
RESERVED_MIB = 512
# one script of the GPU, t in s since the job started (the test NVML counts from
# nvmlInit_v2, which strobe calls just before it forks the job): t, util,
# mem util, memory.used as nvidia-smi prints it (MiB, without the reserved),
# power W, temperature, SM clock
STEPS = [(0.0, 0, 0, 1024, 90, 35, 345),
         (2.0, 100, 40, 6144, 400, 45, 1980),   # heavy 2-8
         (8.0, 0, 0, 6144, 95, 42, 345),        # idle 8-14, 1 GiB more at 10.5
         (10.5, 0, 0, 7168, 95, 42, 345),
         (14.0, 50, 20, 7168, 250, 44, 1980),   # moderate 14-18
         (18.0, 0, 0, 1024, 90, 40, 345)]       # freed
END = 19.0
dry = os.path.join(TMP, "dry")
os.makedirs(dry)
t0_file = os.path.join(dry, "t0")  # the job's start, CLOCK_MONOTONIC s, written by the trainer
procs = os.path.join(dry, "procs")
with open(os.path.join(dry, "scenario"), "w") as f:
    f.write(f'device 0 name "NVIDIA Fake H200" uuid {UUID} memory {143771 * 1048576}\n')
    for t, u, mu, used, pw, temp, clk in STEPS:
        for field, v in (("util.gpu", u), ("util.memory", mu),
                         ("mem.used", (used + RESERVED_MIB) * 1048576),  # NVML v1: reserved is used
                         ("power", pw * 1000), ("temp", temp), ("clock.sm", clk)):
            f.write(f"at {t} 0 {field} {v}\n")
    f.write(f"processes_file 0 {procs}\n")

common = f"""import json, os, sys, time
STEPS = {STEPS!r}
T0_FILE = {t0_file!r}
def at(t):
    row = STEPS[0]
    for s in STEPS:
        if s[0] <= t:
            row = s
    return row
"""
script("nvidia-smi", "#!/usr/bin/python3\n" + common + f"""
import signal
args = sys.argv[1:]
if args == ["-L"]:
    print("GPU 0: NVIDIA Fake H200 (UUID: {UUID})")
    sys.exit(0)
if args[:1] == ["--query-gpu=index,uuid,memory.reserved"]:
    print("0, {UUID}, {RESERVED_MIB}")
    sys.exit(0)
if args != ["--query-gpu={'timestamp,index,uuid,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm'}",
            "--format=csv,noheader,nounits", "-lms", "100"]:
    print("fake nvidia-smi: unexpected %r" % (args,), file=sys.stderr)
    sys.exit(2)
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
while not stop:
    try:
        t = time.clock_gettime(time.CLOCK_MONOTONIC) - float(open(T0_FILE).read())
    except (OSError, ValueError):
        t = -1.0
    _, u, mu, used, pw, temp, clk = at(t)
    now = time.time()
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now)) + ".%03d" % (int(now * 1000) % 1000)
    print("%s, 0, {UUID}, %d, %d, %d, 143771, %.2f, %d, %d" % (stamp, u, mu, used, pw, temp, clk), flush=True)
    time.sleep(0.1)
""")
python = script("fake-python", "#!/usr/bin/python3\n" + common + f"""
if sys.argv[1:2] == ["-c"]:  # gpu-check's probe
    print("torch fake, cuda 12.4, available True")
    sys.exit(0)
# when this process was forked (right after strobe's nvmlInit_v2), on CLOCK_MONOTONIC
ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
since = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
t0 = time.clock_gettime(time.CLOCK_MONOTONIC) - since
with open(T0_FILE + ".tmp", "w") as f:
    f.write(repr(t0))
os.rename(T0_FILE + ".tmp", T0_FILE)
MIB = 1 << 20
peak = (6144 - 1024 + 1024) * MIB          # torch's reserved peak: the model's 5 GiB + the extra 1 GiB
with open({procs!r} + ".tmp", "w") as f:   # NVML's view of the process: that plus a 300 MiB context
    f.write("%d %d 60 20\\n" % (os.getpid(), peak + 300 * MIB))
os.rename({procs!r} + ".tmp", {procs!r})
def log(**kw):
    print("GPU_CHECK " + json.dumps(kw), flush=True)
def until(t):
    time.sleep(max(0.0, t0 + t - time.clock_gettime(time.CLOCK_MONOTONIC)))
    return time.time_ns()
log(event="start", pid=os.getpid(), device=0, uuid="{UUID[4:]}", cuda_visible_devices=None)
a = until(2.0); b = until(8.0)
log(event="phase", name="heavy", start_ns=a, end_ns=b)
c = until(10.5)
log(event="alloc", bytes=1 << 30, t_ns=c)
d = until(14.0)
log(event="phase", name="idle", start_ns=b, end_ns=d)
e = until(18.0)
log(event="phase", name="moderate", start_ns=d, end_ns=e)
until({END})
log(event="end", max_memory_reserved=peak)
print("done: 0 steps")
""")
out = os.path.join(TMP, "dry-out")
env = {"GPU_CHECK_NVIDIA_SMI": os.path.join(bindir, "nvidia-smi"), "GPU_CHECK_PYTHON": python,
       "GPU_CHECK_STROBE": os.path.abspath(STROBE), "GPU_CHECK_NO_BUILD": "1",
       "STROBE_NVML_LIB": os.path.abspath(lib), "STROBE_FAKE_NVML": os.path.join(dry, "scenario"),
       "TZ": "XST-05:30",  # nvidia-smi's local times in UTC+05:30
       "GPU_CHECK_COST_SECONDS": "1"}
p = gpu_check(out, env=env, timeout=150)
check("dry run: exit 0, every check agrees", p.returncode == 0 and "checks agree" in p.stdout,
      (p.returncode, p.stderr[-1500:], p.stdout[-2500:]))
md = open(os.path.join(out, "comparison.md")).read() if os.path.exists(os.path.join(out, "comparison.md")) else ""
v = verdicts(md)
check("dry run: all 7 pairs compared and agree", len(v) == 7 and all(x == "agree" for x in v.values()), v)
check("dry run: memory agrees through nvidia-smi's memory.reserved", "memory.reserved (512 MiB)" in md)
check("dry run: the training's pid is in gpu.proc_mem_bytes within 10 %",
      "- **agree** gpu.proc_mem_bytes of the training" in md)
check("dry run: the 1 GiB allocation is seen", "- **agree** extra allocation" in md)
lag = re.search(r"shifted ([+-][\d.]+) s", md)
check("dry run: the UTC+05:30 local times line up with strobe's (offset within 0.3 s)",
      lag and abs(float(lag.group(1))) <= 0.3, lag and lag.group(0))
for name in ("nvidia-smi.csv", "strobe-gpu.csv", "strobe-show.txt", "strobe-show.json", "train.log",
             "train.py", "gpu.db", "meta.json", "nvidia-smi-reserved.csv"):
    check(f"dry run: {name} written", os.path.exists(os.path.join(out, name)))
try:
    cost = json.load(open(os.path.join(out, "cost.json")))
except (OSError, ValueError):
    cost = {}
check("dry run: the CPU cost beside nvidia-smi is measured",
      cost.get("nvidia_smi_us_per_sample_per_device", -1) >= 0 and
      "strobe_us_per_sample_per_device" in cost and "CPU cost of GPU sampling" in md + open(
          os.path.join(out, "comparison.md")).read(), cost)
check("dry run: strobe show's summary is printed", "gpu.util{gpu=0}" in p.stdout, p.stdout[-800:])
try:
    meta = json.load(open(os.path.join(out, "meta.json")))
except (OSError, ValueError):
    meta = {}
check("dry run: meta.json records the zone nvidia-smi wrote in", meta.get("tz") == "XST-05:30", meta)
done()
