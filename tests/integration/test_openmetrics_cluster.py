#!/usr/bin/python3
"""Cluster mode: two recorders join one job (--join, --node a, --node b) in
a PostgreSQL store of the test's own; `strobe serve` on that store serves
both nodes' series on /metrics, each with its node label, and promtool
and the strict OpenMetrics parser accept it. Each node's main process is
found under its own node, by the pid it wrote itself. Both nodes' samples
carry the job's run id, and `strobe top` on the store lists both nodes."""
import atexit
import json
import os
import subprocess

from strobetest import (PYTHON, STROBE, check, done, free_port, openmetrics_parse, pg_missing, strobe,
                        pg_server, prom_samples, promtool_check, scrape, skip, wait_for, work_dir)

why = pg_missing()
if why:
    skip("OpenMetrics of a cluster job in PostgreSQL", why)
    done()

tmp = work_dir("omc")
release = os.path.join(tmp, "release")
HOLD = f"""
import os, sys, time
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while not os.path.exists({release!r}):
    time.sleep(0.05)
"""


def nodes_seen(got):
    """{node: set of pids} of strobe_proc_rss_bytes."""
    seen = {}
    for name, lab, _ in got:
        if name == "strobe_proc_rss_bytes" and lab.get("pid"):
            seen.setdefault(lab.get("node"), set()).add(lab["pid"])
    return seen


with pg_server() as uri:
    procs = []
    for n in ("a", "b"):
        procs.append(subprocess.Popen([STROBE, "run", "--quiet", "--no-report", "--store", uri,
                                       "--join", "om-job", "--node", n, "--", PYTHON, "-c", HOLD,
                                       os.path.join(tmp, f"pid-{n}")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        atexit.register(procs[-1].kill)  # a test that fails half way leaves no recorder behind
    atexit.register(lambda: open(release, "w").close())
    wait_for(lambda: all(os.path.exists(os.path.join(tmp, f"pid-{n}")) for n in "ab") or
             any(p.poll() is not None for p in procs), timeout=120)
    pids = {}
    for n in "ab":
        with open(os.path.join(tmp, f"pid-{n}")) as f:
            pids[n] = f.read()
    port = free_port()
    srv = subprocess.Popen([STROBE, "serve", "--store", uri, "--listen", f"127.0.0.1:{port}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    atexit.register(srv.kill)
    base = f"http://127.0.0.1:{port}"
    got = []

    def both():
        status, _, body = scrape(base)
        if status != 200:
            return False
        got[:] = prom_samples(body)
        seen = nodes_seen(got)
        return all(pids[n] in seen.get(n, ()) for n in "ab")
    wait_for(both, timeout=60, step=0.5)
    seen = nodes_seen(got)
    check("serve /metrics: each node's main process under its node label",
          all(pids[n] in seen.get(n, ()) for n in "ab"), (seen, pids))
    info = sorted(lab.get("node") for name, lab, _ in got if name == "strobe_run_info")
    check("serve /metrics: a strobe_run_info for each node", info == ["a", "b"], info)
    check("both nodes' CPU series", sorted({lab.get("node") for name, lab, _ in got
                                           if name == "strobe_cpu_util_ratio"}) == ["a", "b"])
    # a node's samples carry the job's run id: the run a user opens
    job = strobe("show", "--json", "last", store=uri)
    job_id = json.loads(job.stdout)["id"] if job.returncode == 0 else None
    ids = {lab.get("run_id") for name, lab, _ in got if name == "strobe_run_info"}
    check("both nodes' samples carry the job's run id", ids == {job_id}, (ids, job_id))
    # strobe top on the same PostgreSQL store: a row per node
    top = strobe("top", "--once", "--json", store=uri)
    rows = json.loads(top.stdout)["runs"] if top.returncode == 0 else []
    check("strobe top lists each node of the job", sorted(r["node"] for r in rows) == ["a", "b"],
          top.stdout + top.stderr)
    status, _, text = scrape(base)
    ok, said = promtool_check(text)
    check("promtool check metrics passes on a cluster's /metrics", status == 200 and ok, said[:2000])
    _, _, om = scrape(base, openmetrics=True)
    try:
        openmetrics_parse(om)
        why = None
    except ValueError as e:
        why = str(e)
    check("the strict OpenMetrics parser reads a cluster's", why is None, why)
    open(release, "w").close()
    for n, p in zip("ab", procs):
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        check(f"node {n}'s recorder ends with status 0", p.returncode == 0, err[-1000:])
    srv.terminate()
    srv.wait(timeout=30)
done()
