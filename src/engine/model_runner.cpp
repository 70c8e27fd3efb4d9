#include "engine/model_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "models/registry.h"
#include "vt/memory.h"
#include "vt/ops/copy.h"
#include "vt/ops/sampling.h"
#include "vt/profile.h"

namespace vtllm::engine {

bool needs_state_slots(const models::Model& model) {
  const auto& spec = model.cache_spec();
  return std::any_of(spec.begin(), spec.end(), [](const models::LayerCacheSpec& l) {
    return l.kind == models::LayerCacheSpec::Kind::kGdn;
  });
}

ModelRunner::ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
                         const KvCacheConfig& kv, const std::optional<GraphOptions>& graphs)
    : stream_(std::move(stream)), model_(std::move(model)), kv_(kv) {
  VT_CHECK(stream_ && model_, "model runner: needs a stream and a model");
  VT_CHECK(stream_->device() == model_->device(), "model runner: a ", stream_->device().str(),
           " stream for a model on ", model_->device().str());
  const bool hybrid = needs_state_slots(*model_);
  if (hybrid && kv.num_state_slots <= 0)
    VT_THROW("model runner: the model has GDN layers, so num_state_slots must be > 0 (got ",
             kv.num_state_slots, ")");
  const bool with_graphs = graphs.has_value() && !graphs->enforce_eager &&
                           stream_->device().is_cuda() && graphs->max_batch > 0;
  int32_t slots = hybrid ? kv.num_state_slots + kv.num_state_snapshots : 0;
  const int32_t pad_slot = with_graphs && hybrid ? slots++ : -1;  // graphs' padding rows
  cache_ = std::make_unique<models::ModelCache>(*stream_, model_->cache_spec(), kv.num_blocks,
                                                kv.block_size, slots, model_->dtype());
  if (with_graphs)
    graphs_ = std::make_unique<DecodeGraphs>(*model_, *stream_, *cache_, *graphs, kv.num_blocks,
                                             kv.block_size, pad_slot);
  if (models::VisionTower* tower = model_->vision_tower())
    embedder_ = std::make_unique<MmEmbedder>(*tower);
  fused_preamble_ = models::ModelOptions::from_env().fuse_attn_preamble;
}

int64_t ModelRunner::check_multimodal() const {
  if (!embedder_)
    VT_THROW("model ", model_->config().architecture_class,
             " has no vision tower (a text-only model, or --language-model-only): images and "
             "videos are refused");
  if (!fused_preamble_)
    VT_THROW(
        "images and videos need MRoPE positions, which the unfused attention preamble "
        "(VTLLM_FUSE_ATTN_PREAMBLE=0) does not take; unset VTLLM_FUSE_ATTN_PREAMBLE");
  return model_->vision_tower()->merge_size();
}

int64_t ModelRunner::encoder_bytes_per_token() const {
  if (!embedder_) return 0;
  return model_->vision_tower()->out_hidden() * int64_t(vt::dtype_size(model_->dtype()));
}

ModelRunner::~ModelRunner() = default;

std::vector<DecodeGraphs::GraphKernels> ModelRunner::graph_kernel_counts() const {
  return graphs_ ? graphs_->kernel_counts() : std::vector<DecodeGraphs::GraphKernels>{};
}

void ModelRunner::copy_states(const std::vector<StateCopy>& copies) {
  if (copies.empty()) return;
  const auto& spec = model_->cache_spec();
  for (size_t layer = 0; layer < spec.size(); ++layer) {
    if (spec[layer].kind != models::LayerCacheSpec::Kind::kGdn) continue;
    const models::GdnState g = cache_->gdn(static_cast<int64_t>(layer));
    for (const StateCopy& c : copies) {
      for (const vt::Tensor* t : {&g.conv, &g.recurrent}) {
        const int64_t slots = t->shape()[0];
        VT_CHECK(c.src >= 0 && c.src < slots && c.dst >= 0 && c.dst < slots,
                 "model runner: state copy ", c.src, " -> ", c.dst, " outside ", slots, " slots");
        vt::Tensor dst = t->slice(0, c.dst, c.dst + 1);
        vt::copy(*stream_, t->slice(0, c.src, c.src + 1), dst);  // ordered on the stream
      }
    }
  }
}

std::unique_ptr<ModelRunner> ModelRunner::load(const io::ModelConfig& config,
                                               const std::string& dir, const KvCacheConfig& kv,
                                               const models::LoadConfig& load,
                                               const std::optional<GraphOptions>& graphs,
                                               const models::ModelOptions& options) {
  auto stream = std::make_unique<vt::Stream>(load.device);
  auto model = models::load_model(config, dir, *stream, load, options);
  return std::make_unique<ModelRunner>(std::move(stream), std::move(model), kv, graphs);
}

std::unique_ptr<ModelRunner> ModelRunner::load(const std::string& dir, const KvCacheConfig& kv) {
  return load(models::load_model_config(dir), dir, kv);
}

std::unique_ptr<ModelRunner> ModelRunner::load_sized(const io::ModelConfig& config,
                                                     const std::string& dir,
                                                     const KvCacheConfig& kv_in,
                                                     const models::LoadConfig& load,
                                                     const MemoryBudget& budget, bool quiet,
                                                     const std::optional<GraphOptions>& graphs,
                                                     const models::ModelOptions& options) {
  if (!load.device.is_cuda())
    return ModelRunner::load(config, dir, kv_in, load, graphs, options);
  auto stream = std::make_unique<vt::Stream>(load.device);
  // Both readings with the caching allocator emptied: blocks an earlier engine or test in
  // this process left cached would otherwise count before and be freed after, hiding the
  // weights (the difference clamps to 0).
  vt::empty_cache(load.device);
  const uint64_t before = vt::device_memory_info(load.device).used();
  auto model = models::load_model(config, dir, *stream, load, options);
  stream->synchronize();
  // Loading frees device temporaries (the per-projection pieces of stacked weights) into
  // the caching allocator; back to the driver with them, or the plan would count them
  // as weights (0.9 GiB of the 9B shape, 3.2 GiB of the 27B).
  vt::empty_cache(load.device);
  const uint64_t after = vt::device_memory_info(load.device).used();
  const CachePlan plan = profile_and_plan(*model, *stream, kv_in, budget,
                                          after - std::min(after, before), graphs);
  if (!quiet) std::fprintf(stderr, "vtllm: %s\n", plan.describe().c_str());
  KvCacheConfig kv = kv_in;
  kv.num_blocks = plan.num_blocks + 1;  // + the null block
  kv.num_state_snapshots += plan.num_state_snapshots;
  kv.snapshot_fraction = 0;  // planned
  auto runner = std::make_unique<ModelRunner>(std::move(stream), std::move(model), kv, graphs);
  runner->plan_ = plan;
  return runner;
}

int64_t ModelRunner::vocab_size() const { return model_->vocab_size(); }

vt::Tensor ModelRunner::run(const StepPlan& plan, std::vector<SampleResult>* prompt) {
  const bool prompt_rows = !plan.prompt_logprob_rows.empty();
  VT_CHECK(!prompt_rows || prompt, "model runner: ", plan.prompt_logprob_rows.size(),
           " prompt logprob rows and nowhere to put them");
  const bool mm_work =
      !plan.embeds.empty() || !plan.encoder_inputs.empty() || !plan.encoder_frees.empty();
  step_embeds_ = {};  // the previous step's work is done: execute synchronized
  if (mm_work) {
    VT_CHECK(embedder_ != nullptr, "model runner: a step with vision items for model ",
             model_->config().architecture_class, ", which has no vision tower");
    step_embeds_ = embedder_->embed(*stream_, plan);
  }
  // A profiled step runs eagerly: a replayed graph records no op (vt/profile.h).
  if (graphs_ && !prompt_rows && !mm_work && !vt::Profiler::of(*stream_) && graphs_->takes(plan)) {
    std::optional<vt::Tensor> logits =
        graphs_->run(plan, [&] { copy_states(plan.state_copies_before); });
    if (logits) {
      copy_states(plan.state_copies_after);
      return *logits;
    }
  }
  copy_states(plan.state_copies_before);
  const vt::Tensor hidden =
      model_->forward(*stream_, plan, *cache_, step_embeds_.rows.empty() ? nullptr : &step_embeds_);
  copy_states(plan.state_copies_after);
  if (prompt_rows) {
    std::vector<int32_t> rows;
    for (const PromptLogprobRow& r : plan.prompt_logprob_rows) rows.push_back(r.index);
    const vt::Tensor pl = model_->compute_logits(*stream_, hidden, rows);
    // bf16 -> f32 is exact; widen on the device, then one copy (to_device synchronizes).
    const vt::Tensor host =
        vt::to_device(*stream_, vt::to_dtype(*stream_, pl, vt::DType::kF32), vt::Device::cpu());
    VT_CHECK(host.numel() == int64_t(rows.size()) * vocab_size(), "model runner: ", host.numel(),
             " prompt logits for ", rows.size(), " rows of ", vocab_size());
    *prompt = prompt_logprobs_from_logits(
        std::span<const float>(host.data<float>(), size_t(host.numel())), vocab_size(),
        plan.prompt_logprob_rows);
  }
  if (plan.logits_indices.empty()) return {};
  vt::Tensor logits = model_->compute_logits(*stream_, hidden, plan.logits_indices);
  const int64_t rows = static_cast<int64_t>(plan.logits_indices.size());
  VT_CHECK(logits.dim() == 2 && logits.shape()[0] == rows && logits.shape()[1] == vocab_size(),
           "model runner: compute_logits returned ", logits.str(), " for ", rows, " rows of ",
           vocab_size());
  return logits;
}

StepOutput ModelRunner::execute(const StepPlan& plan, StepSampling& sampling) {
  StepOutput out;
  const vt::Tensor logits = run(plan, &out.prompt_logprobs);
  // On CUDA the forward pass is queued by now and runs while this waits for the masks.
  if (sampling.ready) sampling.ready();
  if (!logits.defined()) {
    stream_->synchronize();  // the step's cache writes are done when execute returns
    VT_CHECK(sampling.batch.rows.empty(), "model runner: ", sampling.batch.rows.size(),
             " rows to sample and no logits");
    out.samples = empty_sample_output();
    return out;
  }
  out.samples = vt::sample(*stream_, logits, sampling.batch);  // waits for the stream
  return out;
}

std::vector<float> ModelRunner::execute_logits(const StepPlan& plan) {
  const vt::Tensor logits = run(plan);
  if (!logits.defined()) {
    stream_->synchronize();
    return {};
  }
  // bf16 -> f32 is exact; widen on the device, then one copy (to_device synchronizes).
  const vt::Tensor host =
      vt::to_device(*stream_, vt::to_dtype(*stream_, logits, vt::DType::kF32), vt::Device::cpu());
  std::vector<float> out(static_cast<size_t>(host.numel()));
  std::memcpy(out.data(), host.data<float>(), out.size() * sizeof(float));
  return out;
}

std::vector<int32_t> ModelRunner::execute_greedy(const StepPlan& plan) {
  const vt::Tensor logits = run(plan);
  if (!logits.defined()) {
    stream_->synchronize();
    return {};
  }
  vt::Tensor ids = vt::Tensor::empty({logits.shape()[0]}, vt::DType::kI32, logits.device());
  vt::argmax(*stream_, logits, ids);
  const vt::Tensor host = vt::to_device(*stream_, ids, vt::Device::cpu());
  return std::vector<int32_t>(host.data<int32_t>(), host.data<int32_t>() + host.numel());
}

}  // namespace vtllm::engine
