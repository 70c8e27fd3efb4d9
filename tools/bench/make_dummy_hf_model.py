#!/usr/bin/env python3
"""Writes a random-weight bf16 HF checkpoint of a benchmark shape (GPU machine).

    make_dummy_hf_model.py --config bench/models/qwen3_5-default-text/config.json \
        --tokenizer-dir DIR --vocab-size 151936 --out /tmp/vtllm-bench/hf

The config's fields over transformers' defaults for its model_type (the default
Qwen3.5 text shape has no field set), with vocab_size overridden so a Qwen3 tokenizer
(DIR: tokenizer.json + tokenizer_config.json) fits; weights are the class's own random
initialisation under a fixed seed, saved with save_pretrained (safetensors, bf16).
vtllm, llama.cpp (after its converter) and transformers all load this one directory.
"""
import argparse
import json
import pathlib
import shutil
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True)
    p.add_argument("--tokenizer-dir", required=True)
    p.add_argument("--vocab-size", type=int, default=151936)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", help="where to initialise (cuda is much faster)")
    args = p.parse_args()

    fields = json.loads(pathlib.Path(args.config).read_text())
    model_type = fields.pop("model_type")
    fields.pop("dtype", None)
    fields.pop("torch_dtype", None)
    config = AutoConfig.for_model(model_type, **fields)
    config.vocab_size = args.vocab_size
    tok_cfg = json.loads((pathlib.Path(args.tokenizer_dir) / "tokenizer_config.json").read_text())
    specials = {v["content"]: int(k) for k, v in tok_cfg.get("added_tokens_decoder", {}).items()}
    # Qwen3's ids: <|endoftext|> pads and begins, <|im_end|> ends; all inside the vocab.
    config.bos_token_id = specials.get("<|endoftext|>", config.bos_token_id)
    config.pad_token_id = specials.get("<|endoftext|>", config.pad_token_id)
    config.eos_token_id = specials.get("<|im_end|>", config.eos_token_id)
    assert max(specials.values(), default=0) < args.vocab_size, "tokenizer ids exceed vocab_size"

    torch.manual_seed(args.seed)
    t0 = time.time()
    with torch.device(args.device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(pathlib.Path(args.tokenizer_dir) / name, out / name)
    n = sum(t.numel() for t in model.parameters())
    print(f"make_dummy_hf_model: {type(model).__name__} {n} parameters, bf16, vocab {args.vocab_size} "
          f"-> {out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
