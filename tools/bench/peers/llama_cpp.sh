#!/usr/bin/env bash
# llama.cpp as a benchmark peer, in its production serving configuration.
#
#   llama_cpp.sh build SRC_DIR [BUILD_DIR]
#       configure + build llama.cpp's CUDA backend for sm_90 (H200) from a source tree
#       fetched at run time (our repository holds no llama.cpp code); default build dir
#       /tmp/llama.cpp-build. Targets: llama-server, llama-bench, llama-batched-bench.
#   llama_cpp.sh pack-source GIT_DIR OUT_TAR_XZ
#       the part of a llama.cpp git checkout or mirror (HEAD) that build and convert need
#       (no docs, models, tests, examples, web UI sources or non-CUDA GPU backends), as
#       lsrc/ in an xz tarball small enough to travel to the GPU machine (~6 MB).
#   llama_cpp.sh convert SRC_DIR HF_DIR OUT_GGUF
#       llama.cpp's own converter, bf16, no MTP head (the dummy checkpoint has none).
#   llama_cpp.sh convert-mmproj SRC_DIR HF_DIR OUT_GGUF
#       the vision tower of a Qwen3.5 / Qwen3.6 ConditionalGeneration checkpoint as
#       llama.cpp's multimodal projector (convert_hf_to_gguf.py --mmproj), bf16.
#   llama_cpp.sh serve GGUF MAX_CONCURRENCY INPUT_LEN OUTPUT_LEN PORT
#       run llama-server in the foreground: every layer on the GPU, flash attention on,
#       one slot per concurrent client, continuous batching, a context that holds every
#       slot's prompt and output. LLAMA_BUILD (default /tmp/llama.cpp-build) names the build.
#       Prompt caching as llama.cpp documents it for hybrid models: the prompt cache on
#       (--cache-prompt), context checkpoints of the recurrent state (--ctx-checkpoints
#       32, its default count) and a host-RAM prompt cache for idle slots (--cache-ram,
#       MiB). --cache-reuse (KV shifting) and --swa-full do not apply: a GDN state cannot
#       be shifted, and Qwen3.5 has no sliding-window attention.
#   llama_cpp.sh serve-multi-turn GGUF MAX_CONCURRENCY INPUT_LEN OUTPUT_LEN PORT
#       as serve for multi-turn traffic (INPUT_LEN: a conversation's longest prompt), with
#       a checkpoint at every prompt's end (--checkpoint-min-step 0): the default 8192-token
#       spacing leaves turns of a few hundred tokens without one, so a rewritten history
#       would re-prefill in full.
#   llama_cpp.sh serve-mm GGUF MMPROJ_GGUF MAX_CONCURRENCY INPUT_LEN OUTPUT_LEN PORT
#       as serve, with the projector (--mmproj) for image chats: the projector on the GPU
#       (--mmproj-offload, its default, stated) and an image budget above the 1024 tokens
#       of a 1024x1024 image (4096 as --image-max-tokens), so llama.cpp never downscales
#       it. INPUT_LEN counts the image's tokens.
#
# tools/bench/check_peer_config.py reads the llama-server line below and fails when a
# production setting is missing; keep its flags explicit even where they are defaults.
set -euo pipefail
shopt -s extglob

usage() { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

cmd=${1:-}
case "$cmd" in
  build)
    [ $# -ge 2 ] || usage
    src=$2
    build=${3:-/tmp/llama.cpp-build}
    [ -f "$src/CMakeLists.txt" ] || { echo "llama_cpp.sh: $src is not a llama.cpp source tree" >&2; exit 1; }
    # sm_90 only keeps the build near 270 s with -j16; curl is off (the GPU machine has no
    # network); the embedded web UI is off (a benchmark never loads it).
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_SERVER=ON \
      -DLLAMA_BUILD_UI=OFF
    cmake --build "$build" -j "${JOBS:-$(nproc)}" --target llama-server llama-bench llama-batched-bench
    "$build/bin/llama-server" --version 2>&1 | tail -n 2
    ;;
  pack-source)
    [ $# -eq 3 ] || usage
    git_dir=$2 out=$(realpath -m "$3")
    tmp=$(mktemp -d)
    # Blob by blob: a mirror may lack large files outside these paths (git archive fails there).
    git -C "$git_dir" ls-tree -r HEAD -- CMakeLists.txt cmake common conversion \
        convert_hf_to_gguf.py ggml gguf-py include src tools vendor licenses LICENSE app \
        scripts/ui-assets.cmake |
      while read -r mode _ sha path; do
        case "$path" in  # the GPU backends other than CUDA
          ggml/src/ggml-@(vulkan|sycl|metal|opencl|cann|musa|hip|webgpu|zdnn|kompute|hexagon|openvino|et|virtgpu)/*)
            continue ;;
        esac
        mkdir -p "$tmp/lsrc/$(dirname "$path")"
        git -C "$git_dir" cat-file blob "$sha" > "$tmp/lsrc/$path" 2> /dev/null ||
          { echo "llama_cpp.sh: $path is not in $git_dir (left out)" >&2; continue; }
        if [ "$mode" = 100755 ]; then chmod +x "$tmp/lsrc/$path"; fi
      done
    git -C "$git_dir" rev-parse HEAD > "$tmp/lsrc/COMMIT"
    tar -cJf "$out" -C "$tmp" lsrc
    rm -rf "$tmp"
    ls -l "$out"
    ;;
  convert)
    [ $# -eq 4 ] || usage
    src=$2 hf_dir=$3 out=$4
    PYTHONPATH="$src/gguf-py${PYTHONPATH:+:$PYTHONPATH}" \
      python3 "$src/convert_hf_to_gguf.py" "$hf_dir" --outfile "$out" --outtype bf16 --no-mtp
    ;;
  convert-mmproj)
    [ $# -eq 4 ] || usage
    src=$2 hf_dir=$3 out=$4
    PYTHONPATH="$src/gguf-py${PYTHONPATH:+:$PYTHONPATH}" \
      python3 "$src/convert_hf_to_gguf.py" "$hf_dir" --mmproj --outfile "$out" --outtype bf16
    ;;
  serve|serve-multi-turn)
    [ $# -eq 6 ] || usage
    gguf=$2 max_concurrency=$3 input_len=$4 output_len=$5 port=$6
    bin=${LLAMA_BUILD:-/tmp/llama.cpp-build}/bin
    # Each slot holds one request's prompt and output; 256 tokens of headroom per slot.
    ctx=$(( max_concurrency * (input_len + output_len + 256) ))
    # llama.cpp's default spacing, stated; multi-turn: a checkpoint at every prompt's end.
    checkpoint_min_step=8192
    [ "$cmd" = serve ] || checkpoint_min_step=0
    exec "$bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" \
      -ngl 999 \
      -fa on \
      --parallel "$max_concurrency" \
      -cb \
      --cache-prompt \
      --ctx-checkpoints 32 \
      --checkpoint-min-step "$checkpoint_min_step" \
      --cache-ram 32768 \
      -c "$ctx"
    ;;
  serve-mm)
    [ $# -eq 7 ] || usage
    gguf=$2 mmproj=$3 max_concurrency=$4 input_len=$5 output_len=$6 port=$7
    bin=${LLAMA_BUILD:-/tmp/llama.cpp-build}/bin
    # As serve (the same settings in their long spellings), plus the projector's.
    mm_ctx=$(( (input_len + output_len + 256) * max_concurrency ))
    exec "$bin/llama-server" -m "$gguf" --mmproj "$mmproj" --host 127.0.0.1 --port "$port" \
      --n-gpu-layers all --flash-attn on --cont-batching -np "$max_concurrency" \
      --cache-prompt -ctxcp 32 -cms 8192 -cram 32768 \
      --mmproj-offload --image-max-tokens 4096 \
      --ctx-size "$mm_ctx"
    ;;
  *)
    usage
    ;;
esac
