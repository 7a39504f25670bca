#!/usr/bin/env python3
"""Tributary's one-thread training throughput against PyTorch's, measured in interleaved pairs.

compare.py takes one whole train_bench run and one whole torch_reference.py run, minutes apart; on
a machine whose speed drifts (a shared VM: the GEMM ceiling has read 150 to 236 GFLOP/s on one
day) a ratio then compares two different machines. This runs each (model, batch) point as a pair,
Tributary then PyTorch or the other way round (alternating by repetition), `--reps` times, and
prints each side's median, the ratio of the medians and the lowest and highest ratio of a pair.

  bench/train/interleaved.py [--build build/ci] [--models conv1d_recognizer,mobile_cnn]
                             [--batches 10,32,64] [--reps 3] [--seconds 1]

PyTorch is Debian's python3-torch on one thread (OMP_NUM_THREADS=1, torch.set_num_threads(1) in
torch_reference.py)."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tributary(bench, model, batch, seconds):
    out = subprocess.run(
        [bench, f"--benchmark_filter=^BM_Train/{model}/{batch}/1/", f"--benchmark_min_time={seconds}",
         "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") != "aggregate"]
    if len(runs) != 1:
        sys.exit(f"train_bench ran {len(runs)} benchmarks for {model}/{batch}, not 1")
    return runs[0]["items_per_second"]


def pytorch(model, batch, seconds):
    # The point twice in one process, the first run untimed: a fresh process's first seconds are
    # slow (torch_reference.py's 5 warm-up steps are not enough alone; in its sweep the smaller
    # batches warm up the larger).
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run(
        ["/usr/bin/python3", os.path.join(HERE, "torch_reference.py"), "--models", model,
         "--batches", f"{batch},{batch}", "--seconds", str(seconds)],
        check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])["samples_per_second"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--models", default="conv1d_recognizer,mobile_cnn")
    ap.add_argument("--batches", default="10,32,64")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "train", "train_bench")
    if not os.access(bench, os.X_OK):
        sys.exit(f"{bench} is missing: build the bench targets of {a.build} first")
    points = [(m, int(b)) for m in a.models.split(",") for b in a.batches.split(",")]
    ours = {p: [] for p in points}
    theirs = {p: [] for p in points}
    for rep in range(a.reps):
        for model, batch in points:
            first_ours = rep % 2 == 0
            if first_ours:
                ours[(model, batch)].append(tributary(bench, model, batch, a.seconds))
            theirs[(model, batch)].append(pytorch(model, batch, a.seconds))
            if not first_ours:
                ours[(model, batch)].append(tributary(bench, model, batch, a.seconds))
            print(f"[interleaved] rep {rep + 1}/{a.reps} {model} {batch}: tributary "
                  f"{ours[(model, batch)][-1]:.0f}/s, pytorch {theirs[(model, batch)][-1]:.0f}/s",
                  file=sys.stderr, flush=True)
    print(f"{'model':17} {'batch':>5} {'tributary/s':>12} {'pytorch/s':>10} {'ratio':>7} "
          f"{'pairs':>11}   (medians of {a.reps} interleaved pairs; pairs: lowest-highest ratio)")
    for p in points:
        mo, mt = statistics.median(ours[p]), statistics.median(theirs[p])
        pairs = [o / t for o, t in zip(ours[p], theirs[p])]
        print(f"{p[0]:17} {p[1]:5d} {mo:12.0f} {mt:10.0f} {mo / mt:6.1f}x "
              f"{min(pairs):4.1f}-{max(pairs):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
