#!/usr/bin/env bash
# Every model-speed figure issues 19, 23 and 24 still miss, in one GPU call (~5 min;
# never past 8: BUDGET below), after scripts/gpu_test.sh built /tmp/vtllm-build:
#
#   OUT=/some/dir tools/bench/gpu_figures.sh       # repository root, GPU machine
#
# Dummy weights on the real shapes of bench/models/:
#   throughput (issues 19, 23): qwen3_5-default-text (9B), qwen3_6-27b, qwen3_6-35b-a3b:
#     decode batch 1, 8, 32, 64 at context 512 (CUDA graphs), prefill 512 and 4096, each
#     row with its per-op breakdown of eager steps (--profile-ops) and, for the MoE
#     shape, the distinct experts the router touched per layer (the row's bytes count
#     those experts).
#   vision (issue 24): qwen3_6-27b and qwen3_6-35b-a3b: the tower on 1024x1024 images
#     at 1 and 16 per call, the TTFT of a chat with one 1024x1024 JPEG + 64 text tokens
#     (with and without the processor), a 30 s 720p video at 2 fps through the video
#     processor and the tower, CPU decode + preprocessing at 1 and 16 threads.
# Each bench writes $OUT/<name>.json and $OUT/<name>.log; $OUT/summary.txt lists each
# command, its exit status and seconds, then the headline figures read from the JSON
# (a missing or malformed JSON is reported there and makes the exit status 1).
#
# Environment: BUILD_DIR (/tmp/vtllm-build), OUT (required), MODELS (the three above,
# MoE first), VISION_MODELS (the two VL ones; empty: none), STEP_TIMEOUT (240 s per bench), BUDGET
# (470 s for all: a bench gets at most what is left, and is skipped when under 20 s).
# A CPU smoke run of the script itself: DEVICE=cpu MODEL_DIR=tests/fixtures
# MODELS=qwen3_5_moe-tiny VISION_MODELS=qwen3_5-tiny-vl, with THROUGHPUT_ARGS and
# VISION_ARGS to shrink the sizes (appended to the command lines, so they override).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder the results go to}"
build=${BUILD_DIR:-/tmp/vtllm-build}
vtllm=$build/vtllm
device=${DEVICE:-cuda}
model_dir=${MODEL_DIR:-bench/models}
[ -x "$vtllm" ] || { echo "gpu_figures: $vtllm not built (run scripts/gpu_test.sh first)" >&2; exit 2; }
models=${MODELS-"qwen3_6-35b-a3b qwen3_5-default-text qwen3_6-27b"}
vision_models=${VISION_MODELS-"qwen3_6-27b qwen3_6-35b-a3b"}
limit=${STEP_TIMEOUT:-240}
budget=${BUDGET:-470}
mkdir -p "$OUT"
summary=$OUT/summary.txt
: > "$summary"
status=0
t_all=$(date +%s)

# bench NAME CMD...: runs CMD under the timeout, its output in $OUT/NAME.log.
bench() {
  local name=$1
  shift
  local t0 rc left
  t0=$(date +%s)
  left=$(( t_all + budget - t0 ))
  [ "$left" -lt "$limit" ] || left=$limit
  echo "=== $name (limit ${left} s): $*" | tee -a "$summary"
  if [ "$left" -lt 20 ]; then
    echo "$name: skipped, out of time" | tee -a "$summary"
    status=1
    return
  fi
  timeout "$left" "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name: rc=$rc, $(( $(date +%s) - t0 )) s" | tee -a "$summary"
  tail -n 3 "$OUT/$name.log"
  [ "$rc" -eq 0 ] || status=1
}

for m in $models; do
  # shellcheck disable=SC2086
  bench "throughput_$m" "$vtllm" bench throughput "$model_dir/$m" --load-format dummy \
    --device "$device" --batch 1,8,32,64 --input-len 512 --output-len 64 --prefill-lens 512,4096 \
    --profile-ops --profile-steps 3 --json "$OUT/throughput_$m.json" ${THROUGHPUT_ARGS:-}
done
for m in $vision_models; do
  # shellcheck disable=SC2086
  bench "vision_$m" "$vtllm" bench vision "$model_dir/$m" --load-format dummy --device "$device" \
    --images 1,16 --image-size 1024 --repeats 5 --text-tokens 64 --video-seconds 30 \
    --video-size 1280x720 --json "$OUT/vision_$m.json" ${VISION_ARGS:-}
done
echo "total: $(( $(date +%s) - t_all )) s" | tee -a "$summary"

# Headline figures from the JSON (and a check that each file is complete).
python3 - "$OUT" "$models" "$vision_models" >> "$summary" <<'PY' || status=1
import json, pathlib, sys
out, models, vision = pathlib.Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
bad = 0
for m in models:
    p = out / f"throughput_{m}.json"
    try:
        j = json.loads(p.read_text())
        rows = j["rows"]
        assert rows, "no rows"
        assert all("op_breakdown" in r for r in rows), "a row without its op breakdown"
    except Exception as e:
        print(f"{p.name}: MISSING OR INCOMPLETE ({e})"); bad += 1; continue
    bw, pk = j["ceilings"]["copy_gbps"], j["ceilings"]["bf16_tflops"]
    print(f"\n{m}: {j['model']}, weights {j['weight_bytes'] / 1e9:.2f} GB")
    for r in rows:
        e = r.get("experts")
        ex = f", experts/layer {e['mean']:.1f} [{e['min']}-{e['max']}] (uniform {e['uniform_expected']:.1f})" if e else ""
        b = r["op_breakdown"]
        print(f"  {r['phase']:7} b{r['batch']:<3} ctx {r['context']:6.0f}: {r['step_ms']:8.3f} ms, "
              f"{r['tokens_per_s']:9.1f} tok/s, {r['bytes'] / 1e9:6.2f} GB, {100 * r['gbps'] / bw:5.1f}% BW, "
              f"{100 * r['tflops'] / pk:5.1f}% PK{ex}; eager {b['step_us'] / 1e3:.3f} ms, ops "
              f"{100 * b['op_us'] / max(b['step_us'], 1e-9):.0f}%")
        for o in b["ops"][:6]:
            print(f"      {o['region']:8} {o['op']:26} {o['calls']:6.1f} calls {o['us']:9.1f} us "
                  f"{100 * o['us'] / max(b['step_us'], 1e-9):5.1f}%")
for m in vision:
    p = out / f"vision_{m}.json"
    try:
        j = json.loads(p.read_text())
        t, v, c, tw = j["ttft"], j["video"], j["cpu"], j["tower"]
    except Exception as e:
        print(f"{p.name}: MISSING OR INCOMPLETE ({e})"); bad += 1; continue
    print(f"\n{m} vision: " + ", ".join(f"{x['images']} img {x['ms']:.2f} ms ({x['tflops']:.0f} TFLOP/s)" for x in tw))
    print(f"  TTFT {t['prompt_tokens']} tokens: with processor {t['with_processor_ms']:.1f} ms "
          f"(processor {t['processor_ms']:.1f}), tower + prefill {t['tower_prefill_ms']:.1f} ms; "
          f"{t['images_encoded']} encodes for {t['requests']} requests")
    print(f"  video {v['frames']} frames -> grid {v['grid']}: processor {v['processor_ms']:.1f} ms, "
          f"tower {v['tower_ms']:.1f} ms, {v['patches_per_s']:.0f} patches/s")
    print("  CPU " + ", ".join(f"{x['threads']} threads {x['ms_per_image']:.2f} ms/image" for x in c)
          + f"; JPEG decode alone {j.get('cpu_decode_ms', float('nan')):.2f} ms")
sys.exit(1 if bad else 0)
PY
cat "$summary"
exit $status
