// The attention layer's fused qkv projection hands column slices of one [T, q + 2 kv]
// output to attn_qk_norm_rope_gate (qg, k) and kv_cache_write (v, as [T, Hkv, D]): on the
// CPU, slices (features contiguous, row stride q + 2 kv) give the bytes that contiguous
// copies of the same values give, and the stacked projection's columns are the bytes of
// the three separate projections (the CPU model's outputs stay bit for bit).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cuda_compare.h"
#include "vt/ops/attention.h"
#include "vt/ops/attn_preamble.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"

namespace vt {
namespace {

// Random normals rounded to a dtype, on the CPU (the CUDA tests' helper, host-only).
using cudatest::randn;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.is_contiguous() && b.is_contiguous() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

struct Case {
  int64_t T, hq, hkv, d, rotary;
  bool gated;
  DType dtype;
  RmsNormKind kind;
};

TEST(AttnSlices, PreambleAndCacheWriteReadRowStridedSlices) {
  Stream s(Device::cpu());
  const Case cases[] = {{5, 4, 2, 256, 64, true, DType::kBF16, RmsNormKind::kOnePlus},
                        {3, 6, 3, 128, 128, false, DType::kF32, RmsNormKind::kPlain},
                        {1, 8, 2, 64, 32, true, DType::kF16, RmsNormKind::kOnePlus}};
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const std::string what = std::string(dtype_name(c.dtype)) + " d " + std::to_string(c.d);
    const int64_t qw = c.hq * c.d * (c.gated ? 2 : 1), kw = c.hkv * c.d;
    const Tensor qkv = randn({c.T, qw + 2 * kw}, c.dtype, 2.0f, seed++);
    const Tensor qg = qkv.slice(1, 0, qw), k = qkv.slice(1, qw, qw + kw);
    const Tensor v = qkv.slice(1, qw + kw, qw + 2 * kw).reshape({c.T, c.hkv, c.d});
    if (c.T > 1) {
      EXPECT_FALSE(qg.is_contiguous()) << what;
    }
    const Tensor qw_n = randn({c.d}, DType::kBF16, 0.3f, seed++);
    const Tensor kw_n = randn({c.d}, DType::kBF16, 0.3f, seed++);
    Tensor pos = Tensor::empty({c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t) pos.data<int64_t>()[t] = 100 + 7 * t;
    const Tensor cs = rope_cos_sin_table(pos, c.rotary, 1e7);

    auto run_preamble = [&](const Tensor& qg_in, const Tensor& k_in, Tensor& qo, Tensor& ko,
                            Tensor& go) {
      qo = Tensor::empty({c.T, c.hq, c.d}, c.dtype);
      ko = Tensor::empty({c.T, c.hkv, c.d}, c.dtype);
      go = c.gated ? Tensor::empty({c.T, c.hq, c.d}, c.dtype) : Tensor();
      attn_qk_norm_rope_gate(s, qg_in, k_in, qw_n, kw_n, 1e-6f, c.kind, cs, qo, ko, go);
    };
    Tensor qo, ko, go, qo_c, ko_c, go_c;
    run_preamble(qg, k, qo, ko, go);
    run_preamble(contiguous(s, qg), contiguous(s, k), qo_c, ko_c, go_c);
    EXPECT_TRUE(same_bytes(qo, qo_c)) << what << ": q_out";
    EXPECT_TRUE(same_bytes(ko, ko_c)) << what << ": k_out";
    if (c.gated) {
      EXPECT_TRUE(same_bytes(go, go_c)) << what << ": gate_out";
    }

    // Slots scattered over 4 blocks of 4; one padding token (-1) when T > 1.
    const int64_t blocks = 4, bs = 4;
    Tensor slots = Tensor::empty({c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t) slots.data<int64_t>()[t] = (t * 5 + 3) % (blocks * bs);
    if (c.T > 1) slots.data<int64_t>()[1] = -1;
    auto run_write = [&](const Tensor& v_in, Tensor& kc, Tensor& vc) {
      kc = randn({blocks, bs, c.hkv, c.d}, c.dtype, 1.0f, 99);
      vc = randn({blocks, bs, c.hkv, c.d}, c.dtype, 1.0f, 98);
      kv_cache_write(s, ko, v_in, slots, kc, vc);
    };
    Tensor kc, vc, kc_c, vc_c;
    run_write(v, kc, vc);
    run_write(contiguous(s, v), kc_c, vc_c);
    EXPECT_TRUE(same_bytes(kc, kc_c)) << what << ": k_cache";
    EXPECT_TRUE(same_bytes(vc, vc_c)) << what << ": v_cache";
    // The written rows hold v's values (the slice was read, not its neighbours).
    const int64_t row = c.hkv * c.d * int64_t(dtype_size(c.dtype));
    const int64_t slot0 = slots.data<int64_t>()[0];
    EXPECT_EQ(std::memcmp(static_cast<const char*>(vc.data_ptr()) + slot0 * row,
                          contiguous(s, v).data_ptr(), size_t(row)),
              0)
        << what;
  }
}

TEST(AttnSlices, StackedProjectionEqualsSeparateOnCpu) {
  Stream s(Device::cpu());
  uint64_t seed = 50;
  for (DType dt : {DType::kF32, DType::kBF16})
    for (int64_t T : {1, 5, 70}) {
      const int64_t hidden = 96, qn = 2 * 4 * 32, kn = 2 * 32;
      const Tensor x = randn({T, hidden}, dt, 1.0f, seed++);
      const Tensor wq = randn({qn, hidden}, DType::kBF16, 0.1f, seed++);
      const Tensor wk = randn({kn, hidden}, DType::kBF16, 0.1f, seed++);
      const Tensor wv = randn({kn, hidden}, DType::kBF16, 0.1f, seed++);
      Tensor w = Tensor::empty({qn + 2 * kn, hidden}, DType::kBF16);
      Tensor wq_rows = w.slice(0, 0, qn), wk_rows = w.slice(0, qn, qn + kn);
      Tensor wv_rows = w.slice(0, qn + kn, qn + 2 * kn);
      copy(s, wq, wq_rows);
      copy(s, wk, wk_rows);
      copy(s, wv, wv_rows);
      Tensor all = Tensor::empty({T, qn + 2 * kn}, dt);
      linear(s, x, w, all);
      const Tensor* ws[] = {&wq, &wk, &wv};
      const int64_t starts[] = {0, qn, qn + kn};
      for (int i = 0; i < 3; ++i) {
        Tensor one = Tensor::empty({T, ws[i]->size(0)}, dt);
        linear(s, x, *ws[i], one);
        EXPECT_TRUE(
            same_bytes(one, contiguous(s, all.slice(1, starts[i], starts[i] + ws[i]->size(0)))))
            << dtype_name(dt) << " T " << T << " projection " << i;
      }
    }
}

}  // namespace
}  // namespace vt
