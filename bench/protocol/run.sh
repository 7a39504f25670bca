#!/usr/bin/env bash
# Protocol benchmarks with their reference: runs protocol_bench, then
# `openssl speed -seconds 3 -evp aes-128-gcm` pinned to one core, and prints
#   - encode+decode GB/s of a 10M-float update (target >= 2 GB/s)
#   - loopback mutual-TLS transfer MB/s of a 64 MiB update, and its ratio to AES-128-GCM on one
#     core at 16 KiB blocks, in the same run (target >= 0.4x; both TLS ends share the machine).
#     Two ratios: wall clock against `openssl speed -elapsed` (both see the same machine load),
#     and bytes per CPU-second of the whole transfer (both ends, all threads) against openssl's
#     default CPU-time figure, which does not depend on how loaded the machine is.
#   - plain loopback TCP (no TLS, no framing) in the same run: the kernel's share, and the TLS
#     transfer as a fraction of it.
# Usage: bench/protocol/run.sh [build dir]   (default build/release; needs protocol_bench built)
set -euo pipefail
build="${1:-build/release}"
bench="$build/bench/protocol/protocol_bench"
[[ -x "$bench" ]] || { echo "run.sh: $bench not found; build target protocol_bench first" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out/bench.json" --benchmark_out_format=json >/dev/null
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
"${pin[@]}" openssl speed -seconds 3 -evp aes-128-gcm 2>/dev/null > "$out/openssl_cpu.txt"
"${pin[@]}" openssl speed -elapsed -seconds 3 -evp aes-128-gcm 2>/dev/null > "$out/openssl_wall.txt"
tail -2 "$out/openssl_wall.txt"

python3 - "$out/bench.json" "$out/openssl_cpu.txt" "$out/openssl_wall.txt" <<'PY'
import json, sys
bench = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
def rate(prefix, key="bytes_per_second"):
    for name, b in bench.items():
        if name.startswith(prefix):
            return b[key]
    raise SystemExit(f"run.sh: no result for {prefix}")
# openssl speed prints "AES-128-GCM  <16B>k <64B>k <256B>k <1024B>k <8192B>k <16384B>k" (1000s of bytes/s).
def aes_rate(path):
    line = [l for l in open(path) if l.lower().startswith("aes-128-gcm")][-1]
    return float(line.split()[-1].rstrip("k")) * 1000.0
aes_cpu = aes_rate(sys.argv[2])
aes = aes_rate(sys.argv[3])
codec = rate("BM_EncodeDecodeUpdate")
framed = rate("BM_FrameAndReassemble")
model = rate("BM_EncodeDecodeModel")
tls = rate("BM_TransferLoopback/tls")
tls_cpu = rate("BM_TransferLoopback/tls", "cpu_bytes_per_second")
mem = rate("BM_TransferLoopback/mem")
tcp = rate("BM_TcpLoopback")
tcp_cpu = rate("BM_TcpLoopback", "cpu_bytes_per_second")
print(f"encode+decode 10M-float update:   {codec/1e9:6.2f} GB/s  (target >= 2)")
print(f"  framed + reassembled (1 MiB):   {framed/1e9:6.2f} GB/s")
print(f"  10M-float model payload:        {model/1e9:6.2f} GB/s")
print(f"loopback mTLS 64 MiB transfer:    {tls/1e6:8.1f} MB/s")
print(f"  in-memory transport:            {mem/1e6:8.1f} MB/s")
print(f"  per CPU-second (both ends):     {tls_cpu/1e6:8.1f} MB/s")
print(f"plain loopback TCP (no TLS):      {tcp/1e6:8.1f} MB/s, {tcp_cpu/1e6:.1f} MB/s per CPU-second")
print(f"openssl aes-128-gcm, 1 core, 16K: {aes/1e6:8.1f} MB/s wall, {aes_cpu/1e6:.1f} MB/s per CPU-second")
print(f"TLS transfer / AES-GCM one core:  {tls/aes:8.2f}x wall clock (target >= 0.4)")
print(f"                                  {tls_cpu/aes_cpu:8.2f}x per CPU-second")
print(f"TLS transfer / plain TCP:         {tls/tcp:8.2f}x wall clock")
PY
