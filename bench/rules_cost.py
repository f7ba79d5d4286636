#!/usr/bin/env python3
"""The cost of strobe's bottleneck rules, against the issue's budgets:

  offline: every rule over a synthetic 24 h run (100 series at 10 Hz, 86.4 M
           points, 1 M steps of events; bench/rules_synth.c) in <= 5 s;
  live:    evaluating the rules while recording adds <= 1 % of one core at
           the defaults.

(a) Offline: the run is generated once (kept in a cache directory, keyed by
    the generator's binary and arguments, so a second invocation reuses it),
    then `strobe rules --store S --json RUN` runs N times: wall time and the
    child's CPU time (wait4 rusage), medians; `strobe show RUN` on the same
    run for context.
(b) Live, idle job: `strobe run --quiet -- sleep S` at the default rules and
    with `--rules none`, interleaved (the order alternates each round):
    strobe's CPU from wait4 (it includes `sleep`, which is nothing) and the
    run's own strobe.cpu mean from `show --json`; the difference as % of one
    core.
(c) Live, a real training job: the same pair with examples/train.py; here
    the wait4 figure includes the training, so only the recorder's own CPU
    (strobe.cpu, mean x duration) is compared.

    bench/rules_cost.py --strobe BIN [--synth BIN] [--quick] [--json OUT] [--cache DIR]

Prints a markdown section on stdout and writes the raw figures to --json
(default bench/results/raw/rules_cost.json). Exits 3, with one line saying
so, when the strobe under test has no `rules` command or no `run --rules`
yet; any other failure exits 1.
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
NOT_AVAILABLE = 3

OFFLINE_TARGET_S = 5.0
LIVE_TARGET_PCT = 1.0


def note(msg):
    print(f"rules_cost: {msg}", file=sys.stderr, flush=True)


def fail(msg, code=1):
    print(f"rules_cost: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def run_rusage_quiet(argv, **kw):
    """Run argv to completion, its output to DEVNULL unless kw says otherwise
    (never a pipe: wait4 must be what reaps it, for its rusage):
    (returncode, user + sys CPU s, wall s)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=kw.pop("stdout", subprocess.DEVNULL),
                         stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime, time.monotonic() - t0


def run_capture(argv, out_path, **kw):
    """Run argv with stdout to a file and stderr to another (so wait4 can reap
    it directly): (rc, cpu_s, wall_s, stdout, stderr)."""
    err_path = out_path + ".err"
    with open(out_path, "w") as fo, open(err_path, "w") as fe:
        rc, cpu, wall = run_rusage_quiet(argv, stdout=fo, stderr=fe, **kw)
    with open(out_path) as f:
        out = f.read()
    with open(err_path) as f:
        err = f.read()
    return rc, cpu, wall, out, err


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(v, spec=".2f"):
    return "n/a" if v is None else format(v, spec)


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict(ok, quick):
    if quick:
        return "(quick: no verdict)"
    return "**met**" if ok else "**missed**"


# ---- what the strobe under test can do -----------------------------------------

def probe_offline(strobe):
    """None, or why `strobe rules` cannot be benchmarked yet."""
    p = subprocess.run([strobe, "rules", "--list", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return (f"'strobe rules' is not there yet ({p.stderr.strip() or 'exit %d' % p.returncode}); "
                "the offline benchmark needs `strobe rules [--store S] [--json] RUN`")
    return None


def probe_live(strobe, tmp):
    """None, or why `strobe run --rules` cannot be benchmarked yet."""
    db = os.path.join(tmp, "probe.db")
    p = subprocess.run([strobe, "run", "--store", db, "--quiet", "--rules", "none", "--", "true"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return (f"'strobe run --rules none' does not work yet ({p.stderr.strip()}); "
                "the live benchmark needs `strobe run --rules none|LIST`")
    return None


def show_json(strobe, store, run):
    p = subprocess.run([strobe, "show", "--store", store, "--json", run], capture_output=True,
                       text=True)
    if p.returncode != 0:
        fail(f"strobe show {run} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


# ---- (a) offline ---------------------------------------------------------------

def synth_store(synth, args, cache_dir):
    """Path and run id of the synthetic store, generated unless cached."""
    h = hashlib.sha256()
    with open(synth, "rb") as f:
        h.update(f.read())
    h.update(" ".join(args).encode())
    key = h.hexdigest()[:16]
    os.makedirs(cache_dir, exist_ok=True)
    db = os.path.join(cache_dir, f"rules-synth-{key}.db")
    meta = db + ".json"
    if os.path.exists(db) and os.path.exists(meta):
        with open(meta) as f:
            info = json.load(f)
        note(f"synthetic run {info['run']} from the cache ({db})")
        return db, info, True
    for old in os.listdir(cache_dir):  # stale generations: another binary or other arguments
        if old.startswith("rules-synth-"):
            os.unlink(os.path.join(cache_dir, old))
    note(f"generating the synthetic run: {os.path.basename(synth)} {' '.join(args)}")
    t0 = time.monotonic()
    p = subprocess.run([synth, "--store", db] + args, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        fail(f"rules_synth failed ({p.returncode}): {p.stderr.strip()}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    info["generate_wall_s"] = wall
    with open(meta, "w") as f:
        json.dump(info, f)
    return db, info, False


def summarize_rules(out):
    """What `strobe rules --json` found, in a few fields (whatever its exact
    shape: only the keys present are read)."""
    try:
        d = json.loads(out)
    except ValueError:
        return {"parse_error": out[:200]}
    rules = d.get("rules") or []
    s = {
        "interval_s": d.get("interval_s"),
        "rules": len(rules),
        "findings": len(d.get("findings") or []),
        "dropped": d.get("dropped"),
        "status": {},
    }
    for r in rules:
        if isinstance(r, dict) and "rule" in r:
            s["status"][r["rule"]] = [r.get("status"), r.get("violations")]
    return s


def offline(a, tmp):
    hours, steps = (1, 41667) if a.quick else (24, 1000000)
    args = ["--hours", str(hours), "--steps", str(steps), "--seed", "1"]
    if a.worker_events:
        args.append("--worker-events")
    db, info, cached = synth_store(a.synth, args, a.cache or os.path.join(tmp, "cache"))
    run = info["run"]
    reps = 1 if a.quick else a.reps
    times = []
    found = None
    for i in range(reps):
        rc, cpu, wall, out, err = run_capture([a.strobe, "rules", "--store", db, "--json", run],
                                              os.path.join(tmp, "rules.out"))
        if rc != 0:
            fail(f"strobe rules failed ({rc}): {err.strip()[-500:]}")
        times.append({"wall_s": wall, "cpu_s": cpu})
        found = summarize_rules(out)
        note(f"offline {i + 1}/{reps}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    show_times = []
    for i in range(1 if a.quick else 3):
        rc, cpu, wall = run_rusage_quiet([a.strobe, "show", "--store", db, run])
        if rc != 0:
            fail(f"strobe show failed ({rc})")
        show_times.append({"wall_s": wall, "cpu_s": cpu})
    return {
        "hours": hours, "steps": steps, "store": db, "cached": cached, "synth": info,
        "store_bytes": info.get("store_bytes"),
        "rules_runs": times,
        "rules_wall_s": med([t["wall_s"] for t in times]),
        "rules_cpu_s": med([t["cpu_s"] for t in times]),
        "show_runs": show_times,
        "show_wall_s": med([t["wall_s"] for t in show_times]),
        "show_cpu_s": med([t["cpu_s"] for t in show_times]),
        "result": found,
    }


# ---- (b), (c) live ----------------------------------------------------------------

def live_pair(a, tmp, job, label, rounds):
    """rounds of (default rules, --rules none), the order alternating."""
    modes = {"default": [], "none": []}
    for r in range(rounds):
        order = ["none", "default"] if r % 2 == 0 else ["default", "none"]
        for mode in order:
            db = os.path.join(tmp, f"live-{label}-{mode}-{r}.db")
            cmd = [a.strobe, "run", "--store", db, "--quiet"]
            if mode == "none":
                cmd += ["--rules", "none"]
            cmd += ["--"] + job
            rc, cpu, wall = run_rusage_quiet(cmd, cwd=ROOT)
            if rc != 0:
                fail(f"{label}: strobe run ({mode}) exited {rc}: {' '.join(cmd)}")
            d = show_json(a.strobe, db, "last")
            sc = d["metrics"].get("strobe.cpu", {})
            mean_pct = sc.get("mean")
            dur = d.get("duration_s") or wall
            modes[mode].append({
                "rusage_cpu_s": cpu, "wall_s": wall, "duration_s": dur,
                "rusage_pct": cpu / wall * 100,
                "strobe_cpu_mean_pct": mean_pct,
                "strobe_cpu_s": mean_pct * dur / 100 if mean_pct is not None else None,
                "samples": d.get("samples"), "missed": d.get("missed"),
                "events": d.get("events"),
            })
            os.unlink(db)
            note(f"{label} round {r + 1}/{rounds} {mode}: {cpu:.3f} s CPU (wait4) in {wall:.1f} s, "
                 f"strobe.cpu mean {fmt(mean_pct, '.3f')} %")
    out = {"rounds": rounds, "job": job, "runs": modes}
    for key in ("rusage_cpu_s", "rusage_pct", "strobe_cpu_mean_pct", "strobe_cpu_s", "wall_s"):
        for mode in modes:
            out[f"{mode}_{key}"] = med([x[key] for x in modes[mode]])
    wall = out["default_wall_s"]
    if out["default_rusage_cpu_s"] is not None and out["none_rusage_cpu_s"] is not None:
        out["rusage_delta_pct"] = (out["default_rusage_cpu_s"] - out["none_rusage_cpu_s"]) / wall * 100
    if out["default_strobe_cpu_mean_pct"] is not None and out["none_strobe_cpu_mean_pct"] is not None:
        out["strobe_cpu_delta_pct"] = out["default_strobe_cpu_mean_pct"] - out["none_strobe_cpu_mean_pct"]
    # paired: each round's difference, then the median
    pairs = [d["strobe_cpu_mean_pct"] - n["strobe_cpu_mean_pct"]
             for d, n in zip(modes["default"], modes["none"])
             if d["strobe_cpu_mean_pct"] is not None and n["strobe_cpu_mean_pct"] is not None]
    out["strobe_cpu_delta_paired_pct"] = med(pairs)
    return out


# ---- report ----------------------------------------------------------------------

def report(res, quick):
    o = []
    w = o.append
    off = res.get("offline")
    if off:
        report_offline(off, res, quick, w)
    else:
        w("| check | target | measured (median) | verdict |")
        w("|---|---|---|---|")
        report_live_rows(res, quick, w)
        w("")
    report_live(res, w)
    if quick:
        w("(--quick: a 1 h run timed once and short live runs: a smoke test, not numbers.)")
    return "\n".join(o)


def report_live_rows(res, quick, w):
    for key, label in (("sleep", "an idle job (`sleep`)"), ("train", "examples/train.py")):
        lv = res.get(f"live_{key}")
        if not lv:
            continue
        d = lv.get("strobe_cpu_delta_pct")
        ok = d is not None and d <= LIVE_TARGET_PCT
        w(f"| live rules at defaults, {label}: strobe.cpu default − none | ≤ {LIVE_TARGET_PCT:.0f} % "
          f"of one core | {fmt(d, '+.3f')} % (paired {fmt(lv.get('strobe_cpu_delta_paired_pct'), '+.3f')} %) "
          f"| {verdict(ok, quick)} |")


def report_offline(off, res, quick, w):
    syn = off["synth"]
    w(f"All rules over a synthetic {off['hours']} h run (`bench/rules_synth.c`, seed 1: "
      f"{syn['series']} series at 10 Hz, {syn['points'] / 1e6:.1f} M points, "
      f"{syn['steps']:,} steps, {syn['events'] / 1e6:.1f} M events in {syn['event_blocks']:,} "
      f"blocks; store {syn['store_bytes'] / 2**20:.0f} MiB"
      + (f", generated in {syn['generate_wall_s']:.1f} s" if "generate_wall_s" in syn else "")
      + (", from the cache" if off["cached"] else "") + ").")
    w("")
    w("| check | target | measured (median) | verdict |")
    w("|---|---|---|---|")
    ok = off["rules_wall_s"] is not None and off["rules_wall_s"] <= OFFLINE_TARGET_S
    n = len(off["rules_runs"])
    w(f"| `strobe rules --json` over {off['hours']} h, wall ({n} run{'s' if n != 1 else ''}) | "
      f"≤ {OFFLINE_TARGET_S:.0f} s (24 h) | {fmt(off['rules_wall_s'])} s "
      f"(CPU {fmt(off['rules_cpu_s'])} s) | {verdict(ok, quick)} |")
    report_live_rows(res, quick, w)
    w("")
    w(f"For context: `strobe show` on the same run takes {fmt(off['show_wall_s'])} s wall "
      f"({fmt(off['show_cpu_s'])} s CPU; it decodes every block for percentiles).")
    r = off.get("result") or {}
    if r.get("status"):
        fired = [k for k, v in r["status"].items() if v[0] == "fired"]
        w(f"The evaluation: {r.get('rules')} rules in windows of {fmt(r.get('interval_s'), 'g')} s, "
          f"{r.get('findings')} findings, {r.get('dropped')} inputs dropped; fired: "
          f"{', '.join(fired) if fired else 'none'}.")
    w("")


def report_live(res, w):
    lv = res.get("live_sleep")
    if lv:
        w(f"Live, `strobe run --quiet -- sleep {lv['job'][-1]}`, {plural(lv['rounds'], 'round')} per mode, "
          "interleaved (strobe's CPU by wait4 includes its start-up probes, alike in both):")
        w("")
        w("| rules | strobe CPU, wait4 (s) | % of one core | strobe.cpu mean (%) | runs (strobe.cpu %) |")
        w("|---|---:|---:|---:|---|")
        for mode in ("none", "default"):
            runs = ", ".join(fmt(x["strobe_cpu_mean_pct"], ".3f") for x in lv["runs"][mode])
            w(f"| {mode} | {fmt(lv[f'{mode}_rusage_cpu_s'], '.3f')} | {fmt(lv[f'{mode}_rusage_pct'], '.3f')} | "
              f"{fmt(lv[f'{mode}_strobe_cpu_mean_pct'], '.3f')} | {runs} |")
        w("")
        w(f"Difference: {fmt(lv.get('rusage_delta_pct'), '+.3f')} % of one core by wait4, "
          f"{fmt(lv.get('strobe_cpu_delta_pct'), '+.3f')} % by strobe.cpu.")
        w("")
    lv = res.get("live_train")
    if lv:
        w(f"Live, a real training job (`{' '.join(lv['job'][1:])}`), {plural(lv['rounds'], 'round')} per mode; "
          "the recorder's own CPU only (strobe.cpu mean × duration; wait4 would include the training):")
        w("")
        w("| rules | strobe CPU (s) | strobe.cpu mean (%) | events | runs (strobe.cpu %) |")
        w("|---|---:|---:|---:|---|")
        for mode in ("none", "default"):
            runs = ", ".join(fmt(x["strobe_cpu_mean_pct"], ".3f") for x in lv["runs"][mode])
            ev = med([x["events"] for x in lv["runs"][mode]])
            w(f"| {mode} | {fmt(lv[f'{mode}_strobe_cpu_s'], '.3f')} | "
              f"{fmt(lv[f'{mode}_strobe_cpu_mean_pct'], '.3f')} | {fmt(ev, '.0f')} | {runs} |")
        w("")
        w(f"Difference: {fmt(lv.get('strobe_cpu_delta_pct'), '+.3f')} % of one core "
          f"(paired {fmt(lv.get('strobe_cpu_delta_paired_pct'), '+.3f')} %).")
        w("")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--strobe", default=os.path.join(ROOT, "build", "strobe"))
    ap.add_argument("--synth", help="rules_synth binary (default: beside strobe, bench/rules_synth)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=5, help="timed offline evaluations")
    ap.add_argument("--rounds", type=int, default=3, help="live rounds per mode")
    ap.add_argument("--seconds", type=float, default=60, help="the idle job's length")
    ap.add_argument("--train-seconds", type=float, default=30)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "raw", "rules_cost.json"))
    ap.add_argument("--cache", help="where the synthetic store is kept between runs "
                    "(default: $TMPDIR/strobe-bench-rules)")
    ap.add_argument("--no-cache", action="store_true", help="generate into a temporary directory")
    ap.add_argument("--skip-live", action="store_true")
    ap.add_argument("--worker-events", action="store_true",
                    help="the synthetic run's data-loader workers write events too")
    a = ap.parse_args()
    a.strobe = os.path.abspath(a.strobe)
    a.synth = os.path.abspath(a.synth or os.path.join(os.path.dirname(a.strobe), "bench",
                                                      "rules_synth"))
    for f in (a.strobe, a.synth):
        if not os.access(f, os.X_OK):
            fail(f"{f} is missing; run 'make' first")
    tmp = tempfile.mkdtemp(prefix="strobe-bench-rules-")
    if not a.no_cache and not a.cache:
        a.cache = os.path.join(tempfile.gettempdir(), "strobe-bench-rules")
    missing = []
    res = {"quick": a.quick, "strobe": a.strobe,
           "targets": {"offline_s": OFFLINE_TARGET_S, "live_pct_of_core": LIVE_TARGET_PCT}}
    try:
        why = probe_offline(a.strobe)
        if why:
            missing.append(why)
        else:
            res["offline"] = offline(a, tmp)
        why = None if a.skip_live else probe_live(a.strobe, tmp)
        if why:
            missing.append(why)
        elif not a.skip_live:
            rounds = 1 if a.quick else a.rounds
            secs = 5 if a.quick else a.seconds
            res["live_sleep"] = live_pair(a, tmp, ["sleep", f"{secs:g}"], "sleep", rounds)
            tsecs = 8 if a.quick else a.train_seconds
            res["live_train"] = live_pair(a, tmp, [PY, "examples/train.py", "--seconds", f"{tsecs:g}"], "train",
                                          rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["missing"] = missing
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print(report(res, a.quick))
    for why in missing:
        print(f"\n**Not measured**: {why}.")
        note(why)
    if missing:
        sys.exit(NOT_AVAILABLE)


if __name__ == "__main__":
    main()
