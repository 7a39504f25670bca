#!/usr/bin/env bash
# The aggregation tier in simulation (docs/simulation.md, "Through an aggregation tier"): the same
# run on one coordinator and through tier.aggregators = A simulated aggregators, with the do-nothing
# trainer (what is measured is the framework), the slow-tail device preset's speed tiers and
# over-selection, so the rounds' simulated length shows what the tier costs in time and the
# coordinator's update-handling CPU what it saves.
#
#   bench/sim/tier_scale.sh [--set key=value ...]
#
# Data: synthetic (20,000 train / 1,000 test examples), partition replacement:50, model mlp
# (55,210 floats). Environment: BUILD (default build/ci), OUT (default a fresh temp dir), CLIENTS
# (default 100000), PER_ROUND (space-separated list, default "1000 10000"), AGGREGATORS (default
# "0 10 100"), ROUNDS (default 5), OVER (run.over_selection, default 1.3).
# Prints, per run: rounds' mean simulated seconds, wall ms per round, the coordinator's ms per
# round taking updates or partial sums, the aggregators' ms per round (summed), and the partial
# sums' bytes per round.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/ci}
OUT=${OUT:-$(mktemp -d /tmp/tier_scale.XXXXXX)}
CLIENTS=${CLIENTS:-100000}
PER_ROUND=${PER_ROUND:-"1000 10000"}
AGGREGATORS=${AGGREGATORS:-"0 10 100"}
ROUNDS=${ROUNDS:-5}
OVER=${OVER:-1.3}
mkdir -p "$OUT"

for k in $PER_ROUND; do
  for a in $AGGREGATORS; do
    dir="$OUT/k${k}_a${a}"
    echo "== $CLIENTS clients, $k per round, $a aggregators"
    "$BUILD/sim/tributary-sim" --dataset synthetic --set data.train_examples=20000 \
      --set data.test_examples=1000 --partition replacement:50 --trainer noop --set eval.every=0 \
      --set hetero.speed_tiers=slow:0.1:200,phone:0.5:2000,laptop:0.3:8000,workstation:0.1:30000 \
      --set hetero.speed_sigma=0.5 --set run.over_selection="$OVER" \
      --rounds "$ROUNDS" --num-clients "$CLIENTS" --clients-per-round "$k" \
      --set tier.aggregators="$a" --report-dir "$dir" "$@" | tee "$dir.log" | grep -v '^round '
  done
done

/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, sys
out = sys.argv[1]
print(f"\n{'per round':>9} {'aggregators':>11} {'sim s/round':>11} {'folded':>7} {'wall ms/round':>13} "
      f"{'coord ms/round':>14} {'aggr ms/round':>13} {'sums up/round':>13} {'hash':>17}")
runs = []
for d in glob.glob(f"{out}/k*_a*/report.json"):
    r = json.load(open(d))
    rounds = r["rounds"]
    n = max(1, len(rounds))
    t = r["totals"]
    runs.append((r["config"]["run.clients_per_round"], r["config"].get("tier.aggregators", 0),
                 sum(x["sim_seconds"] for x in rounds) / n, sum(x["accepted"] for x in rounds) / n,
                 1000 * t["wall_seconds"] / n, 1000 * t["coordinator_update_seconds_per_round"],
                 1000 * t.get("aggregator_seconds_per_round", 0.0),
                 t.get("tier_bytes_up", 0) / n / 2**20, t["model_hash"]))
for k, a, sim, folded, wall, coord, aggr, up, h in sorted(runs):
    print(f"{k:>9,} {a:>11} {sim:>11.2f} {folded:>7.0f} {wall:>13.1f} {coord:>14.1f} {aggr:>13.1f} "
          f"{up:>9.1f} MiB {h:>17}")
PY
