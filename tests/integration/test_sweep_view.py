#!/usr/bin/env python3
"""strobe sweep's campaigns on the dashboard: real campaigns of
examples/train.py (a CSV of a solo run and a collocated pair, and a YAML
grid over two batch sizes, each solo and as a pair), then strobe serve's
/api/campaigns and /api/campaigns/NAME against `strobe sweep status
--json`, and the page in headless Chromium (sweep_browser.js): each
workload's figures as the page writes them and holds them equal status's,
workloads grouped by collocation mode, the highlighted workload is the
finished one of most samples/s per device, run links open their runs. MPS
and MIG need GPUs this machine may lack: a third campaign's state, written
into the store as a sweep on a GPU machine writes it, names those modes
over the same runs. A campaign still running shows its progress and the
workload that runs, and moves on by the page's own refresh; once its sweep
is killed, the page shows it lost. Screenshots are kept under
$STROBE_BUILD/artifacts/."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from strobetest import PYTHON, STROBE, TMP, check, done, skip, store_path, strobe, wait_for
from test_views import ARTIFACTS, ROOT, chromium_node, serve, stop

DRIVER = os.path.join(ROOT, "tests", "integration", "sweep_browser.js")
TRAIN = os.path.join(ROOT, "examples", "train.py")
# a name that needs encoding in a URL and in the page's hash
MIX = "mix/MPS & MIG ?#%"
BROKEN = "broken"

CSV = """Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Listeners,Params
bs,1,solo,,,,-,{train},smi+top,--steps 6 --batch-size 16 --workers 0
bs,2,pair a,,,,-,{train},smi+top,--steps 6 --batch-size 16 --workers 0
bs,2,pair b,,,,-,{train},smi+top,--steps 6 --batch-size 16 --workers 0
"""

GRID = """name: grid
experiment: grid
collocation: "-"
file: {train}
listeners: smi+top
method: grid
parameters:
  steps: 6
  batch-size: [16, 32]
  workers: 0
workloads:
  - runs: 1
  - runs: 2
"""

# workload 1 ends soon, 2 runs long enough to look at, 3 until killed
LIVE = """Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Listeners,Params
live,1,first,,,,-,{train},smi+top,--steps 4 --batch-size 16 --workers 0
live,2,second,,,,-,{train},smi+top,--seconds 14 --batch-size 16 --workers 0
live,3,third,,,,-,{train},smi+top,--steps 100000 --batch-size 16 --workers 0
"""


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text.format(train=TRAIN))
    return path


def sweep(db, path):
    return strobe("sweep", "--quiet", "--python", PYTHON, path, store=db, timeout=240)


def status_json(db, name):
    p = strobe("sweep", "status", "--store", db, "--json", name)
    return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr}


def get(base, path, headers=None):
    """(status, JSON body) of GET base + path."""
    req = urllib.request.Request(base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def api_path(name):
    return "api/campaigns/" + urllib.parse.quote(name, safe="")


def best_of(st):
    """The workload strobe sweep status names best: finished, most
    samples/s per device (the first of equals)."""
    best = None
    for w in st["workloads"]:
        v = w["samples_per_s_per_device"]
        if w["status"] == "finished" and v is not None and (best is None or v > best[1]):
            best = (w["name"], v)
    return best[0] if best else None


def add_mix(db, grid):
    """A campaign whose workloads share their GPUs through MPS and MIG
    slices, over the grid's runs: solo on the host, two MPS workloads (one
    on two devices), a failed MIG one that would otherwise be best, a
    pending one."""
    runs = {w["name"]: w["runs"] for w in grid["workloads"]}
    now = time.time_ns()

    def wl(name, status, coll, devices, r, note=None):
        return {"experiment": MIX, "name": name, "key": "%016x" % len(name), "status": status,
                "attempts": 1 if r else 0, "runs": r, "started_ns": now - 10**9 if r else 0,
                "ended_ns": now if r else 0, "devices": devices, "collocation": coll, "note": note}

    state = {"version": 1, "owner": {"pid": 0, "host": None, "boot_id": "", "pid_ns": 0, "time_ns": 0,
                                     "start_ticks": 0},
             "workloads": [wl("000", "finished", "-", "", runs["000"]),
                           wl("001", "finished", "MPS", "0", runs["002"]),
                           wl("002", "finished", "MPS", "0,1", runs["003"]),
                           wl("003", "failed", "3g.20gb", "0", runs["003"], "a run exited with status 1"),
                           wl("004", "pending", "3g.20gb", "0", [])]}
    c = sqlite3.connect(db)
    with c:
        c.execute("INSERT INTO campaigns(name, spec_hash, file, created_ns, updated_ns, state) "
                  "VALUES (?, ?, ?, ?, ?, ?)", (MIX, "0123456789abcdef", "/nowhere/mix.yaml", now, now,
                                                json.dumps(state)))
        # and one whose state is not JSON, updated long ago: listed last
        c.execute("INSERT INTO campaigns(name, spec_hash, file, created_ns, updated_ns, state) "
                  "VALUES (?, ?, NULL, 1, 1, ?)", (BROKEN, "0123456789abcdef", "{not json"))
    c.close()


UNITS = {"µs": 1e-6, "ms": 1e-3, "s": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def parse_shown(text):
    """A figure as the page writes it (web/common/format.js) back to a
    number: "817.6", "12.3 k", "12.9 ms", "1.40 s", "2m 5s", "2.10×"; None
    for "–". Returns (value, tolerance)."""
    t = text.replace("×", "").replace("★", "").strip()
    if t in ("–", "-", ""):
        return None, 0
    m = re.fullmatch(r"(\d+)m (\d+)s", t)
    if m:
        return int(m[1]) * 60 + int(m[2]), 0.51
    m = re.fullmatch(r"([-\d.e+]+)(?: (\S+))?", t)
    if not m:
        return "unreadable " + text, 0
    unit = UNITS.get(m[2] or "", 1.0)
    decimals = len(m[1].split(".")[1]) if "." in m[1] else 0
    # half the last digit written, either way
    return float(m[1]) * unit, 0.5 * 10 ** -decimals * unit * 1.0001


def same_figure(shown, want):
    v, tol = parse_shown(shown)
    if want is None or v is None:
        return v is None and want is None
    return not isinstance(v, str) and abs(v - want) <= tol


def check_page(tag, page, st, run_names):
    """The page of a campaign against strobe sweep status --json."""
    wls = st["workloads"]
    colls = []
    for w in wls:
        if w["collocation"] not in colls:
            colls.append(w["collocation"])
    groups = page.get("groups", [])
    check(f"{tag}: a section per collocation mode, in order ({', '.join(colls)})",
          [g["collocation"] for g in groups] == colls, [g["collocation"] for g in groups])
    check(f"{tag}: each section holds its mode's workloads, in order",
          all([r["workload"] for r in g["rows"]] == [w["name"] for w in wls if w["collocation"] == g["collocation"]]
              for g in groups), [(g["collocation"], [r["workload"] for r in g["rows"]]) for g in groups])
    rows = {r["workload"]: r for g in groups for r in g["rows"]}
    keys = ("duration_s", "samples_per_s", "samples_per_s_per_device", "vs_solo", "step_p50_s")
    held, written, other = [], [], []
    for w in wls:
        r = rows.get(w["name"])
        if not r:
            held.append((w["name"], "no row"))
            continue
        for k in keys:
            v = r["figs"].get(k, {})
            if (float(v["v"]) if v.get("v") else None) != w[k]:
                held.append((w["name"], k, v.get("v"), w[k]))
            want = w[k] if (k != "duration_s" or w["runs"]) else None
            if not same_figure(v.get("text", "?"), want):
                written.append((w["name"], k, v.get("text"), want))
        if r["figs"].get("findings", {}).get("v") != str(w["findings"]):
            other.append((w["name"], "findings", r["figs"].get("findings"), w["findings"]))
        if r["status"] != w["status"]:
            other.append((w["name"], "status", r["status"], w["status"]))
        if r["devices"] != (w["devices"] or "host"):
            other.append((w["name"], "devices", r["devices"], w["devices"]))
        if r["params"] != [f"{k}={v}" for k, v in w["params"].items()]:
            other.append((w["name"], "params", r["params"], w["params"]))
        if [x["id"] for x in r["runs"]] != w["runs"] or any(x["href"] != "#/run/" + x["id"] for x in r["runs"]):
            other.append((w["name"], "runs", r["runs"], w["runs"]))
        names = [run_names.get(i) for i in w["runs"]]
        if any(x["text"] not in (run_names.get(x["id"]), x["id"][:8]) for x in r["runs"]):
            other.append((w["name"], "run names", [x["text"] for x in r["runs"]], names))
    check(f"{tag}: every figure the page holds (data-v) is status's, exactly", not held, held)
    check(f"{tag}: every figure the page writes reads back as status's, to its digits", not written, written)
    check(f"{tag}: status, devices, params, findings and runs (links to #/run/ID) as status says",
          not other, other)
    best = best_of(st)
    marked = [r["workload"] for r in rows.values() if r["best"]]
    check(f"{tag}: the workload highlighted is the finished argmax of samples/s per device ({best})",
          marked == ([best] if best else []), (marked, best))
    bars = [b for g in page.get("bars", []) for b in g["rows"]]
    check(f"{tag}: the chart's blocks are the collocation modes, in order",
          [g["collocation"] for g in page.get("bars", [])] == colls, page.get("bars"))
    by = {w["name"]: w for w in wls}
    check(f"{tag}: a bar per workload, holding its samples/s per device",
          sorted(b["workload"] for b in bars) == sorted(by) and
          all((float(b["v"]) if b["v"] else None) == by[b["workload"]]["samples_per_s_per_device"] for b in bars),
          [(b["workload"], b["v"]) for b in bars])
    check(f"{tag}: the best bar is highlighted, alone", [b["workload"] for b in bars if b["best"]] ==
          ([best] if best else []), [(b["workload"], b["best"]) for b in bars])
    top = max((b for b in bars if b["v"]), key=lambda b: float(b["v"]), default=None)
    check(f"{tag}: bars are as long as their values (the highest the longest, others in proportion)",
          top is not None and all(abs(b["width"] / top["width"] - float(b["v"]) / float(top["v"])) < 0.02
                                  for b in bars if b["v"] and float(b["v"]) / float(top["v"]) > 0.01),
          [(b["workload"], b["v"], b["width"]) for b in bars])
    if best:
        check(f"{tag}: the answer line names the best workload", f"workload {best} " in (page.get("best_text") or ""),
              page.get("best_text"))
    check(f"{tag}: the header says its progress and status",
          page.get("done", {}).get("done") == sum(w["status"] in ("finished", "stopped") for w in wls) and
          page.get("done", {}).get("total") == len(wls), (page.get("done"), page.get("status")))


def browse(node, base, spec):
    r = subprocess.run([node, DRIVER, base, ARTIFACTS, json.dumps(spec)], capture_output=True, text=True,
                       timeout=240)
    try:
        return json.loads(r.stdout.strip().split("\n")[-1])
    except (ValueError, IndexError):
        return {"errors": ["no result: " + r.stdout[-500:] + r.stderr[-500:]], "steps": {}}


def clean(tag, b):
    check(f"{tag}: no console error, no request off the server", b.get("errors") == [] and
          b.get("foreign") == [], (b.get("errors"), b.get("foreign")))
    print(f"# {tag}: the browser took {b.get('elapsed_s')} s", flush=True)


def check_api(base, db, names, run_names):
    code, lst = get(base, "api/campaigns")
    listed = {c["name"]: c for c in lst.get("campaigns", [])}
    check("API: /api/campaigns lists every campaign, most recently updated first",
          code == 200 and [c["name"] for c in lst["campaigns"]] == [MIX, "grid", "bs", BROKEN],
          (code, [c["name"] for c in lst.get("campaigns", [])]))
    check("API: a campaign whose state does not parse is listed, with an error and no figures",
          listed.get(BROKEN) == {"name": BROKEN, "file": None, "spec_hash": "0123456789abcdef", "created_ns": 1,
                                 "updated_ns": 1, "status": None, "running": False, "done": None, "total": None,
                                 "running_workloads": [], "error": "its state does not parse"}, listed.get(BROKEN))
    code, d = get(base, api_path(BROKEN))
    check("API: its page is a 500 with a JSON error", code == 500 and d == {"error": "the campaign's state does not parse"},
          (code, d))
    for name in names:
        st = status_json(db, name)
        c = listed.get(name, {})
        check(f"API: {name}: its row says done of total, running, status and file",
              c.get("done") == sum(w["status"] in ("finished", "stopped") for w in st["workloads"]) and
              c.get("total") == len(st["workloads"]) and c.get("running") is False and
              c.get("running_workloads") == [] and c.get("file") == st["file"] and
              c.get("status") == ("failed" if name == MIX else "finished") and c.get("updated_ns", 0) > 0, c)
        code, d = get(base, api_path(name))
        check(f"API: {name}: 200 at /api/campaigns/{urllib.parse.quote(name, safe='')}", code == 200, (code, d))
        # what the page adds, in each workload
        extra = ("started_ns", "ended_ns", "run_details")
        shared = {k: d.get(k) for k in st}
        shared["workloads"] = [{k: v for k, v in w.items() if k not in extra} for w in d.get("workloads", [])]
        check(f"API: {name}: every key of strobe sweep status --json, equal, and no other in a workload but "
              f"{', '.join(extra)}", shared == st, json.dumps([shared, st])[:1500])
        check(f"API: {name}: done, total, best (the argmax), running_workloads, owner, spans",
              d.get("done") == c.get("done") and d.get("total") == len(st["workloads"]) and
              d.get("best") == best_of(st) and d.get("running_workloads") == [] and
              d.get("owner", {}).get("pid") == 0 and d.get("status") == c.get("status") and
              d.get("created_ns", 0) > 0 and d.get("updated_ns") == c.get("updated_ns"),
              {k: d.get(k) for k in ("done", "total", "best", "running_workloads", "owner", "status")})
        check(f"API: {name}: each workload's run_details are its runs, with their names",
              all([r["id"] for r in w.get("run_details", [])] == w["runs"] and
                  all(r["name"] == run_names.get(r["id"]) and r["status"] == "finished" for r in w["run_details"])
                  for w in d.get("workloads", [])), [w.get("run_details") for w in d.get("workloads", [])])
    p = strobe("sweep", "status", "--store", db, "grid")
    m = re.search(r"^most samples/s per device: workload (\S+) ", p.stdout, re.M)
    check("strobe sweep status names the same best workload as the API",
          m is not None and m[1] == best_of(status_json(db, "grid")), p.stdout)
    code, d = get(base, "api/campaigns/nope")
    check("API: an unknown campaign is 404 with a JSON error", code == 404 and d == {"error": "no such campaign"},
          (code, d))
    code, d = get(base, "api/campaigns/")
    check("API: no name is 404", code == 404 and "error" in d, (code, d))


def check_guarded(db):
    """The campaigns endpoints behind the server's token and rate limit."""
    srv = subprocess.Popen([STROBE, "serve", "--store", db, "--listen", "127.0.0.1:0", "--token", "s3cret",
                            "--rate", "0.1", "--burst", "4"], stderr=subprocess.PIPE, text=True)
    m = re.search(r"http://(127\.0\.0\.1:\d+)/", srv.stderr.readline())
    try:
        base = "http://%s/" % m.group(1)
        a = get(base, "api/campaigns")
        b = get(base, "api/campaigns", {"Authorization": "Bearer s3cret"})
        c = get(base, api_path("bs") + "?token=s3cret")
        d = get(base, api_path("bs") + "?token=s3cret")
        e = get(base, api_path("bs") + "?token=s3cret")
        check("API: without the token 401, with it (Bearer or ?token=) 200",
              a[0] == 401 and "error" in a[1] and b[0] == 200 and c[0] == 200 and d[0] == 200,
              (a[0], b[0], c[0], d[0]))
        check("API: past the burst, 429 with a JSON error", e[0] == 429 and "error" in e[1], e)
    finally:
        stop(srv)


def main():
    db = store_path("sweep.db")
    for name, path in (("bs", write("bs.csv", CSV)), ("grid", write("grid.yaml", GRID))):
        p = sweep(db, path)
        check(f"strobe sweep {os.path.basename(path)} ran every workload", p.returncode == 0,
              p.stdout[-800:] + p.stderr[-800:])
    add_mix(db, status_json(db, "grid"))
    names = ["bs", "grid", MIX]
    st = {n: status_json(db, n) for n in names}
    check("strobe sweep status --json reads each campaign", all("workloads" in st[n] for n in names),
          {n: st[n].get("error") for n in names})
    runs = json.loads(strobe("ls", "--json", store=db).stdout or "[]")
    run_names = {r["id"]: r["name"] for r in runs}

    node = chromium_node()
    srv, base = serve(db)
    if not base:
        srv.kill()
        done()
    try:
        check_api(base, db, names, run_names)
        check_guarded(db)
        if not node:
            skip("the campaign pages in headless Chromium", "no node, chromium or playwright-core (scripts/bootstrap)")
            done()
        for name in names:
            b = browse(node, base, {"campaign": name, "shot": "sweep-" + name.split("/")[0], "click_run": True})
            clean(f"page {name}", b)
            s = b.get("steps", {})
            lst = s.get("list", {})
            check(f"page {name}: the nav's Campaigns entry lists every campaign, linked",
                  lst.get("nav") == "Campaigns" and
                  sorted(c["name"] for c in lst.get("list", [])) == sorted(names + [BROKEN]) and
                  all(c["href"] == "#/campaign/" + urllib.parse.quote(c["name"], safe="!'()*~") for c in lst["list"]),
                  lst.get("list"))
            if name == "bs":
                bad = [c for c in lst.get("list", []) if c["name"] == BROKEN]
                check("page: the list shows the campaign that does not parse as unreadable, saying why",
                      bad and bad[0]["status"] == "unreadable" and "does not parse" in bad[0]["progress"], bad)
            pg = s.get("page", {})
            check(f"page {name}: opened from the list, titled with the campaign",
                  pg.get("name") == name and pg.get("status") == ("failed" if name == MIX else "finished"),
                  (pg.get("name"), pg.get("status"), pg.get("error")))
            check_page(f"page {name}", pg, st[name], run_names)
            rv = s.get("run", {})
            check(f"page {name}: a run link opens that run's page",
                  rv.get("hash") == "#/run/" + rv.get("id", "?") and rv.get("id") in rv.get("ids", []) and
                  rv.get("name") == run_names.get(rv.get("id")) and not rv.get("error"), rv)
        live(db, base, node)
    finally:
        stop(srv)
    done()


def live(db, base, node):
    """A campaign seen while it runs, then once its sweep is killed."""
    path = write("live.csv", LIVE)
    sw = subprocess.Popen([STROBE, "sweep", "--store", db, "--quiet", "--python", PYTHON, path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        second = wait_for(lambda: [w["status"] for w in status_json(db, "live").get("workloads", [])] ==
                          ["finished", "running", "pending"], timeout=90, step=0.3)
        check("live: workload 1 finished, 2 running", second, status_json(db, "live"))
        code, lst = get(base, "api/campaigns")
        row = [c for c in lst.get("campaigns", []) if c["name"] == "live"]
        check("API: the list has it running, 1 of 3 done, workload 2 running now",
              row and row[0]["running"] is True and row[0]["status"] == "running" and row[0]["done"] == 1 and
              row[0]["total"] == 3 and row[0]["running_workloads"] == ["2"], row)
        b = browse(node, base, {"campaign": "live", "shot": "sweep-live", "wait_done": 2})
        clean("live page", b)
        s = b.get("steps", {})
        pg = s.get("page", {})
        rows = {r["workload"]: r for g in pg.get("groups", []) for r in g["rows"]}
        check("live page: running, 1 of 3 workloads done, workload 2 running now",
              pg.get("status") == "running" and (pg.get("done") or {}).get("done") == 1 and
              pg["done"]["total"] == 3 and "workload 2" in (pg.get("now") or "") and
              rows.get("2", {}).get("status") == "running" and rows.get("3", {}).get("status") == "pending",
              (pg.get("status"), pg.get("done"), pg.get("now")))
        lst = s.get("list", {}).get("list", [])
        check("live page: the list says running, with workload 2",
              any(c["name"] == "live" and c["status"] == "running" and "1 of 3" in c["progress"] and
                  "running 2" in c["progress"] for c in lst), lst)
        rf = s.get("refreshed", {})
        rrows = {r["workload"]: r for g in rf.get("groups", []) for r in g["rows"]}
        check("live page: without a reload, it moves on: 2 of 3 done, workload 3 running",
              (rf.get("done") or {}).get("done") == 2 and "workload 3" in (rf.get("now") or "") and
              rrows.get("2", {}).get("status") == "finished" and rrows.get("3", {}).get("status") == "running" and
              rf.get("status") == "running", (rf.get("done"), rf.get("now"), s.get("waited_s")))
        check("live page: workload 2's runs linked once it ran", [x["id"] for x in rrows.get("2", {}).get("runs", [])] ==
              status_json(db, "live")["workloads"][1]["runs"], rrows.get("2"))
        third = wait_for(lambda: status_json(db, "live")["workloads"][2]["runs"] != [], timeout=30, step=0.3)
        check("live: workload 3 has started its run", third)
    finally:
        os.kill(sw.pid, signal.SIGKILL)  # the sweep alone: its recorders get SIGTERM (PR_SET_PDEATHSIG)
        sw.wait()
        gone = wait_for(lambda: subprocess.run(["pgrep", "-s", str(sw.pid)], capture_output=True).returncode != 0,
                        timeout=30, step=0.2)
        if not gone:
            os.killpg(sw.pid, signal.SIGKILL)
    st = status_json(db, "live")
    check("live: killed, status --json says workload 3 lost and the campaign not running",
          st.get("running") is False and [w["status"] for w in st.get("workloads", [])] ==
          ["finished", "finished", "lost"], st)
    b = browse(node, base, {"campaign": "live", "shot": "sweep-lost"})
    clean("lost page", b)
    pg = b.get("steps", {}).get("page", {})
    rows = {r["workload"]: r for g in pg.get("groups", []) for r in g["rows"]}
    check("lost page: the campaign and workload 3 show lost, nothing running now",
          pg.get("status") == "lost" and rows.get("3", {}).get("status") == "lost" and not pg.get("now"),
          (pg.get("status"), pg.get("now"), {k: r["status"] for k, r in rows.items()}))
    check_page("lost page", pg, st, {r["id"]: r["name"] for r in json.loads(strobe("ls", "--json", store=db).stdout)})
    lst = b.get("steps", {}).get("list", {}).get("list", [])
    check("lost page: the list says lost, 2 of 3 done",
          any(c["name"] == "live" and c["status"] == "lost" and "2 of 3" in c["progress"] for c in lst), lst)


if __name__ == "__main__":
    main()
