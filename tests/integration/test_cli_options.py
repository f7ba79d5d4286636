#!/usr/bin/python3
"""Options of 'strobe run' that name things are checked before the job
starts: an unknown collector is one line and exit 125, naming the known ones;
a tag or parameter with an empty value is refused (values are 1 to 200 bytes);
a duration or a number is plain decimal (no hex, exponent or spaces)."""
import os

from strobetest import *

db = store_path()
marker = store_path("marker")
for bad in ("bogus", "cpu,bogus", "cpu,,mem", ""):
    p = strobe("run", "--no-report", "--collectors", bad, "--", "touch", marker, store=db)
    lines = p.stderr.strip().splitlines()
    check(f"--collectors '{bad}': exit 125, one line naming the known collectors",
          p.returncode == 125 and len(lines) == 1 and "cpu, mem, psi" in lines[0],
          f"{p.returncode} {p.stderr!r}")
    check(f"--collectors '{bad}': the job did not start", not os.path.exists(marker))
p = run(db, "true", opts=("--no-report", "--collectors", "cpu,mem"))
check("--collectors cpu,mem records", p.returncode == 0 and "mem.used_bytes" in show(db)["metrics"],
      p.stderr)
p = strobe("run", "--no-report", "--collectors", "cpu,mem", "--", "true", store=db)
check("--collectors without proc: the job reaped is not 'still running'",
      p.returncode == 0 and "still running" not in p.stderr, p.stderr)
for flag in ("--tag", "--param"):
    p = strobe("run", "--no-report", flag, "k=", "--", "touch", marker, store=db)
    check(f"{flag} k=: exit 125, one line", p.returncode == 125 and
          len(p.stderr.strip().splitlines()) == 1 and "1 to 200 bytes" in p.stderr,
          f"{p.returncode} {p.stderr!r}")
    check(f"{flag} k=: the job did not start", not os.path.exists(marker))
for flag in ("--interval", "--gpu-interval", "--rule-interval"):
    for bad in ("0x10", " 100", "100 ", "1e3", "inf"):
        p = strobe("run", "--no-report", flag, bad, "--", "touch", marker, store=db)
        check(f"{flag} '{bad}': exit 125, one line, the job did not start",
              p.returncode == 125 and len(p.stderr.strip().splitlines()) == 1 and
              not os.path.exists(marker), f"{p.returncode} {p.stderr!r}")
for flag in ("--threads", "--rate", "--burst"):
    for bad in ("0x10", " 5", "5 ", "1e2"):
        p = strobe("serve", flag, bad, "--listen", "127.0.0.1:0", store=db, timeout=10)
        check(f"serve {flag} '{bad}': usage, exit 2", p.returncode == 2 and "usage:" in p.stderr,
              f"{p.returncode} {p.stderr!r}")
p = strobe("serve", "--threads", "2.5", "--listen", "127.0.0.1:0", store=db, timeout=10)
check("serve --threads 2.5: not a count, usage, exit 2", p.returncode == 2 and "usage:" in p.stderr,
      f"{p.returncode} {p.stderr!r}")
# an option getopt refuses: one line naming the command, the usage exit
for cmd in ("run", "ls", "show", "logs", "export", "rm", "rules", "report", "trace", "serve",
            "compare", "import sagemaker", "import torch-trace"):
    words = cmd.split()
    usage_rc = 125 if cmd == "run" else 2
    for args, want in ((["--bogus=1"], "unrecognized option '--bogus'"),
                       (["-Z"], "unrecognized option '-Z'"),
                       (["--store"], "option '--store' requires an argument"),
                       (["--help=x"], "option '--help' takes no argument")):
        # a job for run to refuse to start; --store last, or it takes what follows
        job = ["--", "touch", marker] if cmd == "run" and args != ["--store"] else []
        p = strobe(*words, *args, *job, timeout=10)
        line = f"strobe: {cmd}: {want}; see 'strobe {cmd} --help'"
        check(f"{cmd} {' '.join(args)}: one line, exit {usage_rc}",
              p.returncode == usage_rc and p.stderr == line + "\n" and not p.stdout,
              f"{p.returncode} {p.stderr!r}")
check("run: the job did not start", not os.path.exists(marker))
p = strobe("run", "-qZ", "--", "true")
check("a short option inside a cluster is named",
      p.returncode == 125 and p.stderr.startswith("strobe: run: unrecognized option '-Z';"), p.stderr)
p = strobe("ls", "--s", "x")
check("an ambiguous prefix says so", p.returncode == 2 and
      p.stderr.startswith("strobe: ls: ambiguous option '--s';"), p.stderr)
p = strobe("report", "--out")
check("a prefix with no argument is named in full", p.returncode == 2 and
      p.stderr.startswith("strobe: report: option '--output' requires an argument;"), p.stderr)
# a name RUN could not reach: 'last' means the newest run
p = strobe("run", "--no-report", "--name", "last", "--", "touch", marker, store=db)
check("run --name last: exit 125, one line, the job did not start",
      p.returncode == 125 and len(p.stderr.strip().splitlines()) == 1 and
      "run name 'last' is reserved" in p.stderr and not os.path.exists(marker),
      f"{p.returncode} {p.stderr!r}")
p = strobe("import", "sagemaker", "--name", "last", TMP, store=db)
check("import sagemaker --name last: exit 2, one line",
      p.returncode == 2 and p.stderr.startswith("strobe: run name 'last' is reserved") and
      len(p.stderr.strip().splitlines()) == 1, f"{p.returncode} {p.stderr!r}")
p = run(db, "true", opts=("--no-report", "--name", "Last"))
check("run --name Last (not the reserved word) records", p.returncode == 0 and
      show(db, "Last")["name"] == "Last", p.stderr)
done()
