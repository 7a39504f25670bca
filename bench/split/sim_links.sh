#!/bin/bash
# Split learning against FedAvg in simulated time, on a slow and a fast link (docs/results.md):
# tributary-sim, cnn, 10 clients of 600 Fashion-MNIST examples, all in every round, 2 rounds of 1
# epoch; devices that train the whole cnn at 50 samples/s (a split device computes its part's
# share of that). Slow: 1 Mbps up, 5 Mbps down, 100 ms; fast: 100 Mbps each way, 5 ms.
# Prints, per link and mode: each round's simulated seconds, the accuracy after round 2, and the
# MiB the round moved (all clients, both ways). Usage: bench/split/sim_links.sh [build/ci]
set -e
SIM=${1:-build/ci}/sim/tributary-sim
mkdir -p /tmp/simsplit
for link in "slow 1 5 100" "fast 100 100 5"; do
  set -- $link
  for mode in fedavg sflv1 sflv1-q8; do
    split=""; codec=dense
    [ "$mode" != fedavg ] && split=sflv1
    [ "$mode" = sflv1-q8 ] && codec=q8
    out=/tmp/simsplit/$1-$mode
    rm -rf $out
    $SIM --model cnn --train-examples 6000 --rounds 2 --clients-per-round 10 --epochs 1 --batch 32 \
      --set data.num_clients=10 --set data.partition=iid --set data.test_examples=2000 \
      --set eval.every=2 --set hetero.samples_per_s=50 --set hetero.up_mbps=$2 \
      --set hetero.down_mbps=$3 --set hetero.latency_ms=$4 --set split.mode=$split \
      --set split.codec=$codec --set sim.report_dir=$out --set output.history=none \
      --set run.round_timeout_s=100000 > $out.log 2>&1 || { cat $out.log; exit 1; }
    python3 -c "
import json; r=json.load(open('$out/report.json'))
rs=r['rounds']
print('$1 $mode', ' '.join('%.1f' % x['sim_seconds'] for x in rs), 'acc %.2f' % (100*rs[-1].get('test_accuracy',0)), 'MiB/round %.2f' % ((rs[0]['bytes_up']+rs[0]['bytes_down'])/2**20))"
  done
done
