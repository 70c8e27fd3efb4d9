// Programmatic dependent launch of the small kernels (vt/cuda/launch.cuh, the switch
// KernelConfig::pdl): inside
// a captured CUDA graph every PDL-aware kernel may be launched while the kernel before it
// still runs, so each must wait before it reads. Checked three ways:
//   - a GDN decode step (embedding, a device copy, add_rms_norm, skinny linear,
//     silu_and_mul, conv, l2_normalize, gates, the recurrent delta rule, gated_rms_norm,
//     sigmoid, mul, add, lm_head, argmax) captured once and replayed with new inputs, new
//     state and new slots each time: every stage equals its CPU op applied to the GPU's
//     own inputs of that stage, and the whole replay equals the same step run eagerly,
//     byte for byte;
//   - a slow producer (the skinny GEMM with PDL, or an rms_norm over 8 MB rows, both
//     triggering their dependents early) followed by each PDL-aware op reading its
//     output, whose old contents are different random values: a consumer that skipped
//     its wait would read those;
//   - PDL off, auto (the skinny GEMM only) and on (KernelConfig::pdl, here set on the
//     stream) give identical bytes, off records no programmatic graph edge and on the
//     small kernels' on top of auto's.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gdn.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"
#include "vt/ops/sampling.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/api.h"
#include "vt/cuda/elementwise.h"
#include "vt/cuda/gemm.h"
#include "vt/ops/args.h"
#endif

namespace vt {
namespace {

#if VTLLM_WITH_CUDA

using cudatest::expect_close;
using cudatest::i32;
using cudatest::kBf16ChainRel;
using cudatest::kBf16Rel;
using cudatest::randn;
using cudatest::ScopedKernels;
using cudatest::Streams;
using cudatest::uniform;

constexpr DType kBF16 = DType::kBF16, kF32 = DType::kF32, kI32 = DType::kI32;

// A host copy that owns its bytes (contiguous(cpu, t) may return t itself).
Tensor own(Streams& s, const Tensor& host) {
  Tensor t = Tensor::empty(host.shape(), host.dtype());
  copy(s.cpu, host, t);
  return t;
}

bool same_bytes(Streams& s, const Tensor& a, const Tensor& b) {
  const Tensor ha = contiguous(s.cpu, a.device().is_cpu() ? a : s.down(a));
  const Tensor hb = contiguous(s.cpu, b.device().is_cpu() ? b : s.down(b));
  return ha.dtype() == hb.dtype() && ha.shape() == hb.shape() &&
         std::memcmp(ha.data_ptr(), hb.data_ptr(), ha.nbytes()) == 0;
}

// ---- A GDN decode step of B requests, shaped like the 9B model's layer at reduced widths.

struct Dims {
  int64_t B = 4, H = 1024, I = 1024, hk = 4, hv = 8, d = 128, K = 4, V = 4096, slots = 11;
  int64_t kd() const { return hk * d; }
  int64_t vd() const { return hv * d; }  // == I: the add below takes act
  int64_t cd() const { return 2 * kd() + vd(); }
  int64_t width() const { return cd() + vd() + 2 * hv; }  // q k v | z | b | a
};

// Every tensor the step writes (fresh allocations: graph-pool blocks when captured).
struct StepOut {
  Tensor x, xc, h1, gu, act, proj, conv, qk, g, beta, o, y, sg, ym, ya, logits, next;
  std::vector<Tensor> all() const {
    return {x, xc, h1, gu, act, proj, conv, qk, g, beta, o, y, sg, ym, ya, logits, next};
  }
};

// The step's inputs of one replay, on the host.
struct StepIn {
  Tensor ids, residual, conv_state, state;
  std::vector<int32_t> slots;
};

struct DecodeStep {
  Dims d;
  // Weights: host (for the CPU arm) and device.
  Tensor table, w_n1, w_gu, w_in, w_conv, a_log, dt_bias, w_gn, w_out;
  Tensor table_g, w_n1_g, w_gu_g, w_in_g, w_conv_g, a_log_g, dt_bias_g, w_gn_g, w_out_g;
  // Fixed device buffers the step reads (and updates: residual, conv_state, state).
  Tensor ids_g, residual_g, conv_state_g, state_g, qsl_g, slots_g;

  explicit DecodeStep(Streams& s) {
    const double sh = 1.0 / std::sqrt(double(d.H)), si = 1.0 / std::sqrt(double(d.I));
    table = randn({d.V, d.H}, kBF16, 1.0, 1);
    w_n1 = randn({d.H}, kBF16, 0.2, 2);
    w_gu = randn({2 * d.I, d.H}, kBF16, sh, 3);
    w_in = randn({d.width(), d.I}, kBF16, si, 4);
    w_conv = randn({d.cd(), d.K}, kBF16, 0.5, 5);
    a_log = randn({d.hv}, kBF16, 1.0, 6);
    dt_bias = randn({d.hv}, kBF16, 1.0, 7);
    w_gn = randn({d.d}, kBF16, 1.0, 8);
    w_out = randn({d.V, d.vd()}, kBF16, 1.0 / std::sqrt(double(d.vd())), 9);
    table_g = s.up(table), w_n1_g = s.up(w_n1), w_gu_g = s.up(w_gu), w_in_g = s.up(w_in);
    w_conv_g = s.up(w_conv), a_log_g = s.up(a_log), dt_bias_g = s.up(dt_bias);
    w_gn_g = s.up(w_gn), w_out_g = s.up(w_out);
    std::vector<int32_t> qsl;
    for (int64_t b = 0; b <= d.B; ++b) qsl.push_back(int32_t(b));
    qsl_g = s.up(i32(qsl));
    const StepIn in = inputs(0);
    ids_g = s.up(in.ids), residual_g = s.up(in.residual);
    conv_state_g = s.up(in.conv_state), state_g = s.up(in.state), slots_g = s.up(i32(in.slots));
  }

  StepIn inputs(uint64_t seed) const {
    StepIn in;
    std::mt19937_64 rng(seed);
    std::vector<int32_t> ids(size_t(d.B)), slots(size_t(d.slots));
    for (auto& id : ids) id = int32_t(rng() % uint64_t(d.V));
    for (int64_t i = 0; i < d.slots; ++i) slots[size_t(i)] = int32_t(i);
    std::shuffle(slots.begin(), slots.end(), rng);
    slots.resize(size_t(d.B));
    in.ids = i32(ids);
    in.slots = slots;
    in.residual = randn({d.B, d.H}, kBF16, 1.0, seed + 1);
    in.conv_state = randn({d.slots, d.K - 1, d.cd()}, kF32, 1.0, seed + 2);
    in.state = randn({d.slots, d.hv, d.d, d.d}, kF32, 0.3, seed + 3);
    return in;
  }

  void load(Streams& s, const StepIn& in) {
    copy(s.gpu, s.up(in.ids), ids_g);
    copy(s.gpu, s.up(in.residual), residual_g);
    copy(s.gpu, s.up(in.conv_state), conv_state_g);
    copy(s.gpu, s.up(in.state), state_g);
    copy(s.gpu, s.up(i32(in.slots)), slots_g);
  }

  StepOut run(Stream& s) {
    const int64_t B = d.B, cd = d.cd(), vd = d.vd(), kd = d.kd(), hk = d.hk, hv = d.hv;
    const Device dev = s.device();
    StepOut o;
    o.x = Tensor::empty({B, d.H}, kBF16, dev);
    embedding(s, table_g, ids_g, o.x);
    // A memcpy node (a contiguous device copy) before a PDL launch: the edge from a
    // non-kernel node must stay a full dependency.
    o.xc = Tensor::empty({B, d.H}, kBF16, dev);
    copy(s, o.x, o.xc);
    o.h1 = Tensor::empty({B, d.H}, kBF16, dev);
    add_rms_norm(s, residual_g, o.xc, w_n1_g, 1e-6f, RmsNormKind::kOnePlus, o.h1);
    o.gu = Tensor::empty({B, 2 * d.I}, kBF16, dev);
    linear(s, o.h1, w_gu_g, o.gu);
    o.act = Tensor::empty({B, d.I}, kBF16, dev);
    silu_and_mul(s, o.gu, o.act);
    o.proj = Tensor::empty({B, d.width()}, kBF16, dev);
    linear(s, o.act, w_in_g, o.proj);
    o.conv = Tensor::empty({B, cd}, kBF16, dev);
    causal_conv1d_silu(s, o.proj.slice(1, 0, cd), w_conv_g, qsl_g, conv_state_g, slots_g, o.conv);
    o.qk = Tensor::empty({B, 2 * hk, d.d}, kF32, dev);
    l2_normalize(s, o.conv.slice(1, 0, 2 * kd).reshape({B, 2 * hk, d.d}), 1e-6f, o.qk);
    o.g = Tensor::empty({B, hv}, kF32, dev);
    o.beta = Tensor::empty({B, hv}, kF32, dev);
    gdn_gates(s, o.proj.slice(1, cd + vd + hv, d.width()), o.proj.slice(1, cd + vd, cd + vd + hv),
              a_log_g, dt_bias_g, kBF16, o.g, o.beta);
    o.o = Tensor::empty({B, hv, d.d}, kBF16, dev);
    gated_delta_rule_recurrent(s, o.qk.slice(1, 0, hk), o.qk.slice(1, hk, 2 * hk),
                               o.conv.slice(1, 2 * kd, cd).reshape({B, hv, d.d}), o.g, o.beta,
                               scale(), qsl_g, state_g, slots_g, o.o);
    o.y = Tensor::empty({B, hv, d.d}, kBF16, dev);
    gated_rms_norm(s, o.o, o.proj.slice(1, cd, cd + vd).reshape({B, hv, d.d}), w_gn_g, 1e-6f, o.y);
    const Tensor yf = o.y.view({B, vd});
    o.sg = Tensor::empty({B, vd}, kBF16, dev);
    sigmoid(s, yf, o.sg);
    o.ym = Tensor::empty({B, vd}, kBF16, dev);
    mul(s, yf, o.sg, o.ym);
    o.ya = Tensor::empty({B, vd}, kBF16, dev);
    add(s, o.ym, o.act, o.ya);
    o.logits = Tensor::empty({B, d.V}, kBF16, dev);
    linear(s, o.ya, w_out_g, o.logits);
    o.next = Tensor::empty({B}, kI32, dev);
    argmax(s, o.logits, o.next);
    return o;
  }

  float scale() const { return 1.0f / std::sqrt(float(d.d)); }

  // Each stage of a finished step (g: its outputs on the host) against the CPU op applied
  // to the GPU's own inputs of that stage; `in` the step's inputs, residual/conv/state
  // the buffers after the step (host).
  void check(Streams& s, const StepIn& in, const StepOut& g, const Tensor& residual,
             const Tensor& conv_state, const Tensor& state, const std::string& what) {
    const int64_t B = d.B, cd = d.cd(), vd = d.vd(), kd = d.kd(), hk = d.hk, hv = d.hv;
    Stream& c = s.cpu;
    Tensor x = Tensor::empty({B, d.H}, kBF16);
    embedding(c, table, in.ids, x);
    expect_close(s, x, g.x, 0, 0, what + ": embedding");
    EXPECT_TRUE(same_bytes(s, g.x, g.xc)) << what << ": device copy of x";
    Tensor res = own(s, in.residual), h1 = Tensor::empty({B, d.H}, kBF16);
    add_rms_norm(c, res, g.xc, w_n1, 1e-6f, RmsNormKind::kOnePlus, h1);
    expect_close(s, res, residual, 0, 0, what + ": add_rms_norm residual");
    expect_close(s, h1, g.h1, kBf16Rel, 0, what + ": add_rms_norm out");
    Tensor gu = Tensor::empty({B, 2 * d.I}, kBF16);
    linear(c, g.h1, w_gu, gu);
    expect_close(s, gu, g.gu, kBf16Rel, 2e-5, what + ": gate_up linear");
    Tensor act = Tensor::empty({B, d.I}, kBF16);
    silu_and_mul(c, g.gu, act);
    expect_close(s, act, g.act, kBf16ChainRel, 0, what + ": silu_and_mul");
    Tensor proj = Tensor::empty({B, d.width()}, kBF16);
    linear(c, g.act, w_in, proj);
    expect_close(s, proj, g.proj, kBf16Rel, 2e-5, what + ": in_proj linear");
    Tensor cs = own(s, in.conv_state), conv = Tensor::empty({B, cd}, kBF16);
    std::vector<int32_t> qsl;
    for (int64_t b = 0; b <= B; ++b) qsl.push_back(int32_t(b));
    causal_conv1d_silu(c, g.proj.slice(1, 0, cd), w_conv, i32(qsl), cs, i32(in.slots), conv);
    expect_close(s, conv, g.conv, kBf16ChainRel, 1e-6, what + ": conv1d+silu");
    expect_close(s, cs, conv_state, 0, 0, what + ": conv state");
    Tensor qk = Tensor::empty({B, 2 * hk, d.d}, kF32);
    l2_normalize(c, g.conv.slice(1, 0, 2 * kd).reshape({B, 2 * hk, d.d}), 1e-6f, qk);
    expect_close(s, qk, g.qk, 1e-5, 1e-6, what + ": l2_normalize");
    Tensor gg = Tensor::empty({B, hv}, kF32), beta = Tensor::empty({B, hv}, kF32);
    gdn_gates(c, g.proj.slice(1, cd + vd + hv, d.width()), g.proj.slice(1, cd + vd, cd + vd + hv),
              a_log, dt_bias, kBF16, gg, beta);
    expect_close(s, gg, g.g, 1e-5, 0, what + ": gates g");
    expect_close(s, beta, g.beta, kBf16Rel, 0, what + ": gates beta");
    Tensor st = own(s, in.state), o = Tensor::empty({B, hv, d.d}, kBF16);
    gated_delta_rule_recurrent(c, g.qk.slice(1, 0, hk), g.qk.slice(1, hk, 2 * hk),
                               g.conv.slice(1, 2 * kd, cd).reshape({B, hv, d.d}), g.g, g.beta,
                               scale(), i32(qsl), st, i32(in.slots), o);
    expect_close(s, o, g.o, kBf16Rel, 1e-4, what + ": delta rule out");
    expect_close(s, st, state, 1e-4, 1e-4, what + ": delta rule state");
    Tensor y = Tensor::empty({B, hv, d.d}, kBF16);
    gated_rms_norm(c, g.o, g.proj.slice(1, cd, cd + vd).reshape({B, hv, d.d}), w_gn, 1e-6f, y);
    expect_close(s, y, g.y, kBf16ChainRel, 1e-6, what + ": gated_rms_norm");
    const Tensor yf = g.y.view({B, vd});
    Tensor sg = Tensor::empty({B, vd}, kBF16), ym = Tensor::empty({B, vd}, kBF16);
    Tensor ya = Tensor::empty({B, vd}, kBF16);
    sigmoid(c, yf, sg);
    expect_close(s, sg, g.sg, kBf16Rel, 0, what + ": sigmoid");
    mul(c, yf, g.sg, ym);
    expect_close(s, ym, g.ym, kBf16Rel, 0, what + ": mul");
    add(c, g.ym, g.act, ya);
    expect_close(s, ya, g.ya, kBf16Rel, 0, what + ": add");
    Tensor logits = Tensor::empty({B, d.V}, kBF16);
    linear(c, g.ya, w_out, logits);
    expect_close(s, logits, g.logits, kBf16Rel, 2e-5, what + ": lm_head linear");
    Tensor next = Tensor::empty({B}, kI32);
    argmax(c, g.logits, next);
    EXPECT_TRUE(same_bytes(s, next, g.next)) << what << ": argmax";
  }
};

StepOut download(Streams& s, const StepOut& o) {
  StepOut h = o;
  for (Tensor* t : {&h.x, &h.xc, &h.h1, &h.gu, &h.act, &h.proj, &h.conv, &h.qk, &h.g, &h.beta, &h.o,
                    &h.y, &h.sg, &h.ym, &h.ya, &h.logits, &h.next})
    *t = s.down(*t);
  return h;
}

// What one replay left: the step's outputs and the buffers it updated, on the host.
struct Replayed {
  StepOut out;
  Tensor residual, conv_state, state;
  std::vector<Tensor> all() const {
    std::vector<Tensor> v = out.all();
    v.insert(v.end(), {residual, conv_state, state});
    return v;
  }
};

// Captures the step with KernelConfig::pdl = `pdl`, replays it once per seed (new inputs
// each time) and returns what each replay left; *edges: the graph's programmatic edges.
std::vector<Replayed> replay_step(Streams& s, DecodeStep& step, Toggle pdl,
                                  const std::vector<uint64_t>& seeds, int64_t* edges) {
  const ScopedKernels scoped(s.gpu, [&](KernelConfig& k) { k.pdl = pdl; });
  step.run(s.gpu);  // warm-up: plans and scratch sized before the capture
  s.gpu.synchronize();
  s.gpu.begin_capture();
  StepOut graph_out = step.run(s.gpu);
  cuda::GraphExecPtr graph = s.gpu.end_capture();
  *edges = cuda::graph_programmatic_edges(*graph);
  std::vector<Replayed> result;
  for (uint64_t seed : seeds) {
    step.load(s, step.inputs(seed));
    s.gpu.replay(*graph);
    result.push_back({download(s, graph_out), s.down(step.residual_g), s.down(step.conv_state_g),
                      s.down(step.state_g)});
  }
  graph_out = StepOut();
  graph.reset();
  s.gpu.synchronize();
  cuda::release_graph_pool(0);
  return result;
}

std::vector<uint64_t> replay_seeds(int n) {
  std::vector<uint64_t> seeds;
  for (int i = 0; i < n; ++i) seeds.push_back(100 + 10 * uint64_t(i));
  return seeds;
}

TEST(CudaPdl, DecodeStepGraphReplaysEqualEagerAndCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  DecodeStep step(s);
  const std::vector<uint64_t> seeds = replay_seeds(12);
  int64_t edges = 0;
  const std::vector<Replayed> replays = replay_step(s, step, Toggle::kOn, seeds, &edges);
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string what = "replay " + std::to_string(i);
    const StepIn in = step.inputs(seeds[i]);
    const Replayed& r = replays[i];
    step.check(s, in, r.out, r.residual, r.conv_state, r.state, what);
    step.load(s, in);
    const StepOut eager = download(s, step.run(s.gpu));
    const Replayed e{eager, s.down(step.residual_g), s.down(step.conv_state_g),
                     s.down(step.state_g)};
    const std::vector<Tensor> want = e.all(), got = r.all();
    for (size_t t = 0; t < want.size(); ++t)
      EXPECT_TRUE(same_bytes(s, want[t], got[t])) << what << ": tensor " << t << " of the step "
                                                  << "differs between eager and graph replay";
  }
}

// PDL off, auto and on: the same bytes at every replay. Off records no programmatic edge;
// on adds to auto's (the skinny GEMM's, where the rule picks it) those of the 10
// PDL-aware launches after a kernel (embedding is the graph's first node, add_rms_norm
// follows the copy's memcpy node; the conv is one launch at decode, conv_request_kernel).
TEST(CudaPdl, SwitchOffAndOnGiveIdenticalBytes) {
  VT_REQUIRE_GPU();
  Streams s;
  DecodeStep step(s);
  const std::vector<uint64_t> seeds = replay_seeds(4);
  int64_t edges_off = 0, edges_auto = 0, edges_on = 0;
  const std::vector<Replayed> off = replay_step(s, step, Toggle::kOff, seeds, &edges_off);
  const std::vector<Replayed> autom = replay_step(s, step, Toggle::kAuto, seeds, &edges_auto);
  const std::vector<Replayed> on = replay_step(s, step, Toggle::kOn, seeds, &edges_on);
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::vector<Tensor> a = off[i].all(), b = autom[i].all(), c = on[i].all();
    for (size_t t = 0; t < a.size(); ++t) {
      EXPECT_TRUE(same_bytes(s, a[t], b[t]))
          << "replay " << i << ": tensor " << t << " differs between PDL off and auto";
      EXPECT_TRUE(same_bytes(s, a[t], c[t]))
          << "replay " << i << ": tensor " << t << " differs between PDL off and on";
    }
  }
  EXPECT_EQ(edges_off, 0) << "PDL off recorded programmatic edges (-1: cudaGraphGetEdges failed)";
  EXPECT_GE(edges_auto, edges_off);
  EXPECT_GE(edges_on - edges_auto, 10)
      << "PDL on recorded " << edges_on << " programmatic edges, auto " << edges_auto;
}

// ---- A slow producer of y [m, n], then one PDL-aware op reading y.

constexpr int64_t kM = 4, kN = 256;

// Writes y (a fixed [kM, kN] bf16 buffer) slowly, and triggers its dependents early.
struct Producer {
  std::string name;
  std::function<void(Streams&, uint64_t seed)> refresh;  // new inputs: y changes each replay
  std::function<void(Stream&)> run;
  Tensor y;
};

// The skinny GEMM with PDL (triggers right after its wait, writes y at its end): 32 MB
// of weights over at most 64 CTAs.
Producer skinny_producer(Streams& s) {
  const int64_t kp = 65536;
  auto a = std::make_shared<Tensor>(s.up(randn({kM, kp}, kBF16, 1.0, 40)));
  auto b = std::make_shared<Tensor>(s.up(randn({kN, kp}, kBF16, 1.0 / 256, 41)));
  Producer p;
  p.name = "skinny GEMM";
  p.y = Tensor::empty({kM, kN}, kBF16, s.gpu.device());
  Tensor y = p.y;
  p.refresh = [a](Streams& s2, uint64_t seed) {
    Tensor head = a->slice(1, 0, 1024);
    copy(s2.gpu, s2.up(randn({kM, 1024}, kBF16, 1.0, seed)), head);
  };
  p.run = [a, b, y](Stream& st) {
    cuda::linear_skinny(st, *a, *b, Tensor(), y, 0, cuda::SkinnyPdl::kRingL2);
  };
  return p;
}

// rms_norm over kM rows of 2^22 (a CTA of 256 per row streams 8 MB twice; it triggers at
// its start): y is the first kM * kN elements of row 0's output, written half-way through.
Producer rms_norm_producer(Streams& s) {
  const int64_t cols = int64_t(1) << 22;
  auto x = std::make_shared<Tensor>(s.up(randn({kM, cols}, kBF16, 1.0, 50)));
  auto w = std::make_shared<Tensor>(s.up(randn({cols}, kBF16, 0.5, 51)));
  auto out = std::make_shared<Tensor>(Tensor::empty({kM, cols}, kBF16, s.gpu.device()));
  Producer p;
  p.name = "rms_norm 8 MB rows";
  p.y = out->view({-1, kN}).slice(0, 0, kM);
  p.refresh = [x](Streams& s2, uint64_t seed) {
    Tensor head = x->view({-1, kN}).slice(0, 0, kM);
    copy(s2.gpu, s2.up(randn({kM, kN}, kBF16, 1.0, seed)), head);
  };
  p.run = [x, w, out](Stream& st) { rms_norm(st, *x, *w, 1e-6f, RmsNormKind::kPlain, *out); };
  return p;
}

// One PDL-aware op on y: reset() writes its own state inputs for a replay, run() the op
// into fixed outputs, check() compares them with the CPU op on y's final contents.
struct Consumer {
  std::string name;
  std::function<void(Streams&, uint64_t seed)> reset;  // may be empty
  std::function<void(Stream&, const Tensor& y)> run;
  std::function<void(Streams&, const Tensor& y_host, const std::string& what)> check;
};

std::vector<Consumer> consumers(Streams& s) {
  const Device dev = s.gpu.device();
  auto gpu = [dev](const Shape& shape, DType dt) {
    return std::make_shared<Tensor>(Tensor::empty(shape, dt, dev));
  };
  std::vector<Consumer> cs;
  const Tensor w = randn({kN}, kBF16, 1.0, 60), w_g = s.up(w);
  {
    auto out = gpu({kM, kN}, kBF16);
    cs.push_back({"rms_norm",
                  {},
                  [=](Stream& st, const Tensor& y) {
                    rms_norm(st, y, w_g, 1e-6f, RmsNormKind::kPlain, *out);
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, kN}, kBF16);
                    rms_norm(s2.cpu, y, w, 1e-6f, RmsNormKind::kPlain, want);
                    expect_close(s2, want, *out, kBf16ChainRel, 0, what);
                  }});
  }
  {
    auto res = std::make_shared<Tensor>(), res_g = gpu({kM, kN}, kBF16), out = gpu({kM, kN}, kBF16);
    cs.push_back({"add_rms_norm",
                  [=](Streams& s2, uint64_t seed) {
                    *res = randn({kM, kN}, kBF16, 1.0, seed);
                    copy(s2.gpu, s2.up(*res), *res_g);
                  },
                  [=](Stream& st, const Tensor& y) {
                    add_rms_norm(st, *res_g, y, w_g, 1e-6f, RmsNormKind::kOnePlus, *out);
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, kN}, kBF16);
                    add_rms_norm(s2.cpu, *res, y, w, 1e-6f, RmsNormKind::kOnePlus, want);
                    expect_close(s2, *res, *res_g, 0, 0, what + " residual");
                    expect_close(s2, want, *out, kBf16Rel, 0, what);
                  }});
  }
  {
    auto out = gpu({kM, 2, kN / 2}, kF32);
    cs.push_back({"l2_normalize",
                  {},
                  [=](Stream& st, const Tensor& y) {
                    l2_normalize(st, y.reshape({kM, 2, kN / 2}), 1e-6f, *out);
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, 2, kN / 2}, kF32);
                    l2_normalize(s2.cpu, y.reshape({kM, 2, kN / 2}), 1e-6f, want);
                    expect_close(s2, want, *out, 1e-5, 1e-6, what);
                  }});
  }
  {
    const Tensor wn = randn({kN / 2}, kBF16, 1.0, 61), wn_g = s.up(wn);
    auto out = gpu({kM, 1, kN / 2}, kBF16);
    auto halves = [](const Tensor& y, int64_t i) {
      return y.slice(1, i * kN / 2, (i + 1) * kN / 2).reshape({kM, 1, kN / 2});
    };
    cs.push_back({"gated_rms_norm",
                  {},
                  [=](Stream& st, const Tensor& y) {
                    gated_rms_norm(st, halves(y, 0), halves(y, 1), wn_g, 1e-6f, *out);
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, 1, kN / 2}, kBF16);
                    gated_rms_norm(s2.cpu, halves(y, 0), halves(y, 1), wn, 1e-6f, want);
                    expect_close(s2, want, *out, kBf16ChainRel, 1e-6, what);
                  }});
  }
  {
    auto out = gpu({kM, kN / 2}, kBF16);
    cs.push_back({"silu_and_mul",
                  {},
                  [=](Stream& st, const Tensor& y) { silu_and_mul(st, y, *out); },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, kN / 2}, kBF16);
                    silu_and_mul(s2.cpu, y, want);
                    expect_close(s2, want, *out, kBf16ChainRel, 0, what);
                  }});
  }
  {
    const Tensor other = randn({kM, kN}, kBF16, 1.0, 62), other_g = s.up(other);
    const Tensor bias = randn({kN}, kBF16, 1.0, 63), bias_g = s.up(bias);
    Tensor bias_rows = Tensor::empty({kM, kN}, kBF16);
    for (int64_t r = 0; r < kM; ++r) {
      Tensor row = bias_rows.select(0, r);
      copy(s.cpu, bias, row);
    }
    auto sg = gpu({kM, kN}, kBF16), sum = gpu({kM, kN}, kBF16), prod = gpu({kM, kN}, kBF16);
    auto biased = gpu({kM, kN}, kBF16);
    cs.push_back({"sigmoid, add, mul, bias (four consumers of y)",
                  {},
                  [=](Stream& st, const Tensor& y) {
                    sigmoid(st, y, *sg);
                    add(st, y, other_g, *sum);
                    mul(st, y, other_g, *prod);
                    cuda::add_bias(st, rows_view(y, "test", "y"), bias_g,
                                   rows_view(*biased, "test", "out"));
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, kN}, kBF16);
                    sigmoid(s2.cpu, y, want);
                    expect_close(s2, want, *sg, kBf16Rel, 0, what + ": sigmoid");
                    add(s2.cpu, y, other, want);
                    expect_close(s2, want, *sum, kBf16Rel, 0, what + ": add");
                    mul(s2.cpu, y, other, want);
                    expect_close(s2, want, *prod, kBf16Rel, 0, what + ": mul");
                    add(s2.cpu, y, bias_rows, want);
                    expect_close(s2, want, *biased, kBf16Rel, 0, what + ": bias");
                  }});
  }
  {
    // A decode and a 3-token request (device indices, T > B: the streaming conv kernel,
    // then the state roll).
    const int64_t K = 4, slots = 6;
    const std::vector<int32_t> qsl{0, 1, 4}, slot{5, 2};
    const Tensor wc = randn({kN, K}, kBF16, 0.5, 64), wc_g = s.up(wc);
    const Tensor qsl_g = s.up(i32(qsl)), slot_g = s.up(i32(slot));
    auto st0 = std::make_shared<Tensor>(), st_g = gpu({slots, K - 1, kN}, kF32);
    auto out = gpu({kM, kN}, kBF16);
    cs.push_back({"causal_conv1d_silu",
                  [=](Streams& s2, uint64_t seed) {
                    *st0 = randn({slots, K - 1, kN}, kF32, 1.0, seed);
                    copy(s2.gpu, s2.up(*st0), *st_g);
                  },
                  [=](Stream& st, const Tensor& y) {
                    causal_conv1d_silu(st, y, wc_g, qsl_g, *st_g, slot_g, *out);
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, kN}, kBF16), cs_state = own(s2, *st0);
                    causal_conv1d_silu(s2.cpu, y, wc, i32(qsl), cs_state, i32(slot), want);
                    expect_close(s2, want, *out, kBf16ChainRel, 1e-6, what);
                    expect_close(s2, cs_state, *st_g, 0, 0, what + " state");
                  }});
  }
  {
    const int64_t hv = 8;
    const Tensor al = randn({hv}, kBF16, 1.0, 65), al_g = s.up(al);
    const Tensor dtb = randn({hv}, kBF16, 1.0, 66), dtb_g = s.up(dtb);
    auto g = gpu({kM, hv}, kF32), beta = gpu({kM, hv}, kF32);
    cs.push_back(
        {"gdn_gates",
         {},
         [=](Stream& st, const Tensor& y) {
           gdn_gates(st, y.slice(1, 0, hv), y.slice(1, hv, 2 * hv), al_g, dtb_g, kBF16, *g, *beta);
         },
         [=](Streams& s2, const Tensor& y, const std::string& what) {
           Tensor wg = Tensor::empty({kM, hv}, kF32), wb = Tensor::empty({kM, hv}, kF32);
           gdn_gates(s2.cpu, y.slice(1, 0, hv), y.slice(1, hv, 2 * hv), al, dtb, kBF16, wg, wb);
           expect_close(s2, wg, *g, 1e-5, 0, what + " g");
           expect_close(s2, wb, *beta, kBf16Rel, 0, what + " beta");
         }});
  }
  {
    // kM decode requests, one key and value head of 128: q = y[:, :128], k = v = y[:, 128:].
    static_assert(kM == 4);
    const int64_t dk = kN / 2, slots = 7;
    const std::vector<int32_t> qsl{0, 1, 2, 3, 4}, slot{5, 0, 6, 2};
    const Tensor qsl_g = s.up(i32(qsl)), slot_g = s.up(i32(slot));
    const Tensor g = uniform({kM, 1}, -0.7f, -0.01f, 67), beta = uniform({kM, 1}, 0.05f, 0.95f, 68);
    const Tensor g_g = s.up(g), beta_g = s.up(beta);
    auto st0 = std::make_shared<Tensor>(), st_g = gpu({slots, 1, dk, dk}, kF32);
    auto out = gpu({kM, 1, dk}, kBF16);
    auto head = [dk](const Tensor& y, int64_t i) {
      return y.slice(1, i * dk, (i + 1) * dk).reshape({kM, 1, dk});
    };
    const float scale = 1.0f / std::sqrt(float(dk));
    cs.push_back({"gated_delta_rule_recurrent",
                  [=](Streams& s2, uint64_t seed) {
                    *st0 = randn({slots, 1, dk, dk}, kF32, 0.3, seed);
                    copy(s2.gpu, s2.up(*st0), *st_g);
                  },
                  [=](Stream& st, const Tensor& y) {
                    gated_delta_rule_recurrent(st, head(y, 0), head(y, 1), head(y, 1), g_g, beta_g,
                                               scale, qsl_g, *st_g, slot_g, *out);
                  },
                  [=](Streams& s2, const Tensor& y, const std::string& what) {
                    Tensor want = Tensor::empty({kM, 1, dk}, kBF16), state = own(s2, *st0);
                    gated_delta_rule_recurrent(s2.cpu, head(y, 0), head(y, 1), head(y, 1), g, beta,
                                               scale, i32(qsl), state, i32(slot), want);
                    expect_close(s2, want, *out, kBf16Rel, 1e-4, what + " out");
                    expect_close(s2, state, *st_g, 1e-4, 1e-4, what + " state");
                  }});
  }
  {
    // argmax of y's rows, then the embedding rows of those ids: two PDL-aware kernels in a row.
    const Tensor table = randn({kN, 64}, kBF16, 1.0, 69), table_g = s.up(table);
    auto ids = gpu({kM}, kI32), rows = gpu({kM, 64}, kBF16);
    cs.push_back(
        {"argmax then embedding",
         {},
         [=](Stream& st, const Tensor& y) {
           argmax(st, y, *ids);
           embedding(st, table_g, *ids, *rows);
         },
         [=](Streams& s2, const Tensor& y, const std::string& what) {
           Tensor want_ids = Tensor::empty({kM}, kI32), want = Tensor::empty({kM, 64}, kBF16);
           argmax(s2.cpu, y, want_ids);
           embedding(s2.cpu, table, want_ids, want);
           EXPECT_TRUE(same_bytes(s2, want_ids, *ids)) << what << ": argmax";
           expect_close(s2, want, *rows, 0, 0, what + ": embedding");
         }});
  }
  return cs;
}

TEST(CudaPdl, ConsumersAfterASlowProducerReadItsOutput) {
  VT_REQUIRE_GPU();
  Streams s;
  const ScopedKernels pdl(s.gpu, [](KernelConfig& k) { k.pdl = Toggle::kOn; });
  const std::vector<Consumer> cs = consumers(s);
  uint64_t seed = 2000;
  for (const Producer& p : {skinny_producer(s), rms_norm_producer(s)}) {
    for (const Consumer& c : cs) {
      if (c.reset) c.reset(s, seed);
      p.refresh(s, seed + 1);
      p.run(s.gpu);  // warm-up outside the capture
      c.run(s.gpu, p.y);
      s.gpu.synchronize();
      s.gpu.begin_capture();
      p.run(s.gpu);
      c.run(s.gpu, p.y);
      cuda::GraphExecPtr graph = s.gpu.end_capture();
      for (int r = 0; r < 3; ++r) {
        seed += 10;
        if (c.reset) c.reset(s, seed);
        p.refresh(s, seed + 1);
        Tensor y_buf = p.y;
        copy(s.gpu, s.up(randn({kM, kN}, kBF16, 3.0, seed + 2)), y_buf);  // stale y
        s.gpu.synchronize();
        s.gpu.replay(*graph);
        const Tensor y = s.down(p.y);
        c.check(s, y, p.name + " -> " + c.name + ", replay " + std::to_string(r));
      }
      graph.reset();
      s.gpu.synchronize();
    }
  }
  cuda::release_graph_pool(0);
}

#endif  // VTLLM_WITH_CUDA

}  // namespace
}  // namespace vt
