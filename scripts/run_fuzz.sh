#!/usr/bin/env bash
# Runs every fuzz target in BUILD_DIR for SECONDS each, seeded from fuzz/corpus/<name>/.
# usage: scripts/run_fuzz.sh BUILD_DIR SECONDS [SEED]
# A crash, leak, timeout or sanitizer report fails the run and prints the report;
# the input that triggered it is kept in BUILD_DIR/fuzz-artifacts/ (add it to the
# target's corpus once fixed, as a regression seed). SEED (default 1) makes a run
# repeatable on the same machine; pass 0 for a fresh random seed.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$1
seconds=$2
seed=${3:-1}
artifacts=$build_dir/fuzz-artifacts
mkdir -p "$artifacts"
shopt -s nullglob
found=0
failed=0
for bin in "$build_dir"/fuzz/*_fuzz; do
  name=$(basename "$bin")
  seeds=fuzz/corpus/$name
  work=$(mktemp -d)
  log=$(mktemp)
  if [ -d "$seeds" ]; then cp -r "$seeds"/. "$work"/; fi
  echo "fuzz: $name for ${seconds}s"
  if "$bin" -max_total_time="$seconds" -seed="$seed" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$artifacts/$name-" -print_final_stats=1 "$work" >"$log" 2>&1; then
    tail -n 3 "$log"
  else
    echo "fuzz: $name FAILED; the report:"
    grep -v '^\s*NEW_FUNC' "$log" | tail -n 60
    failed=$((failed + 1))
  fi
  rm -rf "$work" "$log"
  found=$((found + 1))
done
echo "fuzz: ran $found targets, $failed failed"
[ "$found" -gt 0 ] || { echo "fuzz: no targets in $build_dir/fuzz (built with -DVTLLM_FUZZ=ON?)"; exit 2; }
[ "$failed" -eq 0 ]
