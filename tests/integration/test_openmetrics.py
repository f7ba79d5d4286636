#!/usr/bin/python3
"""OpenMetrics on `strobe run --listen` and `strobe serve`, read by the real
tools: `promtool check metrics` on the Prometheus text format, and
python3-prometheus-client's strict OpenMetrics parser on OpenMetrics.

The job has two fake GPUs (tests/nvml), three processes (two forked
workers named with quotes, a backslash and a newline), steps and phases
through strobe's Python API, app values with a hostile name, and a
LowGPUUtilization finding. Its run name, experiment and tag hold quotes,
backslashes, braces and unicode. Each figure is checked against an
independent reading: the GPU scenario, /proc of the job's processes, the
script's own count of steps, its values and its own clock around each
span, and `strobe show --json` after the run.

Then `strobe serve` on the same store, with two running runs; the
loopback rule (`--listen 0.0.0.0:P` needs --token) and token checks."""
import atexit
import json
import os
import socket
import subprocess

from strobetest import (PYTHON, STROBE, GiB, check, done, fake_gpu_env, free_port, near,
                        openmetrics_parse, prom_samples, promtool_check, scrape, show, strobe, wait_for,
                        work_dir)

tmp = work_dir("om")
db = os.path.join(tmp, "om.db")

NAME = 'q"uo\\te {x="y"} # ünï 🚀'
EXPERIMENT = 'exp\\"", ü'
TAG = 'v"a\\l}ü'
APP = 'lo"ss\\\n{x="1"} # ü'  # strobe.log takes any name but NUL
COMM = 'w"k\\\n'  # a worker's comm: PR_SET_NAME takes a newline too
STEPS = 120

SCENARIO = f"""
sample_period 0.02
device 0 name "NVIDIA H100 80GB HBM3" memory {80 * GiB}
device 1 name "NVIDIA H100 80GB HBM3" memory {80 * GiB}
at 0 0 util.gpu 5
at 0 0 mem.used {GiB}
at 0 0 power 100000
at 0 1 util.gpu 7
at 0 1 mem.used {2 * GiB}
at 0 1 power 110000
"""
GPU_UTIL = {"0": 0.05, "1": 0.07}
GPU_MEM = {"0": GiB, "1": 2 * GiB}
GPU_WATTS = {"0": 100.0, "1": 110.0}

# steps with a data and a forward span each, two app values a step, two
# forked workers; then the script writes what it did and holds (every
# process alive) until the test creates the release file
WORKLOAD = r"""
import ctypes, json, os, sys, time
import strobe
steps, out, release, app, comm = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
kids = []
for k in range(2):
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None).prctl(15, (comm + str(k)).encode())  # PR_SET_NAME
        while not os.path.exists(release):
            sum(range(20000))
            time.sleep(0.02)
        os._exit(0)
    kids.append(pid)
block = b"\x01" * (64 << 20)  # 64 MiB, touched: resident while it holds
phase = {"data": 0.0, "forward": 0.0}
for i in range(1, steps + 1):
    strobe.step()
    t0 = time.monotonic()
    with strobe.span("data"):
        time.sleep(0.01)
    t1 = time.monotonic()
    with strobe.span("forward"):
        sum(range(30000))
        time.sleep(0.004)
    t2 = time.monotonic()
    phase["data"] += t1 - t0
    phase["forward"] += t2 - t1
    strobe.log(app, 1.0 / i)
    strobe.log("loss", 2.0 / i)
with open(out + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "kids": kids, "steps": steps, "phase": phase,
               "app": 1.0 / steps, "loss": 2.0 / steps}, f)
os.rename(out + ".tmp", out)
while not os.path.exists(release):
    time.sleep(0.05)
for pid in kids:
    os.waitpid(pid, 0)
"""
script = os.path.join(tmp, "job.py")
with open(script, "w") as f:
    f.write(WORKLOAD)
GPU_ENV = fake_gpu_env(tmp, SCENARIO)


def start_job(tag, listen=None, opts=(), env=None):
    """A recording of WORKLOAD (STEPS steps) that holds until released;
    (Popen, the script's report file, the release file)."""
    out, release = os.path.join(tmp, tag + ".json"), os.path.join(tmp, tag + ".release")
    cmd = [STROBE, "run", "--quiet", "--no-report", "--store", db]
    if listen:
        cmd += ["--listen", listen]
    cmd += [*opts, "--", PYTHON, script, str(STEPS), out, release, APP, COMM]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env or GPU_ENV)
    atexit.register(finish, p, release)  # a test that fails half way leaves no job behind
    return p, out, release


def finish(p, release):
    if p.returncode is not None:
        return p.returncode, ""
    open(release, "w").close()
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, err


def report_of(out, p):
    wait_for(lambda: os.path.exists(out) or p.poll() is not None, timeout=120, step=0.1)
    if not os.path.exists(out):
        return None
    with open(out) as f:
        return json.load(f)


def samples(text):
    """{(name, frozenset(labels.items())): value} and the raw list."""
    got = prom_samples(text)
    return {(n, frozenset(lab.items())): v for n, lab, v in got}, got


def pick(got, metric, /, **want):
    """The values of metric's samples whose labels include want ("" means
    the label is absent), as [(labels, value)]."""
    return [(lab, v) for n, lab, v in got if n == metric and
            all(lab.get(k, "") == w for k, w in want.items())]


def one(got, metric, /, **want):
    xs = pick(got, metric, **want)
    return xs[0][1] if len(xs) == 1 else None


def vm_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def read_comm(pid):
    with open(f"/proc/{pid}/comm", "rb") as f:
        return f.read()[:-1].decode()  # the kernel's own trailing newline


def live(base, pred, token=None, timeout=60):
    """The first text scrape of base that pred accepts (its parsed
    samples), polled; the last one when none did."""
    last = [None, []]

    def ok():
        status, _, body = scrape(base, token=token)
        if status != 200:
            return False
        try:
            last[:] = [body, prom_samples(body)]
        except ValueError:
            return False
        return pred(last[1])
    wait_for(ok, timeout=timeout, step=0.3)
    return last[0], last[1]


# ---- one recording, scraped on --listen ----------------------------------------------
port = free_port()
base = f"http://127.0.0.1:{port}"
job, out, release = start_job("rich", f"127.0.0.1:{port}", opts=(
    "--name", NAME, "--experiment", EXPERIMENT, "--tag", "k=" + TAG, "--rule-interval", "1s",
    "--rule-param", "LowGPUUtilization.patience=5", "--rule-param", "LowGPUUtilization.window=10"))
rep = report_of(out, job)
check("the job ran its steps under strobe run --listen", rep is not None,
      job.stderr.read() if job.poll() is not None else "no report in 120 s")
if rep is None:
    finish(job, release)
    done()


def settled(got):
    """Every process and GPU seen, the last step counted, a finding."""
    pids = {lab.get("pid") for lab, _ in pick(got, "strobe_proc_rss_bytes")}
    return (one(got, "strobe_last_step") == rep["steps"] and
            {str(rep["pid"])} | {str(k) for k in rep["kids"]} <= pids and
            len(pick(got, "strobe_gpu_util_ratio")) == 2 and
            bool(pick(got, "strobe_finding_windows_total", rule="LowGPUUtilization")))


text, got = live(base, settled)
check("/metrics shows the held job: its last step, three processes, two GPUs, a finding",
      text is not None and settled(got), (text or "")[:3000])
rss_proc = vm_rss(rep["pid"])
status, headers, text = scrape(base)
status_om, headers_om, om = scrape(base, openmetrics=True)
check("GET /metrics: 200, Prometheus text 0.0.4", status == 200 and
      headers.get("content-type", "").startswith("text/plain; version=0.0.4"), (status, headers))
check("GET /metrics asking for OpenMetrics: 200, OpenMetrics 1.0.0", status_om == 200 and
      headers_om.get("content-type", "").startswith("application/openmetrics-text; version=1.0.0"),
      (status_om, headers_om))
ok, said = promtool_check(text)
check("promtool check metrics passes on the recorder's text format", ok, said[:2000])
try:
    fams = openmetrics_parse(om)
    why = None
except ValueError as e:
    fams, why = [], str(e)
check("the strict OpenMetrics parser reads the recorder's OpenMetrics", why is None and fams, why)
check("OpenMetrics ends in # EOF", om.endswith("# EOF\n"), repr(om[-80:]))
check("the text format has no # EOF and no # UNIT", "# EOF" not in text and "# UNIT" not in text,
      [x for x in text.splitlines() if x.startswith(("# EOF", "# UNIT"))][:3])
om_types = {f.name: f.type for f in fams}
check("OpenMetrics types: counter, summary, info, gauge as docs/openmetrics.md says",
      om_types.get("strobe_proc_cpu_seconds") == "counter" and
      om_types.get("strobe_step_duration_seconds") == "summary" and
      om_types.get("strobe_run") == "info" and om_types.get("strobe_gpu_util_ratio") == "gauge",
      {k: om_types.get(k) for k in ("strobe_proc_cpu_seconds", "strobe_step_duration_seconds",
                                    "strobe_run", "strobe_gpu_util_ratio")})
om_units = {f.name: f.unit for f in fams}
check("OpenMetrics units: bytes, seconds, ratio", om_units.get("strobe_proc_rss_bytes") == "bytes" and
      om_units.get("strobe_step_duration_seconds") == "seconds" and
      om_units.get("strobe_gpu_util_ratio") == "ratio",
      {k: om_units.get(k) for k in ("strobe_proc_rss_bytes", "strobe_step_duration_seconds",
                                    "strobe_gpu_util_ratio")})

_, got = samples(text)
s = show(db, "last")
info = pick(got, "strobe_run_info")
check("strobe_run_info: one sample, 1", len(info) == 1 and info[0][1] == 1, info)
lab = info[0][0] if info else {}
check("run labels survive escaping: the run name, experiment as given",
      lab.get("run_name") == NAME and lab.get("experiment") == EXPERIMENT, lab)
check("run_id is the run's id (strobe show)", lab.get("run_id") == s.get("id"), (lab, s.get("id")))
check("node is the host name", lab.get("node") == socket.gethostname(), lab)
check("every sample carries the run's labels", all(x.get("run_id") == s.get("id") and
                                                  x.get("run_name") == NAME for _, x, _ in got),
      [(n, x) for n, x, _ in got if x.get("run_id") != s.get("id")][:3])

for gpu in ("0", "1"):
    check(f"GPU {gpu}: util, memory, power as the scenario",
          one(got, "strobe_gpu_util_ratio", gpu=gpu) == GPU_UTIL[gpu] and
          one(got, "strobe_gpu_mem_used_bytes", gpu=gpu) == GPU_MEM[gpu] and
          one(got, "strobe_gpu_power_watts", gpu=gpu) == GPU_WATTS[gpu],
          [(n, lab.get("gpu"), v) for n, lab, v in got if n.startswith("strobe_gpu_")][:12])

procs = {lab["pid"]: lab for lab, _ in pick(got, "strobe_proc_rss_bytes") if lab.get("pid")}
main = procs.get(str(rep["pid"]), {})
check("the main process: role main, its comm as /proc says",
      main.get("role") == "main" and main.get("comm") == read_comm(rep["pid"]), main)
for k, kid in enumerate(rep["kids"]):
    check(f"worker {k}: its comm with a quote, backslash and newline, as /proc says",
          procs.get(str(kid), {}).get("comm") == read_comm(kid) == (COMM + str(k))[:15],
          (procs.get(str(kid)), read_comm(kid)))
rss = one(got, "strobe_proc_rss_bytes", pid=str(rep["pid"]))
near("the main process' RSS is /proc's VmRSS (± 5 %)", rss, rss_proc, 0.05 * rss_proc)
tree = one(got, "strobe_proc_rss_bytes", pid="")
check("the tree's RSS is at least the main process' and its workers'",
      tree is not None and rss is not None and tree >= rss, (tree, rss))

check("strobe_last_step is the script's step count", one(got, "strobe_last_step") == rep["steps"],
      pick(got, "strobe_last_step"))
count = one(got, "strobe_step_duration_seconds_count", rank="")
check("strobe_step_duration_seconds_count: the steps that ended (all but the open one)",
      count == rep["steps"] - 1, (count, rep["steps"]))
for ph in ("data", "forward"):
    v = one(got, "strobe_phase_seconds_total", phase=ph)
    near(f"strobe_phase_seconds_total{{phase={ph}}} is the script's own clock (± 10 %)",
         v, rep["phase"][ph], 0.1 * rep["phase"][ph])
q50 = one(got, "strobe_step_duration_seconds", quantile="0.5")
check("the step time's median lies between a step's sleeps and the mean step",
      q50 is not None and 0.014 <= q50 <= 2 * sum(rep["phase"].values()) / rep["steps"], q50)
check("strobe_app: each value the script logged last, its hostile name intact",
      one(got, "strobe_app", name=APP) == rep["app"] and one(got, "strobe_app", name="loss") == rep["loss"],
      pick(got, "strobe_app"))
fw = pick(got, "strobe_finding_windows_total", rule="LowGPUUtilization")
check("a LowGPUUtilization finding: windows and the last one's time",
      fw and all(v >= 1 for _, v in fw) and
      len(pick(got, "strobe_finding_last_timestamp_seconds", rule="LowGPUUtilization")) == len(fw), fw)

# ---- strobe serve: the stored snapshots of two running runs --------------------------
job2, out2, release2 = start_job("second", opts=("--name", "second"))
rep2 = report_of(out2, job2)
check("a second run holds", rep2 is not None)
sport = free_port()
srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", f"127.0.0.1:{sport}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
atexit.register(srv.kill)
sbase = f"http://127.0.0.1:{sport}"
stext, sgot = live(sbase, lambda g: len(pick(g, "strobe_run_info")) == 2 and
                   all(one(g, "strobe_last_step", run_name=n) == STEPS for n in (NAME, "second")))
check("strobe serve /metrics: both running runs, each at its last step",
      len(pick(sgot, "strobe_run_info")) == 2, (stext or "")[:2000])
status, headers, stext = scrape(sbase)
_, _, som = scrape(sbase, openmetrics=True)
ok, said = promtool_check(stext)
check("promtool check metrics passes on strobe serve's /metrics", status == 200 and ok, said[:2000])
try:
    openmetrics_parse(som)
    why = None
except ValueError as e:
    why = str(e)
check("the strict OpenMetrics parser reads strobe serve's", why is None and som.endswith("# EOF\n"), why)
_, sgot = samples(stext)
check("serve: the runs' ids as strobe ls has them",
      sorted(lab.get("run_id") for lab, _ in pick(sgot, "strobe_run_info")) ==
      sorted(r["id"] for r in json.loads(strobe("ls", "--json", store=db).stdout)
             if r.get("status") == "running"), pick(sgot, "strobe_run_info"))
check("serve: the same app values and step counts as the recorder served",
      one(sgot, "strobe_app", run_name=NAME, name=APP) == rep["app"] and
      one(sgot, "strobe_step_duration_seconds_count", run_name=NAME, rank="") == count,
      pick(sgot, "strobe_app", run_name=NAME))

rc, err = finish(job, release)
check("the job ends with status 0", rc == 0, err[-2000:])
rc2, err2 = finish(job2, release2)
check("the second run ends with status 0", rc2 == 0, err2[-2000:])
s = show(db, s.get("id", "last"))
rules = {f.get("rule") for f in s.get("findings", [])}
check("strobe show has the LowGPUUtilization finding /metrics showed", "LowGPUUtilization" in rules, rules)
check("the recorder's port is closed when the run ends", scrape(base)[0] == 0)
_, sgot = live(sbase, lambda g: not pick(g, "strobe_run_info"), timeout=30)
check("serve: an ended run leaves /metrics", not pick(sgot, "strobe_run_info"), pick(sgot, "strobe_run_info"))
srv.terminate()
srv.wait(timeout=30)

# ---- loopback only unless --token ----------------------------------------------------
marker = os.path.join(tmp, "ran")
runs_before = strobe("ls", "--json", store=db).stdout
p = strobe("run", "--quiet", "--listen", f"0.0.0.0:{free_port()}", "--", "touch", marker, store=db)
check("run --listen 0.0.0.0 without --token: refused in one line, exit 125, the job not started, "
      "nothing stored", p.returncode == 125 and len(p.stderr.strip().splitlines()) == 1 and
      not os.path.exists(marker) and strobe("ls", "--json", store=db).stdout == runs_before,
      (p.returncode, p.stderr))
p = strobe("serve", "--listen", f"0.0.0.0:{free_port()}", store=db, timeout=30)
check("serve --listen 0.0.0.0 without --token: refused in one line, exit 2",
      p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr))
port = free_port()
tok = "s3cret-token"
hold = os.path.join(tmp, "tok.release")
tj = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--store", db, "--listen",
                       f"0.0.0.0:{port}", "--token", tok, "--", PYTHON, "-c",
                       f"import os,time\nwhile not os.path.exists({hold!r}): time.sleep(0.05)"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
atexit.register(finish, tj, hold)
tbase = f"http://127.0.0.1:{port}"
wait_for(lambda: scrape(tbase, token=tok)[0] == 200 or tj.poll() is not None, timeout=60, step=0.2)
st_ok, _, body = scrape(tbase, token=tok)
check("--listen 0.0.0.0 --token: a scrape with the token gets 200 and the run",
      st_ok == 200 and "strobe_run_info" in body, st_ok)
check("without Authorization: 401", scrape(tbase)[0] == 401)
check("with a wrong token: 401", scrape(tbase, token=tok + "x")[0] == 401)
rc, err = finish(tj, hold)
check("the token run ends with status 0", rc == 0, err[-1000:])
check("--quiet --listen: nothing on stderr (libmicrohttpd's notes are not the job's)", err == "", err)
done()
