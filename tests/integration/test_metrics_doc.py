#!/usr/bin/python3
"""docs/metrics.md agrees with the catalog (src/common/metrics.def):

- its table between the `strobe metrics --markdown` markers is what that
  command prints, byte for byte (to update it, paste the command's output);
- every metric the prose names in backticks (`proc.cpu`, `gpu.util{gpu=G}`,
  `psi.*`) is in the catalog, so a renamed metric cannot live on in the doc;
- `strobe metrics --json` lists the same names as the markdown."""
import fnmatch
import json
import os
import re

from strobetest import check, done, strobe

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BEGIN, END = "<!-- strobe metrics --markdown -->\n", "<!-- end of strobe metrics -->\n"
PREFIXES = ("cpu", "mem", "psi", "disk", "net", "cgroup", "proc", "gpu", "strobe", "app",
            "sagemaker")
NAMED = re.compile(r"`((?:%s)\.[a-z0-9_.*]+)(?:\{[^`]*\})?`" % "|".join(PREFIXES))

with open(os.path.join(ROOT, "docs", "metrics.md"), encoding="utf-8") as f:
    doc = f.read()
md = strobe("metrics", "--markdown")
check("strobe metrics --markdown exits 0", md.returncode == 0, md.stderr)
start, end = doc.find(BEGIN), doc.find(END)
check("docs/metrics.md has the generated table's markers", 0 <= start < end)
table = doc[start + len(BEGIN):end]
check("docs/metrics.md's table is strobe metrics --markdown's", table == md.stdout,
      "run: strobe metrics --markdown, and paste it between the markers")

js = strobe("metrics", "--json")
rows = json.loads(js.stdout) if js.returncode == 0 else []
names = [r["name"] for r in rows]
check("--json and --markdown list the same names",
      names and all(f"| `{n}` |" in md.stdout for n in names), names)

unknown = sorted({n for n in NAMED.findall(doc)
                  if n not in names and not any(fnmatch.fnmatchcase(c, n) for c in names)})
check("every metric the doc names is in the catalog", not unknown, unknown)
done()
