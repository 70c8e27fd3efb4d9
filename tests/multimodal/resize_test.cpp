// resize_bicubic_aa against (1) an unquantised double-precision antialiased bicubic (within
// the uint8 path's rounding) and (2) a per-pixel restatement of the integer algorithm. The
// bit-exact comparison with torchvision itself is in fixture_test.cpp.
#include "multimodal/resize.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace vtllm::multimodal {
namespace {

double cubic(double x) {
  x = std::fabs(x);
  if (x < 1) return 1.5 * x * x * x - 2.5 * x * x + 1;
  if (x < 2) return -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2;
  return 0;
}

// Normalised double weights of output i over input [0, in).
std::vector<double> weights_d(int64_t in, int64_t out, int64_t i) {
  const double scale = double(in) / double(out), s = std::max(scale, 1.0);
  const double center = scale * (double(i) + 0.5);
  std::vector<double> w(size_t(in), 0.0);
  double total = 0;
  for (int64_t j = 0; j < in; ++j) {
    const double d = (double(j) + 0.5 - center) / s;
    if (std::fabs(d) < 2 && double(j) + 0.5 > center - 2 * s && double(j) + 0.5 < center + 2 * s) {
      w[size_t(j)] = cubic(d);
      total += w[size_t(j)];
    }
  }
  for (double& x : w) x /= total;
  return w;
}

TEST(Resize, CloseToUnquantisedDoubleResize) {
  struct Case {
    int64_t ih, iw, oh, ow;
  } cases[] = {{37, 53, 64, 96}, {120, 90, 33, 47}, {50, 50, 50, 80}, {64, 64, 20, 64}};
  for (const Case& c : cases) {
    // Smooth and inside [40, 220]: no clamping, where the uint8 path's clamped intermediate
    // would legitimately differ from a one-shot double result.
    Image src;
    src.height = c.ih;
    src.width = c.iw;
    for (int64_t y = 0; y < c.ih; ++y)
      for (int64_t x = 0; x < c.iw; ++x)
        for (int64_t ch = 0; ch < 3; ++ch)
          src.rgb.push_back(
              uint8_t(130 + 80 * std::sin(0.21 * double(x) + 0.13 * double(y) + double(ch))));
    Image out = resize_bicubic_aa(src, c.oh, c.ow);
    ASSERT_EQ(out.height, c.oh);
    ASSERT_EQ(out.width, c.ow);
    int worst = 0;
    double sum = 0;
    for (int64_t y = 0; y < c.oh; ++y) {
      const auto wy = c.oh == c.ih ? std::vector<double>() : weights_d(c.ih, c.oh, y);
      for (int64_t x = 0; x < c.ow; ++x) {
        const auto wx = c.ow == c.iw ? std::vector<double>() : weights_d(c.iw, c.ow, x);
        for (int64_t ch = 0; ch < 3; ++ch) {
          double acc = 0;
          for (int64_t yy = 0; yy < c.ih; ++yy) {
            const double ky = wy.empty() ? (yy == y) : wy[size_t(yy)];
            if (ky == 0) continue;
            for (int64_t xx = 0; xx < c.iw; ++xx) {
              const double kx = wx.empty() ? (xx == x) : wx[size_t(xx)];
              if (kx != 0) acc += ky * kx * src.rgb[size_t((yy * c.iw + xx) * 3 + ch)];
            }
          }
          const int want = int(std::lround(std::clamp(acc, 0.0, 255.0)));
          const int d = std::abs(int(out.rgb[size_t((y * c.ow + x) * 3 + ch)]) - want);
          worst = std::max(worst, d);
          sum += d;
        }
      }
    }
    EXPECT_LE(worst, 1) << c.ih << "x" << c.iw << " -> " << c.oh << "x" << c.ow;
    EXPECT_LT(sum / double(c.oh * c.ow * 3), 0.3);
  }
}

TEST(Resize, PassesMatchAPerPixelRestatement) {
  Image src = testing::synth(77, 45, 70, "noise");
  const int64_t oh = 29, ow = 101;
  Image out = resize_bicubic_aa(src, oh, ow);
  const ResizeAxis ax = resize_axis(70, ow), ay = resize_axis(45, oh);
  auto horiz = [&](int64_t y, int64_t x, int64_t ch) {
    int32_t acc = int32_t(1) << (ax.precision - 1);
    for (int64_t j = 0; j < ax.count[size_t(x)]; ++j)
      acc += ax.weights[size_t(x * ax.taps + j)] *
             src.rgb[size_t((y * 70 + ax.start[size_t(x)] + j) * 3 + ch)];
    return std::clamp(acc >> ax.precision, 0, 255);
  };
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x)
      for (int64_t ch = 0; ch < 3; ++ch) {
        int32_t acc = int32_t(1) << (ay.precision - 1);
        for (int64_t j = 0; j < ay.count[size_t(y)]; ++j)
          acc += ay.weights[size_t(y * ay.taps + j)] * horiz(ay.start[size_t(y)] + j, x, ch);
        ASSERT_EQ(int(out.rgb[size_t((y * ow + x) * 3 + ch)]),
                  std::clamp(acc >> ay.precision, 0, 255))
            << y << "," << x << "," << ch;
      }
}

TEST(Resize, AxisWeightsAreNormalisedInt16) {
  for (auto [in, out] :
       {std::pair<int64_t, int64_t>{100, 50}, {50, 100}, {1000, 7}, {7, 1}, {3, 1000}}) {
    const ResizeAxis a = resize_axis(in, out);
    const double scale = double(in) / double(out);
    EXPECT_EQ(a.taps, int64_t(std::ceil(2 * std::max(scale, 1.0))) * 2 + 1);
    EXPECT_GT(a.precision, 10u);
    EXPECT_LE(a.precision, 22u);
    for (int64_t i = 0; i < out; ++i) {
      int64_t sum = 0;
      for (int64_t j = 0; j < a.count[size_t(i)]; ++j) sum += a.weights[size_t(i * a.taps + j)];
      EXPECT_LE(std::abs(sum - (int64_t(1) << a.precision)), a.taps)
          << in << "->" << out << " i " << i;
      EXPECT_GE(a.start[size_t(i)], 0);
      EXPECT_LE(a.start[size_t(i)] + a.count[size_t(i)], in);
    }
  }
}

TEST(Resize, UnchangedSizeIsACopyAndOneAxisOnlyResamplesThatAxis) {
  Image src = testing::synth(5, 20, 30, "noise");
  EXPECT_EQ(resize_bicubic_aa(src, 20, 30).rgb, src.rgb);
  // Only the height changes: each column is resampled independently (columns permuted in the
  // input stay permuted in the output).
  Image a = resize_bicubic_aa(src, 33, 30);
  Image swapped = src;
  for (int64_t y = 0; y < 20; ++y)
    for (int c = 0; c < 3; ++c)
      std::swap(swapped.rgb[size_t(y * 90 + c)], swapped.rgb[size_t(y * 90 + 87 + c)]);
  Image b = resize_bicubic_aa(swapped, 33, 30);
  for (int64_t y = 0; y < 33; ++y)
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(a.rgb[size_t(y * 90 + c)], b.rgb[size_t(y * 90 + 87 + c)]);
      EXPECT_EQ(a.rgb[size_t(y * 90 + 45 + c)], b.rgb[size_t(y * 90 + 45 + c)]);
    }
}

}  // namespace
}  // namespace vtllm::multimodal
