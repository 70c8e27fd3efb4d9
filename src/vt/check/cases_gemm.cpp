// Checks of vt/ops/gemm.h and vt/ops/embedding.h against double-precision references.
#include <cmath>

#include "vt/check/cases.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gemm.h"

namespace vt::check {

void check_gemm(Harness& h) {
  struct Case {
    int64_t m, k, n;
    DType x, w, out;
    bool bias;
  };
  const Case cases[] = {
      {1, 67, 45, DType::kF32, DType::kF32, DType::kF32, false},
      {13, 129, 37, DType::kF32, DType::kBF16, DType::kF32, true},
      {70, 300, 33, DType::kBF16, DType::kBF16, DType::kBF16, false},
      {6, 255, 19, DType::kF32, DType::kF16, DType::kF32, false},
      {130, 64, 129, DType::kF16, DType::kF32, DType::kF32, true},
  };
  for (const Case& c : cases) {
    std::string cfg = "x " + std::string(dtype_name(c.x)) + shape_str({c.m, c.k}) + " w " +
                      dtype_name(c.w) + shape_str({c.n, c.k}) + (c.bias ? " +bias" : "") + " -> " +
                      dtype_name(c.out);
    h.run("linear", cfg, /*cuda_arm=*/true, [&] {
      auto x = h.random({c.m, c.k}, c.x), w = h.random({c.n, c.k}, c.w, 0.2);
      Harness::Input b;
      if (c.bias) b = h.random({c.n}, DType::kF32);
      Tensor out = h.poisoned({c.m, c.n}, c.out);
      linear(h.stream(), x.t, w.t, out, b.t);
      std::vector<double> ref(size_t(c.m * c.n)), mag(ref.size());
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double acc = c.bias ? b.vals[size_t(j)] : 0.0, m = std::fabs(acc);
          for (int64_t l = 0; l < c.k; ++l) {
            double p = x.vals[size_t(i * c.k + l)] * w.vals[size_t(j * c.k + l)];
            acc += p;
            m += std::fabs(p);
          }
          ref[size_t(i * c.n + j)] = acc;
          // f32 sums err relative to the sum of |terms|; a narrow out rounds relative to |acc|.
          mag[size_t(i * c.n + j)] =
              c.out == DType::kF32 ? m : std::max(std::fabs(acc), m * tolerance(DType::kF32) / tolerance(c.out));
        }
      h.compare("linear", cfg, out, ref, tolerance(c.out), mag);
    });
  }
  {
    const int64_t m = 5, k = 23, n = 17;
    std::string cfg = "a f32[5, 23] . b bf16[23, 17] (b transposed view) -> f32";
    h.run("matmul", cfg, /*cuda_arm=*/true, [&] {
      auto a = h.random({m, k}, DType::kF32), bt = h.random({n, k}, DType::kBF16);
      Tensor b = bt.t.transpose(0, 1);  // [k, n], non-contiguous
      Tensor out = h.poisoned({m, n}, DType::kF32);
      matmul(h.stream(), a.t, b, out);
      std::vector<double> ref(size_t(m * n)), mag(ref.size());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t l = 0; l < k; ++l) {
            double p = a.vals[size_t(i * k + l)] * bt.vals[size_t(j * k + l)];
            ref[size_t(i * n + j)] += p;
            mag[size_t(i * n + j)] += std::fabs(p);
          }
      h.compare("matmul", cfg, out, ref, tolerance(DType::kF32), mag);
    });
  }
}

void check_embedding(Harness& h) {
  struct Case {
    DType table_dt, ids_dt, out_dt;
  };
  for (const Case& c : {Case{DType::kBF16, DType::kI32, DType::kF32}, Case{DType::kF32, DType::kI64, DType::kBF16}}) {
    const DType table_dt = c.table_dt, ids_dt = c.ids_dt, out_dt = c.out_dt;
    const int64_t vocab = 37, hidden = 19, tokens = 11;
    std::string cfg = "table " + std::string(dtype_name(table_dt)) + shape_str({vocab, hidden}) + " ids " +
                      dtype_name(ids_dt) + "[11] -> " + dtype_name(out_dt);
    h.run("embedding", cfg, /*cuda_arm=*/true, [&] {
      auto table = h.random({vocab, hidden}, table_dt);
      std::vector<double> ids(static_cast<size_t>(tokens));
      std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
      for (double& id : ids) id = double(pick(h.rng()));
      ids[0] = vocab - 1;  // the edges of the table
      ids[1] = 0;
      Tensor idt = h.upload(ids, {tokens}, ids_dt);
      Tensor out = h.poisoned({tokens, hidden}, out_dt);
      embedding(h.stream(), table.t, idt, out);
      std::vector<double> ref(size_t(tokens * hidden));
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t i = 0; i < hidden; ++i)
          ref[size_t(t * hidden + i)] = table.vals[size_t(int64_t(ids[size_t(t)]) * hidden + i)];
      h.compare("embedding", cfg, out, ref, tolerance(out_dt));
    });
  }
}

}  // namespace vt::check
