#!/usr/bin/env python3
"""Writes the tiny multimodal oracle fixtures: a seeded random Qwen3.5 conditional-
generation model whose vision ids are the cut tokenizer's own vision tokens, images and
short synthetic videos, the real Qwen3VLProcessor and the real Qwen3.5 chat template run
on chat conversations, and the float32 greedy reference. One architecture per run:

  --arch dense  tests/fixtures/qwen3_5-tiny-vl         Qwen3_5ForConditionalGeneration
  --arch moe    tests/fixtures/qwen3_5_moe-tiny-vl-mm  Qwen3_5MoeForConditionalGeneration
                (--moe is the same)

Both share every case, media item, check and writer (the definitions are in
vl_specs.py); the MoE fixture adds what make_fixtures.py records of a MoE model (the
experts path, the layout save_pretrained chose, the smallest routing gap, the
per-expert reload) and stores the fused experts.

Run on the GPU machine (python 3.12, torch, torchvision, transformers 5.17, pillow,
numpy); see tools/oracle/README.md. Writes OUT/<dest>/:
  config.json, model.safetensors        the model (bf16 values; the f32 oracle runs on them)
  tokenizer.json, tokenizer_config.json the cut tokenizer (models/tiny-qwen3.5)
  chat_template.jinja                   Qwen3.5's template (the committed copy, checked)
  preprocessor_config.json, video_preprocessor_config.json   Qwen3.5's processor settings
  media/*.png|jpg                       the images, generated here deterministically
  media/*.npy                           the videos: uint8 frame stacks [N, H, W, 3]
  vl_reference.json                     per conversation: rendered text, expanded ids,
                                        mm_token_type_ids, 3-D positions and delta, grids,
                                        pixel digests, feature norms, 32 greedy tokens with
                                        margins, and the inverted-pixels run
  vl_tensors.safetensors                every case's vision features (f32) and the
                                        pixel_values of the smallest items (uint8 codes
                                        u = 127.5 x + 127.5, exact, or f32)
  vl_reference_bf16.json                with --bf16: the saved model in bf16 on CUDA

  vl_fixtures.py [--arch dense|moe | --moe] [--out DIR] [--tar FILE] [--bf16] [--min-margin M]
"""
import argparse
import hashlib
import inspect
import json
import os
import shutil
import struct
import sys
import tarfile
import time

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_specs as specs  # noqa: E402
import make_fixtures  # noqa: E402
import oracle_run  # noqa: E402
import vl_specs  # noqa: E402
from vl_specs import (CASES, IMAGES, PREPROCESSOR, STEPS, STORED_PIXELS,  # noqa: E402
                      VIDEO_PREPROCESSOR, VIDEOS, VISION, expected_image_grid, expected_video,
                      items_of, mm_token_types, rope_index, strip_items)

REPO = make_fixtures.REPO
MAX_SEED_TRIES = 12
# Seeds are tried until one passes every criterion or this much time has gone by with at
# least one usable seed (the run must stay short on the GPU machine's CPU).
SEED_SEARCH_SECONDS = 60
# A MoE seed is preferred when no routing decision of the cases came closer than this to a
# tie between the k-th and (k+1)-th expert (softmax probabilities): the CPU gate is strict
# and a routing flip changes the hidden state by far more than summation order does.
MIN_ROUTER_GAP = 1e-6


def fail(msg):
    sys.exit(f"vl_fixtures: {msg}")


# ---- media ---------------------------------------------------------------------------

def smooth_image(h, w, channels, seed):
    """A smooth deterministic picture (gradients, rings, a bright disc): small as PNG,
    and far from its own inversion."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    out = np.empty((h, w, channels), dtype=np.float64)
    cy, cx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
    r = np.hypot(y - cy, x - cx)
    for c in range(channels):
        a, b, f = rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0.05, 0.2)
        out[..., c] = 128 + 60 * (a * y / h + b * x / w) + 50 * np.sin(r * f + c)
    disc = r < 0.2 * min(h, w)
    out[disc, :3] = 235
    if channels == 4:
        out[..., 3] = 80 + 175 * (x / max(w - 1, 1))  # alpha varies: dropping it must matter
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def write_media(fdir):
    from PIL import Image

    mdir = os.path.join(fdir, "media")
    os.makedirs(mdir, exist_ok=True)
    for i, (name, m) in enumerate(IMAGES.items()):
        path = os.path.join(mdir, m["file"])
        if m["mode"] == "RGBA":
            Image.fromarray(smooth_image(m["h"], m["w"], 4, 10 + i), "RGBA").save(path)
        elif m["mode"] == "JPEG":
            Image.fromarray(smooth_image(m["h"], m["w"], 3, 10 + i), "RGB").save(path, quality=85)
        else:
            Image.fromarray(smooth_image(m["h"], m["w"], 3, 10 + i), "RGB").save(path)
    for i, (name, v) in enumerate(VIDEOS.items()):
        frames = np.stack([np.roll(smooth_image(v["h"], v["w"], 3, 50 + i), 5 * k, axis=1)
                           for k in range(v["n"])])  # a pan: every frame differs
        np.save(os.path.join(mdir, v["file"]), frames)
    return vl_specs.media_meta()


def load_image(fdir, name, invert=False):
    from PIL import Image

    im = Image.open(os.path.join(fdir, "media", IMAGES[name]["file"]))
    im.load()
    if invert:
        a = np.asarray(im).copy()
        a[..., :3] = 255 - a[..., :3]
        im = Image.fromarray(a, im.mode)
    return im


def load_video(fdir, name, invert=False):
    a = np.load(os.path.join(fdir, "media", VIDEOS[name]["file"]))
    return 255 - a if invert else a


def video_metadata(name, as_dict=False):
    """The decoder's metadata of a frame stack: every frame decoded, at the source fps."""
    v = VIDEOS[name]
    md = dict(total_num_frames=v["n"], fps=v["fps"], frames_indices=list(range(v["n"])),
              duration=v["n"] / v["fps"], width=v["w"], height=v["h"])
    if as_dict:
        return md
    try:
        from transformers.video_utils import VideoMetadata

        fields = inspect.signature(VideoMetadata).parameters
        return VideoMetadata(**{k: x for k, x in md.items() if k in fields})
    except Exception:  # noqa: BLE001
        return md


# ---- model ---------------------------------------------------------------------------

def init_vision(model, seed):
    """Vision weights at unit gain so that the features, and so the tokens, depend on the
    pixels: linears N(0, 1/fan_in), biases N(0, 0.1), LayerNorm gains in [0.5, 1.5]."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.model.visual.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            elif "norm" in name:
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
            elif name == "pos_embed.weight":
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) / p[0].numel() ** 0.5)
            else:
                fail(f"no init rule for vision parameter {name} {tuple(p.shape)}")
            p.copy_(p.to(torch.bfloat16).to(torch.float32))


def build_model(spec, seed):
    model = make_fixtures.build_model(spec, seed)
    init_vision(model, seed + 1)
    return model


def settings(cfg):
    return {k: v for k, v in cfg.items() if not k.endswith(("_class", "_type"))}


def first_working(makers, what):
    errors = []
    for name, make in makers:
        try:
            return make(), name
        except Exception as e:  # noqa: BLE001
            errors.append(f"{name}: {type(e).__name__}: {e}")
    fail(f"no way to build the {what}: " + "; ".join(errors))


def build_processor(fdir):
    try:
        proc = transformers.AutoProcessor.from_pretrained(fdir)
        how = "AutoProcessor"
    except Exception as e:  # noqa: BLE001
        print(f"vl_fixtures: AutoProcessor failed ({type(e).__name__}: {e}); building it by hand")
        with open(os.path.join(fdir, "chat_template.jinja"), encoding="utf-8") as f:
            template = f.read()
        image, iname = first_working(
            [("AutoImageProcessor", lambda: transformers.AutoImageProcessor.from_pretrained(fdir))] +
            [(n, lambda n=n: getattr(transformers, n)(**settings(PREPROCESSOR)))
             for n in ("Qwen2VLImageProcessorFast", "Qwen2VLImageProcessor")],
            "image processor")
        video, vname = first_working(
            [("AutoVideoProcessor", lambda: transformers.AutoVideoProcessor.from_pretrained(fdir)),
             ("Qwen3VLVideoProcessor",
              lambda: transformers.Qwen3VLVideoProcessor(**settings(VIDEO_PREPROCESSOR)))],
            "video processor")
        proc = transformers.Qwen3VLProcessor(
            image_processor=image, video_processor=video,
            tokenizer=transformers.AutoTokenizer.from_pretrained(fdir), chat_template=template)
        how = f"Qwen3VLProcessor({iname}, {vname})"
    desc = dict(how=how, processor=type(proc).__name__,
                image_processor=type(proc.image_processor).__name__,
                video_processor=type(getattr(proc, "video_processor", None)).__name__,
                tokenizer=type(proc.tokenizer).__name__)
    return proc, desc


# ---- running a case --------------------------------------------------------------------

def render(proc, template, messages):
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)

    def raise_exception(msg):
        raise ValueError(msg)

    env.globals["raise_exception"] = raise_exception
    plain = env.from_string(template).render(messages=messages, add_generation_prompt=True)
    if getattr(proc, "chat_template", None) != template:
        return plain, dict(renderer="jinja2 (the processor holds another template)", mismatch=None)
    try:
        text = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception as e:  # noqa: BLE001
        print(f"vl_fixtures: WARNING: apply_chat_template failed ({type(e).__name__}: {e}); "
              "using jinja2")
        return plain, dict(renderer="jinja2", mismatch=None)
    mismatch = None if text == plain else dict(hf=text, jinja2=plain)
    if mismatch:
        print(f"vl_fixtures: WARNING: apply_chat_template {text!r} != jinja2 {plain!r}")
    return text, dict(renderer="processor.apply_chat_template, checked against jinja2",
                      mismatch=mismatch)


def process(proc, fdir, text, messages, invert=False):
    images = [load_image(fdir, n, invert) for n in items_of(messages, "image")]
    videos = [load_video(fdir, n, invert) for n in items_of(messages, "video")]
    kw = dict(text=[text], return_tensors="pt")
    if images:
        kw["images"] = images
    if not videos:
        return proc(**kw)
    kw.update(videos=videos, do_sample_frames=True)
    names = items_of(messages, "video")
    try:
        return proc(**kw, video_metadata=[video_metadata(n) for n in names])
    except (TypeError, ValueError, AttributeError) as e:
        print(f"vl_fixtures: WARNING: VideoMetadata refused ({type(e).__name__}: {e}); dicts")
        return proc(**kw, video_metadata=[video_metadata(n, as_dict=True) for n in names])


def model_inputs(model, inputs, device):
    """The processor outputs the model's prefill takes (mm_token_type_ids where its
    forward or get_rope_index names it; computed per §15.2 if the processor gave none)."""
    keys = ["pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw"]
    out = {k: inputs[k].to(device) for k in keys if inputs.get(k) is not None}
    params = set(inspect.signature(model.model.forward).parameters)
    params |= set(inspect.signature(model.model.get_rope_index).parameters)
    if "mm_token_type_ids" in params:
        types = inputs.get("mm_token_type_ids")
        if types is None:
            cfg = model.config
            types = torch.tensor([mm_token_types(inputs["input_ids"][0].tolist(),
                                                 cfg.image_token_id, cfg.video_token_id)])
        out["mm_token_type_ids"] = types.to(device)
    return out


@torch.no_grad()
def greedy_vl(model, input_ids, extra, steps):
    """oracle_run.greedy with the vision inputs on the prefill: the model computes the
    3-D positions (get_rope_index) and keeps delta for the decode steps."""
    dev = next(model.parameters()).device
    model.model.rope_deltas = None
    ids = torch.tensor([input_ids], dtype=torch.long, device=dev)
    out = model.model(input_ids=ids, use_cache=True, **extra)
    cache = out.past_key_values
    res = dict(tokens=[], top_ids=[], top_logits=[], margins=[], logsumexp=[],
               hidden_norm_last=float(out.last_hidden_state[0, -1].double().norm()),
               hidden_norm_all=float(out.last_hidden_state[0].double().norm()),
               rope_deltas=None if model.model.rope_deltas is None
               else int(model.model.rope_deltas.flatten()[0]))
    logits = model.lm_head(out.last_hidden_state[:, -1:, :])[0, -1].float().cpu()
    step_logits = []
    for s in range(steps):
        step_logits.append(logits)
        vals, idx = torch.topk(logits, 5)
        res["top_ids"].append([int(i) for i in idx])
        res["top_logits"].append([float(v) for v in vals])
        res["margins"].append(float(vals[0]) - float(vals[1]))
        res["logsumexp"].append(float(torch.logsumexp(logits.double(), 0)))
        nxt = int(torch.argmax(logits))
        res["tokens"].append(nxt)
        if s + 1 == steps:
            break
        out = model.model(input_ids=torch.tensor([[nxt]], device=dev), past_key_values=cache,
                          use_cache=True)
        cache = out.past_key_values
        logits = model.lm_head(out.last_hidden_state[:, -1:, :])[0, -1].float().cpu()
    res["step_logits"] = torch.stack(step_logits)
    return res


@torch.no_grad()
def cache_vs_full(model, input_ids, extra, res):
    """Prompt + continuation in one no-cache forward (positions of the appended text from
    get_rope_index over the whole sequence) gives the cached decode's greedy tokens: the
    decode rule position = index + delta is what the model applies."""
    dev = next(model.parameters()).device
    seq = list(input_ids) + res["tokens"][:-1]
    extra = dict(extra)
    if "mm_token_type_ids" in extra:
        pad = torch.zeros((1, len(seq) - len(input_ids)), dtype=extra["mm_token_type_ids"].dtype,
                          device=dev)
        extra["mm_token_type_ids"] = torch.cat([extra["mm_token_type_ids"], pad], 1)
    model.model.rope_deltas = None
    h = model.model(input_ids=torch.tensor([seq], device=dev), use_cache=False,
                    **extra).last_hidden_state
    full = model.lm_head(h)[0, len(input_ids) - 1:].float().cpu()
    ref = res["step_logits"]
    assert torch.equal(full.argmax(-1), ref.argmax(-1)), "cache_vs_full: greedy tokens differ"
    return float((full - ref).abs().max() / ref.abs().max())


@torch.no_grad()
def features(model, inputs, dev):
    out = {}
    if inputs.get("pixel_values") is not None:
        o = model.model.get_image_features(inputs["pixel_values"].to(dev),
                                           inputs["image_grid_thw"].to(dev))
        f = o.pooler_output if hasattr(o, "pooler_output") else o
        out["image"] = torch.cat(list(f), 0) if isinstance(f, (list, tuple)) else f
    if inputs.get("pixel_values_videos") is not None:
        o = model.model.get_video_features(inputs["pixel_values_videos"].to(dev),
                                           inputs["video_grid_thw"].to(dev))
        f = o.pooler_output if hasattr(o, "pooler_output") else o
        out["video"] = torch.cat(list(f), 0) if isinstance(f, (list, tuple)) else f
    return {k: v.float().cpu() for k, v in out.items()}


def get_rope_index(model, input_ids, inputs):
    """transformers' own 3-D positions and delta, with whatever arguments it takes."""
    fn = model.model.get_rope_index
    params = inspect.signature(fn).parameters
    kw = {}
    for k in ("image_grid_thw", "video_grid_thw", "mm_token_type_ids", "attention_mask"):
        if k in params and inputs.get(k) is not None:
            kw[k] = inputs[k]
    if "mm_token_type_ids" in params and "mm_token_type_ids" not in kw:
        cfg = model.config
        kw["mm_token_type_ids"] = torch.tensor([mm_token_types(input_ids, cfg.image_token_id,
                                                               cfg.video_token_id)])
    try:
        pos, delta = fn(torch.tensor([input_ids]), **kw)
        return pos[:, 0].tolist(), int(delta.flatten()[0])
    except Exception as e:  # noqa: BLE001
        print(f"vl_fixtures: WARNING: get_rope_index failed ({type(e).__name__}: {e})")
        return None, None


def digest(t):
    a = t.float().contiguous().cpu().numpy()
    flat = a.reshape(-1)
    return dict(shape=list(a.shape), sha256_f32=hashlib.sha256(a.tobytes()).hexdigest(),
                sum=float(flat.astype(np.float64).sum()), first=flat[:8].tolist(),
                last=flat[-8:].tolist())


def pixel_codes(pv):
    """uint8 codes u with (u - 127.5) / 127.5 == pv exactly in f32, or None."""
    u = torch.round(pv.double() * 127.5 + 127.5)
    if u.min() < 0 or u.max() > 255:
        return None
    back = (u.float() - 127.5) / 127.5
    return u.to(torch.uint8) if torch.equal(back, pv.float()) else None


def run_cases(model, proc, template, fdir):
    results = []
    for name, messages in CASES:
        msgs = strip_items(messages)
        text, rinfo = render(proc, template, msgs)
        inputs = process(proc, fdir, text, messages)
        input_ids = inputs["input_ids"][0].tolist()
        extra = model_inputs(model, inputs, "cpu")
        r = greedy_vl(model, input_ids, extra, STEPS)
        results.append(dict(name=name, messages=messages, text=text, render=rinfo, inputs=inputs,
                            input_ids=input_ids, extra=extra, result=r))
    return results


def add_inverted(model, proc, fdir, cases):
    """The same prompts with every pixel x replaced by 255 - x: how many of the greedy
    tokens change (a tower that ignored its input would change none)."""
    for e in cases:
        inv = process(proc, fdir, e["text"], e["messages"], invert=True)
        assert inv["input_ids"][0].tolist() == e["input_ids"], f"{e['name']}: inverted ids differ"
        ri = greedy_vl(model, e["input_ids"], model_inputs(model, inv, "cpu"), STEPS)
        r = e["result"]["tokens"]
        e["inverted"] = dict(continuation=ri["tokens"],
                             tokens_changed=sum(a != b for a, b in zip(ri["tokens"], r)),
                             first_change=next((i for i, (a, b) in enumerate(zip(ri["tokens"], r))
                                                if a != b), None))
    return min(e["inverted"]["tokens_changed"] for e in cases)


def case_json(e, model, ids, tok, merge):
    inputs, r = e["inputs"], e["result"]
    input_ids = e["input_ids"]
    types = mm_token_types(input_ids, ids["image_token_id"], ids["video_token_id"])
    ig = inputs["image_grid_thw"].tolist() if inputs.get("image_grid_thw") is not None else []
    vg = inputs["video_grid_thw"].tolist() if inputs.get("video_grid_thw") is not None else []
    warnings = []
    mine, my_delta = rope_index(input_ids, types, ig, vg, merge)
    theirs, their_delta = get_rope_index(model, input_ids, inputs)
    # The oracle is what the model runs: get_rope_index's positions where it could be
    # called; qwen3_5.md §16 is the cross-check.
    positions, delta = (theirs, their_delta) if theirs is not None else (mine, my_delta)
    if theirs is not None and (theirs != mine or their_delta != my_delta):
        warnings.append("get_rope_index differs from qwen3_5.md §16 (positions_spec)")
    if r["rope_deltas"] is not None and r["rope_deltas"] != delta:
        warnings.append(f"the model kept rope_deltas {r['rope_deltas']}, not {delta}")
    got_types = inputs.get("mm_token_type_ids")
    if got_types is not None and got_types[0].tolist() != types:
        warnings.append("the processor's mm_token_type_ids differ from §15.2 (recorded theirs)")
        types = got_types[0].tolist()
    for w in warnings:
        print(f"vl_fixtures: WARNING: {e['name']}: {w}")
    j = dict(name=e["name"], messages=e["messages"], template_kwargs={},
             add_generation_prompt=True, rendered_text=e["text"], render=e["render"],
             images=items_of(e["messages"], "image"), videos=items_of(e["messages"], "video"),
             image_grid_thw=ig, video_grid_thw=vg, ids=input_ids,
             expanded_text=tok.decode(input_ids, skip_special_tokens=False),
             mm_token_type_ids=types, positions=positions, delta=delta,
             positions_source="get_rope_index" if theirs is not None
             else "qwen3_5.md §16 (get_rope_index could not be called)",
             positions_spec=None if positions == mine else mine, warnings=warnings,
             continuation=r["tokens"], continuation_text=tok.decode(r["tokens"],
                                                                    skip_special_tokens=False),
             top_ids=r["top_ids"], top_logits=r["top_logits"], margins=r["margins"],
             logsumexp=r["logsumexp"], hidden_norm_last=r["hidden_norm_last"],
             hidden_norm_all=r["hidden_norm_all"])
    if inputs.get("pixel_values") is not None:
        j["pixel_values"] = digest(inputs["pixel_values"])
    if inputs.get("pixel_values_videos") is not None:
        j["pixel_values_videos"] = digest(inputs["pixel_values_videos"])
    if "inverted" in e:
        j["inverted"] = e["inverted"]
    return j


def spec_checks(cases_json, media):
    """The processor's grids and timestamps against qwen3_5.md §13 / §14 (warnings)."""
    notes = []
    for c in cases_json:
        for name, g in zip(c["images"], c["image_grid_thw"]):
            want = expected_image_grid(media[name]["height"], media[name]["width"])
            if want != g:
                notes.append(f"{c['name']}: image {name} grid {g}, §13.1 gives {want}")
        for name, g in zip(c["videos"], c["video_grid_thw"]):
            v = VIDEOS[name]
            want = expected_video(v["n"], v["fps"], v["h"], v["w"])
            if want["grid"] != g:
                notes.append(f"{c['name']}: video {name} grid {g}, §14 gives {want['grid']}")
            for ts in want["timestamps"]:
                if ts not in c["expanded_text"]:
                    notes.append(f"{c['name']}: video {name}: {ts!r} not in the expanded text")
    for n in notes:
        print(f"vl_fixtures: WARNING: {n}")
    return notes


def write_tensors(path, tensors):
    """A safetensors file (F32 / U8 tensors), written directly so the layout is plain."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous().cpu()
        dt = {torch.float32: "F32", torch.uint8: "U8", torch.int32: "I32"}[t.dtype]
        b = t.numpy().tobytes()
        header[name] = dict(dtype=dt, shape=list(t.shape), data_offsets=[off, off + len(b)])
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def item_rows(inputs, messages, kind):
    """Splits a case's pixel rows per item: name -> (rows, grid)."""
    grids = inputs["image_grid_thw" if kind == "image" else "video_grid_thw"].tolist()
    pv = inputs["pixel_values" if kind == "image" else "pixel_values_videos"]
    out, off = {}, 0
    for name, g in zip(items_of(messages, kind), grids):
        n = g[0] * g[1] * g[2]
        out[name] = (pv[off:off + n], g)
        off += n
    assert off == pv.shape[0], f"pixel rows {pv.shape[0]} != grids {grids}"
    return out


def collect_tensors(cases):
    tensors, stored = {}, {}
    for e in cases:
        f = features(e["model"], e["inputs"], "cpu")
        for kind, feats in f.items():
            tensors[f"{e['name']}.{kind}_features"] = feats
            kind_id = e["ids"]["image_token_id" if kind == "image" else "video_token_id"]
            assert feats.shape[0] == e["input_ids"].count(kind_id), \
                f"{e['name']}: {feats.shape[0]} {kind} features for " \
                f"{e['input_ids'].count(kind_id)} placeholders"
            for name, (rows, g) in item_rows(e["inputs"], e["messages"], kind).items():
                if name in STORED_PIXELS and name not in stored:
                    codes = pixel_codes(rows)
                    if codes is not None:
                        tensors[f"{name}.pixel_codes"] = codes
                        enc = "u8 codes: pixel = (u - 127.5) / 127.5 in f32"
                    elif rows.shape[0] <= 64:
                        tensors[f"{name}.pixel_values"] = rows.float()
                        enc = "f32"
                    else:  # f32 rows of a whole image would not fit the size budget
                        print(f"vl_fixtures: WARNING: {name}: pixels are not u8 codes; not stored")
                        continue
                    # The item alone through the tower: its features as a single-item call.
                    one = {"pixel_values" if kind == "image" else "pixel_values_videos": rows,
                           "image_grid_thw" if kind == "image" else "video_grid_thw":
                               torch.tensor([g])}
                    tensors[f"{name}.features"] = features(e["model"], one, "cpu")[kind]
                    stored[name] = dict(kind=kind, grid_thw=g, rows=int(rows.shape[0]),
                                        encoding=enc, from_case=e["name"])
    return tensors, stored


def pack(out_root, tar_path, dest):
    fdir = os.path.join(out_root, dest)
    with tarfile.open(tar_path, "w") as tar:
        for root, _, files in sorted(os.walk(fdir)):
            for fn in sorted(files):
                p = os.path.join(root, fn)
                info = tar.gettarinfo(p, arcname=os.path.relpath(p, out_root))
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0
                with open(p, "rb") as f:
                    tar.addfile(info, f)


# ---- the MoE arch: experts path, routing gaps, layouts -------------------------------------

def search_seeds(spec, proc, template, fdir, min_margin):
    """Tries seeds from spec["seed"] on: a seed is usable when every case's smallest top-2
    margin reaches min_margin and one no-cache forward over prompt + continuation gives the
    cached decode's tokens (cache_vs_full); of the usable ones, the first that also changes
    at least half of the tokens of every case when the pixels are inverted (and, MoE, keeps
    every routing decision MIN_ROUTER_GAP away from a tie) is taken, else the best tried."""
    moe = make_fixtures.is_moe(spec)
    tries, chosen, t0 = [], None, time.monotonic()
    for attempt in range(MAX_SEED_TRIES):
        seed = spec["seed"] + attempt
        model = build_model(spec, seed)
        probe = make_fixtures.attach_router_probe(model) if moe else None
        cases = run_cases(model, proc, template, fdir)
        router_gap = probe.min_gap() if moe else None  # the cases' own runs, not the inverted
        margin = min(min(c["result"]["margins"]) for c in cases)
        changed, full_rel = None, None
        if margin >= min_margin:
            try:
                full_rel = max(cache_vs_full(model, c["input_ids"], c["extra"], c["result"])
                               for c in cases)
            except AssertionError as e:
                print(f"vl_fixtures: seed {seed}: {e}")
        if full_rel is not None:
            changed = add_inverted(model, proc, fdir, cases)
        t = dict(seed=seed, min_margin=margin, cache_vs_full_max_rel=full_rel,
                 min_inverted_changed=changed)
        if moe:
            t["router_min_kth_gap"] = router_gap
        tries.append(t)
        print(f"vl_fixtures: seed {seed}: min margin {margin:.4g}, inverted changes {changed}"
              + (f", router min k-th gap {router_gap:.3g}" if moe else "")
              + f" ({time.monotonic() - t0:.0f} s)")
        if changed is not None:
            score = (changed >= STEPS // 2, not moe or router_gap >= MIN_ROUTER_GAP, changed)
            if chosen is None or score > chosen["score"]:
                chosen = dict(score=score, seed=seed, model=model, changed=changed, cases=cases,
                              router_gap=router_gap, cache_vs_full_max_rel=full_rel)
            if score[0] and score[1]:
                break
        if chosen is not None and time.monotonic() - t0 > SEED_SEARCH_SECONDS:
            print(f"vl_fixtures: WARNING: seed search stopped after {SEED_SEARCH_SECONDS} s")
            break
    if chosen is None:
        fail(f"no seed in {len(tries)} reached a top-2 margin of {min_margin} with the cached "
             "decode equal to the no-cache forward")
    if chosen["changed"] < STEPS // 2:
        print(f"vl_fixtures: WARNING: inverting the pixels changes only {chosen['changed']} of "
              f"{STEPS} tokens")
    if moe and chosen["router_gap"] < MIN_ROUTER_GAP:
        print(f"vl_fixtures: WARNING: a routing decision is {chosen['router_gap']:.3g} from a tie")
    chosen["tries"] = tries
    return chosen


def bf16_entries(spec, fdir, cases, cases_json):
    """The saved model loaded in bf16 on CUDA, every case end to end (its own tower on the
    processor's pixels); MoE: transformers' default experts path, or eager where that
    cannot run (said so), and the router's closest bf16 calls (exact ties counted)."""
    cls = make_fixtures.hf_class(spec["arch"])
    moe = make_fixtures.is_moe(spec)

    def run(eager):
        bm = (make_fixtures.EagerExperts(cls) if eager else cls).from_pretrained(
            fdir, dtype=torch.bfloat16)
        bm = bm.to("cuda").eval()
        probe = make_fixtures.attach_router_probe(bm) if moe else None
        entries = []
        for c, cj in zip(cases, cases_json):
            r = greedy_vl(bm, c["input_ids"], model_inputs(bm, c["inputs"], "cuda"), STEPS)
            agree = 0
            while agree < STEPS and r["tokens"][agree] == cj["continuation"][agree]:
                agree += 1
            entries.append(dict(name=cj["name"], ids=c["input_ids"], continuation=r["tokens"],
                                top_ids=r["top_ids"], top_logits=r["top_logits"],
                                margins=r["margins"], tokens_equal_to_f32=agree))
        extra = {}
        if moe:
            extra["moe"] = dict(experts_implementation=make_fixtures.experts_implementation(bm)
                                + (" (grouped_mm failed)" if eager else ""),
                                router_min_kth_gap=probe.min_gap(),
                                router_exact_ties=probe.ties)
        return entries, extra

    try:
        return run(False)
    except (AssertionError, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001  (grouped_mm refused this shape: eager, said so)
        if not moe:
            raise
        print(f"vl_fixtures: bf16 run failed ({type(e).__name__}: {e}); retrying with eager "
              "experts")
        return run(True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", choices=sorted(vl_specs.ARCHS), default="dense",
                    help="which fixture (vl_specs.ARCHS)")
    ap.add_argument("--moe", action="store_const", dest="arch", const="moe",
                    help="the same as --arch moe")
    ap.add_argument("--out", default=REPO, help="root under which the fixture is written")
    ap.add_argument("--tar", default="", help="also pack the fixture into this tar file")
    ap.add_argument("--bf16", action="store_true", help="also write vl_reference_bf16.json (CUDA)")
    ap.add_argument("--min-margin", type=float, default=2e-3)
    args = ap.parse_args()
    if args.bf16 and not torch.cuda.is_available():
        fail("--bf16 needs CUDA")  # before any work, not after it
    oracle_run.set_deterministic()
    t_start = time.monotonic()
    print(f"vl_fixtures: --arch {args.arch}: torch {torch.__version__}, "
          f"transformers {transformers.__version__}")

    dest = vl_specs.fixture_dest(args.arch)
    out_root = os.path.abspath(args.out)
    fdir = os.path.join(out_root, dest)
    template_src = os.path.join(REPO, vl_specs.TEMPLATE_FILE)
    with open(template_src, encoding="utf-8") as f:
        template = f.read()
    if hashlib.sha256(template.encode()).hexdigest() != vl_specs.TEMPLATE_SHA256:
        fail(f"{template_src} is not Qwen3.5's chat template (sha256 differs)")
    os.makedirs(fdir, exist_ok=True)
    tok_src = os.path.join(REPO, "models", "tiny-qwen3.5")
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tok_src, fn), os.path.join(fdir, fn))
    if os.path.abspath(template_src) != os.path.abspath(os.path.join(fdir, "chat_template.jinja")):
        shutil.copyfile(template_src, os.path.join(fdir, "chat_template.jinja"))
    for fn, cfg in (("preprocessor_config.json", PREPROCESSOR),
                    ("video_preprocessor_config.json", VIDEO_PREPROCESSOR)):
        with open(os.path.join(fdir, fn), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
    media = write_media(fdir)
    ids = vl_specs.vision_ids(fdir)
    spec = vl_specs.make_spec(args.arch, ids)
    moe = make_fixtures.is_moe(spec)
    est = vl_specs.param_count(spec)

    # config.json first (AutoProcessor reads the model type), then the processor.
    first = build_model(spec, spec["seed"])
    n_params = sum(p.numel() for p in first.parameters())
    if n_params != est:  # vl_specs' size estimate is off; the fixture itself is still right
        print(f"vl_fixtures: WARNING: {n_params} parameters, vl_specs.param_count says {est}")
    make_fixtures.save_fixture(first, spec, fdir)
    del first
    proc, proc_desc = build_processor(fdir)
    if getattr(proc, "chat_template", None) != template:
        print("vl_fixtures: WARNING: the processor did not load chat_template.jinja; set it")
        proc_desc["chat_template_loaded"] = False
        proc.chat_template = template
    tok = proc.tokenizer

    chosen = search_seeds(spec, proc, template, fdir, args.min_margin)
    seed, model, cases, tries = chosen["seed"], chosen["model"], chosen["cases"], chosen["tries"]
    t_search = time.monotonic() - t_start

    merge = VISION["spatial_merge_size"]
    checks = dict(cache_vs_full_max_rel=chosen["cache_vs_full_max_rel"])
    make_fixtures.save_fixture(model, spec, fdir)
    saved_layout = make_fixtures.write_fused(fdir) if moe else None
    model.model.rope_deltas = None  # text-only forwards from here: 1-D positions
    text_prompts = [dict(ids=cases[0]["input_ids"][:40]), dict(ids=[specs.IM_START, 100, 200])]
    reload_diff = make_fixtures.check_reload(model, spec, fdir, text_prompts)
    assert reload_diff <= 1e-5, f"reloaded model logits differ by {reload_diff}"

    cases_json = [case_json(c, model, ids, tok, merge) for c in cases]
    for c in cases:
        c["model"], c["ids"] = model, ids
    tensors, stored = collect_tensors(cases)
    write_tensors(os.path.join(fdir, "vl_tensors.safetensors"), tensors)
    for c in cases_json:
        for kind in ("image", "video"):
            k = f"{c['name']}.{kind}_features"
            if k in tensors:
                f64 = tensors[k].double()
                c[f"{kind}_feature_row_norms"] = f64.norm(dim=1).tolist()
                c[f"{kind}_feature_first"] = tensors[k][0, :8].tolist()

    where = min((min(c["margins"]), i, c["margins"].index(min(c["margins"])))
                for i, c in enumerate(cases_json))
    ref = dict(format=oracle_run.FORMAT, generator="tools/oracle/vl_fixtures.py --arch "
               + args.arch, fixture=spec["name"], architecture=spec["arch"],
               torch=torch.__version__, transformers=transformers.__version__, device="cpu",
               compute_dtype="float32", weights_dtype="bfloat16", seed=seed, seeds_tried=tries,
               steps=STEPS,
               greedy="argmax of the logits (lowest id on ties), fixed step count, no stop at EOS",
               vision_token_ids=ids, processor=proc_desc,
               chat_template=dict(file="chat_template.jinja", sha256=vl_specs.TEMPLATE_SHA256,
                                  source="Qwen3.5's chat_template.jinja"),
               video_expansion="as the processor expands it (qwen3_5.md §15.1)",
               media=media, stored_items=stored,
               tensors="vl_tensors.safetensors: <case>.image_features / <case>.video_features "
                       "[placeholders, out_hidden] f32 (the rows that replace the placeholders, "
                       "in order); <item>.pixel_codes U8 or <item>.pixel_values F32 "
                       "[rows, patch_dim] and <item>.features f32 for the stored items",
               min_margin=where[0], min_margin_at=dict(case=where[1], step=where[2]),
               min_inverted_tokens_changed=min(c["inverted"]["tokens_changed"] for c in cases_json),
               checks=dict(checks, reload_max_abs_logit_diff=reload_diff,
                           spec_warnings=spec_checks(cases_json, media)),
               safetensors=make_fixtures.safetensors_layout(os.path.join(fdir, "model.safetensors"),
                                                            spec),
               cases=cases_json)
    if moe:
        ref["moe"] = dict(
            experts_implementation=make_fixtures.experts_implementation(model),
            save_pretrained_layout=saved_layout, stored_layout="fused",
            num_experts=spec["config"]["num_experts"],
            top_k=spec["config"]["num_experts_per_tok"],
            router_min_kth_gap=chosen["router_gap"],
            router_min_kth_gap_means="smallest p_k - p_(k+1) (softmax of the router logits) over "
                                     "every routing decision of the cases' greedy runs",
            per_expert_reload=make_fixtures.per_expert_reload(model, spec, fdir,
                                                              text_prompts[0]["ids"]))
        pe = ref["moe"]["per_expert_reload"]
        if not (pe.get("loads") and pe.get("parameters_equal")):
            print(f"vl_fixtures: WARNING: the per-expert layout does not reload the same: {pe}")
    oracle_run.write_json(os.path.join(fdir, "vl_reference.json"), ref)

    if args.bf16:
        entries, extra = bf16_entries(spec, fdir, cases, cases_json)
        oracle_run.write_json(os.path.join(fdir, "vl_reference_bf16.json"), dict(
            format=oracle_run.FORMAT, generator=f"tools/oracle/vl_fixtures.py --arch {args.arch} "
            "--bf16", fixture=spec["name"], device=torch.cuda.get_device_name(),
            compute_dtype="bfloat16", steps=STEPS,
            min_margin=min(min(e["margins"]) for e in entries),
            exact_ties=[dict(case=i, step=s) for i, e in enumerate(entries)
                        for s, m in enumerate(e["margins"]) if m == 0.0],
            **extra, cases=entries))

    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(fdir) for f in fs)
    assert size <= vl_specs.HARD_FIXTURE_BYTES, f"{dest}: {size} bytes"
    if size > vl_specs.MAX_FIXTURE_BYTES:
        print(f"vl_fixtures: WARNING: {size} bytes, over the budget of "
              f"{vl_specs.MAX_FIXTURE_BYTES}")
    print(f"vl_fixtures: {dest}: {size / 1e6:.2f} MB, {n_params} parameters, seed {seed}, "
          f"min margin {where[0]:.4g}, inverted changes >= {ref['min_inverted_tokens_changed']}, "
          f"cache-vs-full {checks['cache_vs_full_max_rel']:.2e}")
    if moe:
        m = ref["moe"]
        print(f"  moe: experts {m['experts_implementation']}, saved {m['save_pretrained_layout']}, "
              f"stored fused, router min k-th gap {m['router_min_kth_gap']:.3g}, "
              f"per-expert reload {m['per_expert_reload']}")
    for c in cases_json:
        print(f"  {c['name']:<11} {len(c['ids']):4d} ids  images {c['image_grid_thw']}  "
              f"videos {c['video_grid_thw']}  delta {c['delta']}  "
              f"inverted changes {c['inverted']['tokens_changed']}")
    if args.tar:
        pack(out_root, args.tar, dest)
        print(f"vl_fixtures: packed {dest} into {args.tar}")
    print(f"vl_fixtures: seed search {t_search:.0f} s, total {time.monotonic() - t_start:.0f} s")


if __name__ == "__main__":
    main()
