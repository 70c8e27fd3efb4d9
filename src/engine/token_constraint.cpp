#include "engine/token_constraint.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace vtllm::engine {

namespace {

// Free until `start_` is sampled, then `inner_`.
class StartAfterToken : public TokenConstraint {
 public:
  StartAfterToken(std::shared_ptr<TokenConstraint> inner, int32_t start)
      : inner_(std::move(inner)), start_(start) {}

  void fill_bitmask(std::span<uint32_t> words) override {
    if (open_) {
      inner_->fill_bitmask(words);
    } else {
      std::fill(words.begin(), words.end(), ~0u);
    }
  }
  bool accept(int32_t token) override {
    if (open_) return inner_->accept(token);
    open_ = token == start_;
    return true;
  }
  bool terminated() const override { return open_ && inner_->terminated(); }
  std::vector<int32_t> forced_tokens(size_t max) const override {
    return open_ ? inner_->forced_tokens(max) : std::vector<int32_t>{};
  }

 private:
  std::shared_ptr<TokenConstraint> inner_;
  int32_t start_;
  bool open_ = false;
};

}  // namespace

ConstraintFactory start_after_token(ConstraintFactory inner, int32_t start_token) {
  VT_CHECK(inner != nullptr, "start_after_token: no inner constraint factory");
  return [inner = std::move(inner),
          start_token](std::span<const int32_t> prompt) -> std::shared_ptr<TokenConstraint> {
    std::shared_ptr<TokenConstraint> c = inner(prompt);
    VT_CHECK(c != nullptr, "start_after_token: the inner factory gave null");
    return std::make_shared<StartAfterToken>(std::move(c), start_token);
  };
}

}  // namespace vtllm::engine
