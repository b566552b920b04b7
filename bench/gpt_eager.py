"""PyTorch eager baseline for gpu_bench: the zoo's `gpt` (token and position
embeddings; per layer x + proj(causal attention(norm(x))) and x + down(gelu(up(norm(x))));
a norm and a linear head over 256 byte values), trained with Adam on whole batches on
cuda:0 (PyTorch's default multi-tensor step, or with --fused its fused kernel), under autocast for bf16 or fp16 (fp16 with torch.amp's GradScaler) or in fp32
(TF32 off). Prints one JSON line: {"samples_per_s", "step_ms", "peak_bytes"}.

    python3 bench/gpt_eager.py --layers 12 --width 1024 --heads 16 --context 512 --batch 32 --precision bf16
"""

import argparse
import json
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 256  # byte-level text, as the zoo's text data set


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm(x)).split(C, 2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        return x + self.proj(y)


class FeedForward(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class Gpt(nn.Module):
    def __init__(self, layers: int, width: int, heads: int, context: int):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[m for _ in range(layers) for m in (Attention(width, heads), FeedForward(width))])
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, VOCAB))

    def forward(self, ids):
        position = torch.arange(ids.size(1), device=ids.device)
        return self.head(self.blocks(self.tokens(ids) + self.positions(position)))


def main() -> None:
    parser = argparse.ArgumentParser()
    for name, default in (("layers", 12), ("width", 1024), ("heads", 16), ("context", 512), ("batch", 32),
                          ("steps", 20), ("warmup", 5)):
        parser.add_argument("--" + name, type=int, default=default)
    parser.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="bf16")
    parser.add_argument("--fused", action="store_true", help="Adam's fused kernel (fused=True)")
    parser.add_argument("--trace", help="after the timed steps, two more under the profiler, as a Chrome trace")
    args = parser.parse_args()

    device = torch.device("cuda", 0)
    torch.manual_seed(1)
    if args.precision == "fp32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model = Gpt(args.layers, args.width, args.heads, args.context).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, fused=args.fused or None)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    # Batches in page-locked host memory, copied in each step as the runtime's are.
    ids = torch.randint(0, VOCAB, (args.batch, args.context + 1)).pin_memory()

    def step() -> None:
        batch = ids.to(device, non_blocking=True)
        x, y = batch[:, :-1], batch[:, 1:]
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        loss.item()

    for _ in range(args.warmup):
        step()
    torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    step_ms = statistics.median(times)
    peak_bytes = torch.cuda.max_memory_allocated(device)
    if args.trace:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as profile:
            for _ in range(2):
                step()
        profile.export_chrome_trace(args.trace)
    print(json.dumps({"samples_per_s": args.batch / (step_ms / 1e3), "step_ms": step_ms,
                      "peak_bytes": peak_bytes}))


if __name__ == "__main__":
    main()
