#!/usr/bin/python3
"""A child that writes 50 MB reads ~ 50 MB of written bytes (±10 %), both at
the storage layer (write_bytes, counted as pages are dirtied) and at the
system-call layer (wchar), and a child that reads a file reads it back."""
import os

from strobetest import *

db = store_path()
target = os.path.join(TMP, "fifty.bin")
size = 50 * 1000 * 1000
job = f"""
import os, time
fd = os.open({target!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
chunk = b"x" * (1 << 20)
left = {size}
while left > 0:
    n = os.write(fd, chunk[:min(left, len(chunk))])
    left -= n
    time.sleep(0.005)
os.fsync(fd)
os.close(fd)
time.sleep(0.3)
"""
p = run(db, PYTHON, "-c", job)
check("writer finished", p.returncode == 0, p.stderr)
r = show(db)
w = r["metrics"]["proc.write_bytes_per_s"]["total"]
wc = r["metrics"]["proc.wchar_per_s"]["total"]
near("proc.write_bytes total ~ 50 MB (storage layer)", w / 1e6, 50.0, 5.0, "MB")
near("proc.wchar total ~ 50 MB (write calls)", wc / 1e6, 50.0, 5.0, "MB")
# the same bytes, seen per process
per = [m for k, m in r["metrics"].items() if k.startswith("proc.write_bytes_per_s{")]
near("the writer's own series holds them", max(m["total"] for m in per) / 1e6, 50.0, 5.0, "MB")
dev_total = sum(m["total"] for k, m in r["metrics"].items() if k.startswith("disk.write_bytes_per_s{"))
check("the disk saw at least the 50 MB (plus journal)", dev_total >= 45e6 or
      not os.path.realpath(TMP).startswith("/tmp"), f"{dev_total / 1e6:.1f} MB")

job = f"""
import os
os.posix_fadvise(os.open({target!r}, os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)
with open({target!r}, "rb") as f:
    while f.read(1 << 20):
        pass
"""
p = run(db, PYTHON, "-c", job)
r = show(db)
near("proc.rchar total ~ 50 MB (read calls)", r["metrics"]["proc.rchar_per_s"]["total"] / 1e6, 50.0, 5.0, "MB")
done()
