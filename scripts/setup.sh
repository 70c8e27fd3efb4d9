#!/usr/bin/env bash
# Installs every Debian package vtllm needs to build, test and fuzz on a fresh
# Debian 12 machine. Idempotent and non-interactive: packages already present
# are left alone, and apt is only asked when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libboost1.81-dev libcpp-httplib-dev
  libpcre2-dev libutf8proc-dev
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev
  libopenblas-dev
  clang libclang-rt-14-dev
  python3 python3-jinja2
)

# Node.js and npm run the reference tokenizer and the OpenAI client in tests.
# A machine may carry them from another source (nodesource), which conflicts
# with Debian's npm package, so they are only asked for when absent.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi
