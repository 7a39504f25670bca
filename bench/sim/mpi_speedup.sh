#!/usr/bin/env bash
# One process against MPI ranks, side by side: the demo (examples/configs/sim.toml: mlp, 100
# clients, 10 per round, 100 rounds, Fashion-MNIST, evaluated every round) run by tributary-sim
# with one thread, then by `mpirun -np P` with one thread per rank, REPS times each, alternating.
# Prints each run's wall time and final model hash, the mean speedup, and the distributed runs'
# exchange costs from report.json (the busiest rank's compute, and what the link added), as
# markdown (docs/results.md).
#
#   bench/sim/mpi_speedup.sh [P] [REPS]     defaults 2 and 3
#
# Environment: SIM (default build/release/sim/tributary-sim), MPIRUN (default mpirun), EXTRA (more
# --set arguments for every run). Reports go to runs/mpi-speedup/. As root (CI, containers), Open
# MPI needs OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; this script sets them.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIM=${SIM:-build/release/sim/tributary-sim}
MPIRUN=${MPIRUN:-mpirun}
ranks=${1:-2}
reps=${2:-3}
read -r -a extra <<< "${EXTRA:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=runs/mpi-speedup
mkdir -p "$out"
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['totals'][sys.argv[2]])" "$@"; }
echo "| run | wall s | hash | compute s | link s | exchanges |"
echo "|---|---|---|---|---|---|"
one_total=0
many_total=0
for rep in $(seq 1 "$reps"); do
  d="$out/one-$rep"
  "$SIM" --config examples/configs/sim.toml --set sim.threads=1 --set sim.report_dir="$PWD/$d" \
    "${extra[@]}" > "$d.log" 2>&1
  w=$(field "$d/report.json" wall_seconds)
  echo "| 1 process, 1 thread ($rep) | $(printf %.2f "$w") | $(field "$d/report.json" model_hash) | | | |"
  one_total=$(python3 -c "print($one_total + $w)")
  d="$out/ranks$ranks-$rep"
  "$MPIRUN" --oversubscribe -np "$ranks" "$SIM" --config examples/configs/sim.toml \
    --set sim.threads=1 --set sim.report_dir="$PWD/$d" "${extra[@]}" > "$d.log" 2>&1
  w=$(field "$d/report.json" wall_seconds)
  echo "| $ranks ranks, 1 thread each ($rep) | $(printf %.2f "$w") | $(field "$d/report.json" model_hash) |" \
    "$(printf %.2f "$(field "$d/report.json" rank_compute_seconds)") |" \
    "$(printf %.2f "$(field "$d/report.json" rank_link_seconds)") |" \
    "$(field "$d/report.json" rank_exchanges) |"
  many_total=$(python3 -c "print($many_total + $w)")
done
python3 -c "print(f'\nmean wall: 1 process {$one_total/$reps:.2f} s, $ranks ranks {$many_total/$reps:.2f} s: speedup {$one_total/$many_total:.2f}x')"
