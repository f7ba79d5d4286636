#!/usr/bin/python3
"""The docs stay readable and self-contained: each Markdown file's sentences
average at most MAX_MEAN words (as scripts/doc-stats counts them), and no
file of the repository points at a path outside it (the design notes beside
the checkout are not part of a clone, so such a link is dead for a reader)."""
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
