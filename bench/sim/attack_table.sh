#!/usr/bin/env bash
# Byzantine robustness table (issue #7): final test accuracy of each aggregation rule under each
# attack, printed as markdown. Every cell is one tributary-sim run with these settings:
#
#   Fashion-MNIST (60k train / 10k test), model mlp, 100 clients, partition dirichlet:0.5,
#   20 clients per round, ROUNDS rounds (default 15; docs/results.md records 15 and 40, the 40-round
#   table with SEED=1, 2 and 3, ~5 min each on 2 idle cores),
#   2 local epochs, batch 32, lr 0.05, momentum 0.5, seed SEED, evaluated once at the end; 20%
#   malicious clients (attack.fraction 0.2, the same clients in every row) with each attack's
#   defaults: sign_flip scale 4, gaussian noise_std 1, scale boost 10, label_flip, alie with the
#   paper's z_max for n = 20 and f the attackers selected that round. Rules: fedavg, median,
#   trimmed_mean(beta=0.2), krum(f=4), multikrum(f=4,m=10), bulyan(f=4) (n >= 4f + 3 = 19).
#
#   bench/sim/attack_table.sh [ROUNDS] [RULES...]
#
# Reports go to runs/attack/<attack>-<rule>-s<SEED>/. Environment: SIM (default
# build/release/sim/tributary-sim), THREADS (default 0: every core), ATTACKS (default all), SEED
# (default 1: run.seed, which also picks the malicious clients, and data.seed, the partition).
set -euo pipefail
cd "$(dirname "$0")/../.."
SIM=${SIM:-build/release/sim/tributary-sim}
THREADS=${THREADS:-0}
SEED=${SEED:-1}
rounds=${1:-15}
shift || true
rules=("$@")
[ ${#rules[@]} -eq 0 ] &&
  rules=(fedavg median "trimmed_mean(beta=0.2)" "krum(f=4)" "multikrum(f=4,m=10)" "bulyan(f=4)")
read -r -a attacks <<< "${ATTACKS:-none sign_flip gaussian scale label_flip alie}"

mkdir -p runs/attack
header="| attack |"
sep="|---|"
for rule in "${rules[@]}"; do
  header+=" \`$rule\` |"
  sep+="---|"
done
echo "$header"
echo "$sep"
for attack in "${attacks[@]}"; do
  row="| $attack |"
  for rule in "${rules[@]}"; do
    name="$attack-$(echo "$rule" | tr -c 'a-z0-9\n' '_')-s$SEED"
    args=(--set run.model=mlp --set data.dataset=fashion-mnist --set data.num_clients=100
          --set data.partition=dirichlet:0.5 --set run.clients_per_round=20
          --set "run.rounds=$rounds" --set fit.epochs=2 --set fit.batch_size=32 --set fit.lr=0.05
          --set fit.momentum=0.5 --set "run.seed=$SEED" --set "data.seed=$SEED"
          --set "eval.every=$rounds" --set "sim.threads=$THREADS" --set "run.strategy=$rule"
          --set "sim.report_dir=runs/attack/$name")
    [ "$attack" != none ] && args+=(--set "attack.kind=$attack" --set attack.fraction=0.2)
    if "$SIM" "${args[@]}" > "runs/attack/$name.log" 2>&1; then
      acc=$(/usr/bin/python3 -c "import json,sys; print('%.2f%%' % (100*json.load(open(sys.argv[1]))['totals']['final_test_accuracy']))" "runs/attack/$name/report.json")
    else
      echo "FAILED: $name (see runs/attack/$name.log)" >&2
      acc="failed"
    fi
    row+=" $acc |"
  done
  echo "$row"
done
