#!/usr/bin/env python3
"""A real PyTorch training on CPU with synthetic data, for strobe's demo and tests.

A small convolutional network learns to classify random 32x32 images whose class
is encoded in their mean colour, so the loss really falls. The data comes from a
Dataset with a little per-item work and a DataLoader with worker processes, so a
profile shows the training process, its data-loader workers, and the time spent
waiting for data. Nothing is downloaded.

    python3 examples/train.py [--seconds 40 | --steps N] [--batch-size 64] [--workers 2]
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    """Images of 3x32x32 whose class sets the mean of one colour channel."""

    def __init__(self, size, classes, seed):
        self.size = size
        self.classes = classes
        self.seed = seed

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        label = index % self.classes
        image = torch.randn(3, 32, 32, generator=g) * 0.5
        image[label % 3] += (label + 1) / self.classes
        # a light augmentation, as real input pipelines have
        if index % 2:
            image = torch.flip(image, dims=[2])
        return image, label


class SmallNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 8 * 8, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=float(os.environ.get("TRAIN_SECONDS", 40)),
                   help="train for about this long (default 40)")
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps instead")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2, help="data-loader worker processes")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's choice)")
    args = p.parse_args()

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    data = SyntheticImages(size=1_000_000, classes=args.classes, seed=1)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0)
    model = SmallNet(args.classes)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    start = time.monotonic()
    step, first_loss, loss_ema = 0, None, None
    step_times, step_began = [], None  # the script's own step times, for A/B benchmarks
    print(f"training: batch {args.batch_size}, {args.workers} workers, "
          f"{torch.get_num_threads()} threads, about {args.seconds:.0f} s", flush=True)
    for images, labels in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        now = time.monotonic()
        if step_began is not None:
            step_times.append(now - step_began)
        step_began = now
        value = loss.item()
        first_loss = value if first_loss is None else first_loss
        loss_ema = value if loss_ema is None else 0.9 * loss_ema + 0.1 * value
        step += 1
        elapsed = time.monotonic() - start
        if step % 50 == 0:
            print(f"step {step:5d}  loss {loss_ema:.3f}  {step * args.batch_size / elapsed:7.0f} samples/s",
                  flush=True)
        if (args.steps and step >= args.steps) or (not args.steps and elapsed >= args.seconds):
            break
    elapsed = time.monotonic() - start
    median = sorted(step_times)[len(step_times) // 2] * 1e3 if step_times else 0.0
    print(f"done: {step} steps in {elapsed:.1f} s, loss {first_loss:.3f} -> {loss_ema:.3f}, "
          f"median step {median:.2f} ms", flush=True)
    if not math.isfinite(loss_ema):
        raise SystemExit("training diverged")


if __name__ == "__main__":
    main()
