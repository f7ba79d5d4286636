#!/usr/bin/python3
"""The docs stay readable and self-contained: each Markdown file's sentences
average at most MAX_MEAN words (as scripts/doc-stats counts them), and no
file of the repository points at a path outside it (the design notes beside
the checkout are not part of a clone, so such a link is dead for a reader).

CONTRIBUTING.md names the files to touch and the functions to call: each
path it names in backticks or links to exists, and each `function()` it names is
found in src/ or tests/, so a rename cannot leave the guide behind.
README.md links to it."""
import importlib.machinery
import importlib.util
import os
import re

from strobetest import *

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MAX_MEAN = 20.0
# not yet rewritten to short sentences; each leaves this list when it is
PENDING = {}
# the regex spells the paths so that this file does not match itself
OUTSIDE = re.compile(rb"\.\./shared\b|/work[/]shared")
SKIP_DIRS = {".git", "node_modules", "__pycache__", "results", "reports"}


def load_doc_stats():
    path = os.path.join(ROOT, "scripts", "doc-stats")
    loader = importlib.machinery.SourceFileLoader("doc_stats", path)
    spec = importlib.util.spec_from_loader("doc_stats", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def repository_files():
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for name in files:
            yield os.path.join(top, name)


doc_stats = load_doc_stats()
for path in doc_stats.default_files():
    name = os.path.relpath(path, ROOT)
    s = doc_stats.file_stats(path)
    if name in PENDING:
        skip(f"{name}: mean sentence at most {MAX_MEAN:.0f} words", PENDING[name])
        continue
    check(f"{name}: mean sentence at most {MAX_MEAN:.0f} words ({s['mean']:.1f})",
          s["sentences"] > 0 and s["mean"] <= MAX_MEAN,
          f"{s['sentences']} sentences, mean {s['mean']:.1f}, longest {s['longest']}")

with open(os.path.join(ROOT, "CONTRIBUTING.md"), encoding="utf-8") as f:
    guide = f.read()
# paths in backticks or links, without placeholders (`src/cli/cmd_<name>.c`) or
# patterns (`*.c`); a link's #anchor is left out
PATH = re.compile(r"(?:`|\]\()((?:src|tests|docs|scripts|web|include|python|bench|examples|\.ci)/"
                  r"[A-Za-z0-9_./-]*)(?:`|\)|#)")
missing = sorted({p for p in PATH.findall(guide) if not os.path.exists(os.path.join(ROOT, p))})
check("every path CONTRIBUTING.md names exists", not missing, ", ".join(missing))
code = ""
for top in ("src", "tests"):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for name in files:
            if name.endswith((".c", ".h")):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    code += f.read()
undefined = sorted({fn for fn in re.findall(r"`([a-z_][a-z0-9_]*)\(\)`", guide)
                    if not re.search(r"\b%s\(" % fn, code)})
check("every function CONTRIBUTING.md names is in src/ or tests/", not undefined,
      ", ".join(undefined))
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    check("README.md links to CONTRIBUTING.md", "(CONTRIBUTING.md)" in f.read())

pointing_out = []
for path in repository_files():
    try:
        with open(path, "rb") as f:
            if OUTSIDE.search(f.read()):
                pointing_out.append(os.path.relpath(path, ROOT))
    except OSError:
        pass  # a socket or a file removed while the tree was walked
check("no file points at a path outside the repository", not pointing_out,
      ", ".join(sorted(pointing_out)))
done()
