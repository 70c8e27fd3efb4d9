// The CUDA attention ops against their CPU twins: the fused preamble, the KV-cache
// write and paged attention (GQA, scattered blocks, context + new tokens, decode with
// split-K over a long context), at Qwen3.5 sizes (head_dim 256) and Qwen3's (128), and
// at every other kind of head size (kHeadDims: the padded kernels).
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "cuda_compare.h"
#include "vt/ops/attention.h"
#include "vt/ops/attn_preamble.h"
#include "vt/ops/copy.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

TEST(CudaAttnPreamble, FusedNormRopeGateMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t T, hq, hkv, d, rotary;
    bool gated;
    DType in, out;
    RmsNormKind kind;
  };
  const Case cases[] = {
      {37, 24, 4, 256, 64, true, DType::kBF16, DType::kBF16, RmsNormKind::kOnePlus},  // 27B
      {19, 16, 8, 128, 128, false, DType::kBF16, DType::kF32, RmsNormKind::kPlain},   // Qwen3
      // One decode token and a small batch at the 9B shape: a warp per head, every
      // load before a store (preamble.cu).
      {1, 16, 4, 256, 64, true, DType::kBF16, DType::kBF16, RmsNormKind::kOnePlus},
      {8, 16, 4, 256, 64, true, DType::kBF16, DType::kBF16, RmsNormKind::kOnePlus},
      // The other register widths: head_dim 40 (2 dims a lane, the last lanes idle,
      // rotate-half partners 20 apart: another lane) and 512 (16 a lane), f16 and f32.
      {3, 5, 1, 40, 40, true, DType::kF16, DType::kF16, RmsNormKind::kPlain},
      {2, 8, 2, 512, 128, false, DType::kF32, DType::kF32, RmsNormKind::kOnePlus},
  };
  uint64_t seed = 100;
  for (const Case& c : cases) {
    const int64_t per = c.gated ? 2 * c.d : c.d;
    Tensor qg = randn({c.T, c.hq * per}, c.in, 2.0, seed++);
    Tensor k = randn({c.T, c.hkv * c.d}, c.in, 2.0, seed++);
    Tensor qw = randn({c.d}, DType::kBF16, 0.3, seed++), kw = randn({c.d}, DType::kBF16, 0.3, seed++);
    Tensor pos = Tensor::empty({3, c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t a = 0; a < 3; ++a) pos.data<int64_t>()[a * c.T + t] = 5000 + t * (a + 1);
    Tensor cs = c.rotary == 64 ? rope_cos_sin_table(pos, c.rotary, 1e7, {11, 11, 10})
                               : rope_cos_sin_table(pos.select(0, 0), c.rotary, 1e6);
    Tensor qo = Tensor::empty({c.T, c.hq, c.d}, c.out), ko = Tensor::empty({c.T, c.hkv, c.d}, c.out);
    Tensor go = c.gated ? Tensor::empty({c.T, c.hq, c.d}, c.out) : Tensor();
    attn_qk_norm_rope_gate(s.cpu, qg, k, qw, kw, 1e-6f, c.kind, cs, qo, ko, go);
    Tensor qo_g = poisoned_gpu(s, {c.T, c.hq, c.d}, c.out);
    Tensor ko_g = poisoned_gpu(s, {c.T, c.hkv, c.d}, c.out);
    Tensor go_g = c.gated ? poisoned_gpu(s, {c.T, c.hq, c.d}, c.out) : Tensor();
    attn_qk_norm_rope_gate(s.gpu, s.up(qg), s.up(k), s.up(qw), s.up(kw), 1e-6f, c.kind, s.up(cs),
                           qo_g, ko_g, go_g);
    // bf16: a chain of roundings, and the rotation's sum can cancel, so a one-ulp
    // difference of a rounded product is absolute, about 2^-8 of the head's scale.
    const double rel = c.out == DType::kF32 ? 1e-5 : cudatest::kBf16ChainRel;
    const double abs = c.out == DType::kF32 ? 1e-6 : kBf16Rel;
    expect_close(s, qo, qo_g, rel, abs, "preamble q d" + std::to_string(c.d));
    expect_close(s, ko, ko_g, rel, abs, "preamble k d" + std::to_string(c.d));
    if (c.gated) expect_close(s, go, go_g, rel, 1e-6, "preamble gate");
  }
}

// kv_cache_write's two kernels (preamble.cu): the 16-byte copy (k, v and the caches
// one 16-bit dtype, runs aligned) and the converting one (an f32 k and v into a bf16
// cache; a head_dim that is not a multiple of 8), at one decode token and a batch,
// scattered slots and a padding -1: bit for bit the CPU op's (one rounding each side).
TEST(CudaKvCacheWrite, CopyAndConvertPathsMatchCpuBitForBit) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t T, hkv, d;
    DType in, cache;
  };
  const Case cases[] = {{1, 4, 256, DType::kBF16, DType::kBF16},
                        {37, 4, 256, DType::kBF16, DType::kBF16},
                        {1, 4, 256, DType::kF32, DType::kBF16},
                        {9, 2, 68, DType::kF16, DType::kF16},
                        {5, 8, 128, DType::kF32, DType::kF32}};
  uint64_t seed = 150;
  for (const Case& c : cases) {
    const std::string what = "kv_cache_write T " + std::to_string(c.T) + " d " +
                             std::to_string(c.d) + " " + dtype_name(c.in) + " into " +
                             dtype_name(c.cache);
    const int64_t blocks = c.T + 4, bs = 16;
    Tensor slots = Tensor::empty({c.T}, DType::kI64);
    for (int64_t t = 0; t < c.T; ++t) slots.data<int64_t>()[t] = (t * 53 + 11) % (blocks * bs);
    if (c.T > 3) slots.data<int64_t>()[3] = -1;
    const Tensor k = randn({c.T, c.hkv, c.d}, c.in, 1.5, seed++);
    const Tensor v = randn({c.T, c.hkv, c.d}, c.in, 1.5, seed++);
    Tensor kc = randn({blocks, bs, c.hkv, c.d}, c.cache, 1.0, seed++);
    Tensor vc = randn({blocks, bs, c.hkv, c.d}, c.cache, 1.0, seed++);
    Tensor kc_g = s.up(kc), vc_g = s.up(vc);
    kv_cache_write(s.cpu, k, v, slots, kc, vc);
    kv_cache_write(s.gpu, s.up(k), s.up(v), slots, kc_g, vc_g);
    expect_close(s, kc, kc_g, 0, 0, what + ": k_cache");
    expect_close(s, vc, vc_g, 0, 0, what + ": v_cache");
  }
}

// A paged batch: request b has ctx[b] cached tokens and qlen[b] new ones; blocks are
// a random permutation of the cache's, so every request's blocks are scattered.
struct Batch {
  Tensor qsl, seq_lens, block_table, slot_mapping;
  int64_t tokens = 0;
};

Batch make_batch(const std::vector<int64_t>& ctx, const std::vector<int64_t>& qlen,
                 int64_t block_size, int64_t num_blocks, uint64_t seed) {
  const int64_t B = int64_t(ctx.size());
  int64_t max_blocks = 0;
  for (int64_t b = 0; b < B; ++b)
    max_blocks = std::max(max_blocks, (ctx[size_t(b)] + qlen[size_t(b)] + block_size - 1) / block_size);
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(unsigned(seed)));
  Batch r;
  r.qsl = Tensor::empty({B + 1}, DType::kI32);
  r.seq_lens = Tensor::empty({B}, DType::kI32);
  r.block_table = Tensor::empty({B, max_blocks}, DType::kI32);
  size_t next = 0;
  r.qsl.data<int32_t>()[0] = 0;
  for (int64_t b = 0; b < B; ++b) {
    r.seq_lens.data<int32_t>()[b] = int32_t(ctx[size_t(b)] + qlen[size_t(b)]);
    r.qsl.data<int32_t>()[b + 1] = int32_t(r.qsl.data<int32_t>()[b] + qlen[size_t(b)]);
    for (int64_t i = 0; i < max_blocks; ++i) {
      if (next >= perm.size()) {
        ADD_FAILURE() << "the test's cache has too few blocks";
        return r;
      }
      r.block_table.data<int32_t>()[b * max_blocks + i] = perm[next++];
    }
  }
  r.tokens = r.qsl.data<int32_t>()[B];
  r.slot_mapping = Tensor::empty({r.tokens}, DType::kI64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < qlen[size_t(b)]; ++j) {
      const int64_t pos = ctx[size_t(b)] + j;
      r.slot_mapping.data<int64_t>()[r.qsl.data<int32_t>()[b] + j] =
          int64_t(r.block_table.data<int32_t>()[b * max_blocks + pos / block_size]) * block_size +
          pos % block_size;
    }
  return r;
}

void run_attention_case(Streams& s, const std::vector<int64_t>& ctx, const std::vector<int64_t>& qlen,
                        int64_t hq, int64_t hkv, int64_t d, DType cache_dt, DType q_dt,
                        uint64_t seed, const std::string& what) {
  const int64_t block_size = 16;
  int64_t widest = 0;  // every request gets the widest request's block count
  for (size_t b = 0; b < ctx.size(); ++b)
    widest = std::max(widest, (ctx[b] + qlen[b] + block_size - 1) / block_size);
  const int64_t num_blocks = int64_t(ctx.size()) * widest + 3;
  Batch bt = make_batch(ctx, qlen, block_size, num_blocks, seed);
  // The cache starts random (the context), then this step's keys are written.
  Tensor kc = randn({num_blocks, block_size, hkv, d}, cache_dt, 1.0, seed + 1);
  Tensor vc = randn({num_blocks, block_size, hkv, d}, cache_dt, 1.0, seed + 2);
  Tensor kc_g = s.up(kc), vc_g = s.up(vc);
  Tensor k = randn({bt.tokens, hkv, d}, q_dt, 1.0, seed + 3), v = randn({bt.tokens, hkv, d}, q_dt, 1.0, seed + 4);
  kv_cache_write(s.cpu, k, v, bt.slot_mapping, kc, vc);
  kv_cache_write(s.gpu, s.up(k), s.up(v), bt.slot_mapping, kc_g, vc_g);
  expect_close(s, kc, kc_g, 0, 0, what + ": k_cache after kv_cache_write");
  expect_close(s, vc, vc_g, 0, 0, what + ": v_cache after kv_cache_write");
  // q as a strided view (a [T, Hq, D] slice of wider rows), as a fused projection gives.
  Tensor qbig = randn({bt.tokens, hq, d + 32}, q_dt, 1.0, seed + 5);
  Tensor q = qbig.slice(2, 0, d);
  const float scale = 1.0f / std::sqrt(float(d));
  Tensor want = Tensor::empty({bt.tokens, hq, d}, DType::kF32);
  paged_attention(s.cpu, q, kc, vc, bt.qsl, bt.seq_lens, bt.block_table, scale, want);
  Tensor got = poisoned_gpu(s, {bt.tokens, hq, d}, DType::kF32);
  paged_attention(s.gpu, s.up(qbig).slice(2, 0, d), kc_g, vc_g, bt.qsl, bt.seq_lens,
                  bt.block_table, scale, got);
  // f32 scores and weighted sums over up to a few thousand keys in another order.
  expect_close(s, want, got, 2e-5, 2e-5, what + " (f32 out)");
  Tensor got16 = poisoned_gpu(s, {bt.tokens, hq, d}, DType::kBF16);
  paged_attention(s.gpu, s.up(qbig).slice(2, 0, d), kc_g, vc_g, bt.qsl, bt.seq_lens,
                  bt.block_table, scale, got16);
  // bf16 out rounds each softmax weight before P.V (vt/ops/attention.h): 2^-9-relative
  // errors in the weights move an output by up to 2^-9 of the |v| it averages, several
  // times the output's rms when many keys mix (the H200 run: 0.009 rms at worst of 688K
  // elements), absolute, against the unrounded f32 reference: 2^-5 rms.
  expect_close(s, want, got16, kBf16Rel, 4 * kBf16Rel, what + " (bf16 out)");
}

TEST(CudaPagedAttention, PrefillWithContextAndDecodeHeadDim256) {
  VT_REQUIRE_GPU();
  Streams s;
  // Qwen3.5-27B: 24 query heads on 4 kv heads (groups of 6), head_dim 256.
  run_attention_case(s, {0, 40, 300, 7}, {77, 1, 33, 1}, 24, 4, 256, DType::kBF16, DType::kBF16,
                     200, "d256 gqa6 mixed prefill/decode");
  // Qwen3.5-35B-A3B: 16 on 2 (groups of 8).
  run_attention_case(s, {100, 0}, {5, 16}, 16, 2, 256, DType::kBF16, DType::kF32, 210,
                     "d256 gqa8");
}

TEST(CudaPagedAttention, HeadDim128AndOtherCacheDtypes) {
  VT_REQUIRE_GPU();
  Streams s;
  run_attention_case(s, {13, 0, 64}, {3, 50, 1}, 32, 8, 128, DType::kBF16, DType::kBF16, 300,
                     "d128 gqa4");
  run_attention_case(s, {20}, {20}, 8, 8, 128, DType::kF32, DType::kF32, 310, "d128 mha f32 cache");
  run_attention_case(s, {9}, {40}, 40, 2, 64, DType::kF16, DType::kF16, 320, "d64 gqa20 f16 cache");
}

TEST(CudaPagedAttention, LongContextDecodeUsesSplitK) {
  VT_REQUIRE_GPU();
  Streams s;
  // One or two decode requests over thousands of keys: too few CTAs without split-K.
  run_attention_case(s, {5000}, {1}, 24, 4, 256, DType::kBF16, DType::kBF16, 400,
                     "d256 decode over 5000 keys");
  run_attention_case(s, {3000, 777}, {1, 2}, 32, 8, 128, DType::kBF16, DType::kBF16, 410,
                     "d128 decode over 3000 and 777 keys");
}

// The tensor-core prefill path (flash_prefill.cuh): q, caches and out all bf16 or all
// f16 and some request with q_len > 1. The CPU op runs with the same out dtype, so both
// round each softmax weight to it before P.V; they still differ where the CUDA weight
// was rounded against a running max below the row's final max, or where a score's
// f32 sum order flips a rounding: each such weight moves by at most one ulp of the
// narrow type (2^-9 relative for bf16), so an output by at most ~2^-9 of the |v| it
// averages, plus one ulp at the final rounding. Tolerance: bf16 rel 2^-7 + 2^-6 rms,
// f16 (8x finer) rel 2^-10 + 2^-9 rms.
void run_flash_case(Streams& s, const std::vector<int64_t>& ctx, const std::vector<int64_t>& qlen,
                    int64_t hq, int64_t hkv, int64_t d, DType dt, int64_t block_size,
                    uint64_t seed, const std::string& what, int64_t q_pad = 32,
                    double abs_scale = 1.0) {
  int64_t widest = 0;
  for (size_t b = 0; b < ctx.size(); ++b)
    widest = std::max(widest, (ctx[b] + qlen[b] + block_size - 1) / block_size);
  const int64_t num_blocks = int64_t(ctx.size()) * widest + 5;
  Batch bt = make_batch(ctx, qlen, block_size, num_blocks, seed);
  Tensor kc = randn({num_blocks, block_size, hkv, d}, dt, 1.0, seed + 1);
  Tensor vc = randn({num_blocks, block_size, hkv, d}, dt, 1.0, seed + 2);
  Tensor kc_g = s.up(kc), vc_g = s.up(vc);
  Tensor k = randn({bt.tokens, hkv, d}, dt, 1.0, seed + 3);
  Tensor v = randn({bt.tokens, hkv, d}, dt, 1.0, seed + 4);
  kv_cache_write(s.cpu, k, v, bt.slot_mapping, kc, vc);
  kv_cache_write(s.gpu, s.up(k), s.up(v), bt.slot_mapping, kc_g, vc_g);
  Tensor qbig = randn({bt.tokens, hq, d + q_pad}, dt, 1.0, seed + 5);
  const float scale = 1.0f / std::sqrt(float(d));
  Tensor want = Tensor::empty({bt.tokens, hq, d}, dt);
  paged_attention(s.cpu, qbig.slice(2, 0, d), kc, vc, bt.qsl, bt.seq_lens, bt.block_table, scale,
                  want);
  Tensor got = poisoned_gpu(s, {bt.tokens, hq, d}, dt);
  paged_attention(s.gpu, s.up(qbig).slice(2, 0, d), kc_g, vc_g, bt.qsl, bt.seq_lens,
                  bt.block_table, scale, got);
  const bool bf16 = dt == DType::kBF16;
  expect_close(s, want, got, bf16 ? 1.0 / 128 : 1.0 / 1024,
               abs_scale * (bf16 ? 1.0 / 64 : 1.0 / 512),
               what + (bf16 ? " (bf16)" : " (f16)") + " block_size " + std::to_string(block_size));
}

TEST(CudaFlashPrefill, HeadDim256Gqa4MixedBatchesWithAndWithoutContext) {
  VT_REQUIRE_GPU();
  Streams s;
  // Qwen3.5 default text shape: 16 query heads on 4 kv heads, head_dim 256.
  for (DType dt : {DType::kBF16, DType::kF16}) {
    for (int64_t bs : {16, 48}) {
      run_flash_case(s, {0, 0, 0, 0}, {2, 17, 64, 333}, 16, 4, 256, dt, bs, 500,
                     "d256 gqa4 fresh prompts");
      // Prefix hits / chunked prefill (context before the queries), and a decode
      // request riding in the same step.
      run_flash_case(s, {5, 300, 1000, 77, 500}, {2, 17, 64, 333, 1}, 16, 4, 256, dt, bs, 510,
                     "d256 gqa4 with context");
    }
  }
}

TEST(CudaFlashPrefill, HeadDim128GqaRatios1And4And8) {
  VT_REQUIRE_GPU();
  Streams s;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    run_flash_case(s, {0, 33}, {64, 17}, 8, 8, 128, dt, 16, 600, "d128 gqa1");
    run_flash_case(s, {0, 129, 0}, {333, 2, 17}, 32, 8, 128, dt, 16, 610, "d128 gqa4");
    run_flash_case(s, {250, 0}, {64, 333}, 32, 4, 128, dt, 64, 620, "d128 gqa8");
  }
  // Groups that do not divide the 64-row tile: 6 (27B) and 20 (head_dim 64).
  run_flash_case(s, {40, 0}, {77, 33}, 24, 4, 256, DType::kBF16, 16, 630, "d256 gqa6");
  run_flash_case(s, {9}, {40}, 40, 2, 64, DType::kF16, 16, 640, "d64 gqa20");
  // q rows 4 elements apart: not 16-byte aligned, so the CUDA-core kernel serves the
  // step (the rule in vt/cuda/attention.h), with the same rounding points.
  run_flash_case(s, {30}, {50}, 16, 4, 256, DType::kBF16, 16, 650, "unaligned q", 4);
}

TEST(CudaFlashPrefill, HeadDim256Gqa8AndSplitKOverLongContext) {
  VT_REQUIRE_GPU();
  Streams s;
  run_flash_case(s, {0, 64}, {333, 64}, 16, 2, 256, DType::kBF16, 16, 700, "d256 gqa8");
  // A short chunk after a long context: few CTAs, so the keys are split (split-K).
  run_flash_case(s, {3000}, {17}, 16, 4, 256, DType::kBF16, 16, 710, "d256 chunk after 3000 keys");
  run_flash_case(s, {5000, 2000}, {2, 64}, 32, 8, 128, DType::kF16, 16, 720,
                 "d128 chunks after 5000 and 2000 keys");
}

// The abs part of the tolerance scales with the output's rms, and averaging thousands
// of random values makes that rms small (0.07 at 4096 keys) while the early rows, which
// average a few dozen keys, keep outputs near |v| ~ 1: there one weight rounded one ulp
// apart moves the output by up to 2^-8 |v|. Seen on the H200 (2026-11-30): 6 of 16.8M
// bf16 elements at up to 1.45x the short cases' bound, the worst in the row of token 43. So
// these cases allow 4x the short cases' abs part.
TEST(CudaFlashPrefill, LongPrompt4096) {
  VT_REQUIRE_GPU();
  Streams s;
  run_flash_case(s, {0}, {4096}, 16, 4, 256, DType::kBF16, 16, 800, "d256 gqa4 4096-token prompt",
                 32, 4.0);
  run_flash_case(s, {1000}, {4096}, 16, 2, 128, DType::kF16, 16, 810,
                 "d128 gqa8 4096 tokens after 1000", 32, 4.0);
}


// Decode steps (every request one token) take the decode kernel (paged_decode.cuh) when
// q, the caches and out share a 16-bit dtype. seq_lens[b] counts the request's keys
// (its new key included, already in the random cache). Checked three ways:
//   host indices, no bounds: against the CPU op with the same out dtype (both round
//     each softmax weight before P.V: the flash cases' tolerance);
//   device indices shaped like a decode graph: `pad` padding requests (one token at
//     seq_len 1 on block 0, as the model runner pads) and `extra` trailing q rows no
//     request owns, bounds {B + pad, 1, max_seq_len x 3}: the real rows equal the host
//     call with the same bounds byte for byte, padding rows are finite, and the rows no
//     request owns are not written (they stay NaN-poisoned: ignored, vt/ops/attention.h);
//   the real rows of that call against the CPU op as well.
void run_decode_case(Streams& s, const std::vector<int64_t>& lens, int64_t hq, int64_t hkv,
                     int64_t d, DType dt, uint64_t seed, const std::string& what, int64_t pad = 3,
                     int64_t extra = 2) {
  const int64_t B = int64_t(lens.size()), block_size = 16;
  std::vector<int64_t> ctx, qlen(size_t(B), 1);
  int64_t widest = 0, max_len = 0;
  for (int64_t n : lens) {
    ctx.push_back(n - 1);
    widest = std::max(widest, (n + block_size - 1) / block_size);
    max_len = std::max(max_len, n);
  }
  const int64_t num_blocks = B * widest + 5;
  Batch bt = make_batch(ctx, qlen, block_size, num_blocks, seed);
  Tensor kc = randn({num_blocks, block_size, hkv, d}, dt, 1.0, seed + 1);
  Tensor vc = randn({num_blocks, block_size, hkv, d}, dt, 1.0, seed + 2);
  Tensor kc_g = s.up(kc), vc_g = s.up(vc);
  const int64_t T = B + pad + extra;
  Tensor qbig = randn({T, hq, d + 16}, dt, 1.0, seed + 5);
  const Tensor q = qbig.slice(2, 0, d).slice(0, 0, B);
  const float scale = 1.0f / std::sqrt(float(d));
  Tensor want = Tensor::empty({B, hq, d}, dt);
  paged_attention(s.cpu, q, kc, vc, bt.qsl, bt.seq_lens, bt.block_table, scale, want);
  const bool bf16 = dt == DType::kBF16;
  const double rel = bf16 ? 1.0 / 128 : 1.0 / 1024, abs = bf16 ? 1.0 / 64 : 1.0 / 512;
  const Tensor qbig_g = s.up(qbig);
  Tensor got = poisoned_gpu(s, {B, hq, d}, dt);
  paged_attention(s.gpu, qbig_g.slice(2, 0, d).slice(0, 0, B), kc_g, vc_g, bt.qsl, bt.seq_lens,
                  bt.block_table, scale, got);
  expect_close(s, want, got, rel, abs, what + " host indices");

  // The graph-shaped call: B + pad requests, T = B + pad + extra q rows.
  const int64_t Bp = B + pad, W = bt.block_table.size(1);
  Tensor qsl = Tensor::empty({Bp + 1}, DType::kI32), sl = Tensor::empty({Bp}, DType::kI32);
  Tensor table = Tensor::empty({Bp, W}, DType::kI32);
  for (int64_t b = 0; b <= Bp; ++b) qsl.data<int32_t>()[b] = int32_t(b);
  for (int64_t b = 0; b < Bp; ++b) {
    sl.data<int32_t>()[b] = b < B ? bt.seq_lens.data<int32_t>()[b] : 1;
    for (int64_t i = 0; i < W; ++i)
      table.data<int32_t>()[b * W + i] = b < B ? bt.block_table.data<int32_t>()[b * W + i] : 0;
  }
  const AttentionBounds bounds{Bp, 1, 3 * max_len};
  Tensor got_dev = poisoned_gpu(s, {T, hq, d}, dt);
  paged_attention(s.gpu, qbig_g.slice(2, 0, d), kc_g, vc_g, s.up(qsl), s.up(sl), s.up(table), scale,
                  got_dev, bounds);
  Tensor got_host = poisoned_gpu(s, {Bp, hq, d}, dt);
  paged_attention(s.gpu, qbig_g.slice(2, 0, d).slice(0, 0, Bp), kc_g, vc_g, qsl, sl, table, scale,
                  got_host, bounds);
  const Tensor dev = to_dtype(s.cpu, s.down(got_dev), DType::kF32);
  const Tensor host = to_dtype(s.cpu, s.down(got_host), DType::kF32);
  const int64_t row = hq * d;
  int64_t differ = 0, not_finite = 0, written = 0;
  for (int64_t i = 0; i < Bp * row; ++i) {
    const float a = dev.data<float>()[i], h = host.data<float>()[i];
    if (std::memcmp(&a, &h, sizeof a) != 0) ++differ;
    if (!std::isfinite(a)) ++not_finite;
  }
  for (int64_t i = Bp * row; i < T * row; ++i) written += !std::isnan(dev.data<float>()[i]);
  EXPECT_EQ(differ, 0) << what << ": device vs host indices with the same bounds";
  EXPECT_EQ(not_finite, 0) << what << ": real and padding rows must be finite";
  EXPECT_EQ(written, 0) << what << ": rows no request owns must stay unwritten";
  expect_close(s, want, dev.slice(0, 0, B), rel, abs, what + " device indices, graph bounds");
}

TEST(CudaPagedDecode, DefaultTextShapeContextEdgesBf16AndF16) {
  VT_REQUIRE_GPU();
  Streams s;
  // Qwen3.5 default text shape: 16 query heads on 4 kv heads, head_dim 256. Contexts
  // around a block (16) and a tile (64) edge, one split and several.
  for (DType dt : {DType::kBF16, DType::kF16}) {
    run_decode_case(s, {1, 15, 16, 17, 512, 4096}, 16, 4, 256, dt, 1000, "d256 gqa4 edges");
    run_decode_case(s, {63, 64, 65, 129}, 16, 4, 256, dt, 1010, "d256 gqa4 tile edges", 0, 0);
  }
}

TEST(CudaPagedDecode, GqaRatiosAndHeadDims) {
  VT_REQUIRE_GPU();
  Streams s;
  run_decode_case(s, {300, 1, 2000}, 24, 4, 256, DType::kBF16, 1100, "d256 gqa6 (27B)");
  run_decode_case(s, {300, 17, 2000}, 16, 2, 256, DType::kBF16, 1110, "d256 gqa8");
  run_decode_case(s, {77, 1000, 16}, 8, 8, 128, DType::kBF16, 1120, "d128 gqa1");
  run_decode_case(s, {77, 1000, 16}, 32, 8, 128, DType::kF16, 1130, "d128 gqa4");
  run_decode_case(s, {5, 3000}, 32, 4, 128, DType::kBF16, 1140, "d128 gqa8");
  run_decode_case(s, {40, 900}, 40, 2, 64, DType::kF16, 1150, "d64 gqa20 (two head chunks)");
}

TEST(CudaPagedDecode, BatchesUpTo64MixedLengths) {
  VT_REQUIRE_GPU();
  Streams s;
  std::mt19937 rng(77);
  for (int64_t B : {1, 2, 7, 32, 64}) {
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < B; ++b) lens.push_back(1 + int64_t(rng() % 600));
    run_decode_case(s, lens, 16, 4, 256, DType::kBF16, 1200 + uint64_t(B),
                    "d256 gqa4 batch " + std::to_string(B), B % 5, 1);
  }
}

// Decode steps sent to the CUDA-core kernel (KernelConfig::attn_decode = kCudaCores, the
// kernel f32 and mixed dtypes take) meet the same contract: CPU op, device indices with
// graph bounds, padding and unowned rows.
TEST(CudaPagedDecode, CudaCoreKernelUnderTheSwitchMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const cudatest::ScopedKernels cuda_cores(
      s.gpu, [](KernelConfig& k) { k.attn_decode = AttnDecodeKernel::kCudaCores; });
  std::mt19937 rng(78);
  for (int64_t B : {1, 7, 32}) {
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < B; ++b) lens.push_back(1 + int64_t(rng() % 1200));
    run_decode_case(s, lens, 16, 4, 256, DType::kBF16, 1300 + uint64_t(B),
                    "cuda cores d256 gqa4 batch " + std::to_string(B), B % 4, 1);
  }
  run_decode_case(s, {1, 64, 65, 700}, 32, 8, 128, DType::kF16, 1350, "cuda cores d128 f16");
}

TEST(CudaPagedDecode, LongContext32768SplitK) {
  VT_REQUIRE_GPU();
  Streams s;
  run_decode_case(s, {32768}, 16, 4, 256, DType::kBF16, 1300, "d256 gqa4 32768 keys", 1, 1);
  run_decode_case(s, {32768, 5}, 32, 8, 128, DType::kF16, 1310, "d128 gqa4 32768 keys", 2, 0);
}

// The split rule (paged_attention.cu decode_splits, paged_decode.cuh request_split):
// the grid holds at most one wave of CTAs and as many splits as the longest context
// can use at 128 keys each; each request takes ceil(seq_len / 128) of them. Contexts of
// at most 128 keys (bounds 3 x 42 = 126) and a batch whose CTAs fill the SMs (64 x 4
// kv heads at head_dim 256, 1 CTA per SM) run one split, without the combine kernel.
TEST(CudaPagedDecode, OneSplitWithoutCombineForShortContextsAndFullBatches) {
  VT_REQUIRE_GPU();
  Streams s;
  for (DType dt : {DType::kBF16, DType::kF16})
    run_decode_case(s, {1, 15, 16, 17, 33, 41, 42}, 16, 4, 256, dt, 1500,
                    "d256 short, one split");
  run_decode_case(s, {2, 33, 42, 40}, 32, 8, 128, DType::kBF16, 1510, "d128 short, one split");
  std::mt19937 rng(78);
  std::vector<int64_t> lens;
  for (int b = 0; b < 64; ++b) lens.push_back(1 + int64_t(rng() % 4096));
  run_decode_case(s, lens, 16, 4, 256, DType::kBF16, 1520, "d256 batch 64 up to 4096, one split", 0,
                  1);
}

// A grid with several splits where each request uses its own count: 5 and 100 keys one
// split (they write out themselves; the combine skips them), 200 two, the longer ones
// the grid's bound (7 to 10 requests x 4 kv heads: 3 or 4 splits fill the SMs). Alone,
// 546 keys (the 9B decode measured) take five splits of 128 keys.
TEST(CudaPagedDecode, EachRequestSplitsByItsOwnLength) {
  VT_REQUIRE_GPU();
  Streams s;
  run_decode_case(s, {5, 100, 200, 300, 546, 3000, 4096}, 16, 4, 256, DType::kBF16, 1600,
                  "d256 mixed split counts");
  run_decode_case(s, {546}, 16, 4, 256, DType::kBF16, 1610, "d256 batch 1 at 546 keys", 0, 0);
  run_decode_case(s, {5, 100, 200, 300, 546, 3000, 4096}, 32, 8, 128, DType::kF16, 1620,
                  "d128 mixed split counts");
}

// The benchmark's decode shapes (16 q / 4 kv heads of 256; Qwen3's 32 / 8 of 128) at
// batch 1, 8 and 64 over 512 and 4096 keys: from 32 splits (batch 1, 4096) down to one.
TEST(CudaPagedDecode, Batches1And8And64AtContexts512And4096) {
  VT_REQUIRE_GPU();
  Streams s;
  for (int64_t ctx : {512, 4096})
    for (int64_t B : {1, 8, 64}) {
      const std::vector<int64_t> lens(size_t(B), ctx);
      const std::string what = "batch " + std::to_string(B) + " ctx " + std::to_string(ctx);
      run_decode_case(s, lens, 16, 4, 256, DType::kBF16, 1700 + uint64_t(B + ctx), "d256 " + what,
                      B == 64 ? 0 : 1, 1);
      if (B != 64 || ctx == 512)  // the CPU reference of 64 x 4096 once is enough
        run_decode_case(s, lens, 32, 8, 128, DType::kBF16, 1800 + uint64_t(B + ctx), "d128 " + what,
                        0, 0);
    }
}

// Decode as the engine's graphs run it: device index buffers at fixed addresses, one
// capture for bounds {B, 1, 4096}, replays after the buffers are refilled with another
// step's lengths (one split each, mixed, long). Each replay equals an eager call with
// the same bounds byte for byte and the CPU op within the decode tolerance. At batch 8
// the graph holds the decode and the combine kernel (4 splits fill the SMs); at batch
// 64 the decode kernel alone (its CTAs fill the SMs: one split, no combine).
TEST(CudaPagedDecode, GraphReplayFollowsEachStepsLengths) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t hq = 16, hkv = 4, d = 256, bs = 16, max_ctx = 4096, W = max_ctx / bs;
  const float scale = 1.0f / std::sqrt(float(d));
  struct Case {
    int64_t B, kernels;
    std::vector<std::vector<int64_t>> steps;
  };
  const Case cases[] = {
      {8,
       2,
       {{1, 17, 64, 65, 200, 255, 256, 257},
        {546, 546, 546, 546, 546, 546, 546, 546},
        {4096, 1, 300, 2048, 777, 4000, 129, 3333}}},
      {64, 1, {{}, {}}},  // filled below: random lengths up to 4096
  };
  std::mt19937 rng(79);
  uint64_t seed = 1900;
  for (Case c : cases) {
    for (auto& step : c.steps)
      if (step.empty())
        for (int64_t b = 0; b < c.B; ++b) step.push_back(1 + int64_t(rng() % max_ctx));
    const int64_t blocks = c.B * W;
    Tensor kc = randn({blocks, bs, hkv, d}, DType::kBF16, 1.0, seed++);
    Tensor vc = randn({blocks, bs, hkv, d}, DType::kBF16, 1.0, seed++);
    Tensor q = randn({c.B, hq, d}, DType::kBF16, 1.0, seed++);
    std::vector<int32_t> perm(static_cast<size_t>(blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937(unsigned(seed++)));
    Tensor table = Tensor::empty({c.B, W}, DType::kI32),
           qsl = Tensor::empty({c.B + 1}, DType::kI32);
    std::copy(perm.begin(), perm.end(), table.data<int32_t>());
    for (int64_t b = 0; b <= c.B; ++b) qsl.data<int32_t>()[b] = int32_t(b);
    Tensor sl = Tensor::empty({c.B}, DType::kI32);
    for (int64_t b = 0; b < c.B; ++b) sl.data<int32_t>()[b] = int32_t(c.steps[0][size_t(b)]);
    Tensor kc_g = s.up(kc), vc_g = s.up(vc), q_g = s.up(q);
    Tensor qsl_g = s.up(qsl), sl_g = s.up(sl), table_g = s.up(table);
    Tensor out_g = poisoned_gpu(s, {c.B, hq, d}, DType::kBF16);
    const AttentionBounds bounds{c.B, 1, max_ctx};
    s.gpu.synchronize();
    s.gpu.begin_capture();
    paged_attention(s.gpu, q_g, kc_g, vc_g, qsl_g, sl_g, table_g, scale, out_g, bounds);
    cuda::GraphExecPtr graph = s.gpu.end_capture();
    EXPECT_EQ(Stream::graph_kernel_nodes(*graph), c.kernels) << "batch " << c.B;
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const std::string what = "graph batch " + std::to_string(c.B) + " step " + std::to_string(i);
      for (int64_t b = 0; b < c.B; ++b) sl.data<int32_t>()[b] = int32_t(c.steps[i][size_t(b)]);
      copy(s.gpu, s.up(sl), sl_g);
      s.gpu.replay(*graph);
      Tensor eager = poisoned_gpu(s, {c.B, hq, d}, DType::kBF16);
      paged_attention(s.gpu, q_g, kc_g, vc_g, qsl, sl, table, scale, eager, bounds);
      const Tensor got = s.down(out_g), again = s.down(eager);
      EXPECT_EQ(std::memcmp(got.data_ptr(), again.data_ptr(), got.nbytes()), 0)
          << what << ": replay vs eager call with the same bounds";
      Tensor want = Tensor::empty({c.B, hq, d}, DType::kBF16);
      paged_attention(s.cpu, q, kc, vc, qsl, sl, table, scale, want);
      expect_close(s, want, got, 1.0 / 128, 1.0 / 64, what);
    }
    graph.reset();
    s.gpu.synchronize();
    cuda::release_graph_pool(0);
  }
}

// An f32 out (and mixed dtypes) keep the CUDA-core kernel for decode: the same graph
// checks there (its combine skips rows no request owns: they stay poisoned).
TEST(CudaPagedDecode, CudaCoreKernelGraphShapedF32Out) {
  VT_REQUIRE_GPU();
  Streams s;
  run_decode_case(s, {1, 16, 17, 4096}, 16, 4, 256, DType::kF32, 1400, "d256 f32 (CUDA cores)");
}

// ---- Head sizes other than 64 / 128 / 256 (the rule of vt/cuda/attention.h): a multiple
// of 8 up to 256 takes the tensor-core kernels padded to the next of 64, 128, 256 (a
// 16-bit q, caches and out); any other head_dim up to 512, and every f32 or mixed-dtype
// step, takes the CUDA-core kernel padded to the next of 32, 64, 128, 256, 512.

// The head sizes checked: the brief's (32 .. 192 and 36, not a multiple of 8), the
// smallest (4, 8), a multiple of 8 that ends inside a 16-dim k-step and leaves the decode
// merge's 128 threads a remainder (24), a multiple of 4 only (20), and one past the
// tensor-core kernels (272).
const int64_t kHeadDims[] = {32, 48, 80, 96, 112, 160, 192, 36, 4, 8, 24, 20, 272};

// One step of requests with ctx[b] cached and qlen[b] new tokens at head_dim d: q and the
// caches in cache_dt, out in out_dt, against the CPU op with the same out dtype (the
// tolerances of run_flash_case for 16-bit out, of run_attention_case for f32). q rows are
// d + 8 apart (16-byte aligned when d % 8 == 0, so the tensor-core kernels take a 16-bit
// step), and out is the [T, Hq, d] view of NaN-poisoned [T, Hq, d + 8] rows: the 8
// columns past each head must stay unwritten.
void run_head_dim_case(Streams& s, const std::vector<int64_t>& ctx,
                       const std::vector<int64_t>& qlen, int64_t hq, int64_t hkv, int64_t d,
                       DType cache_dt, DType out_dt, uint64_t seed, const std::string& what) {
  const int64_t block_size = 16, gap = 8;
  int64_t widest = 0;
  for (size_t b = 0; b < ctx.size(); ++b)
    widest = std::max(widest, (ctx[b] + qlen[b] + block_size - 1) / block_size);
  const int64_t num_blocks = int64_t(ctx.size()) * widest + 3;
  Batch bt = make_batch(ctx, qlen, block_size, num_blocks, seed);
  Tensor kc = randn({num_blocks, block_size, hkv, d}, cache_dt, 1.0, seed + 1);
  Tensor vc = randn({num_blocks, block_size, hkv, d}, cache_dt, 1.0, seed + 2);
  Tensor kc_g = s.up(kc), vc_g = s.up(vc);
  Tensor k = randn({bt.tokens, hkv, d}, cache_dt, 1.0, seed + 3);
  Tensor v = randn({bt.tokens, hkv, d}, cache_dt, 1.0, seed + 4);
  kv_cache_write(s.cpu, k, v, bt.slot_mapping, kc, vc);
  kv_cache_write(s.gpu, s.up(k), s.up(v), bt.slot_mapping, kc_g, vc_g);
  expect_close(s, kc, kc_g, 0, 0, what + ": k_cache after kv_cache_write");
  expect_close(s, vc, vc_g, 0, 0, what + ": v_cache after kv_cache_write");
  Tensor qbig = randn({bt.tokens, hq, d + gap}, cache_dt, 1.0, seed + 5);
  const float scale = 1.0f / std::sqrt(float(d));
  Tensor want = Tensor::empty({bt.tokens, hq, d}, out_dt);
  paged_attention(s.cpu, qbig.slice(2, 0, d), kc, vc, bt.qsl, bt.seq_lens, bt.block_table, scale,
                  want);
  Tensor wide = poisoned_gpu(s, {bt.tokens, hq, d + gap}, out_dt);
  Tensor got = wide.slice(2, 0, d);
  paged_attention(s.gpu, s.up(qbig).slice(2, 0, d), kc_g, vc_g, bt.qsl, bt.seq_lens, bt.block_table,
                  scale, got);
  const Tensor back = to_dtype(s.cpu, s.down(wide), DType::kF32);
  int64_t written = 0;
  for (int64_t r = 0; r < bt.tokens * hq; ++r)
    for (int64_t e = d; e < d + gap; ++e)
      written += !std::isnan(back.data<float>()[r * (d + gap) + e]);
  EXPECT_EQ(written, 0) << what << ": columns past head_dim must stay unwritten";
  const double rel = out_dt == DType::kF32 ? 2e-5 : out_dt == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
  const double abs = out_dt == DType::kF32 ? 2e-5 : out_dt == DType::kBF16 ? 1.0 / 64 : 1.0 / 512;
  expect_close(s, want, back.slice(2, 0, d), rel, abs,
               what + " (" + dtype_name(cache_dt) + " cache, " + dtype_name(out_dt) + " out)");
}

// Prefill steps at every head size, GQA groups 1, 2 and 4: fresh prompts and prompts
// after a context, their lengths and key counts crossing the block (16), the flash
// kernel's row tile (64 rows: 16 tokens at group 4) and key tile (64, 32 at D = 256)
// edges, a decode request riding along; then a chunk after 3000 keys (split-K).
TEST(CudaPagedAttention, EveryHeadDimPrefillMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 3000;
  for (int64_t d : kHeadDims) {
    for (int64_t group : {1, 2, 4}) {
      const int64_t hkv = 2, hq = hkv * group;
      const std::string what = "d" + std::to_string(d) + " gqa" + std::to_string(group);
      for (DType dt : {DType::kBF16, DType::kF16})
        run_head_dim_case(s, {0, 15, 63, 129}, {17, 2, 65, 1}, hq, hkv, d, dt, dt, seed += 10,
                          what + " prefill");
      run_head_dim_case(s, {0, 40}, {33, 1}, hq, hkv, d, DType::kBF16, DType::kF32, seed += 10,
                        what + " prefill");
      run_head_dim_case(s, {9, 0}, {20, 3}, hq, hkv, d, DType::kF32, DType::kF32, seed += 10,
                        what + " prefill");
    }
    run_head_dim_case(s, {3000}, {17}, 8, 2, d, DType::kBF16, DType::kBF16, seed += 10,
                      "d" + std::to_string(d) + " gqa4 chunk after 3000 keys");
  }
}

// Decode steps at every head size, GQA groups 1, 2 and 4: the decode contract of
// run_decode_case (host and device indices, graph bounds, padding and unowned rows) over
// lengths at the block and tile edges, then the untouched columns past head_dim over
// lengths up to 2000 (split-K and its merge, whose threads take 4 dims of a row: d / 4
// of them per row, 128 not always a multiple), and an f32 out.
TEST(CudaPagedDecode, EveryHeadDimMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 4000;
  for (int64_t d : kHeadDims) {
    for (int64_t group : {1, 2, 4}) {
      const int64_t hkv = 2, hq = hkv * group;
      const std::string what = "d" + std::to_string(d) + " gqa" + std::to_string(group);
      for (DType dt : {DType::kBF16, DType::kF16}) {
        run_decode_case(s, {1, 16, 17, 63, 64, 65, 300}, hq, hkv, d, dt, seed += 10,
                        what + " decode " + dtype_name(dt));
        run_head_dim_case(s, {0, 14, 15, 63, 1999}, {1, 1, 1, 1, 1}, hq, hkv, d, dt, dt, seed += 10,
                          what + " decode");
      }
      run_head_dim_case(s, {0, 700}, {1, 1}, hq, hkv, d, DType::kBF16, DType::kF32, seed += 10,
                        what + " decode");
    }
  }
}

// Past the widest kernel (512) the op is refused by name, not computed wrongly.
TEST(CudaPagedAttention, HeadDimPast512IsRefusedByName) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t d = 520;
  Batch bt = make_batch({0}, {2}, 16, 2, 5000);
  Tensor kc = s.up(randn({2, 16, 1, d}, DType::kBF16, 1.0, 5001));
  Tensor vc = s.up(randn({2, 16, 1, d}, DType::kBF16, 1.0, 5002));
  Tensor q = s.up(randn({2, 1, d}, DType::kBF16, 1.0, 5003));
  Tensor out = poisoned_gpu(s, {2, 1, d}, DType::kBF16);
  try {
    paged_attention(s.gpu, q, kc, vc, bt.qsl, bt.seq_lens, bt.block_table, 1.0f, out);
    ADD_FAILURE() << "head_dim 520 ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim 520"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vt
