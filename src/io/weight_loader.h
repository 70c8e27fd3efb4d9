// Loads a model's parameters from a checkpoint (or makes dummy ones) as vt::Tensors.
//
// load_weights() is driven by a list of ParamSpecs (the model's declaration of its
// parameters, models/registry.h declare_params): every spec must be found in the
// checkpoint (under any spelling weight_names.h accepts) with the spec's shape. A
// float tensor stored in another float dtype is converted (as transformers casts
// to the model dtype at load); an integer/float mismatch or a dtype vt cannot hold
// is an error. ALL problems (missing, unexpected, mis-shaped, wrong dtype, duplicate
// spellings) are gathered and reported in one vtllm::Error, one line each.
// Tensors transformers itself ignores (mtp.*, an unused vision tower, a tied
// lm_head) are skipped and counted in the summary.
//
// Placement: on the CPU a tensor whose file dtype already matches is a zero-copy
// view into the read-only mapping (never write to it; the tensor keeps the mapping
// alive). On CUDA it is copied from the mapping straight to the device, with no
// host staging copy; the stream is synchronised before returning, so the
// checkpoint may be closed afterwards. Fused MoE experts assembled from
// per-expert tensors, and converted tensors, are built on the CPU first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/config.h"
#include "vt/stream.h"
#include "vt/tensor.h"

namespace vtllm::io {

// One parameter a model holds: its state-dict name, shape and dtype (the config's
// weight dtype).
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  vt::DType dtype = vt::DType::kF32;

  int64_t numel() const;
};

// Tensor, parameter and byte counts of a list of specs (`vtllm inspect`).
struct ParamTotals {
  int64_t tensors = 0;
  int64_t parameters = 0;
  std::map<vt::DType, uint64_t> bytes;  // weight bytes per dtype
};
ParamTotals param_totals(const std::vector<ParamSpec>& specs);

enum class LoadFormat { kAuto, kDummy };
// "auto" (safetensors files) or "dummy" (vLLM's --load-format dummy); throws otherwise.
// `what` labels the error ("--load-format", "options_json: load_format").
LoadFormat load_format_from_name(const std::string& name,
                                 const std::string& what = "load format");

struct LoadOptions {
  vt::Device device = vt::Device::cpu();
  bool language_model_only = false;
  LoadFormat format = LoadFormat::kAuto;
  uint64_t dummy_seed = 0;
  // Draw a progress bar on stderr: when it is a terminal (default), always, never.
  enum class Progress { kAuto, kAlways, kNever } progress = Progress::kAuto;
};

struct LoadSummary {
  int64_t loaded = 0;     // parameters placed
  int64_t zero_copy = 0;  // of which CPU views into the mapping
  int64_t converted = 0;  // of which converted from another float dtype
  int64_t fused = 0;      // of which assembled from per-expert tensors
  uint64_t bytes = 0;     // bytes of the placed parameters
  std::map<std::string, int64_t> skipped;  // reason -> checkpoint tensors skipped

  int64_t skipped_total() const;
  std::string str() const;  // "loaded 109 tensors (1.05 MiB; 109 zero-copy), skipped 0"
};

struct Weights {
  std::map<std::string, vt::Tensor> tensors;  // by ParamSpec name
  LoadSummary summary;

  // The tensor of parameter `name`; throws vtllm::Error naming it when absent.
  const vt::Tensor& at(const std::string& name) const;
};

// Loads `specs` from `checkpoint` onto options.device (format is ignored here).
Weights load_weights(vt::Stream& stream, const Checkpoint& checkpoint, const ModelConfig& config,
                     const std::vector<ParamSpec>& specs, const LoadOptions& options);

// The whole path from a model directory: `specs` from DIR's checkpoint, or dummy
// weights (options.format == kDummy).
Weights load_model_weights(vt::Stream& stream, const std::string& dir, const ModelConfig& config,
                           const std::vector<ParamSpec>& specs, const LoadOptions& options);

}  // namespace vtllm::io
