// The 128-bit content hash of a processed media item: the encoder cache's key and the prefix
// cache's extra key. Equal (kind, grid, pixel_values) give equal hashes on every platform;
// any change of a pixel value, the grid or the kind changes it (not cryptographic).
//
// Thread-safety: pure; callable from any thread concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "multimodal/parallel.h"
#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

// Hash of arbitrary bytes with a 64-bit seed: four interleaved multiply-rotate lanes over
// 8-byte words (several GB/s), folded with splitmix64's finaliser. Little-endian hosts.
std::array<uint64_t, 2> hash_bytes128(std::span<const uint8_t> bytes, uint64_t seed);

// Hash of v.kind, the grid (t, h, w), patch_dim and the bytes of v.pixel_values: each
// 1 MiB piece hashed on its own (split over `loop`; empty: this thread), then the
// pieces' hashes. The value does not depend on the loop.
std::array<uint64_t, 2> content_hash(const VisionInput& v, const ParallelFor& loop = {});

}  // namespace vtllm::multimodal
