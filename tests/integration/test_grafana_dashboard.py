#!/usr/bin/python3
"""contrib/grafana/strobe.json against what strobe serves: the dashboard's
form (a Prometheus data source variable, run and node variables, every
query through them), every metric name its PromQL uses in the /metrics of
a real recording (two fake GPUs, two processes, steps and phases, app
values, a finding), and every query run by a real Prometheus that scraped
that recording: each is valid PromQL and gives data."""
import json
import os
import re
import subprocess

from strobetest import (PYTHON, STROBE, GiB, Prometheus, check, done, fake_gpu_env, free_port,
                        prom_samples, scrape, show, wait_for, work_dir)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
tmp = work_dir("grafana")
db = os.path.join(tmp, "g.db")
NAME = "grafana-job"
# the host's own devices: a machine without a disk or a network interface
# that strobe reads has no such series, and these panels stay empty there
HOST_FAMILIES = {"strobe_disk_": "disk.", "strobe_net_": "net."}

with open(os.path.join(ROOT, "contrib", "grafana", "strobe.json"), encoding="utf-8") as f:
    dash = json.load(f)

# ---- its form --------------------------------------------------------------------------
check("schemaVersion 36 or later", dash.get("schemaVersion", 0) >= 36, dash.get("schemaVersion"))
var = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
check("a Prometheus data source variable", var.get("datasource", {}).get("type") == "datasource" and
      var["datasource"].get("query") == "prometheus", var.get("datasource"))
check("run_name and node variables from strobe_run_info",
      all("strobe_run_info" in json.dumps(var.get(v, {}).get("query")) for v in ("run_name", "node")),
      sorted(var))
panels = [p for p in dash.get("panels", []) if p.get("type") != "row"]
DS = {"type": "prometheus", "uid": "${datasource}"}
check("every panel and query reads ${datasource}",
      all(p.get("datasource") == DS and all(t.get("datasource") == DS for t in p.get("targets", []))
          for p in panels), [p["title"] for p in panels if p.get("datasource") != DS])
ids = [p.get("id") for p in dash.get("panels", [])]
check("panel ids are unique", len(ids) == len(set(ids)), ids)
check("panels fit the 24-column grid",
      all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in dash["panels"]))
targets = [(p["title"], t["expr"]) for p in panels for t in p.get("targets", [])]
check("every panel has a query", all(p.get("targets") for p in panels))
SELECTOR = re.compile(r"\b(strobe_[A-Za-z0-9_]+)(\{[^}]*\})?")
unscoped = [(title, m.group(0)) for title, e in targets for m in SELECTOR.finditer(e)
            if not m.group(2) or 'run_name=~"$run_name"' not in m.group(2) or
            'node=~"$node"' not in m.group(2)]
check("every series a query reads is cut to $run_name and $node", not unscoped, unscoped)
for want in ("CPU", "Memory", "GPU utilization", "GPU memory", "GPU power", "Disk", "Network",
             "Step duration", "Phases per step (stacked)", "Findings", "CPU per process",
             "RSS per process"):
    check(f"a panel {want!r}, as the run page has", any(p["title"] == want for p in panels))

# ---- a recording for it ------------------------------------------------------------------
SCENARIO = f"""
sample_period 0.02
device 0 memory {80 * GiB}
device 1 memory {80 * GiB}
at 0 0 util.gpu 5
at 0 0 util.memory 3
at 0 0 mem.used {GiB}
at 0 0 power 100000
at 0 0 temp 40
at 0 1 util.gpu 7
at 0 1 util.memory 4
at 0 1 mem.used {2 * GiB}
at 0 1 power 110000
at 0 1 temp 45
"""
release = os.path.join(tmp, "release")
JOB = f"""
import os, time, strobe
if os.fork() == 0:  # a worker
    while not os.path.exists({release!r}):
        sum(range(20000)); time.sleep(0.02)
    os._exit(0)
while not os.path.exists({release!r}):
    strobe.step()
    with strobe.span("data"):
        time.sleep(0.01)
    with strobe.span("forward"):
        sum(range(30000))
    strobe.log("samples_per_s", 640.0)
    strobe.log("throughput", 10.0)
    strobe.log("loss", 0.5)
os.wait()
"""
port = free_port()
job = subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--store", db, "--name", NAME,
                        "--listen", f"127.0.0.1:{port}", "--rule-interval", "1s",
                        "--rule-param", "LowGPUUtilization.patience=5",
                        "--rule-param", "LowGPUUtilization.window=10", "--", PYTHON, "-c", JOB],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=fake_gpu_env(tmp, SCENARIO))
base = f"http://127.0.0.1:{port}"


def interpolate(expr):
    """The query as Grafana sends it for this run, all nodes, a 10 s rate
    interval."""
    regex = re.sub(r"([.*+?^${}()|\[\]\\])", r"\\\1", NAME)
    name = regex.replace("\\", "\\\\").replace('"', '\\"')  # a regex in a PromQL string
    return (expr.replace("$run_name", name).replace("$node", ".*")
            .replace("$__rate_interval", "10s"))


wait_for(lambda: scrape(base)[0] == 200 or job.poll() is not None, timeout=60, step=0.2)
if job.poll() is not None:
    check("the job serves /metrics on --listen", False, job.stderr.read()[-1000:])
    done()
try:
    with Prometheus([f"127.0.0.1:{port}"]) as prom:
        check("Prometheus scrapes the recorder", prom.wait_up(timeout=90), prom.targets())
        # fifteen seconds of scrapes with a finding: every rate() window is full
        full = prom.wait_query(
            'count_over_time(strobe_last_step[15s]) >= 14 and on() count(strobe_finding_windows_total) > 0',
            lambda r: len(r) == 1, timeout=120)
        check("fifteen seconds of scrapes, and a finding", len(full) == 1, full)
        status, _, text = scrape(base)
        names = {n for n, _, _ in prom_samples(text)} if status == 200 else set()
        recorded = show(db, "last").get("metrics", {}) if names else {}
        for title, expr in targets:
            used = sorted(set(m.group(1) for m in SELECTOR.finditer(expr)))
            host = [n for n in used for pre, cat in HOST_FAMILIES.items()
                    if n.startswith(pre) and not any(k.startswith(cat) for k in recorded)]
            missing = [n for n in used if n not in names and n not in host]
            check(f"{title}: {', '.join(used)} in /metrics", used and not missing, missing)
            try:
                rows = prom.query(interpolate(expr))
                why = None
            except RuntimeError as e:
                rows, why = [], str(e)
            if host:
                check(f"{title}: Prometheus runs its query (this host has no {host})", why is None, why)
                continue
            check(f"{title}: Prometheus gives data for {expr}", why is None and rows, why or rows)
finally:
    open(release, "w").close()
    try:
        _, err = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        _, err = job.communicate()
check("the job ends with status 0", job.returncode == 0, err[-1000:])
done()
