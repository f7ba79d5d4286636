"""Step spans: one `step` span per training step and one `step:eval` span
per evaluation iteration, for `strobe show`'s step statistics and phase
breakdown. docs/events.md has the rules as a table, loop shape by loop shape.

Two ways a step boundary is known, and the script's own wins:

- automatic (the PyTorch capture reports each phase: data, forward, backward,
  optimizer). The loop is cut into iterations: an iteration begins with the
  phase that began the one before (a fetch, or a call of the same module, or
  a step of the same optimizer) and, when fetches came after the last
  forward, backward or optimizer phase, at the first of those fetches. An
  iteration with a backward pass or an optimizer step trains; one with only
  forwards of which one ran without autograd (torch.no_grad(),
  inference_mode(), a module in eval()) is an evaluation iteration: a
  `step:eval` span of its own, outside every training step; one that only
  fetched (the fetch that ends an epoch) joins the next.
  Training iterations make steps:
  * once an optimizer has stepped, a step ends when the counting
    optimizer's step() returns, and the next begins right there, so steps
    tile the training loop: K optimizer steps are K steps, however many
    backward passes each had (gradient accumulation), and a closure optimizer
    (LBFGS.step(closure)) is one step per step() with its forward and
    backward inside the optimizer phase. GradScaler.step(optimizer) counts as
    that optimizer's step, also when it skips it (inf gradients). The
    counting optimizer is the first that steps; a second one stepping in the
    same step (GANs) is no boundary: a GAN's step runs from one step of the
    counting optimizer to the next. When the counting one is gone (garbage,
    an optimizer made anew for each phase), the next that steps counts; when
    it lives on but another has stepped TAKEOVER_STEPS times without it,
    that one counts from its first of those steps. A trailing part that never
    reaches an optimizer step (a last partial accumulation) is no step, nor
    is a partial accumulation that an evaluation pass interrupts;
  * until an optimizer steps, each training iteration is a step (parameters
    updated by hand after backward()). Those iterations are kept back until
    ACCUM_LIMIT of them have passed, an evaluation iteration comes, or the
    process exits: if an optimizer steps first, they were the micro-batches of
    its first step (gradient accumulation) and make one step with it.
- explicit: each strobe.step() ends the step in progress and begins the next.
  Written at the top of the loop or at its end, both count every iteration:
  at the first strobe.step(), the automatic clock's iteration in progress is
  closed by it when it did work (forward, backward, optimizer) and one that
  has not (the fetch before it, at the top of the loop) is no step; the last
  step is closed at exit at the end of its last phase, and dropped when it
  has only fetched (the fetch that ends the epoch, after a strobe.step() at
  the end of the loop) or had no phase; without the capture, which reports
  phases, it is closed at exit. The script's steps are all training steps:
  no evaluation step is carved out of them.

Numbers: a training step's events carry its number (1, 2, ...); an
evaluation step carries the number of the training step that follows it.
The steps kept back until an optimizer or ACCUM_LIMIT decides carry the
number of the first of them. What is still open at the end is closed at the
end of its last phase: at exit or, in a multiprocessing child, when its run
ends.

State is per process: a forked child (a data-loader worker, a rank started
with fork, a checkpoint writer) starts with no step in progress. Only the
thread of the first forward, backward or optimizer phase makes steps.
"""
import atexit
import os
import threading
import weakref

from . import _strobe

_mono = __import__("time").monotonic_ns
_thread_id = threading.get_ident

# phase kinds, as the capture reports them
DATA, FORWARD, BACKWARD, OPTIMIZER = range(4)

# steps of another optimizer, without one of the counting one between them,
# that make it the counting one: more than a GAN's generator takes per step
TAKEOVER_STEPS = 3
# training iterations without an optimizer step that are kept back, in case
# an optimizer steps after them (gradient accumulation), before they count as
# steps one by one (parameters updated by hand)
ACCUM_LIMIT = 64
# iteration boundaries kept per open step, to place a takeover's boundaries
MARKS_KEPT = 64


class _Iteration:
    """The iteration in progress, on the stepping thread."""

    __slots__ = ("first", "opener_kind", "opener_key", "free", "backward", "optimizer", "work",
                 "work_end", "lead")

    def __init__(self, first, opener_kind, opener_key):
        self.first = first  # start of its first phase
        self.opener_kind = opener_kind  # kind and key of its first phase: the next begins with
        self.opener_key = opener_key  # the same
        self.free = False  # a forward ran without autograd (no_grad, inference_mode, eval())
        self.backward = False  # an outermost backward pass ran in it
        self.optimizer = False  # an optimizer stepped in it
        self.work = False  # a forward, backward or optimizer phase began in it
        self.work_end = None  # end of its last forward, backward or optimizer phase
        self.lead = None  # start of the first fetch since its last work: the next begins there

    def kind(self):
        """'train', 'eval', or None for one that only fetched (or ran
        forwards with autograd and no backward): its time joins the next."""
        if self.backward or self.optimizer:
            return "train"
        return "eval" if self.free else None


class StepClock:
    def __init__(self):
        self._step_fn = None  # set by the package: _step(n) without listeners
        self._reset()
        atexit.register(self.at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self):
        # explicit strobe.step()
        self.start = None  # monotonic ns the explicit step in progress began, or None
        self.explicit = False  # the script calls strobe.step() itself
        self.last_phase_end = None  # end of the last phase seen in this step
        self.worked = False  # a forward, backward or optimizer phase in this step
        self.phases_seen = False  # the PyTorch capture reports phases
        self.work_seen = False  # ... and work phases, in some step
        # automatic
        self.tid = None  # the stepping thread: that of the first work phase
        self.started = False  # a phase was seen: step 1 is current
        self.it = None  # the _Iteration in progress; None before a phase or after a step ended
        self.open_start = None  # where the open training step begins (the last boundary)
        self.open_first = None  # where an eval step would begin: the first phase after training
        self.open_train = False  # a training iteration is in the open step (optimizer mode)
        self.marks = []  # iteration boundaries inside the open step (optimizer mode)
        self.pending = []  # (start, end) of training iterations kept back (no optimizer yet)
        self.by_backward = False  # decided: without an optimizer, each training iteration is a step
        self.optimizer_seen = False  # an optimizer stepped: optimizer steps make steps
        self.last_number = 0  # number of the last training step counted automatically
        self.counting = None  # weak reference to the optimizer whose steps end steps
        self.others = {}  # id() of another optimizer -> ends of its steps since the counting one's
        self.exited = False
        self.lock = threading.Lock()  # anew in a forked child: another thread may have held it

    # ---- emitting ------------------------------------------------------------

    def _emit(self, name, start, end):
        """A step span [start, end); returns whether there was one."""
        if start is None or end is None or end < start:
            return False
        _strobe.complete(name, start, end - start)
        return True

    def _emit_now(self, start, end):
        """A training step [start, end) closes; the next one's number begins."""
        if self._emit("step", start, end):
            self.last_number = _current()
            self._step_fn(None)

    def _flush_pending(self):
        """The training iterations kept back are steps (hand-updated
        parameters): one each, in order."""
        for start, end in self.pending:
            self._emit_now(start, end)
        self.pending = []

    # ---- iterations ----------------------------------------------------------

    def _claim(self, kind, tid):
        """Whether a phase of thread tid, not the stepping thread, makes steps:
        the first work phase's thread becomes the stepping thread (fetches
        before it count from any thread)."""
        if self.tid is not None:
            return False
        if kind != DATA:
            self.tid = tid
        return True

    def _close_iteration(self, it, at):
        """Iteration it ended at `at`, where the next begins."""
        kind = it.kind()
        if kind is None:
            return  # only fetched: its time joins the next
        if kind == "eval":
            if self.optimizer_seen:
                self.open_train = False  # a partial accumulation an eval pass cut: no step
            elif self.pending:
                self._flush_pending()  # an eval pass between them: they were hand-updated steps
                self.by_backward = True
            self._emit("step:eval", self.open_first, at)
        elif self.optimizer_seen:
            self.open_train = True
            self.marks.append(at)
            if len(self.marks) > MARKS_KEPT:
                del self.marks[0]
            self.open_first = at  # an eval step would begin after it
            return  # the open step goes on to its optimizer step
        elif self.by_backward:
            self._emit_now(self.open_start, at)
        else:
            self.pending.append((self.open_start, at))
            if len(self.pending) > ACCUM_LIMIT:
                self._flush_pending()
                self.by_backward = True
        self.open_start = self.open_first = at
        self.marks = []

    def _complete(self, now):
        """The counting optimizer's step ended at now: so does the step, and
        the next begins there."""
        start = self.pending[0][0] if self.pending else self.open_start
        self.pending = []  # the micro-batches of this step (gradient accumulation)
        self._emit_now(start, now)
        self.optimizer_seen = True
        self.it = None
        self.open_start = now
        self.open_first = None
        self.open_train = False
        self.marks = []

    def _next_iteration(self, it, now, kind, key):
        """A phase begins as iteration it began: it ends, at the first fetch
        since its last work when there is one, else at now; the next begins
        there."""
        at = it.lead if it.lead is not None else now
        self._close_iteration(it, at)
        if it.lead is not None:
            kind, key = DATA, None
        it = self.it = _Iteration(at, kind, key)
        return it

    # ---- what the capture reports --------------------------------------------

    def phase_begin(self, now, kind, key=None, free=False):
        """A phase starts (not one inside an optimizer step or a backward pass):
        kind DATA, FORWARD, BACKWARD or OPTIMIZER; key tells two forwards (the
        module's id) or optimizer steps apart; free: a forward without autograd."""
        if self.explicit:
            return
        tid = _thread_id()
        if tid != self.tid and not self._claim(kind, tid):
            return
        with self.lock:
            it = self.it
            if it is None:  # the first phase, or the first after a step ended
                it = self.it = _Iteration(now, kind, key)
                if self.open_start is None:
                    self.open_start = now
                if self.open_first is None:
                    self.open_first = now
                if not self.started:  # step 1 begins: the events of the first step carry it
                    self.started = True
                    self._step_fn(None)
            elif kind == it.opener_kind and key == it.opener_key:
                it = self._next_iteration(it, now, kind, key)
            if kind == DATA:
                if it.work and it.lead is None:
                    it.lead = now
                return
            it.work = True
            it.lead = None
            if kind == BACKWARD:
                it.backward = True
            elif free:
                it.free = True

    def inner_backward(self):
        """A backward pass inside an optimizer step (a closure's): the
        iteration trains, though no backward phase begins in it."""
        it = self.it
        if it is not None and not self.explicit and self.tid == _thread_id():
            it.backward = True

    def phase_end(self, now, kind):
        """A phase ended (the one phase_begin announced)."""
        work = kind != DATA
        self.last_phase_end = now
        self.phases_seen = True
        if work:
            self.worked = True
            self.work_seen = True
        it = self.it
        if work and it is not None and not self.explicit and self.tid == _thread_id():
            it.work_end = now

    def _counts(self, optimizer, now):
        """Whether optimizer's step that ended at now is a step boundary; the
        ends of another's earlier steps that are boundaries too go first."""
        counting = self.counting() if self.counting is not None else None
        if counting is optimizer:
            self.others.clear()
            return True
        if counting is not None:
            ends = self.others.setdefault(id(optimizer), [])
            ends.append(now)
            if len(ends) < TAKEOVER_STEPS:
                return False  # a second optimizer in the same step (GANs): not a boundary
            for end in ends[:-1]:  # the counting one stopped stepping: this one counts
                at = next((m for m in self.marks if m >= end), end)  # the next iteration
                self._emit_now(self.open_start, at)
                self.open_start = at
        try:
            self.counting = weakref.ref(optimizer)
        except TypeError:  # not weakly referable: keep it
            self.counting = lambda: optimizer
        self.others.clear()
        return True

    def optimizer_end(self, optimizer, now):
        """An optimizer finished a step: the step ends if it is the counting one."""
        if self.explicit:
            return
        with self.lock:
            if self.tid != _thread_id() or self.it is None:
                return
            self.it.optimizer = True
            if self._counts(optimizer, now):
                self._complete(now)

    # ---- the end, and the script taking over -----------------------------------

    def _finish(self, now=None):
        """Close what the automatic clock has open: the iteration in progress
        at now (or, at exit, at the end of its last work phase), and the
        training iterations kept back. Afterwards it counts nothing more."""
        it, self.it = self.it, None
        end = now if now is not None else (it.work_end if it is not None else None)
        kind = it.kind() if it is not None else None
        if now is not None and it is not None and kind is None and it.work:
            kind = "train"  # forwards with autograd: work the script's first step() ends
        if kind == "train" and not self.optimizer_seen:
            self.pending.append((self.open_start, end))
        elif now is not None and (kind == "train" or self.open_train):
            self._emit_now(self.open_start, now)  # the step the script's first step() ends
        if self.pending:
            self._flush_pending()
        if kind == "eval":
            self._emit("step:eval", self.open_first, end)

    def before_explicit_step(self):
        """strobe.step() is about to change the step number: close the step in
        progress (it belongs to the old number), begin the next. At the first
        strobe.step(), the automatic clock's iteration in progress is closed
        by it when it did work, and one that has not is no step (the fetch
        before a strobe.step() at the top of the loop, or the start an
        optimizer step gave the next one). Returns the number of the last
        step closed automatically, 0 when none was."""
        now = _mono()
        with self.lock:
            if self.explicit:
                self._close(now)
            else:
                self._finish(now)
            self.explicit = True
            self.start = now
            self.last_phase_end = None
            self.worked = False
        return self.last_number

    def _close(self, end):
        start = self.start
        if start is not None and end >= start:
            _strobe.complete("step", start, end - start)

    def at_exit(self):
        """At the interpreter's exit (or a multiprocessing child's): close
        the last steps. Runs once per process."""
        if self.exited:
            return
        self.exited = True
        with self.lock:
            if not self.explicit:
                self._finish()
            elif self.start is not None:
                if self.last_phase_end is not None:
                    if self.worked or not self.work_seen:  # not only the fetch that ends an epoch
                        self._close(self.last_phase_end)
                elif not self.phases_seen:  # no capture: the step ran until the end
                    self._close(_mono())
            self.start = None


_package = None  # the strobe package, set by it: its current step is the one events carry


def _current():
    return _package._current_step


clock = StepClock()


def _mp_child_exit(clock_):
    """In a multiprocessing child (after its fork): close the steps when the
    child's run ends, since it leaves through os._exit, past atexit."""
    try:
        from multiprocessing import util

        util.Finalize(None, clock_.at_exit, exitpriority=100)
    except Exception:
        pass


def watch_multiprocessing():
    """Make multiprocessing children close their steps at their end: a
    process started with fork runs its target and leaves through os._exit,
    which skips atexit, where the last step is closed."""
    try:
        from multiprocessing import util

        util.register_after_fork(clock, _mp_child_exit)
    except Exception:
        pass
