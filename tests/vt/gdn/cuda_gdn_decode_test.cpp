// The GDN decode step on the GPU: the fused op vt::gdn_fused_recurrent
// (cuda/gdn/fused_recurrent.cu) and the conv without its token-to-request kernel
// (cuda/gdn/conv_gates.cu). Skipped without a GPU.
//   - The fused op against the CPU op at Qwen3.5 sizes (Hk 16, Hv 32 and 48, Dk = Dv =
//     128; batches 1, 3 and 64 of one token each in out-of-order slots; bf16), within
//     the CPU-vs-CUDA tolerances of the ops it fuses; requests of several tokens and the
//     tiny fixtures' Dk = Dv = 32 too.
//   - Against the unfused CUDA launches (l2_normalize, gdn_gates, gated_delta_rule_
//     recurrent, gated_rms_norm) bit for bit, over consecutive steps carrying the state:
//     the kernel repeats their arithmetic and rounding points.
//   - The op's choice of the kernel (the measured rule, KernelConfig::gdn_fused); the
//     tests above and below set gdn_fused = kOn on their stream so every batch runs the
//     kernel.
//   - The decode layer's conv and fused op captured in a CUDA graph (device indices):
//     two kernels, and every replay gives the bytes of an eager run, PDL off and on.
//   - The conv with device indices in both its forms (no more tokens than requests: one
//     kernel walking each request; more: the streaming kernel, then the state roll),
//     empty requests included, against the CPU.
//   - The streaming conv (T > B) at prefill shapes: 4096 tokens of one request, runs
//     crossing request boundaries, odd channel counts, x a column slice at unaligned
//     offsets and strides, K 2..4, bf16 and f32: out within the CPU tolerance (the GPU
//     sums taps with fma and its expf differs), state exact, and out and state byte-equal
//     to the request-walking kernel (the same expression) and host to device indices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/copy.h"
#include "vt/ops/fill.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/api.h"
#include "vt/cuda/gdn.h"
#include "vt/cuda/stream_state.h"
#endif

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::i32;
using cudatest::kBf16ChainRel;
using cudatest::kBf16Rel;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::ScopedKernels;
using cudatest::Streams;

// KernelConfig::gdn_fused = kOn: every batch on the fused kernel, past the op's rule.
void fused_kernel_always(KernelConfig& k) { k.gdn_fused = Toggle::kOn; }

// Starts of requests of the given lengths.
std::vector<int32_t> starts_of(const std::vector<int32_t>& lens) {
  std::vector<int32_t> qsl{0};
  for (int32_t n : lens) qsl.push_back(qsl.back() + n);
  return qsl;
}

// B distinct slots of B + spare, shuffled (out of order, with gaps).
std::vector<int32_t> shuffled_slots(int64_t B, int64_t spare, unsigned seed) {
  std::vector<int32_t> slot(static_cast<size_t>(B + spare));
  for (size_t i = 0; i < slot.size(); ++i) slot[i] = int32_t(i);
  std::shuffle(slot.begin(), slot.end(), std::mt19937(seed));
  slot.resize(size_t(B));
  return slot;
}

// One step of the GDN layer's decode on one device: act = conv output [T, q | k | v] and
// proj = the projection's z | b | a columns (both in the activation dtype), the layer's
// parameters, and the views the ops take.
struct Layer {
  int64_t hk, hv, dk, dv;
  Tensor alog, dtb, nw;  // [Hv], [Hv], [Dv]
  // beta rounds through the activation dtype (the layer's beta_round), or stays f32.
  bool f32_beta = false;
  DType beta_round(const Tensor& act) const { return f32_beta ? DType::kF32 : act.dtype(); }
  int64_t kd() const { return hk * dk; }
  int64_t vd() const { return hv * dv; }
  int64_t conv_dim() const { return 2 * kd() + vd(); }
  Tensor q(const Tensor& act) const { return act.slice(1, 0, kd()).reshape({act.size(0), hk, dk}); }
  Tensor k(const Tensor& act) const {
    return act.slice(1, kd(), 2 * kd()).reshape({act.size(0), hk, dk});
  }
  Tensor v(const Tensor& act) const {
    return act.slice(1, 2 * kd(), conv_dim()).reshape({act.size(0), hv, dv});
  }
  Tensor z(const Tensor& proj) const {
    return proj.slice(1, 0, vd()).reshape({proj.size(0), hv, dv});
  }
  Tensor b(const Tensor& proj) const { return proj.slice(1, vd(), vd() + hv); }
  Tensor a(const Tensor& proj) const { return proj.slice(1, vd() + hv, vd() + 2 * hv); }

  Layer on(Streams& s) const { return {hk, hv, dk, dv, s.up(alog), s.up(dtb), s.up(nw), f32_beta}; }

  // The fused op: y [T, Hv, Dv] in act's dtype.
  void fused(Stream& st, const Tensor& act, const Tensor& proj, const Tensor& qsl, Tensor& state,
             const Tensor& slots, Tensor& y) const {
    gdn_fused_recurrent(st, q(act), k(act), v(act), z(proj), a(proj), b(proj), alog, dtb,
                        beta_round(act), 1.0f / std::sqrt(float(dk)), nw, 1e-6f, qsl, state, slots,
                        y);
  }

  // The unfused launches the layer made before the fused op (on st's device).
  void unfused(Stream& st, const Tensor& act, const Tensor& proj, const Tensor& qsl, Tensor& state,
               const Tensor& slots, Tensor& y) const {
    const int64_t T = act.size(0);
    const Device dev = st.device();
    Tensor qk = Tensor::empty({T, 2 * hk, dk}, DType::kF32, dev);
    l2_normalize(st, act.slice(1, 0, 2 * kd()).reshape({T, 2 * hk, dk}), 1e-6f, qk);
    Tensor g = Tensor::empty({T, hv}, DType::kF32, dev);
    Tensor beta = Tensor::empty({T, hv}, DType::kF32, dev);
    gdn_gates(st, a(proj), b(proj), alog, dtb, beta_round(act), g, beta);
    Tensor o = Tensor::empty({T, hv, dv}, act.dtype(), dev);
    gated_delta_rule_recurrent(st, qk.slice(1, 0, hk), qk.slice(1, hk, 2 * hk), v(act), g, beta,
                               1.0f / std::sqrt(float(dk)), qsl, state, slots, o);
    gated_rms_norm(st, o, z(proj), nw, 1e-6f, y);
  }
};

// Key and value heads of d (or dv, when given).
Layer make_layer(int64_t hk, int64_t hv, int64_t d, DType dt, uint64_t seed, int64_t dv = 0) {
  dv = dv > 0 ? dv : d;
  return {hk,
          hv,
          d,
          dv,
          randn({hv}, dt, 1.0, seed),
          randn({hv}, dt, 10.0, seed + 1),  // a + dt_bias crosses softplus's threshold 20
          randn({dv}, dt, 1.0, seed + 2)};
}

// Host inputs of one step: act as SiLU outputs leave it (~N(0, 1)), z ~ N(0, 2), b and a
// ~ N(0, 3).
struct StepInputs {
  Tensor act, proj;
};
StepInputs make_inputs(const Layer& L, int64_t T, DType dt, uint64_t seed) {
  return {randn({T, L.conv_dim()}, dt, 1.0, seed),
          randn({T, L.vd() + 2 * L.hv}, dt, 2.0, seed + 1)};
}

// The step's state: random slots (the model's states after a prefill), the first
// request's slot zeroed (a sequence that starts here).
Tensor make_state(Streams& s, const Layer& L, int64_t slots, int32_t fresh, uint64_t seed) {
  Tensor st = randn({slots, L.hv, L.dk, L.dv}, DType::kF32, 0.5, seed);
  Tensor row = st.select(0, fresh);
  zero(s.cpu, row);
  return st;
}

// The fused op on the GPU (host and device indices) against the CPU op; value heads of
// dv when given (else d).
void fused_vs_cpu_case(Streams& s, int64_t hk, int64_t hv, int64_t d,
                       const std::vector<int32_t>& lens, DType dt, uint64_t seed,
                       int64_t dv = 0) {
  const int64_t B = int64_t(lens.size());
  const std::vector<int32_t> qsl = starts_of(lens), slot = shuffled_slots(B, 5, unsigned(seed));
  const int64_t T = qsl.back();
  Layer L = make_layer(hk, hv, d, dt, seed, dv);
  dv = L.dv;
  // beta in f32 here: CPU and CUDA sigmoids a few f32 ulps apart can round to neighbouring
  // bf16s (CudaGdn.FusedProjectionSlicesMatchCpu), and one such beta moves its head's state
  // by ~1e-3, past the f32 tolerance. The bf16 rounding is held bit for bit to gates_kernel
  // by FusedStepEqualsUnfusedLaunchesBitForBit (and gates_kernel to the CPU by CudaGdn.*).
  L.f32_beta = true;
  const Layer Lg = L.on(s);
  const StepInputs in = make_inputs(L, T, dt, seed + 10);
  Tensor st = make_state(s, L, B + 5, slot[0], seed + 20);
  Tensor st_g = s.up(st), st_dev = s.up(st);
  const Tensor act_g = s.up(in.act), proj_g = s.up(in.proj);
  Tensor y = Tensor::empty({T, hv, dv}, dt);
  Tensor y_g = poisoned_gpu(s, {T, hv, dv}, dt), y_dev = poisoned_gpu(s, {T, hv, dv}, dt);
  L.fused(s.cpu, in.act, in.proj, i32(qsl), st, i32(slot), y);
  Lg.fused(s.gpu, act_g, proj_g, i32(qsl), st_g, i32(slot), y_g);
  Lg.fused(s.gpu, act_g, proj_g, s.up(i32(qsl)), st_dev, s.up(i32(slot)), y_dev);
  std::string lens_str;
  for (int32_t n : lens) lens_str += " " + std::to_string(n);
  const std::string what = "fused Hk " + std::to_string(hk) + " Hv " + std::to_string(hv) + " D " +
                           std::to_string(d) + "/" + std::to_string(dv) + " lens" +
                           (B > 8 ? " x" + std::to_string(B) : lens_str) + " " + dtype_name(dt);
  // o may round to the neighbouring bf16 (f32 sums in other orders, rsqrtf against
  // 1/sqrt), then the norm's three roundings (kBf16ChainRel): up to about four ulps; o's
  // f32 differences near cancellation as the recurrent op's tests allow (1e-4 rms),
  // scaled by the norm and the gate.
  expect_close(s, y, y_g, dt == DType::kF32 ? 1e-4 : 2 * kBf16ChainRel, 1e-3, what + ": out");
  expect_close(s, st, st_g, 1e-4, 1e-4, what + ": state");
  expect_close(s, s.down(y_g), y_dev, 0, 0, what + ": out, device vs host indices");
  expect_close(s, s.down(st_g), st_dev, 0, 0, what + ": state, device vs host indices");
}

TEST(CudaGdnDecode, FusedStepMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  const ScopedKernels kernel(s.gpu, fused_kernel_always);
  uint64_t seed = 3000;
  for (int64_t B : {1, 3, 64})
    for (int64_t hv : {32, 48})
      fused_vs_cpu_case(s, 16, hv, 128, std::vector<int32_t>(size_t(B), 1), DType::kBF16,
                        seed += 100);
  fused_vs_cpu_case(s, 16, 32, 128, {1, 1, 1, 1}, DType::kF32, seed += 100);
  // Several tokens per request (the token loop), an empty request among them.
  fused_vs_cpu_case(s, 16, 48, 128, {3, 1, 0, 5}, DType::kBF16, seed += 100);
  // The tiny fixtures' heads (Dk = Dv = 32: a 4-warp CTA, lanes past Dv / 4 idle).
  fused_vs_cpu_case(s, 2, 6, 32, {1, 1, 1}, DType::kBF16, seed += 100);
  fused_vs_cpu_case(s, 2, 4, 32, {2, 1}, DType::kF32, seed += 100);
  // The widest value heads the kernel takes: a cluster of eight 32-column CTAs.
  fused_vs_cpu_case(s, 2, 4, 128, {1, 1, 1}, DType::kBF16, seed += 100, 256);
  // Value heads the fused kernel does not take (Dv > 256, Dv % 4 != 0): the op runs the
  // CUDA op sequence instead (gdn_fused_recurrent_supports), same contract.
#if VTLLM_WITH_CUDA
  ASSERT_TRUE(cuda::gdn_fused_recurrent_supports(128, 256));
  ASSERT_FALSE(cuda::gdn_fused_recurrent_supports(128, 288));
  ASSERT_FALSE(cuda::gdn_fused_recurrent_supports(32, 30));
#endif
  fused_vs_cpu_case(s, 2, 4, 64, {1, 1}, DType::kBF16, seed += 100, 288);
  fused_vs_cpu_case(s, 2, 4, 32, {1, 2}, DType::kF32, seed += 100, 30);
  // Odd configs' heads: Dk 48 and 80 (padded state heights), Dk != Dv; Dk 256 is past the
  // fused kernel (op sequence, the recurrence's 256 instantiation).
  fused_vs_cpu_case(s, 2, 4, 48, {1, 1, 2}, DType::kBF16, seed += 100, 80);
  fused_vs_cpu_case(s, 2, 4, 80, {1, 1}, DType::kF32, seed += 100, 48);
  fused_vs_cpu_case(s, 2, 4, 256, {1, 1}, DType::kBF16, seed += 100, 64);
}

// Consecutive decode steps through the fused op and through the unfused launches, state
// carried on each side: the same bytes at every step (out and every slot).
void fused_vs_unfused_case(Streams& s, int64_t B, int64_t hk, int64_t hv, int64_t d, DType dt,
                           uint64_t seed, int64_t dv = 0) {
  const std::vector<int32_t> qsl = starts_of(std::vector<int32_t>(size_t(B), 1));
  const std::vector<int32_t> slot = shuffled_slots(B, 3, unsigned(seed));
  const Layer Lg = make_layer(hk, hv, d, dt, seed, dv).on(s);
  dv = Lg.dv;
  const Tensor st0 = make_state(s, Lg, B + 3, slot[0], seed + 1);
  Tensor st_fused = s.up(st0), st_unfused = s.up(st0);
  const Tensor qsl_g = s.up(i32(qsl)), slot_g = s.up(i32(slot));
  for (int step = 0; step < 4; ++step) {
    const StepInputs in = make_inputs(Lg, B, dt, seed + 10 + uint64_t(step));
    const Tensor act = s.up(in.act), proj = s.up(in.proj);
    Tensor y_fused = poisoned_gpu(s, {B, hv, dv}, dt), y_unfused = poisoned_gpu(s, {B, hv, dv}, dt);
    Lg.fused(s.gpu, act, proj, qsl_g, st_fused, slot_g, y_fused);
    Lg.unfused(s.gpu, act, proj, qsl_g, st_unfused, slot_g, y_unfused);
    const std::string what = "B " + std::to_string(B) + " Hv " + std::to_string(hv) + " D " +
                             std::to_string(d) + "/" + std::to_string(dv) + " " + dtype_name(dt) +
                             " step " + std::to_string(step);
    // Bit for bit: a difference means a rounding point or an order of the unfused
    // kernels (row_norm_kernel, gates_kernel, delta_rule_rows_kernel) is not repeated.
    expect_close(s, s.down(y_unfused), y_fused, 0, 0, what + ": out, fused vs unfused");
    expect_close(s, s.down(st_unfused), st_fused, 0, 0, what + ": state, fused vs unfused");
  }
}

TEST(CudaGdnDecode, FusedStepEqualsUnfusedLaunchesBitForBit) {
  VT_REQUIRE_GPU();
  Streams s;
  const ScopedKernels kernel(s.gpu, fused_kernel_always);
  fused_vs_unfused_case(s, 1, 16, 32, 128, DType::kBF16, 4000);
  fused_vs_unfused_case(s, 3, 16, 48, 128, DType::kBF16, 4100);
  fused_vs_unfused_case(s, 64, 16, 32, 128, DType::kBF16, 4200);
  fused_vs_unfused_case(s, 5, 16, 32, 128, DType::kF32, 4300);
  fused_vs_unfused_case(s, 3, 2, 6, 32, DType::kBF16, 4400);
  fused_vs_unfused_case(s, 3, 2, 4, 128, DType::kBF16, 4500, 256);  // a cluster of 8 CTAs
}

// The op's choice between the fused kernel and the op sequence (vt/cuda/gdn.h): the
// measured rule by default, the switch's word otherwise, never a shape the kernel lacks.
TEST(CudaGdnDecode, FusedKernelChoiceFollowsTheRule) {
  VT_REQUIRE_GPU();
#if VTLLM_WITH_CUDA
  Streams s;
  s.gpu.set_kernel_config(KernelConfig{});  // the rule, whatever the environment says
  const int64_t two_waves = 2 * 8 * s.gpu.cuda_state().num_sms;  // CTAs of 32 columns
  for (int64_t B : {1, 8, 16, 17, 32, 64, 256})
    for (int64_t hv : {32, 48}) {
      const bool want = B * hv * 4 <= two_waves;
      EXPECT_EQ(cuda::gdn_fused_recurrent_selected(s.gpu, B, hv, 128, 128), want)
          << "B " << B << " Hv " << hv;
      EXPECT_EQ(cuda::gdn_fused_recurrent_selected(s.gpu, B, hv, 128, 64), B * hv * 2 <= two_waves)
          << "Dv 64";
    }
  {
    const ScopedKernels on(s.gpu, fused_kernel_always);
    EXPECT_TRUE(cuda::gdn_fused_recurrent_selected(s.gpu, 256, 48, 128, 128));
    EXPECT_FALSE(cuda::gdn_fused_recurrent_selected(s.gpu, 1, 32, 128, 288));
  }
  {
    const ScopedKernels off(s.gpu, [](KernelConfig& k) { k.gdn_fused = Toggle::kOff; });
    EXPECT_FALSE(cuda::gdn_fused_recurrent_selected(s.gpu, 1, 32, 128, 128));
  }
#endif
}

// The decode layer between the projections, as GatedDeltaNet::forward issues it for a
// padded graph step: conv on the mixed columns of a fixed projection buffer, then the
// fused op, device indices, fixed states.
struct GraphStep {
  Layer L;
  Tensor proj, conv_w, conv_state, state, qsl, slots;  // device, fixed addresses
  Tensor run(Stream& st) {
    const int64_t B = proj.size(0), cd = L.conv_dim();
    Tensor act = Tensor::empty({B, cd}, proj.dtype(), st.device());
    causal_conv1d_silu(st, proj.slice(1, 0, cd), conv_w, qsl, conv_state, slots, act);
    Tensor y = Tensor::empty({B, L.hv, L.dv}, proj.dtype(), st.device());
    L.fused(st, act, proj.slice(1, cd, proj.size(1)), qsl, state, slots, y);
    return y;
  }
};

TEST(CudaGdnDecode, CapturedStepReplaysEagerBytes) {
  VT_REQUIRE_GPU();
#if VTLLM_WITH_CUDA
  Streams s;
  const ScopedKernels kernel(s.gpu, fused_kernel_always);
  const int64_t B = 8, hk = 16, hv = 32, d = 128, K = 4, slots = B + 4;
  const DType dt = DType::kBF16;
  GraphStep g{make_layer(hk, hv, d, dt, 5000).on(s), {}, {}, {}, {}, {}, {}};
  const int64_t cd = g.L.conv_dim(), width = cd + g.L.vd() + 2 * hv;
  g.proj = s.up(randn({B, width}, dt, 1.0, 5010));
  g.conv_w = s.up(randn({cd, K}, dt, 0.5, 5011));
  const Tensor conv0 = randn({slots, K - 1, cd}, DType::kF32, 1.0, 5012);
  const Tensor state0 = randn({slots, hv, d, d}, DType::kF32, 0.5, 5013);
  g.conv_state = s.up(conv0);
  g.state = s.up(state0);
  g.qsl = s.up(i32(starts_of(std::vector<int32_t>(size_t(B), 1))));
  g.slots = s.up(i32(shuffled_slots(B, 4, 5014)));
  // New inputs and slots in the fixed buffers; the states reset to their start values.
  const auto fill = [&](uint64_t seed) {
    copy(s.gpu, s.up(randn({B, width}, dt, 1.0, seed)), g.proj);
    copy(s.gpu, s.up(i32(shuffled_slots(B, 4, unsigned(seed)))), g.slots);
    copy(s.gpu, s.up(conv0), g.conv_state);
    copy(s.gpu, s.up(state0), g.state);
  };
  for (bool pdl : {false, true}) {
    const ScopedKernels scoped(s.gpu,
                               [&](KernelConfig& k) { k.pdl = pdl ? Toggle::kOn : Toggle::kAuto; });
    fill(5020);
    g.run(s.gpu);  // warm-up: scratch sized before capture
    s.gpu.synchronize();
    s.gpu.begin_capture();
    Tensor graph_out = g.run(s.gpu);
    cuda::GraphExecPtr graph = s.gpu.end_capture();
    // conv_request_kernel and gdn_fused_recurrent_kernel: no token-to-request kernel, no
    // state roll, no separate norm, gate or recurrence launches.
    EXPECT_EQ(Stream::graph_kernel_nodes(*graph), 2);
    for (uint64_t seed : {5030u, 5040u}) {
      fill(seed);
      const Tensor eager = s.down(g.run(s.gpu));
      const Tensor conv_eager = s.down(g.conv_state), state_eager = s.down(g.state);
      fill(seed);
      s.gpu.replay(*graph);
      const std::string what =
          std::string("PDL ") + (pdl ? "on" : "off") + ", inputs " + std::to_string(seed);
      expect_close(s, eager, graph_out, 0, 0, what + ": out, replay vs eager");
      expect_close(s, conv_eager, g.conv_state, 0, 0, what + ": conv state, replay vs eager");
      expect_close(s, state_eager, g.state, 0, 0, what + ": state, replay vs eager");
    }
    graph_out = Tensor();
    graph.reset();
    s.gpu.synchronize();
    cuda::release_graph_pool(0);
  }
#endif
}

// The conv with device indices (no token-to-request kernel): T <= B takes the request-
// walking kernel, T > B the token-parallel one; empty requests in both. Against the CPU
// (state exact: raw inputs), and host indices give the same bytes.
void conv_case(Streams& s, const std::vector<int32_t>& lens, uint64_t seed) {
  const int64_t C = 10240, K = 4, B = int64_t(lens.size());
  const std::vector<int32_t> qsl = starts_of(lens), slot = shuffled_slots(B, 3, unsigned(seed));
  const int64_t T = qsl.back();
  // x: the mixed columns of a wider projection (row stride past C).
  const Tensor xw = randn({T, C + 64}, DType::kBF16, 1.0, seed), x = xw.slice(1, 0, C);
  const Tensor w = randn({C, K}, DType::kBF16, 0.5, seed + 1);
  Tensor st = randn({B + 3, K - 1, C}, DType::kF32, 1.0, seed + 2);
  Tensor st_host = s.up(st), st_dev = s.up(st);
  const Tensor xw_g = s.up(xw), x_g = xw_g.slice(1, 0, C), w_g = s.up(w);
  Tensor out = Tensor::empty({T, C}, DType::kBF16);
  Tensor out_host = poisoned_gpu(s, {T, C}, DType::kBF16);
  Tensor out_dev = poisoned_gpu(s, {T, C}, DType::kBF16);
  causal_conv1d_silu(s.cpu, x, w, i32(qsl), st, i32(slot), out);
  causal_conv1d_silu(s.gpu, x_g, w_g, i32(qsl), st_host, i32(slot), out_host);
  causal_conv1d_silu(s.gpu, x_g, w_g, s.up(i32(qsl)), st_dev, s.up(i32(slot)), out_dev);
  std::string what = "conv lens";
  for (int32_t n : lens) what += " " + std::to_string(n);
  expect_close(s, out, out_dev, kBf16ChainRel, 1e-6, what + ": out (device indices)");
  expect_close(s, st, st_dev, 0, 0, what + ": state (device indices; raw inputs, exact)");
  expect_close(s, s.down(out_host), out_dev, 0, 0, what + ": out, device vs host indices");
  expect_close(s, s.down(st_host), st_dev, 0, 0, what + ": state, device vs host indices");
}

TEST(CudaGdnDecode, ConvWithoutRequestMapMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  conv_case(s, {1, 1, 1, 1, 1}, 6000);    // a decode step: T == B
  conv_case(s, {2, 0, 1, 2, 0}, 6100);    // T == B, uneven: requests walk several tokens
  conv_case(s, {1, 0, 0, 2}, 6200);       // T < B
  conv_case(s, {3, 0, 1, 130, 0}, 6300);  // T > B: binary search past empty requests
  conv_case(s, {0, 2, 0}, 6400);          // T < B, the first request empty
  conv_case(s, std::vector<int32_t>(64, 1), 6500);
}

// The streaming form (T > B) against the CPU, and byte for byte against the request-
// walking form: the same requests padded with empty ones (their own zeroed slots, never
// touched) until B >= T, which takes conv_request_kernel. x is columns [col0, col0 + C) of
// a [T, width] projection: col0 and width pick the vector or the scalar loads.
void stream_conv_case(Streams& s, const std::vector<int32_t>& lens, int64_t C, int64_t K, DType dt,
                      int64_t col0, int64_t width, uint64_t seed) {
  const int64_t B = int64_t(lens.size()), H = K - 1, spare = 3;
  const std::vector<int32_t> qsl = starts_of(lens), slot = shuffled_slots(B, spare, unsigned(seed));
  const int64_t T = qsl.back();
  const Tensor xw = randn({T, width}, dt, 1.0, seed), x = xw.slice(1, col0, col0 + C);
  const Tensor w = randn({C, K}, dt, 0.5, seed + 1);
  Tensor st = randn({B + spare, H, C}, DType::kF32, 1.0, seed + 2);
  Tensor st_host = s.up(st), st_dev = s.up(st);
  const Tensor xw_g = s.up(xw), x_g = xw_g.slice(1, col0, col0 + C), w_g = s.up(w);
  Tensor out = Tensor::empty({T, C}, dt);
  Tensor out_host = poisoned_gpu(s, {T, C}, dt), out_dev = poisoned_gpu(s, {T, C}, dt);
  const Tensor st_before = s.up(st);  // the CPU op rolls st in place
  causal_conv1d_silu(s.cpu, x, w, i32(qsl), st, i32(slot), out);
  causal_conv1d_silu(s.gpu, x_g, w_g, i32(qsl), st_host, i32(slot), out_host);
  causal_conv1d_silu(s.gpu, x_g, w_g, s.up(i32(qsl)), st_dev, s.up(i32(slot)), out_dev);

  // The request-walking form: B + T requests (the last T empty, T >= the tokens), slots
  // B + spare .. of a larger state whose first B + spare slots are st's.
  std::vector<int32_t> lens_rw = lens, slot_rw = slot;
  for (int64_t i = 0; i < T; ++i) {
    lens_rw.push_back(0);
    slot_rw.push_back(int32_t(B + spare + i));
  }
  Tensor st_rw = Tensor::empty({B + spare + T, H, C}, DType::kF32, s.gpu.device());
  zero(s.gpu, st_rw);
  Tensor st_rw_head = st_rw.slice(0, 0, B + spare);
  copy(s.gpu, st_before, st_rw_head);
  Tensor out_rw = poisoned_gpu(s, {T, C}, dt);
  causal_conv1d_silu(s.gpu, x_g, w_g, s.up(i32(starts_of(lens_rw))), st_rw, s.up(i32(slot_rw)),
                     out_rw);

  std::string what = "stream conv C " + std::to_string(C) + " K " + std::to_string(K) + " " +
                     dtype_name(dt) + " x cols [" + std::to_string(col0) + ", +C) of " +
                     std::to_string(width) + ", lens";
  for (int32_t n : lens) what += " " + std::to_string(n);
  // bf16: conv then SiLU both rounded (kBf16ChainRel); f32: fma against the CPU's
  // multiply-add and two expf implementations, a few f32 ulps.
  expect_close(s, out, out_dev, dt == DType::kF32 ? 1e-5 : kBf16ChainRel, 1e-6,
               what + ": out vs CPU");
  expect_close(s, st, st_dev, 0, 0, what + ": state vs CPU (raw inputs, exact)");
  expect_close(s, s.down(out_host), out_dev, 0, 0, what + ": out, device vs host indices");
  expect_close(s, s.down(st_host), st_dev, 0, 0, what + ": state, device vs host indices");
  expect_close(s, s.down(out_rw), out_dev, 0, 0, what + ": out, streaming vs request-walking");
  expect_close(s, s.down(st_rw_head), st_dev, 0, 0,
               what + ": state, streaming + roll vs request-walking");
}

TEST(CudaGdnDecode, StreamingConvMatchesCpuAndRequestWalkingForm) {
  VT_REQUIRE_GPU();
  Streams s;
  const DType bf16 = DType::kBF16, f32 = DType::kF32;
  // The 9B layer's prefill: one request of 4096 tokens, x the mixed columns of the fused
  // projection (conv_dim 8192 of 8192 + 4096 + 2 x 32; aligned: the vector loads).
  stream_conv_case(s, {4096}, 8192, 4, bf16, 0, 12352, 7000);
  stream_conv_case(s, {4096}, 1027, 2, f32, 0, 1031, 7010);   // odd C, odd stride: scalar
  stream_conv_case(s, {4096}, 1024, 3, bf16, 1, 1100, 7020);  // unaligned slice: scalar
  // Runs cross request boundaries (runs are 8 .. 64 tokens); empty requests between.
  const std::vector<int32_t> mixed{1, 3, 17, 63, 64, 65, 200}, rev{200, 65, 64, 63, 17, 3, 1};
  const std::vector<int32_t> gaps{0, 5, 0, 64, 1, 0, 130, 9};
  uint64_t seed = 7100;
  for (int64_t K : {2, 3, 4})
    for (DType dt : {bf16, f32}) {
      stream_conv_case(s, mixed, 1027, K, dt, 0, 1032, seed += 10);     // odd C: a partial group
      stream_conv_case(s, rev, 2048, K, dt, 0, 2048 + 64, seed += 10);  // vector loads
      stream_conv_case(s, gaps, 2048, K, dt, 3, 2048 + 8, seed += 10);  // unaligned slice
    }
  // The 27B width (key 2048 x 2 + value 6144) over many short requests.
  stream_conv_case(s, std::vector<int32_t>(40, 7), 10240, 4, bf16, 0, 10240 + 6144 + 96, 7900);
}

}  // namespace
}  // namespace vt
