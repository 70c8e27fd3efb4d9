// StateSlotManager: the GDN state cache of a hybrid model. Each running request
// holds one slot; a slot indexes the conv state and the recurrent state of
// every GDN layer (the tensors themselves live with the model runner).
//
// A request that (re)starts from token 0 must have its slot's state zeroed by
// the runner before use: StepPlan says so through its context length 0.
// Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace vtllm::engine {

class StateSlotManager {
 public:
  explicit StateSlotManager(int32_t num_slots);

  int32_t num_slots() const { return static_cast<int32_t>(in_use_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  std::optional<int32_t> slot_of(const std::string& request_id) const;

  // Gives the request a slot if it has none; false when none is free.
  bool ensure(const std::string& request_id);
  // Returns the request's slot to the pool (no-op without one).
  void free(const std::string& request_id);

 private:
  std::vector<int32_t> free_;  // a stack: the most recently freed slot is reused first
  std::vector<bool> in_use_;
  std::unordered_map<std::string, int32_t> owner_;
};

}  // namespace vtllm::engine
