// WeightStore: a model's parameters, fetched by state-dict name as f32 CPU tensors.
//
// Opens the checkpoint of `dir` and takes io::param_specs(config) (language model
// only) as the list of what must be there: get() refuses a name that is not in that
// list or whose file shape differs from the spec, and check_all_used() after building
// names the first parameter no layer asked for, so a forgotten weight cannot go
// unnoticed. bf16/f16 values are widened exactly (the CPU backend computes in f32).
#pragma once

#include <set>
#include <string>

#include "io/checkpoint.h"
#include "io/config.h"
#include "io/param_specs.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

class WeightStore {
 public:
  WeightStore(const io::ModelConfig& config, const std::string& dir, vt::Stream& s);

  // The parameter `name` (full state-dict name) with exactly `shape`, as f32.
  vt::Tensor get(const std::string& name, const vt::Shape& shape);
  // "model." or "model.language_model.": where the decoder's parameters live.
  const std::string& prefix() const { return prefix_; }
  // The stream weights are converted on (for layers that reshape them at load).
  vt::Stream& stream() { return stream_; }
  // Throws naming the first expected parameter that get() was never asked for.
  void check_all_used() const;

 private:
  io::Checkpoint ckpt_;
  std::vector<io::ParamSpec> specs_;
  std::set<std::string, std::less<>> used_;
  std::string prefix_;
  vt::Stream& stream_;
};

}  // namespace vtllm::models
