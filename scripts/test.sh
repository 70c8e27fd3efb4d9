#!/usr/bin/env bash
# Builds vtllm and runs the whole test suite with CTest (${BUILD_DIR:-build}).
# Tests that need a GPU are skipped (not passed) on machines without one.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
scripts/build.sh "$@"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900
