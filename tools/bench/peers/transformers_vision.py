#!/usr/bin/env python3
"""transformers as the image-chat peer of issue 24, in process (GPU machine).

  transformers_vision.py --model HF_DIR --images DIR [--warmup 2] [--tower-images 1,16]
                         [--tower-runs 10] [--device cuda] [--dtype bfloat16]
                         [--attn-implementation sdpa] [--json OUT]

Loads HF_DIR with AutoModelForImageTextToText (bf16, sdpa, on --device) and its
AutoProcessor, then times, each figure the median of its measured runs:
  processor  the CPU work of one chat: decode the JPEG (PIL), render the chat template
             (apply_chat_template), run the processor on text + image (tokenize, resize,
             normalise, patchify);
  tower      the vision tower alone (model.model.visual, called as get_image_features calls
             it) on the processor's pixel_values of 1 and 16 images, after 3 warm-up calls,
             torch.cuda.synchronize before and after each call;
  ttft       one wall span per chat: processor + inputs to the device + generate() of one
             greedy token, synchronized; the chats are vision_chat_client.py's (its images
             in order, the first --warmup unmeasured, and its 64-token text), so the
             servers' figures are of the same requests (without HTTP and base64 here).
The flash-linear-attention package is not installed on the GPU machine, so the GDN layers
run transformers' torch fallback (the JSON says whether it was found). Prints one JSON
object, also written to --json.
"""
import argparse
import io
import json
import pathlib
import statistics
import sys
import time

import torch
import transformers
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from vision_chat_client import CHAT_TEXT, image_paths  # noqa: E402

TOWER_WARMUP = 3


def tower_flops(v, patches, images):
    """FLOPs of the tower on `images` images of `patches` patches each, counted as
    apps/vtllm/bench/vision_bench.cpp counts them (so the TFLOP/s figures compare)."""
    n, h, i = float(patches), float(v.hidden_size), float(v.intermediate_size)
    pd = float(v.in_channels * v.temporal_patch_size * v.patch_size ** 2)
    m2 = float(v.spatial_merge_size ** 2)
    per = 2 * n * pd * h  # patch embedding
    # Per block: qkv, proj, fc1, fc2, attention over the image (QK^T and PV).
    per += v.depth * (2 * n * h * 3 * h + 2 * n * h * h + 2 * 2 * n * h * i + 4 * n * n * h)
    per += 2 * (n / m2) * (m2 * h) ** 2 + 2 * (n / m2) * (m2 * h) * v.out_hidden_size  # merger
    return per * images


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--images", required=True, help="vision_chat_client.py make-images output")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--tower-images", default="1,16")
    p.add_argument("--tower-runs", type=int, default=10)
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--attn-implementation", default="sdpa")
    p.add_argument("--json")
    args = p.parse_args()

    cuda = args.device.startswith("cuda")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    proc = AutoProcessor.from_pretrained(args.model)
    model = AutoModelForImageTextToText.from_pretrained(
        args.model, dtype=getattr(torch, args.dtype), attn_implementation=args.attn_implementation,
        device_map=args.device)
    model.eval()
    tower = model.model.visual if hasattr(model.model, "visual") else model.visual
    load_s = time.perf_counter() - t0

    def process(jpeg):
        image = Image.open(io.BytesIO(jpeg)).convert("RGB")
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": CHAT_TEXT}]}]
        prompt = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs = proc(text=[prompt], images=[image], return_tensors="pt")
        if "mm_token_type_ids" not in inputs:  # the 3-D positions need it (1: image rows)
            inputs["mm_token_type_ids"] = (inputs["input_ids"] == model.config.image_token_id).int()
        return inputs

    paths = image_paths(args.images)
    jpegs = [pth.read_bytes() for pth in paths]
    first = process(jpegs[0])
    ids = first["input_ids"][0]
    thw = first["image_grid_thw"]
    patches = int(thw.prod())

    with torch.inference_mode():
        # The tower alone, on one image's pixels repeated.
        pixels = first["pixel_values"].to(args.device, tower.dtype)
        thw_dev = thw.to(args.device)
        rows = []
        for b in (int(x) for x in args.tower_images.split(",")):
            pv, grid = pixels.repeat(b, 1), thw_dev.repeat(b, 1)
            for _ in range(TOWER_WARMUP):
                tower(pv, grid_thw=grid)
            times = []
            for _ in range(args.tower_runs):
                sync()
                t = time.perf_counter()
                tower(pv, grid_thw=grid)
                sync()
                times.append((time.perf_counter() - t) * 1e3)
            ms = statistics.median(times)
            rows.append({"images": b, "ms": ms, "images_per_s": b / (ms * 1e-3),
                         "patches_per_s": b * patches / (ms * 1e-3),
                         "tflops": tower_flops(model.config.vision_config, patches, b) / (ms * 1e-3) / 1e12,
                         "runs_ms": times})
            print(f"tower {b} images: {ms:.2f} ms", file=sys.stderr)

        # The chats: processor, then one greedy token.
        chats = []
        for i, (pth, jpeg) in enumerate(zip(paths, jpegs)):
            sync()
            t = time.perf_counter()
            inputs = process(jpeg)
            t_proc = time.perf_counter()
            inputs = inputs.to(args.device)
            out = model.generate(**inputs, max_new_tokens=1, do_sample=False)
            sync()
            t_end = time.perf_counter()
            chats.append({"image": pth.name, "warmup": i < args.warmup,
                          "processor_ms": (t_proc - t) * 1e3, "generate_ms": (t_end - t_proc) * 1e3,
                          "ttft_ms": (t_end - t) * 1e3, "new_tokens": int(out.shape[1] - ids.shape[0])})
            print(f"{pth.name}: TTFT {chats[-1]['ttft_ms']:.1f} ms "
                  f"(processor {chats[-1]['processor_ms']:.1f})", file=sys.stderr)

    measured = [c for c in chats if not c["warmup"]]
    if not measured:
        sys.exit(f"transformers_vision: {len(paths)} images, none left after {args.warmup} warm-ups")

    def med(key):
        return statistics.median(c[key] for c in measured)

    fla = getattr(transformers.utils, "is_flash_linear_attention_available", lambda: None)()
    result = {
        "peer": "transformers", "transformers": transformers.__version__, "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if cuda else args.device, "dtype": args.dtype,
        "attn_implementation": model.config._attn_implementation, "flash_linear_attention": fla,
        "processor": type(proc).__name__, "image_processor": type(proc.image_processor).__name__,
        "load_s": load_s, "prompt_tokens": int(ids.shape[0]),
        "image_tokens": int((ids == model.config.image_token_id).sum()),
        "text_tokens": len(proc.tokenizer(CHAT_TEXT, add_special_tokens=False)["input_ids"]),
        "image_grid_thw": thw[0].tolist(), "patches_per_image": patches,
        "processor_ms": med("processor_ms"), "generate_ms": med("generate_ms"),
        "ttft_ms_median": med("ttft_ms"), "ttft_ms": [c["ttft_ms"] for c in measured],
        "tower": rows, "chats": chats,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        pathlib.Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
