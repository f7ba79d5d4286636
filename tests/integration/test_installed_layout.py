#!/usr/bin/python3
"""strobe run finds its Python package beside an installed binary
(PREFIX/bin/strobe and PREFIX/lib/strobe/python, the layout `make install`
makes), and through $STROBE_PYTHON_DIR; without any, Python commands still
run, unrecorded by the capture."""
import os
import shutil
import subprocess
import tempfile

from strobetest import *

BUILD = os.path.dirname(os.path.abspath(STROBE))
SCRIPT = r'''
import torch, strobe
opt = torch.optim.SGD([torch.zeros(3, requires_grad=True)], lr=0.1)
for i in range(5):
    with strobe.span("work"):
        pass
    opt.step()
print("ran", strobe.enabled())
'''

with tempfile.TemporaryDirectory() as prefix:
    os.makedirs(os.path.join(prefix, "bin"))
    os.makedirs(os.path.join(prefix, "lib", "strobe"))
    shutil.copy(STROBE, os.path.join(prefix, "bin", "strobe"))
    shutil.copytree(os.path.join(BUILD, "python"), os.path.join(prefix, "lib", "strobe", "python"))
    db = os.path.join(prefix, "t.db")
    installed = os.path.join(prefix, "bin", "strobe")
    p = subprocess.run([installed, "run", "--quiet", "--store", db, "--", PYTHON, "-c", SCRIPT],
                       capture_output=True, text=True, timeout=120)
    check("installed layout: the job runs with the package importable",
          p.returncode == 0 and "ran True" in p.stdout, (p.returncode, p.stderr[-400:]))
    r = show(db)
    check("installed layout: the capture counts the optimizer's steps",
          r and (r["steps"] or {}).get("count") == 5, r and r["steps"])

    # only the binary: no package anywhere near it
    alone = os.path.join(prefix, "alone")
    os.makedirs(alone)
    shutil.copy(STROBE, os.path.join(alone, "strobe"))
    env = {k: v for k, v in os.environ.items() if k not in ("STROBE_PYTHON_DIR", "PYTHONPATH")}
    p = subprocess.run([os.path.join(alone, "strobe"), "run", "--quiet", "--store", db, "--",
                        PYTHON, "-c", "import sys; print('plain', 'strobe' in sys.modules)"],
                       capture_output=True, text=True, timeout=60, env=env)
    check("no package found: Python commands still run", p.returncode == 0 and "plain False" in p.stdout,
          (p.returncode, p.stdout, p.stderr[-300:]))

    # $STROBE_PYTHON_DIR points the lone binary at a package
    env["STROBE_PYTHON_DIR"] = os.path.join(prefix, "lib", "strobe", "python")
    p = subprocess.run([os.path.join(alone, "strobe"), "run", "--quiet", "--store", db, "--",
                        PYTHON, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    check("STROBE_PYTHON_DIR: the package is found there", p.returncode == 0 and "ran True" in p.stdout,
          (p.returncode, p.stderr[-300:]))
    r = show(db)
    check("STROBE_PYTHON_DIR: steps recorded", r and (r["steps"] or {}).get("count") == 5,
          r and r["steps"])
done()
