#!/usr/bin/env python3
"""Periodic stalls: every 25th step takes about 8 times as long as the others
(and at least 0.3 s longer).

A normal, fast training loop, except that every --every (25) steps it writes
a checkpoint synchronously: torch.save() of the model and optimizer to a
temporary directory, fsync, then an "upload" to slow remote storage (a
sleep), all on the training thread. The step that does it is a stall about
--stall-factor (8) x the typical step: the step-time distribution gets a
second mode, and those steps lie far above mean + 3 sigma (what SageMaker's
StepOutlier counts). At the default 60 s that is about 3000 steps and 120
stalls here.

What to do about it: find what the slow steps do (strobe's phases put the
time in `other`, outside data/forward/backward/optimizer), then move it off
the training path or do it less often: checkpoint asynchronously (snapshot
the state, write it from a background thread or process), evaluate less
often or on another device, and make periodic work incremental. `--fixed`
snapshots the state in the step and writes and uploads it from a background
thread: the stalls disappear.

    strobe run -- python3 examples/stalls.py [--seconds 60] [--fixed] [--verbose]
"""
import copy
import os
import tempfile
import threading
import time

import torch
import torch.nn.functional as F

import _common


def checkpoint(state, path, seconds):
    """Write and fsync, then "upload" to slow remote storage (a sleep) until
    the whole takes `seconds`."""
    start = time.monotonic()
    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    time.sleep(max(0.0, seconds - (time.monotonic() - start)))


def main():
    p = _common.parser(__doc__, seconds=60)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--every", type=int, default=25, help="checkpoint every N steps (default 25)")
    p.add_argument("--stall-factor", type=float, default=8.0,
                   help="a checkpoint step lasts this many typical steps (default 8)")
    p.add_argument("--min-stall", type=float, default=0.3,
                   help="a checkpoint adds at least this many seconds (default 0.3)")
    p.add_argument("--fixed", action="store_true", help="checkpoint from a background thread")
    args = p.parse_args()
    device = _common.setup(args)
    model = _common.ConvNet(10, width=32).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    tmp = tempfile.TemporaryDirectory(prefix="stalls-")
    path = os.path.join(tmp.name, "checkpoint.pt")
    print(f"stalls: batch {args.batch_size}, a {'background' if args.fixed else 'synchronous'} checkpoint "
          f"every {args.every} steps, {torch.get_num_threads()} threads, {args.device}, "
          f"{_common.length(args)}", flush=True)

    steps, loss, writer, saves = _common.Steps(args, device), None, None, 0
    while not steps.done():
        labels = torch.randint(0, 10, (args.batch_size,), generator=g)
        images = torch.randn(args.batch_size, 3, 16, 16, generator=g) * 0.5
        images[torch.arange(args.batch_size), labels % 3] += ((labels + 1) / 10).view(-1, 1, 1)
        images, labels = images.to(device), labels.to(device)
        opt.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        steps.tick()
        if steps.count % args.every or steps.count < 2 * args.every:
            continue  # the first checkpoint once the typical step is known
        # the next step (strobe's too: from this optimizer step to the next) holds the checkpoint
        normal = sorted(steps.times[-args.every + 1:])  # the steps since the last checkpoint
        typical = normal[len(normal) // 2]
        # on top of the step's own work; at least --min-stall, so that the
        # stall stands out of a busy host's noise as it would on any host
        seconds = max((args.stall_factor - 1) * typical, args.min_stall)
        state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": steps.count}
        saves += 1
        if not args.fixed:
            checkpoint(state, path, seconds)
        elif writer is None or not writer.is_alive():  # a snapshot, written in the background
            writer = threading.Thread(target=checkpoint, args=(copy.deepcopy(state), path, seconds),
                                      daemon=True)
            writer.start()
    if writer is not None:
        writer.join()
    steps.report(f"loss {loss.item():.3f}, {saves} checkpoints")
    tmp.cleanup()


if __name__ == "__main__":
    main()
