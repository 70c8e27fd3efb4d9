#!/usr/bin/env python3
"""Writes a random-weight bf16 HF checkpoint of a benchmark shape (GPU machine).

    make_dummy_hf_model.py --config bench/models/qwen3_5-default-text/config.json \
        --tokenizer-dir DIR --vocab-size 151936 --out /tmp/vtllm-bench/hf

The config's fields over transformers' defaults for its model_type (the default
Qwen3.5 text shape has no field set), with vocab_size overridden so a Qwen3 tokenizer
(DIR: tokenizer.json + tokenizer_config.json) fits; weights are the class's own random
initialisation under a fixed seed, saved with save_pretrained (safetensors, bf16).
vtllm, llama.cpp (after its converter) and transformers all load this one directory.

A config with a vision_config (Qwen3_5ForConditionalGeneration and its MoE twin, e.g.
bench/models/qwen3_5-default-vl) is built through AutoModelForImageTextToText, the
vocabulary overrides go to its text_config, its vision ids become the tokenizer's own
(<|vision_start|>, <|vision_end|>, <|image_pad|>, <|video_pad|>), and the directory gets
the processor files a real Qwen3.5 checkpoint has, the ones the tiny VL fixtures carry
(tools/oracle/vl_specs.py): preprocessor_config.json, video_preprocessor_config.json and
Qwen3.5's chat_template.jinja (which outranks the Qwen3 template in tokenizer_config.json).

One edit to the random model, so that greedy decoding emits valid UTF-8: the lm_head
rows of every id whose token is not valid UTF-8 on its own (byte-level fragments of
multi-byte characters: 1448 of Qwen3's 151643) and of the ids past the tokenizer's
vocabulary are zeroed. Their logits are then exactly 0 while the largest of the other
~150k random logits is positive, so greedy never picks them. Without it llama-server
(2026-06 builds) answers a completion whose text is broken UTF-8 with HTTP 500 at the
end of the stream. Speed is unaffected (the same shapes and bytes for every peer).
"""
import argparse
import json
import pathlib
import shutil
import sys
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "oracle"))
import vl_specs  # noqa: E402  (torch-free: the VL fixtures' processor settings and template)


def gpt2_byte_decoder():
    """The byte-level BPE alphabet: printable character -> byte (GPT-2's bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def non_utf8_ids(tokenizer_json, vocab_size):
    """Ids whose token text is not valid UTF-8 by itself, plus ids the tokenizer lacks."""
    tok = json.loads(pathlib.Path(tokenizer_json).read_text())
    dec = gpt2_byte_decoder()
    known, bad = set(), []
    for text, i in tok["model"]["vocab"].items():
        known.add(i)
        try:
            bytes(dec[ch] for ch in text).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            bad.append(i)
    known.update(t["id"] for t in tok.get("added_tokens", []))
    bad += [i for i in range(vocab_size) if i not in known]
    return sorted(i for i in bad if i < vocab_size)


def write_processor_files(out, config):
    """The processor settings and chat template of a real Qwen3.5 checkpoint; and a
    config.json whose text_config names every shape (llama.cpp's converters read
    text_config.hidden_size and the layer counts from the file, not from transformers)."""
    for name, settings in (("preprocessor_config.json", vl_specs.PREPROCESSOR),
                           ("video_preprocessor_config.json", vl_specs.VIDEO_PREPROCESSOR)):
        (out / name).write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n")
    shutil.copy(pathlib.Path(vl_specs.REPO) / vl_specs.TEMPLATE_FILE, out / "chat_template.jinja")
    written = json.loads((out / "config.json").read_text())
    if "hidden_size" not in written.get("text_config", {}):
        config.to_json_file(out / "config.json", use_diff=False)


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
    vision = "vision_config" in fields
    config = AutoConfig.for_model(model_type, **fields)
    # The language model's config: the composite's text_config, or the config itself.
    text = config.get_text_config() if vision else config
    text.vocab_size = args.vocab_size
    tok_cfg = json.loads((pathlib.Path(args.tokenizer_dir) / "tokenizer_config.json").read_text())
    specials = {v["content"]: int(k) for k, v in tok_cfg.get("added_tokens_decoder", {}).items()}
    # Qwen3's ids: <|endoftext|> pads and begins, <|im_end|> ends; all inside the vocab.
    text.bos_token_id = specials.get("<|endoftext|>", text.bos_token_id)
    text.pad_token_id = specials.get("<|endoftext|>", text.pad_token_id)
    text.eos_token_id = specials.get("<|im_end|>", text.eos_token_id)
    assert max(specials.values(), default=0) < args.vocab_size, "tokenizer ids exceed vocab_size"
    if vision:
        for key, value in vl_specs.vision_ids(args.tokenizer_dir).items():
            setattr(config, key, value)

    torch.manual_seed(args.seed)
    t0 = time.time()
    auto = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    with torch.device(args.device):
        model = auto.from_config(config, dtype=torch.bfloat16)
    bad = non_utf8_ids(pathlib.Path(args.tokenizer_dir) / "tokenizer.json", args.vocab_size)
    with torch.no_grad():
        model.get_output_embeddings().weight[torch.tensor(bad, device=args.device)] = 0
    print(f"make_dummy_hf_model: zeroed {len(bad)} lm_head rows (tokens not valid UTF-8 alone)")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(pathlib.Path(args.tokenizer_dir) / name, out / name)
    if vision:
        write_processor_files(out, model.config)
    n = sum(t.numel() for t in model.parameters())
    print(f"make_dummy_hf_model: {type(model).__name__} {n} parameters, bf16, vocab {args.vocab_size} "
          f"-> {out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
