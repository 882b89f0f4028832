#!/usr/bin/env python3
"""anneal_torch.py: examples/anneal.c's iteration written with PyTorch, for the speed comparison.

    python3 examples/anneal_torch.py [--n 1000000] [--d 128] [--m 1024] [--iterations 10] [--device cuda]

The same data (clusters, anchors starting at the first m points), the same
loop (temperature 0.9^k, learning rate 0.5, momentum 0.5) and the same four
steps on tensors resident on the GPU, in the way a PyTorch user writes them:
  assign   squared distances by matmul (|x|^2 - 2 x a^T + |a|^2), argmin, and
           the distance at the argmin;
  reduce   counts by bincount, means and variances by index_add_ (two passes:
           mean, then the mean of squared deviations, as kcs requires);
  update   v = mu v + (mean - a) where count > 0, mu v elsewhere; a = a + lr T v;
  energy   the mean of the distances, carried in f64, read back as one scalar.
Per iteration it prints the wall time (the host clock around the four steps
and the read-back of the energy, which waits for them) so that it compares with the wall
time printed by build/examples/anneal on the same card. Matmul in f32 with
TF32 off (torch.backends.cuda.matmul.allow_tf32 = False), as kcs computes f32.
The data generator is a different one from anneal.c's (torch.rand, seeded),
with the same shape of data: speed does not depend on the values.
"""
import argparse
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000000)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--m", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n, d, m = args.n, args.d, args.m
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device)
    generator = torch.Generator(device="cpu").manual_seed(args.seed)
    centres = torch.rand(m, d, generator=generator) * 2 - 1
    x = (centres[torch.arange(n) % m] + 0.05 * (torch.rand(n, d, generator=generator) * 2 - 1)).to(device)
    a = x[:m].clone()
    v = torch.zeros(m, d, device=device)
    learning_rate, momentum, temperature = 0.5, 0.5, 1.0
    x_norms = (x * x).sum(dim=1)  # computed once: the points do not move
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"anneal_torch: n={n} d={d} m={m}, f32 points on {name}, torch {torch.__version__}")
    walls = []
    for iteration in range(args.iterations):
        start = time.perf_counter()
        # assign
        distances = x_norms[:, None] - 2.0 * (x @ a.T) + (a * a).sum(dim=1)[None, :]
        dist, idx = distances.min(dim=1)
        dist = dist.clamp_min_(0.0)
        # reduce: counts, means, variances (two passes)
        count = torch.bincount(idx, minlength=m)
        sums = torch.zeros(m, d, device=device).index_add_(0, idx, x)
        safe = count.clamp_min(1).to(x.dtype)[:, None]
        mean = sums / safe
        deviation = x - mean[idx]
        var = torch.zeros(m, d, device=device).index_add_(0, idx, deviation * deviation) / safe
        # update
        occupied = (count > 0)[:, None]
        v = torch.where(occupied, momentum * v + (mean - a), momentum * v)
        a = a + learning_rate * temperature * v
        # energy: the one scalar read back
        energy = dist.to(torch.float64).mean().item()
        walls.append(time.perf_counter() - start)
        del var  # computed as kcs computes it, not used by the loop
        print(f"iteration {iteration}: T {temperature:.4f} energy {energy:.9g} wall {1e3 * walls[-1]:.3f} ms")
        temperature *= 0.9
    if len(walls) > 1:
        mean_wall = sum(walls[1:]) / (len(walls) - 1)
        print(f"iterations 1..{len(walls) - 1}: mean wall {1e3 * mean_wall:.3f} ms")


if __name__ == "__main__":
    main()
