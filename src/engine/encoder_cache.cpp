#include "engine/encoder_cache.h"

#include <algorithm>

#include "base/error.h"

namespace vtllm::engine {

EncoderCacheManager::EncoderCacheManager(int64_t capacity_bytes, int64_t bytes_per_token)
    : capacity_(capacity_bytes), bytes_per_token_(bytes_per_token) {
  VT_CHECK(capacity_bytes >= 0 && bytes_per_token >= 1, "encoder cache: capacity ", capacity_bytes,
           " bytes, ", bytes_per_token, " bytes per token; expected >= 0 and >= 1");
}

void EncoderCacheManager::begin_step() {
  freed_.clear();
  for (const auto& [id, h] : pending_release_) {
    auto it = held_.find(id);
    if (it == held_.end()) continue;
    auto pos = std::find(it->second.begin(), it->second.end(), h);
    if (pos == it->second.end()) continue;
    it->second.erase(pos);
    if (it->second.empty()) held_.erase(it);
    unref(h);
  }
  pending_release_.clear();
}

void EncoderCacheManager::unref(const BlockHash& h) {
  Entry& e = entries_.at(h);
  VT_CHECK(e.refs > 0, "encoder cache: releasing an unreferenced entry");
  if (--e.refs == 0) {
    --num_referenced_;
    e.lru = lru_.insert(lru_.end(), h);
  }
}

bool EncoderCacheManager::can_allocate(int64_t tokens, std::span<const BlockHash> pinned) const {
  if (num_referenced_ == 0 && pinned.empty()) return true;
  int64_t evictable = 0;
  for (const BlockHash& h : lru_)
    if (std::find(pinned.begin(), pinned.end(), h) == pinned.end())
      evictable += entries_.at(h).bytes;
  return bytes_ - evictable + tokens * bytes_per_token_ <= capacity_;
}

void EncoderCacheManager::allocate(const BlockHash& h, int64_t tokens) {
  VT_CHECK(!entries_.contains(h), "encoder cache: the entry is already cached");
  const int64_t need = tokens * bytes_per_token_;
  while (!lru_.empty() && bytes_ + need > capacity_) {
    const BlockHash victim = lru_.front();
    lru_.pop_front();
    bytes_ -= entries_.at(victim).bytes;
    entries_.erase(victim);
    freed_.push_back(victim);
  }
  // Unreferenced and not yet read: it sits in the LRU until acquired.
  Entry e;
  e.bytes = need;
  e.lru = lru_.insert(lru_.end(), h);
  entries_.emplace(h, e);
  bytes_ += need;
  ++num_encoded_;
}

void EncoderCacheManager::acquire(const std::string& id, const BlockHash& h, bool allocated_now) {
  auto it = entries_.find(h);
  VT_CHECK(it != entries_.end(), "encoder cache: request '", id, "' acquires an uncached entry");
  if (holds(id, h)) {  // a release planned earlier in this step no longer applies
    std::erase(pending_release_, std::pair<std::string, BlockHash>(id, h));
    return;
  }
  Entry& e = it->second;
  if (e.refs++ == 0) {
    lru_.erase(e.lru);
    ++num_referenced_;
  }
  held_[id].push_back(h);
  if (!allocated_now) ++num_hits_;
}

bool EncoderCacheManager::holds(const std::string& id, const BlockHash& h) const {
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  // A reference on its way out still counts until begin_step().
  return std::find(it->second.begin(), it->second.end(), h) != it->second.end();
}

void EncoderCacheManager::release(const std::string& id, const BlockHash& h) {
  if (!holds(id, h)) return;
  for (const auto& p : pending_release_)
    if (p.first == id && p.second == h) return;
  pending_release_.emplace_back(id, h);
}

void EncoderCacheManager::release_all(const std::string& id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  for (const BlockHash& h : it->second) release(id, h);
}

EncoderCacheStats EncoderCacheManager::stats() const {
  return {int64_t(entries_.size()), bytes_, num_encoded_, num_hits_};
}

}  // namespace vtllm::engine
