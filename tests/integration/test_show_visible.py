#!/usr/bin/python3
"""Stored text printed by show, ls and compare is terminal-safe: a process
name's JSON escapes are decoded (not shown as 'ufffdqnz'), and control
characters and invalid bytes from the job (comm, strobe.log() names) are
shown escaped, never sent raw to the terminal."""
import os
import shutil

from strobetest import *

PKG = os.path.abspath(os.path.join(os.path.dirname(STROBE), "python"))
db = store_path()

# a program whose comm holds an invalid byte, a newline and an ESC
hostile = os.path.join(TMP, "\udcffq\nz\x1b[31m").encode("utf-8", "surrogateescape")
shutil.copy("/bin/sleep", hostile)
p = run(db, hostile, "0.4", opts=("--no-report", "--name", "comm"))
check("the hostile program ran", p.returncode == 0, p.stderr)
out = strobe("show", "comm", store=db).stdout
row = next((l for l in out.splitlines() if l.startswith("  ") and "q" in l), "")
check("show decodes comm's escapes and shows its controls escaped",
      "\ufffdq\\nz\\x1b[31m" in row, repr(row))
check("show prints no raw ESC", "\x1b" not in out, repr(out))

# strobe.log() names with ESC and a newline
code = 'import strobe, time\nstrobe.log("a\\x1b[2Jb\\nc", 1.5)\ntime.sleep(0.3)\n'
env = dict(os.environ, PYTHONPATH=PKG)
p = run(db, PYTHON, "-c", code, opts=("--no-report", "--name", "app"), env=env)
check("the logging job ran", p.returncode == 0, p.stderr)
out = strobe("show", "app", store=db).stdout
app = next((l for l in out.splitlines() if l.startswith("app")), "")
check("show's app line escapes the name's controls", "a\\x1b[2Jb\\nc = 1.5" in app, repr(app))
check("show prints no raw ESC for app names", "\x1b" not in out, repr(out))
for cmd in (["ls"], ["compare", "comm", "app"], ["show", "--json", "app"]):
    p = strobe(*cmd, store=db)
    check(f"'{cmd[0]}' prints no raw ESC", p.returncode == 0 and "\x1b" not in p.stdout,
          f"rc={p.returncode} {p.stderr!r}")
done()
