#include "engine/block_hash.h"

#include <cstring>

#include "base/error.h"
#include "base/hash.h"

namespace vtllm::engine {
namespace {

constexpr uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Two 64-bit lanes with different multipliers, each fed every word and
// crossed after every word, so the 128 output bits are not two copies of one.
class Mixer {
 public:
  void add(uint64_t w) {
    a_ = rotl(a_ ^ (w * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL + b_;
    b_ = rotl(b_ ^ (w * 0x9e3779b97f4a7c15ULL), 33) * 0xc2b2ae3d27d4eb4fULL + a_;
    ++n_;
  }
  BlockHash finish() const {
    uint64_t a = mix64(a_ ^ n_), b = mix64(b_ ^ (n_ * 0xff51afd7ed558ccdULL));
    return BlockHash{mix64(a + b), mix64(b + rotl(a, 17))};
  }

 private:
  uint64_t a_ = 0x243f6a8885a308d3ULL, b_ = 0x13198a2e03707344ULL, n_ = 0;
};

}  // namespace

BlockHash hash_bytes(std::string_view bytes) {
  Mixer m;
  m.add(bytes.size());
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    m.add(w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  m.add(tail);
  return m.finish();
}

BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens,
                     std::span<const BlockHash> extra_keys) {
  Mixer m;
  m.add(parent.hi);
  m.add(parent.lo);
  m.add(tokens.size());
  for (int32_t t : tokens) m.add(static_cast<uint32_t>(t));
  m.add(extra_keys.size());  // keeps "tokens | keys" unambiguous
  for (const BlockHash& k : extra_keys) {
    m.add(k.hi);
    m.add(k.lo);
  }
  return m.finish();
}

std::vector<BlockHash> extra_keys_for_block(int64_t begin, int64_t end,
                                            std::span<const ExtraKeySpan> spans,
                                            const std::optional<BlockHash>& cache_salt) {
  std::vector<BlockHash> keys;
  if (begin == 0 && cache_salt) keys.push_back(*cache_salt);
  for (const ExtraKeySpan& s : spans)
    if (s.start < end && s.start + s.length > begin) keys.push_back(s.key);
  return keys;
}

void extend_block_hashes(std::span<const int32_t> tokens, int block_size,
                         std::span<const ExtraKeySpan> spans,
                         const std::optional<BlockHash>& cache_salt, std::vector<BlockHash>& hashes) {
  VT_CHECK(block_size > 0, "block hashes: block_size = ", block_size, ", expected > 0");
  const int64_t full = static_cast<int64_t>(tokens.size()) / block_size;
  for (int64_t b = static_cast<int64_t>(hashes.size()); b < full; ++b) {
    const int64_t begin = b * block_size, end = begin + block_size;
    const BlockHash& parent = b == 0 ? kRootBlockHash : hashes[b - 1];
    hashes.push_back(hash_block(parent, tokens.subspan(begin, block_size),
                                extra_keys_for_block(begin, end, spans, cache_salt)));
  }
}

}  // namespace vtllm::engine
