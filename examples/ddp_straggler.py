#!/usr/bin/env python3
"""A straggler in data-parallel training: one rank is slower, all wait for it.

Two DistributedDataParallel ranks (gloo, one CPU thread each, started by this
script) train the same network. The data is not balanced: rank 1's shard
holds bigger images (--imbalance 1: twice the pixels), so its forward and
backward take longer. DDP all-reduces the gradients at the end of every
backward, so rank 0 finishes its own work and then waits inside the
all-reduce (strobe's `comm:allreduce` spans) for rank 1 each step. Both
ranks show the same step time; take the communication out of it and rank 1's
compute is about 1.8 x rank 0's here.

What to do about it: balance the work per rank (shard by cost, not count:
bucket samples by size or sequence length and give every rank the same mix),
move work done on one rank only (evaluation, logging, checkpoints) off the
training path, and look for a slower device or node (throttling, a noisy
neighbour) when the data is balanced. `--fixed` gives both ranks images of
the same size: the compute times match and the waiting disappears.

    strobe run -- python3 examples/ddp_straggler.py [--seconds 60] [--fixed]
"""
import math
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import _common

WORLD = 2


class ConvNet(nn.Module):
    """Few parameters (one gradient bucket), a fair amount of compute; any
    image size (global average pooling before the classifier)."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv3 = nn.Conv2d(64, 64, 3, padding=1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def batches(rank, size, batch, classes, device):
    """An endless stream of synthetic batches of this rank's shard."""
    g = torch.Generator().manual_seed(100 + rank)
    while True:
        labels = torch.randint(0, classes, (batch,), generator=g)
        images = torch.randn(batch, 3, size, size, generator=g) * 0.5
        images[torch.arange(batch), labels % 3] += ((labels + 1) / classes).view(batch, 1, 1)
        yield images.to(device), labels.to(device)


def train(rank, args):
    torch.set_num_threads(args.threads)  # 1: two ranks, two cores
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=WORLD)
    device = torch.device(f"cuda:{rank % torch.cuda.device_count()}" if args.device == "cuda" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = DDP(ConvNet(10).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    imbalance = 0.0 if args.fixed or rank != 1 else args.imbalance
    size = int(round(args.image_size * math.sqrt(1 + imbalance)))
    if rank == 0 or size != args.image_size:
        print(f"rank {rank}: images {size}x{size}, batch {args.batch_size}", flush=True)

    steps, loss = _common.Steps(args, device), None
    forward_s, cpu_start = 0.0, time.process_time()
    stop = torch.zeros(1)  # on the CPU, where gloo reduces anything
    for images, labels in batches(rank, size, args.batch_size, 10, device):
        opt.zero_grad()
        t = time.monotonic()
        out = model(images)  # no communication in DDP's forward here (no buffers to broadcast)
        forward_s += time.monotonic() - t
        loss = F.cross_entropy(out, labels)
        loss.backward()  # DDP all-reduces the gradients here: the ranks meet
        opt.step()
        steps.tick()
        if steps.count % 10 == 0:  # rank 0's clock decides, for both
            stop.fill_(1.0 if rank == 0 and steps.done() else 0.0)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            if stop.item():
                break
    # this rank's own clocks, to set beside strobe's: its forward's wall time
    # (the host slows it as much as the rest of the rank's work) and the CPU
    # time of all its threads, per step
    per_step = lambda s: s / max(1, steps.count) * 1e3
    steps.report(f"rank {rank}, loss {loss.item():.3f}, forward {per_step(forward_s):.2f} ms/step, "
                 f"cpu {per_step(time.process_time() - cpu_start):.2f} ms/step")
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = _common.parser(__doc__, seconds=60, threads=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=32, help="rank 0's image side (default 32)")
    p.add_argument("--imbalance", type=float, default=1.0,
                   help="rank 1's extra pixels per image, as a fraction (default 1: twice as many)")
    p.add_argument("--fixed", action="store_true", help="the same image size on both ranks")
    args = p.parse_args()
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    # what torchrun would set; each rank gets RANK and WORLD_SIZE from spawn's arguments
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    print(f"ddp_straggler: {WORLD} ranks (gloo), {args.device}, rank 1 imbalance "
          f"{0.0 if args.fixed else args.imbalance:g}, {_common.length(args)}", flush=True)
    mp.spawn(train, args=(args,), nprocs=WORLD, join=True)


if __name__ == "__main__":
    main()
