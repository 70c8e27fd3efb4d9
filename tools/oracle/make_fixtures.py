#!/usr/bin/env python3
"""Writes the tiny oracle fixtures: seeded random models built with transformers' own
classes, saved with save_pretrained, and their float32 greedy reference.

Run on the GPU machine (python 3.12, torch, transformers 5.17, tokenizers); see
tools/oracle/README.md. For every fixture in fixture_specs.FIXTURES it writes
OUT/<dest>/: config.json, model.safetensors (bf16 values; the float32 oracle runs on
exactly those values), generation_config.json, reference.json, and for the tokenizer
fixture tokenizer.json + tokenizer_config.json. Deterministic: the same command gives
the same bytes.

  make_fixtures.py [--out DIR] [--only NAME[,NAME]] [--tar FILE] [--bf16]
"""
import argparse
import copy
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_specs as specs  # noqa: E402
import oracle_run  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
STEPS = 32
MAX_SEED_TRIES = 40
MAX_FIXTURE_BYTES = 2 * 1024 * 1024


def hf_class(name):
    cls = getattr(transformers, name, None)
    if cls is None:  # not re-exported at the top level: look in the model's own package
        import importlib

        pkg = ("qwen3_5_moe" if name.startswith("Qwen3_5Moe") else
               "qwen3_5" if name.startswith("Qwen3_5") else "qwen3")
        cls = getattr(importlib.import_module(f"transformers.models.{pkg}"), name, None)
    if cls is None:
        sys.exit(f"make_fixtures: transformers {transformers.__version__} has no class {name}")
    return cls


def build_config(spec):
    if spec["arch"] == "Qwen3ForCausalLM":
        return hf_class("Qwen3Config")(**spec["config"])
    if spec["arch"] == "Qwen3_5ForCausalLM":
        return hf_class("Qwen3_5TextConfig")(**spec["config"])
    if spec["arch"] == "Qwen3_5ForConditionalGeneration":
        return hf_class("Qwen3_5Config")(text_config=dict(spec["config"]),
                                         vision_config=dict(spec["vision"]), **spec["top"])
    if spec["arch"] == "Qwen3_5MoeForCausalLM":
        return hf_class("Qwen3_5MoeTextConfig")(**spec["config"])
    if spec["arch"] == "Qwen3_5MoeForConditionalGeneration":
        return hf_class("Qwen3_5MoeConfig")(text_config=dict(spec["config"]),
                                            vision_config=dict(spec["vision"]), **spec["top"])
    sys.exit(f"make_fixtures: unknown architecture {spec['arch']}")


def text_config(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def is_moe(spec):
    return spec["arch"].startswith("Qwen3_5Moe")


def set_experts_implementation(model, impl):
    """Points every config the experts modules read at `impl` ("eager", "grouped_mm")."""
    for c in {id(model.config): model.config, id(text_config(model.config)): text_config(model.config)}.values():
        c._experts_implementation = impl
    for m in model.modules():
        cfg = getattr(m, "config", None)
        if cfg is not None and hasattr(cfg, "_experts_implementation"):
            cfg._experts_implementation = impl


def experts_implementation(model):
    return str(getattr(text_config(model.config), "_experts_implementation", None))


def pick_experts_implementation(model, spec):
    """transformers' default experts path (grouped_mm), unless it cannot run on this
    device; then the eager loop (in float32 the two differ only in summation order)."""
    try:
        oracle_run.prefill_logits(model, [1, 2, 3])
    except Exception as e:  # noqa: BLE001
        print(f"make_fixtures: {spec['name']}: experts implementation "
              f"{experts_implementation(model)} failed ({type(e).__name__}: {e}); using eager")
        set_experts_implementation(model, "eager")
        oracle_run.prefill_logits(model, [1, 2, 3])


class RouterProbe:
    """Records, for every routing decision a model makes, the gap between the k-th and the
    (k+1)-th softmax probability: how far the oracle's routing is from a tie. The gap is
    recomputed from the router's input and weight in the router's own dtype (what the
    router's output holds, logits or probabilities, differs across transformers versions)."""

    def __init__(self, model):
        self.gaps = []  # per router call: the smallest gap over its tokens
        self.ties = 0  # decisions whose k-th and (k+1)-th probabilities are equal
        for m in model.modules():
            if type(m).__name__.endswith("TopKRouter"):
                m.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs, out):
        h = args[0] if args else kwargs["hidden_states"]
        h = h.reshape(-1, module.weight.shape[1])
        logits = torch.nn.functional.linear(h, module.weight)
        p = torch.softmax(logits, dim=-1, dtype=torch.float32).sort(dim=-1, descending=True).values
        k = module.top_k
        if k < p.shape[-1]:
            gap = p[:, k - 1] - p[:, k]
            self.gaps.append(float(gap.min()))
            self.ties += int((gap == 0).sum())

    def min_gap(self):
        assert self.gaps, "the router probe saw no routing"
        return min(self.gaps)


def attach_router_probe(model):
    return RouterProbe(model)


EXPERT_PIECE = re.compile(r"^(.*\.mlp\.experts\.)(\d+)\.(gate|up|down)_proj\.weight$")


def expert_layout(names):
    fused = any(n.endswith(".mlp.experts.gate_up_proj") for n in names)
    pieces = any(EXPERT_PIECE.match(n) for n in names)
    return "fused" if fused and not pieces else "per_expert" if pieces and not fused else \
        "mixed" if fused else "none"


def to_fused(tensors):
    """Per-expert gate/up/down [I, H] / [H, I] -> experts.gate_up_proj [E, 2I, H] (gate rows
    first) and experts.down_proj [E, H, I], as transformers' loader stacks them."""
    out, groups = {}, {}
    for n, t in tensors.items():
        m = EXPERT_PIECE.match(n)
        if m:
            groups.setdefault(m.group(1), {}).setdefault(m.group(3), {})[int(m.group(2))] = t
        else:
            out[n] = t
    for prefix, parts in groups.items():
        stack = lambda part: torch.stack([parts[part][e] for e in range(len(parts[part]))])  # noqa: E731
        out[prefix + "gate_up_proj"] = torch.cat([stack("gate"), stack("up")], dim=1).contiguous()
        out[prefix + "down_proj"] = stack("down").contiguous()
    return out


def to_per_expert(tensors):
    out = {}
    for n, t in tensors.items():
        if n.endswith(".mlp.experts.gate_up_proj"):
            prefix, inter = n[:-len("gate_up_proj")], t.shape[1] // 2
            for e in range(t.shape[0]):
                out[f"{prefix}{e}.gate_proj.weight"] = t[e, :inter].contiguous()
                out[f"{prefix}{e}.up_proj.weight"] = t[e, inter:].contiguous()
        elif n.endswith(".mlp.experts.down_proj"):
            prefix = n[:-len("down_proj")]
            for e in range(t.shape[0]):
                out[f"{prefix}{e}.down_proj.weight"] = t[e].contiguous()
        else:
            out[n] = t
    return out


def write_fused(fdir):
    """Rewrites model.safetensors with the fused experts if save_pretrained wrote them per
    expert; returns the layout save_pretrained chose."""
    from safetensors.torch import load_file, save_file

    path = os.path.join(fdir, "model.safetensors")
    tensors = load_file(path)
    saved = expert_layout(tensors)
    assert saved in ("fused", "per_expert"), f"{fdir}: expert tensors are {saved}"
    if saved == "per_expert":
        save_file(to_fused(tensors), path, metadata={"format": "pt"})
    return saved


def per_expert_reload(model, spec, fdir, prompt):
    """Whether transformers loads the same model from the per-expert layout (not asserted:
    recorded; the C++ loader is tested on both layouts either way)."""
    from safetensors.torch import load_file, save_file

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(os.path.join(fdir, "config.json"), os.path.join(tmp, "config.json"))
        save_file(to_per_expert(load_file(os.path.join(fdir, "model.safetensors"))),
                  os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        try:
            loaded = hf_class(spec["arch"]).from_pretrained(tmp, dtype=torch.float32).eval()
            set_experts_implementation(loaded, experts_implementation(model))
            mine, theirs = dict(model.named_parameters()), dict(loaded.named_parameters())
            same = mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
            diff = float((oracle_run.prefill_logits(model, prompt) -
                          oracle_run.prefill_logits(loaded, prompt)).abs().max())
            return dict(loads=True, parameters_equal=bool(same), max_abs_logit_diff=diff)
        except Exception as e:  # noqa: BLE001
            return dict(loads=False, error=f"{type(e).__name__}: {e}"[:300])


class EagerExperts:
    """A model class whose from_pretrained hands back the model on the eager experts path
    (for the bf16 reference when grouped_mm cannot run)."""

    def __init__(self, cls):
        self.cls = cls

    def from_pretrained(self, *args, **kwargs):
        model = self.cls.from_pretrained(*args, **kwargs)
        set_experts_implementation(model, "eager")
        return model


def init_weights(model, family, seed):
    """Random, non-trivial weights at scales where greedy decisions are clear: unit-gain
    linears, unit embeddings, norm weights away from their init values, GDN decay
    parameters spread so that the state both persists and forgets. Every value is then
    rounded to bf16 so the saved bf16 file holds exactly what the float32 oracle ran."""
    gen = torch.Generator().manual_seed(seed)
    tcfg = text_config(model.config)
    hidden = tcfg.hidden_size

    def normal(p, std):
        p.copy_(torch.randn(p.shape, generator=gen) * std)

    def uniform(p, lo, hi):
        p.copy_(torch.rand(p.shape, generator=gen) * (hi - lo) + lo)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".visual." in f".{name}":
                pass  # vision tower: transformers' own init (seeded), only rounded below
            elif name.endswith("embed_tokens.weight"):
                normal(p, 1.0)
            elif name == "lm_head.weight":
                normal(p, 3.0 / hidden ** 0.5)
            elif name.endswith("linear_attn.A_log"):
                p.copy_(torch.log(torch.rand(p.shape, generator=gen) * 1.9 + 0.1))  # A in [0.1, 2]
            elif name.endswith("linear_attn.dt_bias"):
                uniform(p, -1.0, 1.0)
            elif name.endswith("linear_attn.norm.weight"):
                uniform(p, 0.5, 1.5)  # gated RMSNorm: plain weight
            elif name.endswith("conv1d.weight"):
                normal(p, 0.5)
            elif name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                normal(p, 1.0 / p.shape[2] ** 0.5)  # [E, out, in]: unit gain per expert
            elif name.endswith("norm.weight"):
                # Qwen3.5 norms are (1 + w) with w initialised to 0; Qwen3 norms are plain w.
                if family == "qwen3_5":
                    uniform(p, -0.5, 0.5)
                else:
                    uniform(p, 0.5, 1.5)
            elif p.dim() == 2:
                normal(p, 1.0 / p.shape[1] ** 0.5)
            else:
                raise SystemExit(f"make_fixtures: no init rule for parameter {name} {tuple(p.shape)}")
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
        pad_rows = tcfg.vocab_size - getattr(model, "_vt_tokenizer_vocab", tcfg.vocab_size)
        if pad_rows > 0:
            # Padding ids beyond the tokenizer: zero rows, as in a trained model they are never
            # predicted (their logit is exactly 0, far below the top of the others).
            model.get_input_embeddings().weight[-pad_rows:].zero_()
            if not tcfg.tie_word_embeddings:
                model.lm_head.weight[-pad_rows:].zero_()


def build_model(spec, seed):
    config = build_config(spec)
    torch.manual_seed(seed)  # transformers' own init of anything not overwritten below
    model = hf_class(spec["arch"])(config).to(torch.float32).eval()
    if spec.get("tokenizer"):
        model._vt_tokenizer_vocab = specs.TOKENIZER_VOCAB
    init_weights(model, spec["family"], seed)
    if is_moe(spec):
        pick_experts_implementation(model, spec)
    tcfg = text_config(model.config)
    if tcfg.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr(), \
            f"{spec['name']}: tie_word_embeddings is set but lm_head is not the embedding"
    if spec["family"] == "qwen3_5":
        expected = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention"
                    for i in range(tcfg.num_hidden_layers)]
        assert list(tcfg.layer_types) == expected, f"{spec['name']}: layer_types {tcfg.layer_types}"
    return model


def random_prompts(spec, vocab):
    # Ids below 500 so no prompt holds the VL fixture's vision token ids (506..509).
    gen = torch.Generator().manual_seed(spec["seed"] + 7)
    high = min(vocab, 500)
    return [dict(name=f"random_{n}", ids=torch.randint(0, high, (n,), generator=gen).tolist())
            for n in specs.PROMPT_LENGTHS]


def text_prompts(tok_dir):
    """The tokenizer fixture's prompts: chat-template renders and plain texts, tokenized
    with the cut tokenizer by the HF tokenizers library."""
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
    render, renderer = oracle_run.chat_renderer(tok_dir)
    encode = lambda s: tok.encode(s, add_special_tokens=False).ids  # noqa: E731
    prompts = []
    for name, kind, payload, kwargs in specs.TEXT_PROMPTS:
        p = dict(name=name)
        if kind == "chat":
            text = render(payload, kwargs)
            p.update(messages=payload, template_kwargs=kwargs, add_generation_prompt=True)
        elif kind == "long":
            # Whole words, as many as fit in 300 tokens, so the text re-encodes to the ids.
            words = payload.split(" ")
            text = ""
            for i in range(1, len(words) + 1):
                cand = " ".join(words[:i])
                if len(encode(cand)) > 300:
                    break
                text = cand
        else:
            text = payload
        p["text"] = text
        p["ids"] = encode(text)
        assert all(i < specs.TOKENIZER_VOCAB for i in p["ids"]), f"{name}: id outside the tokenizer"
        assert tok.decode(p["ids"], skip_special_tokens=False) == text, f"{name}: decode round trip"
        prompts.append(p)
    lengths = [len(p["ids"]) for p in prompts]
    assert lengths[0] == 1 and max(lengths) >= 250, f"tokenizer prompt lengths {lengths}"
    return prompts, tok, dict(renderer=renderer, mismatches=getattr(render, "mismatches", []))


def safetensors_layout(path, spec):
    """What save_pretrained wrote: tensor count, dtypes, and whether the names follow the
    real checkpoints (qwen3_5.md §3). Recorded, and warned about, rather than asserted."""
    import struct

    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    names = sorted(k for k in header if k != "__metadata__")
    dtypes = sorted({header[k]["dtype"] for k in names})
    prefix = "model.language_model." if spec["arch"].endswith("ConditionalGeneration") else "model."
    expect = [prefix + "embed_tokens.weight", prefix + "norm.weight"]
    if not text_config(build_config(spec)).tie_word_embeddings:
        expect.append("lm_head.weight")
    if spec.get("vision"):
        expect.append("model.visual.patch_embed.proj.weight")
    if is_moe(spec):
        expect += [f"{prefix}layers.0.mlp.experts.gate_up_proj", f"{prefix}layers.0.mlp.experts.down_proj",
                   f"{prefix}layers.0.mlp.gate.weight", f"{prefix}layers.0.mlp.shared_expert_gate.weight"]
    missing = [e for e in expect if e not in header]
    if missing or dtypes != ["BF16"]:
        print(f"make_fixtures: WARNING: {spec['name']}: model.safetensors lacks {missing}, "
              f"dtypes {dtypes}")
    layout = dict(count=len(names), dtypes=dtypes, expected_names_missing=missing,
                  first_names=names[:6])
    if is_moe(spec):
        layout["experts"] = expert_layout(names)
        assert layout["experts"] == "fused" and not missing, f"{spec['name']}: {layout}"
    return layout


def patch_config_json(path, spec, weights_dtype):
    with open(path) as f:
        cfg = json.load(f)
    if spec["family"] == "qwen3_5":
        target = cfg.get("text_config", cfg)
        for k, v in specs.QWEN3_5_EXTRA_TEXT_KEYS.items():
            target.setdefault(k, v)
    for c in [cfg] + [v for k, v in cfg.items() if k in ("text_config", "vision_config")]:
        c["dtype"] = weights_dtype
        c.pop("torch_dtype", None)
        # Optional fields the spec leaves out of the written file (the parser's defaults
        # must then be transformers'); rope_parameters is searched too.
        for key in spec.get("drop_keys", []):
            c.pop(key, None)
            if isinstance(c.get("rope_parameters"), dict):
                c["rope_parameters"].pop(key, None)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def save_fixture(model, spec, fdir):
    os.makedirs(fdir, exist_ok=True)
    for fn in os.listdir(fdir):
        if fn in ("config.json", "model.safetensors", "generation_config.json", "reference.json",
                  "reference_bf16.json"):
            os.remove(os.path.join(fdir, fn))
    if spec.get("generation"):
        model.generation_config = transformers.GenerationConfig(**spec["generation"])
    to_save = copy.deepcopy(model).to(torch.bfloat16)
    to_save.save_pretrained(fdir)
    patch_config_json(os.path.join(fdir, "config.json"), spec, "bfloat16")
    if not spec.get("generation"):
        gpath = os.path.join(fdir, "generation_config.json")
        if os.path.exists(gpath):
            os.remove(gpath)  # random fixtures: no sampling defaults to speak of


def check_reload(model, spec, fdir, prompts):
    """The saved files reproduce the in-memory model: every parameter equal, same logits."""
    loaded = hf_class(spec["arch"]).from_pretrained(fdir, dtype=torch.float32).eval()
    if is_moe(spec):
        set_experts_implementation(loaded, experts_implementation(model))
    mine = dict(model.named_parameters())
    theirs = dict(loaded.named_parameters())
    assert mine.keys() == theirs.keys(), f"{spec['name']}: reloaded parameter names differ: " \
        f"{sorted(set(mine) ^ set(theirs))}"
    for k in mine:
        assert torch.equal(mine[k], theirs[k]), f"{spec['name']}: reloaded {k} differs"
    worst = 0.0
    for p in (prompts[0], prompts[-1]):
        a = oracle_run.prefill_logits(model, p["ids"])
        b = oracle_run.prefill_logits(loaded, p["ids"])
        worst = max(worst, float((a - b).abs().max()))
    return worst


def make_one(spec, out_root, args):
    fdir = os.path.join(out_root, spec["dest"])
    tcfg_dict = spec["config"]
    renderer = None
    tok = None
    if spec.get("tokenizer"):
        src = os.path.join(REPO, "models", "tiny-qwen3.5")
        os.makedirs(fdir, exist_ok=True)
        for fn in ("tokenizer.json", "tokenizer_config.json"):
            s, d = os.path.join(src, fn), os.path.join(fdir, fn)
            if os.path.abspath(s) != os.path.abspath(d):
                shutil.copyfile(s, d)
        prompts, tok, renderer = text_prompts(fdir)
    else:
        prompts = random_prompts(spec, tcfg_dict["vocab_size"])

    tries = []
    for attempt in range(MAX_SEED_TRIES):
        seed = spec["seed"] + attempt
        model = build_model(spec, seed)
        router_probe = attach_router_probe(model) if is_moe(spec) else None
        results = [oracle_run.greedy(model, p["ids"], STEPS) for p in prompts]
        margin = min(min(r["margins"]) for r in results)
        tries.append((seed, margin))
        if margin >= args.min_margin:
            break
    else:
        sys.exit(f"make_fixtures: {spec['name']}: no seed in {MAX_SEED_TRIES} tries reached a top-2 "
                 f"margin of {args.min_margin} (best {max(m for _, m in tries)})")

    checks = oracle_run.cross_checks(model, prompts, results)
    save_fixture(model, spec, fdir)
    saved_layout = write_fused(fdir) if is_moe(spec) else None
    reload_diff = check_reload(model, spec, fdir, prompts)
    assert reload_diff <= 1e-5, f"{spec['name']}: reloaded model logits differ by {reload_diff}"

    ref = oracle_run.reference_json(spec, model, prompts, results, seed, tries, checks, STEPS,
                                    dtype="float32", device="cpu")
    ref["reload_max_abs_logit_diff"] = reload_diff
    ref["safetensors"] = safetensors_layout(os.path.join(fdir, "model.safetensors"), spec)
    if is_moe(spec):
        ref["moe"] = dict(
            experts_implementation=experts_implementation(model),
            save_pretrained_layout=saved_layout,
            stored_layout="fused",
            router_min_kth_gap=router_probe.min_gap(),
            router_min_kth_gap_means="smallest p_k - p_(k+1) (softmax probabilities) over every "
                                     "routing decision of the greedy runs",
            per_expert_reload=per_expert_reload(model, spec, fdir, prompts[-1]["ids"]),
        )
    if tok is not None:
        ref["template_renderer"] = renderer["renderer"]
        ref["template_mismatches"] = renderer["mismatches"]
        for p, r in zip(ref["prompts"], results):
            p["continuation_text"] = tok.decode(r["tokens"], skip_special_tokens=False)
    oracle_run.write_json(os.path.join(fdir, "reference.json"), ref)

    if args.bf16:
        cls = hf_class(spec["arch"])
        try:
            bref = oracle_run.bf16_reference(cls, spec, fdir, prompts, results, STEPS)
        except (AssertionError, SystemExit):
            raise
        except Exception as e:  # noqa: BLE001  (grouped_mm refused this shape: eager, said so)
            if not is_moe(spec):
                raise
            print(f"make_fixtures: {spec['name']}: bf16 reference failed ({type(e).__name__}: {e}); "
                  "retrying with eager experts")
            bref = oracle_run.bf16_reference(EagerExperts(cls), spec, fdir, prompts, results, STEPS)
            bref["experts_implementation"] = "eager (grouped_mm failed)"
        oracle_run.write_json(os.path.join(fdir, "reference_bf16.json"), bref)

    size = sum(os.path.getsize(os.path.join(fdir, f)) for f in os.listdir(fdir))
    assert size < MAX_FIXTURE_BYTES, f"{spec['name']}: {size} bytes, over the 2 MB budget"
    return dict(name=spec["name"], dest=spec["dest"], bytes=size, seed=seed, tries=len(tries),
                min_margin=ref["min_margin"], checks=checks, moe=ref.get("moe"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=REPO, help="root under which each fixture's dest is written "
                    "(default: the repository)")
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    ap.add_argument("--tar", default="", help="also pack every written fixture into this tar file, "
                    "paths relative to the repository root")
    ap.add_argument("--bf16", action="store_true", help="also write reference_bf16.json: the saved "
                    "model run in bf16 on CUDA (for the CUDA backend's gate)")
    ap.add_argument("--min-margin", type=float, default=2e-3,
                    help="smallest accepted top-2 logit margin of the float32 greedy run")
    args = ap.parse_args()

    oracle_run.set_deterministic()
    names = [n for n in args.only.split(",") if n]
    known = [s["name"] for s in specs.FIXTURES]
    for n in names:
        if n not in known:
            sys.exit(f"make_fixtures: unknown fixture {n!r} (known: {', '.join(known)})")
    chosen = [s for s in specs.FIXTURES if not names or s["name"] in names]

    print(f"make_fixtures: torch {torch.__version__}, transformers {transformers.__version__}")
    summary = [make_one(s, os.path.abspath(args.out), args) for s in chosen]
    for s in summary:
        c = s["checks"]
        print(f"  {s['name']:<20} {s['dest']:<36} {s['bytes'] / 1e6:.2f} MB  seed {s['seed']} "
              f"(try {s['tries']})  min top-2 margin {s['min_margin']:.4g}  "
              f"cache-vs-full rel {c['cache_vs_full_max_rel']:.2e}  generate {c['generate']}")
        if s["moe"]:
            m = s["moe"]
            print(f"    moe: experts {m['experts_implementation']}, saved {m['save_pretrained_layout']}, "
                  f"stored fused, router min k-th gap {m['router_min_kth_gap']:.3g}, "
                  f"per-expert reload {m['per_expert_reload']}")
    if args.tar:
        with tarfile.open(args.tar, "w") as tar:
            for s in summary:
                fdir = os.path.join(os.path.abspath(args.out), s["dest"])
                for fn in sorted(os.listdir(fdir)):
                    info = tar.gettarinfo(os.path.join(fdir, fn), arcname=f"{s['dest']}/{fn}")
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mtime = 0
                    with open(os.path.join(fdir, fn), "rb") as f:
                        tar.addfile(info, f)
        print(f"make_fixtures: packed {len(summary)} fixtures into {args.tar}")


if __name__ == "__main__":
    main()
