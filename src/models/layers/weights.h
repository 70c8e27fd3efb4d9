// WeightStore: a model's loaded parameters, handed to the layers that build it, by
// state-dict name (the loading ParamSink of models/params.h).
//
// It holds the tensors io::load_model_weights placed (models/registry.cpp loads the
// model's declared parameters: on the model's device, in the checkpoint's dtype,
// bf16 stays bf16 and the CPU ops widen it on the fly; or dummy weights). On the CPU
// the tensors may be read-only views into the mapped file: never write to a weight.
//
// take() hands a parameter to exactly one layer, checking the shape the layer
// expects, and releases the store's reference (take_stacked() repacks projections that
// share an input into one new weight and frees the originals as it goes);
// check_all_used() after building names the first parameter no layer asked for.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "io/weight_loader.h"
#include "models/params.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::models {

class WeightStore final : public ParamSink {
 public:
  // `weights` on `s`'s device; `label` names the model in errors (its directory).
  WeightStore(io::Weights weights, std::string label, vt::Stream& s);

  vt::Tensor take(const std::string& name, const vt::Shape& shape) override;
  // The originals are freed once copied (on the store's stream).
  vt::Tensor take_stacked(const std::vector<Part>& parts, int64_t cols) override;
  bool declaring() const override { return false; }
  vt::Device device() const override { return stream_.device(); }

  // Throws naming the first loaded parameter that take() was never asked for.
  void check_all_used() const;

 private:
  std::string label_;
  io::Weights weights_;
  std::set<std::string, std::less<>> taken_;
  vt::Stream& stream_;
};

}  // namespace vtllm::models
