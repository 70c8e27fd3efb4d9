"""Oracle for src/multimodal: decoded pixels, torchvision's resize and the Qwen3.5 image and
video processors of transformers, written as JSON plus the media files the C++ tests decode.

Run from the repository root on the GPU machine (CPU only, about 30 s):

    python3 tools/oracle/mm_processor.py --out "$OUT/mm"

It writes OUT/media/* (test images, copied to tests/fixtures/media/) and
OUT/mm_processor.json (copied there as well). Every digest is SHA-256 (hex) of the raw
bytes: decoded images as HWC uint8, pixel_values as little-endian float32 [rows, 1536].

Synthetic inputs the C++ tests regenerate themselves (resize table, video frames) come from
`synth` below: splitmix64 noise and integer gradients, identical in both languages.
The script checks itself at the end (asserts) after writing everything, so a failing check
still leaves the data to look at.
"""
import argparse
import dataclasses
import hashlib
import io
import json
import math
import os
import struct
import sys
import tempfile
import traceback
import zlib

import numpy as np
import PIL
import torch
import torchvision
import transformers
from PIL import Image
from torchvision.transforms.v2 import functional as TF
from torchvision.transforms.v2.functional import InterpolationMode

M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("CHECK FAILED:", what, file=sys.stderr)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def splitmix64_np(x):
    """vtllm::splitmix64 on a uint64 array (wraps mod 2^64)."""
    x = x + np.uint64(GAMMA)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def synth(seed, h, w, kind):
    """[h, w, 3] uint8. noise: splitmix64(seed * 2^32 + i) >> 56 with i the HWC flat index.
    smooth: (x*255//max(w-1,1)*(c+1) + y*255//max(h-1,1)*(3-c)) // 4 + (noise >> 5), mod 256."""
    n = h * w * 3
    base = (seed << 32) & M64
    idx = np.arange(n, dtype=np.uint64) + np.uint64(base)
    noise = (splitmix64_np(idx) >> np.uint64(56)).astype(np.int64).reshape(h, w, 3)
    if kind == "noise":
        return noise.astype(np.uint8)
    y = np.arange(h, dtype=np.int64).reshape(h, 1, 1)
    x = np.arange(w, dtype=np.int64).reshape(1, w, 1)
    c = np.arange(3, dtype=np.int64).reshape(1, 1, 3)
    v = ((x * 255 // max(w - 1, 1)) * (c + 1) + (y * 255 // max(h - 1, 1)) * (3 - c)) // 4 + (noise >> 5)
    return (v % 256).astype(np.uint8)


def photo(h, w, seed, noise=3.0):
    """A compressible 'natural' picture: smooth colour fields, a few hard edges, mild noise."""
    rng = np.random.default_rng(seed)
    y = np.linspace(0, 1, h).reshape(h, 1)
    x = np.linspace(0, 1, w).reshape(1, w)
    r = 128 + 100 * np.sin(6.0 * x + 2.0 * y)
    g = 128 + 90 * np.cos(4.0 * y - 3.0 * x * y)
    b = 60 + 180 * x * (1 - y)
    img = np.stack([r, g, b], axis=-1)
    img[(x > 0.6) & (y < 0.3)] = [250, 20, 30]
    img[((x * 12).astype(int) + (y * 8).astype(int)) % 2 == 0] *= 0.85
    img += rng.normal(0, noise, img.shape)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def write_png16_rgb(path, arr16):
    """A 16-bit RGB PNG by hand (PIL cannot write one): arr16 [h, w, 3] uint16."""
    h, w, _ = arr16.shape
    raw = b"".join(b"\x00" + arr16[i].astype(">u2").tobytes() for i in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def make_media(media):
    """Writes the test images; returns [(file, note)]."""
    files = []

    def save(img, name, note, **kw):
        try:
            img.save(os.path.join(media, name), **kw)
            files.append((name, note))
        except Exception as e:
            check(False, f"writing {name}: {e!r}")

    rgb_small = Image.fromarray(synth(1, 20, 30, "smooth"))
    save(rgb_small, "tiny_rgb.png", "20x30 RGB")
    save(Image.fromarray(photo(40, 900, 2)), "wide_rgb.png", "40 rows x 900 cols")
    save(Image.fromarray(photo(900, 40, 3)), "tall_rgb.png", "900 rows x 40 cols")
    a = photo(48, 64, 4)
    alpha = synth(5, 48, 64, "smooth")[:, :, 0]
    save(Image.fromarray(np.dstack([a, alpha])), "rgba.png", "RGBA, varying alpha")
    save(Image.fromarray(photo(70, 50, 6)[:, :, 1]), "gray.png", "L")
    save(Image.fromarray(np.dstack([photo(45, 33, 7)[:, :, 0], alpha[:45, :33]])), "gray_alpha.png", "LA")
    p = Image.fromarray(photo(40, 60, 8)).quantize(colors=200, method=Image.Quantize.MEDIANCUT)
    save(p, "palette.png", "P 8-bit")
    save(Image.fromarray(photo(40, 60, 9)).quantize(colors=12), "palette4.png", "P 4-bit", bits=4)
    g16 = (np.arange(36 * 28, dtype=np.uint32).reshape(36, 28) * 37 % 1200).astype(np.uint16)
    save(Image.fromarray(g16), "gray16.png", "16-bit gray (values 0..1199)")
    write_png16_rgb(os.path.join(media, "rgb16.png"),
                    (photo(30, 26, 10).astype(np.uint16) * 257 + np.uint16(123)))
    files.append(("rgb16.png", "16-bit RGB"))
    save(Image.fromarray(photo(24, 40, 11)[:, :, 2] > 128), "bilevel.png", "1-bit")
    save(Image.fromarray(photo(32, 32, 12)).convert("P", palette=Image.Palette.ADAPTIVE), "palette_trns.png",
         "P with tRNS", transparency=3)

    big = photo(1080, 1920, 13, noise=0.6)
    save(Image.fromarray(big), "photo_1080p.jpg", "1080x1920 JPEG q80 4:2:0", quality=80)
    save(Image.fromarray(photo(200, 300, 14)), "j444.jpg", "JPEG 4:4:4 q92", quality=92, subsampling=0)
    save(Image.fromarray(photo(193, 257, 15)), "j420_progressive.jpg", "progressive 4:2:0, odd size",
         quality=85, progressive=True, subsampling=2)
    save(Image.fromarray(photo(101, 77, 16)), "j422.jpg", "JPEG 4:2:2", quality=88, subsampling=1)
    save(Image.fromarray(photo(64, 48, 17)[:, :, 0]), "gray.jpg", "grayscale JPEG", quality=90)
    cm = Image.fromarray(photo(40, 56, 18)).convert("CMYK")
    save(cm, "cmyk.jpg", "CMYK JPEG (Adobe)", quality=90)
    ex = Image.fromarray(photo(30, 50, 19))
    exif = Image.Exif()
    exif[0x0112] = 6
    save(ex, "exif_rot6.jpg", "EXIF orientation 6", quality=90, exif=exif.tobytes())

    save(Image.fromarray(photo(90, 120, 20)), "lossy.webp", "WebP lossy q80", quality=80)
    save(Image.fromarray(synth(21, 50, 70, "smooth")), "lossless.webp", "WebP lossless", lossless=True)
    save(Image.fromarray(np.dstack([photo(60, 80, 22), synth(23, 60, 80, "smooth")[:, :, 1]])),
         "alpha_lossy.webp", "WebP lossy with alpha", quality=75)

    f0 = Image.fromarray(photo(50, 70, 24)).quantize(colors=64)
    f1 = Image.fromarray(photo(50, 70, 25)).quantize(colors=64)
    save(f0, "anim.gif", "2-frame GIF (first frame decoded)", save_all=True, append_images=[f1],
         duration=100, loop=0)
    save(Image.fromarray(photo(30, 41, 26)[:, :, 1]), "gray.gif", "grayscale GIF")

    save(Image.fromarray(photo(37, 53, 27)), "rgb24.bmp", "BMP 24-bit, odd width (row padding)")
    save(Image.fromarray(photo(40, 50, 28)).quantize(colors=100), "pal8.bmp", "BMP 8-bit palette")
    save(Image.fromarray(np.dstack([photo(20, 30, 29), alpha[:20, :30]])), "rgba32.bmp", "BMP 32-bit")
    save(Image.fromarray(photo(25, 35, 30)[:, :, 0]), "gray8.bmp", "BMP from L (8-bit gray palette)")
    return files


def samples(arr, k=6):
    """k deterministic (y, x) positions of an [h, w, ...] array and the values there."""
    h, w = arr.shape[0], arr.shape[1]
    out = []
    for i in range(k):
        y = (i * 7919 + 13) % h
        x = (i * 104729 + 7) % w
        out.append([y, x, np.asarray(arr[y, x]).tolist()])
    return out


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


def pv_record(pv):
    pv = pv.detach().to(torch.float32).contiguous().cpu().numpy()
    rows, cols = pv.shape
    picks = [(r * 7 % rows, (r * 331 + 5) % cols) for r in range(8)]
    return dict(shape=[rows, cols], sha256=sha(pv.astype("<f4").tobytes()),
                samples=[[r, c, f32_bits(pv[r, c])] for r, c in picks])


def patchify_ref(frames_chw, patch=16, merge=2, tps=2):
    """pixel_values from uint8 frames [T, 3, h, w] per qwen3_5.md §13.3-§14.3 (numpy, independent
    of the processor's own code): the self-check that the spec's order is the processor's."""
    x = (frames_chw.astype(np.float32) - np.float32(127.5)) / np.float32(127.5)
    t = x.shape[0]
    if t % tps:
        x = np.concatenate([x, np.repeat(x[-1:], tps - t % tps, axis=0)], axis=0)
    t, c, h, w = x.shape
    gt, gh, gw = t // tps, h // patch, w // patch
    x = x.reshape(gt, tps, c, gh // merge, merge, patch, gw // merge, merge, patch)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, c * tps * patch * patch), [gt, gh, gw]


def tv_resize(chw_u8, h, w):
    t = torch.from_numpy(np.ascontiguousarray(chw_u8))
    return TF.resize(t, [h, w], interpolation=InterpolationMode.BICUBIC, antialias=True).numpy()


def image_processor(tmp):
    cfg = {
        "image_processor_type": "Qwen2VLImageProcessor",
        "size": {"shortest_edge": 65536, "longest_edge": 16777216},
        "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
        "rescale_factor": 1 / 255, "resample": 3,
    }
    d = os.path.join(tmp, "ip")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump(cfg, f)
    return transformers.AutoImageProcessor.from_pretrained(d), cfg


def video_processor(tmp):
    cfg = {
        "video_processor_type": "Qwen3VLVideoProcessor",
        "size": {"shortest_edge": 4096, "longest_edge": 25165824},
        "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
        "rescale_factor": 1 / 255, "resample": 3,
    }
    d = os.path.join(tmp, "vp")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "video_preprocessor_config.json"), "w") as f:
        json.dump(cfg, f)
    return transformers.AutoVideoProcessor.from_pretrained(d), cfg


def smart_resize_fns():
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as img_sr
    try:
        from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize as vid_sr
    except ImportError:
        vid_sr = None
    return img_sr, vid_sr


def run_images(media, files, ip, out):
    from transformers.image_utils import load_image
    img_sr, _ = smart_resize_fns()
    recs = []
    for name, note in files:
        path = os.path.join(media, name)
        rec = dict(file=name, note=note, bytes=os.path.getsize(path))
        try:
            im = Image.open(path)
            rec["pil_mode"] = im.mode
            rec["format"] = im.format
            rgb = np.asarray(im.convert("RGB"))
            rec["height"], rec["width"] = int(rgb.shape[0]), int(rgb.shape[1])
            rec["rgb_sha256"] = sha(np.ascontiguousarray(rgb).tobytes())
            rec["rgb_samples"] = samples(rgb)
            if rgb.size <= 6144:
                rec["rgb_pixels"] = rgb.reshape(-1).tolist()
            li = np.asarray(load_image(path))
            rec["load_image_shape"] = list(li.shape)
            rec["load_image_equals_convert"] = bool(li.shape == rgb.shape and (li == rgb).all())
            if not rec["load_image_equals_convert"]:
                rec["load_image_sha256"] = sha(np.ascontiguousarray(li).tobytes())

            h, w = img_sr(rgb.shape[0], rgb.shape[1], factor=32, min_pixels=65536, max_pixels=16777216)
            rec["resized"] = [int(h), int(w)]
            chw = rgb.transpose(2, 0, 1)
            res = tv_resize(chw, h, w) if (h, w) != rgb.shape[:2] else chw
            rec["resized_sha256"] = sha(np.ascontiguousarray(res.transpose(1, 2, 0)).tobytes())

            o = ip(images=[Image.fromarray(rgb)], return_tensors="pt")
            rec["grid_thw"] = o["image_grid_thw"][0].tolist()
            rec["pixel_values"] = pv_record(o["pixel_values"])
            ref, grid = patchify_ref(res[None])
            check(grid == rec["grid_thw"], f"{name}: grid {grid} vs processor {rec['grid_thw']}")
            check(sha(ref.astype("<f4").tobytes()) == rec["pixel_values"]["sha256"],
                  f"{name}: processor pixel_values differ from resize + spec patch order")
            # The processor fed the unconverted PIL image (its own do_convert_rgb).
            try:
                o2 = ip(images=[Image.open(path)], return_tensors="pt")
                rec["raw_pil_equals_rgb"] = bool(torch.equal(o2["pixel_values"], o["pixel_values"]))
            except Exception as e:
                rec["raw_pil_error"] = repr(e)
        except Exception as e:  # recorded, and a check failure
            rec["error"] = repr(e)
            check(False, f"{name}: {e!r}\n{traceback.format_exc()}")
        recs.append(rec)
    out["images"] = recs


RESIZE_CASES = [
    # (seed, in_h, in_w, out_h, out_w, kind)
    (100, 20, 30, 256, 384, "noise"), (101, 37, 53, 64, 96, "smooth"), (102, 300, 200, 96, 64, "noise"),
    (103, 128, 128, 64, 64, "noise"), (104, 50, 50, 50, 80, "noise"), (105, 50, 50, 90, 50, "smooth"),
    (106, 640, 480, 224, 160, "smooth"), (107, 31, 1000, 32, 992, "noise"), (108, 1000, 31, 992, 32, "noise"),
    (109, 15, 9, 127, 33, "noise"), (110, 256, 256, 255, 257, "noise"), (111, 480, 640, 200, 1280, "smooth"),
    (112, 7, 3, 2, 2, "noise"), (113, 900, 700, 33, 17, "noise"), (114, 1080, 1920, 1088, 1920, "smooth"),
    (115, 33, 47, 1, 5, "noise"), (116, 40, 40, 3, 1, "noise"),
]


def run_resize(out):
    recs = []
    for seed, ih, iw, oh, ow, kind in RESIZE_CASES:
        img = synth(seed, ih, iw, kind)
        rec = dict(seed=seed, in_hw=[ih, iw], out_hw=[oh, ow], kind=kind,
                   input_sha256=sha(np.ascontiguousarray(img).tobytes()))
        try:
            r = tv_resize(img.transpose(2, 0, 1), oh, ow).transpose(1, 2, 0)
        except Exception as e:  # torch itself refuses some shapes: recorded, not a check failure
            rec["error"] = repr(e)
            print(f"resize case {seed} ({ih}x{iw} -> {oh}x{ow}): torch error {e!r}", file=sys.stderr)
            recs.append(rec)
            continue
        rec.update(sha256=sha(np.ascontiguousarray(r).tobytes()), samples=samples(r))
        if r.size <= 6144:
            rec["pixels"] = np.ascontiguousarray(r).reshape(-1).tolist()
        # Channels-last input (another memory format, another kernel path) must agree.
        try:
            cl = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)
            r2 = TF.resize(cl, [oh, ow], interpolation=InterpolationMode.BICUBIC, antialias=True).numpy()
            rec["channels_last_equal"] = bool((r2.transpose(1, 2, 0) == r).all())
            check(rec["channels_last_equal"], f"resize {seed}: channels-last differs")
        except Exception as e:
            rec["channels_last_error"] = repr(e)
        recs.append(rec)
    out["resize"] = recs


SMART_CASES = [(480, 640), (48, 80), (80, 80), (100, 100), (1080, 1920), (5000, 5000), (300, 2000),
               (20, 30), (40, 900), (900, 40), (10, 2001), (1, 199), (1, 201), (16, 16), (4095, 4097),
               (3000, 7000), (33, 33), (48, 48), (112, 112), (8192, 8192), (250, 250), (256, 256)]
VIDEO_SMART_CASES = [(6, 480, 640), (2, 20, 30), (4, 10, 10), (768, 1080, 1920), (9, 48, 64), (3, 1000, 40),
                     (100, 720, 1280), (2, 31, 7000)]


def run_smart(out):
    img_sr, vid_sr = smart_resize_fns()
    recs = []
    for h, w in SMART_CASES:
        try:
            r = list(img_sr(h, w, factor=32, min_pixels=65536, max_pixels=16777216))
        except ValueError as e:
            r = "error: " + str(e)
        recs.append(dict(hw=[h, w], out=r))
    out["smart_resize"] = recs
    vrecs = []
    if vid_sr is not None:
        for t, h, w in VIDEO_SMART_CASES:
            try:
                r = list(vid_sr(num_frames=t, height=h, width=w, temporal_factor=2, factor=32,
                                min_pixels=4096, max_pixels=25165824))
            except ValueError as e:
                r = "error: " + str(e)
            vrecs.append(dict(thw=[t, h, w], out=r))
    out["video_smart_resize"] = vrecs


VIDEO_CASES = [
    # (seed, total frames, source fps, h, w, kind)
    (200, 95, 30.0, 48, 64, "smooth"), (201, 10, 24.0, 20, 30, "noise"), (202, 7, 2.0, 60, 100, "smooth"),
    (203, 300, 29.97, 64, 48, "noise"), (204, 3, 10.0, 40, 40, "smooth"),
]


def make_metadata(total, fps, h, w):
    from transformers.video_utils import VideoMetadata
    fields = {f.name for f in dataclasses.fields(VideoMetadata)}
    kw = dict(total_num_frames=total, fps=fps, width=w, height=h, duration=total / fps,
              frames_indices=list(range(total)))
    return VideoMetadata(**{k: v for k, v in kw.items() if k in fields})


def run_videos(vp, out):
    recs = []
    for seed, total, fps, h, w, kind in VIDEO_CASES:
        rec = dict(seed=seed, total=total, fps=fps, hw=[h, w], kind=kind)
        try:
            frames = np.stack([synth(seed * 1000 + t, h, w, kind) for t in range(total)])  # [T, h, w, 3]
            md = make_metadata(total, fps, h, w)
            idx = np.asarray(vp.sample_frames(metadata=md)).astype(np.int64).tolist()
            rec["indices"] = idx
            vid = torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()  # [T, 3, h, w]
            o = vp(videos=[vid], video_metadata=[make_metadata(total, fps, h, w)], return_tensors="pt")
            rec["grid_thw"] = o["video_grid_thw"][0].tolist()
            rec["pixel_values"] = pv_record(o["pixel_values_videos"])
            ts_idx = list(idx) + [idx[-1]] * (len(idx) % 2)
            ts = [(ts_idx[i] / fps + ts_idx[i + 1] / fps) / 2 for i in range(0, len(ts_idx), 2)]
            rec["timestamps"] = ts
            rec["timestamps_text"] = ["<%.1f seconds>" % t for t in ts]
            # Self-check: resize of the sampled frames + the spec's patch order.
            sel = frames[idx].transpose(0, 3, 1, 2)
            gt, gh, gw = rec["grid_thw"]
            rh, rw = gh * 16, gw * 16
            res = np.stack([tv_resize(f, rh, rw) if (rh, rw) != (h, w) else f for f in sel])
            ref, grid = patchify_ref(res)
            check(grid == rec["grid_thw"], f"video {seed}: grid {grid} vs {rec['grid_thw']}")
            check(sha(ref.astype("<f4").tobytes()) == rec["pixel_values"]["sha256"],
                  f"video {seed}: pixel_values differ from resize + spec patch order")
        except Exception as e:
            rec["error"] = repr(e)
            check(False, f"video {seed}: {e!r}\n{traceback.format_exc()}")
        recs.append(rec)
    out["videos"] = recs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "mm"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    media = os.path.join(args.out, "media")
    os.makedirs(media, exist_ok=True)
    out = dict(format=1, versions=dict(python=sys.version.split()[0], torch=torch.__version__,
                                       torchvision=torchvision.__version__, transformers=transformers.__version__,
                                       pillow=PIL.__version__, numpy=np.__version__,
                                       cpu_capability=torch.backends.cpu.get_cpu_capability()))
    files = make_media(media)
    with tempfile.TemporaryDirectory() as tmp:
        ip, icfg = image_processor(tmp)
        vp, vcfg = video_processor(tmp)
        out["image_processor_class"] = type(ip).__module__ + "." + type(ip).__name__
        out["video_processor_class"] = type(vp).__module__ + "." + type(vp).__name__
        out["image_processor_config"] = icfg
        out["video_processor_config"] = vcfg
        for step in (lambda: run_smart(out), lambda: run_resize(out), lambda: run_images(media, files, ip, out),
                     lambda: run_videos(vp, out)):
            try:
                step()
            except Exception as e:
                check(False, f"step failed: {e!r}\n{traceback.format_exc()}")
    out["failures"] = FAILURES
    total = sum(os.path.getsize(os.path.join(media, f)) for f in os.listdir(media))
    out["media_bytes"] = total
    with open(os.path.join(args.out, "mm_processor.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {args.out}: {len(files)} images ({total} bytes), failures: {len(FAILURES)}")
    check(total < 1_600_000, f"media too large: {total} bytes")
    assert not FAILURES, "\n".join(FAILURES)


if __name__ == "__main__":
    main()
