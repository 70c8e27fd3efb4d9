// Checks of the row-wise ops (vt/ops/norm.h, vt/ops/activation.h) against
// double-precision references.
#include <cmath>

#include "vt/check/cases.h"
#include "vt/ops/activation.h"
#include "vt/ops/norm.h"

namespace vt::check {

std::string desc(const Tensor& t) { return std::string(dtype_name(t.dtype())) + shape_str(t.shape()); }

namespace {

// Row-wise softmax of `vals` ([rows, cols]) in double, and the magnitude each entry's
// error is measured against: exp(x - max) carries the f32 error of x - max, up to
// |x - max| * 2^-24.
void softmax_reference(const std::vector<double>& vals, int64_t rows, int64_t cols,
                       std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(vals.size(), 0.0);
  mag.assign(vals.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = vals.data() + r * cols;
    double mx = xr[0], sum = 0;
    for (int64_t i = 0; i < cols; ++i) mx = std::max(mx, xr[i]);
    for (int64_t i = 0; i < cols; ++i) sum += std::exp(xr[i] - mx);
    for (int64_t i = 0; i < cols; ++i) {
      ref[size_t(r * cols + i)] = std::exp(xr[i] - mx) / sum;
      mag[size_t(r * cols + i)] = ref[size_t(r * cols + i)] * (1.0 + std::fabs(xr[i] - mx));
    }
  }
}

void check_norms_two_level(Harness& h) {
  // Rows of two strides: [T, H, D] per-head views of a column slice of a [T, W]
  // projection (strides W, D, 1), as the GDN layer normalises all q and k heads at once.
  const int64_t T = 5, H = 3, D = 24, W = 101, off = 7;
  const auto at = [&](const std::vector<double>& wide, int64_t t, int64_t hh, int64_t i) {
    return wide[size_t(t * W + off + hh * D + i)];
  };
  for (DType dt : {DType::kF32, DType::kBF16}) {
    std::string cfg = "x " + std::string(dtype_name(dt)) +
                      "[5, 3, 24] heads of a column slice of [5, 101] -> f32";
    h.run("l2_normalize", cfg, /*cuda_arm=*/true, [&] {
      auto wide = h.random({T, W}, dt, 3.0);
      Tensor x = wide.t.slice(1, off, off + H * D).reshape({T, H, D});
      Tensor out = h.poisoned({T, H, D}, DType::kF32);
      l2_normalize(h.stream(), x, 1e-6f, out);
      std::vector<double> ref;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t hh = 0; hh < H; ++hh) {
          double ss = 0;
          for (int64_t i = 0; i < D; ++i) ss += at(wide.vals, t, hh, i) * at(wide.vals, t, hh, i);
          for (int64_t i = 0; i < D; ++i)
            ref.push_back(at(wide.vals, t, hh, i) / std::sqrt(ss + 1e-6));
        }
      h.compare("l2_normalize", cfg, out, ref, tolerance(DType::kF32));
    });
  }
  const std::string cfg = "1+w x bf16[5, 3, 24] heads of a column slice -> f32 heads of one";
  h.run("rms_norm", cfg, /*cuda_arm=*/true, [&] {
    auto wide = h.random({T, W}, DType::kBF16, 2.0);
    auto w = h.random({D}, DType::kF32, 0.5);
    Tensor x = wide.t.slice(1, off, off + H * D).reshape({T, H, D});
    Tensor out_wide = h.poisoned({T, W}, DType::kF32);
    Tensor out = out_wide.slice(1, off, off + H * D).reshape({T, H, D});
    rms_norm(h.stream(), x, w.t, 1e-6f, RmsNormKind::kOnePlus, out);
    std::vector<double> ref;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t hh = 0; hh < H; ++hh) {
        double ss = 0;
        for (int64_t i = 0; i < D; ++i) ss += at(wide.vals, t, hh, i) * at(wide.vals, t, hh, i);
        const double inv = 1.0 / std::sqrt(ss / double(D) + 1e-6);
        for (int64_t i = 0; i < D; ++i)
          ref.push_back(at(wide.vals, t, hh, i) * inv * (1.0 + w.vals[size_t(i)]));
      }
    h.compare("rms_norm", cfg, out, ref, tolerance(DType::kF32));
  });
}

}  // namespace

void check_norms(Harness& h) {
  struct Case {
    int64_t rows, cols, pad;  // pad > 0: x is a column slice of a wider tensor (strided rows)
    DType x, w, out;
    RmsNormKind kind;
  };
  const Case cases[] = {
      {7, 129, 0, DType::kF32, DType::kF32, DType::kF32, RmsNormKind::kPlain},
      {5, 64, 0, DType::kBF16, DType::kBF16, DType::kBF16, RmsNormKind::kPlain},
      {3, 1000, 0, DType::kBF16, DType::kF32, DType::kF32, RmsNormKind::kOnePlus},
      {9, 33, 7, DType::kF16, DType::kBF16, DType::kF32, RmsNormKind::kOnePlus},
      {1, 4099, 0, DType::kF32, DType::kBF16, DType::kF16, RmsNormKind::kPlain},
  };
  for (const Case& c : cases) {
    std::string cfg = std::string(c.kind == RmsNormKind::kPlain ? "plain " : "1+w ") + "x " +
                      dtype_name(c.x) + shape_str({c.rows, c.cols}) + (c.pad ? " strided" : "") +
                      " w " + dtype_name(c.w) + " -> " + dtype_name(c.out);
    h.run("rms_norm", cfg, /*cuda_arm=*/true, [&] {
      const float eps = 1e-6f;
      auto xin = h.random({c.rows, c.cols + c.pad}, c.x, 2.0);
      Tensor x = xin.t.slice(1, 0, c.cols);
      auto w = h.random({c.cols}, c.w, 0.5);
      Tensor out = h.poisoned({c.rows, c.cols}, c.out);
      rms_norm(h.stream(), x, w.t, eps, c.kind, out);
      std::vector<double> ref(size_t(c.rows * c.cols)), mag(ref.size());
      // An f16 intermediate below f16's smallest normal has an absolute rounding error,
      // which the weight then scales: the magnitude floor is 2^-14 |w|.
      const double sub_floor = c.out == DType::kF16 ? std::ldexp(1.0, -14) : 0.0;
      for (int64_t r = 0; r < c.rows; ++r) {
        const double* xr = xin.vals.data() + r * (c.cols + c.pad);
        double ss = 0;
        for (int64_t i = 0; i < c.cols; ++i) ss += xr[i] * xr[i];
        double inv = 1.0 / std::sqrt(ss / double(c.cols) + eps);
        for (int64_t i = 0; i < c.cols; ++i) {
          double wv = w.vals[size_t(i)] + (c.kind == RmsNormKind::kOnePlus ? 1.0 : 0.0);
          // kPlain with a narrow out rounds x * inv before the weight (vt/ops/norm.h).
          const double n = c.kind == RmsNormKind::kPlain ? round_as(xr[i] * inv, c.out) : xr[i] * inv;
          ref[size_t(r * c.cols + i)] = n * wv;
          mag[size_t(r * c.cols + i)] = std::max(std::fabs(n * wv), sub_floor * std::fabs(wv));
        }
      }
      // kPlain narrow: the op's f32 x * inv and the double one can round the intermediate
      // to neighbouring values (f16's 11 bits see that over 4099 elements): one more ulp
      // of the intermediate, up to 2u relative just above a power of two.
      const bool two = c.kind == RmsNormKind::kPlain && c.out != DType::kF32;
      h.compare("rms_norm", cfg, out, ref, (two ? 3 : 1) * tolerance(c.out), mag);
    });
  }
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const int64_t rows = 6, cols = 37;
    std::string cfg = "x " + std::string(dtype_name(dt)) + shape_str({rows, cols}) + " in place";
    h.run("l2_normalize", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({rows, cols}, dt, 3.0);
      Tensor out = x.t;  // in place
      l2_normalize(h.stream(), x.t, 1e-6f, out);
      std::vector<double> ref(x.vals.size());
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < cols; ++i) ss += x.vals[size_t(r * cols + i)] * x.vals[size_t(r * cols + i)];
        for (int64_t i = 0; i < cols; ++i)
          ref[size_t(r * cols + i)] = x.vals[size_t(r * cols + i)] / std::sqrt(ss + 1e-6);
      }
      h.compare("l2_normalize", cfg, out, ref, tolerance(dt));
    });
  }
  check_norms_two_level(h);
}

void check_activations(Harness& h) {
  for (DType x_dt : {DType::kF32, DType::kBF16}) {
    const DType out_dt = x_dt;
    const int64_t rows = 5, inter = 37;
    std::string cfg = "x " + std::string(dtype_name(x_dt)) + shape_str({rows, 2 * inter}) + " -> " +
                      dtype_name(out_dt);
    h.run("silu_and_mul", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({rows, 2 * inter}, x_dt, 3.0);
      Tensor out = h.poisoned({rows, inter}, out_dt);
      silu_and_mul(h.stream(), x.t, out);
      std::vector<double> ref(size_t(rows * inter));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < inter; ++i) {
          double g = x.vals[size_t(r * 2 * inter + i)], u = x.vals[size_t(r * 2 * inter + inter + i)];
          // silu rounds to a narrow out's dtype before the product (vt/ops/activation.h).
          ref[size_t(r * inter + i)] = round_as(g / (1.0 + std::exp(-g)), out_dt) * u;
        }
      h.compare("silu_and_mul", cfg, out, ref, tolerance(out_dt));
    });
  }
  {
    const Shape shape{6, 31};
    h.run("sigmoid", "x f32[6, 31] -> bf16", /*cuda_arm=*/true, [&] {
      auto x = h.random(shape, DType::kF32, 4.0);
      Tensor out = h.poisoned(shape, DType::kBF16);
      sigmoid(h.stream(), x.t, out);
      std::vector<double> ref(x.vals.size());
      for (size_t i = 0; i < ref.size(); ++i) ref[i] = 1.0 / (1.0 + std::exp(-x.vals[i]));
      h.compare("sigmoid", "x f32[6, 31] -> bf16", out, ref, tolerance(DType::kBF16));
    });
  }
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const int64_t rows = 4, cols = 517;
    std::string cfg = "x " + std::string(dtype_name(dt)) + shape_str({rows, cols}) + " logits ~ N(0, 30)";
    h.run("softmax", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({rows, cols}, dt, 30.0);  // large logits: max subtraction matters
      Tensor out = h.poisoned({rows, cols}, DType::kF32);
      softmax(h.stream(), x.t, out);
      std::vector<double> ref, mag;
      softmax_reference(x.vals, rows, cols, ref, mag);
      h.compare("softmax", cfg, out, ref, tolerance(DType::kF32), mag);
    });
  }
  {
    // Vocabulary-length rows (the CUDA arm's wide-block path), one rounding to bf16.
    const int64_t rows = 2, cols = 20011;
    const std::string cfg = "x f32[2, 20011] logits ~ N(0, 8) -> bf16";
    h.run("softmax", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({rows, cols}, DType::kF32, 8.0);
      Tensor out = h.poisoned({rows, cols}, DType::kBF16);
      softmax(h.stream(), x.t, out);
      std::vector<double> ref, mag;
      softmax_reference(x.vals, rows, cols, ref, mag);
      h.compare("softmax", cfg, out, ref, tolerance(DType::kBF16), mag);
    });
  }
  {
    // Two-level rows: x and out [T, H, 2I] / [T, H, I] per-head views of column slices.
    const int64_t T = 4, H = 3, I = 19, W = 2 * H * I + 5, WO = H * I + 3;
    const std::string cfg = "x bf16[4, 3, 38] heads of a column slice -> bf16 heads of one";
    h.run("silu_and_mul", cfg, /*cuda_arm=*/true, [&] {
      auto wide = h.random({T, W}, DType::kBF16, 3.0);
      Tensor x = wide.t.slice(1, 5, W).reshape({T, H, 2 * I});
      Tensor out_wide = h.poisoned({T, WO}, DType::kBF16);
      Tensor out = out_wide.slice(1, 3, WO).reshape({T, H, I});
      silu_and_mul(h.stream(), x, out);
      std::vector<double> ref;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t hh = 0; hh < H; ++hh)
          for (int64_t i = 0; i < I; ++i) {
            const double* row = wide.vals.data() + t * W + 5 + hh * 2 * I;
            ref.push_back(round_as(row[i] / (1.0 + std::exp(-row[i])), DType::kBF16) * row[I + i]);
          }
      h.compare("silu_and_mul", cfg, out, ref, tolerance(DType::kBF16));
    });
  }
  for (bool is_add : {true, false}) {
    // a two-level ([T, H, D] heads of a column slice), b contiguous, out one level.
    const int64_t T = 4, H = 5, D = 8, W = H * D + 9;
    const std::string cfg = "a f32[4, 5, 8] heads of a column slice, b bf16 -> f32";
    h.run(is_add ? "add" : "mul", cfg, /*cuda_arm=*/true, [&] {
      auto wide = h.random({T, W}, DType::kF32);
      auto b = h.random({T, H, D}, DType::kBF16);
      Tensor a = wide.t.slice(1, 9, W).reshape({T, H, D});
      Tensor out = h.poisoned({T, H, D}, DType::kF32);
      if (is_add) {
        add(h.stream(), a, b.t, out);
      } else {
        mul(h.stream(), a, b.t, out);
      }
      std::vector<double> ref, mag;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < H * D; ++i) {
          const double av = wide.vals[size_t(t * W + 9 + i)], bv = b.vals[size_t(t * H * D + i)];
          ref.push_back(is_add ? av + bv : av * bv);
          mag.push_back(is_add ? std::fabs(av) + std::fabs(bv) : std::fabs(av * bv));
        }
      h.compare(is_add ? "add" : "mul", cfg, out, ref, tolerance(DType::kF32), mag);
    });
  }
  for (bool is_add : {true, false}) {
    const Shape shape{5, 23};
    std::string cfg = "a f32[5, 23] b bf16 -> f32, out aliases a";
    h.run(is_add ? "add" : "mul", cfg, /*cuda_arm=*/true, [&] {
      auto a = h.random(shape, DType::kF32), b = h.random(shape, DType::kBF16);
      Tensor out = a.t;
      if (is_add) {
        add(h.stream(), a.t, b.t, out);
      } else {
        mul(h.stream(), a.t, b.t, out);
      }
      std::vector<double> ref(a.vals.size()), mag(a.vals.size());
      for (size_t i = 0; i < ref.size(); ++i) {
        ref[i] = is_add ? a.vals[i] + b.vals[i] : a.vals[i] * b.vals[i];
        mag[i] = is_add ? std::fabs(a.vals[i]) + std::fabs(b.vals[i]) : std::fabs(ref[i]);
      }
      h.compare(is_add ? "add" : "mul", cfg, out, ref, tolerance(DType::kF32), mag);
    });
  }
}

}  // namespace vt::check
