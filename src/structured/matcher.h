// CompiledGrammar (a grammar bound to a vocabulary, shared by requests) and
// Matcher (one request's position in it): the next-token bitmask, token
// acceptance, forced tokens and rollback.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "structured/grammar.h"
#include "structured/token_vocab.h"

namespace vtllm::structured {

class Automaton;

// A grammar compiled against a vocabulary. Thread-safe: any number of
// Matchers on any threads may use one CompiledGrammar at once. Its lazily
// built automaton states, transitions and masks are cached inside it (under
// a mutex) so a state reached by any request is paid for once.
//
// Held through shared_ptr because requests of unrelated lifetimes share one
// (the server caches compiled grammars by their source text).
class CompiledGrammar {
 public:
  // Throws vtllm::Error when the grammar has no root, references a rule out of
  // range, or is left-recursive (naming the rule). `vocab` must outlive the
  // result.
  static std::shared_ptr<const CompiledGrammar> compile(const Grammar& grammar,
                                                        const TokenVocab& vocab);
  ~CompiledGrammar();

  const TokenVocab& vocab() const { return vocab_; }
  const Grammar& grammar() const { return grammar_; }
  Automaton& automaton() const { return *automaton_; }

 private:
  CompiledGrammar(const Grammar& grammar, const TokenVocab& vocab);
  Grammar grammar_;
  const TokenVocab& vocab_;
  std::unique_ptr<Automaton> automaton_;
};

// One request's state. Not thread-safe (one request is driven by one thread
// at a time); cheap to create.
class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Advances by token `id` and returns true when the grammar allows it here;
  // returns false and changes nothing otherwise. A stop token is allowed
  // exactly when the grammar can end, and terminates the matcher.
  bool accept_token(TokenId id);
  // Advances by raw bytes (all or nothing, one rollback step); false if the
  // grammar does not allow them here.
  bool accept_bytes(std::string_view bytes);
  // Writes the allowed next tokens: bit (id % 32) of word (id / 32) set = id
  // allowed. `bitmask.size()` must be >= vocab().mask_words(); words past
  // that are left alone. After termination nothing is allowed.
  void fill_next_token_bitmask(std::span<uint32_t> bitmask) const;
  // True once a stop token has been accepted.
  bool is_terminated() const { return terminated_; }
  // True when the bytes so far are a complete string of the language.
  bool can_terminate() const;
  // The tokens the grammar fully determines from here: the longest sequence
  // (at most `max_tokens`) where each next mask allows exactly one token (a
  // stop token included). Does not advance.
  std::vector<TokenId> forced_tokens(size_t max_tokens = 64) const;
  // Undoes the last `k` accepted steps (accept_token / accept_bytes calls
  // that returned true). Throws vtllm::Error if k > num_steps().
  void rollback(size_t k);
  // Accepted steps since construction or reset().
  size_t num_steps() const { return history_.size(); }
  // Back to the start of the grammar.
  void reset();

  const CompiledGrammar& compiled() const { return *grammar_; }

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  int32_t state_;
  bool terminated_ = false;
  // Per accepted step: the state before it and whether it terminated.
  std::vector<int32_t> history_;
};

}  // namespace vtllm::structured
