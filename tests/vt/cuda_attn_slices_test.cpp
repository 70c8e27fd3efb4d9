// The CUDA preamble and kv_cache_write on column slices of one fused qkv output (as the
// attention layer passes them: features contiguous, row stride q + 2 kv) against the CPU
// ops on the same slices. Skipped, not passed, without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "cuda_compare.h"
#include "vt/ops/attention.h"
#include "vt/ops/attn_preamble.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

TEST(CudaAttnSlices, PreambleAndCacheWriteOnFusedQkvSlicesMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t T, hq, hkv, d, rotary;
    bool gated;
    DType dtype;
    RmsNormKind kind;
  };
  const Case cases[] = {
      {1, 16, 4, 256, 64, true, DType::kBF16, RmsNormKind::kOnePlus},   // 9B shape, decode
      {33, 24, 4, 256, 64, true, DType::kBF16, RmsNormKind::kOnePlus},  // 27B shape, prefill
      {7, 16, 8, 128, 128, false, DType::kF32, RmsNormKind::kPlain},    // Qwen3, f32
      // head_dim 68: the cache write's converting kernel on bf16 slices (runs of 8 dims
      // do not tile a head), rotate-half partners 10 dims apart in the preamble.
      {3, 4, 2, 68, 20, true, DType::kBF16, RmsNormKind::kPlain},
  };
  uint64_t seed = 500;
  for (const Case& c : cases) {
    const std::string what = std::string(dtype_name(c.dtype)) + " T " + std::to_string(c.T) +
                             " hq " + std::to_string(c.hq);
    const int64_t qw = c.hq * c.d * (c.gated ? 2 : 1), kw = c.hkv * c.d;
    const Tensor qkv = randn({c.T, qw + 2 * kw}, c.dtype, 2.0, seed++);
    const Tensor qw_n = randn({c.d}, DType::kBF16, 0.3, seed++);
    const Tensor kw_n = randn({c.d}, DType::kBF16, 0.3, seed++);
    Tensor pos = Tensor::empty({3, c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t a = 0; a < 3; ++a) pos.data<int64_t>()[a * c.T + t] = 300 + t * (a + 1);
    const Tensor cs = c.rotary == 64 ? rope_cos_sin_table(pos, c.rotary, 1e7, {11, 11, 10})
                                     : rope_cos_sin_table(pos.select(0, 0), c.rotary, 1e6);
    const Tensor qkv_g = s.up(qkv), cs_g = s.up(cs);

    Tensor qo = Tensor::empty({c.T, c.hq, c.d}, c.dtype),
           ko = Tensor::empty({c.T, c.hkv, c.d}, c.dtype);
    Tensor go = c.gated ? Tensor::empty({c.T, c.hq, c.d}, c.dtype) : Tensor();
    attn_qk_norm_rope_gate(s.cpu, qkv.slice(1, 0, qw), qkv.slice(1, qw, qw + kw), qw_n, kw_n, 1e-6f,
                           c.kind, cs, qo, ko, go);
    Tensor qo_g = poisoned_gpu(s, {c.T, c.hq, c.d}, c.dtype);
    Tensor ko_g = poisoned_gpu(s, {c.T, c.hkv, c.d}, c.dtype);
    Tensor go_g = c.gated ? poisoned_gpu(s, {c.T, c.hq, c.d}, c.dtype) : Tensor();
    attn_qk_norm_rope_gate(s.gpu, qkv_g.slice(1, 0, qw), qkv_g.slice(1, qw, qw + kw), s.up(qw_n),
                           s.up(kw_n), 1e-6f, c.kind, cs_g, qo_g, ko_g, go_g);
    // The tolerances of CudaAttnPreamble.FusedNormRopeGateMatchesCpu (a chain of bf16
    // roundings; the rotation's sum can cancel).
    const bool f32 = c.dtype == DType::kF32;
    const double rel = f32 ? 1e-5 : cudatest::kBf16ChainRel, abs = f32 ? 1e-6 : cudatest::kBf16Rel;
    expect_close(s, qo, qo_g, rel, abs, what + ": q_out");
    expect_close(s, ko, ko_g, rel, abs, what + ": k_out");
    if (c.gated) expect_close(s, go, go_g, rel, 1e-6, what + ": gate_out");

    // K from the CPU preamble on both sides, V a slice of qkv; scattered slots, a padding -1.
    const int64_t blocks = 2 * c.T + 3, bs = 16;
    Tensor slots = Tensor::empty({c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t) slots.data<int64_t>()[t] = (t * 37 + 5) % (blocks * bs);
    if (c.T > 2) slots.data<int64_t>()[2] = -1;
    Tensor kc = randn({blocks, bs, c.hkv, c.d}, c.dtype, 1.0, seed++);
    Tensor vc = randn({blocks, bs, c.hkv, c.d}, c.dtype, 1.0, seed++);
    Tensor kc_g = s.up(kc), vc_g = s.up(vc);
    const Tensor v = qkv.slice(1, qw + kw, qw + 2 * kw).reshape({c.T, c.hkv, c.d});
    const Tensor v_g = qkv_g.slice(1, qw + kw, qw + 2 * kw).reshape({c.T, c.hkv, c.d});
    kv_cache_write(s.cpu, ko, v, slots, kc, vc);
    kv_cache_write(s.gpu, s.up(ko), v_g, slots, kc_g, vc_g);
    expect_close(s, kc, kc_g, 0, 0, what + ": k_cache");
    expect_close(s, vc, vc_g, 0, 0, what + ": v_cache");
  }
}

}  // namespace
}  // namespace vt
