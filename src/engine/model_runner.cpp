#include "engine/model_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "models/registry.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
#include "vt/ops/sampling.h"

namespace vtllm::engine {

bool needs_state_slots(const models::Model& model) {
  const auto& spec = model.cache_spec();
  return std::any_of(spec.begin(), spec.end(), [](const models::LayerCacheSpec& l) {
    return l.kind == models::LayerCacheSpec::Kind::kGdn;
  });
}

std::vector<int32_t> graph_sizes(int32_t max_batch) {
  std::vector<int32_t> v;
  for (int32_t n : {1, 2, 4})
    if (n <= max_batch) v.push_back(n);
  for (int32_t n = 8; n <= max_batch; n += n < 32 ? 8 : 16) v.push_back(n);
  if (max_batch > 0 && (v.empty() || v.back() != max_batch)) v.push_back(max_batch);
  return v;
}

int32_t graph_size_for(const std::vector<int32_t>& sizes, int64_t batch) {
  for (int32_t n : sizes)
    if (n >= batch) return n;
  return 0;
}

// One captured decode step: the graph and the logits [size, vocab] it writes.
struct ModelRunner::DecodeGraph {
  int32_t size = 0;
  vt::cuda::GraphExecPtr exec;
  vt::Tensor logits;  // held: its graph-pool block must not serve another graph
  int64_t kernel_nodes = 0;
};

std::vector<ModelRunner::GraphKernels> ModelRunner::graph_kernel_counts() const {
  std::vector<GraphKernels> out;
  for (const auto& g : graphs_) out.push_back({g->size, g->kernel_nodes});
  return out;
}

ModelRunner::ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
                         const KvCacheConfig& kv, const std::optional<GraphOptions>& graphs)
    : stream_(std::move(stream)), model_(std::move(model)), kv_(kv) {
  VT_CHECK(stream_ && model_, "model runner: needs a stream and a model");
  VT_CHECK(stream_->device() == model_->device(), "model runner: a ", stream_->device().str(),
           " stream for a model on ", model_->device().str());
  needs_state_slots_ = needs_state_slots(*model_);
  if (needs_state_slots_ && kv.num_state_slots <= 0)
    VT_THROW("model runner: the model has GDN layers, so num_state_slots must be > 0 (got ",
             kv.num_state_slots, ")");
  graphs_enabled_ = graphs.has_value() && !graphs->enforce_eager && stream_->device().is_cuda() &&
                   graphs->max_batch > 0;
  int32_t slots = needs_state_slots_ ? kv.num_state_slots + kv.num_state_snapshots : 0;
  if (graphs_enabled_) {
    graph_opts_ = *graphs;
    graph_opts_.max_context =
        std::min<int64_t>(graph_opts_.max_context, int64_t(kv.num_blocks - 1) * kv.block_size);
    graphs_enabled_ = graph_opts_.max_context > 0;
    sizes_ = graph_sizes(graph_opts_.max_batch);
    if (needs_state_slots_) pad_state_slot_ = slots++;  // scratch state of padding rows
  }
  cache_ = std::make_unique<models::ModelCache>(*stream_, model_->cache_spec(), kv.num_blocks,
                                                kv.block_size, slots, model_->dtype());
}

ModelRunner::~ModelRunner() {
  if (graphs_.empty()) return;
  try {
    stream_->synchronize();
    graphs_.clear();
    graph_inputs_ = vt::Tensor();
    vt::cuda::release_graph_pool(stream_->device().index);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vtllm: releasing CUDA graphs failed: %s\n", e.what());
  }
}

models::StepLayout ModelRunner::layout_for(int32_t size) const {
  models::StepLayout l;
  l.batch = size;
  l.table_width = (graph_opts_.max_context + kv_.block_size - 1) / kv_.block_size;
  l.pad_state_slot = pad_state_slot_;
  l.bounds = vt::AttentionBounds{size, 1, graph_opts_.max_context};
  return l;
}

ModelRunner::DecodeGraph& ModelRunner::graph_for(int32_t size) {
  for (auto& g : graphs_)
    if (g->size == size) return *g;
  if (!graph_inputs_.defined()) {  // outside the graph pool, sized for the largest capture
    const int64_t bytes = model_->packed_input_bytes(layout_for(sizes_.back()));
    graph_inputs_ = vt::Tensor::empty({(bytes + 7) / 8}, vt::DType::kI64, stream_->device());
  }
  // A step of padding rows only: it reads the null block and writes the scratch slot.
  models::ForwardBatch pad;
  pad.block_size = kv_.block_size;
  pad.query_start_loc = {0};
  const models::StepLayout layout = layout_for(size);
  const models::BatchInputs in = model_->prepare(*stream_, pad, *cache_, &layout, &graph_inputs_);
  std::vector<int32_t> rows(static_cast<size_t>(size));
  for (int32_t r = 0; r < size; ++r) rows[size_t(r)] = r;
  {  // eagerly first: op scratch and cuBLASLt plans reach their sizes outside the capture
    const vt::Tensor hidden = model_->forward_prepared(*stream_, in, *cache_);
    model_->compute_logits(*stream_, hidden, rows);
    stream_->synchronize();
  }
  auto g = std::make_unique<DecodeGraph>();
  g->size = size;
  stream_->begin_capture();
  try {
    const vt::Tensor hidden = model_->forward_prepared(*stream_, in, *cache_);
    g->logits = model_->compute_logits(*stream_, hidden, rows);
    g->exec = stream_->end_capture();
    g->kernel_nodes = vt::Stream::graph_kernel_nodes(*g->exec);
  } catch (...) {
    stream_->abort_capture();
    throw;
  }
  graphs_.push_back(std::move(g));
  return *graphs_.back();
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

namespace {

models::ForwardBatch to_model_batch(const ForwardBatch& fb, bool needs_state_slots) {
  models::ForwardBatch mb;
  mb.block_size = fb.block_size;
  mb.token_ids = fb.token_ids;
  mb.query_start_loc = fb.query_start_loc;
  mb.seq_lens = fb.seq_lens;
  mb.context_lens = fb.context_lens;
  mb.positions = fb.positions;
  mb.position_rows = 1;
  mb.slot_mapping = fb.slot_mapping;
  mb.max_blocks_per_seq = fb.max_blocks_per_seq;
  mb.block_table = fb.block_table;
  if (needs_state_slots) mb.state_slots = fb.state_slots;
  mb.logits_indices = fb.logits_indices;
  models::validate_forward_batch(mb, needs_state_slots);
  return mb;
}

// A step of `tokens` tokens over `requests` prompts starting at context 0, each in
// its own blocks after the null block and its own state slot; logits for every
// request's last token. The profile forward's batch.
ForwardBatch profile_batch(int64_t tokens, int32_t requests, int block_size, int64_t vocab) {
  ForwardBatch fb;
  fb.block_size = block_size;
  const int64_t per = tokens / requests;
  int32_t max_blocks = 0;
  std::vector<int64_t> lens(size_t(requests), per);
  lens[0] += tokens - per * requests;
  for (int64_t l : lens) max_blocks = std::max(max_blocks, int32_t((l + block_size - 1) / block_size));
  fb.max_blocks_per_seq = max_blocks;
  fb.query_start_loc.push_back(0);
  int32_t next_block = 1;
  for (int32_t r = 0; r < requests; ++r) {
    const int64_t len = lens[size_t(r)];
    const int32_t first = next_block;
    const int32_t nb = int32_t((len + block_size - 1) / block_size);
    for (int32_t i = 0; i < max_blocks; ++i) fb.block_table.push_back(i < nb ? first + i : 0);
    next_block += nb;
    for (int64_t p = 0; p < len; ++p) {
      fb.token_ids.push_back(int32_t((int64_t(fb.token_ids.size()) * 7919 + 13) % vocab));
      fb.positions.push_back(p);
      fb.slot_mapping.push_back(int64_t(first) * block_size + p);
    }
    fb.query_start_loc.push_back(int32_t(fb.token_ids.size()));
    fb.seq_lens.push_back(int32_t(len));
    fb.context_lens.push_back(0);
    fb.state_slots.push_back(r);
    fb.logits_indices.push_back(int32_t(fb.token_ids.size()) - 1);
    fb.logits_requests.push_back(r);
  }
  return fb;
}

}  // namespace

std::unique_ptr<ModelRunner> ModelRunner::load(const io::ModelConfig& config,
                                               const std::string& dir, const KvCacheConfig& kv,
                                               const models::LoadConfig& load,
                                               const std::optional<GraphOptions>& graphs) {
  auto stream = std::make_unique<vt::Stream>(load.device);
  auto model = models::load_model(config, dir, *stream, load);
  return std::make_unique<ModelRunner>(std::move(stream), std::move(model), kv, graphs);
}

std::unique_ptr<ModelRunner> ModelRunner::load(const std::string& dir, const KvCacheConfig& kv) {
  return load(io::load_model_config(dir), dir, kv);
}

std::unique_ptr<ModelRunner> ModelRunner::load_sized(const io::ModelConfig& config,
                                                     const std::string& dir,
                                                     const KvCacheConfig& kv_in,
                                                     const models::LoadConfig& load,
                                                     const MemoryBudget& budget, bool quiet,
                                                     const std::optional<GraphOptions>& graphs) {
  if (!load.device.is_cuda()) return ModelRunner::load(config, dir, kv_in, load, graphs);
  VT_CHECK(budget.max_num_batched_tokens > 0 && budget.max_num_seqs > 0,
           "model runner: the memory budget needs max_num_batched_tokens and max_num_seqs > 0");
  auto stream = std::make_unique<vt::Stream>(load.device);
  const DeviceMemory before_load = device_memory(load.device);
  auto model = models::load_model(config, dir, *stream, load);
  stream->synchronize();
  // Loading frees device temporaries (the per-projection pieces of stacked weights) into
  // the caching allocator; back to the driver with them, or the plan below would count
  // them as weights (0.9 GiB of the 9B shape, 3.2 GiB of the 27B).
  vt::cuda::empty_cache(load.device.index);
  const DeviceMemory after_load = device_memory(load.device);
  const uint64_t weights = after_load.used() - std::min(after_load.used(), before_load.used());

  // Profile the largest step on a cache just big enough for it: its transient
  // tensors are the activation peak; what it leaves behind (grown op scratch,
  // cuBLASLt plans) is counted in `in_use` below.
  const bool hybrid = needs_state_slots(*model);
  const int64_t tokens = budget.max_num_batched_tokens;
  const int32_t requests = int32_t(std::min<int64_t>(budget.max_num_seqs, tokens));
  const ForwardBatch fb = profile_batch(tokens, requests, kv_in.block_size, model->vocab_size());
  uint64_t peak = 0;
  {
    const int64_t blocks = 1 + requests * int64_t(fb.max_blocks_per_seq);
    models::ModelCache probe(*stream, model->cache_spec(), blocks, kv_in.block_size,
                             hybrid ? requests : 0, model->dtype());
    stream->synchronize();
    const models::ForwardBatch mb = to_model_batch(fb, hybrid);
    peak = peak_memory_during(load.device, [&] {
      const vt::Tensor hidden = model->forward(*stream, mb, probe);
      const vt::Tensor logits = model->compute_logits(*stream, hidden, fb.logits_indices);
      const vt::Tensor f32 = vt::to_dtype(*stream, logits, vt::DType::kF32);
      vt::Tensor ids = vt::Tensor::empty({f32.shape()[0]}, vt::DType::kI32, load.device);
      vt::argmax(*stream, f32, ids);
      stream->synchronize();
    });
  }
  stream->synchronize();
  const DeviceMemory after_profile = device_memory(load.device);
  // The sampler can miss a live set shorter than one sample: keep 10% + 64 MiB over
  // what it saw.
  // The device sampler (vt::sample, not run by the profile) keeps an f32 copy of every
  // logits row of a step in its work scratch: up to `requests` rows.
  const uint64_t sampler_scratch = uint64_t(requests) * uint64_t(model->vocab_size()) * 4;
  const uint64_t activation = peak + peak / 10 + (uint64_t(64) << 20) + sampler_scratch;
  // CUDA graphs (captured later, lazily): every capture size's logits output stays held,
  // and the pool holds about the largest capture's activations, estimated from the
  // profile's per-token peak (x2: decode steps keep no less per token) + the packed
  // input buffer and 64 MiB of slack. One more GDN slot: the padding rows' scratch.
  const bool graphs_on = graphs && !graphs->enforce_eager && graphs->max_batch > 0;
  uint64_t graph_bytes = 0;
  if (graphs_on) {
    for (int32_t n : graph_sizes(graphs->max_batch))
      graph_bytes += uint64_t(n) * uint64_t(model->vocab_size()) * vt::dtype_size(model->dtype());
    graph_bytes += peak / uint64_t(std::max<int64_t>(tokens, 1)) * uint64_t(graphs->max_batch) * 2 +
                   (uint64_t(64) << 20);
  }
  const int32_t slots =
      hybrid ? kv_in.num_state_slots + kv_in.num_state_snapshots + (graphs_on ? 1 : 0) : 0;
  CachePlan plan = plan_cache(budget.gpu_memory_utilization, after_profile.total,
                              after_profile.used(), weights, activation, tokens, slots,
                              kv_in.block_size,
                              cache_footprint(model->cache_spec(), kv_in.block_size, model->dtype()),
                              graph_bytes);
  if (!quiet) std::fprintf(stderr, "vtllm: %s\n", plan.describe().c_str());
  KvCacheConfig kv = kv_in;
  kv.num_blocks = plan.num_blocks + 1;  // + the null block
  auto runner = std::make_unique<ModelRunner>(std::move(stream), std::move(model), kv, graphs);
  runner->plan_ = plan;
  return runner;
}

int64_t ModelRunner::vocab_size() const { return model_->vocab_size(); }

vt::Tensor ModelRunner::run(const ForwardBatch& fb) {
  if (graphs_enabled_)
    if (std::optional<vt::Tensor> logits = run_graph(fb)) return *logits;
  const models::ForwardBatch mb = to_model_batch(fb, needs_state_slots_);
  copy_states(fb.state_copies_before);
  const vt::Tensor hidden = model_->forward(*stream_, mb, *cache_);
  copy_states(fb.state_copies_after);
  if (fb.logits_indices.empty()) return {};
  vt::Tensor logits = model_->compute_logits(*stream_, hidden, fb.logits_indices);
  const int64_t rows = static_cast<int64_t>(fb.logits_indices.size());
  VT_CHECK(logits.dim() == 2 && logits.shape()[0] == rows && logits.shape()[1] == vocab_size(),
           "model runner: compute_logits returned ", logits.str(), " for ", rows, " rows of ",
           vocab_size());
  return logits;
}

std::vector<float> ModelRunner::execute(const ForwardBatch& fb) {
  const vt::Tensor logits = run(fb);
  if (!logits.defined()) {
    stream_->synchronize();  // the step's cache writes are done when execute returns
    return {};
  }
  // bf16 -> f32 is exact; widen on the device, then one copy (to_device synchronizes).
  const vt::Tensor host =
      vt::to_device(*stream_, vt::to_dtype(*stream_, logits, vt::DType::kF32), vt::Device::cpu());
  std::vector<float> out(static_cast<size_t>(host.numel()));
  std::memcpy(out.data(), host.data<float>(), out.size() * sizeof(float));
  return out;
}

std::vector<int32_t> ModelRunner::execute_greedy(const ForwardBatch& fb) {
  const vt::Tensor logits = run(fb);
  if (!logits.defined()) {
    stream_->synchronize();
    return {};
  }
  vt::Tensor ids = vt::Tensor::empty({logits.shape()[0]}, vt::DType::kI32, logits.device());
  vt::argmax(*stream_, logits, ids);
  const vt::Tensor host = vt::to_device(*stream_, ids, vt::Device::cpu());
  return std::vector<int32_t>(host.data<int32_t>(), host.data<int32_t>() + host.numel());
}

vt::SampleOutput ModelRunner::execute_sampled(const ForwardBatch& fb,
                                              const vt::SampleBatch& sampling) {
  const vt::Tensor logits = run(fb);
  if (!logits.defined()) {
    stream_->synchronize();
    VT_CHECK(sampling.rows.empty(), "model runner: ", sampling.rows.size(),
             " rows to sample and no logits");
    vt::SampleOutput none;
    none.top_start.push_back(0);
    return none;
  }
  return vt::sample(*stream_, logits, sampling);  // waits for the stream
}

std::optional<vt::Tensor> ModelRunner::run_graph(const ForwardBatch& fb) {
  const int64_t B = int64_t(fb.seq_lens.size());
  if (B == 0 || fb.logits_indices.empty() || int64_t(fb.token_ids.size()) != B ||
      int64_t(fb.query_start_loc.size()) != B + 1 || int64_t(fb.context_lens.size()) != B)
    return std::nullopt;
  for (int64_t r = 0; r < B; ++r)
    if (fb.query_start_loc[size_t(r + 1)] - fb.query_start_loc[size_t(r)] != 1 ||
        fb.context_lens[size_t(r)] <= 0 || fb.seq_lens[size_t(r)] > graph_opts_.max_context)
      return std::nullopt;
  const int32_t size = graph_size_for(sizes_, B);
  const models::StepLayout layout = layout_for(size);
  if (size == 0 || fb.max_blocks_per_seq > layout.table_width) return std::nullopt;
  const models::ForwardBatch mb = to_model_batch(fb, needs_state_slots_);
  vt::Tensor logits;
  if (graph_opts_.padded_eager) {  // tests: the same inputs, run eagerly
    copy_states(fb.state_copies_before);
    if (!graph_inputs_.defined()) {
      const int64_t bytes = model_->packed_input_bytes(layout_for(sizes_.back()));
      graph_inputs_ = vt::Tensor::empty({(bytes + 7) / 8}, vt::DType::kI64, stream_->device());
    }
    const models::BatchInputs in = model_->prepare(*stream_, mb, *cache_, &layout, &graph_inputs_);
    std::vector<int32_t> rows(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r) rows[size_t(r)] = r;
    logits = model_->compute_logits(*stream_, model_->forward_prepared(*stream_, in, *cache_), rows);
  } else {
    DecodeGraph* g = nullptr;
    try {
      g = &graph_for(size);  // before this step's inputs land in the buffer
    } catch (const std::exception& e) {  // run eagerly from now on rather than fail the step
      std::fprintf(stderr, "vtllm: CUDA graph capture of a %d-request decode step failed (%s); "
                   "running eagerly\n", size, e.what());
      graphs_enabled_ = false;
      return std::nullopt;
    }
    copy_states(fb.state_copies_before);
    model_->prepare(*stream_, mb, *cache_, &layout, &graph_inputs_);  // the one packed copy
    stream_->replay(*g->exec);
    logits = g->logits;
  }
  copy_states(fb.state_copies_after);
  const auto& want = fb.logits_indices;
  bool prefix = true;
  for (size_t i = 0; prefix && i < want.size(); ++i) prefix = want[i] == int32_t(i);
  if (prefix) return logits.slice(0, 0, int64_t(want.size()));
  vt::Tensor picked = vt::Tensor::empty({int64_t(want.size()), logits.size(1)}, logits.dtype(),
                                        logits.device());
  vt::embedding(*stream_, logits, models::index_tensor(want), picked);  // a row gather
  return picked;
}

}  // namespace vtllm::engine
