"""PyTorch eager baseline for runtime_bench: the default job's CNN (the zoo's `cnn`,
width 16, on 1×28×28 Fashion-MNIST-shaped inputs), trained with SGD + momentum on
whole batches. Prints one JSON line: {"samples_per_s": ..., "step_ms": ...}.

    python3 bench/pytorch_eager.py --threads 2 --batch 128 --steps 60 --warmup 10
"""

import argparse
import json
import time

import torch
from torch import nn


class ChannelsLastMaxPool(nn.Module):
    """2×2 max pooling on a channels-last copy, as the zoo's (the CPU kernel is far
    faster in that order)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.max_pool2d(x.contiguous(memory_format=torch.channels_last), 2)


def cnn(width: int, classes: int) -> nn.Module:
    model = nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), ChannelsLastMaxPool(),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), ChannelsLastMaxPool(),
        nn.Flatten(), nn.Linear(2 * width * 7 * 7, 128), nn.ReLU(),
        nn.Linear(128, classes),
    )
    # Convolution weights in channels-last order, as the zoo holds them.
    return model.to(memory_format=torch.channels_last)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--width", type=int, default=16)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = cnn(args.width, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    # Batches drawn up front, as the runtime holds its data in memory.
    inputs = torch.rand(args.warmup + args.steps, args.batch, 1, 28, 28)
    labels = torch.randint(0, 10, (args.warmup + args.steps, args.batch))

    def step(k: int) -> None:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[k]), labels[k])
        loss.backward()
        optimizer.step()

    for k in range(args.warmup):
        step(k)
    start = time.perf_counter()
    for k in range(args.warmup, args.warmup + args.steps):
        step(k)
    seconds = time.perf_counter() - start
    print(json.dumps({"samples_per_s": args.steps * args.batch / seconds, "step_ms": 1000 * seconds / args.steps}))


if __name__ == "__main__":
    main()
