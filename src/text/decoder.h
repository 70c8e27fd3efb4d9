// Decoders of HF tokenizer.json ("decoder" field): they turn token strings
// back into text. Supported types: ByteLevel, ByteFallback, Fuse, Replace,
// Strip, Sequence. Any other type is a load error naming it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/json.h"

namespace vtllm::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: rewrites the list of token strings (it may merge them).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const Json& j, const JsonPath& at, int depth = 0);

}  // namespace vtllm::text
