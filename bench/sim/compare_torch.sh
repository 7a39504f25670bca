#!/usr/bin/env bash
# Tributary against a plain PyTorch FedAvg loop, in one run on the same machine.
#
#   bench/sim/compare_torch.sh [--set key=value ...]
#
# Both train the demo config (examples/configs/sim.toml: mlp on Fashion-MNIST, 100 clients,
# Dirichlet(0.5), 10 per round, 5 local epochs, batch 32, lr 0.05, momentum 0.5, target 85%) with
# the same partition and the same clients in every round: export_plan writes both from the config,
# tributary-sim trains, then torch_fedavg.py (Debian's python3-torch) trains that plan.
# Extra --set overrides apply to both (e.g. --set run.rounds=15 to shorten the run).
#
# Environment: BUILD (default build/release), OUT (default a fresh temp dir), TORCH_THREADS
# (torch.set_num_threads, default 2), SIM_THREADS (tributary-sim's pool, default 2).
# Prints each side's wall time to the target accuracy, final accuracy and the ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build/release}
OUT=${OUT:-$(mktemp -d /tmp/compare_torch.XXXXXX)}
TORCH_THREADS=${TORCH_THREADS:-2}
SIM_THREADS=${SIM_THREADS:-2}
mkdir -p "$OUT"

args=()
if [[ -f examples/configs/sim.toml ]]; then
  args+=(--config examples/configs/sim.toml)
else
  args+=(--set data.num_clients=100 --set run.clients_per_round=10
         --set data.partition=dirichlet:0.5 --set fit.epochs=5 --set fit.lr=0.05
         --set fit.momentum=0.5 --set fit.batch_size=32 --set sim.target_accuracy=0.85
         --set run.rounds=40)
fi
args+=(--set sim.threads="$SIM_THREADS" --set sim.report_dir="$OUT/tributary" "$@")

echo "== export_plan (partition and per-round selection)"
"$BUILD/bench/sim/export_plan" "${args[@]}" --out "$OUT/plan.json"
echo "== tributary-sim"
"$BUILD/sim/tributary-sim" "${args[@]}" | tee "$OUT/tributary.log"
echo "== torch_fedavg.py"
/usr/bin/python3 bench/sim/torch_fedavg.py --plan "$OUT/plan.json" --out "$OUT/torch.json" \
  --threads "$TORCH_THREADS" | tee "$OUT/torch.log"

/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
trib = json.load(open(f"{out}/tributary/report.json"))
torch = json.load(open(f"{out}/torch.json"))
plan = json.load(open(f"{out}/plan.json"))
target = trib["config"]["sim.target_accuracy"]
tt, pt = trib["totals"], torch["totals"]
extra = [r["attempts"] for r in trib["rounds"] if r["attempts"] != 1]
def row(name, t_round, t_wall, final, total_wall, rounds):
    reach = f"round {t_round:3d}, {t_wall:8.1f} s" if t_round else "not reached         "
    print(f"{name:10s} {reach}   final {100 * final:6.2f}%   {total_wall:8.1f} s for {rounds} rounds "
          f"({total_wall / rounds:.2f} s/round)")
print(f"\n{len(plan['selection'])} rounds, the same partition and selection on both sides"
      + ("" if not extra else f" (WARNING: {len(extra)} rounds needed retries; selection = first attempt)"))
print(f"time to {100 * target:.0f}% test accuracy (wall, from the first round):")
row("tributary", tt.get("target_round", 0), tt.get("target_wall_seconds", 0.0), tt["final_test_accuracy"],
    trib["rounds"][-1]["wall_clock"], len(trib["rounds"]))
row("pytorch", pt["target_round"], pt["target_wall_seconds"], pt["final_test_accuracy"], pt["wall_seconds"],
    len(torch["rounds"]))
gap = 100 * (tt["final_test_accuracy"] - pt["final_test_accuracy"])
print(f"final accuracy: tributary - pytorch = {gap:+.2f} pp (target: within 1 pp)")
if tt.get("target_round") and pt["target_round"]:
    ratio = tt["target_wall_seconds"] / pt["target_wall_seconds"]
    print(f"time-to-target ratio tributary/pytorch = {ratio:.4f} (1/{1 / ratio:.1f}; target <= 1/5)")
else:
    print("time-to-target ratio: n/a (a side did not reach the target)")
def first(rounds, level):
    for r in rounds:
        if r.get("test_accuracy", 0) >= level and r.get("evaluated", True):
            return r["round"], r["wall_clock"]
    return None
print("time to lower accuracy levels (round, wall s):")
for level in (0.70, 0.75, 0.80, 0.85):
    a, b = first(trib["rounds"], level), first(torch["rounds"], level)
    fmt = lambda x: f"round {x[0]:3d} {x[1]:8.1f} s" if x else "      not reached"
    ratio = f"ratio 1/{b[1] / a[1]:.1f}" if a and b else ""
    print(f"  {100 * level:.0f}%: tributary {fmt(a)}   pytorch {fmt(b)}   {ratio}")
per_round = (trib["rounds"][-1]["wall_clock"] / len(trib["rounds"])) / (pt["wall_seconds"] / len(torch["rounds"]))
print(f"wall per round ratio tributary/pytorch = {per_round:.4f} (1/{1 / per_round:.1f})")
print(f"outputs in {out}")
PY
