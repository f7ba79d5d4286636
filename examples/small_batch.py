#!/usr/bin/env python3
"""Batch too small: the hardware idles between tiny pieces of work.

A convolutional network trains on 16x16 images with a batch of 1. Each step
is a few dozen operator calls on one image: too little work to split over
the cores (or a GPU's SMs), so the whole step runs on one thread, and the
machine stays half idle: host `cpu.util` stays around 50 %
on two cores (a GPU would show low utilization and little memory used). The
data is in memory, so nothing waits for input either.

What to do about it: raise the batch size until the cores (or the GPU) are
busy, scaling the learning rate with it (linearly, with a warm-up, is the
usual rule), or train several small jobs side by side. `--fixed` trains the
same network with `--batch-size 256` (and 256 x the learning rate of the
batch of 1): `cpu.util` rises above 80 % and the samples per second about
thirty-fold.

(A batch of 2 was the default until the host's p95 was seen at 70 %, the
rule's threshold, in two runs of three: its second OpenMP thread was busy a
third of the time. At 1 the work stays on one thread: p95 55 %.)

OpenMP's idle threads spin for a while before sleeping, and between the
microsecond operators of a tiny batch they never get to sleep: CPU use would
read ~100 % while the threads do nothing. This script therefore sets
OMP_WAIT_POLICY=PASSIVE (unless it is set already) so that `cpu.util` shows
work done, not waiting.

SageMaker's BatchSize rule judges only after a patience of 1000 samples and
then a window of 500 (150 s at strobe's 100 ms interval): give it
`--seconds 180`, or shorten them (`strobe run --rule-param
BatchSize.patience=100 ...`).

    strobe run -- python3 examples/small_batch.py [--seconds 90] [--fixed | --batch-size 256]
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import _common  # noqa: E402


def synthetic_images(n, classes, size, device):
    """n images 3 x size x size; the class sets the mean of one channel."""
    g = torch.Generator().manual_seed(1)
    labels = torch.randint(0, classes, (n,), generator=g)
    images = torch.randn(n, 3, size, size, generator=g) * 0.5
    images[torch.arange(n), labels % 3] += ((labels + 1) / classes).view(n, 1, 1)
    return images.to(device), labels.to(device)


def main():
    p = _common.parser(__doc__, seconds=90)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.00025, help="learning rate at batch 1 (scaled linearly)")
    p.add_argument("--fixed", action="store_true", help="batch 256 instead")
    args = p.parse_args()
    device = _common.setup(args)
    batch = 256 if args.fixed else args.batch_size
    lr = args.lr * batch

    images, labels = synthetic_images(16384, 10, 16, device)
    model = _common.ConvNet(10, width=64).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    print(f"small_batch: batch {batch}, lr {lr:g}, {torch.get_num_threads()} threads, {args.device}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, {_common.length(args)}", flush=True)

    steps, loss, order, at = _common.Steps(args, device), None, None, len(images)
    while not steps.done():
        if at + batch > len(images):  # a new epoch, in a new order
            order, at = torch.randperm(len(images), device=device), 0
        idx = order[at:at + batch]
        at += batch
        opt.zero_grad()
        loss = F.cross_entropy(model(images[idx]), labels[idx])
        loss.backward()
        opt.step()
        steps.tick()
    steps.report(f"loss {loss.item():.3f}, {steps.count * batch / steps.elapsed():.0f} samples/s")


if __name__ == "__main__":
    main()
