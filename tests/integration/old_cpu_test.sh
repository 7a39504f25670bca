#!/usr/bin/env bash
# The x86-64 build runs on a CPU without AVX, and what the docs promise to be CPU-independent is:
# under `qemu-x86_64 -cpu Westmere` (SSE4.2, no AVX; an AVX instruction there is SIGILL), where
# every run-time dispatch (core/simd.h, train/cpu/gemm.h) must take its baseline path,
#   1. the codec and engine suites pass, and the codecs' encoded, decoded and folded bits match
#      the values the native run checks (CrossCpuBitsTest);
#   2. tributary-train's cnn after 8 steps on 2 threads is byte for byte the one a native run on
#      TRIBUTARY_SIMD=baseline saves (the baseline GEMM path, with its fixed block sizes, gives the
#      same bits on every x86-64);
#   3. that tributary-client joins a mutual-TLS run with two native clients and the native
#      coordinator (tests/integration/mixed_arch_test.py).
#   old_cpu_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=${1:?build dir}
src=${2:?source dir}
qemu=(qemu-x86_64 -cpu Westmere)
if ! command -v qemu-x86_64 > /dev/null; then
  echo "[old-cpu] qemu-x86_64 is missing: scripts/setup-deps --aarch64 installs qemu-user"; exit 1
fi
work=$(mktemp -d /tmp/trib_old_cpu.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "[old-cpu] codec and engine suites on a Westmere CPU"
"${qemu[@]}" "$build/tests/compression/compression_test" --gtest_brief=1 2> /dev/null
# The layers, the threaded engine and prediction (the zoo's learning and finite-difference tests
# take minutes under emulation; they run natively, and the training run below covers the cnn).
"${qemu[@]}" "$build/tests/train/train_test" --gtest_brief=1 \
  --gtest_filter='LayerGradTest.*:SgdTest.*:NativePredictTest.*' 2> /dev/null
# The threaded engine on mlp and lenet: its cnn cases take over two minutes under emulation (127 of
# 141 s), and the cnn's training run below covers the cnn on this CPU.
"${qemu[@]}" "$build/tests/train/train_threads_test" --gtest_brief=1 --gtest_filter='-*/cnn' \
  2> /dev/null

echo "[old-cpu] the baseline GEMM path trains to the same bits natively and on Westmere"
train=("$build/train/tributary-train" --dataset synthetic --train-examples 640 --model cnn
  --epochs 1 --batch 32 --set fit.max_steps=8 --set data.test_examples=100 --threads 2
  --log-level warn)
TRIBUTARY_SIMD=baseline "${train[@]}" --save "$work/native.safetensors"
"${qemu[@]}" "${train[@]}" --save "$work/westmere.safetensors" 2> /dev/null
cmp "$work/native.safetensors" "$work/westmere.safetensors"
"${train[@]}" --save "$work/dispatched.safetensors"
if cmp -s "$work/native.safetensors" "$work/dispatched.safetensors"; then
  echo "[old-cpu] (this CPU took the baseline GEMM path itself)"
fi

echo "[old-cpu] a Westmere tributary-client in a native mutual-TLS run"
TRIBUTARY_CERTS_BIN="$build/crypto/tributary-certs" \
TRIBUTARY_COORDINATOR_BIN="$build/coordinator/tributary-coordinator" \
TRIBUTARY_CLIENT_BIN="$build/client/tributary-client" \
TRIBUTARY_OLD_X86_CLIENT_BIN="$build/client/tributary-client" \
  python3 "$src/tests/integration/mixed_arch_test.py" \
  MixedArchitectureRunTest.test_a_client_on_an_x86_cpu_without_avx_joins_the_run
echo "[old-cpu] passed"
