#!/usr/bin/env python3
"""Input-bound training: the model waits for data most of the time.

Each sample comes from "slow storage": __getitem__ waits --latency-ms (16 ms)
per item, as a read from a network file system or an object store does, and
two DataLoader workers cannot fetch 32 of them as fast as the model trains on
a batch. So the training loop spends most of each step inside next(loader)
(strobe's `data` phase: about 80 % of step time here) while the CPU stays
mostly idle: neither the model nor the workers are busy, they are waiting.

What to do about it: hide the latency with more concurrent reads (more
workers, `--workers 16` here; a larger prefetch_factor; threads or async I/O
inside the dataset), or remove it: stage the data on local disk or in memory,
pack many samples per read (shards, record files). `--fixed` is the second:
the samples are staged in memory once, before training, and read from there
by index. Such a dataset needs no worker processes (each would only add a
copy through shared memory per batch and its scheduling), so `--fixed` loads
in the training process unless --workers is given: the `data` share falls
to a few percent and the same training runs several times faster.

    strobe run -- python3 examples/input_bound.py [--seconds 60] [--fixed]
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import _common


class SlowStorage(Dataset):
    """3x32x32 images whose class sets the mean of one colour channel; each
    read waits `latency` seconds (sleeping, not computing)."""

    def __init__(self, size, classes, latency):
        self.size, self.classes, self.latency = size, classes, latency

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if self.latency:
            time.sleep(self.latency)
        g = torch.Generator().manual_seed(index)
        label = index % self.classes
        image = torch.randn(3, 32, 32, generator=g) * 0.5
        image[label % 3] += (label + 1) / self.classes
        return image, label


class StagedInMemory(Dataset):
    """The same kind of images, generated once into one tensor (`staged`
    of them, about 12 KiB each) and read by index: no latency, no work per
    read beyond a copy. Its length stays large so that no epoch ends within
    a run (an epoch's end restarts the loader)."""

    def __init__(self, size, classes, staged):
        self.size, self.classes = size, classes
        slow = SlowStorage(staged, classes, 0.0)
        self.images = torch.stack([slow[i][0] for i in range(staged)])

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        i = index % len(self.images)
        return self.images[i], i % self.classes


class SmallNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 8 * 8, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def main():
    p = _common.parser(__doc__, seconds=60, threads=1)  # the other core is for the workers
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=None,
                   help="data-loader worker processes (default 2; 0 with --fixed)")
    p.add_argument("--latency-ms", type=float, default=16.0, help="wait per sample read (default 16)")
    p.add_argument("--fixed", action="store_true", help="samples staged in memory: no read latency")
    args = p.parse_args()
    device = _common.setup(args)
    if args.workers is None:
        args.workers = 0 if args.fixed else 2
    latency = 0.0 if args.fixed else args.latency_ms / 1e3

    if args.fixed:
        data = StagedInMemory(size=1_000_000, classes=10, staged=4096)
    else:
        data = SlowStorage(size=1_000_000, classes=10, latency=latency)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.workers > 0, pin_memory=device.type == "cuda")
    model = SmallNet(10).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    print(f"input_bound: batch {args.batch_size}, {args.workers} workers, "
          f"{'staged in memory' if args.fixed else f'{latency * 1e3:g} ms per sample read'}, "
          f"{args.device}, {_common.length(args)}", flush=True)

    steps, loss = _common.Steps(args, device), None
    waited = 0.0  # the script's own measure of time spent in next(loader)
    it = iter(loader)
    while not steps.done():
        t = time.monotonic()
        try:
            images, labels = next(it)
        except StopIteration:  # an epoch ended
            it = iter(loader)
            continue
        waited += time.monotonic() - t
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        opt.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        steps.tick()
    steps.report(f"loss {loss.item():.3f}, {steps.count * args.batch_size / steps.elapsed():.0f} samples/s, "
                 f"{100 * waited / steps.elapsed():.0f} % of the time waiting for data "
                 f"(waited {waited:.3f} s)")


if __name__ == "__main__":
    main()
