// 64-bit integer mixing shared by every layer that needs a fixed, portable
// pseudo-random function (dummy weights, prefix-cache block hashes, bench
// workloads, test fakes). The values are part of what those produce: dummy
// weights and block hashes depend on them bit for bit, so these never change.
#pragma once

#include <cstdint>
#include <string_view>

namespace vtllm {

// splitmix64's increment (2^64 / golden ratio, odd).
inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's finalizer (Stafford's variant 13): a bijection with full
// avalanche on one 64-bit word.
constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// splitmix64 (Steele, Lea, Flood 2014) as a counter-based function: the output
// for state `x`, i.e. mix64(x + gamma). Identical on every platform, unlike the
// standard library's distributions.
constexpr uint64_t splitmix64(uint64_t x) { return mix64(x + kSplitMix64Gamma); }

// 64-bit FNV-1a of `bytes`.
constexpr uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) h = (h ^ uint8_t(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace vtllm
