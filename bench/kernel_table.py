"""Kernel-by-kernel comparison of Kineto traces (Chrome trace JSON, as LibTorch's and
PyTorch's profilers save them; gpu_bench --traces writes them): per step, each kernel
name's count and GPU time in every trace, the largest differences against the first
first, and the totals. A step's GPU time that one runner spends and another does not
shows here as the kernels that carry it.

    python3 bench/kernel_table.py [--steps N] [--top K] BASE.json OTHER.json [...]
"""

import argparse
import collections
import json
import os

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def per_step(path: str, steps: int) -> dict:
    """Each kernel name's (count, milliseconds) per step, memcpy and memset included."""
    with open(path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    totals = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES:
            entry = totals[e["name"]]
            entry[0] += 1
            entry[1] += e.get("dur", 0) / 1e3
    return {name: (count / steps, ms / steps) for name, (count, ms) in totals.items()}


def short(name: str, width: int = 72) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--steps", type=int, default=2, help="steps each trace holds (gpu_bench's: 2)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    runs = [(os.path.basename(t).removesuffix(".kineto.json"), per_step(t, args.steps)) for t in args.traces]
    names = set().union(*(kernels for _, kernels in runs))
    base = runs[0][1]

    def spread(name: str) -> float:
        return max(abs(k.get(name, (0, 0.0))[1] - base.get(name, (0, 0.0))[1]) for _, k in runs[1:])

    header = f"{'kernel (per step)':72}" + "".join(f"  {label[:22]:>22}" for label, _ in runs)
    print(header)
    print("-" * len(header))
    for name in sorted(names, key=spread, reverse=True)[: args.top]:
        cells = "".join(f"  {k.get(name, (0, 0.0))[0]:6.1f} × {k.get(name, (0, 0.0))[1]:8.3f} ms" for _, k in runs)
        print(f"{short(name):72}{cells}")
    print("-" * len(header))
    totals = "".join(
        f"  {sum(c for c, _ in k.values()):6.1f} × {sum(ms for _, ms in k.values()):8.3f} ms" for _, k in runs)
    print(f"{'every kernel, memcpy and memset':72}{totals}")


if __name__ == "__main__":
    main()
