// StateSnapshotPool: GDN state saved at block boundaries, so a hybrid model can
// take a prefix-cache hit (docs/ENGINE.md, "Hybrid models and prefix caching").
//
// A snapshot is one extra GDN state slot (ids [first_slot, first_slot + n))
// holding the conv and recurrent state of every GDN layer after the token
// chain whose last full block has hash `hash` (a chained hash: it names the
// whole prefix, so two prompts that share blocks but differ later never share
// a snapshot past the point where they differ). A reserved snapshot is pending
// until the step that writes it has run (begin_step() of the next schedule);
// only then can lookup() return it. When full, reserve() evicts first a
// snapshot whose boundary block has left the prefix cache (the caller's
// `stale` test), then the least recently used valid one; pending ones never.
// Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/block_hash.h"

namespace vtllm::engine {

class StateSnapshotPool {
 public:
  // True when the snapshot for `hash` (whose boundary block was `block` when it
  // was reserved) can no longer be hit.
  using StaleFn = std::function<bool(const BlockHash& hash, int32_t block)>;

  StateSnapshotPool(int32_t first_slot, int32_t num_snapshots);

  int32_t capacity() const { return capacity_; }
  int32_t size() const { return static_cast<int32_t>(order_.size()); }

  // The slot of the valid snapshot for `hash`, marked most recently used.
  std::optional<int32_t> lookup(const BlockHash& hash);
  // Whether a snapshot for `hash` exists, valid or pending (no LRU change).
  bool contains(const BlockHash& hash) const { return index_.contains(hash); }
  // A slot to write the snapshot for `hash` (boundary block id `block`) into
  // this step; nullopt when one exists already or every slot is pending.
  std::optional<int32_t> reserve(const BlockHash& hash, int32_t block = -1,
                                 const StaleFn& stale = {});
  // Drops the snapshot for `hash` (no-op when absent); its slot is free for a
  // later reserve(), whose copy is ordered after this step's reads of it.
  void release(const BlockHash& hash);
  // The previous step has run: its pending snapshots become valid.
  void begin_step();
  void clear();

 private:
  struct Entry {
    BlockHash hash;
    int32_t slot;
    int32_t block;
    bool pending;
  };
  void erase(std::list<Entry>::iterator it);

  int32_t first_slot_, capacity_;
  std::vector<int32_t> free_slots_;
  std::list<Entry> order_;  // least recently used first
  std::unordered_map<BlockHash, std::list<Entry>::iterator, BlockHashHasher> index_;
};

}  // namespace vtllm::engine
