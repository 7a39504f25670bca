#!/usr/bin/env python3
"""Prints Tributary's CPU training throughput next to PyTorch's, its GFLOP/s next to a large GEMM,
and the speedup of two training threads over one, from one run on one machine. Called by
scripts/bench-train with the two result files. Exits 1 when a thread speedup at batch 64 misses its
target (cnn 1.7x, mlp 1.4x): issue 18's bar, checked where it is measured."""
import json
import sys


def main(tributary_json, torch_jsonl):
    with open(tributary_json) as f:
        gb = json.load(f)
    ours, threaded, gemm, path = {}, {}, None, ""
    for b in gb["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"]  # BM_Train/mlp/32/1/real_time or BM_EigenGemm/1024
        if name.startswith("BM_EigenGemm"):
            gemm, path = b["GFLOPS"], b.get("label", "")
        elif name.startswith("BM_Train"):
            _, model, batch, threads = name.split("/")[:4]
            row = (b["items_per_second"], b["GFLOPS"])
            if int(threads) == 1:
                ours[(model, int(batch))] = row
            else:
                threaded[(model, int(batch), int(threads))] = row
    ref = {}
    with open(torch_jsonl) as f:
        for line in f:
            r = json.loads(line)
            ref[(r["model"], r["batch"])] = r["samples_per_second"]
    print(f"Eigen large-GEMM (1024^3, 1 thread, {path} path): {gemm:.1f} GFLOP/s")
    print(f"{'model':17} {'batch':>5} {'tributary/s':>12} {'pytorch/s':>10} {'ratio':>7} {'GFLOP/s':>8} {'of GEMM':>8}")
    for (model, batch), (sps, gflops) in sorted(ours.items()):
        r = ref.get((model, batch))
        ratio = f"{sps / r:6.1f}x" if r else "   n/a"
        print(f"{model:17} {batch:5d} {sps:12.0f} {r or 0:10.0f} {ratio:>7} {gflops:8.1f} {100 * gflops / gemm:7.0f}%")
    targets = {("cnn", 64): 1.7, ("mlp", 64): 1.4}
    missed = []
    print()
    print(f"{'model':17} {'batch':>5} {'threads':>7} {'samples/s':>10} {'1 thread':>10} {'speedup':>8} {'target':>7}")
    for (model, batch, threads), (sps, _) in sorted(threaded.items()):
        base = ours[(model, batch)][0]
        target = targets.get((model, batch)) if threads == 2 else None
        speedup = sps / base
        mark = ""
        if target:
            mark = f"{target:.1f}x " + ("ok" if speedup >= target else "MISSED")
            if speedup < target:
                missed.append(f"{model} batch {batch}: {speedup:.2f}x < {target}x")
        print(f"{model:17} {batch:5d} {threads:7d} {sps:10.0f} {base:10.0f} {speedup:7.2f}x {mark}")
    if missed:
        print("thread speedup below target: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
