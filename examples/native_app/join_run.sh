#!/usr/bin/env bash
# Joins both native apps to a real coordinator over mutual TLS, each training patterns_cnn.toml with
# Tributary's engine on its own arrays, and checks that the run completes and that the federated
# model has learned the task.
#
#   examples/native_app/join_run.sh PREFIX NATIVE_BUILD [WORKDIR]
#
# PREFIX: a Tributary install prefix with bin/tributary-certs and bin/tributary-coordinator.
# NATIVE_BUILD: where examples/native_app was built against PREFIX (holds native_app and
# native_app_c). Runs a 4-round coordinator on a free port with the two apps as its clients, and
# exits 0 only when all three exited 0 and both apps predict their held-out examples with an
# accuracy of at least MIN_ACCURACY (default 0.6; chance is 0.1).
set -euo pipefail
prefix=${1:?usage: join_run.sh PREFIX NATIVE_BUILD [WORKDIR]}
build=${2:?usage: join_run.sh PREFIX NATIVE_BUILD [WORKDIR]}
work=${3:-$(mktemp -d)}
min_accuracy=${MIN_ACCURACY:-0.6}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cd "$work"
certs="$prefix/bin/tributary-certs"
"$certs" init --dir pki --force >/dev/null
"$certs" server --dir pki --host localhost --ip 127.0.0.1 --force >/dev/null
"$certs" client --dir pki --id cpp-native --force >/dev/null
"$certs" client --dir pki --id c-native --force >/dev/null

# The coordinator runs the apps' model file; the data keys give only its input shape (the
# coordinator evaluates nothing here: the apps predict their own held-out examples).
cat > coordinator.toml <<TOML
[net]
listen = "127.0.0.1:0"
[tls]
ca = "pki/ca.crt"
cert = "pki/server.crt"
key = "pki/server.key"
[run]
model = "$here/patterns_cnn.toml"
rounds = 4
clients_per_round = 2
min_available = 2
min_completed = 2
round_timeout_s = 120
[fit]
epochs = 2
batch_size = 32
lr = 0.05
momentum = 0.9
[eval]
every = 0
[data]
dataset = "synthetic"
synthetic.height = 8
synthetic.width = 8
[output]
checkpoint_dir = "runs"
ready_file = "ready"
TOML
rm -f ready
"$prefix/bin/tributary-coordinator" -c coordinator.toml > coordinator.log 2>&1 &
coordinator=$!
for _ in $(seq 300); do [[ -s ready ]] && break; sleep 0.1; done
[[ -s ready ]] || { echo "join_run: the coordinator did not start; see $work/coordinator.log" >&2; kill $coordinator; exit 1; }
address=$(cat ready)

"$build/native_app" --coordinator "$address" --ca pki/ca.crt --cert pki/clients/cpp-native.crt \
  --key pki/clients/cpp-native.key --model "$here/patterns_cnn.toml" --max-attempts 20 \
  > native_app.log 2>&1 &
cpp=$!
"$build/native_app_c" "$address" pki/ca.crt pki/clients/c-native.crt pki/clients/c-native.key \
  "$here/patterns_cnn.toml" > native_app_c.log 2>&1 &
c=$!

status=0
if ! wait $coordinator; then
  echo "join_run: coordinator failed; see $work/coordinator.log" >&2
  status=1
  kill $cpp $c 2>/dev/null || true  # they would keep retrying
fi
wait $cpp || { echo "join_run: native_app failed; see $work/native_app.log" >&2; status=1; }
wait $c || { echo "join_run: native_app_c failed; see $work/native_app_c.log" >&2; status=1; }
grep -h "^round" coordinator.log || true
for app in native_app native_app_c; do
  line=$(grep -h "held-out accuracy" "$app.log" || true)
  echo "$line"
  accuracy=$(sed -n 's/.*global model \([0-9.]*\).*/\1/p' <<< "$line")
  if [[ -z "$accuracy" ]] || ! awk -v a="$accuracy" -v m="$min_accuracy" 'BEGIN { exit !(a >= m) }'; then
    echo "join_run: $app's held-out accuracy '${accuracy}' is below $min_accuracy; see $work/$app.log" >&2
    status=1
  fi
done
[[ $status == 0 ]] && echo "join_run: both native apps federated $here/patterns_cnn.toml ($work)"
exit $status
