#!/usr/bin/env bash
# Installs the npm packages the tests use (tools/npm/package-lock.json) once.
# Prints the node_modules path. Tests call this; it is a no-op when up to date.
set -euo pipefail
dir="$(cd "$(dirname "$0")/../tools/npm" && pwd)"
stamp="$dir/node_modules/.vtllm-installed"
if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  touch "$stamp"
fi
echo "$dir/node_modules"
