#!/usr/bin/env bash
# Joins both example apps to a real coordinator over mutual TLS and checks that the run completes.
#
#   examples/edge_app/join_run.sh PREFIX EDGE_BUILD [WORKDIR]
#
# PREFIX: a Tributary install prefix with bin/tributary-certs and bin/tributary-coordinator.
# EDGE_BUILD: where examples/edge_app was built against PREFIX (holds edge_app and edge_app_c).
# Makes a PKI, runs a 2-round "mlp" coordinator on a free port with edge_app and edge_app_c as its
# two clients, and exits 0 only when the coordinator and both apps exited 0.
set -euo pipefail
prefix=${1:?usage: join_run.sh PREFIX EDGE_BUILD [WORKDIR]}
edge=${2:?usage: join_run.sh PREFIX EDGE_BUILD [WORKDIR]}
work=${3:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"
certs="$prefix/bin/tributary-certs"
"$certs" init --dir pki --force >/dev/null
"$certs" server --dir pki --host localhost --ip 127.0.0.1 --force >/dev/null
"$certs" client --dir pki --id cpp-app --force >/dev/null
"$certs" client --dir pki --id c-app --force >/dev/null

cat > coordinator.toml <<TOML
[net]
listen = "127.0.0.1:0"
[tls]
ca = "pki/ca.crt"
cert = "pki/server.crt"
key = "pki/server.key"
[run]
model = "mlp"
rounds = 2
clients_per_round = 2
min_available = 2
min_completed = 2
round_timeout_s = 120
[eval]
every = 0
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

"$edge/edge_app" --coordinator "$address" --ca pki/ca.crt --cert pki/clients/cpp-app.crt \
  --key pki/clients/cpp-app.key --state-dir state/cpp-app --max-attempts 20 > edge_app.log 2>&1 &
cpp=$!
"$edge/edge_app_c" "$address" pki/ca.crt pki/clients/c-app.crt pki/clients/c-app.key > edge_app_c.log 2>&1 &
c=$!

status=0
if ! wait $coordinator; then
  echo "join_run: coordinator failed; see $work/coordinator.log" >&2
  status=1
  kill $cpp $c 2>/dev/null || true  # they would keep retrying
fi
wait $cpp || { echo "join_run: edge_app failed; see $work/edge_app.log" >&2; status=1; }
wait $c || { echo "join_run: edge_app_c failed; see $work/edge_app_c.log" >&2; status=1; }
grep -h "^round" coordinator.log || true
[[ $status == 0 ]] && echo "join_run: both example apps joined and the run completed ($work)"
exit $status
