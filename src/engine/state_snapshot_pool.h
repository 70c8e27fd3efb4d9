// StateSnapshotPool: GDN state saved at a prompt's block boundary, so a hybrid
// model can take a prefix-cache hit (docs/ENGINE.md, "Hybrid models").
//
// A snapshot is one extra GDN state slot (ids [first_slot, first_slot + n))
// holding the conv and recurrent state of every GDN layer after the token
// chain whose last full block has hash `hash`. A reserved snapshot is
// pending until the step that writes it has run (begin_step() of the next
// schedule); only then can lookup() return it. Least recently used valid
// snapshots are evicted first. Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "engine/block_hash.h"

namespace vtllm::engine {

class StateSnapshotPool {
 public:
  StateSnapshotPool(int32_t first_slot, int32_t num_snapshots);

  int32_t capacity() const { return capacity_; }
  int32_t size() const { return static_cast<int32_t>(order_.size()); }

  // The slot of the valid snapshot for `hash`, marked most recently used.
  std::optional<int32_t> lookup(const BlockHash& hash);
  // A slot to write the snapshot for `hash` into this step; nullopt when one
  // exists already or every slot is pending.
  std::optional<int32_t> reserve(const BlockHash& hash);
  // The previous step has run: its pending snapshots become valid.
  void begin_step();
  void clear();

 private:
  struct Entry {
    BlockHash hash;
    int32_t slot;
    bool pending;
  };
  int32_t first_slot_, capacity_;
  std::list<Entry> order_;  // least recently used first
  std::unordered_map<BlockHash, std::list<Entry>::iterator, BlockHashHasher> index_;
};

}  // namespace vtllm::engine
