#include "engine/state_slot_manager.h"

#include "base/error.h"

namespace vtllm::engine {

StateSlotManager::StateSlotManager(int32_t num_slots) : in_use_(num_slots, false) {
  VT_CHECK(num_slots >= 1, "state slots: num_slots = ", num_slots, ", expected >= 1");
  for (int32_t s = num_slots - 1; s >= 0; --s) free_.push_back(s);
}

std::optional<int32_t> StateSlotManager::slot_of(const std::string& request_id) const {
  auto it = owner_.find(request_id);
  if (it == owner_.end()) return std::nullopt;
  return it->second;
}

bool StateSlotManager::ensure(const std::string& request_id) {
  if (owner_.contains(request_id)) return true;
  if (free_.empty()) return false;
  const int32_t s = free_.back();
  free_.pop_back();
  in_use_[s] = true;
  owner_.emplace(request_id, s);
  return true;
}

void StateSlotManager::free(const std::string& request_id) {
  auto it = owner_.find(request_id);
  if (it == owner_.end()) return;
  VT_CHECK(in_use_[it->second], "state slots: slot ", it->second, " of request '", request_id,
           "' is not in use");
  in_use_[it->second] = false;
  free_.push_back(it->second);
  owner_.erase(it);
}

}  // namespace vtllm::engine
