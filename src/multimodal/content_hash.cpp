#include "multimodal/content_hash.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/hash.h"

namespace vtllm::multimodal {
namespace {

constexpr uint64_t kMulA = 0x9fb21c651e98df25ULL;  // odd multipliers with good bit spread
constexpr uint64_t kMulB = 0xc2b2ae3d27d4eb4fULL;

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (x86-64, aarch64): the project's targets
}

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t lane(uint64_t h, uint64_t w) { return rotl((h ^ w) * kMulA, 29) * kMulB; }

}  // namespace

std::array<uint64_t, 2> hash_bytes128(std::span<const uint8_t> bytes, uint64_t seed) {
  uint64_t h[4] = {splitmix64(seed), splitmix64(seed + 1), splitmix64(seed + 2),
                   splitmix64(seed + 3)};
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 32; n -= 32, p += 32) {
    h[0] = lane(h[0], load64(p));
    h[1] = lane(h[1], load64(p + 8));
    h[2] = lane(h[2], load64(p + 16));
    h[3] = lane(h[3], load64(p + 24));
  }
  uint8_t tail[32] = {};
  std::memcpy(tail, p, n);
  for (int i = 0; i < 4; ++i) h[i] = lane(h[i], load64(tail + 8 * i) ^ (uint64_t(n) << 56));
  const uint64_t len = bytes.size();
  const uint64_t a = mix64(h[0] ^ rotl(h[1], 17) ^ len);
  const uint64_t b = mix64(h[2] ^ rotl(h[3], 41) ^ (len * kSplitMix64Gamma));
  return {mix64(a ^ rotl(b, 32)), mix64(b + a * kMulB)};
}

std::array<uint64_t, 2> content_hash(const VisionInput& v, const ParallelFor& loop) {
  const uint64_t header[5] = {uint64_t(v.kind == MediaKind::kVideo ? 2 : 1), uint64_t(v.grid_t),
                              uint64_t(v.grid_h), uint64_t(v.grid_w), uint64_t(v.patch_dim)};
  uint64_t seed = 0x6d6d2d68617368ULL;  // "mm-hash"
  for (uint64_t x : header) seed = splitmix64(seed ^ x);
  constexpr size_t kPiece = size_t{1} << 20;
  const auto* bytes = reinterpret_cast<const uint8_t*>(v.pixel_values.data());
  const size_t n = v.pixel_values.size() * sizeof(float);
  const size_t pieces = std::max<size_t>(1, (n + kPiece - 1) / kPiece);
  std::vector<std::array<uint64_t, 2>> h(pieces);
  parallel_for(loop, int64_t(pieces), [&](int64_t i) {
    const size_t at = size_t(i) * kPiece;
    h[size_t(i)] = hash_bytes128({bytes + at, std::min(kPiece, n - at)}, seed + uint64_t(i));
  });
  return hash_bytes128({reinterpret_cast<const uint8_t*>(h.data()), pieces * 16}, seed ^ n);
}

}  // namespace vtllm::multimodal
