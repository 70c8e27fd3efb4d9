// CompiledGrammar and Matcher over the Automaton.
#include "structured/matcher.h"


#include "base/error.h"
#include "structured/automaton.h"

namespace vtllm::structured {

CompiledGrammar::CompiledGrammar(const Grammar& grammar, const TokenVocab& vocab)
    : grammar_(grammar), vocab_(vocab), automaton_(std::make_unique<Automaton>(grammar_, vocab)) {}

CompiledGrammar::~CompiledGrammar() = default;

std::shared_ptr<const CompiledGrammar> CompiledGrammar::compile(const Grammar& grammar,
                                                                const TokenVocab& vocab) {
  return std::shared_ptr<const CompiledGrammar>(new CompiledGrammar(grammar, vocab));
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), state_(grammar_->automaton().initial_state()) {}

bool Matcher::accept_token(TokenId id) {
  const TokenVocab& vocab = grammar_->vocab();
  if (terminated_ || id < 0 || static_cast<size_t>(id) >= vocab.size()) return false;
  if (vocab.is_stop(id)) {
    if (!can_terminate()) return false;
    history_.push_back(state_);
    terminated_ = true;
    return true;
  }
  const std::string_view bytes = vocab.bytes(id);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

bool Matcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return false;
  const int32_t next = grammar_->automaton().step_bytes(state_, bytes);
  if (next == Automaton::kDead) return false;
  history_.push_back(state_);
  state_ = next;
  return true;
}

void Matcher::fill_next_token_bitmask(std::span<uint32_t> bitmask) const {
  grammar_->automaton().fill_mask(terminated_ ? Automaton::kDead : state_, bitmask);
}

bool Matcher::can_terminate() const {
  return !terminated_ && grammar_->automaton().accepting(state_);
}

std::vector<TokenId> Matcher::forced_tokens(size_t max_tokens) const {
  const TokenVocab& vocab = grammar_->vocab();
  Automaton& a = grammar_->automaton();
  std::vector<TokenId> out;
  int32_t state = terminated_ ? Automaton::kDead : state_;
  while (out.size() < max_tokens && state != Automaton::kDead) {
    const int32_t id = a.only_token(state);  // cached per state after the first ask
    if (id < 0) break;
    out.push_back(id);
    state = vocab.is_stop(id) ? Automaton::kDead : a.step_bytes(state, vocab.bytes(id));
  }
  return out;
}

void Matcher::rollback(size_t k) {
  VT_CHECK(k <= history_.size(), "matcher: rollback of ", k, " steps, only ", history_.size(),
           " taken");
  if (k == 0) return;
  state_ = history_[history_.size() - k];
  history_.resize(history_.size() - k);
  terminated_ = false;
}

void Matcher::reset() {
  state_ = grammar_->automaton().initial_state();
  history_.clear();
  terminated_ = false;
}

}  // namespace vtllm::structured
