#!/usr/bin/python3
"""Each metric name is spelled once, in src/common/metrics.def: a string
literal in src/ or web/ that is a catalog name ("proc.cpu"), a series key
of one ("gpu.util{gpu=0}") or a family member ("app.loss") fails, naming
the file and line. C and JS comments may name metrics freely. The web
scripts take names from the generated metrics.js instead."""
import os
import re

from strobetest import check, done

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CATALOG = "src/common/metrics.def"
ROW = re.compile(r'METRIC\(\w+, "([^"]+)"')
TOKEN = re.compile(r'(//[^\n]*|/\*.*?\*/)|("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`(?:\\.|[^`\\])*`)',
                   re.S)


def catalog():
    with open(os.path.join(ROOT, CATALOG)) as f:
        names = ROW.findall(f.read())
    return ({n for n in names if not n.endswith("*")},
            [n[:-1] for n in names if n.endswith("*")])


def sources():
    for top, exts in (("src", (".c", ".h")), ("web", (".js", ".html"))):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                path = os.path.join(d, f)
                if f.endswith(exts) and os.path.relpath(path, ROOT) != CATALOG:
                    yield os.path.relpath(path, ROOT)


def names_a_metric(text, names, families):
    return (text in names or text.split("{")[0] in names and "{" in text
            or any(text.startswith(p) for p in families))


def stray_literals(path, names, families):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        src = f.read()
    for m in TOKEN.finditer(src):
        if m.group(2) and names_a_metric(m.group(2)[1:-1], names, families):
            yield f"{path}:{src.count(chr(10), 0, m.start()) + 1}: {m.group(2)}"


names, families = catalog()
check("the catalog has rows", len(names) > 50 and families, f"{len(names)} names")
stray = [s for p in sources() for s in stray_literals(p, names, families)]
check("no metric name is spelled outside metrics.def", not stray, "\n  " + "\n  ".join(stray))
done()
