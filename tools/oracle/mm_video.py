#!/usr/bin/env python3
"""Video loader oracle: what transformers' default video path reads from each test clip.

Runs on the GPU machine (no network, no model files needed). For every clip in
tests/fixtures/media/video/ it calls the installed transformers'
BaseVideoProcessor.fetch_videos, i.e. load_video with the processor's default backend
(torchcodec, else torchvision in transformers 5.17), with Qwen3VLVideoProcessor's own
sample_frames (class defaults: fps 2, min_frames 4, max_frames 768; qwen3_5.md §14.1),
and records the metadata it reports (total_num_frames, fps, duration, size), the sampled
indices, and per sampled frame the sha256 of its RGB24 bytes (HWC) plus a few pixels.
Every other backend load_video knows (torchcodec, pyav, opencv, decord, torchvision) is
run the same way where installed, so a decoder difference can be told from a sampling one.

Writes OUT/oracle.json and OUT/frames/<clip>/<backend>.rgb (the sampled frames, HWC,
concatenated). Checks itself: the indices equal an independent §14.1 computation from the
reported metadata, and frames have the reported shape.

  python3 tools/oracle/mm_video.py --clips tests/fixtures/media/video --out "$OUT/video"
"""

import argparse
import hashlib
import importlib
import json
import math
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np

BACKENDS = ["torchcodec", "pyav", "opencv", "decord", "torchvision"]
CLIP_EXTS = (".mp4", ".mkv", ".webm", ".mov", ".m4a")


def module_version(name):
    try:
        m = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - record whatever stops the import
        return None, f"{type(e).__name__}: {e}"
    return getattr(m, "__version__", "present"), None


def ffmpeg_versions():
    out = {}
    try:
        import av

        out["pyav"] = {k: list(v) if isinstance(v, tuple) else v for k, v in av.library_versions.items()}
    except Exception as e:  # noqa: BLE001
        out["pyav"] = f"unavailable: {e}"
    try:
        import cv2

        info = cv2.getBuildInformation()
        out["opencv"] = [l.strip() for l in info.splitlines() if "FFMPEG" in l or "avcodec" in l
                         or "avformat" in l or "swscale" in l]
    except Exception as e:  # noqa: BLE001
        out["opencv"] = f"unavailable: {e}"
    try:
        from torchcodec._core import get_ffmpeg_library_versions

        out["torchcodec"] = get_ffmpeg_library_versions()
    except Exception as e:  # noqa: BLE001
        out["torchcodec"] = f"unavailable: {e}"
    return out


def expected_indices(total, fps, target_fps=2, min_frames=4, max_frames=768):
    """§14.1 written out independently of transformers."""
    if not fps:
        fps = 24
    n = int(total / fps * target_fps)
    n = min(max(n, min_frames), max_frames, total)
    return [int(x) for x in np.round(np.linspace(0, total - 1, n))]


def to_nhwc_uint8(video):
    try:
        import torch

        if isinstance(video, torch.Tensor):
            video = video.cpu().numpy()
    except ImportError:
        pass
    video = np.asarray(video)
    assert video.ndim == 4, video.shape
    if video.shape[-1] != 3 and video.shape[1] == 3:
        video = video.transpose(0, 2, 3, 1)
    assert video.shape[-1] == 3, video.shape
    assert video.dtype == np.uint8, video.dtype
    return np.ascontiguousarray(video)


def pixel_probes(h, w):
    pts = [(0, 0), (0, w - 1), (h - 1, 0), (h - 1, w - 1), (h // 2, w // 2), (h // 3, (2 * w) // 3)]
    rng = np.random.default_rng(1234)
    pts += [(int(rng.integers(h)), int(rng.integers(w))) for _ in range(10)]
    return pts


def describe(video, metadata, seen, backend):
    video = to_nhwc_uint8(video)
    md = seen.get("metadata") or metadata
    total = int(md.total_num_frames)
    fps = None if md.fps is None else float(md.fps)
    indices = [int(i) for i in seen["indices"]]
    exp = expected_indices(total, fps)
    assert indices == exp, (backend, indices, exp)
    assert video.shape[0] == len(indices), (backend, video.shape, len(indices))
    n, h, w, _ = video.shape
    # Recorded, not asserted: a rotated clip may report its coded size next to turned frames.
    meta_size = None if md.height is None else [int(md.height), int(md.width)]
    frames = []
    for k in range(n):
        f = video[k]
        frames.append({
            "index": indices[k],
            "sha256": hashlib.sha256(f.tobytes()).hexdigest(),
            "channel_sums": [int(f[..., c].sum(dtype=np.int64)) for c in range(3)],
            "pixels": [[y, x] + [int(v) for v in f[y, x]] for (y, x) in pixel_probes(h, w)],
        })
    return video, {
        "backend": getattr(metadata, "video_backend", None) or backend,
        "total_num_frames": total,
        "fps": fps,
        "duration": None if md.duration is None else float(md.duration),
        "width": int(w),
        "height": int(h),
        "metadata_height_width": meta_size,
        "indices": indices,
        "frames": frames,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clips", default="tests/fixtures/media/video")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    t0 = time.time()
    warnings.simplefilter("ignore")
    os.makedirs(args.out, exist_ok=True)

    import transformers
    from transformers import video_utils
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    vp = Qwen3VLVideoProcessor()
    modules = {}
    for name in ["torch", "torchvision", "torchcodec", "av", "cv2", "decord", "PIL"]:
        ver, err = module_version(name)
        modules[name] = ver if ver else f"absent ({err})"
    available = {
        "torchcodec": video_utils.is_torchcodec_available(),
        "pyav": video_utils.is_av_available(),
        "opencv": video_utils.is_cv2_available(),
        "decord": video_utils.is_decord_available(),
        "torchvision": video_utils.is_torchvision_available(),
    }
    report = {
        "script": "tools/oracle/mm_video.py",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "transformers": transformers.__version__,
        "modules": modules,
        "backends_available": available,
        "ffmpeg": ffmpeg_versions(),
        "processor": {"fps": vp.fps, "min_frames": vp.min_frames, "max_frames": vp.max_frames,
                      "do_sample_frames": vp.do_sample_frames},
        "clips": {},
        "errors": [],
    }

    names = sorted(n for n in os.listdir(args.clips) if n.endswith(CLIP_EXTS))
    assert names, f"no clips in {args.clips}"
    for name in names:
        path = os.path.join(args.clips, name)
        entry = {"bytes": os.path.getsize(path), "backends": {}}
        frames_dir = os.path.join(args.out, "frames", name)
        os.makedirs(frames_dir, exist_ok=True)

        def run(fetch, label):
            seen = {}

            def sampler(metadata, **kwargs):
                seen["metadata"] = metadata
                seen["indices"] = vp.sample_frames(metadata)
                return seen["indices"]

            try:
                video, metadata = fetch(sampler)
                video, desc = describe(video, metadata, seen, label)
                with open(os.path.join(frames_dir, f"{label}.rgb"), "wb") as f:
                    f.write(video.tobytes())
                return desc
            except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                return {"error": f"{type(e).__name__}: {e}",
                        "traceback": traceback.format_exc(limit=4)}

        # The processor's own path: fetch_videos picks the default backend.
        entry["loader"] = run(lambda s: vp.fetch_videos(path, sample_indices_fn=s), "default")
        for b in BACKENDS:
            if available[b]:
                entry["backends"][b] = run(
                    lambda s, b=b: video_utils.load_video(path, backend=b, sample_indices_fn=s), b)
        report["clips"][name] = entry
        ok = "error" not in entry["loader"]
        print(f"{name}: default {'ok (' + str(entry['loader'].get('backend')) + ')' if ok else entry['loader']['error']}"
              f"; " + ", ".join(f"{b}: {'ok' if 'error' not in d else 'error'}"
                                for b, d in entry["backends"].items()), flush=True)
        if not name.startswith("audio_only") and not ok:
            report["errors"].append(f"{name}: default loader failed: {entry['loader']['error']}")

    # When the default backend cannot run here (e.g. no torchcodec and a torchvision without
    # video decoding), name the first backend that decoded every video clip.
    video_clips = [n for n in names if not n.startswith("audio_only")]
    usable = [b for b in BACKENDS
              if all(b in report["clips"][n]["backends"] and "error" not in report["clips"][n]["backends"][b]
                     for n in video_clips)]
    report["backends_decoding_every_clip"] = usable
    report["elapsed_s"] = round(time.time() - t0, 2)
    with open(os.path.join(args.out, "oracle.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps({k: report[k] for k in ["transformers", "modules", "backends_available",
                                             "backends_decoding_every_clip", "errors", "elapsed_s"]},
                     indent=1))
    # The run is useful as long as some backend decoded every clip; say so loudly otherwise.
    assert usable or not report["errors"], "no backend decoded every clip"
    assert math.isfinite(report["elapsed_s"])


if __name__ == "__main__":
    main()
