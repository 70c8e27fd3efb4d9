#!/usr/bin/env bash
# Sets up a fresh machine, builds vtllm and runs its main job on the bundled default:
# generation with models/tiny-qwen3.5 (a small Qwen3.5 hybrid trained on the Brown
# corpus, with the real Qwen3 tokenizer cut to 4096 ranks and its chat template). It
# writes English-looking sentences, and every greedy token equals what Hugging Face
# transformers generates from the same weights (tests/apps and tests/models check that).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
TARGETS=vtllm scripts/build.sh
build/vtllm --version
build/vtllm selfcheck >/dev/null && echo "selfcheck: every op matches its double-precision reference"
echo
echo '$ build/vtllm generate models/tiny-qwen3.5 --chat --prompt "Tell me about the sea." --max-tokens 32'
build/vtllm generate models/tiny-qwen3.5 --chat --prompt "Tell me about the sea." --max-tokens 32
echo
