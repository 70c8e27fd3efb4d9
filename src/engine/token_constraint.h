// TokenConstraint: what a request may generate next, as a vocabulary bitmask (the hook
// a grammar matcher plugs into; the engine knows no grammar).
//
// A request's SamplingParams::constraint makes one constraint per sample when the
// request is added; the Request owns it. Each step that samples the request, the
// engine's mask worker calls fill_bitmask() while the forward pass runs, and after the
// step the engine thread calls accept() with the sampled token, then terminated().
// Calls for one request never overlap (they may come from two threads, in turn), so an
// implementation needs no lock of its own. Tokens outside the mask are never sampled;
// a mask with no allowed token, an exception from fill_bitmask() or a false accept()
// ends the request with FinishReason::kError (vLLM's FINISHED_ERROR on a grammar
// rejection).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace vtllm::engine {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Writes the tokens allowed next into all of `words` (vt::mask_words(V) of them): bit
  // t % 32 of word t / 32 set = token t allowed; bits past V are ignored.
  virtual void fill_bitmask(std::span<uint32_t> words) = 0;
  // Advances over the sampled token; false when the token violates the constraint.
  virtual bool accept(int32_t token) = 0;
  // True once nothing more may follow: the engine ends the request with kStop after
  // the token that completed it (that token's text is part of the output).
  virtual bool terminated() const = 0;
  // The tokens that must come next, in order, each the only one this constraint allows
  // at its position (at most max; empty when the next position has a choice). Does not
  // advance. EngineConfig::jump_forward appends them without sampling.
  virtual std::vector<int32_t> forced_tokens(size_t max) const {
    (void)max;
    return {};
  }
};

// Makes a fresh constraint for one sample of a request from its prompt ids (n > 1 calls
// it n times, a request of several prompts once per prompt and sample), on the thread
// that adds the request; may throw (the request is refused).
using ConstraintFactory =
    std::function<std::shared_ptr<TokenConstraint>(std::span<const int32_t> prompt)>;

// `inner`'s constraints, each starting after the first sampled `start_token` (vLLM's
// structured-output gate at the end of the reasoning: StructuredOutputManager's
// should_fill_bitmask / should_advance with the reasoning parser's end token). Until that
// token every token is allowed and nothing terminates; the start token itself is free and
// not fed to the inner constraint, which sees only the tokens after it. Each inner
// constraint is made when its gated one is (the factory's errors surface there).
ConstraintFactory start_after_token(ConstraintFactory inner, int32_t start_token);

}  // namespace vtllm::engine
