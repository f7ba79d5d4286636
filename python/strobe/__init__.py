"""strobe: annotate a training script for the strobe profiler.

    import strobe

    for batch in loader:
        strobe.step()                      # a step boundary: 1, 2, 3, ...
        with strobe.span("forward"):       # a span, nested as the code nests
            loss = model(batch)
        strobe.log("loss", loss.item())    # a value the script measured

    @strobe.span("evaluate")               # a span around every call
    def evaluate(): ...

Under `strobe run` every call writes one 32-byte event into this thread's
ring in shared memory (named by $STROBE_SHM); without a recorder every call
does nothing and costs little. Nothing raises because of the recorder: events
that do not fit are dropped and counted in the run's record. What raises is a
bad argument, recorder or not: a name that is not a str of 1 to 255 UTF-8
bytes (no NUL), a value that is not a number.
"""
import functools as _functools
import operator as _operator
import sys as _sys
import time as _time
import warnings as _warnings

from . import _steps, _strobe
from ._strobe import Span, complete, enabled, instant, log, span

__all__ = ["span", "Span", "step", "current_step", "log", "instant", "complete", "enabled",
           "monotonic_ns"]

#: CLOCK_MONOTONIC in ns, the clock of every event (and of complete()'s start_ns).
monotonic_ns = _time.monotonic_ns

# Called with the new step number after each step() the script makes itself
# (not after steps counted for it, see _step), e.g. by the PyTorch capture to
# learn that the script counts its own steps. A listener that raises is
# removed, with one warning.
_step_listeners = []

_current_step = 0  # libstrobe's too: events before the first step() belong to step 0
_script_step = 0  # the last number step() gave the script, as it would without a recorder
# recorded number - the script's: at the first step(), steps the capture had
# already counted and closed (step() written at the end of the loop, after
# the first iteration's work) keep their numbers, and the script's continue
# after them instead of numbering a second step 1
_step_offset = 0

# Called with the new step number whenever it changes, counted for the script
# or by it (strobe run --torch-profile's window, _torch_profile.py). A hook
# must not raise; one that does is removed.
_step_hooks = []

# code flags of functions whose call only makes a generator or coroutine
_CO_LAZY = 0x20 | 0x80 | 0x100 | 0x200  # GENERATOR, COROUTINE, ITERABLE_COROUTINE, ASYNC_GENERATOR


def current_step():
    """The current step number: 0 before the first step()."""
    return _current_step


def step(n=None):
    """A training step begins: step n, or the previous step + 1 (the first
    step() without n is step 1). Later events of every thread belong to it.
    Returns the step number."""
    return _step(n, True)


def _step(n=None, notify=False):
    """step() without telling _step_listeners: for a capture that counts steps
    on the script's behalf."""
    global _current_step, _script_step, _step_offset
    if notify:  # the script counts steps: its numbers, whatever the capture counted before
        n = _script_step + 1 if n is None else _operator.index(n)
        first = not _steps.clock.explicit
        offset = _first_offset(n) if first else _step_offset
        if not 0 <= n + offset < 2**32:
            _strobe.step(n + offset)  # raises, before anything changes
        last = _steps.clock.before_explicit_step()  # the step in progress ends here
        if first:  # after the last step counted automatically (a step that did no work is none)
            offset = _first_offset(n, last)
        _script_step, _step_offset = n, offset
        script_n, n = n, n + offset
    else:
        n = _current_step + 1 if n is None else _operator.index(n)
    _strobe.step(n)  # checks 0 <= n < 2**32 before anything changes
    _current_step = n
    for fn in _step_hooks:
        try:
            fn(n)
        except Exception:
            _step_hooks.remove(fn)
            break
    if notify:
        for fn in list(_step_listeners):
            try:
                fn(n)
            except Exception as e:  # a profiler must not break the script
                try:
                    _step_listeners.remove(fn)
                except ValueError:
                    pass
                _warnings.warn(f"strobe: step listener {fn!r} raised {e!r}; removed",
                               RuntimeWarning, stacklevel=3)
        return script_n
    return n


def _first_offset(n, last_counted=None):
    """At the first step(n): how far to shift the script's numbers so that
    they follow the steps the capture counted and closed before it
    (last_counted: the number of the last of them, 0 for none; the current
    step when not given, to check the range before anything changes)."""
    last = _current_step if last_counted is None else last_counted
    return max(0, last + 1 - n) if last > 0 else 0


def _hide_caller_frame(exc):
    """Take the calling wrapper's own line out of exc's traceback, from the
    wrapper's `except` clause, before a bare `raise`: a user's traceback
    then reads as it would without strobe, instead of showing one strobe
    line per wrapped call (one per nn.Module level, say). Python adds a
    frame's line when an exception first reaches it, and a bare `raise`
    goes on with exc.__traceback__ as it is now, so the line never comes
    back. Lines of anyone else's frames are left alone."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame is _sys._getframe(1):
        exc.__traceback__ = tb.tb_next


def _decorate(sp, fn):
    """The wrapper behind @strobe.span(name): the span around each call."""
    if not callable(fn):
        raise TypeError(f"strobe.span({sp.name!r}) decorates a function, not {type(fn).__name__}")
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_flags & _CO_LAZY:
        raise TypeError(f"strobe.span({sp.name!r}) cannot decorate {fn.__qualname__}: its call "
                        "only makes a generator or coroutine; use `with strobe.span(...)` "
                        "inside it")

    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with sp:
            try:
                return fn(*args, **kwargs)
            except BaseException as e:
                _hide_caller_frame(e)
                raise

    return wrapper


_strobe._set_decorator(_decorate)
_steps.clock._step_fn = _step  # automatic steps (the PyTorch capture) count without listeners
_steps._package = _sys.modules[__name__]
