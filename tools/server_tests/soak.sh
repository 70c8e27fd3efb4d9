#!/usr/bin/env bash
# Soak: `vtllm serve` under a closed loop of 64 concurrent streaming clients
# (`vtllm bench serve`) for a fixed time, sampling the server's RSS every
# 10 s in the background. Reports requests completed and failed, RSS at the
# start, after round 1, peak and end, and the RSS slope over the second half
# (least squares over the samples, KiB/min). Exits 1 when any request failed,
# the server died, or the slope is above SOAK_MAX_SLOPE. Not in CI (minutes).
#
# The slope limit, 2048 KiB/min: the first half is warm-up (worker stacks and
# malloc arenas reach their working size); after it a bounded server's RSS
# moves only with the live batch's tensors and buffers, which put the samples
# anywhere in a ~11 MiB band (measured). Over the 300 s second half of the
# 600 s default (30 samples) that band gives the slope a standard error of
# ~0.4 MiB/min, so 2 MiB/min is 5 standard errors above flat and 4 times below
# the arena growth docs/BENCHMARKS.md's soak section records (7.3 to 8.6
# MiB/min). Shorter runs have fewer samples over less time: raise the limit.
#
# usage: tools/server_tests/soak.sh VTLLM_BINARY MODEL_DIR [SECONDS (600)] [CONCURRENCY (64)]
# Environment: SOAK_OUTPUT_LEN (32), SOAK_INPUT_LEN (32), SOAK_PORT (0: a free port),
# SOAK_MAX_SLOPE (2048 KiB/min)
set -euo pipefail
bin=$1
model=$2
seconds=${3:-600}
conc=${4:-64}
out_len=${SOAK_OUTPUT_LEN:-32}
in_len=${SOAK_INPUT_LEN:-32}
max_slope=${SOAK_MAX_SLOPE:-2048}
work=$(mktemp -d)
log=$work/serve.log
"$bin" serve "$model" --host 127.0.0.1 --port "${SOAK_PORT:-0}" --served-model-name soak \
  --max-num-seqs "$conc" >"$log" 2>&1 &
pid=$!
sampler=""
trap 'kill $sampler 2>/dev/null || true; kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
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
completed=0
failed=0
rounds=0
start=$SECONDS
# "seconds-since-start KiB" every 10 s until the server exits or the sampler is killed.
(while kill -0 $pid 2>/dev/null; do
  echo "$((SECONDS - start)) $(rss_kb)" >>"$work/rss.txt"
  sleep 10
done) &
sampler=$!
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
done
rss1=$(rss_kb)
kill $sampler 2>/dev/null || true
wait $sampler 2>/dev/null || true
echo "$((SECONDS - start)) $rss1" >>"$work/rss.txt"
elapsed=$((SECONDS - start))
echo "soak: $elapsed s, $rounds rounds, $completed completed, $failed failed" \
  "($(python3 -c "print(round($completed / max(1, $elapsed), 1))") req/s)"
# Peak, and the least-squares slope of the samples in the second half (KiB/min).
read -r peak slope < <(python3 -c "
rows = [tuple(map(int, l.split())) for l in open('$work/rss.txt') if len(l.split()) == 2]
late = [(t, r) for t, r in rows if t >= $elapsed / 2]
n = len(late)
mt = sum(t for t, _ in late) / max(1, n)
mr = sum(r for _, r in late) / max(1, n)
den = sum((t - mt) ** 2 for t, _ in late)
slope = 60 * sum((t - mt) * (r - mr) for t, r in late) / den if n > 2 and den > 0 else 0
print(max([r for _, r in rows] + [$rss1]), round(slope))")
echo "soak: RSS idle $((rss0 / 1024)) MiB, after round 1 $((rss_warm / 1024)) MiB," \
  "peak $((peak / 1024)) MiB, end $((rss1 / 1024)) MiB;" \
  "second-half slope $slope KiB/min (limit $max_slope)"
echo "soak: RSS samples (s KiB): $(tr '\n' ' ' <"$work/rss.txt")"
kill -TERM $pid
wait $pid || { echo "soak: server exit status $?"; exit 1; }
trap 'rm -rf "$work"' EXIT
[ "$failed" -eq 0 ] || exit 1
[ "$slope" -le "$max_slope" ] || { echo "soak: RSS still rising"; exit 1; }
