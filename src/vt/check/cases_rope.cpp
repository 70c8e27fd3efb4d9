// Checks of vt/ops/rope.h and vt/ops/sampling.h against double-precision references.
#include <cmath>

#include "vt/check/cases.h"
#include "vt/ops/copy.h"
#include "vt/ops/rope.h"
#include "vt/ops/sampling.h"

namespace vt::check {

void check_rope(Harness& h) {
  struct Case {
    int64_t tokens, heads, head_dim, rotary_dim;
    DType dt;
    bool in_place;
  };
  const Case cases[] = {{7, 3, 24, 16, DType::kF32, false}, {5, 4, 64, 64, DType::kBF16, true},
                        {9, 2, 128, 32, DType::kF32, true}};
  for (const Case& c : cases) {
    std::string cfg = "x " + std::string(dtype_name(c.dt)) + shape_str({c.tokens, c.heads, c.head_dim}) +
                      " rotary_dim " + std::to_string(c.rotary_dim) + (c.in_place ? " in place" : "");
    h.run("rope_neox", cfg, /*cuda_arm=*/true, [&] {
      // Positions up to 5000 so the angles wrap many times.
      std::vector<double> pos(size_t(c.tokens));
      std::uniform_int_distribution<int64_t> pick(0, 5000);
      for (double& p : pos) p = double(pick(h.rng()));
      Tensor host_pos = Tensor::empty({c.tokens}, DType::kI64);
      for (int64_t t = 0; t < c.tokens; ++t) host_pos.data<int64_t>()[t] = int64_t(pos[size_t(t)]);
      Tensor table = rope_cos_sin_1d(host_pos, c.rotary_dim, 1e6);
      std::vector<double> cs(table.data<float>(), table.data<float>() + table.numel());
      Tensor dev_table = to_device(h.stream(), table, h.stream().device());
      auto x = h.random({c.tokens, c.heads, c.head_dim}, c.dt);
      Tensor out = c.in_place ? x.t : h.poisoned(x.t.shape(), c.dt);
      rope_neox(h.stream(), x.t, dev_table, out);
      std::vector<double> ref(x.vals), mag(x.vals.size());
      const int64_t half = c.rotary_dim / 2;
      for (int64_t t = 0; t < c.tokens; ++t)
        for (int64_t hd = 0; hd < c.heads; ++hd) {
          const double* xr = x.vals.data() + (t * c.heads + hd) * c.head_dim;
          double* rr = ref.data() + (t * c.heads + hd) * c.head_dim;
          double* mr = mag.data() + (t * c.heads + hd) * c.head_dim;
          for (int64_t i = 0; i < c.head_dim; ++i) mr[i] = std::fabs(xr[i]);
          for (int64_t i = 0; i < half; ++i) {
            double co = cs[size_t(t * c.rotary_dim + i)], si = cs[size_t(t * c.rotary_dim + half + i)];
            // A narrow dtype's arithmetic rounds each product (vt/ops/rope.h).
            rr[i] = round_as(xr[i] * co, c.dt) - round_as(xr[i + half] * si, c.dt);
            rr[i + half] = round_as(xr[i + half] * co, c.dt) + round_as(xr[i] * si, c.dt);
            mr[i] = mr[i + half] = std::max(std::fabs(rr[i]), std::fabs(rr[i + half]));
          }
        }
      h.compare("rope_neox", cfg, out, ref, tolerance(c.dt), mag);
    });
  }
  h.run("rope_cos_sin_1d", "positions i32[6] rotary_dim 16 theta 1e4", /*cuda_arm=*/true, [&] {
    const int64_t n = 6, rd = 16;
    const int32_t positions[n] = {0, 1, 17, 255, 4096, 32767};
    Tensor p = h.upload(std::vector<double>(positions, positions + n), {n}, DType::kI32);
    Tensor table = h.poisoned({n, rd}, DType::kF32);
    rope_cos_sin_1d(h.stream(), p, 1e4, table);
    std::vector<double> ref(size_t(n * rd)), mag(ref.size());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < rd / 2; ++i) {
        double angle = positions[t] * std::pow(1e4, -2.0 * double(i) / double(rd));
        ref[size_t(t * rd + i)] = std::cos(angle);
        ref[size_t(t * rd + rd / 2 + i)] = std::sin(angle);
        // HF computes the angle in f32: its rounding error (|angle| * 2^-23) shifts cos/sin.
        mag[size_t(t * rd + i)] = mag[size_t(t * rd + rd / 2 + i)] = 1.0 + std::fabs(angle) * 0.01;
      }
    h.compare("rope_cos_sin_1d", "positions i32[6] rotary_dim 16 theta 1e4", table, ref,
              tolerance(DType::kF32), mag);
  });
}

void check_argmax(Harness& h) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const int64_t rows = 9, vocab = 1001;
    std::string cfg = "logits " + std::string(dtype_name(dt)) + shape_str({rows, vocab}) + " with ties -> i32";
    h.run("argmax", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({rows, vocab}, dt, 5.0);
      std::vector<double> vals = x.vals;
      // Row r gets a tie for the maximum at two places: the lower index must win.
      std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t a = pick(h.rng()), b = pick(h.rng());
        vals[size_t(r * vocab + a)] = vals[size_t(r * vocab + b)] = 64.0 + double(r);
      }
      Tensor logits = h.upload(vals, {rows, vocab}, dt);
      Tensor out = h.poisoned({rows}, DType::kI32);
      argmax(h.stream(), logits, out);
      std::vector<double> ref(static_cast<size_t>(rows)), mag(static_cast<size_t>(rows), 1.0);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t best = 0;  // first index of the maximum, found by a different scan
        double mx = -INFINITY;
        for (int64_t i = vocab - 1; i >= 0; --i)
          if (vals[size_t(r * vocab + i)] >= mx) mx = vals[size_t(r * vocab + i)], best = i;
        ref[size_t(r)] = double(best);
      }
      h.compare("argmax", cfg, out, ref, 0.0, mag);
    });
  }
}

}  // namespace vt::check
