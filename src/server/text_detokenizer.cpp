#include "server/text_detokenizer.h"

#include <algorithm>

#include "text/detokenizer.h"

namespace vtllm::server {

namespace {

class TextDetokenizer : public engine::IncrementalDetokenizer {
 public:
  TextDetokenizer(const text::Tokenizer& t, bool skip, std::span<const int32_t> context)
      : detok_(t, skip, context) {}
  std::string add(int32_t token) override { return detok_.push(token); }
  std::string finish() override { return detok_.finish(); }

 private:
  text::IncrementalDetokenizer detok_;
};

}  // namespace

std::unique_ptr<engine::IncrementalDetokenizer> TextDetokenizerFactory::create(
    std::span<const int32_t> prompt, bool skip_special_tokens) {
  // A few prompt ids start the decoding window so the first output token gets its
  // leading space right (as vLLM's detokenizer does with its prefix offset).
  const size_t k = std::min<size_t>(prompt.size(), 6);
  return std::make_unique<TextDetokenizer>(tokenizer_, skip_special_tokens,
                                           prompt.subspan(prompt.size() - k));
}

}  // namespace vtllm::server
