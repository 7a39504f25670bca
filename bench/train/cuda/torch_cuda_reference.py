#!/usr/bin/env python3
"""The plain PyTorch CUDA training loop a user would otherwise write: the GPU reference for
bench/train/cuda/cuda_train_bench.

Same models as Tributary's zoo (mlp, cnn, lenet; layers as in bench/train/torch_reference.py), same
SGD step (lr 0.01, no momentum), random 28x28x1 data resident on the GPU, batches sliced from it.
Timed with CUDA events around a run of whole steps, after a warm-up. Prints one JSON line per
(model, batch, mode):

  mode "default": PyTorch's defaults, which let cuDNN convolutions use TF32 tensor cores;
  mode "fp32":    TF32 off for cuDNN and matmul, the arithmetic Tributary's engine uses.

Exits 2 with a message when PyTorch or its CUDA support is missing.
"""
import argparse
import json
import os
import sys

try:
    import torch
    import torch.nn as nn
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"torch_cuda_reference: PyTorch is not importable: {e}", file=sys.stderr)
    sys.exit(2)

# The same model definitions as the CPU reference, so the two can never drift apart.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_reference import make_model  # noqa: E402


def bench(name, batch, seconds, mode):
    strict = mode == "fp32"
    torch.backends.cudnn.allow_tf32 = not strict
    torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default for matmul
    torch.manual_seed(1)
    dev = torch.device("cuda")
    model = make_model(name).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    n = 4096
    x = torch.rand(n, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (n,), device=dev)

    def step(i):
        lo = (i * batch) % (n - batch + 1)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[lo:lo + batch]), y[lo:lo + batch])
        loss.backward()
        opt.step()

    for i in range(20):  # warm-up: cuDNN algorithm choice, allocator, lazy init
        step(i)
    torch.cuda.synchronize()
    # Calibrate the step count on a short run, then time one long run.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(20):
        step(i)
    end.record()
    end.synchronize()
    per_step = start.elapsed_time(end) / 1000 / 20
    steps = max(20, int(seconds / max(per_step, 1e-6)))
    start.record()
    for i in range(steps):
        step(i)
    end.record()
    end.synchronize()
    elapsed = start.elapsed_time(end) / 1000
    return steps * batch / elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="cnn,mlp,lenet")
    ap.add_argument("--batches", default="64")
    ap.add_argument("--modes", default="default,fp32")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_cuda_reference: torch.cuda.is_available() is False (PyTorch built without CUDA, or no GPU)",
              file=sys.stderr)
        sys.exit(2)
    gpu = torch.cuda.get_device_name(0)
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            for mode in args.modes.split(","):
                sps = bench(name, batch, args.seconds, mode)
                print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "gpu": gpu, "mode": mode,
                                  "model": name, "batch": batch, "samples_per_second": round(sps, 1)}), flush=True)


if __name__ == "__main__":
    main()
