#!/usr/bin/env python3
"""Prints Tributary's CPU training throughput next to PyTorch's, and its GFLOP/s next to a large
Eigen GEMM, from one run on one machine. Called by scripts/bench-train with the two result files."""
import json
import sys


def main(tributary_json, torch_jsonl):
    with open(tributary_json) as f:
        gb = json.load(f)
    ours, gemm = {}, None
    for b in gb["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"]  # BM_Train/mlp/32 or BM_EigenGemm/1024
        if name.startswith("BM_EigenGemm"):
            gemm = b["GFLOPS"]
        elif name.startswith("BM_Train"):
            _, model, batch = name.split("/")[:3]
            ours[(model, int(batch))] = (b["items_per_second"], b["GFLOPS"])
    ref = {}
    with open(torch_jsonl) as f:
        for line in f:
            r = json.loads(line)
            ref[(r["model"], r["batch"])] = r["samples_per_second"]
    print(f"Eigen large-GEMM (1024^3, 1 thread): {gemm:.1f} GFLOP/s")
    print(f"{'model':6} {'batch':>5} {'tributary/s':>12} {'pytorch/s':>10} {'ratio':>7} {'GFLOP/s':>8} {'of GEMM':>8}")
    for (model, batch), (sps, gflops) in sorted(ours.items()):
        r = ref.get((model, batch))
        ratio = f"{sps / r:6.1f}x" if r else "   n/a"
        print(f"{model:6} {batch:5d} {sps:12.0f} {r or 0:10.0f} {ratio:>7} {gflops:8.1f} {100 * gflops / gemm:7.0f}%")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
