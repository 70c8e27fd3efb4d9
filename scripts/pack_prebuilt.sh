#!/usr/bin/env bash
# Packs a CUDA build's binaries for `PREBUILT=<archive> scripts/gpu_test.sh` on the GPU
# machine, so device time goes to tests rather than compilation.
#
#   scripts/pack_prebuilt.sh [BUILD_DIR] [ARCHIVE]
#
# BUILD_DIR (default build-cuda) must be configured with -DVTLLM_CUDA=ON
# -DVTLLM_CUDA_ARCHS=90a -DVTLLM_VIDEO=OFF (the GPU machine has no libav, so binaries
# that need it would not start there); it is built first (ninja, only what the archive holds). The
# archive (default .gl/prebuilt.tar.xz, an ignored path that `run`'s carry can take)
# holds tests/*_tests, vtllm, libvtllm.so and bench/cuda_*_bench in the build's layout
# (stripped), plus
# `source_dir`: the source path compiled into the tests (VTLLM_SOURCE_DIR), where they
# read their fixtures; gpu_test.sh links it to its own tree when it is absent there, and
# `build_dir` (the path capi_tests dlopens libvtllm.so from) to the unpacked build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
archive=${2:-.gl/prebuilt.tar.xz}
[ -f "$build/build.ninja" ] || { echo "pack_prebuilt: $build is not a configured Ninja build" >&2; exit 2; }
grep -q '^VTLLM_CUDA:STRING=ON' "$build/CMakeCache.txt" ||
  { echo "pack_prebuilt: $build is not configured with -DVTLLM_CUDA=ON" >&2; exit 2; }
grep -q '^VTLLM_VIDEO:STRING=OFF' "$build/CMakeCache.txt" ||
  { echo "pack_prebuilt: configure $build with -DVTLLM_VIDEO=OFF (no libav on the GPU machine)" >&2; exit 2; }
# Every test binary and CUDA benchmark the build defines, and vtllm.
targets=$(ninja -C "$build" -t targets all |
  sed -n 's#^\(tests/[a-z_]*_tests\|bench/cuda_[a-z_]*_bench\): .*#\1#p' | sort -u)
# shellcheck disable=SC2086
ninja -C "$build" vtllm vtllm_capi $targets >&2
mkdir -p "$(dirname "$archive")"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$stage/bench"
cp "$build"/tests/*_tests "$stage/tests/"
cp "$build/vtllm" "$stage/"
cp -P "$build"/libvtllm.so* "$stage/"  # the C API's library, which capi_tests loads
cp "$build"/bench/cuda_*_bench "$stage/bench/"
sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" > "$stage/source_dir"
sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" > "$stage/build_dir"
strip --strip-unneeded "$stage"/tests/* "$stage"/bench/* "$stage/vtllm" "$stage"/libvtllm.so.*
# Every binary holds the same CUDA fatbin: a dictionary spanning them all packs ~3x smaller.
tar -cf - -C "$stage" . | xz -T1 --lzma2=preset=9,dict=512MiB > "$archive"
echo "pack_prebuilt: $archive ($(du -h "$archive" | cut -f1)), tests compiled for source $(cat "$stage/source_dir")"
