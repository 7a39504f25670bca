#!/usr/bin/env bash
# The installed package works for an app: installs this build into a fresh prefix, checks that the
# package names only the libraries an app links, builds examples/edge_app and examples/byo_model
# against it with find_package(Tributary CONFIG) and Boost, cereal and nlohmann-json disabled, joins
# both edge apps (C++ and C API) to a real coordinator over mutual TLS
# (examples/edge_app/join_run.sh), builds examples/native_app (Tributary::train: the engine) and
# joins its two apps to a run of their model file (examples/native_app/join_run.sh, which checks
# the federated model's held-out accuracy), and imports the Python package from the install tree (when the
# build has it).
#   install_example_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=${1:?build dir}
src=${2:?source dir}
work=$(mktemp -d /tmp/trib_install.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The install, with install_layout_test.py's checks (every file under the prefix, as
# docs/embedding.md lists them); it leaves the tree in $work/install, prefix /opt/tributary under
# DESTDIR $work/install/root. The package is relocatable: it moves to $work/prefix.
echo "[install-example] installing $build (install_layout_test.py)"
/usr/bin/python3 "$src/tests/integration/install_layout_test.py" "$build" "$src" --keep "$work/install"
mv "$work/install/root/opt/tributary" "$work/prefix"
# A CUDA build's programs find the backend module in the moved prefix (train/cuda_backend.h), not
# in the build tree they were built in: they load it where the NVIDIA driver is installed, and
# without the driver they name the module they found and do not load it.
if [ -f "$work/prefix/lib/tributary/libtributary_cuda.so" ]; then
  out=$("$work/prefix/bin/tributary-train" --device auto --log-level debug --dataset synthetic \
    --train-examples 64 --set data.test_examples=64 --epochs 1 2>&1 || true)
  grep -qE "CUDA backend: (loaded|found) $work/prefix/lib/tributary/libtributary_cuda.so" <<< "$out" ||
    { echo "[install-example] the moved install did not find its CUDA backend:"; echo "$out"; exit 1; }
  echo "[install-example] the moved install finds its CUDA backend module:" \
    "$(grep -oE "CUDA backend: (loaded|found) [^,]*" <<< "$out")"
fi
# The package asks a consumer only for what it links: no header-only library Tributary is built with
# (Boost, cereal, nlohmann-json, Eigen) is named in it, and every library is found, not linked by a bare
# name (-lzstd).
pkg=$(dirname "$(find "$work/prefix" -name TributaryConfig.cmake | head -1)")
if grep -nE "^[^#]*(Boost|cereal|nlohmann|Eigen)" "$pkg"/Tributary*.cmake; then
  echo "[install-example] the package names a header-only build dependency (above)"; exit 1
fi
if grep -nE '(LINK_ONLY:|[";])(zstd|ssl|crypto|spdlog|fmt)[>;"]' "$pkg"/TributaryTargets*.cmake; then
  echo "[install-example] the package links a library by bare name (above)"; exit 1
fi
# ... and an app configures and builds with those packages out of reach.
no_headers_only="-DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DCMAKE_DISABLE_FIND_PACKAGE_cereal=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON"
echo "[install-example] building examples/edge_app against the installed package"
# shellcheck disable=SC2086
cmake -S "$src/examples/edge_app" -B "$work/edge-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" $no_headers_only > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/edge-build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# shellcheck disable=SC2086
cmake -S "$src/examples/byo_model" -B "$work/byo-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" $no_headers_only > "$work/byo-configure.log" || { cat "$work/byo-configure.log"; exit 1; }
cmake --build "$work/byo-build" > "$work/byo-build.log" || { cat "$work/byo-build.log"; exit 1; }
test -x "$work/byo-build/logreg_client" && test -x "$work/byo-build/logreg_client_c"
echo "[install-example] building examples/native_app (Tributary::train) against the installed package"
# shellcheck disable=SC2086
cmake -S "$src/examples/native_app" -B "$work/native-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" $no_headers_only -DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=ON \
  > "$work/native-configure.log" || { cat "$work/native-configure.log"; exit 1; }
cmake --build "$work/native-build" > "$work/native-build.log" || { cat "$work/native-build.log"; exit 1; }
# The Python package, when the build has it (install_layout_test.py checked that it is installed
# then; an install without it leaves an empty directory).
pyinit=$(find "$work/prefix/" -path '*/dist-packages/tributary/__init__.py' | head -1)
pydir=${pyinit%/__init__.py}
if [[ -n "$pyinit" ]]; then
  echo "[install-example] importing tributary from $(dirname "$pydir")"
  PYTHONPATH=$(dirname "$pydir") /usr/bin/python3 -c \
    "import tributary as tb; assert tb.__version__; tb.ClientOptions(coordinator='x:1')"
fi
echo "[install-example] joining a 2-round run"
if ! bash "$src/examples/edge_app/join_run.sh" "$work/prefix" "$work/edge-build" "$work/run"; then
  for f in "$work"/run/*.log; do echo "== $f"; tail -20 "$f"; done
  exit 1
fi
echo "[install-example] joining both native apps to a 4-round run of their model file"
if ! bash "$src/examples/native_app/join_run.sh" "$work/prefix" "$work/native-build" "$work/native-run"; then
  for f in "$work"/native-run/*.log; do echo "== $f"; tail -20 "$f"; done
  exit 1
fi
echo "[install-example] passed"
