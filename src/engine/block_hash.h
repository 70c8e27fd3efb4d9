// Chained hashes of full KV blocks, the keys of the prefix cache.
//
// The hash of block i is H(hash of block i-1 (or kRootBlockHash), its token ids,
// the extra keys of every ExtraKeySpan overlapping it, the cache salt for
// block 0). Equal hashes therefore stand for equal prefixes, not just equal blocks.
//
// The hash is a 128-bit non-cryptographic mix, chosen for speed. It does not
// carry correctness alone: the BlockPool stores the parent hash, token ids and
// extra keys of every cached block and compares them on lookup, so a hash
// collision costs a cache miss, never wrong content (see docs/ENGINE.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace vtllm::engine {

struct BlockHash {
  uint64_t hi = 0;
  uint64_t lo = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi >> 7)); }
};

// The parent of block 0.
inline constexpr BlockHash kRootBlockHash{0x76746c6c6d2d726fULL, 0x6f742d626c6f636bULL};

// Every block overlapping [start, start + length) of the token sequence mixes
// `key` into its hash (image content hashes, LoRA names, ...).
struct ExtraKeySpan {
  int64_t start = 0;
  int64_t length = 0;
  BlockHash key;
};

// 128-bit hash of arbitrary bytes (for extra keys such as a cache salt string).
BlockHash hash_bytes(std::string_view bytes);

BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens,
                     std::span<const BlockHash> extra_keys);

// The extra keys of the block covering tokens [begin, end), in span order.
std::vector<BlockHash> extra_keys_for_block(int64_t begin, int64_t end,
                                            std::span<const ExtraKeySpan> spans,
                                            const std::optional<BlockHash>& cache_salt);

// Appends to `hashes` the hash of every full block of `tokens` not yet hashed
// (hashes.size() blocks are taken as already done).
void extend_block_hashes(std::span<const int32_t> tokens, int block_size,
                         std::span<const ExtraKeySpan> spans,
                         const std::optional<BlockHash>& cache_salt, std::vector<BlockHash>& hashes);

}  // namespace vtllm::engine
