#!/usr/bin/env bash
# usage: c_generate_matches.sh C_GENERATE VTLLM MODEL_DIR
# The example C program (examples/c_generate.c, through libvtllm.so) and `vtllm
# generate` print the same greedy continuation for each prompt, on the CPU.
set -euo pipefail
c_generate=$1 vtllm=$2 model=$3
status=0
for prompt in "The capital of France is" "Once upon a time" $'a "quoted"\\ prompt\twith tabs'; do
  for n in 16 40; do
    ours=$("$c_generate" "$model" "$prompt" "$n")
    # $(...) drops trailing newlines from both: generate ends its text with one.
    theirs=$("$vtllm" generate "$model" --prompt "$prompt" --max-tokens "$n" --device cpu 2>/dev/null)
    if [ "$ours" != "$theirs" ]; then
      echo "FAIL: prompt '$prompt', $n tokens:"
      echo "  c_generate:     $(printf '%q' "$ours")"
      echo "  vtllm generate: $(printf '%q' "$theirs")"
      status=1
    elif [ -z "$ours" ]; then
      echo "FAIL: prompt '$prompt': empty continuation"
      status=1
    else
      echo "ok: '$prompt' ($n tokens): $(printf '%q' "$ours" | cut -c1-60)"
    fi
  done
done
# A bad model directory is an error code with a message naming it.
if out=$("$c_generate" /nonexistent/model-dir "hi" 2>&1); then
  echo "FAIL: c_generate on a missing directory succeeded"
  status=1
elif ! grep -q "/nonexistent/model-dir" <<<"$out"; then
  echo "FAIL: the error does not name the directory: $out"
  status=1
fi
exit $status
