#!/usr/bin/python3
"""The peer sampler: psutil, the way SageMaker's smdebug, radT and Umlaut sample.

Collects the metric set strobe's collectors collect, at a fixed interval, for
a process tree of 10 sleeping processes that it forks itself (a root with 9
children, as bench/sample_cost.c does):

  host     cpu_percent(percpu) + cpu_times_percent() (total), virtual_memory,
           swap_memory, disk_io_counters(perdisk), net_io_counters(pernic),
           /proc/pressure/{cpu,memory,io}, the cgroup's memory and cpu.stat files
  tree     children(recursive=True) discovery each sample, then per process
           (inside oneshot()): cpu_times, memory_info, num_threads, io_counters,
           num_ctx_switches, ppid, name; rates from deltas, and tree totals

Each sample's values are appended to in-memory lists (a series per metric),
the cheapest store there is: smdebug writes JSON lines and radT posts to
MLflow on top of this, which is not counted.

CPU per sample is time.thread_time_ns() around the sampling code; the median
over all samples is reported, as JSON on stdout.

    psutil_sampler.py [--interval S] [--samples N] [--warmup W]
"""
import argparse
import ctypes
import json
import os
import signal
import statistics
import sys
import time

import psutil

TREE_SIZE = 10
PR_SET_PDEATHSIG = 1


def die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def sleep_forever():
    while True:
        signal.pause()


def start_tree():
    """Fork a root that forks TREE_SIZE-1 children; returns the root's pid."""
    r, w = os.pipe()
    root = os.fork()
    if root == 0:
        die_with_parent()
        os.setpgid(0, 0)
        os.close(r)
        for _ in range(TREE_SIZE - 1):
            if os.fork() == 0:
                die_with_parent()
                os.close(w)
                sleep_forever()
        os.write(w, b"1")
        os.close(w)
        sleep_forever()
    os.close(w)
    os.read(r, 1)
    os.close(r)
    return root


def stop_tree(root):
    for target in (-root, root):
        try:
            os.kill(target, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os.waitpid(root, 0)


def cgroup_files():
    """The cgroup memory and cpu files of this process (v2, else v1)."""
    out = {}
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return out
    paths = {}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for ctrl in parts[1].split(",") if parts[1] else [""]:
            paths[ctrl] = parts[2]
    v2 = "/sys/fs/cgroup" + paths.get("", "/").rstrip("/")
    if os.path.exists(v2 + "/memory.current"):
        out["mem_used"] = v2 + "/memory.current"
        out["mem_limit"] = v2 + "/memory.max"
    elif "memory" in paths:
        base = "/sys/fs/cgroup/memory" + paths["memory"].rstrip("/")
        out["mem_used"] = base + "/memory.usage_in_bytes"
        out["mem_limit"] = base + "/memory.limit_in_bytes"
    if os.path.exists(v2 + "/cpu.stat") and "throttled_usec" in open(v2 + "/cpu.stat").read():
        out["cpu_stat"] = v2 + "/cpu.stat"
    elif "cpu" in paths:
        for mnt in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
            p = mnt + paths["cpu"].rstrip("/") + "/cpu.stat"
            if os.path.exists(p):
                out["cpu_stat"] = p
                break
    return {k: v for k, v in out.items() if os.path.exists(v)}


def read_psi(path):
    """total= of the some and full lines, in µs."""
    some = full = 0
    with open(path) as f:
        for line in f:
            kind, *fields = line.split()
            total = int(fields[-1].split("=")[1])
            if kind == "some":
                some = total
            else:
                full = total
    return some, full


class Sampler:
    def __init__(self, root_pid):
        self.root = psutil.Process(root_pid)
        self.series = {}
        self.procs = {}  # pid -> psutil.Process, kept so rates have a base
        self.prev = {}
        self.prev_t = None
        self.cg = cgroup_files()
        self.psi = [p for p in ("/proc/pressure/cpu", "/proc/pressure/memory",
                                "/proc/pressure/io") if os.path.exists(p)]
        psutil.cpu_percent(percpu=True)
        psutil.cpu_times_percent()

    def put(self, name, value):
        s = self.series.get(name)
        if s is None:
            s = self.series[name] = []
        s.append((self.ts, value))

    def rate(self, key, value, dt):
        before = self.prev.get(key)
        self.prev[key] = value
        if before is None or dt <= 0 or value < before:
            return None
        return (value - before) / dt

    def sample(self):
        now = time.monotonic()
        self.ts = time.time()
        dt = now - self.prev_t if self.prev_t is not None else 0.0
        self.prev_t = now
        put = self.put

        # host: cpu
        for i, pct in enumerate(psutil.cpu_percent(percpu=True)):
            put("cpu.util{core=%d}" % i, pct)
        t = psutil.cpu_times_percent()
        put("cpu.util", 100.0 - t.idle - getattr(t, "iowait", 0.0))
        put("cpu.user", t.user + t.nice)
        put("cpu.system", t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))
        put("cpu.iowait", getattr(t, "iowait", 0.0))
        put("cpu.steal", getattr(t, "steal", 0.0))
        # memory, swap
        vm = psutil.virtual_memory()
        put("mem.total_bytes", vm.total)
        put("mem.used_bytes", vm.total - vm.available)
        put("mem.available_bytes", vm.available)
        sw = psutil.swap_memory()
        put("mem.swap_used_bytes", sw.used)
        for key, v in (("mem.swapin_per_s", sw.sin), ("mem.swapout_per_s", sw.sout)):
            r = self.rate(key, v, dt)
            if r is not None:
                put(key, r)
        # pressure
        for path in self.psi:
            res = path.rsplit("/", 1)[1][:3]
            some, full = read_psi(path)
            for kind, v in (("some", some), ("full", full)):
                r = self.rate("psi.%s_%s" % (res, kind), v, dt)
                if r is not None:
                    put("psi.%s_%s" % (res, kind), r / 1e4)
        # disks, interfaces
        for dev, d in psutil.disk_io_counters(perdisk=True).items():
            for key, v in (("disk.read_bytes_per_s", d.read_bytes),
                           ("disk.write_bytes_per_s", d.write_bytes),
                           ("disk.util", getattr(d, "busy_time", 0) * 1e-3 * 100)):
                r = self.rate("%s{dev=%s}" % (key, dev), v, dt)
                if r is not None:
                    put("%s{dev=%s}" % (key, dev), r)
        for nic, n in psutil.net_io_counters(pernic=True).items():
            for key, v in (("net.rx_bytes_per_s", n.bytes_recv), ("net.tx_bytes_per_s", n.bytes_sent)):
                r = self.rate("%s{iface=%s}" % (key, nic), v, dt)
                if r is not None:
                    put("%s{iface=%s}" % (key, nic), r)
        # cgroup
        if "mem_used" in self.cg:
            put("cgroup.mem_used_bytes", int(open(self.cg["mem_used"]).read()))
        if "mem_limit" in self.cg:
            text = open(self.cg["mem_limit"]).read().strip()
            put("cgroup.mem_limit_bytes", float("inf") if text == "max" else int(text))
        if "cpu_stat" in self.cg:
            stat = dict(line.split() for line in open(self.cg["cpu_stat"]))
            r = self.rate("cgroup.throttled_per_s", int(stat.get("nr_throttled", 0)), dt)
            if r is not None:
                put("cgroup.throttled_per_s", r)

        # the process tree
        try:
            found = [self.root] + self.root.children(recursive=True)
        except psutil.NoSuchProcess:
            found = []
        live = {}
        tot_cpu = tot_rss = tot_thr = tot_read = tot_write = tot_ctxt = 0
        for p in found:
            p = self.procs.get(p.pid, p)
            try:
                with p.oneshot():
                    ct = p.cpu_times()
                    mi = p.memory_info()
                    nt = p.num_threads()
                    io = p.io_counters()
                    cs = p.num_ctx_switches()
                    ppid = p.ppid()
                    name = p.name()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            live[p.pid] = p
            tag = "{pid=%d}" % p.pid
            cpu = ct.user + ct.system
            ctxt = cs.voluntary + cs.involuntary
            put("proc.rss_bytes" + tag, mi.rss)
            put("proc.threads" + tag, nt)
            for key, v, scale in (("proc.cpu", cpu, 100.0),
                                  ("proc.read_bytes_per_s", io.read_bytes, 1.0),
                                  ("proc.write_bytes_per_s", io.write_bytes, 1.0),
                                  ("proc.ctx_switches_per_s", ctxt, 1.0)):
                r = self.rate(key + tag, v, dt)
                if r is not None:
                    put(key + tag, r * scale)
            self.prev["meta" + tag] = (ppid, name)
            tot_cpu += cpu + ct.children_user + ct.children_system
            tot_rss += mi.rss
            tot_thr += nt
            tot_read += io.read_bytes
            tot_write += io.write_bytes
            tot_ctxt += ctxt
        self.procs = live
        put("proc.rss_bytes", tot_rss)
        put("proc.threads", tot_thr)
        put("proc.count", len(live))
        for key, v, scale in (("proc.cpu", tot_cpu, 100.0), ("proc.read_bytes_per_s", tot_read, 1.0),
                              ("proc.write_bytes_per_s", tot_write, 1.0),
                              ("proc.ctx_switches_per_s", tot_ctxt, 1.0)):
            r = self.rate(key, v, dt)
            if r is not None:
                put(key, r * scale)
        return len(live)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between samples; 0: back to back")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()

    root = start_tree()
    try:
        s = Sampler(root)
        costs = []
        tracked = 0
        due = time.monotonic()
        for i in range(a.warmup + a.samples):
            if a.interval > 0:
                due += a.interval
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            t0 = time.thread_time_ns()
            tracked = s.sample()
            t1 = time.thread_time_ns()
            if i >= a.warmup:
                costs.append((t1 - t0) / 1e3)
        points = sum(len(v) for v in s.series.values())
    finally:
        stop_tree(root)
    costs.sort()
    out = {
        "interval_s": a.interval,
        "samples": a.samples,
        "procs_tracked": tracked,
        "series": len(s.series),
        "points_per_sample": points / (a.warmup + a.samples),
        "median_us": statistics.median(costs),
        "mean_us": statistics.fmean(costs),
        "p10_us": costs[len(costs) // 10],
        "p90_us": costs[len(costs) * 9 // 10],
        "system_processes": len(psutil.pids()),
        "psutil_version": psutil.__version__,
        "python_version": sys.version.split()[0],
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
