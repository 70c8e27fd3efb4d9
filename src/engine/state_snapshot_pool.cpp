#include "engine/state_snapshot_pool.h"

#include "base/error.h"

namespace vtllm::engine {

StateSnapshotPool::StateSnapshotPool(int32_t first_slot, int32_t num_snapshots)
    : first_slot_(first_slot), capacity_(num_snapshots) {
  VT_CHECK(num_snapshots >= 1, "state snapshots: num_snapshots = ", num_snapshots,
           ", expected >= 1");
  clear();
}

std::optional<int32_t> StateSnapshotPool::lookup(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end() || it->second->pending) return std::nullopt;
  order_.splice(order_.end(), order_, it->second);
  return it->second->slot;
}

void StateSnapshotPool::erase(std::list<Entry>::iterator it) {
  free_slots_.push_back(it->slot);
  index_.erase(it->hash);
  order_.erase(it);
}

std::optional<int32_t> StateSnapshotPool::reserve(const BlockHash& hash, int32_t block,
                                                  const StaleFn& stale) {
  if (index_.contains(hash)) return std::nullopt;
  if (free_slots_.empty()) {
    auto victim = order_.end();
    if (stale) {
      for (auto it = order_.begin(); it != order_.end(); ++it)
        if (!it->pending && stale(it->hash, it->block)) {
          victim = it;
          break;
        }
    }
    if (victim == order_.end()) {
      victim = order_.begin();
      while (victim != order_.end() && victim->pending) ++victim;
    }
    if (victim == order_.end()) return std::nullopt;
    erase(victim);
  }
  const int32_t slot = free_slots_.back();
  free_slots_.pop_back();
  order_.push_back(Entry{hash, slot, block, true});
  index_.emplace(hash, std::prev(order_.end()));
  return slot;
}

void StateSnapshotPool::release(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it != index_.end()) erase(it->second);
}

void StateSnapshotPool::begin_step() {
  for (Entry& e : order_) e.pending = false;
}

void StateSnapshotPool::clear() {
  order_.clear();
  index_.clear();
  free_slots_.clear();
  // Highest id at the back: slots are handed out in increasing order.
  for (int32_t s = first_slot_ + capacity_ - 1; s >= first_slot_; --s) free_slots_.push_back(s);
}

}  // namespace vtllm::engine
