#!/usr/bin/env bash
# Packs a CUDA build's binaries for `PREBUILT=<archive> scripts/gpu_test.sh` on the GPU
# machine, so device time goes to tests rather than compilation.
#
#   scripts/pack_prebuilt.sh [BUILD_DIR] [ARCHIVE]
#
# BUILD_DIR (default build-cuda) must be configured with -DVTLLM_CUDA=ON
# -DVTLLM_CUDA_ARCHS=90a; it is built first (ninja, only what the archive holds). The
# archive (default .gl/prebuilt.tar.xz, an ignored path that `run`'s carry can take)
# holds tests/*_tests, vtllm and bench/cuda_*_bench in the build's layout, plus
# `source_dir`: the source path compiled into the tests (VTLLM_SOURCE_DIR), where they
# read their fixtures; gpu_test.sh links it to its own tree when it is absent there.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
archive=${2:-.gl/prebuilt.tar.xz}
[ -f "$build/build.ninja" ] || { echo "pack_prebuilt: $build is not a configured Ninja build" >&2; exit 2; }
grep -q '^VTLLM_CUDA:STRING=ON' "$build/CMakeCache.txt" ||
  { echo "pack_prebuilt: $build is not configured with -DVTLLM_CUDA=ON" >&2; exit 2; }
ninja -C "$build" vt_tests base_tests io_tests text_tests models_tests engine_tests server_tests \
  vtllm cuda_attention_bench cuda_elementwise_bench cuda_gdn_bench cuda_gemm_bench \
  cuda_norm_bench cuda_sampler_bench >&2
mkdir -p "$(dirname "$archive")"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$stage/bench"
cp "$build"/tests/*_tests "$stage/tests/"
cp "$build/vtllm" "$stage/"
cp "$build"/bench/cuda_*_bench "$stage/bench/"
sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" > "$stage/source_dir"
tar -cJf "$archive" -C "$stage" .
echo "pack_prebuilt: $archive ($(du -h "$archive" | cut -f1)), tests compiled for source $(cat "$stage/source_dir")"
