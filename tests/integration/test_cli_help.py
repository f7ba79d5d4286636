#!/usr/bin/python3
"""Each command's options come from one table (src/cli/options.h), so its
--help lists every option it accepts: every option a command has taken lists
in its help, every option its help lists is accepted, and an unknown option,
a missing argument or a value refused is one line and the usage exit (2; 125
for run)."""
import re

from strobetest import *

# every option each command took before the tables: long names, short letters
OPTIONS = {
    "run": ("store name experiment workload tag param interval quiet proc-root proc-source "
            "sys-root collectors no-framework gpu-interval rules rule-param rule-interval "
            "report no-report no-logs torch-profile spool on-finding stop-grace py-sample py-profile "
            "listen token", "netpiqh"),
    "ls": ("store experiment workload name status json", "ewnjh"),
    "show": ("store json", "jh"),
    "compare": ("store json", "jh"),
    "export": ("store format metric output", "fmoh"),
    "rm": ("store dry-run force experiment workload name status", "h"),
    "copy": ("store from to dry-run experiment workload name status", "h"),
    "push": ("store", "h"),
    "import sagemaker": ("store name experiment tag rules rule-param rule-interval", "neth"),
    "import torch-trace": ("store pid", "h"),
    "rules": ("store json rules rule-param rule-interval save list", "jh"),
    "logs": ("store stderr kind list follow", "fh"),
    "ctl": ("store", "h"),
    "report": ("store output", "oh"),
    "trace": ("store output format steps mode", "ofh"),
    "flame": ("store role phase steps idle pid format output", "foh"),
    "serve": ("store listen token threads rate burst", "h"),
    "metrics": ("json markdown", "h"),
    "top": ("store once json", "jh"),
    "sweep": ("store dry-run rerun parallel write-back python quiet", "nqh"),
    "sweep status": ("store json", "h"),
}
# an option's line: "  -e, --experiment E   help", "      --json   help", "  -n N   help"
OPTION_LINE = re.compile(r"^ {2,6}(-\S.*?)(?: {2,}|$)")

db = store_path()
for cmd, (longs, shorts) in OPTIONS.items():
    words = cmd.split()
    p = strobe(*words, "--help", timeout=10)
    check(f"{cmd} --help: exit 0, the usage on stdout, nothing on stderr",
          p.returncode == 0 and p.stdout.startswith(f"usage: strobe {cmd}") and not p.stderr,
          f"{p.returncode} {p.stderr!r}")
    listed = {}  # "--name" or "-n": its argument name, or None
    for line in p.stdout.split("options:\n", 1)[-1].splitlines():
        m = OPTION_LINE.match(line)
        forms = m.group(1).split(", ") if m else []
        arg = forms[-1].split(" ", 1)[1] if forms and " " in forms[-1] else None
        for form in forms:  # "-e" takes the E of "--experiment E"
            listed[form.split(" ", 1)[0]] = arg
    for name in longs.split() + ["help"]:
        check(f"{cmd} --help lists --{name}", f"--{name}" in listed, sorted(listed))
    for letter in shorts:
        check(f"{cmd} --help lists -{letter}", f"-{letter}" in listed, sorted(listed))
    # every option listed is one the parser takes: with --help after it, it
    # is the help or the option's own complaint about "x", never "unrecognized"
    usage_rc = 125 if cmd == "run" else 2
    for opt, arg in listed.items():
        if opt in ("--help", "-h"):
            continue
        p = strobe(*words, opt, *(["x"] if arg else []), "--help", store=None, timeout=10)
        check(f"{cmd} {opt}: taken", (p.returncode == 0 and p.stdout.startswith("usage:")) or
              (p.returncode == usage_rc and "unrecognized" not in p.stderr and
               len(p.stderr.splitlines()) == 1), f"{p.returncode} {p.stderr!r}")

p = strobe("--help")
check("strobe --help lists every command", p.returncode == 0 and all(
    re.search(rf"^  {c.split()[0]} ", p.stdout, re.M) for c in OPTIONS), p.stdout)
listed_cmds = re.findall(r"^  ([a-z-]+) ", p.stdout.split("commands:\n", 1)[-1], re.M)
check("every command strobe --help lists is checked here (a new one gets a row in OPTIONS)",
      listed_cmds and set(listed_cmds) <= {c.split()[0] for c in OPTIONS}, listed_cmds)

# a value the option's row refuses: one line, the usage exit, nothing done
for args, rc, want in (
        (["ls", "-n", "x"], 2, "strobe: -n wants a count of runs, 0 or more (got 'x')"),
        (["ls", "--status", "done"], 2, "strobe: --status: 'done' is not a status"),
        (["rules", "--rule-interval", "1ms", "last"], 2,
         "strobe: --rule-interval wants a duration of 100ms or more (got '1ms')"),
        (["trace", "--steps", "x", "last"], 2, "strobe: bad --steps 'x'"),
        (["flame", "--steps", "2-1", "last"], 2, "strobe: bad --steps '2-1'"),
        (["flame", "--phase", "lunch", "last"], 2, "strobe: bad --phase 'lunch'"),
        (["flame", "--format", "png", "last"], 2, "strobe: unknown flame format 'png'"),
        (["import", "torch-trace", "--pid", "x", "last", "f"], 2,
         "strobe: --pid wants a process id, got 'x'"),
        (["run", "--interval", "0", "--", "true"], 125,
         "strobe: --interval wants a duration from 1ms to 60s"),
        (["run", "--no-report", "--quiet=1", "--", "true"], 125,
         "strobe: run: option '--quiet' takes no argument; see 'strobe run --help'"),
        (["show", "--json", "--store"], 2,
         "strobe: show: option '--store' requires an argument; see 'strobe show --help'")):
    p = strobe(*args, timeout=10)
    check(f"{' '.join(args)}: one line, exit {rc}",
          p.returncode == rc and p.stderr.startswith(want) and len(p.stderr.splitlines()) == 1
          and not p.stdout, f"{p.returncode} {p.stderr!r}")

# operands that do not fit: the help on stderr, exit 2
for args in (["show"], ["show", "a", "b"], ["logs"], ["report"], ["trace"], ["flame"], ["export", "-f",
             "csv"], ["rules"], ["rm"], ["serve", "x"], ["import", "torch-trace", "last"],
             ["import", "sagemaker"], ["ctl"], ["ctl", "last"]):
    p = strobe(*args, store=db, timeout=10)
    check(f"{' '.join(args)}: the usage on stderr, exit 2",
          p.returncode == 2 and p.stderr.startswith("usage: strobe ") and not p.stdout,
          f"{p.returncode} {p.stderr!r}")
p = strobe("metrics", "x", timeout=10)  # takes no store
check("metrics x: the usage on stderr, exit 2",
      p.returncode == 2 and p.stderr.startswith("usage: strobe metrics") and not p.stdout,
      f"{p.returncode} {p.stderr!r}")
done()
