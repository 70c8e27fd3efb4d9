// models::Qwen3_5VisionTower on the CPU against a double-precision reference of
// qwen3_5.md §12 written independently here (its own patch-order arithmetic, bilinear
// interpolation in double, rotary angles in double), on random weights and pixels for
// odd configs; the host tables against the spec's figures; argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "models/layers/vision.h"
#include "vt/ops/copy.h"

namespace vtllm::models {
namespace {

using Mat = std::vector<double>;  // row-major

// Random parameters made on demand by name: linears N(0, 1/fan_in), biases N(0, 0.1),
// LayerNorm gains in [0.5, 1.5], the position table N(0, 0.5); stored as `dtype`.
class RandomSink final : public ParamSink {
 public:
  RandomSink(vt::DType dtype, uint64_t seed) : dtype_(dtype), rng_(seed) {}
  vt::Tensor take(const std::string& name, const vt::Shape& shape) override {
    vt::Tensor f = vt::Tensor::empty(shape, vt::DType::kF32);
    float* p = f.data<float>();
    const int64_t fan_in = shape.size() > 1 ? f.numel() / shape[0] : 1;
    const bool bias = name.size() > 5 && name.substr(name.size() - 5) == ".bias";
    const bool norm = name.find("norm") != std::string::npos;
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_real_distribution<float> ud(0.5f, 1.5f);
    for (int64_t i = 0; i < f.numel(); ++i) {
      if (bias)
        p[i] = 0.1f * nd(rng_);
      else if (norm)
        p[i] = ud(rng_);
      else if (name.find("pos_embed") != std::string::npos)
        p[i] = 0.5f * nd(rng_);
      else
        p[i] = nd(rng_) / std::sqrt(float(fan_in));
    }
    vt::Stream s(vt::Device::cpu(), 1);
    vt::Tensor t = vt::to_dtype(s, f, dtype_);
    params_[name] = t;
    return t;
  }
  vt::Tensor take_stacked(const std::vector<Part>&, int64_t) override {
    VT_THROW("RandomSink: take_stacked is not used by the vision tower");
  }
  bool declaring() const override { return false; }
  vt::Device device() const override { return vt::Device::cpu(); }

  // A parameter's values as doubles (row-major).
  Mat get(const std::string& name) const {
    vt::Stream s(vt::Device::cpu(), 1);
    vt::Tensor f = vt::to_dtype(s, params_.at(name), vt::DType::kF32);
    return Mat(f.data<float>(), f.data<float>() + f.numel());
  }

 private:
  vt::DType dtype_;
  std::mt19937 rng_;
  std::map<std::string, vt::Tensor> params_;
};

// y [n, out] = x [n, in] . w^T + b
Mat ref_linear(const Mat& x, int64_t n, int64_t in, const Mat& w, const Mat& b, int64_t out) {
  Mat y(size_t(n * out));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[size_t(o)];
      for (int64_t k = 0; k < in; ++k) acc += x[size_t(i * in + k)] * w[size_t(o * in + k)];
      y[size_t(i * out + o)] = acc;
    }
  return y;
}

Mat ref_layer_norm(const Mat& x, int64_t n, int64_t d, const Mat& w, const Mat& b) {
  Mat y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < d; ++k) mean += x[size_t(i * d + k)];
    mean /= double(d);
    for (int64_t k = 0; k < d; ++k) var += std::pow(x[size_t(i * d + k)] - mean, 2);
    var /= double(d);
    for (int64_t k = 0; k < d; ++k)
      y[size_t(i * d + k)] =
          (x[size_t(i * d + k)] - mean) / std::sqrt(var + 1e-6) * w[size_t(k)] + b[size_t(k)];
  }
  return y;
}

double gelu_tanh(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}
double gelu_erf(double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }

struct Coord {
  int64_t r, c;
};

// The patch-grid coordinates of every pixel row, from the row index alone.
std::vector<Coord> ref_coords(const std::vector<VisionGrid>& grids, int64_t m) {
  std::vector<Coord> out;
  for (const VisionGrid& g : grids)
    for (int64_t p = 0; p < g.t * g.h * g.w; ++p) {
      const int64_t in_t = p % (g.h * g.w), blk = in_t / (m * m), within = in_t % (m * m);
      const int64_t by = blk / (g.w / m), bx = blk % (g.w / m);
      out.push_back({by * m + within / m, bx * m + within % m});
    }
  return out;
}

// qwen3_5.md §12 in double.
Mat ref_tower(const io::VisionConfig& v, const RandomSink& w, const Mat& px,
              const std::vector<VisionGrid>& grids, int64_t& rows_out) {
  const std::string p = "model.visual.";
  const int64_t hid = v.hidden_size, m = v.spatial_merge_size, heads = v.num_heads;
  int64_t n = 0;
  for (const VisionGrid& g : grids) n += g.t * g.h * g.w;
  const int64_t hd = hid / heads, pd = int64_t(px.size()) / n;
  const std::vector<Coord> xy = ref_coords(grids, m);
  Mat h = ref_linear(px, n, pd, w.get(p + "patch_embed.proj.weight"),
                     w.get(p + "patch_embed.proj.bias"), hid);
  // Bilinear interpolation of the side x side table at align_corners coordinates.
  const Mat table = w.get(p + "pos_embed.weight");
  const int64_t side = int64_t(std::llround(std::sqrt(double(v.num_position_embeddings))));
  {
    int64_t row = 0;
    for (const VisionGrid& g : grids)
      for (int64_t i = 0; i < g.t * g.h * g.w; ++i, ++row) {
        const double y =
            double(xy[size_t(row)].r) * double(side - 1) / double(std::max<int64_t>(g.h - 1, 1));
        const double x =
            double(xy[size_t(row)].c) * double(side - 1) / double(std::max<int64_t>(g.w - 1, 1));
        const int64_t y0 = int64_t(std::floor(y)), x0 = int64_t(std::floor(x));
        const int64_t y1 = std::min(y0 + 1, side - 1), x1 = std::min(x0 + 1, side - 1);
        const double fy = y - double(y0), fx = x - double(x0);
        for (int64_t k = 0; k < hid; ++k) {
          auto at = [&](int64_t a, int64_t b) { return table[size_t((a * side + b) * hid + k)]; };
          h[size_t(row * hid + k)] += (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                                      fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
        }
      }
  }
  std::vector<int64_t> seg_start;  // the first row of each row's attention segment
  for (const VisionGrid& g : grids)
    for (int64_t t = 0; t < g.t; ++t) {
      const int64_t first = int64_t(seg_start.size());
      for (int64_t i = 0; i < g.h * g.w; ++i) seg_start.push_back(first);
    }
  auto rotate = [&](Mat& qk, int64_t off) {  // qk rows of 3*hid, q at off 0, k at hid
    const int64_t half = hd / 2, quarter = hd / 4;
    for (int64_t t = 0; t < n; ++t)
      for (int64_t a = 0; a < heads; ++a) {
        double* x = &qk[size_t(t * 3 * hid + off + a * hd)];
        for (int64_t j = 0; j < half; ++j) {
          const int64_t i = j % quarter;
          const double pos = j < quarter ? double(xy[size_t(t)].r) : double(xy[size_t(t)].c);
          const double ang = pos * std::pow(10000.0, -2.0 * double(i) / double(half));
          const double x1 = x[j], x2 = x[j + half];
          x[j] = x1 * std::cos(ang) - x2 * std::sin(ang);
          x[j + half] = x2 * std::cos(ang) + x1 * std::sin(ang);
        }
      }
  };
  for (int64_t b = 0; b < v.depth; ++b) {
    const std::string bp = p + "blocks." + std::to_string(b) + ".";
    Mat u = ref_layer_norm(h, n, hid, w.get(bp + "norm1.weight"), w.get(bp + "norm1.bias"));
    Mat qkv =
        ref_linear(u, n, hid, w.get(bp + "attn.qkv.weight"), w.get(bp + "attn.qkv.bias"), 3 * hid);
    rotate(qkv, 0);
    rotate(qkv, hid);
    Mat o(size_t(n * hid), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t s0 = seg_start[size_t(t)];
      int64_t s1 = s0;
      while (s1 < n && seg_start[size_t(s1)] == s0) ++s1;
      for (int64_t a = 0; a < heads; ++a) {
        std::vector<double> sc;
        double mx = -1e300;
        for (int64_t j = s0; j < s1; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < hd; ++c)
            dot +=
                qkv[size_t(t * 3 * hid + a * hd + c)] * qkv[size_t(j * 3 * hid + hid + a * hd + c)];
          sc.push_back(dot / std::sqrt(double(hd)));
          mx = std::max(mx, sc.back());
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t j = s0; j < s1; ++j)
          for (int64_t c = 0; c < hd; ++c)
            o[size_t(t * hid + a * hd + c)] +=
                sc[size_t(j - s0)] / sum * qkv[size_t(j * 3 * hid + 2 * hid + a * hd + c)];
      }
    }
    Mat pr =
        ref_linear(o, n, hid, w.get(bp + "attn.proj.weight"), w.get(bp + "attn.proj.bias"), hid);
    for (size_t i = 0; i < h.size(); ++i) h[i] += pr[i];
    u = ref_layer_norm(h, n, hid, w.get(bp + "norm2.weight"), w.get(bp + "norm2.bias"));
    Mat f = ref_linear(u, n, hid, w.get(bp + "mlp.linear_fc1.weight"),
                       w.get(bp + "mlp.linear_fc1.bias"), v.intermediate_size);
    for (double& x : f) x = v.hidden_act == "gelu" ? gelu_erf(x) : gelu_tanh(x);
    Mat f2 = ref_linear(f, n, v.intermediate_size, w.get(bp + "mlp.linear_fc2.weight"),
                        w.get(bp + "mlp.linear_fc2.bias"), hid);
    for (size_t i = 0; i < h.size(); ++i) h[i] += f2[i];
  }
  Mat u = ref_layer_norm(h, n, hid, w.get(p + "merger.norm.weight"), w.get(p + "merger.norm.bias"));
  const int64_t rows = n / (m * m), wide = hid * m * m;
  Mat f = ref_linear(u, rows, wide, w.get(p + "merger.linear_fc1.weight"),
                     w.get(p + "merger.linear_fc1.bias"), wide);
  for (double& x : f) x = gelu_erf(x);
  rows_out = rows;
  return ref_linear(f, rows, wide, w.get(p + "merger.linear_fc2.weight"),
                    w.get(p + "merger.linear_fc2.bias"), v.out_hidden_size);
}

struct TowerCase {
  io::VisionConfig config;
  std::vector<VisionGrid> grids;
};

std::vector<TowerCase> tower_cases() {
  // Odd shapes: head dim 12, a 3x3 position grid, patch 4, an image and a 2-slab video.
  io::VisionConfig a;
  a.depth = 2;
  a.hidden_size = 24;
  a.num_heads = 2;
  a.intermediate_size = 20;
  a.in_channels = 3;
  a.patch_size = 4;
  a.temporal_patch_size = 2;
  a.spatial_merge_size = 2;
  a.out_hidden_size = 10;
  a.num_position_embeddings = 9;
  // Merge 1 (every patch a token), three heads of 8, exact-erf block activation, a grid
  // larger than the table and one smaller.
  io::VisionConfig b = a;
  b.depth = 1;
  b.hidden_size = 24;
  b.num_heads = 3;
  b.spatial_merge_size = 1;
  b.num_position_embeddings = 16;
  b.hidden_act = "gelu";
  b.in_channels = 1;
  b.temporal_patch_size = 1;
  b.patch_size = 3;
  return {{a, {{1, 4, 6}, {2, 2, 4}}}, {b, {{1, 5, 3}, {3, 1, 2}}}};
}

Mat random_pixels(int64_t n, int64_t pd, uint64_t seed) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::uniform_int_distribution<int> u(0, 255);
  Mat px(size_t(n * pd));
  for (double& x : px) x = double(float((float(u(rng)) - 127.5f) / 127.5f));  // processor values
  return px;
}

vt::Tensor to_tensor(const Mat& m, const vt::Shape& shape) {
  vt::Tensor t = vt::Tensor::empty(shape, vt::DType::kF32);
  for (size_t i = 0; i < m.size(); ++i) t.data<float>()[i] = float(m[i]);
  return t;
}

// max |got - want| relative to the rms of want.
double rel_error(const Mat& want, const vt::Tensor& got_any) {
  vt::Stream s(vt::Device::cpu(), 1);
  vt::Tensor got = vt::to_dtype(s, got_any, vt::DType::kF32);
  EXPECT_EQ(size_t(got.numel()), want.size());
  double ss = 0, worst = 0;
  for (double x : want) ss += x * x;
  const double rms = std::sqrt(ss / double(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.data<float>()[i];
    worst = std::isfinite(g) ? std::max(worst, std::fabs(g - want[i])) : INFINITY;
  }
  return worst / rms;
}

TEST(VisionTower, MatchesDoubleReferenceOnOddConfigs) {
  uint64_t seed = 1;
  for (const TowerCase& c : tower_cases())
    for (vt::DType dt : {vt::DType::kF32, vt::DType::kBF16}) {
      RandomSink w(vt::DType::kBF16, seed++);
      Qwen3_5VisionTower tower(c.config, w, "model.visual.", dt);
      int64_t n = 0;
      for (const VisionGrid& g : c.grids) n += g.t * g.h * g.w;
      const Mat px = random_pixels(n, tower.patch_dim(), seed++);
      vt::Stream s(vt::Device::cpu(), 2);
      const vt::Tensor out = tower.encode(s, to_tensor(px, {n, tower.patch_dim()}), c.grids);
      int64_t rows = 0;
      const Mat want = ref_tower(c.config, w, px, c.grids, rows);
      ASSERT_EQ(out.size(0), rows);
      ASSERT_EQ(out.size(1), c.config.out_hidden_size);
      EXPECT_EQ(out.dtype(), dt);
      // f32: summation order only. bf16: a chain of ~10 roundings per block.
      const double tol = dt == vt::DType::kF32 ? 2e-5 : 6e-2;
      EXPECT_LE(rel_error(want, out), tol)
          << "merge " << c.config.spatial_merge_size << " " << vt::dtype_name(dt);
    }
}

TEST(VisionTower, ItemsAreEncodedIndependently) {
  // Two items in one call give each item's own features: no attention across items.
  const TowerCase c = tower_cases()[0];
  RandomSink w(vt::DType::kBF16, 77);
  Qwen3_5VisionTower tower(c.config, w, "model.visual.", vt::DType::kF32);
  vt::Stream s(vt::Device::cpu(), 1);
  const int64_t n0 = 24, n1 = 16, pd = tower.patch_dim();
  const Mat px = random_pixels(n0 + n1, pd, 5);
  const vt::Tensor both = tower.encode(s, to_tensor(px, {n0 + n1, pd}), c.grids);
  const vt::Tensor first =
      tower.encode(s, to_tensor(Mat(px.begin(), px.begin() + n0 * pd), {n0, pd}), {c.grids[0]});
  const vt::Tensor second =
      tower.encode(s, to_tensor(Mat(px.begin() + n0 * pd, px.end()), {n1, pd}), {c.grids[1]});
  const int64_t out = c.config.out_hidden_size;
  for (int64_t i = 0; i < both.numel(); ++i) {
    const float want =
        i < first.numel() ? first.data<float>()[i] : second.data<float>()[i - first.numel()];
    EXPECT_NEAR(both.data<float>()[i], want, 1e-5f * (1 + std::fabs(want))) << "row " << i / out;
  }
}

TEST(VisionTower, RotaryFrequenciesAreTheOracleBits) {
  // qwen3_5.md §12.3: head_dim 72, 1 / 10000^(f32(2i/36)).
  const uint32_t want[18] = {0x3f800000, 0x3f1977cc, 0x3eb800d6, 0x3e5c9d35, 0x3e044133,
                             0x3d9e91b6, 0x3d3e1e95, 0x3ce3f280, 0x3c88a69b, 0x3c23d70a,
                             0x3bc47060, 0x3b6b8631, 0x3b0d3169, 0x3aa94938, 0x3a4af7f3,
                             0x39f35a5c, 0x3991e2e1, 0x392ee9bf};
  const std::vector<float> inv = vision_rotary_inv_freq(72);
  ASSERT_EQ(inv.size(), 18u);
  for (size_t i = 0; i < 18; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &inv[i], 4);
    EXPECT_EQ(bits, want[i]) << "i = " << i;
  }
}

TEST(VisionTower, PositionTapsFollowTheSpecExample) {
  // qwen3_5.md §12.2: a 48x48 table, grid height 6: row 1 maps to 9.4 -> rows 9 and 10
  // with weights 0.6000004 and 0.3999996 (f32); the last row and column clamp.
  const PosEmbedTaps taps = vision_pos_embed_taps({{1, 6, 2}}, 48, 2);
  ASSERT_EQ(taps.idx.size(), 12u * 4);
  // Row order: block (0, 0) holds patches (0,0) (0,1) (1,0) (1,1); (1,0) is the third.
  const int32_t* i = &taps.idx[2 * 4];
  const float* wt = &taps.weight[2 * 4];
  EXPECT_EQ(i[0], 9 * 48 + 0);
  EXPECT_EQ(i[2], 10 * 48 + 0);
  EXPECT_FLOAT_EQ(wt[0], 0.6000004f);
  EXPECT_FLOAT_EQ(wt[2], 0.3999996f);
  EXPECT_EQ(wt[1], 0.0f);  // column 0 of width 2: c = 0 exactly
  // The last patch (5, 1): row 47 and column 47, the clamped taps weigh nothing.
  const int32_t* last = &taps.idx[11 * 4];
  EXPECT_EQ(last[0], 47 * 48 + 47);
  EXPECT_EQ(taps.weight[11 * 4], 1.0f);
  for (int k = 1; k < 4; ++k) EXPECT_EQ(taps.weight[11 * 4 + size_t(k)], 0.0f);
}

TEST(VisionTower, SegmentsAreOneTemporalSliceOfOneItem) {
  EXPECT_EQ(vision_cu_seqlens({{1, 4, 6}, {2, 2, 4}, {1, 2, 2}}),
            (std::vector<int32_t>{0, 24, 32, 40, 44}));
}

TEST(VisionTower, RejectsPixelsThatDoNotMatchTheGrids) {
  const TowerCase c = tower_cases()[0];
  RandomSink w(vt::DType::kBF16, 3);
  Qwen3_5VisionTower tower(c.config, w, "model.visual.", vt::DType::kF32);
  vt::Stream s(vt::Device::cpu(), 1);
  vt::Tensor px = vt::Tensor::empty({23, tower.patch_dim()}, vt::DType::kF32);
  try {
    tower.encode(s, px, {{1, 4, 6}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("23 rows, the grids 24 patches"), std::string::npos)
        << e.what();
  }
  try {
    tower.encode(s, px, {{1, 3, 6}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 2"), std::string::npos) << e.what();
  }
}

TEST(VisionTower, RejectsConfigsItCannotRun) {
  io::VisionConfig v = tower_cases()[0].config;
  v.num_position_embeddings = 10;
  RandomSink w(vt::DType::kBF16, 4);
  try {
    Qwen3_5VisionTower tower(v, w, "model.visual.", vt::DType::kF32);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a perfect square"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtllm::models
