#!/usr/bin/python3
"""--proc-root and --sys-root point every collector at a fixture tree, end to
end through strobe run: the host numbers come from the fixture, not the host."""
import os

from strobetest import *

db = store_path()
root = os.path.join(os.getcwd(), "tests", "data", "proc-a", "t0")
p = run(db, "sleep", "0.5", opts=("--proc-root", os.path.join(root, "proc"),
                                  "--sys-root", os.path.join(root, "sys")))
check("run with fixture roots finishes", p.returncode == 0, p.stderr)
r = show(db)
m = r["metrics"]
check("mem.total_bytes is the fixture's MemTotal (8000000 kB)",
      m["mem.total_bytes"]["max"] == 8000000 * 1024, m.get("mem.total_bytes"))
# /proc/stat of a static tree counts no tick between frames: that is no
# reading at all, not 0 % (the unit tests read the fixture's two cores)
check("a static tree gives no CPU reading rather than a false 0 %",
      not [k for k in m if k.startswith("cpu.")], sorted(k for k in m if k.startswith("cpu.")))
whole = set(os.listdir(os.path.join(root, "sys", "block")))
devs = {k.split("dev=")[1].rstrip("}") for k in m if k.startswith("disk.util{")}
check("disks: whole disks of the fixture's /sys/block only (no partitions)",
      devs and devs <= whole, f"{sorted(devs)} vs {sorted(whole)}")
p = strobe("run", "--quiet", "--proc-root", "/nonexistent", "--", "true", store=db)
check("a missing proc root is one line, exit 125", p.returncode == 125 and
      len(p.stderr.strip().splitlines()) == 1, p.stderr)
done()
