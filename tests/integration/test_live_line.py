#!/usr/bin/python3
"""The live status line: on a terminal it refreshes at most once a second; it
never appears when stderr is not a terminal, nor with --quiet."""
import os
import pty
import re
import subprocess
import time

from strobetest import *

db = store_path()

def under_pty(args):
    master, slave = pty.openpty()
    p = subprocess.Popen([STROBE, "run", f"--store={db}"] + args, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=30)
    os.close(master)
    return p.returncode, out.decode(errors="replace")

rc, out = under_pty(["--", "sleep", "3.2"])
lines = out.count("\r\x1b[K")
check("on a terminal: a live line", rc == 0 and "samples" in out and "cpu" in out, repr(out[-300:]))
check("refreshed at most once a second (3 s run: at most 4 updates + 1 clear)", 2 <= lines <= 5, lines)
check("cleared at the end, summary printed", "see 'strobe show" in out, repr(out[-200:]))
# The job's output and the status line share the terminal's line: the status
# line is erased before the job's bytes, and never drawn over a line the job
# left open (a progress bar), whose rest must follow it unbroken.
job = ("for i in 1 2 3; do echo line $i; sleep 0.7; done; "
       "printf 'progress 50%%'; sleep 2.3; echo ' done'; sleep 0.3; echo to-stderr >&2")
rc, out = under_pty(["--", "sh", "-c", job])
check("with job output: finished, and a live line was drawn", rc == 0 and "samples" in out,
      repr(out[-300:]))
starts = [out[max(0, i - 4):i] for i in (out.find("line 1"), out.find("line 2"), out.find("line 3"),
                                         out.find("progress"), out.find("to-stderr"))]
check("each job line starts a line of its own, the status line erased before it",
      all(i.endswith("\n") or i.endswith("\x1b[K") or i == "" for i in starts), starts)
check("no job byte written after the status text", not re.search(r"  \d+ samples[^\r]", out),
      repr(out))
check("a progress line the job left open is not drawn over: its rest follows unbroken",
      "progress 50% done" in out, repr(out))
rc, out = under_pty(["--quiet", "--", "sleep", "1.5"])
check("--quiet: nothing from strobe on the terminal", rc == 0 and "strobe" not in out, repr(out))
p = subprocess.run([STROBE, "run", f"--store={db}", "--", "sleep", "1.5"], capture_output=True, text=True)
check("stderr not a terminal: no live line", "\r" not in p.stderr and "\x1b" not in p.stderr, repr(p.stderr))
done()
