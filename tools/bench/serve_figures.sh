#!/usr/bin/env bash
# The serving figures issues 25 and 20 still miss, vtllm alone, in one GPU call (~6 min on
# the 9B shape), after scripts/gpu_test.sh built /tmp/vtllm-build and a dummy checkpoint
# exists (run_peers.sh prepare, or make_dummy_hf_model.py --out $HF):
#
#   OUT=/some/dir tools/bench/serve_figures.sh      # repository root, GPU machine
#
# Parts (PARTS, default "mt ab so"):
#   mt  issue 25: run_peers.sh multi-turn for vtllm (MT_PATTERNS, default "append rewrite
#       system"; 32 conversations x 8 turns, 256 user + 128 output tokens per turn).
#   ab  issue 25: the no-reuse cost of prefix caching: random 512-token prompts, 128
#       outputs, 32 clients, AB_PROMPTS (128) requests, a fresh server each run, caching
#       on / off / on / off (two pairs, so the pair-to-pair spread shows the noise).
#   so  issue 20: decode with every request constrained: 64 clients, 32-token prompts, up
#       to 256 tokens, EOS allowed; unconstrained, then a JSON schema (response_format),
#       twice each (SO_RUNS, default "free-1 json-1 free-2 json-2": free-N unconstrained,
#       json-N constrained). TPOT is the per-step comparison (a finished document ends its request,
#       so the constrained runs are shorter).
# Results: $OUT/<part>-*.json (vtllm bench serve's JSON), server logs beside them, and
# $OUT/summary.txt with the headline figures.
#
# Environment: VTLLM (/tmp/vtllm-build/vtllm), HF (/tmp/vtllm-bench/hf), DEVICE (cuda),
# BENCH_ARGS (appended to the ab and so clients, e.g. "--token-range 10,4000" for a
# small vocabulary), SO_SERVE_ARGS (appended to the so part's server, e.g.
# "--jump-forward"). A CPU smoke run: DEVICE=cpu HF=models/tiny-qwen3.5 PARTS="ab so"
# AB_PROMPTS=8 SO_PROMPTS=16 SO_C=8 BENCH_ARGS="--token-range 10,4000" VTLLM=build/vtllm.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder the results go to}"
vt=${VTLLM:-/tmp/vtllm-build/vtllm}
hf=${HF:-/tmp/vtllm-bench/hf}
dev=${DEVICE:-cuda}
parts=${PARTS:-"mt ab so"}
mkdir -p "$OUT"
summary=$OUT/summary.txt
: > "$summary"
t0=$SECONDS
[ -x "$vt" ] || { echo "serve_figures: $vt not built" >&2; exit 2; }
[ -f "$hf/config.json" ] || { echo "serve_figures: no checkpoint at $hf" >&2; exit 2; }

# serve LOG ARGS...: vtllm serve on port 8000 with run_peers.sh's flags; sets spid.
serve() {
  local log=$1
  shift
  "$vt" serve "$hf" --host 127.0.0.1 --port 8000 --served-model-name vtllm --device "$dev" \
    --gpu-memory-utilization 0.9 --max-num-seqs 256 --max-num-batched-tokens 8192 "$@" \
    > "$log" 2>&1 &
  spid=$!
  for _ in $(seq 1 1200); do
    curl -sf http://127.0.0.1:8000/health > /dev/null 2>&1 && return 0
    kill -0 "$spid" 2> /dev/null || break
    sleep 0.5
  done
  echo "server did not come up: $log" | tee -a "$summary"
  tail -n 20 "$log"
  return 1
}
stop() {
  kill "$spid" 2> /dev/null
  wait "$spid" 2> /dev/null
}
# client NAME ARGS...: one bench serve run against port 8000, its JSON and log in $OUT.
client() {
  local name=$1
  shift
  "$vt" bench serve --base-url http://127.0.0.1:8000 --model vtllm --json "$OUT/$name.json" \
    "$@" > "$OUT/$name.log" 2>&1
  echo "$name: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary"
}

if [[ " $parts " == *" mt "* ]]; then
  tools/bench/run_peers.sh multi-turn --vtllm "$vt" --peers vtllm --work "$(dirname "$hf")" \
    --out "$OUT" --patterns "${MT_PATTERNS:-append rewrite system}" > "$OUT/mt.log" 2>&1
  echo "mt: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary"
fi

if [[ " $parts " == *" ab "* ]]; then
  for i in 1 2; do
    for mode in on off; do
      flag=()
      [ "$mode" = off ] && flag=(--no-enable-prefix-caching)
      serve "$OUT/ab-$mode-$i.server.log" --max-model-len 1024 "${flag[@]}" || continue
      # shellcheck disable=SC2086
      client "ab-$mode-$i" --concurrency 32 --input-len 512 --output-len 128 \
        --num-prompts "${AB_PROMPTS:-128}" --seed "$i" ${BENCH_ARGS:-}
      stop
    done
  done
fi

if [[ " $parts " == *" so "* ]]; then
  # A person record: nested object, array, integer, a pattern; no extra keys.
  schema='{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["city","zip"],"additionalProperties":false}},"required":["name","age","tags","address"],"additionalProperties":false}'
  # Compact JSON: under vLLM's default whitespace rule random weights fill the output with spaces.
  json_body="{\"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"person\", \"schema\": $schema}}, \"structured_outputs\": {\"disable_any_whitespace\": true}}"
  # shellcheck disable=SC2086
  if serve "$OUT/so.server.log" --max-model-len 1024 ${SO_SERVE_ARGS:-}; then
    for run in ${SO_RUNS:-free-1 json-1 free-2 json-2}; do
      extra='{}'
      [[ $run == json* ]] && extra=$json_body
      # shellcheck disable=SC2086
      client "so-$run" --concurrency "${SO_C:-64}" --input-len 32 --output-len 256 \
        --num-prompts "${SO_PROMPTS:-256}" --no-ignore-eos --extra-body "$extra" ${BENCH_ARGS:-}
    done
    stop
  fi
fi

# Headline figures.
python3 - "$OUT" >> "$summary" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for p in sorted(out.glob("mt-vtllm-*.json")):
    try:
        j = json.loads(p.read_text())
        t = j["turns"]
        frac = [x["cached_fraction_of_reusable"] for x in t[1:]]
        print(f"{p.stem}: cached/reusable turns 2-{len(t)}: least "
              f"{100 * min(f or 0 for f in frac):.1f}%, turn {len(t)} {100 * (frac[-1] or 0):.1f}%; "
              f"TTFT mean ms per turn {' '.join('%.0f' % x['ttft_ms']['mean'] for x in t)}; "
              f"turn {len(t)} / turn 1 {t[-1]['ttft_ms']['mean'] / t[0]['ttft_ms']['mean']:.2f}; "
              f"out tok/s {j['total_output_tokens'] / j['duration_s']:.0f}; "
              f"failed {sum(x['failed'] for x in t)}")
    except Exception as e:
        print(f"{p.name}: MISSING OR INCOMPLETE ({e})")
for prefix in ("ab", "so"):
    for p in sorted(out.glob(f"{prefix}-*.json")):
        try:
            l = json.loads(p.read_text())["levels"][0]
            print(f"{p.stem}: {l['completed']} ok / {l['failed']} failed, out tok/s "
                  f"{l['output_throughput']:.1f}, {l['total_output_tokens']} tokens, TTFT mean "
                  f"{l['ttft_ms']['mean']:.1f} ms, TPOT mean {l['tpot_ms']['mean']:.2f} ms "
                  f"(median {l['tpot_ms']['median']:.2f})")
        except Exception as e:
            print(f"{p.name}: MISSING OR INCOMPLETE ({e})")
PY
echo "serve_figures: $((SECONDS - t0)) s" | tee -a "$summary"
