// A fake model for engine tests: next-token logits are a deterministic
// function of the whole sequence, and the sequence is read back through the
// paged cache exactly as attention would (block_table, slot_mapping), so a
// wrong block, a stale slot or a shared GDN state slot changes the output or
// throws. Hybrid mode also keeps a per-slot running hash as "GDN state".
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/hash.h"
#include "engine/model_executor.h"
#include "engine/step_plan.h"

namespace vtllm::engine::testing {

class FakeModel : public HostLogitsExecutor {
 public:
  // num_state_slots counts every GDN slot: running ones plus snapshots.
  FakeModel(int64_t vocab, int32_t num_blocks, int block_size, int32_t num_state_slots = 0)
      : vocab_(vocab),
        kv_(static_cast<size_t>(num_blocks) * block_size, Entry{}),
        state_(num_state_slots, 0) {}

  int64_t vocab_size() const override { return vocab_; }
  int64_t tokens_computed() const { return tokens_computed_; }

  // The reference: logits for the sequence `seq` (prompt + outputs so far).
  std::vector<float> logits_for(const std::vector<int32_t>& seq) const {
    return logits_from_hash(hash_sequence(seq));
  }

  std::vector<float> logits(const StepPlan& fb) override {
    const int bs = fb.block_size;
    // 1. Write every token's "KV" (its id and position) into its slot.
    for (int64_t t = 0; t < fb.num_tokens(); ++t) {
      VT_CHECK(fb.slot_mapping[t] >= bs, "fake model: token ", t, " writes the null block");
      kv_.at(fb.slot_mapping[t]) = Entry{fb.token_ids[t], fb.positions[t]};
    }
    tokens_computed_ += fb.num_tokens();
    for (const StateCopy& c : fb.state_copies_before) state_.at(c.dst) = state_.at(c.src);
    // 2. GDN state: consume each request's new tokens in order, saving the state after
    // the first `offset` of them where the step asks (models::StateSave).
    std::vector<uint64_t> state_hash(fb.num_requests(), 0);
    size_t save = 0;
    for (int64_t b = 0; b < fb.num_requests() && !state_.empty(); ++b) {
      uint64_t& s = state_.at(fb.state_slots[b]);
      if (fb.context_lens[b] == 0) s = kEmpty;
      const bool saves = save < fb.state_saves.size() && fb.state_saves[save].request == b;
      for (int32_t t = fb.query_start_loc[b]; t < fb.query_start_loc[b + 1]; ++t) {
        if (saves && t == fb.query_start_loc[b] + fb.state_saves[save].offset)
          state_.at(fb.state_saves[save].slot) = s;
        s = step_hash(s, fb.token_ids[t]);
      }
      if (saves) ++save;
      state_hash[b] = s;
    }
    VT_CHECK(state_.empty() || save == fb.state_saves.size(),
             "fake model: a state save for no request");
    for (const StateCopy& c : fb.state_copies_after) state_.at(c.dst) = state_.at(c.src);
    // 3. For each wanted row, read the whole sequence back through the block table.
    std::vector<float> out;
    for (size_t k = 0; k < fb.logits_indices.size(); ++k) {
      const int32_t b = fb.logits_requests[k];
      uint64_t h = kEmpty;
      for (int64_t pos = 0; pos < fb.seq_lens[b]; ++pos) {
        const int32_t block = fb.block_table[b * fb.max_blocks_per_seq + pos / bs];
        const Entry& e = kv_.at(static_cast<size_t>(block) * bs + pos % bs);
        if (e.pos != pos)
          VT_THROW("fake model: request ", b, " position ", pos, " reads a slot holding position ",
                   e.pos);
        h = step_hash(h, e.token);
      }
      if (!state_.empty() && state_hash[b] != h)
        VT_THROW("fake model: request ", b, " GDN state disagrees with its KV cache");
      const auto l = logits_from_hash(h);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }

 private:
  struct Entry {
    int32_t token = -1;
    int64_t pos = -1;
  };
  static constexpr uint64_t kEmpty = 0x1234567;

  static uint64_t step_hash(uint64_t h, int32_t token) {
    return splitmix64(h * 31 + static_cast<uint32_t>(token));
  }
  static uint64_t hash_sequence(const std::vector<int32_t>& seq) {
    uint64_t h = kEmpty;
    for (int32_t t : seq) h = step_hash(h, t);
    return h;
  }
  std::vector<float> logits_from_hash(uint64_t h) const {
    // Peaked enough that greedy is meaningful, spread enough that sampling varies.
    std::vector<float> l(vocab_);
    for (int64_t i = 0; i < vocab_; ++i) {
      const uint64_t r = mix64(h ^ mix64(static_cast<uint64_t>(i) + 1));
      l[i] = static_cast<float>((r >> 11) * 0x1.0p-53 * 6.0 - 3.0);
    }
    return l;
  }

  int64_t vocab_;
  std::vector<Entry> kv_;
  std::vector<uint64_t> state_;
  int64_t tokens_computed_ = 0;
};

}  // namespace vtllm::engine::testing
