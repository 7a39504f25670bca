#!/usr/bin/env python3
"""Prints the GPU benchmark table from one scripts/gpu-check run: Tributary's CUDA engine against its
CPU engine and against PyTorch CUDA on the same GPU, model and batch, with the issue's targets
(cnn at batch 64: >= 10x the CPU engine, >= 1.0x PyTorch CUDA). Writes the same table as Markdown
to stdout and, with --json, a machine-readable summary.

  compare_gpu.py tributary.json torch.jsonl [--json summary.json]
"""
import argparse
import json


def load_tributary(path):
    with open(path) as f:
        gb = json.load(f)
    out, errors = {}, {}
    for b in gb["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        _, backend_model, batch = b["name"].split("/")[:3]  # BM_Train/cuda_cnn/64/real_time
        backend, model = backend_model.split("_", 1)
        key = (backend, model, int(batch))
        if b.get("error_occurred"):
            errors[key] = b.get("error_message", "error")
        else:
            out[key] = b["items_per_second"]
    return out, errors


def load_torch(path):
    ref = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    r = json.loads(line)
                    ref[(r["mode"], r["model"], r["batch"])] = r["samples_per_second"]
    except FileNotFoundError:
        pass
    return ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tributary_json")
    ap.add_argument("torch_jsonl")
    ap.add_argument("--json")
    args = ap.parse_args()
    ours, errors = load_tributary(args.tributary_json)
    ref = load_torch(args.torch_jsonl)
    cpu_cnn = ours.get(("cpu", "cnn", 64))
    rows = []
    print("| model | batch | Tributary CUDA (samples/s) | vs Tributary CPU | vs PyTorch CUDA (default) | vs PyTorch CUDA (fp32) |")
    print("|---|---:|---:|---:|---:|---:|")
    for (backend, model, batch), sps in sorted(ours.items()):
        if backend != "cuda":
            continue
        cpu = ours.get(("cpu", model, batch))
        t_def, t_fp32 = ref.get(("default", model, batch)), ref.get(("fp32", model, batch))
        fmt = lambda r: f"{sps / r:.2f}x ({r:,.0f})" if r else "n/a"
        print(f"| {model} | {batch} | {sps:,.0f} | {fmt(cpu)} | {fmt(t_def)} | {fmt(t_fp32)} |")
        rows.append({"model": model, "batch": batch, "cuda_samples_per_second": sps,
                     "cpu_samples_per_second": cpu, "torch_default": t_def, "torch_fp32": t_fp32})
    print()
    for (backend, model, batch), sps in sorted(ours.items()):
        if backend == "cpu":
            print(f"Tributary CPU engine (1 thread): {model} batch {batch}: {sps:,.0f} samples/s")
    for key, msg in sorted(errors.items()):
        print(f"- not measured: {key[0]} {key[1]} batch {key[2]}: {msg}")
    gpu_cnn = ours.get(("cuda", "cnn", 64))
    torch_cnn = ref.get(("default", "cnn", 64))
    targets = {
        "cnn64_vs_cpu": (gpu_cnn / cpu_cnn) if gpu_cnn and cpu_cnn else None,
        "cnn64_vs_torch_default": (gpu_cnn / torch_cnn) if gpu_cnn and torch_cnn else None,
    }
    print()
    for name, goal in (("cnn64_vs_cpu", 10.0), ("cnn64_vs_torch_default", 1.0)):
        v = targets[name]
        verdict = "n/a" if v is None else ("met" if v >= goal else "NOT met")
        print(f"- target {name} >= {goal:g}x: {'n/a' if v is None else f'{v:.2f}x'} ({verdict})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "errors": {" ".join(map(str, k)): v for k, v in errors.items()},
                       "targets": targets}, f, indent=2)


if __name__ == "__main__":
    main()
