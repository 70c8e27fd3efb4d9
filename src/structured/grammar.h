// vtllm::structured grammar IR and the GBNF parser.
//
// The IR is a context-free grammar over BYTES: each rule is a list of
// alternatives, each alternative a sequence of elements, each element a byte
// set or a reference to a rule. Code-point classes (GBNF `[a-z\u00e9]`, `.`,
// regex classes) are expanded into UTF-8 byte sequences when they are added,
// so the IR never sees code points. Repetition and groups are desugared into
// fresh rules by the front ends.
#pragma once

#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vtllm::structured {

// The value of the hex digit c (0-9, a-f, A-F), or -1: the grammar front ends' escapes.
inline int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

using ByteSet = std::bitset<256>;

// One element of an alternative: bytes (one byte from byte_sets[index]) or a
// rule (rules[index]).
struct Element {
  enum class Kind : uint8_t { kBytes, kRule };
  Kind kind = Kind::kBytes;
  int32_t index = 0;
  bool operator==(const Element&) const = default;
};

using Alternative = std::vector<Element>;

struct Rule {
  std::string name;                       // unique within a grammar; desugared rules get "name_N"
  std::vector<Alternative> alternatives;  // none: the rule matches nothing
};

// A code-point range [first, last], both inclusive, within 0..0x10FFFF.
using CodepointRange = std::pair<char32_t, char32_t>;

// A grammar. Values only; copyable. Its language is the set of byte strings
// that rules[root] derives.
struct Grammar {
  std::vector<Rule> rules;
  std::vector<ByteSet> byte_sets;
  int32_t root = -1;

  // Index of the rule named `name`, or -1.
  int32_t find_rule(std::string_view name) const;
  // Appends an empty rule named `name` (made unique with a numeric suffix if
  // taken) and returns its index.
  int32_t add_rule(std::string_view name);
  // Interns `set` in byte_sets and returns the element that matches one byte of it.
  Element bytes(const ByteSet& set);
  // Appends to `seq` the elements that match exactly the bytes of `literal`.
  void append_literal(std::string_view literal, Alternative& seq);
  // A rule matching one UTF-8 encoded code point in the union of `ranges`
  // (complemented within 0..0x10FFFF, surrogates excluded, when `negated`);
  // `hint` names it. Returns the element that references it.
  Element codepoint_class(std::span<const CodepointRange> ranges, bool negated,
                          std::string_view hint);
  // Replaces seq[item_start..] (one item) by `min` to `max` (-1: unbounded)
  // repetitions of it, through fresh rules named after `hint`. Throws
  // vtllm::Error when max < min (and max != -1) or max > 10000.
  void append_repeat(Alternative& seq, size_t item_start, int min, int max, std::string_view hint);
  // GBNF-like text of the grammar, for errors and debugging.
  std::string to_string() const;

 private:
  // Rule index by name, kept by add_rule; rebuilt when rules were appended or
  // renamed directly.
  mutable std::unordered_map<std::string, int32_t> names_;
  void index_names() const;
};

// Parses llama.cpp's GBNF: `name ::= alt | alt`, literals "..." (escapes \n \r
// \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH), classes [a-z...] and [^...], `.`
// (any code point), groups ( ), postfix * + ? {m} {m,} {m,n}, `#` comments. A
// rule ends at a newline outside parentheses (a line may continue after `|`).
// `root_rule` is the start rule. Throws vtllm::Error naming line:column on a
// syntax error, and naming the rule for an undefined reference, a missing
// root, or a rule defined twice.
Grammar parse_gbnf(std::string_view text, std::string_view root_rule = "root");

}  // namespace vtllm::structured
