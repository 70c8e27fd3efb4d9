// The CUDA preamble and kv_cache_write on column slices of one fused qkv output (as the
// attention layer passes them: features contiguous, row stride q + 2 kv) against the CPU
// ops on the same slices. Skipped, not passed, without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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

// The cache write folded into the preamble (KvCacheWrite, as the attention layer calls it
// with device slots): q, k and gate byte-equal to the preamble alone, and the caches
// byte-equal to kv_cache_write of that k_out and v (on the CPU, from the GPU's k_out);
// the CPU arm byte-equal to its two ops in a row. A padding slot -1 leaves its old
// cache rows; f32 k_out into a bf16 cache converts as kv_cache_write does.
TEST(CudaAttnSlices, PreambleWithFoldedCacheWriteMatchesTheTwoOps) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t T, hq, hkv, d, rotary;
    bool gated;
    DType dtype, cache;
  };
  const Case cases[] = {
      {1, 16, 4, 256, 64, true, DType::kBF16, DType::kBF16},  // 9B decode
      {8, 16, 4, 256, 64, true, DType::kBF16, DType::kBF16},
      {5, 16, 8, 128, 128, false, DType::kF32, DType::kBF16},
      {3, 4, 2, 68, 20, true, DType::kF16, DType::kF16},
  };
  uint64_t seed = 700;
  for (const Case& c : cases) {
    const std::string what = std::string(dtype_name(c.dtype)) + " T " + std::to_string(c.T) +
                             " d " + std::to_string(c.d) + " folded cache write";
    const int64_t qw = c.hq * c.d * (c.gated ? 2 : 1), kw = c.hkv * c.d;
    const Tensor qkv = randn({c.T, qw + 2 * kw}, c.dtype, 2.0, seed++);
    const Tensor qw_n = randn({c.d}, DType::kBF16, 0.3, seed++);
    const Tensor kw_n = randn({c.d}, DType::kBF16, 0.3, seed++);
    Tensor pos = Tensor::empty({c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t) pos.data<int64_t>()[t] = 700 + 3 * t;
    const Tensor cs = rope_cos_sin_table(pos, c.rotary, 1e7);
    const int64_t blocks = c.T + 3, bs = 16;
    Tensor slots = Tensor::empty({c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t) slots.data<int64_t>()[t] = (t * 41 + 7) % (blocks * bs);
    if (c.T > 2) slots.data<int64_t>()[1] = -1;
    const Tensor kc0 = randn({blocks, bs, c.hkv, c.d}, c.cache, 1.0, seed++);
    const Tensor vc0 = randn({blocks, bs, c.hkv, c.d}, c.cache, 1.0, seed++);
    const Tensor v = qkv.slice(1, qw + kw, qw + 2 * kw).reshape({c.T, c.hkv, c.d});
    const auto copy_of = [](const Tensor& t) {  // a fresh CPU buffer (contiguous() aliases)
      Tensor o = Tensor::empty(t.shape(), t.dtype());
      std::memcpy(o.data_ptr(), t.data_ptr(), t.nbytes());
      return o;
    };
    const auto outs = [&](Streams& st, bool gpu) {
      std::vector<Tensor> o = {Tensor::empty({c.T, c.hq, c.d}, c.dtype),
                               Tensor::empty({c.T, c.hkv, c.d}, c.dtype),
                               c.gated ? Tensor::empty({c.T, c.hq, c.d}, c.dtype) : Tensor()};
      if (gpu)
        for (Tensor& t : o)
          if (t.defined()) t = poisoned_gpu(st, t.shape(), t.dtype());
      return o;
    };

    // CPU: the folded call against the two ops in a row.
    std::vector<Tensor> sep = outs(s, false), fold = outs(s, false);
    Tensor kc_sep = copy_of(kc0), vc_sep = copy_of(vc0);
    Tensor kc_fold = copy_of(kc0), vc_fold = copy_of(vc0);
    attn_qk_norm_rope_gate(s.cpu, qkv.slice(1, 0, qw), qkv.slice(1, qw, qw + kw), qw_n, kw_n, 1e-6f,
                           RmsNormKind::kOnePlus, cs, sep[0], sep[1], sep[2]);
    kv_cache_write(s.cpu, sep[1], v, slots, kc_sep, vc_sep);
    attn_qk_norm_rope_gate(s.cpu, qkv.slice(1, 0, qw), qkv.slice(1, qw, qw + kw), qw_n, kw_n, 1e-6f,
                           RmsNormKind::kOnePlus, cs, fold[0], fold[1], fold[2],
                           {v, slots, kc_fold, vc_fold});
    expect_close(s, kc_sep, kc_fold, 0, 0, what + ": CPU k_cache");
    expect_close(s, vc_sep, vc_fold, 0, 0, what + ": CPU v_cache");
    expect_close(s, sep[1], fold[1], 0, 0, what + ": CPU k_out");

    // GPU: the folded call against the preamble alone and the CPU cache write of its k_out.
    const Tensor qkv_g = s.up(qkv), cs_g = s.up(cs), qw_g = s.up(qw_n), kw_g = s.up(kw_n);
    const Tensor v_g = qkv_g.slice(1, qw + kw, qw + 2 * kw).reshape({c.T, c.hkv, c.d});
    std::vector<Tensor> alone = outs(s, true), fold_g = outs(s, true);
    attn_qk_norm_rope_gate(s.gpu, qkv_g.slice(1, 0, qw), qkv_g.slice(1, qw, qw + kw), qw_g, kw_g,
                           1e-6f, RmsNormKind::kOnePlus, cs_g, alone[0], alone[1], alone[2]);
    Tensor kc_g = s.up(kc0), vc_g = s.up(vc0);
    attn_qk_norm_rope_gate(s.gpu, qkv_g.slice(1, 0, qw), qkv_g.slice(1, qw, qw + kw), qw_g, kw_g,
                           1e-6f, RmsNormKind::kOnePlus, cs_g, fold_g[0], fold_g[1], fold_g[2],
                           {v_g, s.up(slots), kc_g, vc_g});
    for (size_t i = 0; i < alone.size(); ++i)
      if (alone[i].defined())
        expect_close(s, s.down(alone[i]), fold_g[i], 0, 0, what + ": output " + std::to_string(i));
    Tensor kc_want = copy_of(kc0), vc_want = copy_of(vc0);
    kv_cache_write(s.cpu, s.down(fold_g[1]), v, slots, kc_want, vc_want);
    expect_close(s, kc_want, kc_g, 0, 0, what + ": GPU k_cache");
    expect_close(s, vc_want, vc_g, 0, 0, what + ": GPU v_cache");
  }
}

}  // namespace
}  // namespace vt
