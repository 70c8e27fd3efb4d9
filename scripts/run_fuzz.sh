#!/usr/bin/env bash
# Runs every fuzz target in BUILD_DIR for SECONDS each, seeded from fuzz/corpus/<name>/.
# usage: scripts/run_fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$1
seconds=$2
shopt -s nullglob
found=0
for bin in "$build_dir"/fuzz/*_fuzz; do
  name=$(basename "$bin")
  seeds=fuzz/corpus/$name
  work=$(mktemp -d)
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/
  echo "fuzz: $name for ${seconds}s"
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$work" 2>&1 | tail -n 3
  rm -rf "$work"
  found=$((found + 1))
done
echo "fuzz: ran $found targets"
