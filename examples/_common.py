"""What the bottleneck examples share: their command line, the device, how long
they train, and the step times they measure themselves (to compare with what
strobe records). Standard library and torch only."""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def parser(doc, seconds, threads=2):
    """--seconds, --steps, --device, --threads and --verbose; the description is
    the docstring's first line, the rest of it the epilog."""
    threads = min(threads, os.cpu_count() or 1)
    first, _, rest = doc.strip().partition("\n")
    p = argparse.ArgumentParser(description=first, epilog=rest,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=seconds,
                   help=f"train for about this long (default {seconds:g})")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps instead")
    p.add_argument("--device", default="auto", help="auto (cuda when there is one), cpu or cuda")
    p.add_argument("--threads", type=int, default=threads,
                   help=f"torch intra-op threads (default {threads})")
    p.add_argument("--verbose", action="store_true", help="print step-time statistics at the end")
    return p


def length(args):
    """How long the training runs, in words."""
    return f"{args.steps} steps" if args.steps else f"about {args.seconds:g} s"


def say(line):
    """One line in one write, so that the lines of processes sharing a
    terminal do not interleave."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def setup(args):
    """Seeds, threads and the device."""
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(args.device)


class Steps:
    """The training loop's clock: call tick() right after each optimizer step
    (strobe's steps run from one optimizer step to the next, so these times
    are the same steps); done() says when --steps or --seconds is reached."""

    def __init__(self, args, device=None):
        self.args = args
        self.cuda = device is not None and device.type == "cuda"
        self.start = time.monotonic()
        self.last = None
        self.times = []  # seconds, one per step after the first
        self.count = 0

    def tick(self):
        if self.cuda:
            torch.cuda.synchronize()  # host time covers the GPU's work, as in strobe
        now = time.monotonic()
        if self.last is not None:
            self.times.append(now - self.last)
        self.last = now
        self.count += 1
        return self.count

    def elapsed(self):
        return time.monotonic() - self.start

    def done(self):
        if self.args.steps:
            return self.count >= self.args.steps
        return self.elapsed() >= self.args.seconds

    def report(self, what=""):
        """One line, and with --verbose the statistics StepOutlier uses."""
        t = sorted(self.times)
        median = t[len(t) // 2] * 1e3 if t else 0.0
        say(f"done: {self.count} steps in {self.elapsed():.1f} s, median step {median:.2f} ms"
            + (f", {what}" if what else ""))
        if self.args.verbose and len(t) > 1:
            say(describe(self.times))


def describe(times):
    """mean, sigma, p50/p95/max and the steps above mean + 3 sigma, in ms."""
    n = len(times)
    mean = sum(times) / n
    sigma = math.sqrt(sum((x - mean) ** 2 for x in times) / (n - 1))
    t = sorted(times)
    threshold = mean + 3 * sigma
    over = sum(1 for x in times if x > threshold)
    ms = lambda x: f"{x * 1e3:.1f}"
    return (f"steps: {n} timed, mean {ms(mean)} ms, sigma {ms(sigma)}, p50 {ms(t[n // 2])}, "
            f"p95 {ms(t[min(n - 1, int(0.95 * n))])}, max {ms(t[-1])}; "
            f"{over} above mean + 3 sigma ({ms(threshold)} ms)")


class ConvNet(nn.Module):
    """Three convolutions and a classifier, any image size (global average
    pooling first): the model of small_batch.py and stalls.py."""

    def __init__(self, classes, width):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.conv3 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
