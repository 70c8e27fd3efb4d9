#!/usr/bin/env bash
# Configures and builds vtllm into ${BUILD_DIR:-build} (Ninja, Release by default).
# Extra arguments are passed to cmake's configure step, e.g. -DVTLLM_CUDA=OFF.
# TARGETS="vtllm vt_tests" builds only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
# Let ccache share objects between clones and build folders (CI builds a fresh
# clone in another folder): paths under the tree are hashed relative to it.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
jobs=${JOBS:-$(nproc)}
if [ ! -f "$build_dir/build.ninja" ] || [ "$#" -gt 0 ]; then
  cmake -S . -B "$build_dir" -G Ninja "$@"
fi
if [ -n "${TARGETS:-}" ]; then
  # shellcheck disable=SC2086
  cmake --build "$build_dir" -j "$jobs" --target $TARGETS
else
  cmake --build "$build_dir" -j "$jobs"
fi
