// Test driver for models: sequences on a paged cache, stepped through Model::forward
// the way the engine will (flattened batch, block tables, state slots), without the
// engine. Blocks are handed out from the END of the pool so block tables are never
// the identity, and state slots likewise. The cache is on the model's device in its
// dtype; logits come back to the host widened to f32.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/model.h"
#include "vt/ops/copy.h"
#include "vt/stream.h"

namespace vtllm::models::testing {

struct Sequence {
  explicit Sequence(std::vector<int32_t> ids, int rows = 1)
      : tokens(std::move(ids)), position_rows(rows) {}
  std::vector<int32_t> tokens;  // prompt, then everything generated
  int64_t computed = 0;         // tokens already in the cache
  std::vector<int32_t> blocks;
  int32_t state_slot = -1;
  int position_rows;  // 3: feed [3, T] MRoPE positions with equal rows
};

class Harness {
 public:
  Harness(Model& model, vt::Stream& s, int64_t num_blocks = 96, int block_size = 16,
          int64_t num_slots = 4)
      : model_(model),
        s_(s),
        cache_(s, model.cache_spec(), num_blocks, block_size, num_slots, model.dtype()),
        block_size_(block_size) {
    for (int64_t b = 0; b < num_blocks; ++b) free_blocks_.push_back(int32_t(b));
    for (int64_t i = 0; i < num_slots; ++i) free_slots_.push_back(int32_t(i));
  }

  // One forward over `work`: for each (sequence, n) the next n uncomputed tokens, with
  // `embeds` (rows of this step's flat token axis) and GDN state saves (requests are
  // indices into `work`; slots from take_slot()) when given.
  // Returns the logits of each sequence's last token of this step, [B][V].
  std::vector<std::vector<float>> step(const std::vector<std::pair<Sequence*, int64_t>>& work,
                                       const InputEmbeddings* embeds = nullptr,
                                       const std::vector<StateSave>& saves = {}) {
    ForwardBatch b;
    b.block_size = block_size_;
    b.query_start_loc.push_back(0);
    int64_t max_blocks = 1;
    for (auto& [seq, n] : work) {
      if (seq->state_slot < 0) {
        seq->state_slot = free_slots_.back();
        free_slots_.pop_back();
      }
      const int64_t end = seq->computed + n;
      while (int64_t(seq->blocks.size()) * block_size_ < end) {
        seq->blocks.push_back(free_blocks_.back());
        free_blocks_.pop_back();
      }
      max_blocks = std::max<int64_t>(max_blocks, int64_t(seq->blocks.size()));
    }
    b.max_blocks_per_seq = int32_t(max_blocks);
    std::vector<int64_t> pos;
    int rows = work.empty() ? 1 : work[0].first->position_rows;
    for (auto& [seq, n] : work) {
      for (int64_t i = seq->computed; i < seq->computed + n; ++i) {
        b.token_ids.push_back(seq->tokens[size_t(i)]);
        pos.push_back(i);
        b.slot_mapping.push_back(int64_t(seq->blocks[size_t(i / block_size_)]) * block_size_ +
                                 i % block_size_);
      }
      b.query_start_loc.push_back(int32_t(b.token_ids.size()));
      b.seq_lens.push_back(int32_t(seq->computed + n));
      b.context_lens.push_back(int32_t(seq->computed));
      for (int64_t i = 0; i < max_blocks; ++i)
        b.block_table.push_back(i < int64_t(seq->blocks.size()) ? seq->blocks[size_t(i)] : 0);
      b.state_slots.push_back(seq->state_slot);
      b.logits_indices.push_back(int32_t(b.token_ids.size()) - 1);
    }
    b.position_rows = rows;
    b.state_saves = saves;
    for (int r = 0; r < rows; ++r) b.positions.insert(b.positions.end(), pos.begin(), pos.end());
    vt::Tensor hidden = model_.forward(s_, b, cache_, embeds);
    vt::Tensor logits =
        vt::to_device(s_, model_.compute_logits(s_, hidden, b.logits_indices), vt::Device::cpu());
    vt::Stream cpu(vt::Device::cpu(), 1);
    logits = vt::to_dtype(cpu, logits, vt::DType::kF32);
    for (auto& [seq, n] : work) seq->computed += n;
    std::vector<std::vector<float>> out;
    const int64_t V = logits.size(1);
    for (int64_t r = 0; r < logits.size(0); ++r)
      out.emplace_back(logits.data<float>() + r * V, logits.data<float>() + (r + 1) * V);
    return out;
  }

  // Prefills `seq` in chunks of `chunk` tokens (0: all at once); returns the last logits.
  std::vector<float> prefill(Sequence& seq, int64_t chunk = 0) {
    std::vector<float> last;
    while (seq.computed < int64_t(seq.tokens.size())) {
      int64_t left = int64_t(seq.tokens.size()) - seq.computed;
      last = step({{&seq, chunk > 0 ? std::min(chunk, left) : left}})[0];
    }
    return last;
  }

  // A free state slot (for a state save); never returned.
  int32_t take_slot() {
    const int32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }

  // Every GDN layer's conv and recurrent state in `slot`, concatenated, on the host.
  std::vector<float> gdn_state(int32_t slot) {
    std::vector<float> out;
    const CacheSpec spec = model_.cache_spec();
    for (size_t l = 0; l < spec.size(); ++l) {
      if (spec[l].kind != LayerCacheSpec::Kind::kGdn) continue;
      const GdnState st = cache_.gdn(int64_t(l));
      for (const vt::Tensor* t : {&st.conv, &st.recurrent}) {
        const vt::Tensor row =
            vt::to_device(s_, vt::contiguous(s_, t->select(0, slot)), vt::Device::cpu());
        out.insert(out.end(), row.data<float>(), row.data<float>() + row.numel());
      }
    }
    return out;
  }

  // Releases a finished sequence's blocks and slot.
  void release(Sequence& seq) {
    free_blocks_.insert(free_blocks_.end(), seq.blocks.begin(), seq.blocks.end());
    if (seq.state_slot >= 0) free_slots_.push_back(seq.state_slot);
    seq.blocks.clear();
    seq.state_slot = -1;
  }

 private:
  Model& model_;
  vt::Stream& s_;
  ModelCache cache_;
  int block_size_;
  std::vector<int32_t> free_blocks_, free_slots_;
};

inline int32_t argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());  // first maximum, as torch
}

}  // namespace vtllm::models::testing
