// EncoderCacheManager: the scheduler's book of vision features (vLLM's
// EncoderCacheManager). It holds no tensor: it decides which items' features exist in
// the runner's encoder cache (keyed by the item's content hash), which to compute in a
// step and which to drop, and the runner follows (engine/mm_embedder.h).
//
// An entry is referenced by every request that still has placeholder rows of it to
// compute; unreferenced entries stay cached, least recently used evicted first, while
// the bytes of all entries exceed the capacity. Releases are deferred to the next
// begin_step(), so an entry a step reads is never evicted while that step is planned.
// An item larger than the free room is admitted when no entry is referenced (nothing
// could ever make room; the scheduler also lets a chunk that cannot be cut shorter
// through then), so every request makes progress. Not thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/block_hash.h"

namespace vtllm::engine {

struct EncoderCacheStats {
  int64_t num_entries = 0;
  int64_t bytes = 0;
  int64_t num_encoded = 0;  // items scheduled for encoding so far (misses)
  int64_t num_hits = 0;     // references served by a cached entry
};

class EncoderCacheManager {
 public:
  // bytes_per_token: one feature row (out_hidden x the model dtype's size).
  EncoderCacheManager(int64_t capacity_bytes, int64_t bytes_per_token);

  // Applies the releases of the previous step and clears the step's free list.
  void begin_step();
  bool cached(const BlockHash& h) const { return entries_.contains(h); }
  // Whether new entries of `tokens` rows in all fit now, evicting unreferenced entries
  // other than `pinned` (cached entries the same step will reference). Always true when
  // no entry is referenced and none pinned.
  bool can_allocate(int64_t tokens, std::span<const BlockHash> pinned = {}) const;
  bool any_referenced() const { return num_referenced_ > 0; }
  // Adds the entry (evicting as can_allocate allows; its hash goes to freed()) and
  // counts an encode. The hash must not be cached.
  void allocate(const BlockHash& h, int64_t tokens);
  // Request `id` reads the entry (once per distinct hash; counts a hit when the entry
  // was not allocated for it in this step). The hash must be cached.
  void acquire(const std::string& id, const BlockHash& h, bool allocated_now);
  bool holds(const std::string& id, const BlockHash& h) const;
  // Drops the reference at the next begin_step().
  void release(const std::string& id, const BlockHash& h);
  void release_all(const std::string& id);
  // Hashes evicted since begin_step(), in order: the runner drops them before encoding.
  const std::vector<BlockHash>& freed() const { return freed_; }
  EncoderCacheStats stats() const;

 private:
  struct Entry {
    int64_t bytes = 0;
    int refs = 0;
    std::list<BlockHash>::iterator lru;  // valid while refs == 0
  };
  void unref(const BlockHash& h);

  int64_t capacity_, bytes_per_token_;
  int64_t bytes_ = 0, num_referenced_ = 0;
  std::unordered_map<BlockHash, Entry, BlockHashHasher> entries_;
  std::list<BlockHash> lru_;  // unreferenced entries, oldest first
  std::unordered_map<std::string, std::vector<BlockHash>> held_;
  std::vector<std::pair<std::string, BlockHash>> pending_release_;
  std::vector<BlockHash> freed_;
  int64_t num_encoded_ = 0, num_hits_ = 0;
};

}  // namespace vtllm::engine
