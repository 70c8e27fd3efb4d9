#!/usr/bin/env bash
# The serving comparison on the GPU machine: vtllm and each peer, one workload at a
# time, each server alone on the GPU, all measured by the same `vtllm bench serve`.
#
#   tools/bench/run_peers.sh prepare --llama-src DIR --tokenizer-dir DIR [--model-config DIR]
#       random bf16 HF checkpoint of --model-config's shape (a bench/models folder; default
#       the default Qwen3.5 text shape) at vocab 151936,
#       its GGUF through llama.cpp's converter, and llama.cpp's CUDA build; each step is
#       skipped when its output exists. Everything lives under --work (/tmp/vtllm-bench).
#   tools/bench/run_peers.sh run --vtllm PATH [--peers "vtllm llama.cpp transformers"]
#                                [--workloads "512:128:1,8,32,64 4096:64:1,8,32,64"]
#                                [--num-prompts N] [--commit SHA]
#       for each peer and workload (INPUT:OUTPUT:CONCURRENCY-LIST): start the server, run
#       the sweep, stop it. Results land in --out (default $work/results): the client's
#       JSON per concurrency level, the server log, and a .meta.json with the peak GPU
#       memory (nvidia-smi, sampled every 200 ms while the server lives), the server's own
#       report and the exact commands.
#   tools/bench/run_peers.sh multi-turn --vtllm PATH [--peers "vtllm llama.cpp"]
#                                [--patterns "append append-text rewrite system"]
#                                [--conversations 32] [--turns 8] [--user-len 256]
#                                [--output-len 128] [--system-len 2048] [--commit SHA]
#       prefix caching (issue 25): for each peer and pattern, a fresh server and one
#       `vtllm bench serve --multi-turn` run (append: each turn carries the previous
#       answer's ids as the server generated them, returned with the response: vLLM's
#       return_token_ids for vtllm, return_tokens + verbose for llama.cpp; append-text: the
#       answer's text re-tokenized by the server's /tokenize, as a client that keeps text
#       would send it; rewrite: other ids in the answer's place; system: append behind a
#       shared system prefix of --system-len tokens). Slots = conversations, so every
#       conversation stays resident; llama.cpp runs llama_cpp.sh serve-multi-turn (its
#       prompt cache and recurrent-state checkpoints). Results: $out/mt-PEER-PATTERN.json.
#
# Every peer launch below is checked by tools/bench/check_peer_config.py.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
peers_dir=$here/peers
# The issue's workloads: input:output:concurrency levels.
workloads=("512:128:1,8,32,64" "4096:64:1,8,32,64")

mode=${1:-}
[ -n "$mode" ] && shift
work=/tmp/vtllm-bench llama_src="" tokenizer_dir="" vtllm="" peers="vtllm llama.cpp transformers"
model_config=$repo/bench/models/qwen3_5-default-text
num_prompts=0 commit="" out=""
patterns="append append-text rewrite system" conversations=32 turns=8 user_len=256 mt_output_len=128 system_len=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --llama-src) llama_src=$2; shift 2 ;;
    --tokenizer-dir) tokenizer_dir=$2; shift 2 ;;
    --model-config) model_config=$2; shift 2 ;;
    --vtllm) vtllm=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --workloads) read -r -a workloads <<< "$2"; shift 2 ;;
    --num-prompts) num_prompts=$2; shift 2 ;;
    --commit) commit=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --patterns) patterns=$2; shift 2 ;;
    --conversations) conversations=$2; shift 2 ;;
    --turns) turns=$2; shift 2 ;;
    --user-len) user_len=$2; shift 2 ;;
    --output-len) mt_output_len=$2; shift 2 ;;
    --system-len) system_len=$2; shift 2 ;;
    *) echo "run_peers.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
out=${out:-$work/results}
hf_dir=$work/hf
gguf=$work/model-bf16.gguf
export LLAMA_BUILD=$work/llama.cpp-build

prepare() {
  [ -n "$llama_src" ] && [ -n "$tokenizer_dir" ] || { echo "prepare needs --llama-src and --tokenizer-dir" >&2; exit 2; }
  mkdir -p "$work"
  [ -f "$hf_dir/config.json" ] || python3 "$here/make_dummy_hf_model.py" \
    --config "$model_config/config.json" \
    --tokenizer-dir "$tokenizer_dir" --vocab-size 151936 --out "$hf_dir"
  [ -f "$gguf" ] || "$peers_dir/llama_cpp.sh" convert "$llama_src" "$hf_dir" "$gguf"
  [ -x "$LLAMA_BUILD/bin/llama-server" ] || "$peers_dir/llama_cpp.sh" build "$llama_src" "$LLAMA_BUILD"
}

wait_healthy() {  # PORT PID SECONDS
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time, urllib.request
port, pid, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
t0 = time.time()
while time.time() - t0 < limit:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(f"server (pid {pid}) exited before it was healthy")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            if r.status == 200:
                print(f"healthy after {time.time() - t0:.0f} s")
                sys.exit(0)
    except Exception:
        pass
    time.sleep(1)
sys.exit(f"server on port {port} not healthy after {limit:.0f} s")
PY
}

# The command that serves PEER for one workload; sets server_cmd (an array) and port.
server_command() {
  local peer=$1 input_len=$2 output_len=$3 max_concurrency=$4
  local max_model_len=$(( input_len + output_len + 256 ))
  case "$peer" in
    vtllm)
      port=8000
      # bf16 on the GPU, KV cache from 90% of its memory, every client in one batch,
      # prefill chunks of up to 8192 tokens (vLLM's default for its API server on large GPUs).
      server_cmd=("$vtllm" serve "$hf_dir" --host 127.0.0.1 --port "$port" --served-model-name vtllm --device cuda
        --gpu-memory-utilization 0.9 --max-num-seqs "$(( max_concurrency > 256 ? max_concurrency : 256 ))"
        --max-num-batched-tokens 8192 --max-model-len "$max_model_len")
      ;;
    llama.cpp)
      port=8080
      server_cmd=("$peers_dir/llama_cpp.sh" serve "$gguf" "$max_concurrency" "$input_len" "$output_len" "$port")
      ;;
    transformers)
      port=8001
      server_cmd=(python3 "$peers_dir/transformers_server.py" --model "$hf_dir"
        --dtype bfloat16
        --attn-implementation sdpa
        --engine auto
        --max-batch-size "$max_concurrency"
        --max-model-len "$max_model_len"
        --port "$port")
      ;;
    *) echo "run_peers.sh: unknown peer $peer" >&2; exit 2 ;;
  esac
}

run_one() {  # PEER WORKLOAD
  local peer=$1 input_len output_len levels max_concurrency
  IFS=: read -r input_len output_len levels <<< "$2"
  max_concurrency=$(tr ',' '\n' <<< "$levels" | sort -n | tail -n 1)
  local tag="$peer-in$input_len-out$output_len"
  local log=$out/$tag.server.log mem=$out/$tag.gpu_mem.csv
  echo "=== $tag: concurrency $levels"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$mem" &
  local smi_pid=$!
  server_command "$peer" "$input_len" "$output_len" "$max_concurrency"
  "${server_cmd[@]}" > "$log" 2>&1 &
  local server_pid=$! rc=0 health='{}'
  # One client run per concurrency level, each with max(8, 2 x concurrency) requests
  # (--num-prompts overrides): two waves per level keep the slowest peer's long-prompt
  # sweep within the GPU machine's 10-minute command limit.
  local client_cmd=() c n
  if wait_healthy "$port" "$server_pid" 1200; then
    health=$(python3 -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:$port/health').read().decode())" || echo '{}')
    for c in ${levels//,/ }; do
      n=$num_prompts
      [ "$n" -gt 0 ] || n=$(( 2 * c > 8 ? 2 * c : 8 ))
      client_cmd=("$vtllm" bench serve --base-url "http://127.0.0.1:$port" --model "$peer"
        --concurrency "$c" --input-len "$input_len" --output-len "$output_len"
        --num-prompts "$n" --json "$out/$tag-c$c.json")
      "${client_cmd[@]}" || rc=$?
    done
  else
    rc=1
    tail -n 30 "$log"
  fi
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  kill "$smi_pid" 2> /dev/null || true
  wait "$smi_pid" 2> /dev/null || true
  python3 - "$out/$tag.meta.json" "$mem" "$peer" "${server_cmd[*]}" "${client_cmd[*]}" "$health" "$commit" "$rc" <<'PY'
import json, sys, datetime
path, mem, peer, server_cmd, client_cmd, health, commit, rc = sys.argv[1:]
vals = [int(l) for l in open(mem) if l.strip().isdigit()]
try:
    health = json.loads(health)
except ValueError:
    health = {"raw": health}
json.dump({"peer": peer, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit, "peak_gpu_mem_mib": max(vals, default=None), "gpu_mem_samples": len(vals),
           "server_command": server_cmd, "client_command": client_cmd, "server_health": health,
           "client_exit_code": int(rc)}, open(path, "w"), indent=2)
print(f"peak GPU memory {max(vals, default=0)} MiB -> {path}")
PY
  return 0
}

run_multi_turn() {  # PEER PATTERN
  local peer=$1 pattern=$2 sys=0 mt_mode=append
  [ "$pattern" = system ] && sys=$system_len
  [ "$pattern" = rewrite ] && mt_mode=rewrite
  # A conversation's longest prompt: the prefix, every user turn and all answers but the last.
  local longest=$(( sys + turns * user_len + (turns - 1) * mt_output_len ))
  local tag="mt-$peer-$pattern" log=$out/mt-$peer-$pattern.server.log answer_ids=auto
  # The generated ids, returned with each response (auto), or the text re-tokenized.
  local extra_body='{"return_token_ids": true}'
  [ "$peer" = llama.cpp ] && extra_body='{"return_tokens": true, "verbose": true}'
  if [ "$pattern" = append-text ]; then
    answer_ids=tokenize extra_body='{}'
    [ "$peer" = llama.cpp ] && answer_ids=tokenize-llama
  fi
  echo "=== $tag: $conversations conversations x $turns turns"
  if [ "$peer" = llama.cpp ]; then
    port=8080
    server_cmd=("$peers_dir/llama_cpp.sh" serve-multi-turn "$gguf" "$conversations" "$longest"
      "$mt_output_len" "$port")
  else
    server_command "$peer" "$longest" "$mt_output_len" "$conversations"
  fi
  "${server_cmd[@]}" > "$log" 2>&1 &
  local server_pid=$! rc=0
  if wait_healthy "$port" "$server_pid" 1200; then
    "$vtllm" bench serve --multi-turn --base-url "http://127.0.0.1:$port" --model "$peer" \
      --conversations "$conversations" --turns "$turns" --user-len "$user_len" \
      --output-len "$mt_output_len" --system-len "$sys" --multi-turn-mode "$mt_mode" \
      --answer-ids "$answer_ids" --extra-body "$extra_body" --json "$out/$tag.json" || rc=$?
  else
    rc=1
    tail -n 30 "$log"
  fi
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  echo "$tag: client exit $rc; server: ${server_cmd[*]}"
}

case "$mode" in
  prepare) prepare ;;
  multi-turn)
    [ -x "$vtllm" ] || { echo "multi-turn needs --vtllm PATH (the built vtllm binary)" >&2; exit 2; }
    mkdir -p "$out"
    for peer in $peers; do
      [ "$peer" = transformers ] && continue  # no prefix cache across requests
      for p in $patterns; do run_multi_turn "$peer" "$p"; done
    done
    ;;
  run)
    [ -x "$vtllm" ] || { echo "run needs --vtllm PATH (the built vtllm binary)" >&2; exit 2; }
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.csv"
    for peer in $peers; do
      for w in "${workloads[@]}"; do run_one "$peer" "$w"; done
    done
    ;;
  *) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
