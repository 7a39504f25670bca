#!/usr/bin/env bash
# The client's footprint (issue #18): the stripped size of a C app statically linked with the
# installed client library (examples/edge_app/edge_app_c) and the shared libraries it still needs,
# and the peak RSS of tributary-client during one `mlp` round on its share of Fashion-MNIST (a
# tenth: 6,000 examples), against the model's and the data's sizes.
#
#   bench/footprint.sh [BUILD_DIR]     (default build/release; CI's build/ci works too)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
src=$PWD
work=$(mktemp -d /tmp/trib_footprint.XXXXXX)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
cmake -S examples/edge_app -B "$work/edge" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/edge" --target edge_app_c > /dev/null
strip -o "$work/edge_app_c.stripped" "$work/edge/edge_app_c"
size=$(stat -c %s "$work/edge_app_c.stripped")
echo "edge_app_c (C API, static client library), stripped: $size bytes ($(numfmt --to=si "$size")B)"
echo "  shared libraries it needs: $(ldd "$work/edge/edge_app_c" | awk '{print $1}' |
  grep -vE 'linux-vdso|ld-linux' | sed 's/\.so.*//' | tr '\n' ' ')"

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
  --num-clients 10 --client-index 0 --partition iid --log-level warn > client.log 2>&1
wait $coordinator
rss_kb=$(cat client.rss)
examples=6000
echo "tributary-client, one mlp round (199,210 parameters: 0.80 MB of float32; $examples training" \
  "examples: $((examples * 784 * 4 / 1000)) kB as float32 pixels): peak RSS $((rss_kb / 1024)) MiB"
cd "$src"
