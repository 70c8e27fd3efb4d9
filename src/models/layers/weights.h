// WeightStore: a model's parameters, handed to the layers that build it, by state-dict name.
//
// A thin adapter over the io weight loader (io/weight_loader.h), which does the reading:
// io::load_model_weights() places every parameter of io::param_specs(config) (language
// model only) on the model's device, in the checkpoint's dtype (bf16 stays bf16; the
// CPU ops widen it on the fly), or makes deterministic dummy weights of those shapes
// (LoadFormat::kDummy: config.json alone). On the CPU the tensors may be read-only
// views into the mapped file: never write to a weight.
//
// What the adapter adds: take() hands a parameter to exactly one layer, checking the
// shape the layer expects, and releases the store's reference (take_stacked() repacks
// projections that share an input into one weight and frees the originals as it goes);
// check_all_used() after building names the first parameter no layer asked for, so a
// forgotten weight cannot go unnoticed.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/weight_loader.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

class WeightStore {
 public:
  // Loads (or makes, for options.format == kDummy) the language-model parameters of
  // `config` from `dir` onto options.device; `s` is a stream on that device (or the CPU).
  WeightStore(const io::ModelConfig& config, const std::string& dir, vt::Stream& s,
              const io::LoadOptions& options);

  // The parameter `name` (full state-dict name) with exactly `shape`, on the device, in
  // its checkpoint dtype. Each parameter can be taken once.
  vt::Tensor take(const std::string& name, const vt::Shape& shape);
  // Takes the [rows, cols] parameters `parts` (one dtype) and returns them stacked by rows
  // in the order given, as one new [sum of rows, cols] tensor on the device: projections
  // that read the same input run as one linear (gate/up, q/k/v, the GDN input set). The
  // originals are freed once copied.
  struct Part {
    std::string name;
    int64_t rows;
  };
  vt::Tensor take_stacked(const std::vector<Part>& parts, int64_t cols);
  // "model." or "model.language_model.": where the decoder's parameters live.
  const std::string& prefix() const { return prefix_; }
  // A stream on the weights' device (for layers that repack weights at load).
  vt::Stream& stream() { return stream_; }
  vt::Device device() const { return device_; }
  // Throws naming the first loaded parameter that take() was never asked for.
  void check_all_used() const;

 private:
  std::string dir_;
  io::Weights weights_;
  std::set<std::string, std::less<>> taken_;
  std::string prefix_;
  vt::Stream& stream_;
  vt::Device device_;
};

}  // namespace vtllm::models
