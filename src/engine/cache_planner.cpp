#include "engine/cache_planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "vt/memory.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
#include "vt/ops/sampling.h"

namespace vtllm::engine {

CacheFootprint cache_footprint(const models::CacheSpec& spec, int64_t block_size,
                               vt::DType kv_dtype) {
  CacheFootprint f;
  const int64_t kv_item = int64_t(vt::dtype_size(kv_dtype));
  for (const models::LayerCacheSpec& l : spec) {
    if (l.kind == models::LayerCacheSpec::Kind::kAttention) {
      f.bytes_per_block += 2 * block_size * l.kv_heads * l.head_dim * kv_item;
    } else {
      f.bytes_per_state_slot += int64_t(sizeof(float)) *
                                (l.conv_rows * l.conv_dim +
                                 l.value_heads * l.key_head_dim * l.value_head_dim);
    }
  }
  return f;
}

namespace {
std::string gib(uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(uint64_t(1) << 30));
  return s;
}
}  // namespace

std::string CachePlan::describe() const {
  char u[16];
  std::snprintf(u, sizeof u, "%.2f", utilization);
  return str_cat("kv cache: ", u, " x ", gib(total), " total = ", gib(uint64_t(utilization * double(total))),
                 "; - ", gib(in_use), " in use after load (weights ", gib(weights),
                 ") - activation peak ", gib(activation_peak), " (profile step of ", profile_tokens,
                 " tokens) - ", num_state_slots, " GDN state slots (", num_state_snapshots,
                 " of them planned snapshots) ", gib(state_bytes),
                 " - CUDA graphs ", gib(graph_bytes), " = ",
                 gib(kv_bytes()), ": ", num_blocks, " blocks of ", block_size, " tokens (",
                 bytes_per_block, " bytes each), ", int64_t(num_blocks) * block_size,
                 " tokens of KV");
}

CachePlan plan_cache(double utilization, uint64_t total, uint64_t in_use, uint64_t weights,
                     uint64_t activation_peak, int64_t profile_tokens, int32_t num_state_slots,
                     int64_t block_size, const CacheFootprint& footprint,
                     uint64_t graph_bytes, double snapshot_fraction) {
  VT_CHECK(utilization > 0 && utilization <= 1, "--gpu-memory-utilization ", utilization,
           ": expected (0, 1]");
  VT_CHECK(footprint.bytes_per_block > 0, "kv cache: the model has no attention layer to size");
  CachePlan p;
  p.utilization = utilization;
  p.total = total;
  p.in_use = in_use;
  p.weights = weights;
  p.activation_peak = activation_peak;
  p.profile_tokens = profile_tokens;
  p.num_state_slots = num_state_slots;
  p.state_bytes = uint64_t(num_state_slots) * uint64_t(footprint.bytes_per_state_slot);
  p.block_size = block_size;
  p.bytes_per_block = uint64_t(footprint.bytes_per_block);
  p.graph_bytes = graph_bytes;
  VT_CHECK(snapshot_fraction >= 0 && snapshot_fraction < 1, "kv cache: snapshot fraction ",
           snapshot_fraction, ": expected [0, 1)");
  double left = utilization * double(total) - double(in_use) - double(activation_peak) -
                double(p.state_bytes) - double(graph_bytes);
  if (snapshot_fraction > 0 && footprint.bytes_per_state_slot > 0 && left > 0) {
    const double slot = double(footprint.bytes_per_state_slot);
    p.num_state_snapshots = int32_t(std::clamp(std::floor(snapshot_fraction * left / slot), 1.0,
                                               double(1 << 20)));
    p.num_state_slots += p.num_state_snapshots;
    p.state_bytes += uint64_t(p.num_state_snapshots) * uint64_t(footprint.bytes_per_state_slot);
    left -= double(p.num_state_snapshots) * slot;
  }
  const double blocks = left / double(p.bytes_per_block);
  VT_CHECK(blocks >= 1, "kv cache: no room for one block: ", utilization, " x ", gib(total), " - ",
           gib(in_use), " in use - ", gib(activation_peak), " activations - ", gib(p.state_bytes),
           " GDN state - ", gib(graph_bytes), " CUDA graphs = ", left / double(uint64_t(1) << 30),
           " GiB; raise --gpu-memory-utilization or lower --max-num-seqs");
  // The block ids are int32 and block 0 is the null block.
  p.num_blocks = int32_t(std::min(blocks, double((int64_t(1) << 31) - 2)));
  return p;
}

namespace {

// A step of `tokens` tokens over `requests` prompts starting at context 0, each in
// its own blocks after the null block and its own state slot; logits for every
// request's last token. The profile forward's batch.
models::ForwardBatch profile_batch(int64_t tokens, int32_t requests, int block_size,
                                   int64_t vocab) {
  models::ForwardBatch fb;
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
  }
  return fb;
}

bool has_gdn(const models::Model& m) {
  for (const models::LayerCacheSpec& l : m.cache_spec())
    if (l.kind == models::LayerCacheSpec::Kind::kGdn) return true;
  return false;
}

}  // namespace

CachePlan profile_and_plan(models::Model& model, vt::Stream& s, const KvCacheConfig& kv,
                           const MemoryBudget& budget, uint64_t weights,
                           const std::optional<GraphOptions>& graphs) {
  VT_CHECK(budget.max_num_batched_tokens > 0 && budget.max_num_seqs > 0,
           "cache plan: the memory budget needs max_num_batched_tokens and max_num_seqs > 0");
  const vt::Device dev = model.device();
  const bool hybrid = has_gdn(model);
  const int64_t tokens = budget.max_num_batched_tokens;
  const int32_t requests = int32_t(std::min<int64_t>(budget.max_num_seqs, tokens));
  const models::ForwardBatch fb =
      profile_batch(tokens, requests, kv.block_size, model.vocab_size());
  // The profile runs on a cache just big enough for it. Its transient tensors are the
  // activation peak (the allocator's peak of live bytes above what lived before); what
  // it leaves behind (grown op scratch, cuBLASLt plans) is in `in_use` below.
  uint64_t peak = 0;
  {
    const int64_t blocks = 1 + requests * int64_t(fb.max_blocks_per_seq);
    models::ModelCache probe(s, model.cache_spec(), blocks, kv.block_size, hybrid ? requests : 0,
                             model.dtype());
    s.synchronize();
    const uint64_t before = vt::memory_stats(dev).in_use;
    vt::reset_peak_memory(dev);
    {
      const vt::Tensor hidden = model.forward(s, fb, probe);
      const vt::Tensor logits = model.compute_logits(s, hidden, fb.logits_indices);
      const vt::Tensor f32 = vt::to_dtype(s, logits, vt::DType::kF32);
      vt::Tensor ids = vt::Tensor::empty({f32.shape()[0]}, vt::DType::kI32, dev);
      vt::argmax(s, f32, ids);
      s.synchronize();
    }
    const uint64_t top = vt::memory_stats(dev).peak_in_use;
    peak = top > before ? top - before : 0;
  }
  s.synchronize();
  vt::empty_cache(dev);  // the profile's cached blocks are not in use
  const vt::DeviceMemoryInfo after = vt::device_memory_info(dev);
  // 10% + 64 MiB over the measured peak: allocations outside the caching allocator
  // during a step. The device sampler (vt::sample, not run by the profile) keeps an f32
  // copy of every logits row of a step in its work scratch: up to `requests` rows.
  const uint64_t sampler_scratch = uint64_t(requests) * uint64_t(model.vocab_size()) * 4;
  const uint64_t activation = peak + peak / 10 + (uint64_t(64) << 20) + sampler_scratch;
  // CUDA graphs (captured later, lazily): every capture size's logits output stays held,
  // and the pool holds about the largest capture's activations, estimated from the
  // profile's per-token peak (x2: decode steps keep no less per token) + the packed
  // input buffer and 64 MiB of slack. One more GDN slot: the padding rows' scratch.
  const bool graphs_on = graphs && !graphs->enforce_eager && graphs->max_batch > 0;
  uint64_t graph_bytes = 0;
  if (graphs_on) {
    for (int32_t n : graph_sizes(graphs->max_batch))
      graph_bytes += uint64_t(n) * uint64_t(model.vocab_size()) * vt::dtype_size(model.dtype());
    graph_bytes += peak / uint64_t(std::max<int64_t>(tokens, 1)) * uint64_t(graphs->max_batch) * 2 +
                   (uint64_t(64) << 20);
  }
  const int32_t slots =
      hybrid ? kv.num_state_slots + kv.num_state_snapshots + (graphs_on ? 1 : 0) : 0;
  return plan_cache(budget.gpu_memory_utilization, after.total, after.used(), weights, activation,
                    tokens, slots, kv.block_size,
                    cache_footprint(model.cache_spec(), kv.block_size, model.dtype()), graph_bytes,
                    hybrid && kv.enable_prefix_caching ? kv.snapshot_fraction : 0);
}

}  // namespace vtllm::engine
