#include "multimodal/resize.h"

#include <algorithm>
#include <cmath>

namespace vtllm::multimodal {
namespace {

// PyTorch's aa_filter<double, /*use_keys_cubic=*/true>: Keys' cubic with a = -0.5, written
// in the same operation order as cubic_convolution1/2 in UpSample.h.
double keys_cubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

uint8_t clamp_shift(int32_t acc, unsigned precision) {
  int32_t v = acc >> precision;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

// Rows per task of a pass split over a ParallelFor.
constexpr int64_t kRowsPerTask = 16;

// Resamples rows [y0, y1) along x: src [h][in_w][3] -> dst [h][out_w][3].
void horizontal_pass(const uint8_t* src, int64_t y0, int64_t y1, int64_t in_w, uint8_t* dst,
                     int64_t out_w, const ResizeAxis& ax) {
  const int32_t init = int32_t(1) << (ax.precision - 1);
  for (int64_t y = y0; y < y1; ++y) {
    const uint8_t* row = src + y * in_w * 3;
    uint8_t* out = dst + y * out_w * 3;
    for (int64_t x = 0; x < out_w; ++x) {
      const int16_t* w = &ax.weights[size_t(x * ax.taps)];
      const uint8_t* p = row + ax.start[size_t(x)] * 3;
      int32_t r = init, g = init, b = init;
      for (int64_t j = 0, n = ax.count[size_t(x)]; j < n; ++j, p += 3) {
        r += w[j] * p[0];
        g += w[j] * p[1];
        b += w[j] * p[2];
      }
      out[3 * x] = clamp_shift(r, ax.precision);
      out[3 * x + 1] = clamp_shift(g, ax.precision);
      out[3 * x + 2] = clamp_shift(b, ax.precision);
    }
  }
}

// Resamples output rows [y0, y1) along y: src [in_h][w][3] -> dst [out_h][w][3].
void vertical_pass(const uint8_t* src, int64_t w, uint8_t* dst, int64_t y0, int64_t y1,
                   const ResizeAxis& ax) {
  const int64_t row_len = w * 3;
  const int32_t init = int32_t(1) << (ax.precision - 1);
  std::vector<int32_t> acc(static_cast<size_t>(row_len));
  for (int64_t y = y0; y < y1; ++y) {
    std::fill(acc.begin(), acc.end(), init);
    const int16_t* wt = &ax.weights[size_t(y * ax.taps)];
    for (int64_t j = 0, n = ax.count[size_t(y)]; j < n; ++j) {
      const uint8_t* row = src + (ax.start[size_t(y)] + j) * row_len;
      const int32_t k = wt[j];
      for (int64_t i = 0; i < row_len; ++i) acc[size_t(i)] += k * row[i];
    }
    uint8_t* out = dst + y * row_len;
    for (int64_t i = 0; i < row_len; ++i) out[i] = clamp_shift(acc[size_t(i)], ax.precision);
  }
}

}  // namespace

ResizeAxis resize_axis(int64_t in, int64_t out) {
  VT_CHECK(in >= 1 && out >= 1, "resize_axis: sizes must be positive, got ", in, " -> ", out);
  // HelperInterpBase::_compute_index_ranges_weights (antialias, align_corners=false, no
  // explicit scale) in double, then _compute_index_ranges_int16_weights.
  const double scale = double(in) / double(out);
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  ResizeAxis ax;
  ax.taps = int64_t(std::ceil(support)) * 2 + 1;
  ax.start.resize(size_t(out));
  ax.count.resize(size_t(out));
  std::vector<double> wf(size_t(out * ax.taps), 0.0);
  double wt_max = 0.0;
  for (int64_t i = 0; i < out; ++i) {
    const double center = scale * (double(i) + 0.5);
    const int64_t xmin = std::max(int64_t(center - support + 0.5), int64_t{0});
    int64_t xsize = std::min(int64_t(center + support + 0.5), in) - xmin;
    xsize = std::clamp(xsize, int64_t{0}, ax.taps);
    double* w = &wf[size_t(i * ax.taps)];
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = keys_cubic((double(j + xmin) - center + 0.5) * invscale);
      total += w[j];
    }
    if (total != 0.0) {
      for (int64_t j = 0; j < xsize; ++j) {
        w[j] /= total;
        wt_max = std::max(wt_max, w[j]);
      }
    }
    ax.start[size_t(i)] = xmin;
    ax.count[size_t(i)] = xsize;
  }
  unsigned p = 0;
  for (p = 0; p < 22; ++p) {
    const int next = int(0.5 + wt_max * double(1 << (p + 1)));
    if (next >= (1 << 15)) break;
  }
  ax.precision = p;
  ax.weights.resize(wf.size());
  for (size_t k = 0; k < wf.size(); ++k) {
    const double v = wf[k] * double(1 << p);
    ax.weights[k] = int16_t(v < 0 ? int(-0.5 + v) : int(0.5 + v));
  }
  return ax;
}

Image resize_bicubic_aa(const Image& src, int64_t out_h, int64_t out_w, const ParallelFor& loop) {
  VT_CHECK(out_h >= 1 && out_w >= 1, "resize: output size must be positive, got ", out_h, "x",
           out_w);
  VT_CHECK(
      src.width >= 1 && src.height >= 1 && int64_t(src.rgb.size()) == src.width * src.height * 3,
      "resize: malformed source image ", src.width, "x", src.height);
  if (out_h == src.height && out_w == src.width) return src;
  Image wide;  // after the width pass (only when the width changes)
  const Image* cur = &src;
  if (out_w != src.width) {
    wide.width = out_w;
    wide.height = src.height;
    wide.rgb.resize(size_t(out_w * src.height * 3));
    const ResizeAxis ax = resize_axis(src.width, out_w);
    parallel_for(loop, (src.height + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t t) {
      horizontal_pass(src.rgb.data(), t * kRowsPerTask,
                      std::min(src.height, (t + 1) * kRowsPerTask), src.width, wide.rgb.data(),
                      out_w, ax);
    });
    if (out_h == src.height) return wide;
    cur = &wide;
  }
  Image out;
  out.width = cur->width;
  out.height = out_h;
  out.rgb.resize(size_t(out_h * cur->width * 3));
  const ResizeAxis ax = resize_axis(cur->height, out_h);
  parallel_for(loop, (out_h + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t t) {
    vertical_pass(cur->rgb.data(), cur->width, out.rgb.data(), t * kRowsPerTask,
                  std::min(out_h, (t + 1) * kRowsPerTask), ax);
  });
  return out;
}

}  // namespace vtllm::multimodal
