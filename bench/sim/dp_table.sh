#!/usr/bin/env bash
# Privacy-utility table (issue #16): final test accuracy of DP-FedAvg on Fashion-MNIST at
# epsilon 1, 2, 4, 8 and infinity (no noise), at delta = 1 / N^1.1, printed as markdown.
#
# Every cell is one tributary-sim run of examples/configs/dp.toml: N = 3,000 clients (iid, 20
# examples each), Poisson sampling of 100 expected per round (q = 1/30), ROUNDS rounds (default
# 200), the small CNN (~9,000 parameters), FedAvg, 2 local epochs of batch 10 at lr 0.05, adaptive
# clipping at the median norm from C = 0.5, noise on the server. The noise multiplier of each cell
# is what `tributary-dp noise` gives for its epsilon over ROUNDS rounds. The infinity cell keeps
# clipping and sampling and drops the noise; the last row is plain FedAvg (num_examples weights, 100
# clients per round, no clipping) for reference. Noise is seeded (dp.noise_seed = 1) so the table
# is reproducible; deployments leave it 0.
#
#   bench/sim/dp_table.sh [ROUNDS]
#
# Reports go to runs/dp/eps-<E>/ (report.html plots accuracy against epsilon). Environment: SIM
# (default build/release/sim/tributary-sim), DP (default build/release/privacy/tributary-dp),
# THREADS (default 0: every core).
set -euo pipefail
cd "$(dirname "$0")/../.."
SIM=${SIM:-build/release/sim/tributary-sim}
DP=${DP:-build/release/privacy/tributary-dp}
THREADS=${THREADS:-0}
rounds=${1:-200}
config=examples/configs/dp.toml
mkdir -p runs/dp


echo "| epsilon | delta | rounds | z | C (start -> end) | final accuracy | wall time |"
echo "|---|---|---|---|---|---|---|"
for eps in 1 2 4 8 inf; do
  dir=runs/dp/eps-$eps
  if [ "$eps" = inf ]; then
    z=0
    budget=0
  else
    z=$("$DP" noise --clients 3000 --per-round 100 --rounds "$rounds" --epsilon "$eps" \
      --sampling poisson --json | python3 -c "import json,sys; print(json.load(sys.stdin)['noise_multiplier'])")
    budget=$eps
  fi
  "$SIM" --config "$config" --set run.rounds="$rounds" --set dp.noise_multiplier="$z" \
    --set dp.target_epsilon="$budget" --set dp.noise_seed=1 --set sim.threads="$THREADS" \
    --set sim.report_dir="$dir" > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
  r=$dir/report.json
  python3 - "$r" "$eps" "$z" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
t, rounds = rep["totals"], rep["rounds"]
eps = t.get("epsilon")
print("| {} | {:.3g} | {} | {:.4g} | 0.5 -> {:.3g} | {:.2f}% | {:.1f} s |".format(
    "inf" if sys.argv[2] == "inf" else "{:.3f}".format(eps), t["delta"], t["rounds"],
    float(sys.argv[3]), rounds[-1]["dp_clip_norm"], 100 * t["final_test_accuracy"],
    t["wall_seconds"]))
PY
done
dir=runs/dp/plain
"$SIM" --config "$config" --set run.rounds="$rounds" --set dp.enabled=false \
  --set sim.threads="$THREADS" --set sim.report_dir="$dir" > "$dir.log" 2>&1 ||
  { cat "$dir.log" >&2; exit 1; }
python3 - "$dir/report.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print("| no DP (FedAvg) | - | {} | - | - | {:.2f}% | {:.1f} s |".format(
    t["rounds"], 100 * t["final_test_accuracy"], t["wall_seconds"]))
PY
