#!/usr/bin/env bash
# Accuracy tables from tributary-sim runs, printed as markdown.
#
#   bench/sim/accuracy_table.sh partitions [ROUNDS]   # mlp and lenet x iid, dirichlet:0.5, shards:2
#   bench/sim/accuracy_table.sh codecs [ROUNDS]       # dense, q8, topk(0.01), topk(0.01)+q8+zstd, sign
#
# Every run starts from examples/configs/sim.toml (100 clients, 10 per round, 5 local epochs,
# batch 32, lr 0.05, momentum 0.5) with the rounds given (default 50). Upload bytes are counted at
# the transport (framed update messages), not estimated. Reports go to runs/tables/<name>/.
# Environment: SIM (default build/release/sim/tributary-sim).
set -euo pipefail
cd "$(dirname "$0")/../.."
SIM=${SIM:-build/release/sim/tributary-sim}
what=${1:-partitions}
rounds=${2:-50}

run() {  # name, extra args...
  local name=$1
  shift
  "$SIM" --config examples/configs/sim.toml --rounds "$rounds" --report-dir "runs/tables/$name" \
    "$@" > "runs/tables/$name.log" 2>&1 || { echo "FAILED: $name (see runs/tables/$name.log)" >&2; return 1; }
}

field() {  # report, jq-like path in python
  /usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; print(eval(sys.argv[2]))" "$1" "$2"
}

mkdir -p runs/tables
case "$what" in
  partitions)
    echo "| model | partition | final test accuracy | best | round reaching 85% | wall s |"
    echo "|---|---|---|---|---|---|"
    for model in mlp lenet; do
      for part in iid dirichlet:0.5 shards:2; do
        name="$model-${part//[:.]/_}"
        run "$name" --model "$model" --partition "$part"
        r="runs/tables/$name/report.json"
        best=$(/usr/bin/python3 -c "import json; print('%.2f%%' % (100*max(x.get('test_accuracy',0) for x in json.load(open('$r'))['rounds'])))")
        echo "| $model | $part | $(field "$r" "'%.2f%%' % (100*t['final_test_accuracy'])") | $best | $(field "$r" "t['target_round'] or 'not reached'") | $(field "$r" "'%.0f' % t['wall_seconds']") |"
      done
    done
    ;;
  codecs)
    echo "| codec | final test accuracy | upload bytes | vs dense | download bytes | wall s |"
    echo "|---|---|---|---|---|---|"
    dense_up=""
    for codec in dense q8 "topk(0.01)" "topk(0.01)+q8+zstd" sign; do
      name="codec-$(echo "$codec" | tr -c 'a-z0-9\n' '_')"
      run "$name" --codec "$codec"
      r="runs/tables/$name/report.json"
      up=$(field "$r" "t['bytes_up']")
      [ -z "$dense_up" ] && dense_up=$up
      echo "| \`$codec\` | $(field "$r" "'%.2f%%' % (100*t['final_test_accuracy'])") | $up | $(/usr/bin/python3 -c "print('%.1fx fewer' % ($dense_up/$up))") | $(field "$r" "t['bytes_down']") | $(field "$r" "'%.0f' % t['wall_seconds']") |"
    done
    ;;
  *)
    echo "usage: $0 partitions|codecs [ROUNDS]" >&2
    exit 2
    ;;
esac
