#!/usr/bin/env bash
# NIID-Bench's Fashion-MNIST grid (Li, Diao, Chen, He, "Federated Learning on Non-IID Data Silos:
# An Experimental Study", ICDE 2022) on tributary-sim, printed as a markdown table.
#
#   bench/sim/niid_bench.sh [PARTITIONS...]
#
# The paper's recipe: 10 clients, all of them in every round, 10 local epochs, batch 64, SGD with
# lr 0.01 and momentum 0.9, the 6/16-channel CNN (`lenet`), 50 rounds, test accuracy of the final
# model. Partitions (each a column of the paper's table; the default is all of them):
#   iid                      homogeneous
#   dirichlet:0.5,min_size=10  label skew p_k ~ Dir(0.5) (NIID-Bench redraws until every party
#                              holds 10 examples)
#   labels:1 labels:2 labels:3   #C = k
#   quantity:0.5,min_size=10     quantity skew q ~ Dir(0.5)
#   noise:0.1                    feature skew x ~ Gau(0.1) (iid, then noise 0.1 * i / 9)
# Strategies: fedavg, fedprox(mu=0.01), scaffold, fednova (rows; NIID-Bench's four).
#
# Environment: SIM (default build/release/sim/tributary-sim), ROUNDS (50), EPOCHS (10), MODEL
# (lenet), STRATEGIES (the four above, space-separated), THREADS (sim.threads, default 0: every
# core). A cell of the full recipe trains 600,000 examples a round: on a 2-core machine 11.5 s a
# round for lenet (about 10 minutes a cell; 31 s before the direct convolution kernels), so the
# whole grid takes about 5 hours; ROUNDS, EPOCHS and MODEL shrink it (and the table says what
# ran; docs/results.md has a 10-round, 3-epoch grid). Reports go to
# runs/niid/<strategy>_<partition>/. A run that fails (SCAFFOLD diverges on labels:1) shows
# as "failed" with its log's path.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIM=${SIM:-build/release/sim/tributary-sim}
ROUNDS=${ROUNDS:-50}
EPOCHS=${EPOCHS:-10}
MODEL=${MODEL:-lenet}
THREADS=${THREADS:-0}
STRATEGIES=${STRATEGIES:-"fedavg fedprox(mu=0.01) scaffold fednova"}
if [ $# -gt 0 ]; then
  partitions=("$@")
else
  partitions=(iid "dirichlet:0.5,min_size=10" labels:1 labels:2 labels:3
              "quantity:0.5,min_size=10" noise:0.1)
fi
[ -x "$SIM" ] || { echo "no $SIM: build it (scripts/build) or set SIM" >&2; exit 2; }

mkdir -p runs/niid
echo "NIID-Bench recipe: $MODEL, 10 clients all in every round, $EPOCHS local epochs, batch 64,"
echo "lr 0.01, momentum 0.9, $ROUNDS rounds; final test accuracy (wall seconds)"
echo
header="| strategy |"
rule="|---|"
for p in "${partitions[@]}"; do header+=" \`$p\` |"; rule+="---:|"; done
echo "$header"
echo "$rule"
for strategy in $STRATEGIES; do
  row="| \`$strategy\` |"
  for p in "${partitions[@]}"; do
    name="$(echo "$strategy-$p" | tr -c 'a-z0-9\n' '_')"
    dir="runs/niid/$name"
    if "$SIM" --config examples/configs/sim.toml --model "$MODEL" --rounds "$ROUNDS" \
        --set data.num_clients=10 --set run.clients_per_round=10 --set "data.partition=$p" \
        --set "run.strategy=$strategy" --set fit.epochs="$EPOCHS" --set fit.batch_size=64 \
        --set fit.lr=0.01 --set fit.momentum=0.9 --set sim.target_accuracy=0 \
        --set sim.threads="$THREADS" --report-dir "$dir" > "$dir.log" 2>&1; then
      cell=$(/usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; print('%.2f%% (%.0f s)' % (100*t['final_test_accuracy'], t['wall_seconds']))" "$dir/report.json")
    else
      cell="failed (see $dir.log)"
    fi
    row+=" $cell |"
  done
  echo "$row"
done
