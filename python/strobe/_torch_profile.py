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

`strobe ctl RUN torch-profile N` opens such a window while the job runs.
The recorder writes DIR/control.json ({"seq": S, "torch_profile": {"steps":
N}}) and then sets a word of the shared-memory segment to S. At each step
begin the Controller reads that word (_strobe.control_seq(), one atomic
load: no thread, no file read unless it moved); when it moved, it reads the
request and opens a Window over the N steps from the one beginning. That
window writes DIR/torch-<pid>-<S>.json as soon as it closes, and the
recorder imports it at the run's end. One window at a time per process.

Nothing here may break the job: any failure stops the profiling with one
line on stderr and the training goes on.
"""
import atexit
import json
import os
import sys

_MAX_LABELS = 100000  # steps labelled at most (each label is made up front)


def _warn(msg):
    try:
        sys.stderr.write(f"strobe: --torch-profile: {msg}\n")
    except Exception:
        pass


class Window:
    def __init__(self, torch, first, last, directory, name=None, write_at_stop=False):
        self.torch = torch
        self.first, self.last = first, last
        self.path = os.path.join(directory, name or f"torch-{os.getpid()}.json")
        self.write_at_stop = write_at_stop  # strobe ctl's: the trace as soon as it closes
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
                    if self.write_at_stop:
                        self.at_exit()
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


class Controller:
    """strobe ctl torch-profile: a window opened at the step after a request."""

    def __init__(self, torch, directory, control_seq):
        self.torch = torch
        self.directory = directory
        self.control_seq = control_seq
        self.seen = control_seq()  # requests made before this process began are not its
        self.window = None

    def _request(self, seq):
        with open(os.path.join(self.directory, "control.json")) as f:
            req = json.load(f)
        if req.get("seq") != seq:
            return None  # a newer one is on its way: the next step reads it
        steps = int(req["torch_profile"]["steps"])
        return steps if steps >= 1 else None

    def on_step(self, n):
        w = self.window
        if w is not None:
            w.on_step(n)
            if w.done:
                self.window = None
        seq = self.control_seq()
        if seq == self.seen:
            return
        self.seen = seq
        try:
            steps = self._request(seq)
        except Exception as e:
            _warn(f"strobe ctl: cannot read the request: {type(e).__name__}: {e}")
            return
        if steps is None:
            return
        if self.window is not None:
            _warn(f"strobe ctl: a window is open until step {self.window.last}: request ignored")
            return
        name = f"torch-{os.getpid()}-{seq}.json"
        self.window = Window(self.torch, n, n + steps - 1, self.directory, name, True)
        self.window.on_step(n)


def install(torch, add_step_hook):
    """Watch the steps for the window in $STROBE_TORCH_PROFILE, and for
    strobe ctl's requests; add_step_hook registers a function called with
    each new step number. Returns the fixed window, or None."""
    spec = os.environ.get("STROBE_TORCH_PROFILE")
    directory = os.environ.get("STROBE_TORCH_PROFILE_DIR")
    if not directory:
        return None
    w = None
    if spec:
        first, last = _parse(spec)
        w = Window(torch, first, last, directory)
        add_step_hook(w.on_step)
    from strobe import _strobe

    control_seq = getattr(_strobe, "control_seq", None)
    if control_seq is not None and _strobe.enabled():
        add_step_hook(Controller(torch, directory, control_seq).on_step)
    return w
