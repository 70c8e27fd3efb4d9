// vt::Profiler: where a forward step's time goes, op by op, and which MoE experts it
// touched.
//
// A Profiler is attached to one Stream (attach; Profiler::of(s) finds it) and records
// between begin_step and end_step:
//   time_ops: every op entry point (vt/ops/*.cpp) opens an OpScope; the outermost op
//     of a nest is one record (an op that calls other ops is timed as itself), keyed
//     by (region, layer, op). Regions are set by the caller (RegionScope: the decoder
//     loop names "attn" / "gdn" / "mlp" / "moe" and the layer, "embed", "lm_head";
//     ops outside any region are "step"). CPU: std::chrono around the op (CPU ops are
//     synchronous). CUDA: a pair of timing events around the op's launches, resolved
//     at end_step; an eager step's events also take in the time the device waits for
//     the host to launch, so per-op times of small decode kernels are launch-bound.
//     Graph capture and replay record nothing: profile eagerly.
//   count_experts: SparseMoeBlock calls note_routing with its top-k ids; the ids come
//     to the host (a synchronizing copy, not recorded as an op) and the distinct
//     experts of that call are kept per layer.
// An op may say what it moves and computes (OpScope::set_cost), which the report turns
// into GB/s and TFLOP/s. Not thread-safe: the thread issuing ops on the stream owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "vt/stream.h"
#include "vt/tensor.h"

namespace vt {

// What a Profiler records (both off: it records nothing but step times).
struct ProfileConfig {
  bool time_ops = false;       // per-op elapsed time
  bool count_experts = false;  // distinct MoE experts per routing call (synchronizes)
};

class Profiler {
 public:
  // One (region, layer, op) summed over the recorded steps. layer -1: not in a layer.
  struct OpStat {
    std::string region;
    int64_t layer = -1;
    std::string op;
    int64_t calls = 0;
    double us = 0;     // elapsed, summed
    double bytes = 0;  // summed over the calls that stated a cost
    double flops = 0;
  };
  // One routing call: `distinct` of `experts` experts chosen by `tokens` tokens.
  struct RoutingStat {
    int64_t layer = -1;
    int64_t experts = 0, tokens = 0, distinct = 0;
  };

  explicit Profiler(const ProfileConfig& config = {});
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  const ProfileConfig& config() const { return config_; }

  // Attaches this profiler to `s` until detach() or its destruction; throws when s
  // already has one or this one is attached elsewhere. Thread-safe against of().
  void attach(Stream& s);
  void detach() noexcept;
  // The profiler attached to `s`, or null (one relaxed atomic load when none is
  // attached anywhere).
  static Profiler* of(const Stream& s);

  // A step is the work issued on `s` between the two calls. end_step waits for `s`,
  // folds the step's op times into ops() and returns the step's elapsed ms (host clock
  // on the CPU, events on CUDA). Throws on a nested begin_step or an end_step without
  // one.
  void begin_step(Stream& s);
  double end_step(Stream& s);

  int64_t steps() const { return steps_; }
  double step_us() const { return step_us_; }              // summed over the recorded steps
  const std::vector<OpStat>& ops() const { return ops_; }  // in first-seen order
  const std::vector<RoutingStat>& routing() const { return routing_; }
  // Forgets every record (steps, ops, routing).
  void reset();

  // count_experts inside a step: topk_ids [T, k] i32 on s's device, values in
  // [0, num_experts). A no-op otherwise.
  void note_routing(Stream& s, const Tensor& topk_ids, int64_t num_experts);

 private:
  friend class OpScope;
  friend class RegionScope;
  struct Pending {  // an op of the open step
    size_t stat = 0;
    double us = -1;  // CPU: known at once; CUDA: from the events
    void* start = nullptr;
    void* end = nullptr;
  };
  bool recording(const Stream& s) const;
  size_t stat_index(const char* op);
  void* take_event();

  ProfileConfig config_;
  const Stream* stream_ = nullptr;  // attached to
  bool in_step_ = false;
  bool suspended_ = false;  // note_routing's own copies are not ops of the step
  int depth_ = 0;           // open OpScopes
  const char* region_ = "step";
  int64_t layer_ = -1;
  std::chrono::steady_clock::time_point step_t0_;
  void* step_start_ = nullptr;  // CUDA events of the open step
  void* step_end_ = nullptr;
  int64_t steps_ = 0;
  double step_us_ = 0;
  std::vector<OpStat> ops_;
  std::map<std::tuple<std::string, int64_t, std::string>, size_t> index_;
  std::vector<Pending> pending_;
  std::vector<void*> events_;  // every CUDA event made (destroyed with the profiler)
  size_t next_event_ = 0;      // events_[next_event_..] are free in the open step
  std::vector<RoutingStat> routing_;
};

// Times one op on `s` when s has a profiler with time_ops inside a step and no other
// OpScope is open; otherwise does nothing but look up Profiler::of(s).
class OpScope {
 public:
  OpScope(Stream& s, const char* op);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  // Whether this scope records (so the caller computes a cost only then).
  bool active() const { return p_ != nullptr; }
  // Bytes the op must move and FLOPs it must do, for the report's rates.
  void set_cost(double bytes, double flops);

 private:
  Stream& s_;
  Profiler* counted_ = nullptr;  // the profiler whose depth this scope raised
  Profiler* p_ = nullptr;        // null when not recording (or nested)
  size_t pending_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

// Names the region (and layer) of the ops issued on `s` until it ends; regions nest,
// the innermost names the ops, the outer one is restored. Free without a profiler.
class RegionScope {
 public:
  RegionScope(Stream& s, const char* region, int64_t layer = -1);
  ~RegionScope();
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;

 private:
  Profiler* p_ = nullptr;
  const char* region_ = nullptr;
  int64_t layer_ = -1;
};

}  // namespace vt
