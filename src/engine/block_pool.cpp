#include "engine/block_pool.h"

#include <algorithm>

#include "base/error.h"

namespace vtllm::engine {

BlockPool::BlockPool(int32_t num_blocks, int block_size, bool enable_caching)
    : block_size_(block_size), enable_caching_(enable_caching) {
  VT_CHECK(num_blocks >= 2, "block pool: num_blocks = ", num_blocks,
           ", expected at least 2 (block 0 is the null block)");
  VT_CHECK(block_size >= 1, "block pool: block_size = ", block_size, ", expected >= 1");
  blocks_.resize(num_blocks);
  blocks_[kNullBlock].ref_cnt = 1;  // pinned forever
  for (int32_t b = 1; b < num_blocks; ++b) queue_push_back(b);
}

double BlockPool::usage() const {
  const int32_t usable = num_blocks() - 1;
  return static_cast<double>(usable - num_free_) / usable;
}

void BlockPool::check_id(int32_t b, const char* what) const {
  if (b <= kNullBlock || b >= num_blocks())
    VT_THROW("block pool: ", what, " got block id ", b, ", expected [1, ", num_blocks(), ")");
}

int32_t BlockPool::ref_count(int32_t block) const {
  VT_CHECK(block >= 0 && block < num_blocks(), "block pool: no block ", block);
  return blocks_[block].ref_cnt;
}

std::optional<BlockHash> BlockPool::hash_of(int32_t block) const {
  VT_CHECK(block >= 0 && block < num_blocks(), "block pool: no block ", block);
  return blocks_[block].hash;
}

void BlockPool::queue_push_back(int32_t b) {
  Block& blk = blocks_[b];
  blk.prev = tail_;
  blk.next = -1;
  if (tail_ >= 0) blocks_[tail_].next = b;
  else head_ = b;
  tail_ = b;
  blk.in_queue = true;
  ++num_free_;
}

void BlockPool::queue_remove(int32_t b) {
  Block& blk = blocks_[b];
  if (blk.prev >= 0) blocks_[blk.prev].next = blk.next;
  else head_ = blk.next;
  if (blk.next >= 0) blocks_[blk.next].prev = blk.prev;
  else tail_ = blk.prev;
  blk.prev = blk.next = -1;
  blk.in_queue = false;
  --num_free_;
}

void BlockPool::evict(int32_t b) {
  Block& blk = blocks_[b];
  if (!blk.hash) return;
  auto it = cached_.find(*blk.hash);
  if (it != cached_.end() && it->second.block == b) cached_.erase(it);
  blk.hash.reset();
}

std::vector<int32_t> BlockPool::allocate(int32_t n) {
  VT_CHECK(n >= 0, "block pool: cannot allocate ", n, " blocks");
  if (n > num_free_)
    VT_THROW("block pool: asked for ", n, " blocks, only ", num_free_, " of ", num_blocks() - 1,
             " are free");
  std::vector<int32_t> out;
  out.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t b = head_;
    queue_remove(b);
    evict(b);
    blocks_[b].ref_cnt = 1;
    out.push_back(b);
  }
  return out;
}

void BlockPool::touch(std::span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    check_id(b, "touch");
    Block& blk = blocks_[b];
    if (blk.ref_cnt == 0) queue_remove(b);
    ++blk.ref_cnt;
  }
}

void BlockPool::free(std::span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    check_id(b, "free");
    Block& blk = blocks_[b];
    if (blk.ref_cnt <= 0) VT_THROW("block pool: block ", b, " freed with no reference held");
    if (--blk.ref_cnt == 0) queue_push_back(b);
  }
}

std::optional<int32_t> BlockPool::lookup(const BlockHash& hash, const BlockHash& parent,
                                         std::span<const int32_t> tokens,
                                         std::span<const BlockHash> extra_keys) const {
  if (!enable_caching_) return std::nullopt;
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  const CachedContent& c = it->second;
  // The stored content, not the hash, decides: a collision is a miss.
  if (!(c.parent == parent) || !std::ranges::equal(c.tokens, tokens) ||
      !std::ranges::equal(c.extra_keys, extra_keys))
    return std::nullopt;
  return c.block;
}

void BlockPool::cache(int32_t block, const BlockHash& hash, const BlockHash& parent,
                      std::span<const int32_t> tokens, std::span<const BlockHash> extra_keys) {
  if (!enable_caching_) return;
  check_id(block, "cache");
  Block& blk = blocks_[block];
  VT_CHECK(blk.ref_cnt > 0, "block pool: caching block ", block, " which nobody holds");
  VT_CHECK(static_cast<int>(tokens.size()) == block_size_, "block pool: caching block ", block,
           " with ", tokens.size(), " tokens, expected a full block of ", block_size_);
  if (blk.hash) return;  // already cached (a prefix hit being re-registered)
  if (cached_.contains(hash)) return;
  cached_.emplace(hash, CachedContent{block, parent, {tokens.begin(), tokens.end()},
                                      {extra_keys.begin(), extra_keys.end()}});
  blk.hash = hash;
}

bool BlockPool::reset_prefix_cache() {
  if (num_free_ != num_blocks() - 1) return false;
  for (Block& b : blocks_) b.hash.reset();
  cached_.clear();
  return true;
}

}  // namespace vtllm::engine
