#include "text/detokenizer.h"

#include <algorithm>

#include "text/utf8.h"

namespace vtllm::text {

namespace {

bool ends_with_replacement(const std::string& s) {
  return s.size() >= kReplacementChar.size() &&
         s.compare(s.size() - kReplacementChar.size(), kReplacementChar.size(),
                   kReplacementChar) == 0;
}

// The last kContextIds of `context`.
std::span<const TokenId> window_start(std::span<const TokenId> context) {
  return context.last(std::min(context.size(), IncrementalDetokenizer::kContextIds));
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                               std::span<const TokenId> context)
    : tok_(&tokenizer),
      skip_special_(skip_special_tokens),
      ids_(window_start(context).begin(), window_start(context).end()) {
  prefix_ = 0;
  read_ = ids_.size();
}

std::string IncrementalDetokenizer::push(TokenId id) {
  if (skip_special_ && tok_->is_special(id)) return {};
  ids_.push_back(id);
  if (tok_->is_pending_byte(id)) return {};
  const std::span<const TokenId> all(ids_);
  const std::string before = tok_->decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string after = tok_->decode(all.subspan(prefix_), skip_special_);
  if (after.size() <= before.size() || ends_with_replacement(after) ||
      after.compare(0, before.size(), before) != 0)
    return {};
  prefix_ = read_;
  read_ = ids_.size();
  return after.substr(before.size());
}

std::string IncrementalDetokenizer::finish() {
  const std::span<const TokenId> all(ids_);
  const std::string before = tok_->decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string after = tok_->decode(all.subspan(prefix_), skip_special_);
  prefix_ = read_ = ids_.size();
  return after.size() > before.size() ? after.substr(before.size()) : std::string();
}

}  // namespace vtllm::text
