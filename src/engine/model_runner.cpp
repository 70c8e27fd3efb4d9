#include "engine/model_runner.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "models/registry.h"

namespace vtllm::engine {

bool needs_state_slots(const models::Model& model) {
  const auto& spec = model.cache_spec();
  return std::any_of(spec.begin(), spec.end(), [](const models::LayerCacheSpec& l) {
    return l.kind == models::LayerCacheSpec::Kind::kGdn;
  });
}

ModelRunner::ModelRunner(std::unique_ptr<vt::Stream> stream, std::unique_ptr<models::Model> model,
                         const KvCacheConfig& kv)
    : stream_(std::move(stream)), model_(std::move(model)) {
  VT_CHECK(stream_ && model_, "model runner: needs a stream and a model");
  needs_state_slots_ = needs_state_slots(*model_);
  if (needs_state_slots_ && kv.num_state_slots <= 0)
    VT_THROW("model runner: the model has GDN layers, so num_state_slots must be > 0 (got ",
             kv.num_state_slots, ")");
  cache_ = std::make_unique<models::ModelCache>(
      model_->cache_spec(), kv.num_blocks, kv.block_size,
      needs_state_slots_ ? kv.num_state_slots + kv.num_state_snapshots : 0);
}

namespace {

// Copies row src of a [slots, ...] CPU tensor onto row dst.
void copy_row(const vt::Tensor& t, int32_t src, int32_t dst) {
  VT_CHECK(t.device().is_cpu() && t.is_contiguous(), "model runner: GDN state must be a contiguous CPU tensor");
  const int64_t slots = t.shape()[0];
  VT_CHECK(src >= 0 && src < slots && dst >= 0 && dst < slots, "model runner: state copy ", src,
           " -> ", dst, " outside ", slots, " slots");
  const size_t row = t.nbytes() / static_cast<size_t>(slots);
  auto* base = static_cast<char*>(t.data_ptr());
  std::memcpy(base + row * dst, base + row * src, row);
}

}  // namespace

void ModelRunner::copy_states(const std::vector<StateCopy>& copies) {
  if (copies.empty()) return;
  stream_->synchronize();
  const auto& spec = model_->cache_spec();
  for (size_t layer = 0; layer < spec.size(); ++layer) {
    if (spec[layer].kind != models::LayerCacheSpec::Kind::kGdn) continue;
    const models::GdnState g = cache_->gdn(static_cast<int64_t>(layer));
    for (const StateCopy& c : copies) {
      copy_row(g.conv, c.src, c.dst);
      copy_row(g.recurrent, c.src, c.dst);
    }
  }
}

ModelRunner::~ModelRunner() = default;

std::unique_ptr<ModelRunner> ModelRunner::load(const std::string& dir, const KvCacheConfig& kv) {
  auto stream = std::make_unique<vt::Stream>();
  auto model = models::load_model(dir, *stream);
  return std::make_unique<ModelRunner>(std::move(stream), std::move(model), kv);
}

int64_t ModelRunner::vocab_size() const { return model_->vocab_size(); }

std::vector<float> ModelRunner::execute(const ForwardBatch& fb) {
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
  if (needs_state_slots_) mb.state_slots = fb.state_slots;
  mb.logits_indices = fb.logits_indices;
  models::validate_forward_batch(mb, needs_state_slots_);

  copy_states(fb.state_copies_before);
  const vt::Tensor hidden = model_->forward(*stream_, mb, *cache_);
  copy_states(fb.state_copies_after);
  if (fb.logits_indices.empty()) return {};
  const vt::Tensor logits = model_->compute_logits(*stream_, hidden, fb.logits_indices);
  const int64_t rows = static_cast<int64_t>(fb.logits_indices.size());
  VT_CHECK(logits.device().is_cpu(),
           "model runner: logits on a CUDA device; copying them to the host is not wired yet");
  VT_CHECK(logits.is_contiguous() && logits.numel() == rows * vocab_size(),
           "model runner: compute_logits returned ", logits.numel(), " values for ", rows,
           " rows of ", vocab_size());
  std::vector<float> out(static_cast<size_t>(logits.numel()));
  std::memcpy(out.data(), logits.data<float>(), out.size() * sizeof(float));
  return out;
}

}  // namespace vtllm::engine
