#!/usr/bin/env python3
"""Prints transformers' exact parameter count for every bench/models/*/config.json.

Run on the GPU machine (transformers 5.17, torch 2.11); nothing is allocated, the
models are built on the `meta` device:

    python3 tools/oracle/param_count.py [bench/models]

Output, one line per model, sorted by name:

    <name> <class> parameters <N>

N is sum(p.numel() for p in model.parameters()) of the class named by
`architectures[0]` (shared/tied parameters count once, as .parameters() yields each
Parameter once). `vtllm inspect DIR` must print the same `parameters: N`; the C++
test tests/models/params_test.cpp (dense) and tests/io/reference_params_test.cpp (MoE) record these numbers.
"""
import json
import pathlib
import sys

import torch
import transformers


def count(config_dir: pathlib.Path) -> tuple[str, int]:
    with open(config_dir / "config.json") as f:
        arch = json.load(f)["architectures"][0]
    config = transformers.AutoConfig.from_pretrained(config_dir)
    cls = getattr(transformers, arch)
    with torch.device("meta"):
        model = cls(config)
    return arch, sum(p.numel() for p in model.parameters())


def main() -> None:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench/models")
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}")
    for config_dir in sorted(p.parent for p in root.glob("*/config.json")):
        arch, n = count(config_dir)
        print(f"{config_dir.name} {arch} parameters {n}")


if __name__ == "__main__":
    main()
