#!/usr/bin/env bash
# The CUDA backend is a module loaded at run time (train/cuda_backend.h): the module links the CUDA
# runtime and cuBLAS, and no other binary of the build does (directly or through a library), so a
# program that trains on the CPU never maps them.
#   cuda_linkage_test.sh MODULE BINARY...
set -euo pipefail
module=${1:?module}
shift
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
needed "$module" | grep -q '^libcudart\.so' || { echo "FAIL: $module does not link libcudart"; exit 1; }
needed "$module" | grep -q '^libcublas\.so' || { echo "FAIL: $module does not link libcublas"; exit 1; }
# The module exports its entry point and nothing of Tributary's own code.
exported=$(nm -D --defined-only "$module" | awk '{print $3}' | grep -v '^$' | sort -u)
[ "$exported" = "tributary_cuda_backend_v1" ] ||
  { echo "FAIL: $module exports more than its entry point:"; echo "$exported" | head; exit 1; }
for binary in "$@"; do
  readelf -h "$binary" | grep -Eq 'Type: +(EXEC|DYN)' ||
    { echo "FAIL: $binary is not a program or shared object"; exit 1; }
  if ldd "$binary" | grep -E 'libcudart|libcublas'; then
    echo "FAIL: $binary loads the CUDA libraries at start-up"; exit 1
  fi
  echo "ok: $binary links no CUDA library"
done
echo "ok: only $(basename "$module") links the CUDA runtime and cuBLAS"
