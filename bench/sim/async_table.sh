#!/usr/bin/env bash
# Synchronous rounds against asynchronous steps (FedBuff) on the heterogeneous preset, by
# simulated time to 85% test accuracy, printed as a markdown table (docs/results.md).
#
#   bench/sim/async_table.sh [SEEDS] [OVER_SELECTIONS] [BUFFERS] [CONCURRENCIES]
#     SEEDS            default "1 2 3": run.seed and data.seed (the partition, the devices)
#     OVER_SELECTIONS  default "1.0 1.3": the synchronous runs' run.over_selection (K = 10), or
#                      K:S pairs (run.clients_per_round K, over-selection S): "5:2.0 4:2.5" keeps
#                      ten clients training at once (ceil(K S) = 10) while a round closes at K
#     BUFFERS          default "3": the asynchronous runs' run.buffer_size
#     CONCURRENCIES    default "10": the asynchronous runs' run.concurrency (C)
#
# Every run is examples/configs/sim-hetero.toml (the demo's data, model and local training on the
# "slow tail" devices of docs/simulation.md), stopped at the first round or step reaching 85%
# (sim.stop_at_target). "updates" counts the client updates folded in until then. Reports go to
# runs/async-table/<name>/. Environment: SIM (default build/release/sim/tributary-sim), EXTRA (more
# --set arguments for every run, e.g. "--set sim.threads=2"), SYNC_EXTRA and ASYNC_EXTRA (for one
# mode's runs only, e.g. ASYNC_EXTRA="--set run.server_lr=2"); TAG names the runs (default: none;
# set it when the extras change, so that runs do not overwrite each other). The extras of one
# mode are shown in its rows' labels.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIM=${SIM:-build/release/sim/tributary-sim}
# An argument given empty ("") means none: "" as OVER_SELECTIONS runs no synchronous rows.
seeds=${1-"1 2 3"}
oversel=${2-"1.0 1.3"}
buffers=${3-"3"}
concurrencies=${4-"10"}
read -r -a extra <<< "${EXTRA:-}"
read -r -a sync_extra <<< "${SYNC_EXTRA:-}"
read -r -a async_extra <<< "${ASYNC_EXTRA:-}"
tag=${TAG:+-$TAG}
# "--set a=1 --set b=2" -> " (a=1, b=2)"
shown() { local s=${1//--set /}; [[ -n $s ]] && echo " (${s// /, })" || true; }
mkdir -p runs/async-table

run() {  # name, --set arguments...
  local name=$1
  shift
  "$SIM" --config examples/configs/sim-hetero.toml --report-dir "runs/async-table/$name" \
    "${extra[@]}" "$@" > "runs/async-table/$name.log" 2>&1 ||
    { echo "FAILED: $name (see runs/async-table/$name.log)" >&2; return 1; }
}

row() {  # label, seed, report
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
label, seed, path = sys.argv[1:4]
r = json.load(open(path))
t, rounds = r["totals"], r["rounds"]
reached = t.get("target_round", 0)
upto = [x for x in rounds if x["round"] <= reached] if reached else rounds
updates = sum(x["accepted"] for x in upto)
acc = rounds[-1].get("test_accuracy", 0.0) if rounds else 0.0
per_update = 1000 * t["wall_seconds"] / max(1, sum(x["accepted"] for x in rounds))
sim = f"{t['target_sim_seconds']:.0f}" if reached else "not reached"
print(f"| {label} | {seed} | {sim} | {reached or '-'} | {updates} | {100 * acc:.2f}% | "
      f"{t['wall_seconds']:.0f} | {per_update:.1f} |")
PY
}

echo "| mode | seed | simulated s to 85% | rounds or steps | client updates | final accuracy | wall s | wall ms per update |"
echo "|---|---|---|---|---|---|---|---|"
for seed in $seeds; do
  for spec in $oversel; do
    k=10 os=$spec
    [[ $spec == *:* ]] && { k=${spec%%:*}; os=${spec#*:}; }
    name="sync-k$k-os${os}$tag-seed$seed"
    [[ $k == 10 ]] && name="sync-os${os}$tag-seed$seed"  # the names of earlier runs
    run "$name" --set run.seed="$seed" --set data.seed="$seed" --set run.over_selection="$os" \
      --set run.clients_per_round="$k" "${sync_extra[@]}"
    row "sync, K = $k, over-selection $os$(shown "${SYNC_EXTRA:-}")" "$seed" \
      "runs/async-table/$name/report.json"
  done
  for c in $concurrencies; do
    for k in $buffers; do
      name="async-c$c-k$k$tag-seed$seed"
      run "$name" --set run.seed="$seed" --set data.seed="$seed" --set run.mode=async \
        --set run.concurrency="$c" --set run.buffer_size="$k" "${async_extra[@]}"
      row "async, C = $c, K = $k$(shown "${ASYNC_EXTRA:-}")" "$seed" \
        "runs/async-table/$name/report.json"
    done
  done
done
