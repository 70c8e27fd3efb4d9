#!/usr/bin/env bash
# Starts `vtllm serve` on a free loopback port with an API key, runs the node
# client tests against it, and always stops the server (by its pid) at the end.
# usage: tools/server_tests/run.sh VTLLM_BINARY MODEL_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin=$1
model=$2
modules=$("$here/../../scripts/npm_deps.sh")
log=$(mktemp)
key="sk-vtllm-test-$$"
# start_server MODEL_DIR NAME ARGS...: `vtllm serve` on a free loopback port with the key,
# its output in $log; sets pid and port once it listens (exits 1 if it does not).
start_server() {
  local dir=$1 name=$2
  shift 2
  "$bin" serve "$dir" --host 127.0.0.1 --port 0 --served-model-name "$name" --api-key "$key" \
    "$@" >"$log" 2>&1 &
  pid=$!
  trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
  port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's|.* on http://127\.0\.0\.1:\([0-9]*\),.*|\1|p' "$log" | head -n1)
    [ -n "$port" ] && break
    kill -0 $pid 2>/dev/null || { cat "$log"; echo "$name server exited before listening"; exit 1; }
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$log"; echo "$name server did not start within 60 s"; exit 1; }
  echo "server: $(head -n1 "$log")"
}
start_server "$model" tiny --max-num-seqs 64 --max-model-len 512 --num-gpu-blocks-override 2049
NODE_PATH="$modules" VTLLM_URL="http://127.0.0.1:$port" VTLLM_KEY="$key" node "$here/openai_client_test.js"
# The CLI refuses a bad server flag naming it, and a busy port (this server's),
# both with status 1 and before the model loads.
expect_refusal() {  # expect_refusal WANTED_TEXT ARGS...
  local want=$1 out st=0
  shift
  out=$("$bin" serve "$model" "$@" 2>&1) || st=$?
  if [ "$st" -ne 1 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: serve $* -> status $st, output: $out"; exit 1
  fi
  echo "ok: serve $* -> $want"
}
expect_refusal "--max-body-bytes -1" --max-body-bytes -1
expect_refusal "--header-timeout 0" --header-timeout 0
expect_refusal "--max-connections expects an integer" --max-connections many
expect_refusal "127.0.0.1:$port: Address already in use" --port "$port"
expect_refusal "--mm-processor-kwargs: unknown key 'bogus'" --mm-processor-kwargs '{"bogus": 1}'
expect_refusal "--tool-call-parser 'bogus'" --tool-call-parser bogus
expect_refusal "--enable-auto-tool-choice requires --tool-call-parser" --enable-auto-tool-choice
expect_refusal "backend 'outlines' is not available" --structured-outputs-config '{"backend": "outlines"}'
expect_refusal "'disable_any_whitespace' must be true or false" \
  --structured-outputs-config.disable_any_whitespace maybe
expect_refusal "--reasoning-parser and --structured-outputs-config's reasoning_parser differ" \
  --reasoning-parser qwen3 --structured-outputs-config.reasoning_parser deepseek_r1
# SIGTERM drains and exits 0.
kill -TERM $pid
status=0
wait $pid || status=$?
trap 'rm -f "$log"' EXIT
[ "$status" -eq 0 ] || { cat "$log"; echo "server exited with $status after SIGTERM"; exit 1; }
echo "server stopped cleanly"

# Tool calls and reasoning through the openai client (tools_client_test.js), with the
# Qwen3.5 template (the tiny model's own is Qwen3's).
start_server "$model" tiny --max-num-seqs 8 --max-model-len 4096 --num-gpu-blocks-override 2049 \
  --tool-call-parser qwen3_coder --enable-auto-tool-choice --reasoning-parser qwen3 \
  --chat-template "$here/../../tests/fixtures/qwen3_5-tiny-vl/chat_template.jinja"
NODE_PATH="$modules" VTLLM_URL="http://127.0.0.1:$port" VTLLM_KEY="$key" \
  node "$here/tools_client_test.js" || { tail -n 20 "$log"; exit 1; }
kill -TERM $pid
wait $pid || true
trap 'rm -f "$log"' EXIT

# The openai client sends images to the VL oracle fixture (its own images, data: URLs).
vl=$(cd "$here/../.." && pwd)/tests/fixtures/qwen3_5-tiny-vl
if [ -f "$vl/vl_reference.json" ]; then
  start_server "$vl" vl --max-num-seqs 8 --max-model-len 512 --num-gpu-blocks-override 257
  NODE_PATH="$modules" VTLLM_URL="http://127.0.0.1:$port" VTLLM_KEY="$key" VTLLM_FIXTURE="$vl" \
    node "$here/vision_client_test.js" || { tail -n 20 "$log"; exit 1; }
fi
