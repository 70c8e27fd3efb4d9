#include "engine/state_snapshot_pool.h"

#include "base/error.h"

namespace vtllm::engine {

StateSnapshotPool::StateSnapshotPool(int32_t first_slot, int32_t num_snapshots)
    : first_slot_(first_slot), capacity_(num_snapshots) {
  VT_CHECK(num_snapshots >= 1, "state snapshots: num_snapshots = ", num_snapshots,
           ", expected >= 1");
}

std::optional<int32_t> StateSnapshotPool::lookup(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end() || it->second->pending) return std::nullopt;
  order_.splice(order_.end(), order_, it->second);
  return it->second->slot;
}

std::optional<int32_t> StateSnapshotPool::reserve(const BlockHash& hash) {
  if (index_.contains(hash)) return std::nullopt;
  int32_t slot;
  if (size() < capacity_) {
    slot = first_slot_ + size();
  } else {
    auto victim = order_.begin();
    while (victim != order_.end() && victim->pending) ++victim;
    if (victim == order_.end()) return std::nullopt;
    slot = victim->slot;
    index_.erase(victim->hash);
    order_.erase(victim);
  }
  order_.push_back(Entry{hash, slot, true});
  index_.emplace(hash, std::prev(order_.end()));
  return slot;
}

void StateSnapshotPool::begin_step() {
  for (Entry& e : order_) e.pending = false;
}

void StateSnapshotPool::clear() {
  order_.clear();
  index_.clear();
}

}  // namespace vtllm::engine
