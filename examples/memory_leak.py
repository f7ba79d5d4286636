#!/usr/bin/env python3
"""A host memory leak: the training keeps something from every step.

A small fully convolutional network labels every pixel of 64x64 images (a
toy segmentation). For an end-of-epoch accuracy the script keeps each
batch's per-pixel predictions in a list (`kept.append(out.detach().cpu())`,
a CPU copy of a few samples per step) and means to score them "later". The
epoch never ends soon enough: the process's resident memory (strobe's
`proc.rss_bytes`) grows in a straight line, --leak-mb-s (20) MB/s kept plus
what the allocator adds (about 23 MB/s of RSS here), with no plateau, until
the run ends or the --max-mb cap (3000 MB kept) is reached and the script
stops keeping more. The default 90 s leaks about 2 GB.

How many samples' predictions it keeps each step follows the clock, so that
the rate is about --leak-mb-s on any machine (a fast GPU makes many more
steps a second): that sizing is the only artificial part.

What to do about it: keep numbers, not tensors (`loss.item()`, running sums,
a confusion matrix), call `.detach()` on anything kept across steps (else it
holds its autograd graph), bound every history (collections.deque(maxlen=)),
and look for caches keyed by something that never repeats. `--fixed` scores
each batch at once into a running sum: RSS is flat after the warm-up.

    strobe run -- python3 examples/memory_leak.py [--seconds 90] [--fixed]
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import _common

CLASSES = 8


class PixelNet(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, CLASSES, 1))

    def forward(self, x):
        return self.body(x)


def batch(g, n, size, device):
    """Images and their per-pixel labels: which of the three channels are positive."""
    x = torch.randn(n, 3, size, size, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long() + 4 * (x[:, 2] > 0).long()
    return x.to(device), y.to(device)


def main():
    p = _common.parser(__doc__, seconds=90)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--leak-mb-s", type=float, default=20.0, help="how fast to leak (default 20 MB/s)")
    p.add_argument("--max-mb", type=float, default=3000.0, help="stop keeping past this (default 3000)")
    p.add_argument("--warmup-steps", type=int, default=20, help="steps before the leak starts")
    p.add_argument("--fixed", action="store_true", help="score each batch at once, keep nothing")
    args = p.parse_args()
    device = _common.setup(args)
    model = PixelNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    print(f"memory_leak: batch {args.batch_size}, {'no leak' if args.fixed else f'{args.leak_mb_s:g} MB/s'}, "
          f"{torch.get_num_threads()} threads, {args.device}, {_common.length(args)}", flush=True)

    steps, loss = _common.Steps(args, device), None
    kept, kept_bytes, leak_start, cap = [], 0, None, args.max_mb * 1e6
    sample_bytes = CLASSES * 64 * 64 * 4  # one sample's float predictions
    correct = total = 0
    while not steps.done():
        x, y = batch(g, args.batch_size, 64, device)
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        steps.tick()
        if args.fixed:
            correct += (out.argmax(1) == y).sum().item()
            total += y.numel()
        elif steps.count >= args.warmup_steps and kept_bytes < cap:
            if leak_start is None:
                leak_start = steps.elapsed()
            # as many samples' predictions as keep the leak on schedule (the sizing)
            due = args.leak_mb_s * 1e6 * (steps.elapsed() - leak_start) - kept_bytes
            n = max(0, min(args.batch_size, round(due / sample_bytes)))
            if n:  # the leak, to be scored "at the end of the epoch" (clone: a slice keeps all of out)
                kept.append(out[:n].detach().cpu().clone())
                kept_bytes += n * sample_bytes
            if kept_bytes >= cap:
                print(f"--max-mb {args.max_mb:g} reached at step {steps.count}: keeping no more", flush=True)
    rate = kept_bytes / 1e6 / (steps.elapsed() - leak_start) if leak_start else 0.0
    steps.report(f"loss {loss.item():.3f}, kept {kept_bytes / 1e6:.0f} MB in {len(kept)} tensors "
                 f"({rate:.1f} MB/s)" + (f", pixel accuracy {correct / total:.3f}" if total else ""))


if __name__ == "__main__":
    main()
