#!/usr/bin/python3
"""Where a recorder's CPU goes at a given interval: `strobe run --interval I
-- sleep S` under `perf record -e cpu-clock -g` (a software clock, so it
works where hardware counters do not), the samples split by who spends them
(the kernel, strobe's own code, libc, the BPF program) and the kernel's part
by what it does (each /proc or /sys file's show function, the timer
wake-up, the BPF calls). A diagnostic beside make bench, not a benchmark:
perf's own sampling adds to what it measures, so the shares are the point,
the totals only roughly.

    bench/profile_rate.py [--interval 1ms] [--seconds 8] [--strobe build/strobe]
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

# a kernel frame on the stack names the work; the first that matches wins
KERNEL_WORK = [
    ("bpf_prog_load", "BPF program load (once)"),
    ("bpf_prog_test_run_syscall", "BPF tree read (test run)"),
    ("__sys_bpf", "other bpf calls"),
    ("meminfo_proc_show", "/proc/meminfo"),
    ("show_stat", "/proc/stat"),
    ("psi_show", "/proc/pressure/*"),
    ("dev_seq_show", "/proc/net/dev"),
    ("part_stat_show", "/sys/block/*/stat"),
    ("cgroup_seqfile_show", "cgroup files"),
    ("proc_pid_statm", "/proc/PID/statm"),
    ("proc_single_show", "/proc/PID/* other"),
    ("seq_read_iter", "other seq_file reads"),
    ("do_epoll_wait", "timer wake-up (epoll_wait)"),
    ("timerfd_read_iter", "timer wake-up (timerfd read)"),
    ("__x64_sys_clock_gettime", "clock_gettime (own CPU time)"),
    ("__x64_sys_pwrite64", "store writes"),
    ("__x64_sys_fdatasync", "store writes"),
    ("__x64_sys_fsync", "store writes"),
    ("asm_exc_page_fault", "page faults"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", default="1ms")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--strobe", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "strobe"))
    ap.add_argument("--freq", type=int, default=5000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(a.freq), "-g", "-o", data,
               "--", a.strobe, "run", "--quiet", "--no-report", "--store",
               os.path.join(tmp, "p.db"), "--interval", a.interval, "--", "sleep",
               str(a.seconds)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"profile_rate: perf record failed: {p.stderr.strip()[-300:]}")
        script = subprocess.run(["perf", "script", "-i", data], capture_output=True,
                                text=True).stdout
    by_dso, by_work, total = collections.Counter(), collections.Counter(), 0
    for stack in script.split("\n\n"):
        lines = stack.strip().split("\n")
        if len(lines) < 2 or not lines[0].startswith("strobe"):
            continue  # the job, lscpu, git: not the recorder
        frames = []
        for line in lines[1:]:
            parts = line.split(None, 2)
            if len(parts) >= 3:
                frames.append((parts[1].split("+")[0], parts[2]))
        if not frames:
            continue
        total += 1
        leaf_dso = frames[0][1]
        kind = ("kernel" if "kernel" in leaf_dso else "strobe" if leaf_dso.endswith("/strobe)")
                else "BPF program" if "bpf_prog" in leaf_dso else
                os.path.basename(leaf_dso.strip("()")).split(".so")[0])
        by_dso[kind] += 1
        if kind == "kernel":
            names = {f for f, _ in frames}
            work = next((label for sym, label in KERNEL_WORK if sym in names), "other kernel")
            by_work[work] += 1
    if not total:
        sys.exit("profile_rate: no samples of the recorder")
    ms = 1000.0 * total / a.freq
    print(f"strobe run --interval {a.interval} -- sleep {a.seconds:g}: {total} samples, "
          f"about {ms:.0f} ms of CPU ({100 * ms / 1000 / a.seconds:.1f} % of a core, perf's own "
          f"sampling included)")
    print("\nwho spends it")
    for k, v in by_dso.most_common():
        print(f"  {100 * v / total:5.1f} %  {k}")
    print("\nthe kernel's part, by what it does (share of all samples)")
    for k, v in by_work.most_common():
        print(f"  {100 * v / total:5.1f} %  {k}")


if __name__ == "__main__":
    main()
