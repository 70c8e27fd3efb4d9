#!/usr/bin/env bash
# Sets up a fresh machine, builds vtllm and runs its main job on the bundled default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
TARGETS=vtllm scripts/build.sh
build/vtllm --version
build/vtllm selfcheck
