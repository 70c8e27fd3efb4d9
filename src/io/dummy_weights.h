// `--load-format dummy`: deterministic random weights of a config's shapes, so real
// model dimensions can be benchmarked without weight files (as vLLM's flag).
//
// Element i of parameter `name` is dummy_value(seed, name, i): uniform in
// [-1e-3, 1e-3) like vLLM's dummy loader, from a counter-based hash, so the values do
// not depend on the device, the thread count or the order parameters are made in.
// Float dtypes only (f32, bf16, f16; narrowed with round-to-nearest-even). Values
// are generated on the CPU and copied to the device one tensor at a time.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "io/weight_loader.h"

namespace vtllm::io {

inline constexpr float kDummyWeightRange = 1e-3f;

float dummy_value(uint64_t seed, std::string_view name, uint64_t index);

// One tensor per spec on options.device, seeded by options.dummy_seed.
Weights dummy_weights(vt::Stream& stream, const std::vector<ParamSpec>& specs, const LoadOptions& options);

}  // namespace vtllm::io
