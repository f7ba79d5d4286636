"""`strobe run --torch-profile A-B`: torch.profiler over steps A to B only.

The recorder sets STROBE_TORCH_PROFILE=A-B and STROBE_TORCH_PROFILE_DIR (a
directory of its own); the capture calls install() after its hooks are in.
Then, as strobe's step counter moves (automatic steps from optimizer steps,
or the script's strobe.step()):

    step A begins   torch.profiler.profile(CPU, and CUDA when there is one)
                    starts, and a "ProfilerStep#A" label opens
    step N begins   the label of N-1 closes, "ProfilerStep#N" opens (A < N <= B)
    step B ends     the last label closes and the profiler stops
    exit            the trace is written to DIR/torch-<pid>.json, which the
                    recorder imports into the run (strobe import torch-trace)

The labels are the ones torch.profiler's own schedule writes, so the import
lines the trace up with the run's recorded steps by their numbers. The label
objects are made before the profiler starts: in torch 1.13 making one
allocates a tensor, which would show up as an operator before step A's label.
The trace is written at exit rather than when the profiler stops, so step
B+1 does not pay for the export.

Nothing here may break the job: any failure stops the profiling with one
line on stderr and the training goes on.
"""
import atexit
import os
import sys

_MAX_LABELS = 100000  # steps labelled at most (each label is made up front)


def _warn(msg):
    try:
        sys.stderr.write(f"strobe: --torch-profile: {msg}\n")
    except Exception:
        pass


class Window:
    def __init__(self, torch, first, last, directory):
        self.torch = torch
        self.first, self.last = first, last
        self.path = os.path.join(directory, f"torch-{os.getpid()}.json")
        self.pid = os.getpid()
        self.prof = None
        self.labels = {}  # step -> record_function made ahead
        self.open = None  # the label entered
        self.done = False
        self.stopped = False
        self.current = None  # the step last seen

    def _start(self):
        torch = self.torch
        rf = torch.autograd.profiler.record_function
        for n in range(self.first, min(self.last, self.first + _MAX_LABELS - 1) + 1):
            self.labels[n] = rf(f"ProfilerStep#{n}")
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=activities)
        self.prof.start()
        atexit.register(self.at_exit)

    def _close_label(self):
        if self.open is not None:
            label, self.open = self.open, None
            label.__exit__(None, None, None)

    def on_step(self, n):
        """Step n begins (the step before it has ended)."""
        if self.done or n == self.current or os.getpid() != self.pid:
            return  # the same step again, or a forked child (it inherits no profiler)
        self.current = n
        try:
            self._close_label()
            if n > self.last or n < self.first:
                if self.prof is not None and n > self.last:
                    self.stop()
                elif n > self.last:
                    self.done = True
                return
            if self.prof is None:
                self._start()
            label = self.labels.pop(n, None)
            if label is not None:
                label.__enter__()
                self.open = label
        except Exception as e:
            self.fail(e)

    def stop(self):
        self.done = True
        self._close_label()
        if self.prof is not None and not self.stopped:
            self.stopped = True
            self.prof.stop()

    def fail(self, e):
        self.done = True
        _warn(f"profiling stopped: {type(e).__name__}: {e}")
        try:
            self.open = None
            if self.prof is not None and not self.stopped:
                self.stopped = True
                self.prof.stop()
        except Exception:
            pass
        self.prof = None

    def at_exit(self):
        if self.prof is None or os.getpid() != self.pid:
            return
        try:
            self.stop()  # a job that ended inside the window keeps what it has
            tmp = self.path + ".part"
            self.prof.export_chrome_trace(tmp)
            os.replace(tmp, self.path)  # the recorder never sees half a file
        except Exception as e:
            _warn(f"cannot write the trace: {type(e).__name__}: {e}")
        self.prof = None


def _parse(spec):
    a, sep, b = spec.partition("-")
    first = int(a)
    last = int(b) if sep else first
    if first < 1 or last < first:
        raise ValueError(f"bad step range {spec!r}")
    return first, last


def install(torch, add_step_hook):
    """Watch the steps for the window in $STROBE_TORCH_PROFILE; add_step_hook
    registers a function called with each new step number."""
    spec = os.environ.get("STROBE_TORCH_PROFILE")
    directory = os.environ.get("STROBE_TORCH_PROFILE_DIR")
    if not spec or not directory:
        return None
    first, last = _parse(spec)
    w = Window(torch, first, last, directory)
    add_step_hook(w.on_step)
    return w
