#!/usr/bin/env bash
# Population scale: tributary-sim with 100,000 and 1,000,000 registered clients and 100 and 1,000
# per round, with the do-nothing trainer (so what is measured is the framework: registry, selection,
# task messages, the client's TaskExecutor, wire encode/decode, validation, FedAvg).
#
#   bench/sim/population.sh [--set key=value ...]
#
# Data: synthetic (20,000 train / 1,000 test examples), partition replacement:50 (each client
# draws 50 examples with replacement, regenerated when selected, nothing stored per client).
# Environment: BUILD (default build/release), OUT (default a fresh temp dir), CLIENTS and
# PER_ROUND (space-separated lists), ROUNDS (default 5).
# Prints, per run: RSS per idle client, wall ms per client-round, registry join seconds, peak RSS,
# and the process's whole wall time.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/release}
OUT=${OUT:-$(mktemp -d /tmp/population.XXXXXX)}
CLIENTS=${CLIENTS:-"100000 1000000"}
PER_ROUND=${PER_ROUND:-"100 1000"}
ROUNDS=${ROUNDS:-5}
mkdir -p "$OUT"

for n in $CLIENTS; do
  for k in $PER_ROUND; do
    dir="$OUT/n${n}_k${k}"
    echo "== $n clients, $k per round"
    start=$(date +%s.%N)
    "$BUILD/sim/tributary-sim" --dataset synthetic --set data.train_examples=20000 \
      --set data.test_examples=1000 --partition replacement:50 --trainer noop --set eval.every=0 \
      --rounds "$ROUNDS" --num-clients "$n" --clients-per-round "$k" --report-dir "$dir" "$@" \
      | tee "$dir.log" | grep -v '^round '
    end=$(date +%s.%N)
    echo "$start $end" > "$dir.time"
  done
done

/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print(f"\n{'clients':>9} {'per round':>9} {'B/idle client':>13} {'ms/client-round':>15} "
      f"{'join s':>7} {'rounds s':>8} {'peak RSS MiB':>12} {'process s':>9}")
runs = []
for d in glob.glob(f"{out}/n*_k*/report.json"):
    r = json.load(open(d))
    t0, t1 = map(float, open(os.path.dirname(d) + ".time").read().split())
    runs.append((r["config"]["data.num_clients"], r["config"]["run.clients_per_round"], r["totals"], t1 - t0))
for n, k, t, proc in sorted(runs, key=lambda x: (x[0], x[1])):
    print(f"{n:>9,} {k:>9,} {t['rss_bytes_per_idle_client']:>13.0f} {t['wall_ms_per_client_round']:>15.3f} "
          f"{t['registry_join_seconds']:>7.2f} {t['wall_seconds']:>8.2f} {t['peak_rss_bytes'] / 2**20:>12.1f} "
          f"{proc:>9.1f}")
print("targets: <= 1024 B per idle client, <= 1 ms per client-round")
PY
