"""Step spans: one `step` span per training step, for `strobe show`'s step
statistics and phase breakdown.

Two ways a step boundary is known, and the script's own wins:

- automatic (the PyTorch capture): a step begins at the first phase (data,
  forward, backward, optimizer) after the previous one ended, and ends when
  the step-counting optimizer's step() returns; the next begins right there,
  so steps tile the training loop. A trailing step that never reaches an
  optimizer step (the fetch that ends an epoch) is not a step.
- explicit: each strobe.step() ends the step in progress and begins the next.
  Written at the top of the loop or at its end, both count every iteration:
  a step begun by phases before the first strobe.step() is closed by it, and
  the last step is closed at exit at the end of its last phase (a step with
  no phase after its strobe.step() is dropped); without the capture, which
  reports phases, it is closed at exit.
"""
import atexit
import threading

from . import _strobe

_mono = __import__("time").monotonic_ns


class StepClock:
    def __init__(self):
        self.start = None  # monotonic ns the step in progress began, or None
        self.explicit = False  # the script calls strobe.step() itself
        self.last_phase_end = None  # end of the last phase seen in this step
        self.phases_seen = False  # the PyTorch capture reports phases
        self.counting_optimizer = None  # id() of the optimizer whose steps end steps
        self.begun_by_optimizer = False  # the step in progress began at an optimizer step's end
        self.lock = threading.Lock()
        self._step_fn = None  # set by the package: _step(n) without listeners
        atexit.register(self.at_exit)

    def _close(self, end):
        start = self.start
        if start is not None and end >= start:
            _strobe.complete("step", start, end - start)

    def phase_begin(self, now):
        """A phase starts: begins a step when none is in progress."""
        if self.start is None and not self.explicit:
            with self.lock:
                if self.start is None:
                    self.start = now
                    self._step_fn(None)

    def phase_end(self, now):
        self.last_phase_end = now
        self.phases_seen = True

    def optimizer_end(self, optimizer, now):
        """The step-counting optimizer finished a step: the step ends."""
        if self.explicit:
            return
        if self.counting_optimizer is None:
            self.counting_optimizer = id(optimizer)
        if self.counting_optimizer != id(optimizer):
            return  # a second optimizer in the same step (GANs): not a boundary
        with self.lock:
            if self.start is None:
                self.start = now
            self._close(now)
            self.start = now
            self.last_phase_end = None
            self.begun_by_optimizer = True
            self._step_fn(None)

    def before_explicit_step(self):
        """strobe.step() is about to change the step number: close the step in
        progress (it belongs to the old number), begin the next. True when the
        step in progress was no step (an optimizer step had just begun it):
        its number is the one the script's step() begins."""
        now = _mono()
        with self.lock:
            # the first strobe.step() after automatic steps: the step the last
            # optimizer step began has seen no phase (strobe.step() at the end
            # of the loop), so it is no step of its own; one with phases is
            reuse = not (self.explicit or not self.begun_by_optimizer or
                         self.last_phase_end is not None)
            if not reuse:
                self._close(now)
            self.explicit = True
            self.start = now
            self.last_phase_end = None
            return reuse

    def at_exit(self):
        if self.explicit and self.start is not None:
            if self.last_phase_end is not None:
                self._close(self.last_phase_end)
            elif not self.phases_seen:  # no capture: the step ran until the end
                self._close(_mono())
        self.start = None


clock = StepClock()
