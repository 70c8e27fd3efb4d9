// The CUDA Gated DeltaNet ops against their CPU twins at Qwen3.5 sizes: conv_dim
// 10240 (27B), GDN states 128 x 128 with Hv 48 (27B, 16 key heads) and 32 (35B),
// requests mixing a decode step, a prefill from an existing state and a fresh prompt
// that spans several chunks of 64, and a prefill batch up to 4096 tokens for the
// chunked kernels against both CPU forms. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cuda_compare.h"
#include "vt/ops/fill.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;
using cudatest::uniform;

Tensor i32(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

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
  gdn_gates(s.cpu, a, b, alog, dtb, g, beta);
  gdn_gates(s.gpu, s.up(a), s.up(b), s.up(alog), s.up(dtb), g_g, beta_g);
  expect_close(s, g, g_g, 1e-5, 0, "gdn g (softplus threshold 20 crossed by dt_bias ~ N(0, 10))");
  expect_close(s, beta, beta_g, 1e-6, 0, "gdn beta");

  Tensor o = randn({T, hv, 128}, DType::kF32, 1.0, 507), z = randn({T, hv, 128}, DType::kBF16, 2.0, 508);
  Tensor nw = randn({128}, DType::kBF16, 1.0, 509);
  Tensor y = Tensor::empty({T, hv, 128}, DType::kBF16), y_g = poisoned_gpu(s, {T, hv, 128}, DType::kBF16);
  gated_rms_norm(s.cpu, o, z, nw, 1e-6f, y);
  gated_rms_norm(s.gpu, s.up(o), s.up(z), s.up(nw), 1e-6f, y_g);
  expect_close(s, y, y_g, cudatest::kBf16ChainRel, 1e-6, "gated rms norm bf16");
}

void delta_case(Streams& s, int64_t hk, int64_t hv, bool chunked, DType io, uint64_t seed,
                int64_t dk = 128) {
  const int64_t dv = dk, slots = 5;
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
                           std::to_string(dk) + " " + dtype_name(io);
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

}  // namespace
}  // namespace vt
