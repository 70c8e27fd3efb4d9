// The lazily built DFA over pushdown-stack sets (see automaton.h).
#include "structured/automaton.h"

#include <algorithm>
#include <array>
#include <bit>

#include "base/error.h"

namespace vtllm::structured {
namespace {

constexpr int32_t kUnknown = -2;

uint64_t mix(uint64_t h) {
  h ^= h >> 31;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

uint64_t node_hash(int32_t pos, int32_t parent) {
  return mix((static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) |
             static_cast<uint32_t>(parent));
}

uint64_t stacks_hash(const std::vector<int32_t>& stacks, bool accepting, bool context) {
  uint64_t h = 1469598103934665603ull ^ (stacks.size() * 4 + accepting + 2 * context);
  for (int32_t x : stacks) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
  return mix(h);
}
// Masks cached per grammar before the cache is dropped and refilled.
constexpr size_t kMaskCacheBytes = size_t{128} << 20;
// Stack nodes a truncated state keeps: enough to hold a JSON string's frames
// (character class, repetition, string rule) plus one, so that text inside a
// string is context-independent up to its closing quote.
constexpr int kContextDepth = 4;
// Kept instead when the top kContextDepth nodes' loop pops into the context and holds at
// least kManyLoopTokens tokens (compute_mask()).
constexpr int kDeepContextDepth = 2 * kContextDepth;
constexpr size_t kManyLoopTokens = 4096;
// The fewest bytes a loop_root() takes (its set B).
constexpr size_t kMinLoopBytes = 16;
// Depth-1 trie nodes of a text class a walk may walk after taking the class's tokens at
// once (TokenVocab::text_tokens): a stop word's first bytes.
constexpr size_t kMaxExcluded = 16;

// Per text class (bit index), position in a run and next position: the bytes that step
// from the one to the other (TokenVocab::text_step).
using TextRuns = std::array<
    std::array<std::array<ByteSet, TokenVocab::kTextPositions>, TokenVocab::kTextPositions>,
    TokenVocab::kTextClasses>;
const TextRuns& text_runs() {
  static const TextRuns runs = [] {
    TextRuns r{};
    for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
      for (int at = 0; at < TokenVocab::kTextPositions; ++at) {
        for (int b = 0; b < 256; ++b) {
          const int next = TokenVocab::text_step(static_cast<uint8_t>(1 << c), at, uint8_t(b));
          if (next >= 0) r[c][at][next].set(b);
        }
      }
    }
    return r;
  }();
  return runs;
}

// TokenVocab::text_step by table, per class (bit index): read at every node of a walk's path.
int text_next(int cls, int at, uint8_t byte) {
  using Table = std::array<std::array<std::array<int8_t, 256>, TokenVocab::kTextPositions>,
                           TokenVocab::kTextClasses>;
  static const Table kNext = [] {
    Table t{};
    for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
      for (int a = 0; a < TokenVocab::kTextPositions; ++a) {
        for (int b = 0; b < 256; ++b) {
          t[size_t(c)][size_t(a)][size_t(b)] = static_cast<int8_t>(
              TokenVocab::text_step(static_cast<uint8_t>(1 << c), a, static_cast<uint8_t>(b)));
        }
      }
    }
    return t;
  }();
  return kNext[static_cast<size_t>(cls)][static_cast<size_t>(at)][byte];
}

// The position in a run after `byte` read from a character boundary, for the classes in
// `classes` that hold it (positions past ASCII are the same in every class).
int text_position(uint8_t classes, uint8_t byte) {
  // Once per trie node of a walk: a table, not a call into text_step.
  static const std::array<int8_t, 256> kAfter = [] {
    std::array<int8_t, 256> after{};
    for (int b = 0; b < 256; ++b) {
      after[static_cast<size_t>(b)] = static_cast<int8_t>(
          b < 0x80 ? 0 : TokenVocab::text_step(TokenVocab::kJsonUtf8, 0, static_cast<uint8_t>(b)));
    }
    return after;
  }();
  return classes ? kAfter[byte] : -1;
}

// The buckets (TokenVocab::ByteBuckets: bytes 1-126 one each, NUL and DEL one, 128-255 one)
// whose every byte is in `set`, and those with some byte in it; the bytes of one.
const ByteSet kWord(~uint64_t{0});  // the low 64 bytes
const ByteSet kAscii = kWord | kWord << 64;

TokenVocab::ByteBuckets buckets_within(const ByteSet& set) {
  const uint64_t low = (set & kWord).to_ullong() & (set[0x7F] ? ~uint64_t{0} : ~uint64_t{1});
  const uint64_t high = (set >> 128).count() == 128 ? uint64_t{1} << 63 : 0;
  return {{low, (((set >> 64) & kWord).to_ullong() & ~(uint64_t{1} << 63)) | high}};
}
TokenVocab::ByteBuckets buckets_meeting(const ByteSet& set) {
  const uint64_t low = (set & kWord).to_ullong() | (set[0x7F] ? uint64_t{1} : 0);
  const uint64_t high = (set >> 128).any() ? uint64_t{1} << 63 : 0;
  return {{low, (((set >> 64) & kWord).to_ullong() & ~(uint64_t{1} << 63)) | high}};
}
ByteSet bucket_bytes(int bucket) {
  ByteSet set;
  if (bucket == 127) {
    for (size_t b = 128; b < 256; ++b) set.set(b);
  } else {
    set.set(static_cast<size_t>(bucket));
    if (bucket == 0) set.set(0x7F);
  }
  return set;
}

// The bits of State::text_known / text_held at position 0 of the classes in `classes`.
uint32_t class_bits(uint8_t classes) {
  static constexpr std::array<uint32_t, 1 << TokenVocab::kTextClasses> kBits = [] {
    std::array<uint32_t, 1 << TokenVocab::kTextClasses> bits{};
    for (size_t classes = 0; classes < bits.size(); ++classes) {
      for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
        if ((classes >> c) & 1) bits[classes] |= uint32_t{1} << (c * TokenVocab::kTextPositions);
      }
    }
    return bits;
  }();
  return kBits[classes & (kBits.size() - 1)];
}

// Per rule: whether it derives the empty string.
std::vector<bool> nullable_rules(const Grammar& g) {
  const size_t n = g.rules.size();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Alternative& alt : g.rules[r].alternatives) {
        const bool all = std::all_of(alt.begin(), alt.end(), [&](const Element& e) {
          return e.kind == Element::Kind::kRule && nullable[static_cast<size_t>(e.index)];
        });
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// Per rule: k when it is the k-th rule from the end of the chain a bounded repetition
// `item{0,n}` desugars into (opt_k ::= item opt_{k-1} | "", opt_1 ::= item | ""), else 0.
std::vector<int32_t> repeat_depths(const Grammar& g) {
  const size_t n = g.rules.size();
  // alt0 of `r ::= alt0 | ""` when alt0 is `item` or `item rule`, else null.
  auto shape = [&](size_t r) -> const Alternative* {
    const std::vector<Alternative>& alts = g.rules[r].alternatives;
    if (alts.size() != 2 || !alts[1].empty() || alts[0].empty() || alts[0].size() > 2) {
      return nullptr;
    }
    if (alts[0].size() == 2 && alts[0][1].kind != Element::Kind::kRule) return nullptr;
    return &alts[0];
  };
  std::vector<int32_t> depth(n, -1);
  std::vector<size_t> path;
  for (size_t r0 = 0; r0 < n; ++r0) {
    size_t r = r0;
    while (depth[r] < 0) {
      const Alternative* a = shape(r);
      if (!a || a->size() == 1) {
        depth[r] = a ? 1 : 0;
        break;
      }
      depth[r] = 0;  // provisional: a chain that comes back to r is no repetition
      path.push_back(r);
      r = static_cast<size_t>((*a)[1].index);
    }
    int32_t d = depth[r];
    for (; !path.empty(); path.pop_back()) {
      const size_t p = path.back();
      const Alternative& a = *shape(p);
      const Alternative* next = shape(static_cast<size_t>(a[1].index));
      depth[p] = d > 0 && next && (*next)[0] == a[0] ? d + 1 : 0;
      d = depth[p];
    }
  }
  return depth;
}

// Throws when some rule can reach itself without consuming a byte and with a
// return position pushed on the way: the pushdown expansion would grow the
// stack forever. Cycles made only of tail calls (a nullable item under `*`)
// keep the stack as it is, and expand() stops on the repeated stack.
void check_not_left_recursive(const Grammar& g, const std::vector<bool>& nullable) {
  const size_t n = g.rules.size();
  // left[r]: the rules r may call before consuming a byte; pushing[r]: those
  // of them called with a return position (not the alternative's last element).
  std::vector<std::vector<int32_t>> left(n), pushing(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Alternative& alt : g.rules[r].alternatives) {
      for (size_t k = 0; k < alt.size(); ++k) {
        const Element& e = alt[k];
        if (e.kind != Element::Kind::kRule) break;
        left[r].push_back(e.index);
        if (k + 1 < alt.size()) pushing[r].push_back(e.index);
        if (!nullable[static_cast<size_t>(e.index)]) break;
      }
    }
  }
  std::vector<uint32_t> seen(n, 0);
  uint32_t mark = 0;
  std::vector<int32_t> todo;
  for (size_t r = 0; r < n; ++r) {
    for (int32_t s : pushing[r]) {
      // Does s reach r again? Then r -> s -> ... -> r grows the stack.
      ++mark;
      todo.assign(1, s);
      while (!todo.empty()) {
        const int32_t x = todo.back();
        todo.pop_back();
        if (static_cast<size_t>(x) == r) {
          throw Error(str_cat("grammar: rule '", g.rules[r].name, "' is left-recursive"));
        }
        if (seen[static_cast<size_t>(x)] == mark) continue;
        seen[static_cast<size_t>(x)] = mark;
        for (int32_t y : left[static_cast<size_t>(x)]) todo.push_back(y);
      }
    }
  }
}

}  // namespace

Automaton::Automaton(const Grammar& grammar, const TokenVocab& vocab) : vocab_(vocab) {
  const size_t n = grammar.rules.size();
  VT_CHECK(grammar.root >= 0 && static_cast<size_t>(grammar.root) < n,
           "grammar: no root rule (root = ", grammar.root, ", ", n, " rules)");
  for (const Rule& r : grammar.rules) {
    for (const Alternative& alt : r.alternatives) {
      for (const Element& e : alt) {
        const size_t limit = e.kind == Element::Kind::kRule ? n : grammar.byte_sets.size();
        VT_CHECK(e.index >= 0 && static_cast<size_t>(e.index) < limit, "grammar: rule '", r.name,
                 "' has an element index ", e.index, " out of range");
      }
    }
  }
  const std::vector<bool> nullable = nullable_rules(grammar);
  check_not_left_recursive(grammar, nullable);
  byte_sets_ = grammar.byte_sets;
  rule_starts_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Alternative& alt : grammar.rules[r].alternatives) {
      rule_starts_[r].push_back(static_cast<int32_t>(elems_.size()));
      for (const Element& e : alt) {
        elems_.push_back(
            Elem{e.kind == Element::Kind::kRule ? Elem::kRule : Elem::kBytes, e.index});
      }
      elems_.push_back(Elem{Elem::kEnd, 0});
    }
  }
  const auto context_pos = static_cast<int32_t>(elems_.size());
  elems_.push_back(Elem{Elem::kContext, 0});
  // Each bounded repetition's item gets an unbounded one, star ::= item star | "", laid out
  // as opt_k's positions are: [item, star, end], [end].
  const std::vector<int32_t> depth = repeat_depths(grammar);
  std::unordered_map<uint64_t, int32_t> stars;  // by item: its star's first position
  for (size_t r = 0; r < n; ++r) {
    const Element item =
        depth[r] >= 2 ? grammar.rules[r].alternatives[0][0] : Element{Element::Kind::kBytes, 0};
    if (depth[r] < 2 ||
        (item.kind == Element::Kind::kRule && nullable[static_cast<size_t>(item.index)])) {
      continue;
    }
    const uint64_t key = (item.kind == Element::Kind::kRule ? uint64_t{1} << 32 : 0) |
                         static_cast<uint32_t>(item.index);
    auto [it, inserted] = stars.emplace(key, static_cast<int32_t>(elems_.size()));
    if (inserted) {
      const auto star = static_cast<int32_t>(rule_starts_.size());
      rule_starts_.push_back({it->second, it->second + 3});
      elems_.push_back(
          Elem{item.kind == Element::Kind::kRule ? Elem::kRule : Elem::kBytes, item.index});
      elems_.push_back(Elem{Elem::kRule, star});
      elems_.push_back(Elem{Elem::kEnd, 0});
      elems_.push_back(Elem{Elem::kEnd, 0});
    }
    bounds_.resize(elems_.size(), Bound{-1, 0});
    // Before the item all depth[r] items may still start; inside it, depth[r] - 1 more.
    const int32_t p = rule_starts_[r][0];
    bounds_[static_cast<size_t>(p)] = Bound{it->second, depth[r]};
    bounds_[static_cast<size_t>(p) + 1] = Bound{it->second + 1, depth[r] - 1};
  }
  bounds_.resize(elems_.size(), Bound{-1, 0});
  // Room for the states of a few documents: a doubling of the transition table copies it
  // whole (0.5 MiB at 512 states), inside the mask call that made the state. Reserved,
  // not touched: pages are used as states are made.
  constexpr size_t kReservedStates = 4096;
  trans_.reserve(kReservedStates * 256);
  states_.reserve(kReservedStates);
  walk_states_.resize(vocab_.max_token_bytes() + 1);
  walk_context_.resize(vocab_.max_token_bytes() + 1);
  walk_on_loop_.resize(vocab_.max_token_bytes() + 1);
  walk_class_at_.resize(vocab_.max_token_bytes() + 1);

  std::lock_guard<std::mutex> lock(mu_);
  context_node_ = node(context_pos, -1);
  ++generation_;
  std::vector<int32_t> out;
  bool acc = false, ctx = false;
  for (int32_t start : rule_starts_[static_cast<size_t>(grammar.root)]) {
    expand(node(start, -1), out, acc, ctx);
  }
  initial_ = out.empty() && !acc ? kDead : intern(out, acc, false);
}

int32_t Automaton::node(int32_t pos, int32_t parent) {
  auto same = [&](int32_t id) {
    return nodes_[static_cast<size_t>(id)] == std::pair<int32_t, int32_t>{pos, parent};
  };
  const uint64_t h = node_hash(pos, parent);
  IdSlots::Slot* slot = &node_ids_.find(h, same);
  if (slot->id >= 0) return slot->id;
  if (node_ids_.grow([&](int32_t id) {
        return node_hash(nodes_[static_cast<size_t>(id)].first,
                         nodes_[static_cast<size_t>(id)].second);
      })) {
    slot = &node_ids_.find(h, same);
  }
  slot->id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({pos, parent});
  node_bounded_.push_back(bounds_[static_cast<size_t>(pos)].star_pos >= 0 ||
                          (parent >= 0 && node_bounded_[static_cast<size_t>(parent)]));
  return slot->id;
}

void Automaton::expand(int32_t stack, std::vector<int32_t>& out, bool& accepting, bool& context) {
  work_.clear();
  work_.push_back(stack);
  while (!work_.empty()) {
    const int32_t s = work_.back();
    work_.pop_back();
    if (visited_.size() <= static_cast<size_t>(s)) visited_.resize(nodes_.size() * 2 + 16, 0);
    if (visited_[static_cast<size_t>(s)] == generation_) continue;
    visited_[static_cast<size_t>(s)] = generation_;
    const auto [pos, parent] = nodes_[static_cast<size_t>(s)];
    const Elem e = elems_[static_cast<size_t>(pos)];
    if (e.kind == Elem::kBytes) {
      out.push_back(s);
    } else if (e.kind == Elem::kContext) {
      context = true;
    } else if (e.kind == Elem::kEnd) {
      if (parent < 0) {
        accepting = true;
      } else {
        work_.push_back(parent);
      }
    } else {
      // A call whose return position ends the alternative returns straight to
      // the caller's caller (a tail call): repetition stays flat.
      const int32_t ret =
          elems_[static_cast<size_t>(pos) + 1].kind == Elem::kEnd ? parent : node(pos + 1, parent);
      for (int32_t start : rule_starts_[static_cast<size_t>(e.arg)]) {
        work_.push_back(node(start, ret));
      }
    }
  }
}

int32_t Automaton::intern(std::vector<int32_t>& stacks, bool accepting, bool context) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  const uint64_t h = stacks_hash(stacks, accepting, context);
  auto same = [&](int32_t id) {
    const State& st = states_[static_cast<size_t>(id)];
    return st.hash == h && st.accepting == accepting && st.context == context &&
           st.stacks == stacks;
  };
  IdSlots::Slot* slot = &state_ids_.find(h, same);
  if (slot->id >= 0) return slot->id;
  if (state_ids_.grow([&](int32_t id) { return states_[static_cast<size_t>(id)].hash; })) {
    slot = &state_ids_.find(h, same);
  }
  const auto id = static_cast<int32_t>(states_.size());
  slot->id = id;
  states_.push_back(State{stacks, accepting, context});
  states_.back().hash = h;
  states_.back().bounded = std::any_of(stacks.begin(), stacks.end(), [&](int32_t x) {
    return node_bounded_[static_cast<size_t>(x)] != 0;
  });
  trans_.resize(trans_.size() + 256, kUnknown);
  return id;
}

inline int32_t Automaton::step_locked(int32_t state, uint8_t byte) {
  if (state < 0) return kDead;
  const int32_t known = trans_[static_cast<size_t>(state) * 256 + byte];
  return known != kUnknown ? known : new_step(state, byte);
}

int32_t Automaton::new_step(int32_t state, uint8_t byte) {
  ++generation_;
  step_out_.clear();
  bool acc = false, ctx = false;
  const size_t count = states_[static_cast<size_t>(state)].stacks.size();
  for (size_t i = 0; i < count; ++i) {
    const int32_t s = states_[static_cast<size_t>(state)].stacks[i];
    const auto [pos, parent] = nodes_[static_cast<size_t>(s)];
    if (!byte_sets_[static_cast<size_t>(elems_[static_cast<size_t>(pos)].arg)][byte]) continue;
    const int32_t next = node(pos + 1, parent);
    expand(next, step_out_, acc, ctx);
  }
  const int32_t result = step_out_.empty() && !acc && !ctx ? kDead : intern(step_out_, acc, ctx);
  // A walk meets most of a row's bytes: store the step for all that share it.
  const ByteSet same = same_step(state, byte);
  const size_t row = static_cast<size_t>(state) * 256;
  for (size_t w = 0; w < 4; ++w) {  // by 64-bit words: _Find_next per byte cost more than the step
    for (uint64_t bits = ((same >> (64 * w)) & kWord).to_ullong(); bits; bits &= bits - 1) {
      trans_[row + 64 * w + static_cast<size_t>(std::countr_zero(bits))] = result;
    }
  }
  return result;
}

ByteSet Automaton::same_step(int32_t state, uint8_t byte) const {
  // The step depends only on which stacks' byte sets hold the byte.
  ByteSet same;
  same.set();
  for (int32_t s : states_[static_cast<size_t>(state)].stacks) {
    const int32_t pos = nodes_[static_cast<size_t>(s)].first;
    const ByteSet& set = byte_sets_[static_cast<size_t>(elems_[static_cast<size_t>(pos)].arg)];
    same &= set[byte] ? set : ~set;
  }
  return same;
}

inline ByteSet Automaton::taken(int32_t state) const {
  ByteSet set;
  for (int32_t x : states_[static_cast<size_t>(state)].stacks) {
    set |= byte_sets_[static_cast<size_t>(
        elems_[static_cast<size_t>(nodes_[static_cast<size_t>(x)].first)].arg)];
  }
  return set;
}

bool Automaton::loop_root(int32_t root, LoopRoot& loop) {
  // The byte that the most bytes step alike from the root stands for B.
  ByteSet group;
  uint8_t rep = 0;
  for (ByteSet left = taken(root); left.any();) {
    const auto b = static_cast<uint8_t>(left._Find_first());
    const ByteSet same = same_step(root, b);
    left &= ~same;
    if (same.count() > group.count()) {
      group = same;
      rep = b;
    }
  }
  // A few bytes (digits, whitespace) begin few tokens: the walk along them is short anyway.
  if (group.count() < kMinLoopBytes) return false;
  loop.chain[0] = root;
  loop.last = -1;
  loop.context = false;
  for (int k = 0; k < kMaxLoopChain && loop.last < 0; ++k) {
    const int32_t next = step_locked(loop.chain[k], rep);
    // A step into the context could not tell a dead token from one the context takes.
    if (!live(next)) return false;
    if (states_[static_cast<size_t>(next)].context) {
      loop.context = true;
      loop.bytes = group;
      return false;
    }
    if (next == loop.chain[k]) {
      loop.last = k;
    } else {
      loop.chain[k + 1] = next;
    }
  }
  if (loop.last < 0) return false;
  loop.bytes = same_step(loop.chain[loop.last], rep);
  ByteSet exits;
  for (int k = 0; k <= loop.last; ++k) {
    const ByteSet same = same_step(loop.chain[k], rep);
    if ((same & loop.bytes) != loop.bytes) return false;  // B's bytes step it apart
    exits |= taken(loop.chain[k]);
  }
  loop.exits = buckets_meeting(exits & ~loop.bytes);
  return true;
}

bool Automaton::class_exits(int32_t state, int cls, ByteSet& exits) {
  constexpr size_t kMaxPairs = 64;
  const TextRuns& runs = text_runs();
  std::vector<std::pair<int, int32_t>>& met = exit_pairs_;
  met.assign(1, {0, state});
  for (size_t k = 0; k < met.size(); ++k) {
    const auto [at, s] = met[k];
    if (states_[static_cast<size_t>(s)].context) return false;
    const ByteSet took = taken(s);
    ByteSet in_class;
    for (int next = 0; next < TokenVocab::kTextPositions; ++next) in_class |= runs[cls][at][next];
    exits |= took & ~in_class;
    // Nothing to prune unless some ASCII byte dies at the root (the first pair).
    if (k == 0 && ((took | in_class) & kAscii) == kAscii) return false;
    for (int next = 0; next < TokenVocab::kTextPositions; ++next) {
      for (ByteSet left = runs[cls][at][next] & took; left.any();) {
        const auto b = static_cast<uint8_t>(left._Find_first());
        left &= ~same_step(s, b);
        const std::pair<int, int32_t> pair{next, step_locked(s, b)};
        if (std::find(met.begin(), met.end(), pair) != met.end()) continue;
        if (met.size() == kMaxPairs) return false;
        met.push_back(pair);
      }
    }
  }
  return true;
}

bool Automaton::budget_exits(int cls, ByteSet& exits) const {
  const TextRuns& runs = text_runs();
  for (const BudgetPair& p : budget_pairs_) {
    ByteSet in_class;
    for (int next = 0; next < TokenVocab::kTextPositions; ++next) in_class |= runs[cls][p.at][next];
    exits |= taken(p.state) & ~in_class;
  }
  return true;
}

const Automaton::LoopTokens& Automaton::loop_tokens(const ByteSet& bytes) {
  for (const LoopTokens& known : loop_masks_) {
    if (known.bytes == bytes) return known;
  }
  std::vector<uint32_t> mask(vocab_.mask_words(), 0);
  if (!vocab_.tokens_within(bytes, mask)) walk_within(bytes, mask);
  mask_bytes_ += mask.size() * 4;
  size_t count = 0;
  for (uint32_t w : mask) count += static_cast<size_t>(std::popcount(w));
  loop_masks_.push_back(LoopTokens{bytes, std::move(mask), count});
  return loop_masks_.back();
}

void Automaton::walk_within(const ByteSet& bytes, std::vector<uint32_t>& mask) const {
  const std::span<const TokenVocab::TrieNode> trie = vocab_.trie();
  const std::span<const TokenId> tokens = vocab_.trie_tokens();
  const TokenVocab::ByteBuckets within = buckets_within(bytes);
  auto set_range = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const auto id = static_cast<uint32_t>(tokens[k]);
      mask[id >> 5] |= uint32_t{1} << (id & 31);
    }
  };
  // Depth first along the nodes of B's bytes: a subtree of them only is taken whole.
  for (size_t i = 0; i < trie.size();) {
    const TokenVocab::TrieNode& t = trie[i];
    const auto end = static_cast<size_t>(t.subtree_end);
    if (!bytes[t.byte]) {
      i = end;
      continue;
    }
    const TokenVocab::ByteBuckets& below = vocab_.subtree_bytes(i);
    const size_t next =
        i + 1 < trie.size() ? static_cast<size_t>(trie[i + 1].token_begin) : tokens.size();
    if (!(below.bits[0] & ~within.bits[0]) && !(below.bits[1] & ~within.bits[1])) {
      set_range(static_cast<size_t>(t.token_begin),
                end < trie.size() ? static_cast<size_t>(trie[end].token_begin) : tokens.size());
      i = end;
      continue;
    }
    set_range(static_cast<size_t>(t.token_begin), next);
    ++i;
  }
}

inline bool Automaton::loops_on(int32_t state, uint8_t first,
                                const TokenVocab::ByteBuckets& bytes) {
  const State& st = states_[static_cast<size_t>(state)];
  const TokenVocab::ByteBuckets ask{
      {bytes.bits[0] & ~st.loops.bits[0], bytes.bits[1] & ~st.loops.bits[1]}};
  if ((ask.bits[0] & st.no_loops.bits[0]) || (ask.bits[1] & st.no_loops.bits[1])) return false;
  return !(ask.bits[0] | ask.bits[1]) || new_loops_on(state, first, ask);
}

bool Automaton::new_loops_on(int32_t state, uint8_t first, TokenVocab::ByteBuckets ask) {
  // The node's own byte first: the walk steps it anyway, and it fails most checks.
  for (int bucket = TokenVocab::bucket(first); bucket >= 0;) {
    // A bucket of several bytes loops when all of them do.
    for (ByteSet left = bucket_bytes(bucket); left.any();) {
      const auto b = static_cast<uint8_t>(left._Find_first());
      const ByteSet same = same_step(state, b);
      const bool loop = step_locked(state, b) == state;
      State& st = states_[static_cast<size_t>(state)];  // step_locked may have moved states_
      const TokenVocab::ByteBuckets seen = loop ? buckets_within(same) : buckets_meeting(same);
      TokenVocab::ByteBuckets& into = loop ? st.loops : st.no_loops;
      into.bits[0] |= seen.bits[0];
      into.bits[1] |= seen.bits[1];
      if (!loop) return false;
      left &= ~same;
    }
    State& st = states_[static_cast<size_t>(state)];
    st.loops.bits[bucket >> 6] |= uint64_t{1} << (bucket & 63);
    ask.bits[0] &= ~st.loops.bits[0];
    ask.bits[1] &= ~st.loops.bits[1];
    bucket = ask.bits[0]   ? std::countr_zero(ask.bits[0])
             : ask.bits[1] ? 64 + std::countr_zero(ask.bits[1])
                           : -1;
  }
  return true;
}

int32_t Automaton::step(int32_t state, uint8_t byte) {
  std::lock_guard<std::mutex> lock(mu_);
  return step_locked(state, byte);
}

int32_t Automaton::step_bytes(int32_t state, std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (char c : bytes) {
    state = step_locked(state, static_cast<uint8_t>(c));
    if (state == kDead) break;
  }
  return state;
}

std::pair<int32_t, int32_t> Automaton::unbound(int32_t state, int32_t keep) {
  if (!states_[static_cast<size_t>(state)].bounded) return {state, INT32_MAX};
  std::vector<int32_t> stacks, chain;
  int32_t least = INT32_MAX;
  for (int32_t s : states_[static_cast<size_t>(state)].stacks) {
    chain.clear();
    bool bounded = false;
    for (int32_t x = s; x >= 0; x = nodes_[static_cast<size_t>(x)].second) {
      const int32_t pos = nodes_[static_cast<size_t>(x)].first;
      const Bound b = bounds_[static_cast<size_t>(pos)];
      const bool far = b.star_pos >= 0 && b.allowance > keep;
      chain.push_back(far ? b.star_pos : pos);
      if (far) least = std::min(least, b.allowance);
      bounded |= far;
    }
    if (!bounded) {
      stacks.push_back(s);
      continue;
    }
    int32_t t = -1;
    for (size_t i = chain.size(); i-- > 0;) t = node(chain[i], t);
    stacks.push_back(t);
  }
  if (least == INT32_MAX) return {state, least};
  const State& st = states_[static_cast<size_t>(state)];
  return {intern(stacks, st.accepting, st.context), least};
}

inline int32_t Automaton::canonical(int32_t state) {
  const int32_t known = states_[static_cast<size_t>(state)].canonical;
  return known != kUnknown ? known : new_canonical(state);
}

int32_t Automaton::new_canonical(int32_t state) {
  // No token reaches the bound: item{0,n} and item* allow the same tokens here.
  const int32_t c = unbound(state, static_cast<int32_t>(vocab_.max_token_bytes())).first;
  states_[static_cast<size_t>(c)].canonical = c;  // stars only: nothing left to replace
  states_[static_cast<size_t>(state)].canonical = c;
  return c;
}

int32_t Automaton::loose(int32_t state, size_t len) {
  if (!states_[static_cast<size_t>(state)].bounded) return state;
  if (states_[static_cast<size_t>(state)].free == kUnknown) {
    const auto [free, least] = unbound(state, 0);
    states_[static_cast<size_t>(state)].free = free;
    states_[static_cast<size_t>(state)].least = least;
  }
  const State& st = states_[static_cast<size_t>(state)];
  return len <= static_cast<size_t>(st.least) ? st.free : state;
}

inline bool Automaton::live(int32_t state) const {
  return state >= 0 && (states_[static_cast<size_t>(state)].accepting ||
                        !states_[static_cast<size_t>(state)].stacks.empty());
}

int32_t Automaton::truncate(int32_t state, int depth) {
  std::vector<int32_t> stacks;
  bool cut = false;
  int32_t chain[kDeepContextDepth];
  for (int32_t s : states_[static_cast<size_t>(state)].stacks) {
    int n = 0;
    int32_t x = s;
    while (x >= 0 && n < depth) {
      chain[n++] = nodes_[static_cast<size_t>(x)].first;
      x = nodes_[static_cast<size_t>(x)].second;
    }
    if (x < 0) {  // shallow enough: kept whole
      stacks.push_back(s);
      continue;
    }
    cut = true;
    int32_t t = context_node_;
    for (int i = n; i-- > 0;) t = node(chain[i], t);
    stacks.push_back(t);
  }
  if (!cut) return state;
  return intern(stacks, false, false);
}

bool Automaton::holds_class(int32_t state, int cls, int at) {
  // Tarjan's strongly connected components over the (position in a run of the class,
  // state) pairs reachable from (at, state): a component whose successors all hold, holds.
  // A dead pair fails every pair on the component stack, since each of them reaches the
  // path that led to it. A run that keeps making new states (a count near its bound) fails
  // at the cap, only the first pair recorded: a failure only means "walk it".
  constexpr size_t kMaxPairs = 32;
  const uint32_t bit0 = uint32_t{1} << (cls * TokenVocab::kTextPositions);
  auto known = [&](int32_t s, int a) { return (states_[size_t(s)].text_known & (bit0 << a)) != 0; };
  auto held = [&](int32_t s, int a) { return (states_[size_t(s)].text_held & (bit0 << a)) != 0; };
  auto record = [&](int32_t s, int a, bool h) {
    states_[size_t(s)].text_known |= bit0 << a;
    if (h) states_[size_t(s)].text_held |= bit0 << a;
  };
  if (known(state, at)) return held(state, at);
  if (!live(state)) {
    record(state, at, false);
    return false;
  }
  const TextRuns& runs = text_runs();
  text_pairs_.clear();
  text_stack_.clear();
  text_frames_.clear();
  // Opens pair (a, s); false when some byte of the class from `a` steps no stack of `s` (a
  // dead step, found without making any): a state outside the class mostly fails on one,
  // and following the first byte that lives instead (a space into a run of whitespace
  // counts) makes up to kMaxPairs states first.
  auto open = [&](int a, int32_t s) {
    const int id = static_cast<int>(text_pairs_.size());
    text_pairs_.push_back(TextPair{a, s, id, true});
    text_stack_.push_back(id);
    text_frames_.push_back(TextFrame{id, 0, runs[cls][a][0]});
    const ByteSet stepped = taken(s);
    for (int next = 0; next < TokenVocab::kTextPositions; ++next) {
      if ((runs[cls][a][next] & ~stepped).any()) return false;
    }
    return true;
  };
  bool failed = !open(at, state), capped = false;
  while (!text_frames_.empty()) {
    TextFrame& f = text_frames_.back();
    const int u = f.pair;
    const TextPair p = text_pairs_[size_t(u)];
    while (f.left.none() && ++f.next_at < TokenVocab::kTextPositions) {
      f.left = runs[cls][p.at][f.next_at];
    }
    if (f.next_at == TokenVocab::kTextPositions) {  // every successor holds or is on the stack
      text_frames_.pop_back();
      if (p.low == u) {
        for (int v = -1; v != u;) {
          v = text_stack_.back();
          text_stack_.pop_back();
          text_pairs_[size_t(v)].on_stack = false;
          record(text_pairs_[size_t(v)].state, text_pairs_[size_t(v)].at, true);
        }
      }
      if (!text_frames_.empty()) {
        int& low = text_pairs_[size_t(text_frames_.back().pair)].low;
        low = std::min(low, p.low);
      }
      continue;
    }
    // One step per group of bytes that the same stacks take (same_step), not per byte.
    const int next_at = f.next_at;
    const auto b = static_cast<uint8_t>(f.left._Find_first());
    f.left &= ~same_step(p.state, b);
    const int32_t t = step_locked(p.state, b);
    if (!live(t) || (known(t, next_at) && !held(t, next_at))) {
      failed = true;
      break;
    }
    if (known(t, next_at)) continue;
    int w = -1;
    for (size_t k = 0; k < text_pairs_.size() && w < 0; ++k) {
      if (text_pairs_[k].at == next_at && text_pairs_[k].state == t) w = static_cast<int>(k);
    }
    if (w >= 0) {  // not recorded, so on the stack
      int& low = text_pairs_[size_t(u)].low;
      low = std::min(low, w);
    } else if (text_pairs_.size() == kMaxPairs) {
      failed = capped = true;
      break;
    } else if (!open(next_at, t)) {
      failed = true;
      break;
    }
  }
  if (!failed) return true;
  if (capped) {
    record(state, at, false);
  } else {
    for (int v : text_stack_)
      record(text_pairs_[size_t(v)].state, text_pairs_[size_t(v)].at, false);
  }
  return false;
}

int Automaton::text_budget(int32_t state, int cls) {
  budget_pairs_.clear();
  ++budget_generation_;
  int lo = 0, hi = 0;
  return budget_from(0, state, cls, 0, lo, hi) && lo == hi ? lo : -1;
}

bool Automaton::budget_from(int at, int32_t state, int cls, size_t chars, int& lo, int& hi) {
  // Depth first over the (position, state) pairs of the class's strings from (at, state), as
  // holds_class() explores them: lo = min over the successors of the characters begun to it
  // plus its lo (a dead one: less one), hi = the max of them plus its hi (a dead one: 0).
  // Gives up (false) on a pair met again on the path (a loop: no bound), past kShortMasks
  // characters, past kMaxPairs pairs, and on a step into the context.
  constexpr size_t kMaxPairs = 320;  // a UTF-8 class's 15 counts: ~18 pairs each
  const size_t key = static_cast<size_t>(state) * TokenVocab::kTextPositions + at;
  if (budget_seen_.size() <= key)
    budget_seen_.resize(states_.size() * 2 * TokenVocab::kTextPositions);
  if (budget_seen_[key].first == budget_generation_) {
    const BudgetPair& p = budget_pairs_[budget_seen_[key].second];
    lo = p.lo;
    hi = p.hi;
    return p.done;
  }
  if (budget_pairs_.size() == kMaxPairs) return false;
  const size_t me = budget_pairs_.size();
  budget_seen_[key] = {budget_generation_, static_cast<uint32_t>(me)};
  budget_pairs_.push_back(BudgetPair{at, state, 0, 0, false});
  const TextRuns& runs = text_runs();
  const int begun = at == 0;  // a byte read between characters begins one
  int l = INT32_MAX, h = 0;
  // lo < hi anywhere makes the root's lo < hi too (both add up along the path): give up as
  // soon as it shows, first from the bytes that step no stack (dead, found without a step),
  // before following one that lives (a whitespace count would make its run of states).
  const ByteSet stepped = taken(state);
  for (int next = 0; next < TokenVocab::kTextPositions; ++next) {
    if ((runs[cls][at][next] & ~stepped).any()) l = begun - 1;
  }
  for (int next = 0; next < TokenVocab::kTextPositions; ++next) {
    for (ByteSet left = runs[cls][at][next] & stepped; left.any();) {
      const auto b = static_cast<uint8_t>(left._Find_first());
      left &= ~same_step(state, b);
      if (l < begun) return false;  // this successor's hi is at least `begun`
      const int32_t t = step_locked(state, b);
      if (t == kDead) {
        l = std::min(l, begun - 1);
        continue;
      }
      if (!live(t) || states_[static_cast<size_t>(t)].context ||
          chars + begun >= TokenVocab::kShortMasks) {
        return false;
      }
      int tl = 0, th = 0;
      if (!budget_from(next, t, cls, chars + begun, tl, th)) return false;
      l = std::min(l, begun + tl);
      h = std::max(h, begun + th);
      if (l < h) return false;
    }
  }
  budget_pairs_[me] = BudgetPair{at, state, l, h, true};
  lo = l;
  hi = h;
  return true;
}

inline bool Automaton::holds_text(int32_t state, uint8_t classes, int at) {
  // A subtree's strings are no longer than a token: the canonical state lives through the
  // same ones.
  state = canonical(state);
  // Most calls, one per node of a walk, find the answer recorded.
  const State& st = states_[static_cast<size_t>(state)];
  const uint32_t asked = class_bits(classes) << at;
  if (st.text_held & asked) return true;
  if ((st.text_known & asked) == asked) return false;
  return new_holds_text(state, classes, at);
}

bool Automaton::new_holds_text(int32_t state, uint8_t classes, int at) {
  for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
    if ((classes >> c) & 1 && holds_class(state, c, at)) return true;
  }
  return false;
}

const Automaton::LocalMask& Automaton::local_mask(int32_t truncated) {
  auto it = local_masks_.find(truncated);
  if (it != local_masks_.end()) return it->second;
  LocalMask lm;
  // Inside a bounded repetition (a string's maxLength, a run of whitespace) each count is a
  // state of its own, which the text classes do not hold. The tokens no longer than the
  // least allowance fare as under the unbounded repetition, whose mask every count shares:
  // only the longer ones are walked from here.
  const auto [star, least] = unbound(truncated, 0);
  size_t min_len = 0;
  if (star != truncated) {
    lm = local_mask(star);
    min_len = static_cast<size_t>(least);
    if (min_len < TokenVocab::kShortMasks) {
      const std::span<const uint32_t> keep = vocab_.tokens_up_to(min_len);
      for (size_t w = 0; w < keep.size(); ++w) lm.allowed[w] &= keep[w];
    } else {
      for (TokenId id : vocab_.tokens_longer_than(min_len)) {
        lm.allowed[static_cast<uint32_t>(id) >> 5] &=
            ~(uint32_t{1} << (static_cast<uint32_t>(id) & 31));
      }
    }
    std::erase_if(lm.uncertain, [&](TokenId id) { return vocab_.bytes(id).size() > min_len; });
  } else {
    lm.allowed.assign(vocab_.mask_words(), 0);
  }
  walk(truncated, lm, min_len);
  mask_bytes_ += lm.allowed.size() * 4 + lm.uncertain.size() * 4;
  return local_masks_.emplace(truncated, std::move(lm)).first->second;
}

void Automaton::walk(int32_t root, LocalMask& lm, size_t min_len) {
  const int32_t truncated = root;
  const std::span<const TokenVocab::TrieNode> trie = vocab_.trie();
  const std::span<const TokenId> tokens = vocab_.trie_tokens();
  const size_t n = trie.size();
  auto subtree_tokens_end = [&](size_t end) {
    return end < n ? static_cast<size_t>(trie[end].token_begin) : tokens.size();
  };
  walk_states_[0] = truncated;
  walk_context_[0] = 0;
  // Every token of a subtree is allowed: its strings all live.
  auto allow_subtree = [&](size_t node) {
    const size_t end = static_cast<size_t>(trie[node].subtree_end);
    uint32_t* allowed = lm.allowed.data();  // hoisted: the stores may alias the vectors' ends
    for (size_t k = static_cast<size_t>(trie[node].token_begin), k_end = subtree_tokens_end(end);
         k < k_end; ++k) {
      const auto id = static_cast<uint32_t>(tokens[k]);
      allowed[id >> 5] |= uint32_t{1} << (id & 31);
    }
    return end;
  };
  // The first level by one class's token mask: every depth-1 subtree of the class that the
  // walk below would take whole (the root or the state after the node's byte lives through
  // the class) is in it. The few it would not take are cleared and walked as usual.
  int root_class = -1;
  // The class the root itself lives through: every token of it is allowed, and a subtree of
  // its tokens only (TokenVocab::class_subtree) is skipped at any depth.
  int whole_class = -1;
  std::vector<size_t>& excluded = root_excluded_;
  for (int c = 0; c < TokenVocab::kTextClasses && root_class < 0 && min_len == 0; ++c) {
    const auto cls = static_cast<uint8_t>(1 << c);
    excluded.clear();
    if (holds_text(truncated, cls)) {
      whole_class = root_class = c;
      break;
    }
    for (const TokenVocab::FirstNode& f : vocab_.first_level()) {
      if (excluded.size() > kMaxExcluded) break;
      if (!(f.text_from & cls)) continue;
      const int32_t s = step_locked(truncated, f.byte);
      if (!live(s) || !holds_text(s, cls, text_position(cls, f.byte))) excluded.push_back(f.node);
    }
    if (excluded.size() <= kMaxExcluded) root_class = c;
  }
  // Or, inside a short bounded repetition of a class's characters (a maxLength string, where
  // min_len > 0), the root may live through exactly its strings of at most some length: the
  // tokens among them are allowed at once, and subtrees of class tokens only skipped as above.
  int budget = -1;
  for (int c = 0; c < TokenVocab::kTextClasses && min_len > 0 && budget < 0; ++c) {
    budget = text_budget(truncated, c);
    if (budget >= 0) whole_class = c;
  }
  if (budget >= 0) {
    const std::span<const uint32_t> taken =
        vocab_.class_tokens_up_to(whole_class, static_cast<size_t>(budget));
    for (size_t w = 0; w < taken.size(); ++w) lm.allowed[w] |= taken[w];
  } else if (whole_class >= 0) {
    const std::span<const uint32_t> taken = vocab_.class_tokens(whole_class);
    for (size_t w = 0; w < taken.size(); ++w) lm.allowed[w] |= taken[w];
  } else if (root_class >= 0) {
    const std::span<const uint32_t> taken = vocab_.text_tokens(root_class);
    std::copy(taken.begin(), taken.end(), lm.allowed.begin());
    for (size_t node : excluded) {
      const size_t end = static_cast<size_t>(trie[node].subtree_end);
      for (size_t k = static_cast<size_t>(trie[node].token_begin); k < subtree_tokens_end(end);
           ++k) {
        const auto id = static_cast<uint32_t>(tokens[k]);
        lm.allowed[id >> 5] &= ~(uint32_t{1} << (id & 31));
      }
    }
  }
  // Or the root reaches a loop on a set of bytes B (LoopRoot): B's tokens are allowed at once,
  // and on a path of B's bytes only the subtrees that hold an exit are walked.
  LoopRoot& loop = loop_root_;
  const bool looping = min_len == 0 && whole_class < 0 && loop_root(truncated, loop);
  if (looping) {
    const std::vector<uint32_t>& taken = loop_tokens(loop.bytes).mask;
    for (size_t w = 0; w < taken.size(); ++w) lm.allowed[w] |= taken[w];
  }
  walk_on_loop_[0] = looping;
  // A root that lives through a class: on a path of the class's strings, a subtree without a
  // byte that some state there takes outside the class (a JSON string's '"' and '\\') holds
  // only class strings, in the mask already, and tokens that die on leaving the class.
  TokenVocab::ByteBuckets exits{{0, 0}};
  bool on_class = false;  // loop-invariant: the walks that do not prune skip the bookkeeping
  // Within a budget likewise, from the pairs its search met: a class string past the budget
  // dies, and so does a token leaving the class after at most the budget's characters on a
  // byte none of them takes.
  ByteSet out;
  if (budget >= 0 ? budget_exits(whole_class, out)
                  : whole_class >= 0 && class_exits(truncated, whole_class, out)) {
    exits = buckets_meeting(out);
    walk_class_at_[0] = 0;
    on_class = true;
  }
  // Inside a big first subtree whose state lives through a class (sub_class, up to node
  // sub_end): its class tokens are in the mask, its subtrees of class tokens only decided.
  int sub_class = -1;
  size_t sub_end = 0;
  const std::span<const TokenVocab::FirstNode> first = vocab_.first_level();
  for (size_t i = 0; i < n;) {
    const TokenVocab::TrieNode& t = trie[i];
    if (vocab_.subtree_depth(i) <= min_len ||
        (whole_class >= 0 && ((vocab_.class_subtree(i) >> whole_class) & 1)) ||
        (i < sub_end && ((vocab_.class_subtree(i) >> sub_class) & 1))) {  // decided
      i = static_cast<size_t>(t.subtree_end);
      continue;
    }
    if (t.depth == 1 && root_class >= 0 && ((t.text_from >> root_class) & 1) &&
        std::find(excluded.begin(), excluded.end(), i) == excluded.end()) {
      i = static_cast<size_t>(t.subtree_end);
      continue;
    }
    if (on_class && walk_class_at_[t.depth - 1] >= 0 &&
        static_cast<size_t>(t.subtree_end) > i + 1 &&
        text_next(whole_class, walk_class_at_[t.depth - 1], t.byte) >= 0) {  // a leaf: as is
      const TokenVocab::ByteBuckets& below = vocab_.subtree_bytes(i);
      if (!(below.bits[0] & exits.bits[0]) && !(below.bits[1] & exits.bits[1])) {
        i = static_cast<size_t>(t.subtree_end);
        continue;
      }
    }
    if (walk_on_loop_[t.depth - 1] && loop.bytes[t.byte]) {
      // Its tokens are B's; the others die on their first byte outside B unless it is an exit.
      const TokenVocab::ByteBuckets& below = vocab_.subtree_bytes(i);
      if (!(below.bits[0] & loop.exits.bits[0]) && !(below.bits[1] & loop.exits.bits[1])) {
        i = static_cast<size_t>(t.subtree_end);
        continue;
      }
      walk_states_[t.depth] = loop.chain[std::min<int>(t.depth, loop.last)];
      walk_context_[t.depth] = 0;
      walk_on_loop_[t.depth] = 1;
      ++i;
      continue;
    }
    const int32_t parent = walk_states_[t.depth - 1];
    if (t.text_from && holds_text(parent, t.text_from)) {
      i = allow_subtree(i);
      continue;
    }
    const int32_t s = step_locked(parent, t.byte);
    if (s == kDead) {
      const size_t end = static_cast<size_t>(t.subtree_end);
      if (walk_context_[t.depth - 1]) {  // popped into the context earlier: can't tell here
        for (size_t k = static_cast<size_t>(t.token_begin); k < subtree_tokens_end(end); ++k) {
          if (vocab_.bytes(tokens[k]).size() > min_len) lm.uncertain.push_back(tokens[k]);
        }
      }
      i = end;
      continue;
    }
    const bool ok = live(s);
    // The parent does not live through the class (a stop word's prefix, a state outside a
    // string), but the state after this node's byte may: it reads the rest of the subtree
    // from the position after the byte (text_from), or from a character boundary below a
    // byte outside the classes (text_below).
    // Or the byte leads back to the parent, and so may every byte below it.
    const bool inner = ok && static_cast<size_t>(t.subtree_end) > i + 1;
    // Below here the strings are no longer than the subtree is deep: a count of a bounded
    // repetition that they cannot exhaust walks them as the unbounded one, which loops, and
    // may loop on every byte below (an email label's first letter: the rest of the word).
    const int32_t below = inner ? loose(s, vocab_.subtree_depth(i) - t.depth) : s;
    if (inner && ((t.text_from && holds_text(s, t.text_from, text_position(t.text_from, t.byte))) ||
                  (t.text_below && holds_text(s, t.text_below)) ||
                  (s == parent && loops_on(parent, t.byte, vocab_.subtree_bytes(i))) ||
                  (below != s && loops_on(below, trie[i + 1].byte, vocab_.subtree_bytes(i))))) {
      i = allow_subtree(i);
      continue;
    }
    if (inner && t.depth == 1 && whole_class < 0) {
      const auto f = std::lower_bound(
          first.begin(), first.end(), i,
          [](const TokenVocab::FirstNode& a, size_t node) { return a.node < node; });
      for (int c = 0; c < TokenVocab::kTextClasses && f->big >= 0 && sub_end <= i; ++c) {
        const auto cls = static_cast<uint8_t>(1 << c);
        const int at = TokenVocab::text_step(cls, 0, t.byte);
        if (at < 0 || !holds_text(s, cls, at)) continue;
        const std::span<const uint32_t> taken = vocab_.first_class_tokens(f->big, c);
        for (size_t w = 0; w < taken.size(); ++w) lm.allowed[w] |= taken[w];
        sub_class = c;
        sub_end = static_cast<size_t>(t.subtree_end);
      }
    }
    walk_states_[t.depth] = below;
    walk_on_loop_[t.depth] = 0;
    if (on_class) {
      walk_class_at_[t.depth] =
          static_cast<int8_t>(walk_class_at_[t.depth - 1] < 0
                                  ? -1
                                  : text_next(whole_class, walk_class_at_[t.depth - 1], t.byte));
    }
    const bool ctx = walk_context_[t.depth - 1] || states_[static_cast<size_t>(s)].context;
    walk_context_[t.depth] = ctx;
    for (const TokenId id : vocab_.node_tokens(i)) {
      if (ok) {
        lm.allowed[static_cast<uint32_t>(id) >> 5] |= uint32_t{1}
                                                      << (static_cast<uint32_t>(id) & 31);
      } else if (ctx && t.depth > min_len) {
        lm.uncertain.push_back(id);
      }
    }
    ++i;
  }
}

bool Automaton::accepting(int32_t state) {
  if (state < 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return states_[static_cast<size_t>(state)].accepting;
}

void Automaton::compute_mask(int32_t state, std::vector<uint32_t>& mask) {
  // A truncated state whose loop (loop_root) pops into the context within a few bytes (an
  // email's second domain label, deeper than kContextDepth) would leave every token that leaves
  // the loop uncertain: when the loop holds many tokens, the state is cut deeper instead, where
  // the loop is taken as a whole.
  int32_t root = truncate(state, kContextDepth);
  if (root != state && !local_masks_.contains(root)) {
    LoopRoot& loop = loop_root_;
    if (!loop_root(unbound(root, 0).first, loop) && loop.context &&
        loop_tokens(loop.bytes).count >= kManyLoopTokens) {
      root = truncate(state, kDeepContextDepth);
    }
  }
  const LocalMask& lm = local_mask(root);
  mask = lm.allowed;
  // Uncertain tokens against the whole state; consecutive ones (trie order)
  // share prefixes, whose states are reused.
  std::string_view prev;
  walk_states_[0] = state;
  for (TokenId id : lm.uncertain) {
    const std::string_view b = vocab_.bytes(id);
    size_t d = 0;
    while (d < b.size() && d < prev.size() && b[d] == prev[d]) ++d;
    for (; d < b.size(); ++d) {
      walk_states_[d + 1] = step_locked(walk_states_[d], static_cast<uint8_t>(b[d]));
    }
    prev = b;
    if (live(walk_states_[b.size()])) {
      mask[static_cast<uint32_t>(id) >> 5] |= uint32_t{1} << (static_cast<uint32_t>(id) & 31);
    }
  }
  if (states_[static_cast<size_t>(state)].accepting) {
    for (TokenId id : vocab_.stop_ids()) {
      mask[static_cast<uint32_t>(id) >> 5] |= uint32_t{1} << (static_cast<uint32_t>(id) & 31);
    }
  }
}

void Automaton::fill_mask(int32_t state, std::span<uint32_t> bitmask) {
  const size_t words = vocab_.mask_words();
  VT_CHECK(bitmask.size() >= words, "token mask: ", bitmask.size(), " words given, ", words,
           " needed");
  if (state < 0) {
    std::fill(bitmask.begin(), bitmask.begin() + static_cast<ptrdiff_t>(words), 0u);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<uint32_t>& mask = cached_mask(canonical(state));
  std::copy(mask.begin(), mask.end(), bitmask.begin());
}

const std::vector<uint32_t>& Automaton::cached_mask(int32_t state) {
  auto it = masks_.find(state);
  if (it == masks_.end()) {
    std::vector<uint32_t> mask;
    compute_mask(state, mask);
    if (mask_bytes_ + mask.size() * 4 > kMaskCacheBytes) {
      masks_.clear();
      only_tokens_.clear();
      local_masks_.clear();
      loop_masks_.clear();
      mask_bytes_ = 0;
    }
    mask_bytes_ += mask.size() * 4;
    it = masks_.emplace(state, std::move(mask)).first;
  }
  return it->second;
}

int32_t Automaton::only_token(int32_t state) {
  if (state < 0) return -1;
  std::lock_guard<std::mutex> lock(mu_);
  state = canonical(state);
  if (auto it = only_tokens_.find(state); it != only_tokens_.end()) return it->second;
  const std::vector<uint32_t>& mask = cached_mask(state);
  int32_t only = -1;
  for (size_t w = 0; w < mask.size(); ++w) {
    if (mask[w] == 0) continue;
    if (only >= 0 || std::popcount(mask[w]) != 1) {
      only = -1;
      break;
    }
    only = int32_t(w * 32 + size_t(std::countr_zero(mask[w])));
  }
  only_tokens_.emplace(state, only);
  return only;
}

size_t Automaton::num_states() {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

size_t Automaton::num_local_masks() {
  std::lock_guard<std::mutex> lock(mu_);
  return local_masks_.size();
}

size_t Automaton::num_cached_masks() {
  std::lock_guard<std::mutex> lock(mu_);
  return masks_.size();
}

}  // namespace vtllm::structured
