"""Step spans: one `step` span per training step, for `strobe show`'s step
statistics and phase breakdown.

Two ways a step boundary is known, and the script's own wins:

- automatic (the PyTorch capture): a step begins at the first phase (data,
  forward, backward, optimizer) after the previous one ended, and ends when
  the step-counting optimizer's step() returns; the next begins right there,
  so steps tile the training loop. A trailing step that never reaches an
  optimizer step (the fetch that ends an epoch) is not a step. The counting
  optimizer is the first that steps; a second one stepping in the same step
  (GANs) is no boundary. When the counting one is gone (garbage, an
  optimizer made anew for each phase), the next that steps counts; when it
  lives on but another has stepped TAKEOVER_STEPS times without it, that one
  counts from its first of those steps.
- explicit: each strobe.step() ends the step in progress and begins the next.
  Written at the top of the loop or at its end, both count every iteration:
  at the first strobe.step(), a step in progress that has done work (forward,
  backward, optimizer) is closed by it and one that has not (the fetch before
  it, at the top of the loop) is no step; the last step is closed at exit at
  the end of its last phase, and dropped when it has only fetched (the fetch
  that ends the epoch, after a strobe.step() at the end of the loop) or had
  no phase; without the capture, which reports phases, it is closed at exit.

State is per process: a forked child (a data-loader worker, a rank started
with fork, a checkpoint writer) starts with no step in progress.
"""
import atexit
import os
import threading
import weakref

from . import _strobe

_mono = __import__("time").monotonic_ns

# steps of another optimizer, without one of the counting one between them,
# that make it the counting one: more than a GAN's generator takes per step
TAKEOVER_STEPS = 3


class StepClock:
    def __init__(self):
        self._step_fn = None  # set by the package: _step(n) without listeners
        self._reset()
        atexit.register(self.at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self):
        self.start = None  # monotonic ns the step in progress began, or None
        self.explicit = False  # the script calls strobe.step() itself
        self.last_phase_end = None  # end of the last phase seen in this step
        self.worked = False  # a forward, backward or optimizer phase in this step
        self.phases_seen = False  # the PyTorch capture reports phases
        self.work_seen = False  # ... and work phases, in some step
        self.counting = None  # weak reference to the optimizer whose steps end steps
        self.others = {}  # id() of another optimizer -> ends of its steps since the counting one's
        self.lock = threading.Lock()  # anew in a forked child: another thread may have held it

    def _close(self, end):
        start = self.start
        if start is not None and end >= start:
            _strobe.complete("step", start, end - start)

    def _boundary(self, now):
        """The step in progress ends at now; the next begins there."""
        if self.start is None:
            self.start = now
        self._close(now)
        self.start = now
        self.last_phase_end = None
        self.worked = False
        self._step_fn(None)

    def phase_begin(self, now):
        """A phase starts: begins a step when none is in progress."""
        if self.start is None and not self.explicit:
            with self.lock:
                if self.start is None:
                    self.start = now
                    self._step_fn(None)

    def phase_end(self, now, work=True):
        """A phase ended; work: forward, backward or optimizer, not data."""
        self.last_phase_end = now
        self.phases_seen = True
        if work:
            self.worked = True
            self.work_seen = True

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
                self._boundary(end)
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
            if self._counts(optimizer, now):
                self._boundary(now)

    def before_explicit_step(self):
        """strobe.step() is about to change the step number: close the step in
        progress (it belongs to the old number), begin the next. At the first
        strobe.step(), a step in progress that has done no work is no step:
        the fetch before a strobe.step() at the top of the loop, or the start
        an optimizer step gave the next one. Returns whether the step in
        progress was kept."""
        now = _mono()
        with self.lock:
            kept = self.explicit or self.worked
            if kept:
                self._close(now)
            self.explicit = True
            self.start = now
            self.last_phase_end = None
            self.worked = False
        return kept

    def at_exit(self):
        if self.explicit and self.start is not None:
            if self.last_phase_end is not None:
                if self.worked or not self.work_seen:  # not only the fetch that ends an epoch
                    self._close(self.last_phase_end)
            elif not self.phases_seen:  # no capture: the step ran until the end
                self._close(_mono())
        self.start = None


clock = StepClock()
