#!/usr/bin/env bash
# Peak RSS of the round engine as clients per round grow (target: flat within 10%).
# Runs rss_vs_clients for 10, 100 and 1,000 clients per round, each in a fresh process, and prints
# peak RSS per size, its ratio to the 10-client run, and the growth per added client in KiB (the
# model itself is 778 KiB, so a model copy per client would show as ~778-1,556 KiB per client).
# Usage: bench/coordinator/rss_vs_clients.sh [build dir] [extra rss_vs_clients flags...]
#   (default build/release; needs target rss_vs_clients built)
set -euo pipefail
build="${1:-build/release}"
shift || true
bin="$build/bench/coordinator/rss_vs_clients"
[[ -x "$bin" ]] || { echo "rss_vs_clients.sh: $bin not found; build target rss_vs_clients first" >&2; exit 1; }
base=""
printf "%8s  %13s  %6s  %22s\n" clients peak_rss_MiB ratio "KiB per client over 10"
for n in 10 100 1000; do
  line="$("$bin" --clients="$n" "$@")"
  kib="${line##*peak_rss_kib=}"
  [[ -n "$base" ]] || base="$kib"
  awk -v n="$n" -v k="$kib" -v b="$base" 'BEGIN {
    per = n > 10 ? sprintf("%.2f", (k - b) / (n - 10)) : "-"
    printf "%8d  %13.1f  %6.3f  %22s\n", n, k / 1024, k / b, per }'
done
