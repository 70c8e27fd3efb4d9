// vtllm bench throughput: model speed in-process, offline (no server, no sampler).
//
// The model runs on its ModelRunner (CUDA: KV cache sized from
// --gpu-memory-utilization) with hand-built ForwardBatches and greedy argmax on
// the device, so a row measures the model step and what the runner does around
// it (index uploads, state copies, the argmax, the ids' copy to the host), not
// the scheduler or the CPU sampler.
//   decode: B requests prefilled to input_len tokens (untimed), then output_len
//     decode steps of B tokens each (after 2 warm-up steps), each timed from the
//     host around execute_greedy (which ends in a device-to-host copy, so the
//     step is complete); the row reports the median. Every batch row starts at
//     context input_len: its requests are rewound to the prefilled KV (the GDN
//     state carries over from the previous row, which changes values, not cost).
//   prefill (--prefill-only): B prompts of input_len tokens in one step from
//     context 0, one warm-up then `repeats` timed steps, median. prefill_lens adds
//     such rows (batch 1, one per length) after the decode rows, so one load of the
//     model serves both.
// MoE models: each row also runs a few untimed probe steps that count the distinct
// experts the router chose per layer, and the row's bytes count those experts.
// --profile-ops: each row adds a per-op time breakdown of eager steps (OpBreakdown).
// Each row prints step time, tokens/s, and the bytes and FLOPs of a step counted
// from the config (ModelCost) over the step time, against the H200 ceilings
// measured in this workplace (~4.3 TB/s copy, ~790 TFLOP/s dense bf16); a decode row
// that replayed a CUDA graph also prints the graph's batch size and its kernel nodes
// (the kernels one step launches). The JSON lists every captured graph's count too.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/weight_loader.h"
#include "vt/device.h"
#include "vt/dtype.h"
#include "vt/profile.h"

namespace vtllm::bench {

inline constexpr double kCopyCeilingGBps = 4300;   // H200 device-to-device copy, measured
inline constexpr double kBf16CeilingTflops = 790;  // H200 dense bf16 cuBLASLt, measured

// The fewest bytes a step must move and the FLOPs it must do, from the config.
//   bytes, decode: every weight once (the embedding table only for the B rows
//     gathered, unless it is the tied lm_head), each request's K and V of every
//     attention layer read over its context and written for the new token, and
//     each request's GDN state (recurrent Hv x Dk x Dv and conv (K-1) x conv_dim,
//     f32) read and written in every GDN layer.
//   bytes, prefill: the weights once, the K/V written for every token and the
//     final GDN state written (activations that could stay on chip are not counted).
//   MoE experts: the experts a step touches, per layer: the measured distinct count
//     when the caller has one (the router's choices of that step), else the
//     expectation under uniform routing, E (1 - (1 - k/E)^tokens).
//   FLOPs: 2 x matmul parameters x tokens (every weight but the gathered embedding;
//     MoE experts scaled by top_k / num_experts), attention 4 x Hq x D per
//     (query, key) pair (QK^T and PV; causal in prefill: L(L+1)/2 pairs), and the
//     GDN recurrence 6 x Hv x Dk x Dv per token (k^T S, the rank-1 update, q^T S).
struct ModelCost {
  double weight_bytes = 0;     // every weight once, embedding table excluded unless tied
  double embed_row_bytes = 0;  // one gathered embedding row (0 when tied: read whole)
  double expert_bytes = 0;     // MoE expert weights (part of weight_bytes)
  int64_t num_experts = 0, experts_per_tok = 0;
  double matmul_params = 0;    // dense-equivalent active parameters per token
  int64_t attn_layers = 0, q_heads = 0, kv_heads = 0, head_dim = 0, kv_item = 0;
  int64_t gdn_layers = 0, gdn_state_floats = 0;  // per request per layer: recurrent + conv
  int64_t gdn_recurrent = 0;                     // Hv x Dk x Dv

  struct Step {
    double bytes = 0, flops = 0;
  };
  // Distinct experts per layer that `tokens` routed tokens touch under uniform routing.
  double expected_experts(int64_t tokens) const;
  // B requests, each attending `context` keys (the new token included); `experts`:
  // distinct experts touched per layer (< 0: expected_experts(B); ignored without MoE).
  Step decode(int64_t batch, int64_t context, double experts = -1) const;
  // B prompts of `len` tokens from context 0 (`experts` as for decode, of B x len tokens).
  Step prefill(int64_t batch, int64_t len, double experts = -1) const;
};
ModelCost model_cost(const io::ModelConfig& config, vt::DType weight_dtype, vt::DType kv_dtype);

struct ThroughputConfig {
  std::string dir;
  vt::Device device = vt::Device::cuda(0);
  io::LoadFormat load_format = io::LoadFormat::kAuto;
  std::vector<int> batches{1};
  int64_t input_len = 512;
  int64_t output_len = 64;
  bool prefill_only = false;
  std::vector<int64_t> prefill_lens;  // extra batch-1 prefill rows
  int repeats = 5;  // timed prefill steps per row
  double gpu_memory_utilization = 0.9;
  // CUDA graphs for the decode rows unless set (batches up to 64 replay graphs, captured
  // in the untimed warm-up steps).
  bool enforce_eager = false;
  uint64_t seed = 0;
  // After each row's timed steps, profile_steps more eager steps of its shape under a
  // vt::Profiler timing every op (graphs are not replayed while profiling), reported as
  // the row's OpBreakdown; one unrecorded eager step comes first.
  bool profile_ops = false;
  int profile_steps = 3;
};

// Where one row's eager step goes (--profile-ops), per step (means over the steps).
struct OpBreakdown {
  struct Op {
    std::string region, op;  // region: attn, gdn, mlp, moe, embed, lm_head, inputs, step
    double calls = 0, us = 0, bytes = 0, flops = 0;  // summed over layers, per step
  };
  struct Layer {
    int64_t layer = 0;
    std::string regions;  // e.g. "gdn+moe"
    double us = 0;
  };
  int steps = 0;
  double step_us = 0;   // the profiler's step time (device events on CUDA)
  std::vector<Op> ops;  // most time first
  std::vector<Layer> layers;
  double op_us() const;  // sum of ops' us (<= step_us: the rest is host work and gaps)
};

// MoE rows: distinct experts per layer the router chose in probe steps of the row's
// shape (vt::ProfileConfig::count_experts), against the uniform-routing expectation.
struct ExpertCounts {
  int steps = 0;
  int64_t experts = 0;  // per layer (E)
  double mean = 0, expected = 0;
  int64_t min = 0, max = 0;  // over layers x steps
};

struct ThroughputRow {
  std::string phase;  // "decode" or "prefill"
  int batch = 0;
  int64_t tokens_per_step = 0;
  double context = 0;  // mean keys attended per request (decode); prompt length (prefill)
  int steps = 0;       // timed
  double step_ms = 0;  // median
  double step_ms_min = 0, step_ms_max = 0;
  double tokens_per_s = 0;
  double bytes = 0, flops = 0;  // per step (ModelCost, mean over the timed steps)
  // Decode rows that replayed a CUDA graph: the graph's (padded) batch size and its
  // kernel nodes, the kernels launched per step; 0 when the row ran eagerly.
  int graph_batch = 0;
  int64_t graph_kernels = 0;
  std::optional<ExpertCounts> experts;   // MoE models: bytes count these experts
  std::optional<OpBreakdown> breakdown;  // --profile-ops
  double gbps() const { return bytes / (step_ms * 1e-3) / 1e9; }
  double tflops() const { return flops / (step_ms * 1e-3) / 1e12; }
};

struct ThroughputResult {
  std::string model;  // architecture class, layers, hidden
  std::string device;
  double load_seconds = 0;
  int64_t parameters = 0;
  ModelCost cost;
  std::string cache_plan;  // the runner's sizing line (CUDA)
  std::vector<ThroughputRow> rows;
  struct Graph {
    int batch = 0;
    int64_t kernels = 0;  // kernel nodes of the decode graph captured for `batch`
  };
  std::vector<Graph> graphs;  // every decode graph captured, in capture order
};

// Runs every row; on_row is called as each finishes (to print it at once).
ThroughputResult run_throughput(const ThroughputConfig& c,
                                const std::function<void(const ThroughputRow&)>& on_row);

void print_throughput_header(std::FILE* f);
// The row, then its expert counts and op breakdown when it has them.
void print_throughput_row(std::FILE* f, const ThroughputRow& r);

// Runs `steps` calls of run_step on `s`, each one profiler step, under a profiler with
// `pc` attached to s; with `warmup`, one more unrecorded step first. Returns the profiler.
std::unique_ptr<vt::Profiler> profile_steps(vt::Stream& s, const vt::ProfileConfig& pc, int steps,
                                            bool warmup, const std::function<void()>& run_step);
// A profiler's records as a breakdown per step, ops most time first.
OpBreakdown breakdown_of(const vt::Profiler& p);
// The breakdown as a table (two-space indent), and as JSON.
void print_breakdown(std::FILE* f, const OpBreakdown& b);
nlohmann::json breakdown_json(const OpBreakdown& b);
std::string throughput_json(const ThroughputConfig& c, const ThroughputResult& r);

}  // namespace vtllm::bench
