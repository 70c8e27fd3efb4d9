#!/usr/bin/env bash
# Soak: `vtllm serve` under a closed loop of 64 concurrent streaming clients
# (`vtllm bench serve`) for a fixed time, sampling the server's RSS every
# 10 s. Reports requests completed and failed and RSS at the start, peak and
# end; exits 1 when any request failed or the server died. Not in CI (minutes).
#
# usage: tools/server_tests/soak.sh VTLLM_BINARY MODEL_DIR [SECONDS (600)] [CONCURRENCY (64)]
# Environment: SOAK_OUTPUT_LEN (32), SOAK_INPUT_LEN (32), SOAK_PORT (0: a free port)
set -euo pipefail
bin=$1
model=$2
seconds=${3:-600}
conc=${4:-64}
out_len=${SOAK_OUTPUT_LEN:-32}
in_len=${SOAK_INPUT_LEN:-32}
work=$(mktemp -d)
log=$work/serve.log
"$bin" serve "$model" --host 127.0.0.1 --port "${SOAK_PORT:-0}" --served-model-name soak \
  --max-num-seqs "$conc" >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\),.*|\1|p' "$log" | head -n1)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log"; echo "soak: server exited before listening"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$log"; echo "soak: server did not start"; exit 1; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0; }

echo "soak: $(head -n1 "$log")"
echo "soak: ${seconds} s, concurrency $conc, input $in_len, output $out_len tokens"
rss0=$(rss_kb)
peak=$rss0
samples="$rss0"
completed=0
failed=0
rounds=0
start=$SECONDS
last_sample=$SECONDS
# Rounds of 8 x concurrency requests each, until the time is up.
while [ $((SECONDS - start)) -lt "$seconds" ]; do
  "$bin" bench serve --base-url "http://127.0.0.1:$port" --model soak --concurrency "$conc" \
    --num-prompts $((conc * 8)) --input-len "$in_len" --output-len "$out_len" \
    --token-range 100,4000 --warmup 0 --seed "$rounds" --json "$work/round.json" \
    >"$work/round.txt" 2>&1 || true
  kill -0 $pid 2>/dev/null || { cat "$log"; echo "soak: the server died"; exit 1; }
  read -r c f < <(python3 -c "
import json,sys
try:
  l=json.load(open('$work/round.json'))['levels'][0]; print(l['completed'], l['failed'])
except Exception: print(0, 1)")
  if [ "$f" -gt 0 ]; then
    echo "soak: round $rounds: $f failed"
    grep -m3 "error:" "$work/round.txt" || true
  fi
  completed=$((completed + c))
  failed=$((failed + f))
  rounds=$((rounds + 1))
  [ "$rounds" -eq 1 ] && rss_warm=$(rss_kb)
  rm -f "$work/round.json"
  if [ $((SECONDS - last_sample)) -ge 10 ]; then
    r=$(rss_kb)
    samples="$samples $r"
    [ "$r" -gt "$peak" ] && peak=$r
    last_sample=$SECONDS
  fi
done
rss1=$(rss_kb)
[ "$rss1" -gt "$peak" ] && peak=$rss1
elapsed=$((SECONDS - start))
echo "soak: $elapsed s, $rounds rounds, $completed completed, $failed failed" \
  "($(python3 -c "print(round($completed / max(1, $elapsed), 1))") req/s)"
echo "soak: RSS idle $((rss0 / 1024)) MiB, after round 1 $((rss_warm / 1024)) MiB, peak $((peak / 1024)) MiB, end $((rss1 / 1024)) MiB" \
  "(samples, KiB: $samples)"
kill -TERM $pid
wait $pid || { echo "soak: server exit status $?"; exit 1; }
trap 'rm -rf "$work"' EXIT
[ "$failed" -eq 0 ] || exit 1
