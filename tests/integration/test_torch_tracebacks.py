#!/usr/bin/python3
"""A training script's traceback under `strobe run` is the one it has without
strobe.

The PyTorch capture wraps nn.Module.__call__, DataLoader iteration and the
workers' fetch, autograd's backward, Optimizer.step and __init__, the
torch.distributed calls, and the import of torch itself; @strobe.span wraps
the functions it decorates. A wrapper is a Python frame, so without care an
exception raised under it lists one strobe line per wrapped call (one per
nn.Module level of the model), which sends users looking for a bug in the
profiler.

Each case below raises at one of those places. The script runs twice, with
the same interpreter and environment: plainly, and under `strobe run`. The
independent reading is the plain run: the traceback under strobe must be the
same text, line for line (the worker's traceback that DataLoader carries
into its message included), and name no file of strobe's.
"""
import os
import subprocess

from strobetest import *

SCRIPT = r'''
import os, sys
CASE = sys.argv[1]
if CASE == "import":
    import torch  # the fake torch of this test's directory, which raises
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.inner(x)


class Bad(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"sample {i} is damaged")
        return torch.zeros(8)


class FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ArithmeticError("no gradient here")


class FailingSGD(torch.optim.SGD):
    def step(self, closure=None):
        raise OverflowError("the learning rate overflowed")


def train_once(model, opt, x):
    loss = model(x).sum()
    loss.backward()
    opt.step()


if CASE == "forward":
    model = nn.Sequential(Block(), nn.ReLU())
    train_once(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.zeros(2, 8))
elif CASE == "backward":
    x = torch.ones(3, requires_grad=True)
    FailingBackward.apply(x).sum().backward()
elif CASE == "optimizer":
    model = nn.Linear(8, 1)
    train_once(model, FailingSGD(model.parameters(), lr=0.1), torch.zeros(2, 8))
elif CASE == "optimizer_init":
    torch.optim.SGD([], lr=0.1)  # raised in Optimizer.__init__, under the wrapper
elif CASE in ("data", "data_workers"):
    # one worker: its batches arrive in order, so the traceback takes one path
    # through the iterator (with two, the failing batch may come out of order
    # and DataLoader raises it from another line, strobe or not)
    loader = DataLoader(Bad(), batch_size=2, num_workers=1 if CASE == "data_workers" else 0)
    for batch in loader:
        pass
elif CASE == "distributed":
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="nosuchscheme://x", rank=0, world_size=1)
elif CASE == "span":
    import strobe

    @strobe.span("evaluate")
    def evaluate():
        return {}["accuracy"]

    evaluate()
'''

FAKE_TORCH = r'''
raise ImportError("this torch was built for another Python")
'''

CASES = ("forward", "backward", "optimizer", "optimizer_init", "data", "data_workers",
         "distributed", "span", "import")

script = store_path("raises.py")
with open(script, "w") as f:
    f.write(SCRIPT)
fake_dir = store_path("fake_torch")
os.makedirs(os.path.join(fake_dir, "torch"), exist_ok=True)
with open(os.path.join(fake_dir, "torch", "__init__.py"), "w") as f:
    f.write(FAKE_TORCH)

# strobe's Python package, importable without the recorder too (the span case)
package = os.path.join(os.path.dirname(os.path.abspath(STROBE)), "python")
env = dict(os.environ, OMP_NUM_THREADS="1")
for k in ("STROBE_SHM", "STROBE_FRAMEWORK"):
    env.pop(k, None)


def case_env(case):
    paths = [fake_dir] if case == "import" else []
    paths += [package] + [p for p in [env.get("PYTHONPATH")] if p]
    return dict(env, PYTHONPATH=":".join(paths))


def traceback_of(stderr):
    """From the first 'Traceback' line on, without strobe's own lines (the
    summary after the job, a report's path)."""
    lines = stderr.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("Traceback")), None)
    if start is None:
        return None
    return [l for l in lines[start:] if not l.startswith("strobe:")]


for case in CASES:
    plain = subprocess.run([PYTHON, script, case], capture_output=True, text=True, timeout=120,
                           env=case_env(case))
    p = run(store_path(f"tb-{case}.db"), PYTHON, script, case, env=case_env(case), timeout=120)
    want, got = traceback_of(plain.stderr), traceback_of(p.stderr)
    check(f"{case}: the script raises, plainly and under strobe",
          plain.returncode == 1 and p.returncode == 1 and want and got,
          f"plain {plain.returncode} {plain.stderr[-400:]!r}, strobe {p.returncode} "
          f"{p.stderr[-400:]!r}")
    if not (want and got):
        continue
    own = [l for l in got if "/strobe/" in l or "sitecustomize" in l]
    check(f"{case}: no line of strobe's in the traceback", not own, own)
    check(f"{case}: the traceback is the one without strobe, line for line", got == want,
          "\n  " + "\n  ".join(l for l in got if l not in want) + "\n  missing:\n  "
          + "\n  ".join(l for l in want if l not in got))
    if case == "forward":
        # the case is what it says: the error came from three module levels down
        check(f"{case}: the error is the innermost Linear's",
              "mat1 and mat2 shapes cannot be multiplied" in got[-1]
              and sum("in forward" in l for l in got) >= 3, got[-6:])

done()
