#!/usr/bin/python3
"""bench/sample_cost, the benchmark of a full sample, reports the floor under
a frame from the files the collectors really keep open: every host file a
frame reads (the ones each collector needs, found here independently of
it), none read once a second (/proc/vmstat, the online CPUs), none of one
process's, each once, and their sum; one BPF run over the tree where the
tree is read through BPF; and the same reads paced. Not timed: `make bench`
times it."""
import os
import subprocess

from strobetest import *

BUILD = os.environ.get("STROBE_BUILD", os.path.dirname(os.path.abspath(STROBE)))
COST = os.path.join(BUILD, "bench", "sample_cost")

p = subprocess.run([COST, "--frames", "300", "--reps", "1", "--warmup", "10", "--paced-ms", "10",
                    "--paced-frames", "3"],
                   capture_output=True, text=True, timeout=120)
check("sample_cost runs", p.returncode == 0, p.stderr[-500:])
d = json.loads(p.stdout) if p.returncode == 0 else {}
files = [f["file"] for f in d.get("host_files", [])]
print(f"# host files: {files}")


def whole_disks():
    """The disks the disk collector records: whole disks, bar idle loop and
    ram devices (as host.c admits them)."""
    out = []
    with open("/proc/diskstats") as f:
        for line in f:
            x = line.split()
            name, reads, writes = x[2], int(x[3]), int(x[7])
            if not os.path.exists(f"/sys/block/{name}"):
                continue
            if name.startswith(("loop", "ram")) and reads == 0 and writes == 0:
                continue
            out.append(name)
    return out


want = ["/proc/stat", "/proc/meminfo", "/proc/net/dev"]
want += [f"/proc/pressure/{r}" for r in ("cpu", "memory", "io")
         if os.path.exists(f"/proc/pressure/{r}")]
missing = [w for w in want if w not in files]
check("the floor holds every host file a frame reads", not missing, f"missing {missing} in {files}")
disks = whole_disks()
stats = [f for f in files if f.startswith("/sys/") and f.endswith("/stat") and "/block/" in f]
check("... and one stat file per disk the collector records",
      sorted(os.path.basename(os.path.dirname(f)) for f in stats) == sorted(disks), (stats, disks))
check("... none read once a second", "/proc/vmstat" not in files and
      "/sys/devices/system/cpu/online" not in files, files)
check("... none of one process's", not [f for f in files if f.split("/")[2:3] and
                                         f.split("/")[2].isdigit()], files)
check("... each once", len(files) == len(set(files)), files)
us = [f["us"] for f in d.get("host_files", [])]
check("each read costs something, and the floor is their sum", us and all(u > 0 for u in us) and
      abs(d.get("host_floor_us", -1) - sum(us)) < 1e-3 * len(us), (d.get("host_floor_us"), us))
tree = d.get("tree_bpf_read_us")
if d.get("proc_source") == "bpf":
    check("the tree's BPF run is measured", tree is not None and tree > 0, tree)
else:
    check("no BPF run is reported when the tree is read through procfs", tree == -1, tree)
check("the floor is measured paced too", d.get("paced_floor_p50_us", 0) > 0, d.get("paced_floor_p50_us"))
done()
