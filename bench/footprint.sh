#!/usr/bin/env bash
# The client's footprint (issue #18), from an installed build:
#   - the stripped size of a C app linked with the installed client library
#     (examples/edge_app/edge_app_c), and the shared libraries it still needs (readelf NEEDED);
#   - the same for a C app that trains with Tributary's engine (examples/native_app/native_app_c,
#     Tributary::train: the client, the CPU engine and, in a CUDA build, the CUDA backend);
#   - both apps linked fully static (-static: OpenSSL, zstd, zlib and libc from their .a files),
#     when the build compiled fmt and toml++ in (TRIBUTARY_HEADER_ONLY_DEPS: then nothing else is
#     needed), and each static app started (under qemu for a cross build) to show that it runs;
#   - for a native build, the peak RSS of tributary-client during one `mlp` round on its share of
#     Fashion-MNIST (a tenth: 6,000 examples), against the model's and the data's sizes.
# A cross build (build/aarch64) is measured with its toolchain file; its RSS is not (qemu's would be
# measured, not the client's).
#
#   bench/footprint.sh [BUILD_DIR]     (default build/release; build/ci and build/aarch64 work too)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
src=$PWD
work=$(mktemp -d /tmp/trib_footprint.XXXXXX)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$work"' EXIT
cache="$build/CMakeCache.txt"
toolchain=$(sed -n 's/^CMAKE_TOOLCHAIN_FILE:[A-Z]*=//p' "$cache")
header_only=$(sed -n 's/^TRIBUTARY_HEADER_ONLY_DEPS:BOOL=//p' "$cache")
cross=()
tool_prefix=""
arch=$(uname -m)
if [[ -n "$toolchain" ]]; then
  cross=(--toolchain "$toolchain")
  # The toolchain file names the target and its compiler (aarch64-linux-gnu-gcc): the binutils
  # share the compiler's prefix.
  arch=$(sed -n 's/^set(CMAKE_SYSTEM_PROCESSOR \(.*\))$/\1/p' "$toolchain")
  tool_prefix=$(sed -n 's/^set(CMAKE_C_COMPILER \(.*\)gcc)$/\1/p' "$toolchain")
fi
echo "[footprint] $build ($arch; fmt and toml++ compiled in: ${header_only:-OFF})"
cmake --install "$build" --prefix "$work/prefix" > /dev/null

edge_app_c() {  # edge_app_c() DIR EXTRA_CMAKE_ARGS...: builds edge_app_c into DIR
  local dir=$1
  shift
  cmake -S examples/edge_app -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cross[@]}" \
    -DCMAKE_PREFIX_PATH="$work/prefix" "$@" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  cmake --build "$dir" --target edge_app_c >> "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  "${tool_prefix}strip" -o "$dir/edge_app_c.stripped" "$dir/edge_app_c"
}
needed() { "${tool_prefix}readelf" -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
native_app_c() {  # native_app_c() DIR: builds examples/native_app's native_app_c into DIR
  local dir=$1
  cmake -S examples/native_app -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cross[@]}" \
    -DCMAKE_PREFIX_PATH="$work/prefix" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  cmake --build "$dir" --target native_app native_app_c >> "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  "${tool_prefix}strip" -o "$dir/native_app_c.stripped" "$dir/native_app_c"
}

edge_app_c "$work/edge"
size=$(stat -c %s "$work/edge/edge_app_c.stripped")
echo "edge_app_c (C API, static client library), stripped: $size bytes ($(numfmt --to=si "$size")B)"
echo "  shared libraries it needs: $(needed "$work/edge/edge_app_c")"
native_app_c "$work/native"
size=$(stat -c %s "$work/native/native_app_c.stripped")
echo "native_app_c (C API, the client and the engine), stripped: $size bytes ($(numfmt --to=si "$size")B)"
echo "  shared libraries it needs: $(needed "$work/native/native_app_c")"
if [[ "$header_only" == "ON" ]]; then
  # Linked by hand: the package names zstd's shared library (zstd::libzstd_shared), so this shows
  # what a static link needs: Tributary's archives (one group: the linker takes only the objects an
  # app reaches, so no data reader it does not call and no libzip), OpenSSL's, zstd's and zlib's,
  # and the C/C++ runtimes.
  mkdir -p "$work/static"
  libdir=$(dirname "$(find "$work/prefix" -name libtributary_client.a | head -1)")
  archives=()
  for lib in native client split_channel privacy protocol crypto compression train data core; do
    archives+=("$libdir/libtributary_$lib.a")
  done
  static_app() {  # static_app NAME SOURCE: links SOURCE fully static into $work/static/NAME
    "${tool_prefix}g++" -O2 -static -o "$work/static/$1" -x c "$2" -x none \
      -I"$work/prefix/include" -Wl,--start-group "${archives[@]}" -Wl,--end-group -l:libssl.a \
      -l:libcrypto.a -l:libzstd.a -l:libz.a -lm -lpthread -ldl 2> "$work/static_$1.log" \
      || { cat "$work/static_$1.log"; exit 1; }
    "${tool_prefix}strip" -o "$work/static/$1.stripped" "$work/static/$1"
    size=$(stat -c %s "$work/static/$1.stripped")
    echo "$1 fully static (Tributary's archives, OpenSSL, zstd, zlib, libstdc++ and glibc)," \
      "stripped: $size bytes ($(numfmt --to=si "$size")B); NEEDED: $(needed "$work/static/$1")(none);" \
      "$(file -b "$work/static/$1.stripped" | cut -d, -f1-2)"
  }
  static_app edge_app_c examples/edge_app/edge_app_c.c
  static_app native_app_c examples/native_app/native_app_c.c
  if [[ -n "$toolchain" ]]; then
    # A cross build: it starts under qemu-user with no aarch64 libraries at all (-L points
    # nowhere) and answers with its usage.
    usage=$("qemu-$arch" -L /nonexistent "$work/static/native_app_c.stripped" 2>&1 || true)
    echo "  native_app_c under qemu-$arch, with no libraries: $(echo "$usage" | head -1)"
  else
    # The stripped static engine app federates for real: examples/native_app/join_run.sh with it
    # as the C client (beside the dynamic C++ app) in a 4-round run over mutual TLS.
    mkdir -p "$work/static_bin"
    cp "$work/native/native_app" "$work/static_bin/"
    cp "$work/static/native_app_c.stripped" "$work/static_bin/native_app_c"
    examples/native_app/join_run.sh "$work/prefix" "$work/static_bin" "$work/static_run" \
      > "$work/static_run.log" 2>&1 || { cat "$work/static_run.log"; exit 1; }
    echo "  native_app_c (static, stripped) in a real 4-round run:" \
      "$(grep -h "held-out accuracy" "$work/static_run/native_app_c.log")"
  fi
fi
[[ -n "$toolchain" ]] && exit 0

# One mlp round: a coordinator and one tributary-client with a tenth of the training set.
bin="$work/prefix/bin"
cd "$work"
"$bin/tributary-certs" init --dir pki > /dev/null
"$bin/tributary-certs" server --dir pki --host localhost --ip 127.0.0.1 > /dev/null
"$bin/tributary-certs" client --dir pki --id edge > /dev/null
cat > coordinator.toml <<TOML
[net]
listen = "127.0.0.1:0"
[tls]
ca = "pki/ca.crt"
cert = "pki/server.crt"
key = "pki/server.key"
[run]
model = "mlp"
rounds = 1
clients_per_round = 1
min_available = 1
round_timeout_s = 300
[fit]
epochs = 1
[eval]
every = 0
[output]
ready_file = "ready"
TOML
"$bin/tributary-coordinator" -c coordinator.toml > coordinator.log 2>&1 &
coordinator=$!
for _ in $(seq 300); do [[ -s ready ]] && break; sleep 0.1; done
/usr/bin/time -f "%M" -o client.rss "$bin/tributary-client" --coordinator "$(cat ready)" \
  --ca pki/ca.crt --cert pki/clients/edge.crt --key pki/clients/edge.key --set run.model=mlp \
  --num-clients 10 --client-index 0 --partition iid --threads 1 --log-level warn > client.log 2>&1
wait $coordinator
rss_kb=$(cat client.rss)
examples=6000
echo "tributary-client, one mlp round (199,210 parameters: 0.80 MB of float32; $examples training" \
  "examples: $((examples * 784 * 4 / 1000)) kB as float32 pixels): peak RSS $((rss_kb / 1024)) MiB"
cd "$src"
