// BlockPool: the fixed set of KV cache blocks of one cache kind, with reference
// counts, an LRU free queue and the prefix-cache map.
//
// Block 0 is the null block: never handed out, used to pad block tables.
// A block is free when its reference count is 0; it stays in the prefix cache
// (findable by lookup()) until allocate() reuses it, which evicts it. The free
// queue is ordered least recently freed first; allocate() takes from the front
// and free() appends at the back, so callers free a request's blocks tail
// first to have its last blocks evicted first (as vLLM does).
// Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/block_hash.h"

namespace vtllm::engine {

inline constexpr int32_t kNullBlock = 0;

class BlockPool {
 public:
  // num_blocks includes the null block, so num_blocks - 1 are usable.
  BlockPool(int32_t num_blocks, int block_size, bool enable_caching);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int block_size() const { return block_size_; }
  bool caching_enabled() const { return enable_caching_; }
  int32_t num_free() const { return num_free_; }
  int32_t num_cached() const { return static_cast<int32_t>(cached_.size()); }
  // Fraction of usable blocks with a reference (0 when all are free).
  double usage() const;
  int32_t ref_count(int32_t block) const;
  std::optional<BlockHash> hash_of(int32_t block) const;

  // Takes n blocks from the front of the free queue with reference count 1,
  // evicting any prefix-cache entry they held. Throws when fewer than n are free.
  std::vector<int32_t> allocate(int32_t n);

  // Adds a reference to each block (a prefix hit); a free one leaves the queue.
  void touch(std::span<const int32_t> blocks);

  // Drops one reference from each block, in the order given; a block that
  // reaches 0 goes to the back of the free queue.
  void free(std::span<const int32_t> blocks);

  // The cached block whose hash, parent hash, tokens and extra keys all equal
  // these, if any. Does not add a reference.
  std::optional<int32_t> lookup(const BlockHash& hash, const BlockHash& parent,
                                std::span<const int32_t> tokens,
                                std::span<const BlockHash> extra_keys) const;

  // Registers a full, computed, referenced block under `hash`. A hash that
  // another block already holds is left to that block (this one stays uncached).
  void cache(int32_t block, const BlockHash& hash, const BlockHash& parent,
             std::span<const int32_t> tokens, std::span<const BlockHash> extra_keys);

  // Drops every prefix-cache entry; false (nothing done) while any block is referenced.
  bool reset_prefix_cache();

 private:
  struct Block {
    int32_t ref_cnt = 0;
    int32_t prev = -1, next = -1;  // free-queue links; -1 = none
    bool in_queue = false;
    std::optional<BlockHash> hash;
  };
  struct CachedContent {
    int32_t block;
    BlockHash parent;
    std::vector<int32_t> tokens;
    std::vector<BlockHash> extra_keys;
  };

  void queue_push_back(int32_t b);
  void queue_remove(int32_t b);
  void evict(int32_t b);
  void check_id(int32_t b, const char* what) const;

  int block_size_;
  bool enable_caching_;
  std::vector<Block> blocks_;
  int32_t head_ = -1, tail_ = -1, num_free_ = 0;
  std::unordered_map<BlockHash, CachedContent, BlockHashHasher> cached_;
};

}  // namespace vtllm::engine
