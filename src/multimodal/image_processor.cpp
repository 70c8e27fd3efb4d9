#include "multimodal/image_processor.h"

#include <algorithm>
#include <cmath>

#include "multimodal/content_hash.h"
#include "multimodal/resize.h"

namespace vtllm::multimodal {
namespace {

void check_aspect(int64_t height, int64_t width) {
  if (height <= 0 || width <= 0)
    throw MediaError(str_cat("invalid image size ", width, "x", height));
  const double ratio = double(std::max(height, width)) / double(std::min(height, width));
  if (ratio > 200)
    throw MediaError(str_cat("image of ", width, "x", height, " pixels has an aspect ratio of ",
                             ratio, ", more than the processor's limit of 200"));
}

// Rounds to multiples of `factor` and scales into the bounds; `frames` multiplies the area
// (1 for images, the rounded frame count for videos) and `count` is the frame count the
// rescale factor beta uses (§14.2: n, not the rounded count).
ResizedSize fit(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                int64_t max_pixels, int64_t frames, int64_t count) {
  const double f = double(factor);
  int64_t h = round_half_even(double(height) / f) * factor;
  int64_t w = round_half_even(double(width) / f) * factor;
  const double area = double(count * height * width);
  if (frames * h * w > max_pixels) {
    const double beta = std::sqrt(area / double(max_pixels));
    h = std::max(factor, int64_t(std::floor(double(height) / beta / f)) * factor);
    w = std::max(factor, int64_t(std::floor(double(width) / beta / f)) * factor);
  } else if (frames * h * w < min_pixels) {
    const double beta = std::sqrt(double(min_pixels) / area);
    h = int64_t(std::ceil(double(height) * beta / f)) * factor;
    w = int64_t(std::ceil(double(width) * beta / f)) * factor;
  }
  return {h, w};
}

}  // namespace

int64_t round_half_even(double x) { return int64_t(std::nearbyint(x)); }

ResizedSize smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                         int64_t max_pixels) {
  check_aspect(height, width);
  return fit(height, width, factor, min_pixels, max_pixels, 1, 1);
}

ResizedSize smart_resize_video(int64_t num_frames, int64_t height, int64_t width,
                               int64_t temporal_factor, int64_t factor, int64_t min_pixels,
                               int64_t max_pixels) {
  if (num_frames < temporal_factor)
    throw MediaError(str_cat("video of ", num_frames, " frame(s): the processor needs at least ",
                             temporal_factor));
  if (height <= 0 || width <= 0)
    throw MediaError(str_cat("invalid video size ", width, "x", height));
  if (height < factor || width < factor) {
    const double s = std::max(double(factor) / double(height), double(factor) / double(width));
    height = int64_t(double(height) * s);
    width = int64_t(double(width) * s);
  }
  check_aspect(height, width);
  const int64_t frames =
      round_half_even(double(num_frames) / double(temporal_factor)) * temporal_factor;
  return fit(height, width, factor, min_pixels, max_pixels, frames, num_frames);
}

void patchify(std::span<const Image* const> frames, const ImageProcessorConfig& cfg, VisionInput& v,
              const ParallelFor& loop) {
  VT_CHECK(!frames.empty(), "patchify: no frames");
  const int64_t h = frames[0]->height, w = frames[0]->width;
  const int64_t p = cfg.patch_size, m = cfg.merge_size, tps = cfg.temporal_patch_size;
  for (const Image* f : frames)
    VT_CHECK(f->height == h && f->width == w, "patchify: frames of different sizes");
  if (h % (p * m) != 0 || w % (p * m) != 0)
    throw MediaError(str_cat("image of ", w, "x", h,
                             " pixels is not a multiple of patch_size * merge_size = ", p * m,
                             " (do_resize is off)"));
  // Every output value depends only on (channel, byte): a 3 x 256 table computed with the
  // processor's float32 operations (transformers fuses rescale into mean/std: mean/rf, std/rf
  // in float32, then (x - mean) / std).
  float lut[3][256];
  for (int c = 0; c < 3; ++c) {
    const float rf = float(cfg.rescale_factor);
    float mean = float(cfg.image_mean[size_t(c)]), std_ = float(cfg.image_std[size_t(c)]);
    const bool fused = cfg.do_rescale && cfg.do_normalize;
    if (fused) {
      const float inv = float(1.0 / cfg.rescale_factor);
      mean = mean * inv;
      std_ = std_ * inv;
    }
    for (int x = 0; x < 256; ++x) {
      float val = float(x);
      if (cfg.do_rescale && !fused) val = val * rf;
      if (cfg.do_normalize) val = (val - mean) / std_;
      lut[c][x] = val;
    }
  }
  const int64_t t_in = int64_t(frames.size());
  const int64_t t_pad = (t_in + tps - 1) / tps * tps;
  const int64_t gt = t_pad / tps, gh = h / p, gw = w / p;
  v.grid_t = gt;
  v.grid_h = gh;
  v.grid_w = gw;
  v.patch_dim = 3 * tps * p * p;
  v.pixel_values.resize(size_t(gt * gh * gw * v.patch_dim));  // each value written once below
  // One task per row of merge blocks (t, by): a contiguous run of gw * m patch rows.
  const int64_t block_rows = gh / m, run = gw * m * v.patch_dim;
  parallel_for(loop, gt * block_rows, [&](int64_t task) {
    const int64_t t = task / block_rows, by = task % block_rows;
    float* dst = v.pixel_values.data() + task * run;
    for (int64_t bx = 0; bx < gw / m; ++bx)
      for (int64_t iy = 0; iy < m; ++iy)
        for (int64_t ix = 0; ix < m; ++ix) {
          const int64_t r = by * m + iy, col = bx * m + ix;
          for (int64_t ch = 0; ch < 3; ++ch)
            for (int64_t tt = 0; tt < tps; ++tt) {
              const Image* f = frames[size_t(std::min(t * tps + tt, t_in - 1))];
              const float* table = lut[ch];
              for (int64_t y = 0; y < p; ++y) {
                const uint8_t* src = &f->rgb[size_t(((r * p + y) * w + col * p) * 3 + ch)];
                for (int64_t x = 0; x < p; ++x) *dst++ = table[src[3 * x]];
              }
            }
        }
  });
}

VisionInput process_image(const Image& image, const ImageProcessorConfig& cfg,
                          const ParallelFor& loop) {
  VisionInput v;
  v.kind = MediaKind::kImage;
  const Image* frame = &image;
  Image resized;
  if (cfg.do_resize) {
    const ResizedSize s =
        smart_resize(image.height, image.width, cfg.factor(), cfg.min_pixels, cfg.max_pixels);
    if (s.height != image.height || s.width != image.width) {
      resized = resize_bicubic_aa(image, s.height, s.width, loop);
      frame = &resized;
    }
  }
  const Image* frames[] = {frame};
  patchify(frames, cfg, v, loop);
  v.hash = content_hash(v, loop);
  return v;
}

}  // namespace vtllm::multimodal
