#!/usr/bin/python3
"""strobe/_torch.py's choice of optimizer instrumentation, on fake torch
modules (this machine's torch is 1.13): with torch 2's global optimizer step
hooks the capture registers a pre/post pair and leaves the Optimizer class
alone; without them (or with STROBE_TORCH_HOOKS=0) it wraps each subclass's
step once. Both give one `optimizer` span per step of every optimizer, and
one step boundary per step of the first optimizer that steps."""
import os
import subprocess

from strobetest import *

BUILD = os.environ.get("STROBE_BUILD", "build")
PKG = os.path.join(BUILD, "python")

PROBE = r'''
import json, os, sys, time, types
import strobe
from strobe import _torch as T

spans = []
T._complete = lambda name, t0, d: spans.append((name, d))
pre_hooks, post_hooks = [], []


class Optimizer:
    def __init__(self, params=None):
        self.params = params

    def step(self):
        for h in pre_hooks:
            h(self, (), {})
        time.sleep(0.002)
        for h in post_hooks:
            h(self, (), {})


class Adam(Optimizer):
    pass


optim = types.SimpleNamespace(Optimizer=Optimizer)
if os.environ["FAKE"] == "torch2":
    optim.optimizer = types.SimpleNamespace(
        register_optimizer_step_pre_hook=pre_hooks.append,
        register_optimizer_step_post_hook=post_hooks.append)
fake = types.SimpleNamespace(optim=optim)
init_before = Optimizer.__init__
T._wrap_optimizers(fake)
a, b = Optimizer(), Adam()
for i in range(3):
    a.step()
    b.step()  # a second optimizer: spans, but no step boundaries
print(json.dumps({
    "hooks": [len(pre_hooks), len(post_hooks)],
    "class_patched": Optimizer.__init__ is not init_before,
    "step_wrapped": bool(getattr(Optimizer.step, "_strobe_wrapped", False)),
    "spans": [[n, d] for n, d in spans],
    "current_step": strobe.current_step(),
}))
'''


def probe(fake, **env):
    e = dict(os.environ, PYTHONPATH=PKG, FAKE=fake, **env)
    e.pop("STROBE_SHM", None)
    p = subprocess.run(["/usr/bin/python3", "-c", PROBE], capture_output=True, text=True,
                       env=e, timeout=60)
    check(f"{fake}: the probe ran", p.returncode == 0, p.stderr[-600:])
    import json
    return json.loads(p.stdout) if p.returncode == 0 else None


def common(what, r):
    names = [n for n, _ in r["spans"]]
    check(f"{what}: six optimizer spans, one per step of each optimizer",
          names == ["optimizer"] * 6, names)
    check(f"{what}: each span lasts the step's 2 ms sleep",
          all(d >= 2_000_000 for _, d in r["spans"]), r["spans"])
    # steps 1, 2, 3 closed by the first optimizer; step 4 begun
    check(f"{what}: three steps counted, by the first optimizer only", r["current_step"] == 4,
          r["current_step"])


r = probe("torch2")
if r:
    check("torch 2: the global step hooks are registered", r["hooks"] == [1, 1], r["hooks"])
    check("torch 2: the Optimizer class is left alone",
          not r["class_patched"] and not r["step_wrapped"], r)
    common("torch 2", r)

r = probe("torch1")
if r:
    check("torch 1.13: no hooks to register", r["hooks"] == [0, 0], r["hooks"])
    check("torch 1.13: the class's step is wrapped", r["class_patched"] and r["step_wrapped"], r)
    common("torch 1.13", r)

r = probe("torch2", STROBE_TORCH_HOOKS="0")
if r:
    check("STROBE_TORCH_HOOKS=0: wrapping even where hooks exist",
          r["hooks"] == [0, 0] and r["step_wrapped"], r)
    common("STROBE_TORCH_HOOKS=0", r)

done()
