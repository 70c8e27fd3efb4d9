#!/usr/bin/env python3
"""The tiny multimodal fixtures, without torch or numpy: the architectures (dense and
MoE), the vision tower, the processor settings, the media items, the chat cases, and
the computations of qwen3_5.md (smart_resize grids, video frame sampling, 3-D
positions) that vl_fixtures.py cross-checks transformers against.

vl_fixtures.py builds and runs the fixtures from these definitions; every architecture
shares every case, media item and writer. Run alone, this file checks its definitions
against the committed fixtures (any machine with python 3; a ctest, oracle.vl_specs):

  vl_specs.py [--fixture DIR]...   (default: every fixture of ARCHS that has been written)

It asserts that each fixture's spec reproduces its committed config.json and parameter
count, that the cases, media and vision ids are the ones the fixture recorded, that
§13/§14/§16 here give the fixture's grids, timestamps, token types, positions and δ, and
that the MoE spec has the shape the tests need (>= 16 experts, top-k >= 4, a shared
expert) within the hard byte cap; it prints the MoE fixture's expected size.
"""
import argparse
import hashlib
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_specs as specs  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
STEPS = 32
# The dense fixture's committed copy of Qwen3.5's chat_template.jinja is the template of
# every VL fixture (each fixture directory gets its own copy).
TEMPLATE_FILE = "tests/fixtures/qwen3_5-tiny-vl/chat_template.jinja"
# sha256 of Qwen3.5's chat_template.jinja (as published with the Qwen3.5 checkpoints).
TEMPLATE_SHA256 = "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715"
# Soft size budget of one fixture directory (warned about, not fatal: the 4128-id
# embedding, the tokenizer and the stored pixels of a 256-patch image take 1.2 MB alone);
# the hard cap stops a spec mistake (a real-size expert count) before anything is packed.
MAX_FIXTURE_BYTES = 2_600_000
HARD_FIXTURE_BYTES = 4_000_000

VISION = dict(depth=2, hidden_size=48, hidden_act="gelu_pytorch_tanh", intermediate_size=80,
              num_heads=3, in_channels=3, patch_size=16, spatial_merge_size=2,
              temporal_patch_size=2, out_hidden_size=64, num_position_embeddings=64)

# The fixtures: --arch KEY -> fixture name (its directory under tests/fixtures), class and
# first seed. Text models (make_spec): dense = qwen3_5_text's 8 layers [LA, LA, LA, FA] x 2
# with a dense MLP of 96; moe = 4 layers [LA, LA, LA, FA] with the sparse block in every
# layer (16 experts of width 16, top-4, a shared expert of 32 with its sigmoid gate).
# Both: the cut tokenizer's 4128-id vocabulary, tied embeddings, theta 1e7, GDN heads 4/2.
ARCHS = {
    "dense": dict(name="qwen3_5-tiny-vl", arch="Qwen3_5ForConditionalGeneration", seed=6000),
    "moe": dict(name="qwen3_5_moe-tiny-vl-mm", arch="Qwen3_5MoeForConditionalGeneration",
                seed=8000),
}
MOE_TEXT = dict(layers=4, experts=16, top_k=4, inter=16, shared=32)

# qwen3_5.md §13 / §14: the Qwen3.5 checkpoints' processor files.
PREPROCESSOR = {"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
                "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
                "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor",
                "image_processor_type": "Qwen2VLImageProcessorFast"}
VIDEO_PREPROCESSOR = {"size": {"longest_edge": 25165824, "shortest_edge": 4096}, "patch_size": 16,
                      "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
                      "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor",
                      "video_processor_type": "Qwen3VLVideoProcessor"}

# Media items: name -> (kind, file, generator args). Sizes chosen so smart_resize both
# upscales (tiny, wide, tall) and keeps (rgba), and the videos cover an even and an odd
# sampled frame count.
IMAGES = {
    "tiny": dict(file="tiny.png", h=40, w=56, mode="RGB"),
    "wide": dict(file="wide.png", h=64, w=300, mode="RGB"),
    "tall": dict(file="tall.png", h=320, w=90, mode="RGB"),
    "rgba": dict(file="rgba.png", h=256, w=256, mode="RGBA"),
    "photo": dict(file="photo.jpg", h=200, w=260, mode="JPEG"),
}
VIDEOS = {
    "clip_a": dict(file="clip_a.npy", n=9, h=64, w=96, fps=4.0),
    "clip_b": dict(file="clip_b.npy", n=7, h=48, w=40, fps=2.5),
}
# Items whose pixel_values are stored (the tower test runs on them without a processor).
STORED_PIXELS = ["rgba", "clip_a", "clip_b"]


def img(name):
    return {"type": "image", "_item": name}


def vid(name):
    return {"type": "video", "_item": name}


def txt(s):
    return {"type": "text", "text": s}


CASES = [
    ("one_image", [{"role": "user", "content": [img("rgba"), txt("Describe this picture.")]}]),
    ("two_images", [{"role": "user", "content": [img("tiny"), img("wide"),
                                                 txt("Compare the two images.")]}]),
    ("video", [{"role": "user", "content": [vid("clip_a"), txt("What happens in this video?")]}]),
    ("multi_turn", [{"role": "user", "content": [img("tall"), txt("What is this?")]},
                    {"role": "assistant", "content": "A tall picture."},
                    {"role": "user", "content": [img("photo"), txt("And this one?")]}]),
    ("mixed", [{"role": "user", "content": [txt("Clip:"), vid("clip_b"), txt(" Picture:"),
                                            img("rgba"), txt(" Same scene?")]}]),
]


def fixture_dest(arch):
    return "tests/fixtures/" + ARCHS[arch]["name"]


def is_moe(arch):
    return ARCHS[arch]["arch"].startswith("Qwen3_5Moe")


def media_meta():
    """What vl_reference.json records of every media item (write_media writes the files)."""
    meta = {}
    for name, m in IMAGES.items():
        meta[name] = dict(kind="image", file="media/" + m["file"], height=m["h"], width=m["w"],
                          mode=m["mode"])
    for name, v in VIDEOS.items():
        meta[name] = dict(kind="video", file="media/" + v["file"], frames=v["n"], height=v["h"],
                          width=v["w"], fps=v["fps"])
    return meta


def strip_items(messages):
    """Messages as the template sees them ({"type": "image"} items, no file names)."""
    out = []
    for m in messages:
        c = m["content"]
        if isinstance(c, list):
            c = [{k: v for k, v in it.items() if k != "_item"} for it in c]
        out.append(dict(m, content=c))
    return out


def items_of(messages, kind):
    return [it["_item"] for m in messages if isinstance(m["content"], list)
            for it in m["content"] if it.get("type") == kind]


# ---- the model specs -------------------------------------------------------------------

def vision_ids(tok_dir):
    """The cut tokenizer's own vision tokens, as the config's special ids."""
    with open(os.path.join(tok_dir, "tokenizer.json"), encoding="utf-8") as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    want = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    missing = [w for w in want if w not in added]
    if missing:
        sys.exit(f"vl_specs: the cut tokenizer has no {missing}")
    return dict(vision_start_token_id=added[want[0]], vision_end_token_id=added[want[1]],
                image_token_id=added[want[2]], video_token_id=added[want[3]])


def make_spec(arch, ids):
    """The make_fixtures-style spec of architecture `arch` with vision ids `ids`."""
    a = ARCHS[arch]
    extra = dict(bos_token_id=specs.ENDOFTEXT, eos_token_id=specs.IM_END,
                 pad_token_id=specs.ENDOFTEXT)
    if is_moe(arch):
        config = specs.qwen3_5_moe_text(vocab=specs.TOKENIZER_MODEL_VOCAB, theta=10000000.0, hk=2,
                                        hv=4, tie=True, extra=extra, **MOE_TEXT)
    else:
        config = specs.qwen3_5_text(vocab=specs.TOKENIZER_MODEL_VOCAB, theta=10000000.0, hk=2,
                                    hv=4, tie=True, extra=extra)
    return dict(name=a["name"], dest=fixture_dest(arch), arch=a["arch"], family="qwen3_5",
                config=config, vision=VISION, top=dict(ids, tie_word_embeddings=True),
                tokenizer=True, seed=a["seed"])


def param_count(spec):
    """transformers' parameter count of a Qwen3.5 (MoE) conditional-generation spec, from
    the module shapes of qwen3_5.md §3 (tied embeddings counted once)."""
    c, v = spec["config"], spec["vision"]
    H, V = c["hidden_size"], c["vocab_size"]
    n = V * H * (1 if c["tie_word_embeddings"] else 2) + H  # embeddings, lm_head, final norm
    dk, dv = c["linear_key_head_dim"], c["linear_value_head_dim"]
    hk, hv = c["linear_num_key_heads"], c["linear_num_value_heads"]
    conv = 2 * hk * dk + hv * dv
    gdn = H * conv + H * hv * dv + 2 * H * hv + conv * c["linear_conv_kernel_dim"] + 2 * hv + dv \
        + hv * dv * H
    hd, nh, nkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
    attn = H * nh * hd * 2 + 2 * H * nkv * hd + nh * hd * H + 2 * hd  # gated q, k, v, o, q/k-norm
    if "num_experts" in c:
        E, inter, shared = c["num_experts"], c["moe_intermediate_size"], \
            c["shared_expert_intermediate_size"]
        mlp = E * 3 * inter * H + E * H + 3 * shared * H + H  # experts, router, shared, its gate
    else:
        mlp = 3 * c["intermediate_size"] * H
    layers = c["num_hidden_layers"]
    n_full = layers // 4
    n += (layers - n_full) * gdn + n_full * attn + layers * (mlp + 2 * H)
    D, I, m2 = v["hidden_size"], v["intermediate_size"], v["spatial_merge_size"] ** 2
    patch = v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2 * D + D
    block = 4 * D + (3 * D * D + 3 * D) + (D * D + D) + (D * I + I) + (I * D + D)
    merger = 2 * D + (D * m2) ** 2 + D * m2 + D * m2 * v["out_hidden_size"] + v["out_hidden_size"]
    n += patch + v["num_position_embeddings"] * D + v["depth"] * block + merger
    return n


# ---- qwen3_5.md's processor and position rules (cross-checks) ----------------------------

def py_round(x):
    return round(x)  # Python's round: half to even, as the processors


def expected_image_grid(h, w):
    """qwen3_5.md §13.1 with min/max pixels 65536 / 16777216, factor 32."""
    f, lo, hi = 32, 65536, 16777216
    hh, ww = py_round(h / f) * f, py_round(w / f) * f
    if hh * ww > hi:
        beta = math.sqrt(h * w / hi)
        hh, ww = max(f, math.floor(h / beta / f) * f), max(f, math.floor(w / beta / f) * f)
    elif hh * ww < lo:
        beta = math.sqrt(lo / (h * w))
        hh, ww = math.ceil(h * beta / f) * f, math.ceil(w * beta / f) * f
    return [1, hh // 16, ww // 16]


def linspace_rounded(stop, n):
    """np.round(np.linspace(0, stop, n)) as ints: numpy's i * (stop / (n - 1)) with the
    last value exactly `stop`, rounded half to even."""
    if n == 1:
        return [0]
    step = stop / (n - 1)
    vals = [i * step for i in range(n)]
    vals[-1] = float(stop)
    return [int(py_round(x)) for x in vals]


def expected_video(n_frames, fps, h, w):
    """qwen3_5.md §14.1-14.4: sampled indices, grid and timestamps."""
    n = int(n_frames / fps * 2)
    n = min(max(n, 4), 768, n_frames)
    idx = linspace_rounded(n_frames - 1, n)
    hh, ww = h, w
    if hh < 32 or ww < 32:
        s = max(32 / hh, 32 / ww)
        hh, ww = int(hh * s), int(ww * s)
    f = 32
    rh, rw, tb = py_round(hh / f) * f, py_round(ww / f) * f, py_round(n / 2) * 2
    if tb * rh * rw > 25165824:
        beta = math.sqrt(n * hh * ww / 25165824)
        rh, rw = max(f, math.floor(hh / beta / f) * f), max(f, math.floor(ww / beta / f) * f)
    elif tb * rh * rw < 4096:
        beta = math.sqrt(4096 / (n * hh * ww))
        rh, rw = math.ceil(hh * beta / f) * f, math.ceil(ww * beta / f) * f
    padded = idx + [idx[-1]] * (len(idx) % 2)
    ts = [(padded[2 * t] / fps + padded[2 * t + 1] / fps) / 2 for t in range(len(padded) // 2)]
    return dict(indices=idx, grid=[len(padded) // 2, rh // 16, rw // 16],
                timestamps=[f"<{x:.1f} seconds>" for x in ts])


def mm_token_types(ids, image_id, video_id):
    return [1 if i == image_id else 2 if i == video_id else 0 for i in ids]


def rope_index(ids, types, image_grids, video_grids, merge):
    """qwen3_5.md §16.1: runs of equal mm_token_type_ids; video grids split per t."""
    vids = [[1, h, w] for t, h, w in video_grids for _ in range(t)]
    imgs = [list(g) for g in image_grids]
    pos = [[], [], []]
    cur, i, n = 0, 0, len(ids)
    while i < n:
        j = i
        while j < n and types[j] == types[i]:
            j += 1
        if types[i] == 0:
            for k in range(j - i):
                for a in range(3):
                    pos[a].append(cur + k)
            cur += j - i
        else:
            _, gh, gw = (imgs if types[i] == 1 else vids).pop(0)
            mh, mw = gh // merge, gw // merge
            if mh * mw != j - i:
                raise ValueError(f"run of {j - i} vision tokens for a merged grid {mh}x{mw}")
            for r in range(mh):
                for c in range(mw):
                    pos[0].append(cur)
                    pos[1].append(cur + r)
                    pos[2].append(cur + c)
            cur += max(mh, mw)
        i = j
    delta = max(max(p) for p in pos) + 1 - n
    return pos, delta


# ---- the self-check --------------------------------------------------------------------

def safetensors_count(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")


def check_fixture(fdir):
    """The spec, cases, media and qwen3_5.md rules against the fixture written in `fdir`."""
    ref = json.load(open(os.path.join(fdir, "vl_reference.json"), encoding="utf-8"))
    cfg = json.load(open(os.path.join(fdir, "config.json"), encoding="utf-8"))
    arch = next(k for k, a in ARCHS.items() if a["arch"] == ref["architecture"])
    ids = vision_ids(fdir)
    assert ids == ref["vision_token_ids"], f"vision ids {ids} != {ref['vision_token_ids']}"
    spec = make_spec(arch, ids)
    assert ref["fixture"] == spec["name"] and cfg["architectures"] == [spec["arch"]]

    # The spec reproduces the committed config (so the refactored script builds that model).
    tc, vc = cfg["text_config"], cfg["vision_config"]
    for k, want in spec["config"].items():
        got = tc.get(k)
        if isinstance(want, dict):
            assert all(got.get(kk) == vv for kk, vv in want.items()), f"text_config.{k}: {got}"
        else:
            assert got == want, f"text_config.{k}: committed {got}, spec {want}"
    for k, want in spec["vision"].items():
        assert vc.get(k) == want, f"vision_config.{k}: committed {vc.get(k)}, spec {want}"
    for k, want in spec["top"].items():
        assert cfg.get(k) == want, f"{k}: committed {cfg.get(k)}, spec {want}"
    n_file = safetensors_count(os.path.join(fdir, "model.safetensors"))
    assert param_count(spec) == n_file, f"param_count {param_count(spec)} != file {n_file}"
    for other in specs.FIXTURES:  # the count on the other multimodal classes, MoE included
        path = os.path.join(REPO, other["dest"], "model.safetensors")
        if other["arch"].endswith("ConditionalGeneration") and os.path.exists(path):
            assert param_count(other) == safetensors_count(path), f"param_count: {other['name']}"

    # Cases, media and stored items are the recorded ones.
    assert [c["name"] for c in ref["cases"]] == [n for n, _ in CASES]
    for (name, messages), c in zip(CASES, ref["cases"]):
        assert c["messages"] == messages, f"{name}: messages differ from the fixture's"
        assert c["images"] == items_of(messages, "image") and \
            c["videos"] == items_of(messages, "video"), name
    assert ref["media"] == media_meta(), "media metadata differ"
    assert sorted(ref["stored_items"]) == sorted(STORED_PIXELS), ref["stored_items"].keys()
    t = open(os.path.join(REPO, TEMPLATE_FILE), encoding="utf-8").read()
    assert hashlib.sha256(t.encode()).hexdigest() == TEMPLATE_SHA256 == \
        ref["chat_template"]["sha256"], "chat template sha256"

    # §13 / §14 / §15.2 / §16 here against what transformers produced.
    merge = VISION["spatial_merge_size"]
    for c in ref["cases"]:
        for name, g in zip(c["images"], c["image_grid_thw"]):
            m = IMAGES[name]
            assert expected_image_grid(m["h"], m["w"]) == g, f"{c['name']}: {name} grid {g}"
        for name, g in zip(c["videos"], c["video_grid_thw"]):
            v = VIDEOS[name]
            want = expected_video(v["n"], v["fps"], v["h"], v["w"])
            assert want["grid"] == g, f"{c['name']}: {name} grid {g}, §14 {want['grid']}"
            assert all(ts in c["expanded_text"] for ts in want["timestamps"]), want["timestamps"]
        types = mm_token_types(c["ids"], ids["image_token_id"], ids["video_token_id"])
        assert types == c["mm_token_type_ids"], f"{c['name']}: token types"
        pos, delta = rope_index(c["ids"], types, c["image_grid_thw"], c["video_grid_thw"], merge)
        assert (pos, delta) == (c["positions"], c["delta"]), f"{c['name']}: positions / delta"
        assert len(c["continuation"]) == STEPS
    print(f"vl_specs: {os.path.relpath(fdir, REPO)}: spec, config, {n_file} parameters, "
          f"{len(CASES)} cases, media, grids, timestamps, positions and delta all agree")


def check_moe_spec(dense_dir):
    """The MoE spec's shape, and its fixture's expected size: the dense fixture's files
    other than the model, plus the MoE model."""
    ids = vision_ids(dense_dir)
    spec, moe = make_spec("dense", ids), make_spec("moe", ids)
    mc = moe["config"]
    assert mc["num_experts"] >= 16 and mc["num_experts_per_tok"] >= 4 and \
        mc["shared_expert_intermediate_size"] > 0, mc
    assert mc["num_hidden_layers"] % 4 == 0 and "intermediate_size" not in mc
    assert moe["vision"] == spec["vision"] and moe["top"] == spec["top"]
    others = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(dense_dir)
                 for f in fs if f != "model.safetensors")
    model_bytes = 2 * param_count(moe) + 200 * (mc["num_hidden_layers"] * 16 + 40)  # + header
    total = others + model_bytes
    assert total < HARD_FIXTURE_BYTES, f"the MoE fixture would take {total} bytes"
    print(f"vl_specs: moe spec {moe['name']}: {mc['num_hidden_layers']} layers, "
          f"{mc['num_experts']} experts of {mc['moe_intermediate_size']}, top-"
          f"{mc['num_experts_per_tok']}, shared {mc['shared_expert_intermediate_size']}; "
          f"{param_count(moe)} parameters, model.safetensors ~{model_bytes / 1e6:.2f} MB, "
          f"fixture ~{total / 1e6:.2f} MB (soft budget {MAX_FIXTURE_BYTES / 1e6:.1f} MB"
          f"{', over it' if total > MAX_FIXTURE_BYTES else ''})")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture", action="append", default=[],
                    help="a fixture directory to check (repeatable)")
    args = ap.parse_args()
    dirs = [os.path.abspath(d) for d in args.fixture] or \
        [os.path.join(REPO, fixture_dest(a)) for a in ARCHS
         if os.path.exists(os.path.join(REPO, fixture_dest(a), "vl_reference.json"))]
    assert dirs, "no VL fixture to check"
    for d in dirs:
        check_fixture(d)
    check_moe_spec(os.path.join(REPO, fixture_dest("dense")))


if __name__ == "__main__":
    main()
