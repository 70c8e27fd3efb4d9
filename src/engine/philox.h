// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a counter-based generator. The output is a pure function of
// (key, counter), so a request that keys it with its seed and its own step
// draws the same numbers whatever else runs in the batch.
#pragma once

#include <array>
#include <cstdint>

namespace vtllm::engine {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// A uniform double in [0, 1) from 53 bits of philox4x32_10(counter, key).
double philox_uniform(PhiloxCounter counter, PhiloxKey key);

inline PhiloxKey philox_key(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

}  // namespace vtllm::engine
