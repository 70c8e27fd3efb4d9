// The pushdown automaton behind CompiledGrammar (internal to structured/).
//
// A grammar is flattened into one array of positions (each alternative's
// elements followed by an end marker). A stack is a hash-consed linked list
// of positions: the top is where matching continues, the rest are return
// positions. A call to a rule whose return position is an end marker does not
// push (tail calls), so repetition runs in constant stack depth. A state is
// the sorted set of stacks whose top is a byte element, plus whether the
// input so far is complete; states are interned, so the automaton is a DFA
// built lazily over them: step(state, byte) is a table lookup once computed.
// Masks are cached per state.
//
// A first visit to a state would walk the whole vocabulary trie (~333k nodes
// for Qwen3). Most of that walk does not depend on the stacks' deep parts, so
// masks are split as XGrammar does: the state is truncated to its top
// kContextDepth stack nodes over a CONTEXT sentinel, and the truncated state's
// walk (cached, shared by every state with the same top) sorts tokens into
// allowed whatever the context, rejected, or uncertain (the token pops into
// the context). Only the uncertain tokens are then checked against the full
// state. A walk that reaches a trie node in a state that lives through every string of a
// text class (TokenVocab::text_step: printable ASCII but a few bytes, and UTF-8 past it),
// with only strings of that class in the node's subtree, takes the whole subtree as
// allowed without stepping through it: text inside a JSON string or an XML tool call's
// value, which is most of the vocabulary. Likewise for a state that every byte of a subtree
// (TokenVocab::subtree_bytes) steps back to itself: a class no text class names (an email's
// local part, a pattern's `[a-z0-9_-]+`). A truncated state inside a bounded repetition
// (one state per count) copies the local mask of its unbounded twin, exact for every token no
// longer than the least allowance, and walks only the deeper trie subtrees. A root state that
// a byte or two of such a class lead to its loop takes every token of the class by one mask
// (TokenVocab::tokens_within) and walks only the subtrees that hold a byte leaving the loop
// alive ('.' or '@' after an email's local part).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "structured/grammar.h"
#include "structured/token_vocab.h"

namespace vtllm::structured {

class Automaton {
 public:
  static constexpr int32_t kDead = -1;

  // Throws vtllm::Error on a left-recursive grammar, a missing root or an
  // element index out of range. `vocab` must outlive the automaton.
  Automaton(const Grammar& grammar, const TokenVocab& vocab);

  // Every method is thread-safe (one mutex).
  int32_t initial_state() const { return initial_; }
  // The state after `byte`, or kDead.
  int32_t step(int32_t state, uint8_t byte);
  // The state after all of `bytes`, or kDead.
  int32_t step_bytes(int32_t state, std::string_view bytes);
  // True when the input that led to `state` is a string of the language.
  bool accepting(int32_t state);
  // Writes state's token mask (stop tokens set iff accepting) into
  // bitmask[0, vocab.mask_words()).
  void fill_mask(int32_t state, std::span<uint32_t> bitmask);
  // The one token state's mask allows, or -1 when it allows none or several (kDead:
  // -1); counted once per cached mask.
  int32_t only_token(int32_t state);

  // Statistics, for benchmarks: states, cached full masks, cached
  // context-independent masks (of truncated states).
  size_t num_states();
  size_t num_cached_masks();
  size_t num_local_masks();

 private:
  struct Elem {
    enum Kind : uint8_t { kBytes, kRule, kEnd, kContext } kind;
    int32_t arg;  // byte set / rule index
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted stack-node ids, each top a kBytes position
    bool accepting = false;
    bool context = false;  // some path popped into the CONTEXT sentinel here
    // Per (text class, position in a run), bit class * kTextPositions + position: checked
    // so far, and lived through (every string of the class read from that position).
    uint32_t text_known = 0, text_held = 0;
    int32_t canonical = -2;  // the state with the same mask (canonical()); -2: unknown
    bool bounded = false;    // some stack inside a bounded repetition
    int32_t free = -2;       // unbound(this, 0) (loose()); -2: unknown
    int32_t least = 0;       // and its least allowance
    // Byte buckets (TokenVocab::ByteBuckets) found so far to step back to this state, and
    // found not to (some byte of the bucket steps elsewhere).
    TokenVocab::ByteBuckets loops{{0, 0}}, no_loops{{0, 0}};
    uint64_t hash = 0;  // of stacks and flags (intern())
  };
  // A position of a bounded repetition's rule opt_k (Grammar::append_repeat's chain for
  // item{0,n}): the same position in item's unbounded repetition, and how many items may
  // still start from it.
  struct Bound {
    int32_t star_pos;  // -1: not in a bounded repetition
    int32_t allowance;
  };
  // The context-independent part of a truncated state's mask.
  struct LocalMask {
    std::vector<uint32_t> allowed;   // allowed whatever lies under the truncation
    std::vector<TokenId> uncertain;  // in trie order: depends on the context
  };
  // Open addressing over ids (-1: empty), for the two lookups every new transition makes
  // many of: a stack node by (position, parent) and a state by its stacks.
  // A slot keeps the high half of its id's hash: a probe past another id mostly fails on it
  // without reading that id's node or state (a cache miss each).
  struct IdSlots {
    struct Slot {
      int32_t id;
      uint32_t tag;
    };
    explicit IdSlots(size_t size) : slots(size, Slot{-1, 0}) {}  // size: a power of two
    std::vector<Slot> slots;
    size_t count = 0;
    // The slot of the id with hash `h` for which `same(id)`, or the empty slot to fill (its
    // tag set).
    template <class Same>
    Slot& find(uint64_t h, Same same) {
      const size_t mask = slots.size() - 1;
      const auto tag = static_cast<uint32_t>(h >> 32);
      for (size_t i = static_cast<size_t>(h) & mask;; i = (i + 1) & mask) {
        Slot& slot = slots[i];
        if (slot.id < 0) {
          slot.tag = tag;
          return slot;
        }
        if (slot.tag == tag && same(slot.id)) return slot;
      }
    }
    // Before filling an empty slot: doubles the table past half full, reinserting by `hash`.
    template <class Hash>
    bool grow(Hash hash) {
      if (++count * 2 <= slots.size()) return false;
      std::vector<Slot> old(slots.size() * 2, Slot{-1, 0});
      old.swap(slots);
      for (const Slot& slot : old) {
        if (slot.id >= 0) find(hash(slot.id), [](int32_t) { return false; }).id = slot.id;
      }
      return true;
    }
  };

  int32_t node(int32_t pos, int32_t parent);
  void expand(int32_t stack, std::vector<int32_t>& out, bool& accepting, bool& context);
  int32_t intern(std::vector<int32_t>& stacks, bool accepting, bool context);
  // The state with every stack entry of a bounded repetition that no token can exhaust
  // (allowance > the longest token) replaced by the unbounded one: the same mask, shared by
  // all counts of a long string, and a state that loops on text.
  int32_t canonical(int32_t state);
  int32_t new_canonical(int32_t state);  // canonical() not yet recorded
  // The state with every bounded-repetition entry whose allowance exceeds `keep` replaced by
  // the unbounded one, and the least allowance replaced (INT32_MAX: none). Any string of at
  // most that many bytes leads both states to the same verdicts.
  std::pair<int32_t, int32_t> unbound(int32_t state, int32_t keep);
  // A state that gives every string of at most `len` bytes the verdict `state` gives it,
  // with every bounded repetition unbounded when none can be exhausted by then: a count
  // steps to the next count, its unbounded twin back to itself (loops_on()).
  int32_t loose(int32_t state, size_t len);
  bool live(int32_t state) const;
  // The state cut to its top `depth` stack nodes over the CONTEXT sentinel.
  int32_t truncate(int32_t state, int depth);
  const LocalMask& local_mask(int32_t truncated);
  // Adds to `lm` the verdicts of a walk from `root` over the trie's tokens longer than
  // `min_len` bytes (all of them when 0; some shorter ones may be added too, rightly).
  void walk(int32_t root, LocalMask& lm, size_t min_len);
  // Whether `state` lives through every string of one of the text classes in `classes`
  // read from position `at` in a run (TokenVocab::text_step), each checked once per state.
  bool holds_text(int32_t state, uint8_t classes, int at = 0);
  bool new_holds_text(int32_t state, uint8_t classes, int at);  // not yet recorded
  // The same for class bit index `cls`: the (position, state) pairs reachable from
  // (at, state) over the class's bytes are all live. Each pair's answer is kept, so the
  // states of a stop word's prefixes, which reach one another, are explored once.
  bool holds_class(int32_t state, int cls, int at);
  // The n < TokenVocab::kShortMasks such that `state` lives through every string of class
  // `cls` (bit index) of at most n characters (one cut short counts), read from a character
  // boundary, and dies, without popping into the context, on every longer one; -1 if none.
  // A short maxLength string: each count is a state of its own, counting down.
  int text_budget(int32_t state, int cls);
  bool budget_from(int at, int32_t state, int cls, size_t chars, int& lo, int& hi);
  // Whether every byte of `bytes` (`first` among them) steps `state` back to itself: from a live
  // state a walk then takes whole a trie subtree made of them (an email's local part, a run of
  // digits or whitespace: classes that TokenVocab's text classes do not name). Steps `first`, then
  // the rest up to the first byte that does not loop, each answer kept per state.
  bool loops_on(int32_t state, uint8_t first, const TokenVocab::ByteBuckets& bytes);
  bool new_loops_on(int32_t state, uint8_t first, TokenVocab::ByteBuckets unknown);
  // A root state that a few bytes of one set B lead, each step alike, to a state that every
  // byte of B steps back to (an email's local part or domain label, a run of digits): every
  // token made of B's bytes only is allowed (loop_tokens()), and below a path of B's bytes a
  // walk takes only the subtrees that hold a byte some state of the chain takes outside B.
  static constexpr int kMaxLoopChain = 4;
  struct LoopRoot {
    ByteSet bytes;                          // B
    int32_t chain[kMaxLoopChain + 1];       // the state after k bytes of B, the last one looping
    int last = 0;                           // index of the looping one
    TokenVocab::ByteBuckets exits{{0, 0}};  // buckets of the bytes outside B that some step takes
    // loop_root() failed on a state of the chain that pops into the context (`bytes`: the
    // root's bytes that step alike, B but for that).
    bool context = false;
  };
  bool loop_root(int32_t root, LoopRoot& loop);
  // The tokens whose every byte is in `bytes` (a bitmask, and how many), kept per set.
  struct LoopTokens {
    ByteSet bytes;
    std::vector<uint32_t> mask;
    size_t count;
  };
  const LoopTokens& loop_tokens(const ByteSet& bytes);
  // The same by a walk of the trie (TokenVocab::tokens_within() declined), into `mask`.
  void walk_within(const ByteSet& bytes, std::vector<uint32_t>& mask) const;
  // Adds to `exits` the bytes outside class `cls` (bit index) that some state met on the
  // class's strings from `state` (each (position in a run, state) pair) takes; false when one
  // of them pops into the context, too many are met, or no ASCII byte dies from `state` (an
  // XML value takes every byte: then only class subtrees, decided anyway, hold no exit). For
  // a state that lives through the class: a token leaving it on any other byte dies there.
  bool class_exits(int32_t state, int cls, ByteSet& exits);
  // The same over the pairs the last successful text_budget() met (no pair there pops into the
  // context, or it would have failed).
  bool budget_exits(int cls, ByteSet& exits) const;
  // The bytes some stack of `state` takes (a superset of those that do not step to kDead).
  ByteSet taken(int32_t state) const;
  int32_t step_locked(int32_t state, uint8_t byte);
  int32_t new_step(int32_t state, uint8_t byte);  // step_locked() not yet in trans_
  // The bytes whose step from `state` is the same as byte's.
  ByteSet same_step(int32_t state, uint8_t byte) const;
  void compute_mask(int32_t state, std::vector<uint32_t>& mask);
  // The canonical state's full mask, computed and cached on first use (mu_ held).
  const std::vector<uint32_t>& cached_mask(int32_t state);

  const TokenVocab& vocab_;
  std::vector<Elem> elems_;
  std::vector<std::vector<int32_t>> rule_starts_;  // per rule: its alternatives' first positions
  std::vector<ByteSet> byte_sets_;
  std::vector<Bound> bounds_;  // per position

  std::mutex mu_;
  std::vector<std::pair<int32_t, int32_t>> nodes_;  // (pos, parent)
  std::vector<uint8_t> node_bounded_;  // per node: a bounded repetition's position on its chain
  // Sized for a first document's nodes and states: a doubling rehashes every id (reading
  // its node or state), inside the mask call that made the one too many.
  IdSlots node_ids_{size_t{1} << 14};
  std::vector<uint32_t> visited_;  // per node: the expand() generation that saw it
  uint32_t generation_ = 0;
  std::vector<State> states_;
  IdSlots state_ids_{size_t{1} << 12};
  std::vector<int32_t> trans_;  // states_ x 256; -2 = not computed yet
  std::unordered_map<int32_t, std::vector<uint32_t>> masks_;
  std::unordered_map<int32_t, int32_t> only_tokens_;    // only_token(), by canonical state
  std::unordered_map<int32_t, LocalMask> local_masks_;  // by truncated state
  std::vector<LoopTokens> loop_masks_;                  // loop_tokens()
  int32_t context_node_ = -1;
  size_t mask_bytes_ = 0;
  std::vector<int32_t> work_, step_out_;  // scratch of expand() / step_locked()
  // Scratch of holds_class(): the pairs met (position, state, Tarjan low link, on the
  // component stack), the component stack and the depth-first path.
  struct TextPair {
    int at;
    int32_t state;
    int low;
    bool on_stack;
  };
  struct TextFrame {
    int pair;
    int next_at;   // the position whose bytes are being stepped
    ByteSet left;  // those bytes not stepped yet
  };
  std::vector<TextPair> text_pairs_;
  std::vector<int> text_stack_;
  std::vector<TextFrame> text_frames_;
  // Scratch of text_budget(): per (position, state) pair met, the fewest characters some
  // string of the class from it dies within (less one), the most any lives through.
  struct BudgetPair {
    int at;
    int32_t state;
    int lo, hi;
    bool done;
  };
  std::vector<BudgetPair> budget_pairs_;
  // Per state * kTextPositions + position: (the text_budget() call, its pair) that met it.
  std::vector<std::pair<uint32_t, uint32_t>> budget_seen_;
  uint32_t budget_generation_ = 0;
  std::vector<size_t> root_excluded_;  // scratch of local_mask()
  std::vector<int32_t> walk_states_;   // per trie depth: the state there
  std::vector<uint8_t> walk_context_;  // per trie depth: CONTEXT reached on the way
  std::vector<uint8_t> walk_on_loop_;  // per trie depth: the path so far is of LoopRoot::bytes
  // Per trie depth: the position in a run of the root's class after the path so far, -1 when
  // it left the class (or no class_exits() apply).
  std::vector<int8_t> walk_class_at_;
  std::vector<std::pair<int, int32_t>> exit_pairs_;  // scratch of class_exits()
  LoopRoot loop_root_;                               // scratch of walk()
  int32_t initial_ = kDead;
};

}  // namespace vtllm::structured
