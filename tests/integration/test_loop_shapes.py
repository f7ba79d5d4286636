#!/usr/bin/python3
"""Steps from every common loop shape, with no change to the script: each
script below trains a small model on the CPU and prints what it did itself
(its iterations, optimizer steps, backward calls, evaluation batches, and
its own clock around forward and backward) as JSON on its last line. strobe's
`show --json` must give the same numbers:

- one optimizer, a DataLoader: one step per optimizer step;
- two optimizers per iteration (a GAN): one step per iteration, from one
  discriminator step to the next;
- no torch.optim, parameters updated by hand after backward(): one step per
  iteration, with forward and backward phases as the script timed them;
- gradient accumulation (4 backward calls per optimizer.step()): one step
  per optimizer step, and 4 backward passes per step;
- LBFGS.step(closure): one step per step(), the closure's forward and
  backward inside it, one backward pass per closure call;
- GradScaler.step(optimizer) under autocast, whose scaler skips the
  optimizer's step every 5th iteration (as a scaler does after inf
  gradients): one step per iteration, one optimizer span per scaler.step;
- batches sliced from tensors, no DataLoader: the data phase is empty;
- validation every epoch (DataLoader, model.eval(), torch.no_grad()): eval
  steps counted apart, and the training steps as long as the script's own
  clock around its training loops, so no eval pass is inside them;
- a word-language-model LSTM loop (manual SGD, gradient clipping, hidden
  state carried over, get_batch slicing, evaluation under no_grad);
- an accumulation loop with validation, and an LBFGS fit, as users write
  them;
- hand updates in multiprocessing children started with fork (they leave
  through os._exit, past atexit);
- strobe.step() in the script still wins over all of this;
- torch 2's global optimizer hooks (on fake torch modules: this machine has
  torch 1.13): a closure's phases inside a hooked step, GradScaler.step
  around one, an optimizer stepping another: one optimizer span and one
  step each.
"""
import json
import os
import subprocess

from strobetest import *

TMP_DIR = os.path.join(TMP, "strobe-loop-shapes")
os.makedirs(TMP_DIR, exist_ok=True)

PRELUDE = r'''
import json, os, sys, time
import torch
import torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
mono = time.monotonic_ns
'''

SCRIPTS = {}

SCRIPTS["one_optimizer"] = r'''
from torch.utils.data import DataLoader, TensorDataset
m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(160, 16), torch.randn(160, 1)), batch_size=8)
n = 0
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(m(x), y).backward()
        opt.step()
        n += 1
print(json.dumps({"steps": n, "backward": n}))
'''

SCRIPTS["gan"] = r'''
g = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
d = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
og = torch.optim.Adam(g.parameters(), lr=1e-3)
od = torch.optim.Adam(d.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(400, 16)
n = backward = 0
for i in range(0, 400, 16):
    x = real[i:i + 16]
    od.zero_grad()  # the discriminator's step
    fake = g(torch.randn(16, 8))
    loss_d = bce(d(x), torch.ones(16, 1)) + bce(d(fake.detach()), torch.zeros(16, 1))
    loss_d.backward(); backward += 1
    od.step()
    og.zero_grad()  # the generator's step
    bce(d(fake), torch.ones(16, 1)).backward(); backward += 1
    og.step()
    n += 1
# a step runs from one step of the counting optimizer (the first to step,
# the discriminator's) to the next: the last generator half is in none
print(json.dumps({"steps": n, "backward": backward - 1}))
'''

SCRIPTS["manual_update"] = r'''
m = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 1))
crit = nn.MSELoss()
X, Y = torch.randn(1200, 32), torch.randn(1200, 1)
n = fwd = bwd = 0
for epoch in range(2):
    for i in range(0, 1200, 40):
        m.zero_grad()
        a = mono()
        loss = crit(m(X[i:i + 40]), Y[i:i + 40])
        b = mono()
        loss.backward()
        c = mono()
        with torch.no_grad():
            for p in m.parameters():
                p.add_(p.grad, alpha=-0.01)
        fwd += b - a
        bwd += c - b
        n += 1
print(json.dumps({"steps": n, "backward": n, "forward_ns": fwd, "backward_ns": bwd}))
'''

SCRIPTS["accumulation"] = r'''
from torch.utils.data import DataLoader, TensorDataset
K = 4
m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
loader = DataLoader(TensorDataset(torch.randn(192, 16), torch.randn(192, 1)), batch_size=4)
steps = backward = 0
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        (nn.functional.mse_loss(m(x), y) / K).backward()
        backward += 1
        if (i + 1) % K == 0:
            opt.step()
            opt.zero_grad()
            steps += 1
print(json.dumps({"steps": steps, "backward": backward, "per_step": K}))
'''

SCRIPTS["lbfgs"] = r'''
m = nn.Linear(8, 1)
X, Y = torch.randn(64, 8), torch.randn(64, 1)
opt = torch.optim.LBFGS(m.parameters(), lr=0.5, max_iter=4)
calls = 0
def closure():
    global calls
    calls += 1
    opt.zero_grad()
    loss = nn.functional.mse_loss(m(X), Y)
    loss.backward()
    return loss
for i in range(15):
    opt.step(closure)
print(json.dumps({"steps": 15, "backward": calls}))
'''

SCRIPTS["grad_scaler"] = r'''
class InfScaler(torch.cuda.amp.GradScaler):
    """Finds inf gradients every 5th step, as an enabled scaler does after an
    overflow: step() returns without the optimizer's step."""
    def __init__(self):
        super().__init__(enabled=False)  # the CPU: no scaling to do
        self.calls = 0
    def step(self, optimizer, *args, **kwargs):
        self.calls += 1
        if self.calls % 5 == 0:
            return None
        return super().step(optimizer, *args, **kwargs)
m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
scaler = InfScaler()
X, Y = torch.randn(320, 16), torch.randn(320, 1)
n = 0
for i in range(0, 320, 8):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(m(X[i:i + 8]).float(), Y[i:i + 8])
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    n += 1
taken = int(opt.state[next(m.parameters())]["step"])
print(json.dumps({"steps": n, "backward": n, "optimizer_steps": taken, "scaler_steps": scaler.calls}))
'''

SCRIPTS["no_dataloader"] = r'''
m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
X, Y = torch.randn(400, 16), torch.randn(400, 1)
n = 0
for epoch in range(2):
    perm = torch.randperm(400)
    for i in range(0, 400, 16):
        idx = perm[i:i + 16]
        opt.zero_grad()
        nn.functional.mse_loss(m(X[idx]), Y[idx]).backward()
        opt.step()
        n += 1
print(json.dumps({"steps": n, "backward": n}))
'''

SCRIPTS["validation"] = r'''
from torch.utils.data import DataLoader, TensorDataset
m = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
train = DataLoader(TensorDataset(torch.randn(480, 64), torch.randint(0, 10, (480,))), batch_size=16)
val = DataLoader(TensorDataset(torch.randn(1280, 64), torch.randint(0, 10, (1280,))), batch_size=64)
steps = evals = 0
train_ns = eval_ns = 0
for epoch in range(3):
    m.train()
    t0 = mono()
    for x, y in train:
        opt.zero_grad()
        crit(m(x), y).backward()
        opt.step()
        steps += 1
    t1 = mono()
    train_ns += t1 - t0
    m.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val:
            for rep in range(4):  # a heavier pass than the training's
                out = m(x)
            correct += (out.argmax(1) == y).sum().item()
            crit(out, y).item()
            evals += 1
    eval_ns += mono() - t1
print(json.dumps({"steps": steps, "backward": steps, "eval_steps": evals, "train_ns": train_ns,
                  "eval_ns": eval_ns}))
'''

# the word-language-model example's shape: an LSTM over batchified tokens,
# get_batch slicing, hidden state detached each step, gradient clipping and
# a hand-written SGD update; evaluation under no_grad after every epoch
SCRIPTS["word_lm"] = r'''
class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, 1)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid = nhid
    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return nn.functional.log_softmax(self.decoder(self.drop(output)), dim=-1), hidden
    def init_hidden(self, bsz):
        w = next(self.parameters())
        return (w.new_zeros(1, bsz, self.nhid), w.new_zeros(1, bsz, self.nhid))

def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[:nbatch * bsz].view(bsz, -1).t().contiguous()

def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)

BPTT, NTOKENS, LR, CLIP = 12, 200, 20.0, 0.25
corpus = torch.randint(0, NTOKENS, (6000,))
train_data, val_data = batchify(corpus[:4800], 10), batchify(corpus[4800:], 5)

def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)

model = RNNModel(NTOKENS, 32, 32)
criterion = nn.NLLLoss()
steps = evals = 0

def evaluate(data_source):
    global evals
    model.eval()
    total = 0.0
    hidden = model.init_hidden(5)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, BPTT):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total += len(data) * criterion(output.view(-1, NTOKENS), targets).item()
            evals += 1
    return total / (len(data_source) - 1)

def train():
    global steps
    model.train()
    hidden = model.init_hidden(10)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, BPTT)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, NTOKENS), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-LR)
        steps += 1

for epoch in range(2):
    train()
    val_loss = evaluate(val_data)
print(json.dumps({"steps": steps, "backward": steps, "eval_steps": evals}))
'''

SCRIPTS["accumulation_validation"] = r'''
from torch.utils.data import DataLoader, Dataset
class Pairs(Dataset):
    def __init__(self, n): self.x, self.y = torch.randn(n, 32), torch.randint(0, 4, (n,))
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]
ACCUM = 3
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5)
criterion = nn.CrossEntropyLoss()
train_loader = DataLoader(Pairs(288), batch_size=8, shuffle=True)
val_loader = DataLoader(Pairs(96), batch_size=16)
steps = backward = evals = 0
for epoch in range(2):
    model.train()
    optimizer.zero_grad()
    for i, (x, y) in enumerate(train_loader):
        loss = criterion(model(x), y) / ACCUM
        loss.backward()
        backward += 1
        if (i + 1) % ACCUM == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            steps += 1
    model.eval()
    with torch.inference_mode():
        acc = 0
        for x, y in val_loader:
            acc += (model(x).argmax(-1) == y).sum().item()
            evals += 1
print(json.dumps({"steps": steps, "backward": backward, "per_step": ACCUM, "eval_steps": evals}))
'''

SCRIPTS["lbfgs_fit"] = r'''
# a curve fit as in the LBFGS examples: full batch, a closure, a loss print
x = torch.linspace(-2, 2, 200).unsqueeze(1)
y = torch.sin(3 * x) + 0.1 * torch.randn_like(x)
model = nn.Sequential(nn.Linear(1, 20), nn.Tanh(), nn.Linear(20, 1))
optimizer = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=5, history_size=10,
                              line_search_fn="strong_wolfe")
loss_fn = nn.MSELoss()
calls = 0
for it in range(12):
    def closure():
        global calls
        calls += 1
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    loss = optimizer.step(closure)
    print("iter", it, "loss", float(loss))
with torch.no_grad():
    final = loss_fn(model(x), y).item()
print(json.dumps({"steps": 12, "backward": calls, "eval_steps": 1}))
'''

# ranks as multiprocessing children started with fork, updating by hand: a
# child leaves through os._exit, so its kept-back steps are closed when its
# run ends, not at exit
SCRIPTS["manual_forked"] = r'''
import torch.multiprocessing as mp
def train(rank, n):
    m = nn.Linear(8, 1)
    for i in range(n):
        m.zero_grad()
        m(torch.randn(4, 8)).sum().backward()
        with torch.no_grad():
            for p in m.parameters():
                p -= 0.01 * p.grad
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=train, args=(r, 12 + r)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print(json.dumps({"ranks": {str(p.pid): 12 + r for r, p in enumerate(procs)},
                      "codes": [p.exitcode for p in procs]}))
'''

SCRIPTS["explicit_wins"] = r'''
import strobe
m = nn.Linear(16, 1)
X, Y = torch.randn(320, 16), torch.randn(320, 1)
calls = 0
for i in range(0, 320, 8):
    if i % 16 == 0:  # the script's own steps: one per two updates
        strobe.step()
        calls += 1
    m.zero_grad()
    nn.functional.mse_loss(m(X[i:i + 8]), Y[i:i + 8]).backward()
    with torch.no_grad():
        for p in m.parameters():
            p -= 0.01 * p.grad
print(json.dumps({"steps": calls, "backward": 40}))
'''


def run_script(name):
    path = os.path.join(TMP_DIR, name + ".py")
    with open(path, "w") as f:
        f.write(PRELUDE + SCRIPTS[name])
    store = os.path.join(TMP_DIR, name + ".db")
    if os.path.exists(store):
        os.remove(store)
    p = run(store, PYTHON, path, opts=["--no-report"], env=example_env(), timeout=180)
    ok = check(f"{name}: the script finished", p.returncode == 0, p.stderr[-800:])
    if not ok:
        return None, None, store
    truth = json.loads(p.stdout.strip().splitlines()[-1])
    return truth, show(store), store


def phase_ns(r, key, phase):
    return ((r.get(key) or {}).get(phase) or {}).get("ns", 0)


def span_count(store, name):
    """How many spans named name the run stored (strobe trace)."""
    out = store + ".trace.json"
    p = strobe("trace", "-o", out, "last", store=store)
    if p.returncode != 0:
        return p.stderr
    with open(out) as f:
        return sum(1 for e in json.load(f)["traceEvents"] if e.get("name") == name)


def common(name, truth, r):
    """Training steps, backward passes and eval steps against the script."""
    steps = r.get("steps") or {}
    check(f"{name}: strobe's steps are the script's iterations",
          steps.get("count") == truth["steps"], f"got {steps.get('count')}, want {truth['steps']}")
    check(f"{name}: every backward call is a backward pass of some step",
          steps.get("backward_passes") == truth["backward"],
          f"got {steps.get('backward_passes')}, want {truth['backward']}")
    want_eval = truth.get("eval_steps", 0)
    got_eval = (r.get("eval_steps") or {}).get("count", 0)
    check(f"{name}: eval steps counted apart ({want_eval})", got_eval == want_eval,
          f"got {got_eval}, want {want_eval}")
    names = ("data", "forward", "backward", "optimizer", "comm", "other")
    psum = sum(phase_ns(r, "phases", n) for n in names)
    check(f"{name}: the phases add up to the steps' total",
          abs(psum - steps.get("total_ns", 0)) <= 1, f"phases {psum}, steps {steps.get('total_ns')}")
    return steps


truth, r, store = run_script("one_optimizer")
if r:
    common("one optimizer", truth, r)
    check("one optimizer: waiting for data is a phase", phase_ns(r, "phases", "data") > 0,
          r["phases"])

truth, r, store = run_script("gan")
if r:
    steps = common("GAN", truth, r)
    check("GAN: two backward passes per step but the first's",
          steps.get("backward_per_step") == (2 * truth["steps"] - 1) / truth["steps"],
          steps.get("backward_per_step"))

truth, r, store = run_script("manual_update")
if r:
    steps = common("manual update", truth, r)
    total = steps.get("total_ns", 0)
    tol = 0.05 * total + 2e6
    near("manual update: forward (model + loss) as the script timed it",
         phase_ns(r, "phases", "forward"), truth["forward_ns"], tol, "ns (5 % of step time + 2 ms)")
    near("manual update: backward as the script timed it",
         phase_ns(r, "phases", "backward"), truth["backward_ns"], tol, "ns (5 % of step time + 2 ms)")
    check("manual update: no DataLoader, no data phase", phase_ns(r, "phases", "data") == 0,
          r["phases"]["data"])
    check("manual update: no optimizer phase", phase_ns(r, "phases", "optimizer") == 0,
          r["phases"]["optimizer"])

truth, r, store = run_script("accumulation")
if r:
    steps = common("accumulation", truth, r)
    check("accumulation: 4 backward passes per step", steps.get("backward_per_step") == 4,
          steps.get("backward_per_step"))
    said = strobe("show", "last", store=store).stdout
    check("accumulation: show says 4 backward passes per step",
          "4 backward passes per step" in said, said[-600:])

truth, r, store = run_script("lbfgs")
if r:
    steps = common("LBFGS", truth, r)
    for ph in ("forward", "backward", "optimizer"):
        check(f"LBFGS: the closure's {ph} is timed inside the step",
              phase_ns(r, "phases", ph) > 0, r["phases"][ph])

truth, r, store = run_script("grad_scaler")
if r:
    common("GradScaler", truth, r)
    check("GradScaler: the scaler skipped some optimizer steps",
          truth["optimizer_steps"] < truth["scaler_steps"] == truth["steps"], truth)
    n = span_count(store, "optimizer")
    check("GradScaler: one optimizer span per scaler.step, not two", n == truth["scaler_steps"],
          f"{n} optimizer spans, {truth['scaler_steps']} scaler steps")

truth, r, store = run_script("no_dataloader")
if r:
    common("no DataLoader", truth, r)
    check("no DataLoader: the data phase is empty", phase_ns(r, "phases", "data") == 0,
          r["phases"]["data"])
    check("no DataLoader: forward and backward are not", phase_ns(r, "phases", "forward") > 0
          and phase_ns(r, "phases", "backward") > 0, r["phases"])

truth, r, store = run_script("validation")
if r:
    steps = common("validation each epoch", truth, r)
    # the training steps tile the training loops; the eval passes (about as
    # long) lie between them, in eval steps
    near("validation each epoch: training steps as long as the script's training loops",
         steps.get("total_ns"), truth["train_ns"], 0.05 * truth["train_ns"] + 5e6,
         "ns (5 % + 5 ms)")
    ev = r.get("eval_steps") or {}
    near("validation each epoch: eval steps as long as the script's eval passes",
         ev.get("total_ns"), truth["eval_ns"], 0.05 * truth["eval_ns"] + 5e6, "ns (5 % + 5 ms)")
    check("validation each epoch: eval steps have forwards, no backward",
          phase_ns(r, "eval_phases", "forward") > 0 and phase_ns(r, "eval_phases", "backward") == 0
          and ev.get("backward_passes") == 0, r.get("eval_phases"))
    said = strobe("show", "last", store=store).stdout
    check("validation each epoch: show prints the eval steps apart",
          f"eval      {truth['eval_steps']} steps" in said, said[-800:])

truth, r, store = run_script("word_lm")
if r:
    common("word LM (manual SGD, clipping)", truth, r)
    check("word LM: no data phase", phase_ns(r, "phases", "data") == 0, r["phases"]["data"])
    check("word LM: forward and backward phases", phase_ns(r, "phases", "forward") > 0
          and phase_ns(r, "phases", "backward") > 0, r["phases"])

truth, r, store = run_script("accumulation_validation")
if r:
    steps = common("accumulation with validation", truth, r)
    check("accumulation with validation: 3 backward passes per step",
          steps.get("backward_per_step") == 3, steps.get("backward_per_step"))

truth, r, store = run_script("lbfgs_fit")
if r:
    common("LBFGS fit (strong Wolfe)", truth, r)

# ---- torch 2's global optimizer hooks, on fake torch modules ----------------
# (this machine has torch 1.13): a closure's forward and backward inside a
# hooked step, GradScaler.step around a hooked step, an optimizer stepping
# another, all one optimizer span and one step each
HOOKS_PROBE = r'''
import json, types
import strobe
from strobe import _steps, _torch as T

spans, steps = [], []
T._complete = lambda name, t0, d: spans.append(name)
class Sink:
    @staticmethod
    def complete(name, t0, d): steps.append((name, t0, t0 + d))
    @staticmethod
    def step(n): pass
_steps._strobe = Sink
pre_hooks, post_hooks = [], []

class Module:
    training = True
    def __call__(self, *a):
        return 1.0

class Optimizer:
    def __init__(self, inner=None):
        self.inner = inner
    def step(self, closure=None):
        for h in pre_hooks:
            h(self, (), {})
        if self.inner is not None:
            self.inner.step()  # Lookahead-style: steps another
        if closure is not None:
            for i in range(3):  # LBFGS evaluates its closure several times
                closure()
        for h in post_hooks:
            h(self, (), {})

class GradScaler:
    def __init__(self):
        pass
    def step(self, optimizer):
        return optimizer.step()

fake = types.SimpleNamespace(
    optim=types.SimpleNamespace(Optimizer=Optimizer, optimizer=types.SimpleNamespace(
        register_optimizer_step_pre_hook=pre_hooks.append,
        register_optimizer_step_post_hook=post_hooks.append)),
    nn=types.SimpleNamespace(Module=Module), is_grad_enabled=lambda: True,
    autograd=types.SimpleNamespace(backward=lambda *a: None),
    cuda=types.SimpleNamespace(amp=types.SimpleNamespace(GradScaler=GradScaler)))
for part in (T._wrap_module_call, T._wrap_backward, T._wrap_optimizers, T._wrap_grad_scaler):
    part(fake)
model = Module()

def run(what, n, step):
    spans.clear(); steps.clear(); _steps.clock._reset()
    for i in range(n):
        step()
    _steps.clock.exited = False
    _steps.clock.at_exit()
    return {"what": what, "optimizer": spans.count("optimizer"), "forward": spans.count("forward"),
            "backward": spans.count("backward"), "steps": sum(1 for s in steps if s[0] == "step")}

opt = Optimizer()
def closure():
    model()
    fake.autograd.backward()
out = [run("closure", 5, lambda: opt.step(closure))]
scaler = GradScaler()
def scaled():
    model(); fake.autograd.backward(); scaler.step(opt)
out.append(run("scaler", 6, scaled))
outer = Optimizer(inner=Optimizer())
def nested():
    model(); fake.autograd.backward(); outer.step()
out.append(run("nested", 4, nested))
print(json.dumps(out))
'''
p = subprocess.run([PYTHON, "-c", HOOKS_PROBE], capture_output=True, text=True, timeout=60,
                   env=dict(example_env(), PYTHONPATH=os.path.join(
                       os.environ.get("STROBE_BUILD", "build"), "python")))
if check("torch 2 hooks probe ran", p.returncode == 0, p.stderr[-800:]):
    got = {x["what"]: x for x in json.loads(p.stdout)}
    c = got["closure"]
    check("torch 2 hooks: a closure optimizer is one step per step(), its phases inside",
          c == {"what": "closure", "optimizer": 5, "forward": 15, "backward": 15, "steps": 5}, c)
    c = got["scaler"]
    check("torch 2 hooks: GradScaler.step around a hooked step is one optimizer span",
          c["optimizer"] == 6 and c["steps"] == 6, c)
    c = got["nested"]
    check("torch 2 hooks: an optimizer stepping another is one optimizer span",
          c["optimizer"] == 4 and c["steps"] == 4, c)

truth, r, store = run_script("manual_forked")
if r:
    got = {str(x["pid"]): x["count"] for x in r.get("ranks") or []}
    check("hand updates in forked multiprocessing children: each child's steps",
          truth["codes"] == [0, 0] and all(got.get(pid) == n for pid, n in truth["ranks"].items()),
          f"strobe {got}, the children {truth['ranks']}")

truth, r, store = run_script("explicit_wins")
if r:
    steps = r.get("steps") or {}
    check("strobe.step() wins: the script's steps, one per two updates",
          steps.get("count") == truth["steps"], f"got {steps.get('count')}, want {truth['steps']}")
    check("strobe.step() wins: every backward call inside its steps",
          steps.get("backward_passes") == truth["backward"], steps.get("backward_passes"))

done()
