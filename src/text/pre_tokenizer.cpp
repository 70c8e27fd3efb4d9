#include "text/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/byte_level.h"
#include "text/pattern.h"
#include "text/regex.h"

namespace vtllm::text {

namespace {

constexpr int kMaxDepth = 16;

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior parse_behavior(const std::string& s, const JsonPath& at) {
  if (s == "Removed") return Behavior::kRemoved;
  if (s == "Isolated") return Behavior::kIsolated;
  if (s == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::kMergedWithNext;
  if (s == "Contiguous") return Behavior::kContiguous;
  VT_THROW(at.str(), ": unknown split behavior '", s, "'");
}

struct Span {
  size_t start, end;
  bool is_match;
};

// HF NormalizedString::split: the whole string cut at the matches, then the
// delimiters handled as `behavior` says. Appends the kept non-empty parts.
void split_piece(const std::string& s, const Regex& re, bool invert, Behavior behavior,
                 std::vector<Match>& scratch, std::vector<Span>& spans,
                 std::vector<std::string>& out) {
  scratch.clear();
  re.find_all(s, scratch);
  spans.clear();
  size_t prev = 0;
  for (const Match& m : scratch) {
    if (prev != m.start) spans.push_back({prev, m.start, invert});
    spans.push_back({m.start, m.end, !invert});
    prev = m.end;
  }
  if (prev != s.size()) spans.push_back({prev, s.size(), invert});

  auto emit = [&](size_t a, size_t b) {
    if (b > a) out.emplace_back(s, a, b - a);
  };
  switch (behavior) {
    case Behavior::kIsolated:
      for (const Span& sp : spans) emit(sp.start, sp.end);
      return;
    case Behavior::kRemoved:
      for (const Span& sp : spans)
        if (!sp.is_match) emit(sp.start, sp.end);
      return;
    case Behavior::kContiguous:
    case Behavior::kMergedWithPrevious: {
      std::vector<std::pair<size_t, size_t>> acc;
      bool previous_match = false;
      for (const Span& sp : spans) {
        const bool merge = behavior == Behavior::kContiguous ? sp.is_match == previous_match
                                                             : sp.is_match && !previous_match;
        if (merge && !acc.empty()) {
          acc.back().second = sp.end;
        } else {
          acc.emplace_back(sp.start, sp.end);
        }
        previous_match = sp.is_match;
      }
      for (auto [a, b] : acc) emit(a, b);
      return;
    }
    case Behavior::kMergedWithNext: {
      std::vector<std::pair<size_t, size_t>> acc;  // built right to left
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !acc.empty()) {
          acc.back().first = it->start;
        } else {
          acc.emplace_back(it->start, it->end);
        }
        previous_match = it->is_match;
      }
      for (auto it = acc.rbegin(); it != acc.rend(); ++it) emit(it->first, it->second);
      return;
    }
  }
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Regex re, Behavior behavior, bool invert)
      : re_(std::move(re)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    out.reserve(pieces.size() * 2);
    std::vector<Match> scratch;
    std::vector<Span> spans;
    for (const std::string& p : pieces) split_piece(p, re_, invert_, behavior_, scratch, spans, out);
    pieces = std::move(out);
  }

 private:
  Regex re_;
  Behavior behavior_;
  bool invert_;
};

const Regex& gpt2_regex() {
  static const Regex re(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
      Regex::Syntax::kOniguruma, "ByteLevel pre-tokenizer");
  return re;
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(std::vector<std::string>& pieces) const override {
    if (add_prefix_space_) {
      for (std::string& p : pieces)
        if (p.empty() || p[0] != ' ') p.insert(0, " ");
    }
    if (use_regex_) {
      std::vector<std::string> out;
      out.reserve(pieces.size() * 2);
      std::vector<Match> scratch;
      std::vector<Span> spans;
      for (const std::string& p : pieces)
        split_piece(p, gpt2_regex(), false, Behavior::kIsolated, scratch, spans, out);
      pieces = std::move(out);
    }
    std::string mapped;
    for (std::string& p : pieces) {
      mapped.clear();
      byte_level_encode(p, mapped);
      p.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  bool use_regex_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<std::string>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const JsonPath& at, int depth) {
  if (depth > kMaxDepth) VT_THROW(at.str(), ": pre-tokenizers nested deeper than ", kMaxDepth);
  const std::string type = json_type(j, at);
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(
        make_pattern(json_member(j, "pattern", at), at.key("pattern")),
        parse_behavior(json_string(json_member(j, "behavior", at), at.key("behavior")),
                       at.key("behavior")),
        json_bool(json_member(j, "invert", at), at.key("invert")));
  }
  if (type == "ByteLevel") {
    // HF: add_prefix_space and trim_offsets are required, use_regex defaults to true.
    json_bool(json_member(j, "trim_offsets", at), at.key("trim_offsets"));
    return std::make_unique<ByteLevelPreTokenizer>(
        json_bool(json_member(j, "add_prefix_space", at), at.key("add_prefix_space")),
        json_bool_or(j, "use_regex", true, at));
  }
  if (type == "Sequence") {
    const JsonPath list_at = at.key("pretokenizers");
    const Json& list = json_array(json_member(j, "pretokenizers", at), list_at);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_pre_tokenizer(list[i], list_at.index(i), depth + 1));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  VT_THROW(at.str(), ": unsupported pre-tokenizer type '", type, "'");
}

}  // namespace vtllm::text
