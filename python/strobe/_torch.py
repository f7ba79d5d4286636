"""Zero-code PyTorch capture: installed by strobe's sitecustomize right after
`import torch` finishes, when the script runs under `strobe run`.

What it records (docs/events.md has the full list and what is not captured):

    data               waiting on a DataLoader iterator (__next__)
    forward            the outermost nn.Module call on a thread (the loss
                       module called outside the model is a second one)
    backward           torch.autograd.backward (so Tensor.backward too)
    optimizer          Optimizer.step of every optimizer, and
                       GradScaler.step(optimizer) around it
    step               one per training step (see _steps): per step of the
                       first optimizer that steps, per backward pass while no
                       optimizer has stepped (parameters updated by hand), or
                       per strobe.step() when the script calls it
    step:eval          one per evaluation iteration: forwards without
                       autograd (torch.no_grad(), model.eval()) and no
                       backward, kept apart from the training steps
    comm:<name>        torch.distributed collectives, barriers, send/recv
    comm:allreduce     DDP's gradient buckets, launch to completion, through
                       a communication hook (on the thread that completes it)
    dataloader.worker  a batch fetched in a data-loader worker process
    strobe.rank, strobe.local_rank, strobe.world_size, strobe.worker_id
                       who the process is, from the environment and from
                       init_process_group / get_worker_info

The step clock hears of each phase: its kind, which module or optimizer it
is (an iteration begins as the one before began), whether a forward ran
without autograd, and whether it ran inside an optimizer step (a closure's
forward and backward) or a backward pass (activation checkpointing's
recomputation), which begin no iteration.

Every wrapper is exception-safe (the span ends, the exception goes on) and
never raises on its own account: a hook that cannot be installed is skipped
with one note on stderr.
"""
import functools
import os
import sys
import threading

import strobe
from strobe import _steps

_mono = strobe.monotonic_ns
_hide = strobe._hide_caller_frame  # each wrapper's own line out of a raised traceback
_complete = strobe.complete
_clock = _steps.clock
_installed = False
_notes = []

# collectives and point-to-point calls of torch.distributed, wrapped by name
_COMM_FUNCTIONS = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast",
    "broadcast_object_list", "reduce", "all_to_all", "all_to_all_single", "gather",
    "gather_object", "scatter", "scatter_object_list", "barrier", "monitored_barrier", "send",
    "recv", "isend", "irecv", "batch_isend_irecv",
)


def _note(msg):
    _notes.append(msg)
    try:
        sys.stderr.write(f"strobe: {msg}\n")
    except Exception:
        pass


def _meta(key, value):
    if value is None:
        return
    try:
        strobe.log("strobe." + key, int(value))
    except Exception:
        pass


def _env_int(name):
    v = os.environ.get(name)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


# ---- data ------------------------------------------------------------------


def _wrap_dataloader(torch):
    from torch.utils.data import dataloader

    cls = dataloader._BaseDataLoaderIter
    orig = cls.__next__

    @functools.wraps(orig)
    def __next__(self):
        t0 = _mono()
        _clock.phase_begin(t0, _steps.DATA)
        outer = _tls.in_data
        _tls.in_data = True
        try:
            return orig(self)
        except BaseException as e:
            _hide(e)
            raise
        finally:
            _tls.in_data = outer
            t1 = _mono()
            _complete("data", t0, t1 - t0)
            _clock.phase_end(t1, _steps.DATA)

    cls.__next__ = __next__


_worker = {"checked": False, "in_worker": False}


class _ThreadState(threading.local):
    """What this thread is inside of; the class attributes are each new
    thread's values, so a wrapper reads them without getattr's default."""

    in_data = False  # a DataLoader fetch
    in_forward = False  # an outermost module call
    in_backward = False  # an outermost backward
    in_optimizer = False  # a wrapped optimizer (or GradScaler) step
    hook_step = None  # id() of the optimizer whose torch 2 step hooks are running


_tls = _ThreadState()


def _forked():
    """In a forked child (a data-loader worker among them): who it is is asked
    anew, and nothing of its parent's data phase or forward is in progress
    (os.fork() inside one leaves the flag set)."""
    _worker["checked"] = False
    _worker["in_worker"] = False
    _tls.in_data = False
    _tls.in_forward = False
    _tls.in_backward = False
    _tls.in_optimizer = False
    _tls.hook_step = None


def _in_worker():
    """Whether this process is a data-loader worker (and say so, once)."""
    if not _worker["checked"]:
        _worker["checked"] = True
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        if info is not None:
            _worker["in_worker"] = True
            _meta("worker_id", info.id)
            _announce_rank()
    return _worker["in_worker"]


def _wrap_fetchers(torch):
    from torch.utils.data._utils import fetch

    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch, name, None)
        if cls is None:
            continue
        orig = cls.fetch

        def make(orig):
            @functools.wraps(orig)
            def fetch_(self, *args, **kwargs):
                timed = _in_worker()  # in the main process the fetch is inside "data"
                if timed:
                    t0 = _mono()
                    outer = _tls.in_data
                    _tls.in_data = True  # a transform's module calls are no forward
                try:
                    return orig(self, *args, **kwargs)
                except BaseException as e:
                    _hide(e)
                    raise
                finally:
                    if timed:
                        _tls.in_data = outer
                        _complete("dataloader.worker", t0, _mono() - t0)

            return fetch_

        cls.fetch = make(orig)


# ---- forward, backward, optimizer ------------------------------------------


def _inside():
    """What this thread is inside of: "optimizer" (a closure's phases),
    "backward" (activation checkpointing recomputes forwards there), or None."""
    if _tls.in_optimizer or _tls.hook_step is not None:
        return "optimizer"
    return "backward" if _tls.in_backward else None


def _wrap_module_call(torch):
    module_cls = torch.nn.Module
    orig = module_cls.__call__
    grad_enabled = torch.is_grad_enabled

    @functools.wraps(orig)
    def __call__(self, *args, **kwargs):
        # nested: only the outermost counts; and a module inside a fetch
        # (a transform) is part of the data phase
        tls = _tls
        timed = not (tls.in_forward or tls.in_data)
        if timed:
            tls.in_forward = True
            t0 = _mono()
            # _inside(), inlined: this is the most frequent wrapper
            if tls.in_optimizer or tls.hook_step is not None:
                inside = "optimizer"
            else:
                inside = "backward" if tls.in_backward else None
            if inside is None:
                # without autograd (no_grad, inference_mode) or in eval():
                # what an evaluation iteration's forwards look like
                free = not grad_enabled() or not getattr(self, "training", True)
                _clock.phase_begin(t0, _steps.FORWARD, id(self), free)
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        finally:
            if timed:
                tls.in_forward = False
                t1 = _mono()
                _complete("forward", t0, t1 - t0)
                if inside is None:
                    _clock.phase_end(t1, _steps.FORWARD)

    module_cls.__call__ = __call__


def _wrap_backward(torch):
    orig = torch.autograd.backward

    @functools.wraps(orig)
    def backward(*args, **kwargs):
        # a backward inside another (checkpointing's) is no backward pass
        outer = not _tls.in_backward
        t0 = _mono()
        if outer:
            inside = _inside()
            _tls.in_backward = True
            if inside is None:
                _clock.phase_begin(t0, _steps.BACKWARD)
            else:  # a closure's backward, inside the optimizer step
                _clock.inner_backward()
        try:
            return orig(*args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        finally:
            t1 = _mono()
            _complete("backward", t0, t1 - t0)
            if outer:
                _tls.in_backward = False
                if inside is None:
                    _clock.phase_end(t1, _steps.BACKWARD)

    torch.autograd.backward = backward


def _timed_step(orig, optimizer_of=None):
    """orig (an optimizer's step, or GradScaler's step(optimizer, ...))
    timed as one optimizer phase; optimizer_of(self, args, kwargs) says which
    optimizer steps (self when None)."""

    @functools.wraps(orig)
    def step(self, *args, **kwargs):
        # a subclass's step calling super().step(), both wrapped, an
        # optimizer stepping another (Lookahead), or GradScaler.step calling
        # the optimizer's: one optimizer step
        timed = _inside() != "optimizer"
        if timed:
            _tls.in_optimizer = True
            t0 = _mono()
            who = self if optimizer_of is None else optimizer_of(self, args, kwargs)
            _clock.phase_begin(t0, _steps.OPTIMIZER, id(who))
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        finally:
            if timed:
                _tls.in_optimizer = False
                t1 = _mono()
                _complete("optimizer", t0, t1 - t0)
                _clock.phase_end(t1, _steps.OPTIMIZER)
                _clock.optimizer_end(who, t1)

    step._strobe_wrapped = True
    return step


def _wrapping_init(orig_init, optimizer_of=None):
    """orig_init, then the step of the instance's class wrapped (once per
    class, at its first instance: subclasses the script defines count too)."""

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        try:
            orig_init(self, *args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        _wrap_step_of_class(type(self), optimizer_of)

    __init__._strobe_wrapped = True
    return __init__


def _wrap_step_of_class(cls, optimizer_of=None):
    """Wrap step where cls's MRO defines it, once."""
    for c in cls.__mro__:
        step = c.__dict__.get("step")
        if step is not None:
            if not getattr(step, "_strobe_wrapped", False):
                c.step = _timed_step(step, optimizer_of)
            return


def _optimizer_hooks(torch):
    """torch 2's global optimizer step hooks, when this torch has them."""
    mod = getattr(torch.optim, "optimizer", None)
    pre = getattr(mod, "register_optimizer_step_pre_hook", None)
    post = getattr(mod, "register_optimizer_step_post_hook", None)
    if pre is None or post is None or os.environ.get("STROBE_TORCH_HOOKS", "1") == "0":
        return None
    return pre, post


def _wrap_optimizers(torch):
    """The `optimizer` span and the step boundary around every optimizer step.

    With torch 2's global step hooks (register_optimizer_step_pre_hook and
    _post_hook), a pre-hook notes the start and a post-hook ends the span, for
    every optimizer however it was made. Older torch (Debian's 1.13) has none:
    there, every Optimizer subclass's step is wrapped once per class when its
    first instance is made (subclasses the script defines too)."""
    hooks = _optimizer_hooks(torch)
    if hooks is not None:
        register_pre, register_post = hooks
        started = {}  # id(optimizer) -> start; a step that raised leaves it, the next overwrites

        def pre_hook(optimizer, args, kwargs):
            if _tls.in_optimizer:
                return  # inside GradScaler.step: that is the optimizer phase
            outer = _tls.hook_step
            if outer is not None and outer != id(optimizer):
                return  # an optimizer stepping another (Lookahead): one step
            # (the same optimizer again: its last step raised before the post-hook)
            t0 = _mono()
            _tls.hook_step = id(optimizer)
            started[id(optimizer)] = t0
            _clock.phase_begin(t0, _steps.OPTIMIZER, id(optimizer))

        def post_hook(optimizer, args, kwargs):
            if _tls.hook_step != id(optimizer):
                return
            _tls.hook_step = None
            t1 = _mono()
            t0 = started.pop(id(optimizer), None)
            if t0 is None:
                return
            _complete("optimizer", t0, t1 - t0)
            _clock.phase_end(t1, _steps.OPTIMIZER)
            _clock.optimizer_end(optimizer, t1)

        register_pre(pre_hook)
        register_post(post_hook)
        return

    opt = torch.optim.Optimizer
    opt.__init__ = _wrapping_init(opt.__init__)  # the class that defines step, once


def _scaler_classes(torch):
    """The GradScaler classes this torch has (torch.cuda.amp's; torch 2.3
    moved the code to torch.amp and torch.cpu.amp)."""
    found = []
    for path in ("cuda.amp", "amp", "cpu.amp"):
        mod = torch
        for part in path.split("."):
            mod = getattr(mod, part, None)
        cls = getattr(mod, "GradScaler", None)
        if isinstance(cls, type) and cls not in found:
            found.append(cls)
    return found


def _wrap_grad_scaler(torch):
    """GradScaler.step(optimizer) as that optimizer's step: one optimizer
    phase around the scaler's work, and a step boundary also when the scaler
    skips the optimizer's step (inf or NaN gradients). Wrapped per class when
    its first instance is made, so a subclass the script defines counts too."""

    def optimizer_arg(self, args, kwargs):
        return args[0] if args else kwargs.get("optimizer", self)

    for cls in _scaler_classes(torch):
        if not getattr(cls.__init__, "_strobe_wrapped", False):
            cls.__init__ = _wrapping_init(cls.__init__, optimizer_arg)


# ---- distributed -----------------------------------------------------------


def _announce_rank():
    _meta("rank", _rank["rank"])
    _meta("local_rank", _rank["local_rank"])
    _meta("world_size", _rank["world_size"])


_rank = {"rank": _env_int("RANK"), "local_rank": _env_int("LOCAL_RANK"),
         "world_size": _env_int("WORLD_SIZE")}


def _wrap_comm(dist, c10d, name):
    orig = getattr(dist, name, None)
    if orig is None or getattr(orig, "_strobe_wrapped", False):
        return
    span_name = "comm:" + name.lstrip("_")

    @functools.wraps(orig)
    def comm(*args, **kwargs):
        t0 = _mono()
        try:
            return orig(*args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        finally:
            _complete(span_name, t0, _mono() - t0)

    comm._strobe_wrapped = True
    setattr(dist, name, comm)
    if c10d is not None and getattr(c10d, name, None) is orig:
        setattr(c10d, name, comm)


def _wrap_init_process_group(dist, c10d):
    orig = dist.init_process_group

    @functools.wraps(orig)
    def init_process_group(*args, **kwargs):
        try:
            r = orig(*args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        try:
            _rank["rank"] = dist.get_rank()
            _rank["world_size"] = dist.get_world_size()
            if _rank["local_rank"] is None:
                _rank["local_rank"] = _env_int("LOCAL_RANK")
            _announce_rank()
        except Exception:
            pass
        return r

    dist.init_process_group = init_process_group
    if c10d is not None and getattr(c10d, "init_process_group", None) is orig:
        c10d.init_process_group = init_process_group


class _HookState:
    """What our DDP communication hook delegates to: the default all-reduce,
    or the hook the script registers later (it gets its own state back)."""

    def __init__(self, process_group):
        self.process_group = process_group
        self.hook = None
        self.state = None


def _wrap_ddp(torch, dist):
    try:
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    except Exception as e:
        _note(f"DDP communication spans are off: {e}")
        return

    def strobe_comm_hook(state, bucket):
        t0 = _mono()
        if state.hook is not None:
            fut = state.hook(state.state, bucket)
        else:
            fut = default_hooks.allreduce_hook(state.process_group, bucket)

        def done(f):
            _complete("comm:allreduce", t0, _mono() - t0)
            return f.value()

        return fut.then(done)

    orig_init = DDP.__init__
    orig_register = DDP.register_comm_hook
    # torch 1.13 names it _register_builtin_comm_hook (private); accept either
    builtin_name = next((n for n in ("register_builtin_comm_hook", "_register_builtin_comm_hook")
                         if hasattr(DDP, n)), None)
    orig_builtin = getattr(DDP, builtin_name) if builtin_name else None

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        try:
            orig_init(self, *args, **kwargs)
        except BaseException as e:
            _hide(e)
            raise
        if os.environ.get("STROBE_DDP_HOOK", "1") == "0":
            return
        try:
            state = _HookState(self.process_group)
            orig_register(self, state, strobe_comm_hook)
            self._strobe_hook_state = state
        except Exception as e:
            _note(f"DDP communication spans are off for this model: {e}")

    @functools.wraps(orig_register)
    def register_comm_hook(self, state, hook):
        ours = getattr(self, "_strobe_hook_state", None)
        if ours is None or ours.hook is not None:
            try:
                return orig_register(self, state, hook)
            except BaseException as e:
                _hide(e)
                raise
        ours.hook, ours.state = hook, state  # the script's hook runs inside ours

    def register_builtin_comm_hook(self, comm_hook_type):
        ours = getattr(self, "_strobe_hook_state", None)
        # the built-in hooks have Python twins with the same arithmetic
        twins = {"ALLREDUCE": default_hooks.allreduce_hook,
                 "FP16_COMPRESS": default_hooks.fp16_compress_hook}
        twin = twins.get(getattr(comm_hook_type, "name", ""))
        if ours is not None and ours.hook is None and twin is not None:
            ours.hook, ours.state = twin, self.process_group
            return None
        try:
            return orig_builtin(self, comm_hook_type)
        except BaseException as e:
            _hide(e)
            raise

    DDP.__init__ = __init__
    DDP.register_comm_hook = register_comm_hook
    if orig_builtin is not None:
        setattr(DDP, builtin_name, functools.wraps(orig_builtin)(register_builtin_comm_hook))


def _wrap_distributed(torch):
    import torch.distributed as dist

    if not dist.is_available():
        return
    c10d = getattr(dist, "distributed_c10d", None)
    for name in _COMM_FUNCTIONS:
        _wrap_comm(dist, c10d, name)
    _wrap_init_process_group(dist, c10d)
    _wrap_ddp(torch, dist)


# ---- installation ----------------------------------------------------------

_PARTS = (
    ("DataLoader", _wrap_dataloader),
    ("data-loader workers", _wrap_fetchers),
    ("forward", _wrap_module_call),
    ("backward", _wrap_backward),
    ("optimizer", _wrap_optimizers),
    ("GradScaler", _wrap_grad_scaler),
    ("torch.distributed", _wrap_distributed),
)


def install():
    """Install every part that this torch allows; idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    import torch

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)

    for what, fn in _PARTS:
        try:
            fn(torch)
        except Exception as e:  # an unexpected torch: lose that part, not the run
            _note(f"PyTorch capture of {what} is off: {type(e).__name__}: {e}")
    _announce_rank()
    _steps.watch_multiprocessing()
    if os.environ.get("STROBE_TORCH_PROFILE_DIR"):  # --torch-profile, or strobe ctl's windows
        try:
            from strobe import _torch_profile

            _torch_profile.install(torch, strobe._step_hooks.append)
        except Exception as e:  # the job goes on without the profile
            _note(f"--torch-profile is off: {type(e).__name__}: {e}")
