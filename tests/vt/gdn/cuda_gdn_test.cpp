// The CUDA Gated DeltaNet ops against their CPU twins at Qwen3.5 sizes: conv_dim
// 10240 (27B), GDN states 128 x 128 with Hv 48 (27B, 16 key heads) and 32 (35B),
// requests mixing a decode step, a prefill from an existing state and a fresh prompt
// that spans several chunks of 64, and a prefill batch up to 4096 tokens for the
// chunked kernels against both CPU forms. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/fill.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::i32;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;
using cudatest::uniform;

TEST(CudaGdn, ConvAndGatesMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t C = 10240, K = 4, slots = 6;
  const std::vector<int32_t> qsl{0, 1, 131, 133}, slot{4, 0, 2};  // decode, prefill, 2 tokens
  const int64_t T = qsl.back();
  Tensor x = randn({T, C}, DType::kBF16, 1.0, 500), w = randn({C, K}, DType::kBF16, 0.5, 501);
  Tensor st = randn({slots, K - 1, C}, DType::kF32, 1.0, 502), st_g = s.up(st);
  Tensor out = Tensor::empty({T, C}, DType::kBF16), out_g = poisoned_gpu(s, {T, C}, DType::kBF16);
  causal_conv1d_silu(s.cpu, x, w, i32(qsl), st, i32(slot), out);
  causal_conv1d_silu(s.gpu, s.up(x), s.up(w), i32(qsl), st_g, i32(slot), out_g);
  expect_close(s, out, out_g, cudatest::kBf16ChainRel, 1e-6, "conv1d+silu out bf16");
  expect_close(s, st, st_g, 0, 0, "conv state after the step (raw inputs, exact)");

  const int64_t hv = 48;
  Tensor a = randn({T, hv}, DType::kBF16, 3.0, 503), b = randn({T, hv}, DType::kBF16, 3.0, 504);
  Tensor alog = randn({hv}, DType::kBF16, 1.0, 505), dtb = randn({hv}, DType::kBF16, 10.0, 506);
  Tensor g = Tensor::empty({T, hv}, DType::kF32), beta = Tensor::empty({T, hv}, DType::kF32);
  Tensor g_g = poisoned_gpu(s, {T, hv}, DType::kF32), beta_g = poisoned_gpu(s, {T, hv}, DType::kF32);
  gdn_gates(s.cpu, a, b, alog, dtb, DType::kF32, g, beta);
  gdn_gates(s.gpu, s.up(a), s.up(b), s.up(alog), s.up(dtb), DType::kF32, g_g, beta_g);
  expect_close(s, g, g_g, 1e-5, 0, "gdn g (softplus threshold 20 crossed by dt_bias ~ N(0, 10))");
  expect_close(s, beta, beta_g, 1e-6, 0, "gdn beta");

  Tensor o = randn({T, hv, 128}, DType::kF32, 1.0, 507), z = randn({T, hv, 128}, DType::kBF16, 2.0, 508);
  Tensor nw = randn({128}, DType::kBF16, 1.0, 509);
  Tensor y = Tensor::empty({T, hv, 128}, DType::kBF16), y_g = poisoned_gpu(s, {T, hv, 128}, DType::kBF16);
  gated_rms_norm(s.cpu, o, z, nw, 1e-6f, y);
  gated_rms_norm(s.gpu, s.up(o), s.up(z), s.up(nw), 1e-6f, y_g);
  expect_close(s, y, y_g, cudatest::kBf16ChainRel, 1e-6, "gated rms norm bf16");
}

// The GDN layer's layout: one fused projection [T, conv_dim + Hv*Dv + 2 Hv] whose b and a
// columns feed the gates (beta rounded to bf16 in the op) and whose z columns, viewed
// per head (two row strides), gate the output norm; q and k normalised in one call over
// a [T, 2 Hk, Dk] view of the conv output's first columns (two row strides).
TEST(CudaGdn, FusedProjectionSlicesMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t T = 37, hk = 16, hv = 32, dk = 128, dv = 128;
  const int64_t cd = 2 * hk * dk + hv * dv, vd = hv * dv, width = cd + vd + 2 * hv;
  Tensor proj = randn({T, width}, DType::kBF16, 3.0, 520), proj_g = s.up(proj);
  const auto b_of = [&](const Tensor& p) { return p.slice(1, cd + vd, cd + vd + hv); };
  const auto a_of = [&](const Tensor& p) { return p.slice(1, cd + vd + hv, width); };
  const auto z_of = [&](const Tensor& p) { return p.slice(1, cd, cd + vd).reshape({T, hv, dv}); };
  Tensor alog = randn({hv}, DType::kBF16, 1.0, 521), dtb = randn({hv}, DType::kBF16, 10.0, 522);
  for (DType round : {DType::kF32, DType::kBF16}) {
    Tensor g = Tensor::empty({T, hv}, DType::kF32), beta = Tensor::empty({T, hv}, DType::kF32);
    Tensor g_g = poisoned_gpu(s, {T, hv}, DType::kF32);
    Tensor beta_g = poisoned_gpu(s, {T, hv}, DType::kF32);
    gdn_gates(s.cpu, a_of(proj), b_of(proj), alog, dtb, round, g, beta);
    gdn_gates(s.gpu, a_of(proj_g), b_of(proj_g), s.up(alog), s.up(dtb), round, g_g, beta_g);
    const std::string what =
        std::string("gates on projection slices, beta via ") + dtype_name(round);
    expect_close(s, g, g_g, 1e-5, 0, what + ": g");
    // bf16: CPU and CUDA sigmoids a few f32 ulps apart can round to neighbouring bf16s.
    expect_close(s, beta, beta_g, round == DType::kF32 ? 1e-6 : kBf16Rel, 0, what + ": beta");
  }

  Tensor o = randn({T, hv, dv}, DType::kBF16, 1.0, 523), nw = randn({dv}, DType::kBF16, 1.0, 524);
  Tensor y = Tensor::empty({T, hv, dv}, DType::kBF16);
  Tensor y_g = poisoned_gpu(s, {T, hv, dv}, DType::kBF16);
  gated_rms_norm(s.cpu, o, z_of(proj), nw, 1e-6f, y);
  gated_rms_norm(s.gpu, s.up(o), z_of(proj_g), s.up(nw), 1e-6f, y_g);
  expect_close(s, y, y_g, cudatest::kBf16ChainRel, 1e-6, "gated rms norm, z heads of a slice");

  // l2_normalize of q and k in one call: a two-level view in, f32 [T, 2 Hk, Dk] out; and
  // a two-level out (the heads written back into a wider buffer's columns).
  Tensor act = randn({T, cd}, DType::kBF16, 1.0, 525), act_g = s.up(act);
  const auto qk_of = [&](const Tensor& t) {
    return t.slice(1, 0, 2 * hk * dk).reshape({T, 2 * hk, dk});
  };
  Tensor qk = Tensor::empty({T, 2 * hk, dk}, DType::kF32);
  Tensor qk_g = poisoned_gpu(s, {T, 2 * hk, dk}, DType::kF32);
  l2_normalize(s.cpu, qk_of(act), 1e-6f, qk);
  l2_normalize(s.gpu, qk_of(act_g), 1e-6f, qk_g);
  expect_close(s, qk, qk_g, 1e-5, 1e-6, "l2_normalize q and k heads in one call");
  Tensor wide = Tensor::empty({T, cd}, DType::kF32);
  Tensor wide_g = poisoned_gpu(s, {T, cd}, DType::kF32);
  Tensor qk_out = qk_of(wide), qk_out_g = qk_of(wide_g);
  l2_normalize(s.cpu, qk_of(act), 1e-6f, qk_out);
  l2_normalize(s.gpu, qk_of(act_g), 1e-6f, qk_out_g);
  expect_close(s, qk_out, contiguous(s.gpu, qk_out_g), 1e-5, 1e-6, "l2_normalize two-level out");

  // The delta rule on the layer's layout: q and k head slices of the one normalised
  // [T, 2 Hk, Dk] tensor, v the heads of the conv output's last columns; both forms.
  const std::vector<int32_t> qsl{0, 1, 20, 37}, slot{2, 0, 1};
  const auto v_of = [&](const Tensor& t) {
    return t.slice(1, 2 * hk * dk, cd).reshape({T, hv, dv});
  };
  Tensor beta = uniform({T, hv}, 0.05f, 0.95f, 526), g = uniform({T, hv}, -0.7f, -0.01f, 527);
  Tensor qk_up = s.up(qk);
  const float scale = 1.0f / std::sqrt(float(dk));
  for (bool chunked : {false, true}) {
    Tensor st = randn({3, hv, dk, dv}, DType::kF32, 0.5, 528), st_g = s.up(st);
    Tensor out = Tensor::empty({T, hv, dv}, DType::kBF16);
    Tensor out_g = poisoned_gpu(s, {T, hv, dv}, DType::kBF16);
    const auto run = [&](Stream& st_s, const Tensor& qk_t, const Tensor& act_t, const Tensor& gg,
                         const Tensor& bb, Tensor& state, Tensor& res) {
      const Tensor q = qk_t.slice(1, 0, hk), k = qk_t.slice(1, hk, 2 * hk);
      if (chunked)
        gated_delta_rule_chunked(st_s, q, k, v_of(act_t), gg, bb, scale, i32(qsl), state,
                                 i32(slot), res);
      else
        gated_delta_rule_recurrent(st_s, q, k, v_of(act_t), gg, bb, scale, i32(qsl), state,
                                   i32(slot), res);
    };
    run(s.cpu, qk, act, g, beta, st, out);
    run(s.gpu, qk_up, act_g, s.up(g), s.up(beta), st_g, out_g);
    const std::string form = chunked ? "chunked" : "recurrent";
    expect_close(s, out, out_g, kBf16Rel, 1e-4, form + " out, q/k/v strided as the layer's");
    expect_close(s, st, st_g, 1e-4, 1e-4, form + " state, q/k/v strided as the layer's");
  }
}

// Value heads of dv when given (else dk).
void delta_case(Streams& s, int64_t hk, int64_t hv, bool chunked, DType io, uint64_t seed,
                int64_t dk = 128, int64_t dv = 0) {
  dv = dv > 0 ? dv : dk;
  const int64_t slots = 5;
  const std::vector<int32_t> qsl{0, 1, 71, 71 + 150}, slot{3, 1, 4};
  const int64_t T = qsl.back();
  // q, k l2-normalised per head (as the model feeds them), v ~ N(0, 1); decays in
  // (0.5, 1) and betas in (0, 1) as sigmoid/softplus gates produce.
  Tensor qr = randn({T, hk, dk}, DType::kF32, 1.0, seed), kr = randn({T, hk, dk}, DType::kF32, 1.0, seed + 1);
  Tensor q = Tensor::empty({T, hk, dk}, io), k = Tensor::empty({T, hk, dk}, io);
  l2_normalize(s.cpu, qr, 1e-6f, q);
  l2_normalize(s.cpu, kr, 1e-6f, k);
  Tensor v = randn({T, hv, dv}, io, 1.0, seed + 2);
  Tensor g = uniform({T, hv}, -0.7f, -0.01f, seed + 3), beta = uniform({T, hv}, 0.05f, 0.95f, seed + 4);
  Tensor st = randn({slots, hv, dk, dv}, DType::kF32, 0.5, seed + 5);
  Tensor fresh = st.select(0, 4);
  zero(s.cpu, fresh);  // request 2 starts a sequence
  Tensor st_g = s.up(st);
  const float scale = 1.0f / std::sqrt(float(dk));
  Tensor out = Tensor::empty({T, hv, dv}, io), out_g = poisoned_gpu(s, {T, hv, dv}, io);
  if (chunked) {
    gated_delta_rule_chunked(s.cpu, q, k, v, g, beta, scale, i32(qsl), st, i32(slot), out);
    gated_delta_rule_chunked(s.gpu, s.up(q), s.up(k), s.up(v), s.up(g), s.up(beta), scale, i32(qsl),
                             st_g, i32(slot), out_g);
  } else {
    gated_delta_rule_recurrent(s.cpu, q, k, v, g, beta, scale, i32(qsl), st, i32(slot), out);
    gated_delta_rule_recurrent(s.gpu, s.up(q), s.up(k), s.up(v), s.up(g), s.up(beta), scale,
                               i32(qsl), st_g, i32(slot), out_g);
  }
  const std::string what = std::string(chunked ? "chunked" : "recurrent") + " Hk " +
                           std::to_string(hk) + " Hv " + std::to_string(hv) + " Dk " +
                           std::to_string(dk) + " Dv " + std::to_string(dv) + " " + dtype_name(io);
  // f32 state through 150 tokens, sums of 128 terms in another order (and, against the
  // CPU chunked form, another algorithm): f32-level differences.
  expect_close(s, out, out_g, io == DType::kF32 ? 1e-4 : kBf16Rel, 1e-4, what + ": out");
  expect_close(s, st, st_g, 1e-4, 1e-4, what + ": state");
}

TEST(CudaGdn, DeltaRuleRecurrentMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  delta_case(s, 16, 48, false, DType::kF32, 600);  // 27B
  delta_case(s, 16, 32, false, DType::kBF16, 610);  // 35B
  delta_case(s, 2, 6, false, DType::kF32, 620, 32);   // the tiny test fixtures (padded state)
}

TEST(CudaGdn, DeltaRuleChunkedMatchesCpuChunked) {
  VT_REQUIRE_GPU();
  Streams s;
  delta_case(s, 16, 48, true, DType::kBF16, 700);
  delta_case(s, 16, 32, true, DType::kF32, 710);
  delta_case(s, 2, 6, true, DType::kF32, 720, 32);  // Dk 32 zero-padded to the 128 tiles
}

// Head sizes of odd configs, both forms: Dk 48 and 80 padded into the 64 and 128 state
// heights (the recurrence) and the 128 tiles (chunked); Dk != Dv; Dv % 4 != 0 (the warp
// kernel); Dv past the chunked tiles (the chunked op runs the recurrence); Dk 160 and
// 256, past the tiles and the 128 state height (the 256 instantiation, registers spilled).
TEST(CudaGdn, DeltaRuleOddHeadDimsMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t dims[][2] = {{48, 48}, {80, 80},  {32, 48},  {48, 80},  {80, 36},
                             {48, 30}, {64, 160}, {160, 96}, {256, 64}, {256, 256}};
  uint64_t seed = 740;
  for (const auto& [dk, dv] : dims)
    for (bool chunked : {false, true})
      for (DType io : {DType::kF32, DType::kBF16})
        delta_case(s, 2, 4, chunked, io, seed += 10, dk, dv);
}

// The CUDA chunked form (cuda/gdn/delta_rule_chunked.cuh) on one prefill-sized batch
// against the CPU chunked form AND the CPU token recurrence: lengths 1 (the in-kernel
// recurrence), 63, 64, 65 (partial, whole, one past a chunk), 200 and 4096, every slot
// starting from a random state, slots out of order with gaps (untouched slots must
// stay as they were), q and k strided views of one [T, 2 Hk, 128] buffer. At Hv 48 the
// 72 chunks exceed one pass's scratch (68), so the 4096-token request continues from
// the state the first pass left in its slot.
void chunked_prefill_case(Streams& s, int64_t hk, int64_t hv, DType io, uint64_t seed) {
  const int64_t dk = 128, dv = 128, slots = 11;
  const std::vector<int32_t> qsl{0, 1, 64, 128, 193, 393, 393 + 4096}, slot{5, 0, 9, 3, 7, 1};
  const int64_t T = qsl.back();
  Tensor qk_raw = randn({T, 2 * hk, dk}, DType::kF32, 1.0, seed), qk = Tensor::empty({T, 2 * hk, dk}, io);
  l2_normalize(s.cpu, qk_raw, 1e-6f, qk);
  const Tensor q = qk.slice(1, 0, hk), k = qk.slice(1, hk, 2 * hk);
  Tensor v = randn({T, hv, dv}, io, 1.0, seed + 2);
  Tensor g = uniform({T, hv}, -0.7f, -0.01f, seed + 3), beta = uniform({T, hv}, 0.05f, 0.95f, seed + 4);
  Tensor st_chunked = randn({slots, hv, dk, dv}, DType::kF32, 0.5, seed + 5);
  Tensor st_recurrent = randn({slots, hv, dk, dv}, DType::kF32, 0.5, seed + 5);  // same values
  Tensor st_g = s.up(st_chunked);
  const float scale = 1.0f / std::sqrt(float(dk));
  Tensor out_chunked = Tensor::empty({T, hv, dv}, io), out_recurrent = Tensor::empty({T, hv, dv}, io);
  Tensor out_g = poisoned_gpu(s, {T, hv, dv}, io);
  gated_delta_rule_chunked(s.cpu, q, k, v, g, beta, scale, i32(qsl), st_chunked, i32(slot),
                           out_chunked);
  gated_delta_rule_recurrent(s.cpu, q, k, v, g, beta, scale, i32(qsl), st_recurrent, i32(slot),
                             out_recurrent);
  const Tensor qk_g = s.up(qk);
  gated_delta_rule_chunked(s.gpu, qk_g.slice(1, 0, hk), qk_g.slice(1, hk, 2 * hk), s.up(v), s.up(g),
                           s.up(beta), scale, i32(qsl), st_g, i32(slot), out_g);
  const std::string what = "chunked prefill Hk " + std::to_string(hk) + " Hv " +
                           std::to_string(hv) + " " + dtype_name(io);
  // f32 arithmetic on both sides, in other orders and (against the recurrence) another
  // algorithm: rel 1e-4 + 1e-4 x rms on out and state (a CPU thread emulation of the
  // kernels stayed below 0.03 of this against a double recurrence); a bf16 out may
  // land one bf16 ulp apart.
  const double out_rel = io == DType::kF32 ? 1e-4 : kBf16Rel;
  expect_close(s, out_chunked, out_g, out_rel, 1e-4, what + ": out vs CPU chunked");
  expect_close(s, st_chunked, st_g, 1e-4, 1e-4, what + ": state vs CPU chunked");
  expect_close(s, out_recurrent, out_g, out_rel, 1e-4, what + ": out vs CPU recurrent");
  expect_close(s, st_recurrent, st_g, 1e-4, 1e-4, what + ": state vs CPU recurrent");
}

TEST(CudaGdn, DeltaRuleChunkedPrefillMatchesCpuBothForms) {
  VT_REQUIRE_GPU();
  Streams s;
  chunked_prefill_case(s, 16, 32, DType::kF32, 800);   // 35B shape, one pass
  chunked_prefill_case(s, 16, 48, DType::kBF16, 810);  // 27B shape, two passes
  chunked_prefill_case(s, 16, 48, DType::kF32, 820);
  chunked_prefill_case(s, 16, 32, DType::kBF16, 830);
}

// Device-resident indices (vt/ops/indices.h) size the chunked kernels' launches from a
// bound instead of the exact chunk count; the chunks, passes and arithmetic are the
// same, so out and state must be byte-equal to the host-index call (Hv 48: two passes).
TEST(CudaGdn, DeltaRuleChunkedDeviceIndicesMatchHost) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t hk = 16, hv = 48, d = 128, slots = 11;
  const std::vector<int32_t> qsl{0, 1, 64, 128, 193, 393, 393 + 4096}, slot{5, 0, 9, 3, 7, 1};
  const int64_t T = qsl.back();
  Tensor qk_raw = randn({T, 2 * hk, d}, DType::kF32, 1.0, 900), qk = Tensor::empty({T, 2 * hk, d}, DType::kBF16);
  l2_normalize(s.cpu, qk_raw, 1e-6f, qk);
  const Tensor qk_g = s.up(qk), q = qk_g.slice(1, 0, hk), k = qk_g.slice(1, hk, 2 * hk);
  const Tensor v = s.up(randn({T, hv, d}, DType::kBF16, 1.0, 902));
  const Tensor g = s.up(uniform({T, hv}, -0.7f, -0.01f, 903));
  const Tensor beta = s.up(uniform({T, hv}, 0.05f, 0.95f, 904));
  const Tensor st = randn({slots, hv, d, d}, DType::kF32, 0.5, 905);
  Tensor st_host = s.up(st), st_dev = s.up(st);
  Tensor y_host = poisoned_gpu(s, {T, hv, d}, DType::kBF16), y_dev = poisoned_gpu(s, {T, hv, d}, DType::kBF16);
  const float scale = 1.0f / std::sqrt(float(d));
  gated_delta_rule_chunked(s.gpu, q, k, v, g, beta, scale, i32(qsl), st_host, i32(slot), y_host);
  gated_delta_rule_chunked(s.gpu, q, k, v, g, beta, scale, s.up(i32(qsl)), st_dev, s.up(i32(slot)),
                           y_dev);
  expect_close(s, s.down(y_host), y_dev, 0, 0, "chunked out, device vs host indices");
  expect_close(s, s.down(st_host), st_dev, 0, 0, "chunked state, device vs host indices");
}


// Decode steps of the recurrent op (delta_rule_rows_kernel): B requests of one token
// each in distinct random slots of a larger state (untouched slots must stay as they
// were), against the CPU recurrence; the same step with device-resident indices must be
// byte-equal to the host-index call.
void delta_decode_case(Streams& s, int64_t B, int64_t hk, int64_t hv, DType io, uint64_t seed) {
  const int64_t dk = 128, dv = 128, slots = B + 7;
  std::vector<int32_t> qsl(static_cast<size_t>(B + 1)), slot(static_cast<size_t>(slots));
  for (int64_t b = 0; b <= B; ++b) qsl[size_t(b)] = int32_t(b);
  for (int64_t i = 0; i < slots; ++i) slot[size_t(i)] = int32_t(i);
  std::shuffle(slot.begin(), slot.end(), std::mt19937(unsigned(seed)));
  slot.resize(size_t(B));
  const int64_t T = B;
  Tensor qr = randn({T, hk, dk}, DType::kF32, 1.0, seed), kr = randn({T, hk, dk}, DType::kF32, 1.0, seed + 1);
  Tensor q = Tensor::empty({T, hk, dk}, io), k = Tensor::empty({T, hk, dk}, io);
  l2_normalize(s.cpu, qr, 1e-6f, q);
  l2_normalize(s.cpu, kr, 1e-6f, k);
  Tensor v = randn({T, hv, dv}, io, 1.0, seed + 2);
  Tensor g = uniform({T, hv}, -0.7f, -0.01f, seed + 3), beta = uniform({T, hv}, 0.05f, 0.95f, seed + 4);
  Tensor st = randn({slots, hv, dk, dv}, DType::kF32, 0.5, seed + 5);
  Tensor st_g = s.up(st), st_dev = s.up(st);
  const float scale = 1.0f / std::sqrt(float(dk));
  Tensor out = Tensor::empty({T, hv, dv}, io), out_g = poisoned_gpu(s, {T, hv, dv}, io);
  Tensor out_dev = poisoned_gpu(s, {T, hv, dv}, io);
  const Tensor q_g = s.up(q), k_g = s.up(k), v_g = s.up(v), g_g = s.up(g), beta_g = s.up(beta);
  gated_delta_rule_recurrent(s.cpu, q, k, v, g, beta, scale, i32(qsl), st, i32(slot), out);
  gated_delta_rule_recurrent(s.gpu, q_g, k_g, v_g, g_g, beta_g, scale, i32(qsl), st_g, i32(slot),
                             out_g);
  gated_delta_rule_recurrent(s.gpu, q_g, k_g, v_g, g_g, beta_g, scale, s.up(i32(qsl)), st_dev,
                             s.up(i32(slot)), out_dev);
  const std::string what = "decode B " + std::to_string(B) + " Hv " + std::to_string(hv) + " " +
                           dtype_name(io);
  expect_close(s, out, out_g, io == DType::kF32 ? 1e-4 : kBf16Rel, 1e-4, what + ": out");
  expect_close(s, st, st_g, 1e-4, 1e-4, what + ": state");
  expect_close(s, s.down(out_g), out_dev, 0, 0, what + ": out, device vs host indices");
  expect_close(s, s.down(st_g), st_dev, 0, 0, what + ": state, device vs host indices");
}

TEST(CudaGdn, DeltaRuleRecurrentDecodeBatchesMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 1000;
  for (int64_t B : {1, 3, 8, 64, 256})
    for (int64_t hv : {32, 48})
      if (B < 256 || hv == 32)  // B 256 x Hv 48 would hold 0.8 GB of state on each side
        delta_decode_case(s, B, 16, hv, B % 2 ? DType::kBF16 : DType::kF32, seed += 10);
}

// The same decode batches through the warp kernel (KernelConfig::gdn_decode = kWarp, the
// kernel Dv % 4 != 0 takes), which the shipped rule leaves to such heads.
TEST(CudaGdn, DeltaRuleRecurrentWarpKernelDecodeBatchesMatchCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const cudatest::ScopedKernels warp(
      s.gpu, [](KernelConfig& k) { k.gdn_decode = GdnDecodeKernel::kWarp; });
  uint64_t seed = 1500;
  for (int64_t B : {1, 3, 8, 64})
    for (int64_t hv : {32, 48})
      delta_decode_case(s, B, 16, hv, B % 2 ? DType::kBF16 : DType::kF32, seed += 10);
}

}  // namespace
}  // namespace vt

// ---- The tensor-core chunked prefill (cuda/gdn/chunk_wy_tc.cu + chunk_scan_tc.cu,
// 3xTF32 products) against the CPU chunked and recurrent forms, with the stress gates. ----

namespace vt {
namespace {

// The largest |got - want| over rms(want) (f32 views on the CPU; a NaN counts as infinite).
double max_err_over_rms(Streams& s, const Tensor& want, const Tensor& got) {
  Tensor w = to_dtype(s.cpu, contiguous(s.cpu, want), DType::kF32);
  Tensor g =
      to_dtype(s.cpu, got.device().is_cpu() ? contiguous(s.cpu, got) : s.down(got), DType::kF32);
  double ss = 0, worst = 0;
  for (int64_t i = 0; i < w.numel(); ++i) ss += double(w.data<float>()[i]) * w.data<float>()[i];
  const double rms = std::sqrt(ss / double(std::max<int64_t>(w.numel(), 1))) + 1e-30;
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double a = w.data<float>()[i], b = g.data<float>()[i];
    worst = std::max(worst, std::isnan(b) ? INFINITY : std::fabs(a - b) / rms);
  }
  return worst;
}

// Gates that stress the chunk math: value heads h % 3 == 0 decay hard (g in (-30, -5):
// e^gam underflows to 0 within a chunk), h % 3 == 1 barely (g in (-1e-3, 0): the Gram
// terms are undamped), the rest as the model's gates typically are (-0.7, -0.01).
Tensor mixed_gates(int64_t T, int64_t hv, uint64_t seed) {
  Tensor g = Tensor::empty({T, hv}, DType::kF32);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> strong(-30.0f, -5.0f), weak(-1e-3f, 0.0f),
      usual(-0.7f, -0.01f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < hv; ++h)
      g.data<float>()[t * hv + h] = h % 3 == 0 ? strong(rng) : h % 3 == 1 ? weak(rng) : usual(rng);
  return g;
}

// One prefill batch (lengths `lens`, slots out of order with gaps, every slot from a
// random state) through the CPU chunked form, the CPU recurrent form and the tensor-core
// kernels. The CPU chunked form's own distance from the recurrent one sets the bar: the
// tc path's distance from the recurrent form must stay within 8x of it (both are f32
// chunked arithmetic in other orders; 3xTF32 drops only a_small b_small, ~2^-22 of each
// product, and the tensor cores' f32 accumulation may round differently; in a host
// emulation of the kernels the tc pair's error came out within 10% of an f32 CUDA-core
// pair's, and a plain 1xTF32 product ~500x off), and within the suite's f32 tolerance
// (rel 1e-4 + 1e-4 rms) of both CPU forms; a bf16 out may land one bf16 ulp apart.
void tc_prefill_case(Streams& s, const std::vector<int32_t>& lens, int64_t hk, int64_t hv, DType io,
                     uint64_t seed) {
  const int64_t dk = 128, dv = 128, B = int64_t(lens.size()), slots = 2 * B + 1;
  std::vector<int32_t> qsl{0}, slot;
  for (int64_t b = 0; b < B; ++b) {
    qsl.push_back(qsl.back() + lens[size_t(b)]);
    slot.push_back(int32_t(slots - 1 - 2 * b));  // descending, every other slot
  }
  const int64_t T = qsl.back();
  Tensor qk_raw = randn({T, 2 * hk, dk}, DType::kF32, 1.0, seed),
         qk = Tensor::empty({T, 2 * hk, dk}, io);
  l2_normalize(s.cpu, qk_raw, 1e-6f, qk);
  const Tensor q = qk.slice(1, 0, hk), k = qk.slice(1, hk, 2 * hk);
  Tensor v = randn({T, hv, dv}, io, 1.0, seed + 2);
  Tensor g = mixed_gates(T, hv, seed + 3), beta = uniform({T, hv}, 0.05f, 0.95f, seed + 4);
  Tensor st = randn({slots, hv, dk, dv}, DType::kF32, 0.5, seed + 5);
  Tensor st_tc = s.up(st), st_rec = Tensor::empty(st.shape(), DType::kF32);
  copy(s.cpu, st, st_rec);
  const float scale = 1.0f / std::sqrt(float(dk));
  Tensor out = Tensor::empty({T, hv, dv}, io), out_rec = Tensor::empty({T, hv, dv}, io);
  Tensor out_tc = poisoned_gpu(s, {T, hv, dv}, io);
  gated_delta_rule_chunked(s.cpu, q, k, v, g, beta, scale, i32(qsl), st, i32(slot), out);
  gated_delta_rule_recurrent(s.cpu, q, k, v, g, beta, scale, i32(qsl), st_rec, i32(slot), out_rec);
  const Tensor qk_g = s.up(qk), v_g = s.up(v), g_g = s.up(g), beta_g = s.up(beta);
  const Tensor q_g = qk_g.slice(1, 0, hk), k_g = qk_g.slice(1, hk, 2 * hk);
  gated_delta_rule_chunked(s.gpu, q_g, k_g, v_g, g_g, beta_g, scale, i32(qsl), st_tc, i32(slot),
                           out_tc);
  std::string what = "tc prefill Hv " + std::to_string(hv) + " " + dtype_name(io) + " lengths";
  for (int32_t n : lens) what += " " + std::to_string(n);
  const double out_rel = io == DType::kF32 ? 1e-4 : kBf16Rel;
  expect_close(s, out, out_tc, out_rel, 1e-4, what + ": out vs CPU chunked");
  expect_close(s, st, st_tc, 1e-4, 1e-4, what + ": state vs CPU chunked");
  expect_close(s, out_rec, out_tc, out_rel, 1e-4, what + ": out vs CPU recurrent");
  expect_close(s, st_rec, st_tc, 1e-4, 1e-4, what + ": state vs CPU recurrent");
  // Relative to the CPU chunked form's own distance from the recurrent one (state always;
  // out when it is f32, a bf16 out's error being its rounding). The floor, 2e-6 of rms,
  // is ~16 f32 ulps of an rms value.
  const double st_err_cpu = max_err_over_rms(s, st_rec, st),
               st_err_tc = max_err_over_rms(s, st_rec, st_tc);
  EXPECT_LE(st_err_tc, std::max(8 * st_err_cpu, 2e-6))
      << what << ": state error over rms vs the recurrent form, tc " << st_err_tc
      << ", CPU chunked " << st_err_cpu;
  if (io == DType::kF32) {
    const double o_err_cpu = max_err_over_rms(s, out_rec, out),
                 o_err_tc = max_err_over_rms(s, out_rec, out_tc);
    EXPECT_LE(o_err_tc, std::max(8 * o_err_cpu, 2e-6))
        << what << ": out error over rms vs the recurrent form, tc " << o_err_tc << ", CPU chunked "
        << o_err_cpu;
  }
}

TEST(CudaGdn, ChunkedPrefillTensorCoresMatchCpuBothForms) {
  VT_REQUIRE_GPU();
  Streams s;
  const std::vector<int32_t> mixed{1, 63, 64, 65, 512, 4096};  // Hv 48: 76 chunks, three passes
  tc_prefill_case(s, mixed, 16, 32, DType::kF32, 1100);        // 9B / 35B shape
  tc_prefill_case(s, mixed, 16, 48, DType::kBF16, 1110);       // 27B shape
  tc_prefill_case(s, mixed, 16, 48, DType::kF32, 1120);
  tc_prefill_case(s, mixed, 16, 32, DType::kBF16, 1130);
  for (int32_t n : {1, 63, 64, 65, 512, 4096})  // each length alone (batch 1, the bench shapes)
    tc_prefill_case(s, {n}, 16, 32, DType::kBF16, 1140 + uint64_t(n));
  tc_prefill_case(s, std::vector<int32_t>(8, 512), 16, 32, DType::kBF16, 1150);  // 8 x 512
}

// A tc prefill then recurrent decode steps continue the sequence: prompts of 67, 130
// and 5 tokens (the last below the chunked minimum) through the tc chunked op, then 3
// one-token steps per request through the recurrent op, against the CPU token
// recurrence over the whole 70 / 133 / 8 tokens (qwen3_5.md §8.7: a chunked prefill's
// f32 state continues seamlessly in decode).
TEST(CudaGdn, RecurrentDecodeContinuesTensorCorePrefill) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t hk = 16, hv = 32, d = 128, steps = 3;
  const std::vector<int32_t> prompt{67, 130, 5}, slot{2, 0, 3};
  const int64_t B = int64_t(prompt.size()), slots = 4;
  std::vector<int32_t> full_qsl{0}, prompt_qsl{0};
  for (int32_t n : prompt) {
    full_qsl.push_back(full_qsl.back() + n + int32_t(steps));
    prompt_qsl.push_back(prompt_qsl.back() + n);
  }
  const int64_t T = full_qsl.back();
  // Token rows of the whole sequences, request by request; the prompt and each step
  // are gathered from them.
  Tensor qk_raw = randn({T, 2 * hk, d}, DType::kF32, 1.0, 1200),
         qk = Tensor::empty({T, 2 * hk, d}, DType::kBF16);
  l2_normalize(s.cpu, qk_raw, 1e-6f, qk);
  Tensor q = contiguous(s.cpu, qk.slice(1, 0, hk)), k = contiguous(s.cpu, qk.slice(1, hk, 2 * hk));
  Tensor v = randn({T, hv, d}, DType::kBF16, 1.0, 1202);
  Tensor g = mixed_gates(T, hv, 1203), beta = uniform({T, hv}, 0.05f, 0.95f, 1204);
  Tensor st0 = randn({slots, hv, d, d}, DType::kF32, 0.5, 1205);
  const float scale = 1.0f / std::sqrt(float(d));
  // A copy, not contiguous(st0): that returns st0 itself, and the reference's in-place
  // update would then become the GPU run's starting state.
  Tensor st_ref = Tensor::empty(st0.shape(), DType::kF32);
  Tensor out_ref = Tensor::empty({T, hv, d}, DType::kBF16);
  copy(s.cpu, st0, st_ref);
  gated_delta_rule_recurrent(s.cpu, q, k, v, g, beta, scale, i32(full_qsl), st_ref, i32(slot),
                             out_ref);

  // Rows of the whole batch by token index lists.
  auto gather = [&](const Tensor& x, const std::vector<int64_t>& rows) {
    Shape shape = x.shape();
    shape[0] = int64_t(rows.size());
    Tensor y = Tensor::empty(shape, x.dtype());
    const size_t row_bytes = size_t(x.nbytes() / size_t(x.size(0)));
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(static_cast<char*>(y.data_ptr()) + i * row_bytes,
                  static_cast<const char*>(x.data_ptr()) + size_t(rows[i]) * row_bytes, row_bytes);
    return y;
  };
  std::vector<int64_t> prompt_rows;
  for (int64_t b = 0; b < B; ++b)
    for (int32_t i = 0; i < prompt[size_t(b)]; ++i) prompt_rows.push_back(full_qsl[size_t(b)] + i);
  Tensor st_g = s.up(st0);
  const int64_t Tp = int64_t(prompt_rows.size());
  Tensor out_p = poisoned_gpu(s, {Tp, hv, d}, DType::kBF16);
  gated_delta_rule_chunked(s.gpu, s.up(gather(q, prompt_rows)), s.up(gather(k, prompt_rows)),
                           s.up(gather(v, prompt_rows)), s.up(gather(g, prompt_rows)),
                           s.up(gather(beta, prompt_rows)), scale, i32(prompt_qsl), st_g, i32(slot),
                           out_p);
  expect_close(s, gather(out_ref, prompt_rows), out_p, kBf16Rel, 1e-4,
               "tc prefill out vs CPU recurrence");
  std::vector<int32_t> step_qsl(size_t(B + 1));
  for (int64_t b = 0; b <= B; ++b) step_qsl[size_t(b)] = int32_t(b);
  for (int64_t i = 0; i < steps; ++i) {
    std::vector<int64_t> rows;
    for (int64_t b = 0; b < B; ++b) rows.push_back(full_qsl[size_t(b)] + prompt[size_t(b)] + i);
    Tensor out_s = poisoned_gpu(s, {B, hv, d}, DType::kBF16);
    gated_delta_rule_recurrent(s.gpu, s.up(gather(q, rows)), s.up(gather(k, rows)),
                               s.up(gather(v, rows)), s.up(gather(g, rows)),
                               s.up(gather(beta, rows)), scale, i32(step_qsl), st_g, i32(slot),
                               out_s);
    expect_close(s, gather(out_ref, rows), out_s, kBf16Rel, 1e-4,
                 "decode step " + std::to_string(i) + " after a tc prefill");
  }
  expect_close(s, st_ref, st_g, 1e-4, 1e-4, "state after tc prefill + 3 decode steps");
}

}  // namespace
}  // namespace vt
