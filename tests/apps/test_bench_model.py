#!/usr/bin/env python3
"""CLI tests of `vtllm bench throughput --profile-ops` and `vtllm bench vision` on CPU.

usage: test_bench_model.py VTLLM_BINARY SOURCE_DIR

throughput, on the tiny MoE fixture: every row carries an op breakdown whose op times fit
inside the profiled step and name every layer with its mixer kind (from config.json's
layer_types) and the MoE block; every row counts the distinct experts the router chose,
bounded by k and E, near the uniform-routing expectation E (1 - (1 - k/E)^T); the bytes
a row reports move with the measured count exactly as the cost model says.
vision, on the tiny VL fixture (dummy weights): the chat's prompt length, the video's
frame count and grid are recomputed here from the processor's rules (Python's own
round-half-even), every chat encodes its own image, and a directory without processor
files takes Qwen3.5's published settings with the same geometry.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

VTLLM, SRC = sys.argv[1], sys.argv[2]
MOE = os.path.join(SRC, "tests/fixtures/qwen3_5_moe-tiny")
VL = os.path.join(SRC, "tests/fixtures/qwen3_5-tiny-vl")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(args, timeout=300):
    p = subprocess.run([VTLLM, "bench", *args], capture_output=True, text=True, timeout=timeout)
    check(p.returncode == 0, f"bench {args}: exit {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout


def throughput(tmp):
    cfg = json.load(open(os.path.join(MOE, "config.json")))
    E, k, L = cfg["num_experts"], cfg["num_experts_per_tok"], cfg["num_hidden_layers"]
    out_json = os.path.join(tmp, "tp.json")
    text = run(["throughput", MOE, "--device", "cpu", "--batch", "1,8", "--input-len", "48",
                "--output-len", "4", "--prefill-lens", "96", "--profile-ops", "--profile-steps", "2",
                "--json", out_json])
    check("graph capture off while profiling" in text, "the output says profiling runs eagerly")
    j = json.load(open(out_json))
    check(j["profile_ops"] is True, "profile_ops in the JSON")
    rows = j["rows"]
    check([(r["phase"], r["batch"]) for r in rows] == [("decode", 1), ("decode", 8), ("prefill", 1)],
          f"rows {[(r['phase'], r['batch']) for r in rows]}")
    for r in rows:
        name = f"{r['phase']} b{r['batch']}"
        b = r["op_breakdown"]
        op_us = sum(o["us"] for o in b["ops"])
        check(abs(op_us - b["op_us"]) < 1e-6 * max(1.0, op_us), f"{name}: op_us is the sum of the ops")
        check(op_us <= b["step_us"] * (1 + 1e-9), f"{name}: ops {op_us} us inside the step {b['step_us']} us")
        # The rest is host work between ops (index tensors, allocation): a minority even on
        # a loaded 2-core machine.
        check(op_us >= 0.5 * b["step_us"], f"{name}: ops {op_us} us of a {b['step_us']} us step")
        layers = {l["layer"]: l["regions"] for l in b["layers"]}
        want = {i: ("attn" if t == "full_attention" else "gdn") + "+moe"
                for i, t in enumerate(cfg["layer_types"])}
        check(layers == want, f"{name}: layers {layers}, want {want}")
        ops = {(o["region"], o["op"]) for o in b["ops"]}
        for need in [("moe", "moe_experts_shared"), ("moe", "moe_router"), ("attn", "paged_attention"),
                     ("gdn", "causal_conv1d_silu"), ("lm_head", "linear"), ("embed", "embedding")]:
            check(need in ops, f"{name}: {need} in the breakdown")
        calls = {(o["region"], o["op"]): o["calls"] for o in b["ops"]}
        check(calls.get(("moe", "moe_router")) == L, f"{name}: one moe_router per layer per step")
        e = r["experts"]
        T = r["tokens_per_step"]
        expected = E * (1 - (1 - k / E) ** T)
        check(abs(e["uniform_expected"] - expected) < 1e-9, f"{name}: expected {e['uniform_expected']}")
        check(k <= e["min"] <= e["mean"] <= e["max"] <= min(E, T * k), f"{name}: experts {e}")
        if T == 1:
            check(e["min"] == e["max"] == k, f"{name}: one token touches k experts")
        else:  # 8 tokens: 4 probe steps x L layers of a near-uniform random router
            check(abs(e["mean"] - expected) < 2.5, f"{name}: mean {e['mean']} vs uniform {expected:.2f}")
    # The cost model: the bytes a decode row reports are the non-expert bytes plus
    # expert_bytes x mean / E; rows at one context differ only by the experts and the
    # per-request traffic, so check the expert term through expert_bytes.
    check(j["expert_bytes"] > 0, "expert_bytes in the JSON")
    d1 = rows[0]
    non_expert = d1["bytes"] - j["expert_bytes"] * d1["experts"]["mean"] / E
    check(non_expert > 0 and non_expert < j["weight_bytes"], f"non-expert bytes {non_expert}")


def smart_resize_video(frames, h, w, tf, factor, min_px, max_px):
    # transformers' Qwen3-VL video smart_resize (Python's round: half to even).
    h_bar, w_bar = round(h / factor) * factor, round(w / factor) * factor
    t_bar = math.ceil(frames / tf) * tf
    if t_bar * h_bar * w_bar > max_px:
        beta = math.sqrt(frames * h * w / max_px)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_px:
        beta = math.sqrt(min_px / (frames * h * w))
        h_bar, w_bar = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return h_bar, w_bar


def vision(tmp, model_dir, tag):
    out_json = os.path.join(tmp, f"vis_{tag}.json")
    size, repeats, seconds, fps_src, vw, vh = 256, 2, 6, 30, 720, 400
    run(["vision", model_dir, "--device", "cpu", "--load-format", "dummy", "--images", "1,2",
         "--image-size", str(size), "--repeats", str(repeats), "--text-tokens", "64",
         "--video-seconds", str(seconds), "--video-fps", str(fps_src), "--video-size", f"{vw}x{vh}",
         "--cpu-threads", "1,2", "--json", out_json])
    j = json.load(open(out_json))
    v = json.load(open(os.path.join(VL, "config.json")))["vision_config"]
    p, m = v["patch_size"], v["spatial_merge_size"]
    tokens = (size // p) ** 2 // (m * m)
    check(j["tokens_per_image"] == tokens, f"{tag}: tokens per image {j['tokens_per_image']}")
    check([r["images"] for r in j["tower"]] == [1, 2], f"{tag}: tower rows")
    t = j["ttft"]
    check(t["prompt_tokens"] == 64 + 2 + tokens, f"{tag}: prompt tokens {t['prompt_tokens']}")
    check(t["requests"] == 2 * (repeats + 1) and t["images_encoded"] == t["requests"],
          f"{tag}: every chat encodes its own image: {t}")
    check(0 < t["processor_ms"] < t["with_processor_ms"], f"{tag}: processor inside the TTFT: {t}")
    vid = j["video"]
    # Qwen3VLVideoProcessor at fps 2: int(total / fps_src * 2) frames, within [4, 768].
    frames = min(max(int(seconds * fps_src / fps_src * 2), 4), 768)
    check(vid["frames"] == frames, f"{tag}: video frames {vid['frames']}, want {frames}")
    # The fixture's video processor: size 4096 .. 25165824 pixels (its own file, or the
    # published settings, which are the same).
    hb, wb = smart_resize_video(frames, vh, vw, 2, p * m, 4096, 25165824)
    want_grid = [math.ceil(frames / 2), hb // p, wb // p]
    check(vid["grid"] == want_grid, f"{tag}: video grid {vid['grid']}, want {want_grid}")
    check(abs(vid["patches_per_s"] - vid["patches"] / (vid["tower_ms"] * 1e-3)) < 1e-6 * vid["patches_per_s"],
          f"{tag}: patches/s is patches over the tower time")
    check([(c["threads"], c["images"]) for c in j["cpu"]] == [(1, 4), (2, 4)], f"{tag}: cpu rows {j['cpu']}")
    return j


def main():
    with tempfile.TemporaryDirectory() as tmp:
        throughput(tmp)
        j = vision(tmp, VL, "fixture")
        check(j["processor_from_files"] is True, "the fixture's processor files are read")
        bare = os.path.join(tmp, "bare")  # config.json only, as bench/models/
        os.mkdir(bare)
        shutil.copy(os.path.join(VL, "config.json"), bare)
        j = vision(tmp, bare, "bare")
        check(j["processor_from_files"] is False, "a bare directory takes the published settings")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("bench throughput --profile-ops and bench vision: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
