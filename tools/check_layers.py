#!/usr/bin/env python3
"""Checks DESIGN.md §1's one-way rule: a src/ folder includes only folders below it.

Exits 1 naming file:line for every upward or sideways include, 0 when clean,
and 2 when it finds no source file at all (a broken checker must not pass).
"""
import pathlib
import re
import sys

# Lowest first. A layer may include itself and anything earlier in this list.
ORDER = ["base", "vt", "io", "text", "models", "multimodal", "structured", "engine", "server", "capi"]
# text does not need vt (DESIGN.md §1): it may include base only.
ALLOWED = {name: set(ORDER[: i + 1]) for i, name in enumerate(ORDER)}
ALLOWED["text"] = {"base", "text"}
ALLOWED["models"] = ALLOWED["models"] - {"text"}
# structured (grammars, token masks) needs only base and text.
ALLOWED["structured"] = {"base", "text", "structured"}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/')


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent / "src"
    files = [p for p in root.rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".cuh"}]
    if not files:
        print("check_layers: no sources found under", root)
        return 2
    bad = 0
    for path in files:
        layer = path.relative_to(root).parts[0]
        allowed = ALLOWED.get(layer)
        if allowed is None:
            print(f"{path}: folder '{layer}' is not a known layer (add it to ORDER)")
            bad += 1
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) in ORDER and m.group(1) not in allowed:
                print(f"{path.relative_to(root.parent)}:{n}: {layer} may not include {m.group(1)}/")
                bad += 1
    print(f"check_layers: {len(files)} files, {bad} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
