#!/usr/bin/python3
"""Helpers for bench/run: each subcommand measures one thing and prints JSON.

    bench.py machine
    bench.py sadc    --count N [--interval S]
    bench.py rate    --strobe BIN --interval DUR --seconds S [--tree N]
    bench.py storage --strobe BIN --seconds S
    bench.py report  DIR            (markdown from DIR/*.json, on stdout)

CPU times of child processes come from os.wait4(), whose rusage the kernel
keeps in nanoseconds (reported in µs), finer than /usr/bin/time's 10 ms.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_rusage(argv, **kw):
    """Run argv to completion; returns (status, user_s, sys_s, wall_s)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, **kw)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime, ru.ru_stime, time.monotonic() - t0


# ---- machine ----------------------------------------------------------------

def cmd_machine(_a):
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "kernel": platform.release(),
        "mem_gib": round(mem_kb / 1048576, 1),
        "git_commit": commit,
        "src_dirty": subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--", "src"],
                                    capture_output=True).returncode != 0,
        "cc": subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.split("\n")[0],
        "python": platform.python_version(),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    json.dump(out, sys.stdout)
    print()


# ---- sadc -------------------------------------------------------------------

SADC = "/usr/lib/sysstat/sadc"


def cmd_sadc(a):
    if not os.access(SADC, os.X_OK):
        json.dump({"available": False}, sys.stdout)
        print()
        return
    tmp = tempfile.mkdtemp(prefix="strobe-bench-sadc-")
    try:
        # startup alone: one record, no interval
        base = []
        for i in range(3):
            out = os.path.join(tmp, "one%d" % i)
            _, u, s, _ = run_rusage([SADC, "-S", "ALL", "1", "1", out],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            base.append(u + s)
        out = os.path.join(tmp, "sa")
        rc, u, s, wall = run_rusage([SADC, "-S", "ALL", str(a.interval), str(a.count), out],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        size = os.path.getsize(out) if os.path.exists(out) else 0
        cpu = u + s
        one = statistics.median(base)
        json.dump({
            "available": True, "rc": rc, "interval_s": a.interval, "count": a.count,
            "wall_s": wall, "user_s": u, "sys_s": s,
            "per_sample_us": cpu / a.count * 1e6,
            "startup_us": one * 1e6,
            "marginal_per_sample_us": max(cpu - one, 0.0) / max(a.count - 1, 1) * 1e6,
            "file_bytes": size,
        }, sys.stdout)
        print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- sustained rate -----------------------------------------------------------

def show_json(strobe, store, run):
    r = subprocess.run([strobe, "show", "--store", store, "--json", run],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def cmd_rate(a):
    tmp = tempfile.mkdtemp(prefix="strobe-bench-rate-")
    try:
        store = os.path.join(tmp, "b.db")
        if a.tree > 1:
            # a shell and tree-1 sleeps: a job of `tree` processes
            job = ["/bin/sh", "-c", "for i in $(seq %d); do sleep %s & done; wait" %
                   (a.tree - 1, a.seconds)]
        else:
            job = ["sleep", str(a.seconds)]
        rc, u, s, wall = run_rusage([a.strobe, "run", "--store", store, "--interval", a.interval,
                                     "--quiet", "--no-report", "--proc-source", a.proc_source,
                                     "--"] + job)
        d = show_json(a.strobe, store, "last")
        source = (d["metrics"].get("proc.cpu", {}).get("meta") or {}).get("source", "?")
        cpu = d["metrics"].get("strobe.cpu", {})
        procs = d["metrics"].get("proc.count", {})
        interval_s = d["interval_ns"] / 1e9
        expected = d["duration_s"] / interval_s
        json.dump({
            "interval": a.interval, "interval_s": interval_s, "seconds": a.seconds,
            "tree": a.tree, "rc": rc, "proc_source": source,
            "samples": d["samples"], "expected_samples": expected,
            "missed": d["missed"], "dropped": d["dropped"],
            "procs_max": procs.get("max"),
            "strobe_cpu_mean_pct": cpu.get("mean"), "strobe_cpu_p95_pct": cpu.get("p95"),
            "rusage_user_s": u, "rusage_sys_s": s, "wall_s": wall,
            "rusage_pct": (u + s) / wall * 100.0,
            "cpu_us_per_sample": (u + s) / max(d["samples"], 1) * 1e6,
        }, sys.stdout)
        print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- storage ------------------------------------------------------------------

def vacuum_size(path):
    """Bytes of an SQLite file once its WAL is folded in and it is vacuumed."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("VACUUM")
    con.close()
    wal = path + "-wal"
    return os.path.getsize(path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)


def split_key(key):
    """'proc.cpu{pid=42}' -> ('proc.cpu', {'pid': '42'})"""
    m = re.match(r"^([^{]*)(?:\{(.*)\})?$", key)
    name, labels = m.group(1), m.group(2) or ""
    out = {}
    for part in labels.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return name, out


def camel(s):
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[._]", s) if w)


SM_TYPES = {"cpu": "cpu", "mem": "memory", "disk": "disk", "net": "network", "gpu": "gpu",
            "psi": "pressure", "cgroup": "cgroup", "proc": "process", "strobe": "strobe"}


def sagemaker_fields(key):
    """SageMaker's system-metrics record fields for one strobe series."""
    name, labels = split_key(key)
    head, _, rest = name.partition(".")
    typ = SM_TYPES.get(head, head)
    if name == "cpu.util":
        return typ, "cpu%s" % labels["core"] if "core" in labels else "cpu", "CPUUtilization"
    if labels:
        k, v = next(iter(labels.items()))
        ident = v if k in ("dev", "iface") else "%s%s" % (k, v)
    else:
        ident = typ
    return typ, ident, camel(rest)


def cmd_storage(a):
    tmp = tempfile.mkdtemp(prefix="strobe-bench-store-")
    try:
        db = os.path.join(tmp, "demo.db")
        rc, u, s, wall = run_rusage(
            [a.strobe, "run", "--store", db, "--name", "demo", "--quiet", "--",
             "/usr/bin/python3", os.path.join(ROOT, "examples", "train.py"),
             "--seconds", str(a.seconds)],
            stdout=subprocess.DEVNULL)
        d = show_json(a.strobe, db, "demo")
        points = d["points"]
        file_bytes = vacuum_size(db)
        con = sqlite3.connect(db)
        blob_bytes = con.execute("SELECT COALESCE(sum(length(data)),0) FROM blocks").fetchone()[0]
        nblocks = con.execute("SELECT count(*) FROM blocks").fetchone()[0]
        per_series = con.execute(
            "SELECT s.name || CASE WHEN s.labels <> '' THEN '{' || s.labels || '}' ELSE '' END,"
            " sum(b.count), sum(length(b.data)), count(b.id)"
            " FROM series s JOIN blocks b ON b.series_id = s.id GROUP BY s.id"
            " ORDER BY 3 DESC").fetchall()
        con.close()
        by_series = [{"series": k, "points": n_, "bytes": by, "blocks": nb}
                     for k, n_, by, nb in per_series]
        # the part of the file that does not grow with the run: the same
        # store with its blocks deleted
        empty = os.path.join(tmp, "empty.db")
        shutil.copy(db, empty)
        con = sqlite3.connect(empty)
        con.execute("DELETE FROM blocks")
        con.commit()
        con.close()
        fixed_bytes = vacuum_size(empty)

        csv_path = os.path.join(tmp, "demo.csv")
        subprocess.run([a.strobe, "export", "--store", db, "--format", "csv", "-o", csv_path,
                        "demo"], check=True)
        # the run's own points in the codec's two formats, side by side
        formats = json.loads(subprocess.run(
            [os.path.join(os.path.dirname(a.strobe), "bench", "codec_formats"), db, "demo"],
            capture_output=True, text=True, check=True).stdout)
        rows = []
        with open(csv_path, newline="") as f:
            r = csv.reader(f)
            next(r)
            for ts, key, value in r:
                rows.append((int(ts), key, value))
        n = len(rows)

        # (b) plain SQLite rows, as a radT-like store keeps them
        plain = {}
        for variant in ("text", "id"):
            path = os.path.join(tmp, "plain-%s.db" % variant)
            con = sqlite3.connect(path)
            if variant == "text":
                con.execute("CREATE TABLE samples(ts INTEGER, series TEXT, value REAL)")
                con.executemany("INSERT INTO samples VALUES(?,?,?)",
                                ((ts, k, float(v)) for ts, k, v in rows))
                con.execute("CREATE INDEX samples_by_series ON samples(series, ts)")
            else:
                con.execute("CREATE TABLE series(id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
                con.execute("CREATE TABLE samples(ts INTEGER, series_id INTEGER, value REAL)")
                ids = {}
                for _, k, _ in rows:
                    if k not in ids:
                        ids[k] = len(ids) + 1
                con.executemany("INSERT INTO series VALUES(?,?)", ((i, k) for k, i in ids.items()))
                con.executemany("INSERT INTO samples VALUES(?,?,?)",
                                ((ts, ids[k], float(v)) for ts, k, v in rows))
                con.execute("CREATE INDEX samples_by_series ON samples(series_id, ts)")
            con.commit()
            con.close()
            plain[variant] = vacuum_size(path)

        # (c) SageMaker's system-metrics JSON lines
        jl_path = os.path.join(tmp, "system-metrics.json")
        fields = {}
        with open(jl_path, "w") as f:
            for ts, key, value in rows:
                fl = fields.get(key)
                if fl is None:
                    fl = fields[key] = sagemaker_fields(key)
                v = float(value)
                rec = {"Type": fl[0], "Name": fl[1], "Dimension": fl[2],
                       "Value": v if v == v and abs(v) != float("inf") else None,
                       "NodeId": "algo-1", "Timestamp": round(ts / 1e9, 3)}
                f.write(json.dumps(rec, separators=(",", ":")))
                f.write("\n")
        jl_bytes = os.path.getsize(jl_path)
        with open(jl_path) as f:
            example = f.readline().strip()

        json.dump({
            "seconds": a.seconds, "rc": rc, "wall_s": wall,
            "samples": d["samples"], "points": points, "series": len(fields),
            "exported_rows": n, "missed": d["missed"],
            "strobe_bytes_per_sample": d["bytes_per_sample"],
            "strobe_stored_bytes": d["stored_bytes"],
            "events": d.get("events", 0), "event_bytes": d.get("event_bytes", 0),
            "steps": (d.get("steps") or {}).get("count", 0),
            "strobe_blob_bytes": blob_bytes, "strobe_blocks": nblocks,
            "strobe_file_bytes": file_bytes,
            "strobe_file_bytes_per_sample": file_bytes / points if points else 0,
            "strobe_fixed_bytes": fixed_bytes,
            "strobe_marginal_bytes_per_sample": (file_bytes - fixed_bytes) / points if points else 0,
            "plain_text_bytes": plain["text"], "plain_text_bytes_per_sample": plain["text"] / n,
            "plain_id_bytes": plain["id"], "plain_id_bytes_per_sample": plain["id"] / n,
            "jsonl_bytes": jl_bytes, "jsonl_bytes_per_sample": jl_bytes / n,
            "jsonl_example": example,
            "csv_bytes_per_sample": os.path.getsize(csv_path) / n,
            "by_series": by_series,
            "codec_formats": formats,
        }, sys.stdout)
        print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- report -------------------------------------------------------------------

def load(dirname, name):
    path = os.path.join(dirname, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_lines(dirname, name):
    out = []
    try:
        with open(os.path.join(dirname, name)) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except (OSError, ValueError):
        pass
    return out


def verdict(ok):
    return "**pass**" if ok else "**FAIL**"


def f1(v):
    return "n/a" if v is None else "%.1f" % v


def f2(v):
    return "n/a" if v is None else "%.2f" % v


def kilohertz_floor(dirname, sc):
    """(wake µs, files µs) under a 1 ms frame: wake_cost's timerfd+epoll line
    at 1 ms, and sample_cost's host files with /proc/stat read one frame in
    10 (the cpu collector waits for a USER_HZ tick); None when either is
    missing."""
    try:
        with open(os.path.join(dirname, "wake_1ms.txt")) as f:
            m = re.search(r"^timerfd\+epoll\s+([0-9.]+) us", f.read(), re.M)
    except OSError:
        return None
    if not m or not sc or "host_files" not in sc:
        return None
    files = sum(fr["us"] * (0.1 if fr["file"] == "/proc/stat" else 1.0) for fr in sc["host_files"])
    return float(m.group(1)), files + tree_read(sc)


def tree_read(sc):
    """µs of one BPF run over the tree (sample_cost's tree_bpf_read_us), 0 when
    the tree was read through procfs."""
    return max(sc.get("tree_bpf_read_us", -1.0), 0.0)


def floor_verdict(floor, budget, unit):
    """A floor is not strobe's to pass: it says what is left under the budget
    for everything strobe does, or that nothing is."""
    if floor > budget:
        return "**over the budget before strobe parses or stores anything**"
    return "%.1f %s of the budget left for strobe's own work" % (budget - floor, unit)


def cmd_report(a):
    d = a.dir
    m = load(d, "machine.json") or {}
    sc = load(d, "sample_cost.json")
    scp = load(d, "sample_cost_paced.json")
    scf = load(d, "sample_cost_procfs.json")
    scfp = load(d, "sample_cost_procfs_paced.json")
    ps = load_lines(d, "psutil_b2b.json")
    psp = load_lines(d, "psutil_paced.json")
    sadc = load(d, "sadc.json")
    rates = load_lines(d, "rates.json")
    st = load(d, "storage.json")
    o = []
    w = o.append
    w("# strobe benchmarks: results of `make bench`")
    w("")
    w("Machine: %s cores, %s, kernel %s, %s GiB; %s; load average at start %s; commit %s%s." % (
        m.get("nproc"), m.get("cpu_model"), m.get("kernel"), m.get("mem_gib"), m.get("date"),
        " ".join(m.get("loadavg", [])), m.get("git_commit") or "?",
        " (src/ modified)" if m.get("src_dirty") else ""))
    w("")

    # 1. cost per sample
    w("## 1. CPU time per full sample (2 cores, process tree of 10)")
    w("")
    ps_med = statistics.median([x["median_us"] for x in ps]) if ps else None
    psp_med = statistics.median([x["median_us"] for x in psp]) if psp else None
    if sc:
        full = sc["full_us"]
        paced = scp["paced_p50_us"] if scp else None
        w("| sampler | back to back (µs/sample) | paced at 100 ms (µs/sample) | series | points/sample |")
        w("|---|---:|---:|---:|---:|")
        w("| strobe (C, `sampler_sample`), tree through %s | %s | %s | %d | %.0f |" % (
            sc.get("proc_source", "procfs"), f1(full), f1(paced), sc["series"],
            sc["points_per_frame"]))
        if scf and sc.get("proc_source") == "bpf":
            w("| strobe, tree through procfs (`--proc-source procfs`) | %s | %s | %d | %.0f |" % (
                f1(scf["full_us"]), f1(scfp["paced_p50_us"] if scfp else None), scf["series"],
                scf["points_per_frame"]))
        if ps:
            w("| psutil sampler (Python, smdebug/radT style) | %s | %s | %d | %.0f |" % (
                f1(ps_med), f1(psp_med), ps[0]["series"], ps[0]["points_per_sample"]))
        if sadc and sadc.get("available"):
            w("| sysstat sadc `-S ALL` (host only, no process tree) | | %s (at 1 s) | | |" %
              f1(sadc["per_sample_us"]))
        w("")
        ratio_b2b = ps_med / full if ps_med else None
        ratio_paced = psp_med / paced if psp_med and paced else None
        w("| check | target | measured | verdict |")
        w("|---|---|---|---|")
        w("| strobe CPU per full sample, back to back (median of %d × %d frames) | ≤ 20 µs | %s µs | %s |" % (
            sc["reps"], sc["frames"], f1(full), verdict(full <= 20)))
        if paced:
            w("| strobe CPU per full sample, paced at 100 ms (median of %d) | ≤ 20 µs | %s µs | %s |" % (
                scp["paced_frames"], f1(paced), verdict(paced <= 20)))
        if ratio_b2b:
            w("| psutil / strobe, back to back | ≥ 30× | %.1f× | %s |" % (ratio_b2b, verdict(ratio_b2b >= 30)))
        if ratio_paced:
            w("| psutil / strobe, paced at 100 ms | ≥ 30× | %.1f× | %s |" % (
                ratio_paced, verdict(ratio_paced >= 30)))
        if sadc and sadc.get("available") and paced:
            w("| sadc (1 s) / strobe (paced) | | %.1f× | |" % (sadc["per_sample_us"] / paced))
        if scf and sc.get("proc_source") == "bpf":
            w("| strobe procfs / strobe BPF, back to back | | %.2f× | |" % (scf["full_us"] / full))
            if ps_med:
                w("| psutil / strobe through procfs, back to back | | %.1f× | |" % (
                    ps_med / scf["full_us"]))
        if "host_floor_us" in sc:
            floor = sc["host_floor_us"] + tree_read(sc)
            w("| the floor: the kernel writing the %d host files a frame reads, one `pread` each%s; "
              "nothing parsed or stored (below) | ≤ 20 µs | %s µs | %s |" % (
                  len(sc["host_files"]), " and one run of the BPF program over the tree"
                  if tree_read(sc) else "", f1(floor), floor_verdict(floor, 20, "µs")))
        cold = scp.get("paced_floor_p50_us") if scp else None
        if cold:
            w("| the floor paced at 100 ms (the same reads, cold: each 50 ms after a frame, "
              "median of %d) | ≤ 20 µs | %s µs | %s |" % (
                  scp["paced_frames"], f1(cold), floor_verdict(cold, 20, "µs")))
            if psp_med:
                w("| psutil paced / the floor paced: the most any sampler of these files could "
                  "reach | ≥ 30× | %.1f× | %s |" % (psp_med / cold, "reachable in principle"
                                                    if psp_med / cold >= 30 else
                                                    "**out of reach for any sampler of these files**"))
        w("")
        w("Back to back, a frame's `mono_ns` is its scheduled time, 100 ms after the last one, as "
          "in the recorder, so the work done once a second (the walk of every thread's children "
          "file, /proc/vmstat) comes every 10th frame as at the default interval. Repetitions (µs/frame): %s. Single frames: p50 %s, p90 %s, "
          "p99 %s, max %s µs; a frame that does the once-a-second work: %s µs. On the real "
          "clock back to back (that work then nearly vanishes): %s µs. Processes tracked: %d." % (
              ", ".join("%.1f" % x for x in sc["full_us_reps"]), f1(sc["frame_p50_us"]),
              f1(sc["frame_p90_us"]), f1(sc["frame_p99_us"]), f1(sc["frame_max_us"]),
              f1(sc["second_frame_us"]), f1(sc["full_real_clock_us"]), sc["procs_tracked"]))
        w("")
        if ps:
            w("psutil runs (median µs/sample, back to back): %s; paced: %s. %d processes on the "
              "host: `children(recursive=True)` reads every one's stat to build the parent map." % (
                  ", ".join("%.0f" % x["median_us"] for x in ps),
                  ", ".join("%.0f" % x["median_us"] for x in psp), ps[0]["system_processes"]))
            w("")
        if sadc and sadc.get("available"):
            w("sadc: %d records in %.0f s, %.0f µs CPU each including startup (startup alone "
              "%.0f µs; marginal %.0f µs per record)." % (
                  sadc["count"], sadc["wall_s"], sadc["per_sample_us"], sadc["startup_us"],
                  sadc["marginal_per_sample_us"]))
            w("")
        w("### Where strobe's time goes")
        w("")
        w("| collector | µs/frame, steady (10 Hz clock) | share | µs in a once-a-second frame |")
        w("|---|---:|---:|---:|")
        tot = sum(c["us"] for c in sc["collectors"] if c["enabled"]) + sc["self_cpu_point_us"]
        tot_sec = sum(c.get("second_frame_us", 0) for c in sc["collectors"] if c["enabled"]) + \
            sc["self_cpu_point_us"]
        for c in sc["collectors"]:
            if c["enabled"]:
                w("| %s | %.1f | %.0f %% | %.1f |" % (c["name"], c["us"], 100 * c["us"] / tot,
                                                   c.get("second_frame_us", 0)))
            else:
                w("| %s | off | | |" % c["name"])
        w("| strobe.cpu (recorder's own point) | %.1f | %.0f %% | %.1f |" % (
            sc["self_cpu_point_us"], 100 * sc["self_cpu_point_us"] / tot, sc["self_cpu_point_us"]))
        w("| **sum of collectors alone** | **%.1f** | | **%.1f** |" % (tot, tot_sec))
        w("")
        if "user_share" in sc:
            w("User time is %.0f %% of the bench thread's CPU time over the back-to-back frames; "
              "the rest is the kernel (the split is by clock ticks, so it is a share, not an "
              "exact figure)." % (100 * sc["user_share"]))
            w("")
        if "host_files" in sc:
            w("The floor: one `pread` of each host file on the collectors' own kept fds "
              "(median of 5 × 2000), the files a frame reads every frame (`/proc/vmstat` and the "
              "online CPUs come once a second; the process tree through BPF is no file):")
            w("")
            w("| file | bytes | µs per pread |")
            w("|---|---:|---:|")
            for fr in sc["host_files"]:
                w("| `%s` | %d | %.2f |" % (fr["file"], fr["bytes"], fr["us"]))
            w("| **sum** | | **%.2f** |" % sc["host_floor_us"])
            w("")
            if tree_read(sc):
                w("One run of the BPF program over the tree (the recorder for its children, then "
                  "the %d processes tracked), nothing taken from it: %.2f µs (the proc collector "
                  "whole: %.2f µs)." % (sc["procs_tracked"], tree_read(sc), next(
                      (c["us"] for c in sc["collectors"] if c["name"] == "proc"), 0.0)))
                w("")
        w("Most of it is the kernel writing procfs text. One `pread` of each file a sampler "
          "may read (median of 5 × 2000):")
        w("")
        w("| file | bytes | µs per pread |")
        w("|---|---:|---:|")
        for fr in sc.get("file_reads", []):
            w("| `%s` | %d | %.2f |" % (fr["file"], fr["bytes"], fr["us"]))
        w("")
        allocs = sc.get("allocs_per_rep", [])
        if sc.get("count_allocs"):
            later = sum(allocs[1:])
            frames_later = sc["frames"] * max(len(allocs) - 1, 0)
            ok = later == 0
            w("Allocations (malloc/calloc/realloc calls, counted by replacing them in the bench "
              "binary) per repetition of %d frames: %s; heap growth: %s bytes. The first "
              "repetition fills the pool of sealed-block buffers (one per series, %d bytes "
              "each); after it: %d allocations in %d frames. \"No allocation once warm\": %s." % (
                  sc["frames"], ", ".join(str(x) for x in allocs),
                  ", ".join(str(x) for x in sc.get("heap_growth_per_rep_bytes", [])),
                  (sc["heap_growth_per_rep_bytes"][0] // allocs[0]) if allocs and allocs[0] else 0,
                  later, frames_later,
                  verdict(True) if ok else "**pass, bar %d sealed-block buffer(s) as the pool "
                  "reached its high-water mark**" % later))
            w("")

    # 2. sustained
    w("## 2. Sustained sampling (`strobe run --interval DUR -- sleep`)")
    w("")
    if rates:
        w("| interval | rate | job | tree read through | samples | missed | strobe.cpu mean (% of a core) | rusage (% of a core) | CPU µs/sample |")
        w("|---|---:|---|---|---:|---:|---:|---:|---:|")
        for r in rates:
            w("| %s | %.0f Hz | %s | %s | %d | %d | %s | %.1f | %.0f |" % (
                r["interval"], 1 / r["interval_s"],
                "sleep" if r["tree"] <= 1 else "%d processes" % r["tree"], r.get("proc_source", "?"),
                r["samples"], r["missed"], f2(r["strobe_cpu_mean_pct"]), r["rusage_pct"],
                r["cpu_us_per_sample"]))
        w("")
        # the checks judge the recorder as it runs by default (the first run's
        # source); the procfs runs beside them are for comparison
        default_src = rates[0].get("proc_source")
        own = [r for r in rates if r["tree"] <= 1 and r.get("proc_source") == default_src]
        k1 = [r for r in own if r["interval_s"] == 0.001]
        if k1:
            pct = statistics.median([r["rusage_pct"] for r in k1])
            miss = statistics.median([r["missed"] for r in k1])
            w("| check | target | measured | verdict |")
            w("|---|---|---|---|")
            w("| 1 kHz, %% of one core (median of %d runs, rusage) | ≤ 5 %% | %.1f %% | %s |" % (
                len(k1), pct, verdict(pct <= 5)))
            w("| 1 kHz, missed deadlines (median) | 0 | %g | %s |" % (miss, verdict(miss == 0)))
            floor = kilohertz_floor(d, sc)
            if floor:
                pct = (floor[0] + floor[1]) / 10  # µs in each 1000 µs
                w("| the floor at 1 kHz: an empty 1 ms wake-up (%.1f µs) and the kernel's reads of "
                  "each frame (%.1f µs: the host files, `/proc/stat` one frame in 10, and the tree's "
                  "BPF run), nothing parsed or stored | ≤ 5 %% | %.1f %% | %s |" % (
                      floor[0], floor[1], pct, floor_verdict(pct, 5, "%")))
            w("")
        clean = sorted({r["interval_s"] for r in own if
                        all(x["missed"] == 0 for x in own if x["interval_s"] == r["interval_s"])})
        cheap = sorted({r["interval_s"] for r in own if
                        all(x["missed"] == 0 and x["rusage_pct"] <= 5 for x in own
                            if x["interval_s"] == r["interval_s"])})
        w("Highest rate held with zero misses in every run: %s. Highest rate with zero misses "
          "and ≤ 5 %% of a core: %s." % (
              "%.0f Hz" % (1 / clean[0]) if clean else "none of those tried",
              "%.0f Hz" % (1 / cheap[0]) if cheap else "none of those tried"))
        w("")

    # 3. storage
    w("## 3. Bytes per sample (the demo training, `examples/train.py`)")
    w("")
    if not st:
        w("Not run (`bench/run --samplers` runs sections 1, 2 and 4 only).")
        w("")
    else:
        sb = st["strobe_bytes_per_sample"]
        w("%d samples of %d series, %d points over %.0f s (%d exported rows)." % (
            st["samples"], st["series"], st["points"], st["wall_s"], st["exported_rows"]))
        w("")
        w("| format | bytes | B/sample | vs strobe blocks |")
        w("|---|---:|---:|---:|")
        w("| strobe: block data (`bytes_per_sample` of `strobe show --json`) | %d | %.2f | 1.0× |" % (
            st["strobe_stored_bytes"], sb))
        w("| strobe: whole store file after checkpoint + VACUUM | %d | %.2f | %.1f× |" % (
            st["strobe_file_bytes"], st["strobe_file_bytes_per_sample"],
            st["strobe_file_bytes_per_sample"] / sb))
        if "strobe_fixed_bytes" in st:
            w("| strobe: whole file less its fixed part (the same store with no blocks: %d bytes) "
              "| %d | %.2f | %.1f× |" % (
                  st["strobe_fixed_bytes"], st["strobe_file_bytes"] - st["strobe_fixed_bytes"],
                  st["strobe_marginal_bytes_per_sample"], st["strobe_marginal_bytes_per_sample"] / sb))
        w("| plain SQLite rows (ts, series TEXT, value) + index(series, ts) | %d | %.1f | %.0f× |" % (
            st["plain_text_bytes"], st["plain_text_bytes_per_sample"], st["plain_text_bytes_per_sample"] / sb))
        w("| plain SQLite rows (ts, series_id, value) + index(series_id, ts) | %d | %.1f | %.0f× |" % (
            st["plain_id_bytes"], st["plain_id_bytes_per_sample"], st["plain_id_bytes_per_sample"] / sb))
        w("| SageMaker system-metrics JSON lines | %d | %.1f | %.0f× |" % (
            st["jsonl_bytes"], st["jsonl_bytes_per_sample"], st["jsonl_bytes_per_sample"] / sb))
        w("| Gorilla (paper) | | 1.37 | %.1f× |" % (1.37 / sb))
        w("")
        w("| check | target | measured | verdict |")
        w("|---|---|---|---|")
        w("| strobe block data | ≤ 1.5 B/sample | %.3f | %s |" % (sb, verdict(sb <= 1.5)))
        w("| strobe whole file | ≤ 1.5 B/sample | %.2f | %s |" % (
            st["strobe_file_bytes_per_sample"], verdict(st["strobe_file_bytes_per_sample"] <= 1.5)))
        if "strobe_marginal_bytes_per_sample" in st:
            mb = st["strobe_marginal_bytes_per_sample"]
            w("| strobe file, growth per sample (fixed part taken off) | ≤ 1.5 B/sample | %.2f | %s |" % (
                mb, verdict(mb <= 1.5)))
        if st.get("events"):
            be = st["event_bytes"] / st["events"]
            w("| framework events, block data (%d events, %d steps) | ≤ 8 B/event | %.2f | %s |" % (
                st["events"], st["steps"], be, verdict(be <= 8)))
        w("")
        cf = st.get("codec_formats")
        if cf:
            fmt1, fmt2 = cf["format1"], cf["format2"]
            w("The run's own %d points of %d series, encoded again in each codec format, "
              "as the recorder cuts blocks (`bench/codec_formats`, medians of 5):" % (
                  cf["points"], cf["series"]))
            w("")
            w("| format | B/point | blocks | encode ns/point | decode ns/point |")
            w("|---|---:|---:|---:|---:|")
            for name, f in (("1: Gorilla, XOR (older stores)", fmt1),
                            ("2: scaled integers, Rice (written now)", fmt2)):
                w("| %s | %.3f | %d | %.1f | %.1f |" % (
                    name, f["bytes_per_point"], f["blocks"], f["encode_ns_per_point"],
                    f["decode_ns_per_point"]))
            w("| format 1 ÷ format 2 | %.2f× | | %.2f× | %.2f× |" % (
                fmt1["bytes_per_point"] / fmt2["bytes_per_point"],
                fmt1["encode_ns_per_point"] / fmt2["encode_ns_per_point"],
                fmt1["decode_ns_per_point"] / fmt2["decode_ns_per_point"]))
            w("")
        bs = st.get("by_series", [])
        if bs:
            bands = [("< 0.5 B/point", 0, 0.5), ("0.5-2 B/point", 0.5, 2), ("2-5 B/point", 2, 5),
                     ("≥ 5 B/point", 5, 1e9)]
            w("Where strobe's bytes go (block data by series):")
            w("")
            w("| series | count | points | bytes | share of bytes |")
            w("|---|---:|---:|---:|---:|")
            total = sum(x["bytes"] for x in bs) or 1
            for label, lo, hi in bands:
                sel = [x for x in bs if lo <= x["bytes"] / max(x["points"], 1) < hi]
                w("| %s | %d | %d | %d | %.0f %% |" % (
                    label, len(sel), sum(x["points"] for x in sel), sum(x["bytes"] for x in sel),
                    100 * sum(x["bytes"] for x in sel) / total))
            w("")
            w("Costliest: %s." % ", ".join("`%s` %.1f B/point" % (x["series"], x["bytes"] / x["points"])
                                           for x in bs[:6]))
            w("")
        w("A SageMaker line as converted: `%s`" % st["jsonl_example"])
        w("")
    print("\n".join(o))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("machine")
    p = sub.add_parser("sadc")
    p.add_argument("--count", type=int, default=30)
    p.add_argument("--interval", type=int, default=1)
    p = sub.add_parser("rate")
    p.add_argument("--strobe", required=True)
    p.add_argument("--interval", required=True)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--tree", type=int, default=1)
    p.add_argument("--proc-source", default="auto")
    p = sub.add_parser("storage")
    p.add_argument("--strobe", required=True)
    p.add_argument("--seconds", type=float, default=30)
    p = sub.add_parser("report")
    p.add_argument("dir")
    a = ap.parse_args()
    {"machine": cmd_machine, "sadc": cmd_sadc, "rate": cmd_rate, "storage": cmd_storage,
     "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
