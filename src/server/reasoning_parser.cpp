#include "server/reasoning_parser.h"

namespace vtllm::server {

namespace {

constexpr std::string_view kThink = "<think>";
constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kFunction = "<function";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t tail_overlap(std::string_view s, std::string_view tag) {
  for (size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k) {
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  }
  return 0;
}

enum class Opener { kNo, kYes, kUndecided };

// Whether the <tool_call> at `a` opens a call: whitespace, then "<function" and one
// of " \t\n\r=" (vLLM's regex <function[\s=]).
Opener tool_call_opens(std::string_view s, size_t a, bool final) {
  size_t w = a + kToolCall.size();
  while (w < s.size() && is_space(s[w])) ++w;
  const std::string_view rest = s.substr(w);
  if (rest.size() > kFunction.size()) {
    const char c = rest[kFunction.size()];
    return rest.starts_with(kFunction) && (c == '=' || is_space(c)) ? Opener::kYes : Opener::kNo;
  }
  if (!final && kFunction.starts_with(rest)) return Opener::kUndecided;
  return Opener::kNo;
}

// The text so far, split: reasoning is s[rb, re), content s[cb, size) when `split`.
struct Split {
  size_t rb = 0, re = 0, cb = 0;
  bool split = false;
};

// `from`: where the search may start (nothing before it can begin a tag still open).
Split split(ReasoningFormat format, std::string_view s, bool final, size_t from) {
  Split out;
  if (s.starts_with(kThink)) {
    out.rb = kThink.size();
  } else if (!final && kThink.starts_with(s)) {
    return out;  // may still become <think>
  }
  const size_t e = s.find(kThinkEnd, std::max(out.rb, from));
  if (e != std::string_view::npos) {
    out.re = e;
    out.cb = e + kThinkEnd.size();
    out.split = true;
    return out;
  }
  size_t held = final ? s.size() : s.size() - tail_overlap(s, kThinkEnd);
  if (format == ReasoningFormat::kQwen3) {
    for (size_t a = s.find(kToolCall, std::max(out.rb, from)); a != std::string_view::npos;
         a = s.find(kToolCall, a + 1)) {
      const Opener o = tool_call_opens(s, a, final);
      if (o == Opener::kNo) continue;
      if (final) {  // the implicit end of the reasoning
        out.re = a;
        out.cb = a;
        out.split = true;
        return out;
      }
      held = std::min(held, a);  // a later </think> would keep it in the reasoning
      break;
    }
    if (!final) held = std::min(held, s.size() - tail_overlap(s, kToolCall));
  }
  out.re = std::max(held, out.rb);
  return out;
}

}  // namespace

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
  if (name == "qwen3") return ReasoningFormat::kQwen3;
  if (name == "deepseek_r1") return ReasoningFormat::kDeepSeekR1;
  return std::nullopt;
}

bool prompt_ends_reasoning(std::string_view prompt) {
  const size_t end = prompt.rfind(kThinkEnd);
  if (end == std::string_view::npos) return false;
  const size_t start = prompt.rfind(kThink);
  return start == std::string_view::npos || end > start;
}

std::optional<ReasoningTokenIds> reasoning_token_ids(const text::Tokenizer& tokenizer) {
  const std::optional<int32_t> end = tokenizer.token_to_id(kThinkEnd);
  if (!end) return std::nullopt;
  return ReasoningTokenIds{tokenizer.token_to_id(kThink), *end};
}

bool prompt_ids_end_reasoning(std::span<const int32_t> ids, const ReasoningTokenIds& tags) {
  for (size_t i = ids.size(); i-- > 0;) {
    if (ids[i] == tags.end) return true;
    if (tags.start && ids[i] == *tags.start) return false;
  }
  return false;
}

ReasoningSplit extract_reasoning(ReasoningFormat format, std::string_view text) {
  const Split sp = split(format, text, true, 0);
  ReasoningSplit out;
  if (sp.re > sp.rb) out.reasoning = std::string(text.substr(sp.rb, sp.re - sp.rb));
  if (sp.split && sp.cb < text.size()) out.content = std::string(text.substr(sp.cb));
  return out;
}

ReasoningDelta StreamingReasoningParser::feed(std::string_view text, bool final) {
  ReasoningDelta out;
  if (finished_) return out;
  finished_ = final;
  if (split_done_) {  // past the split everything is content
    out.content = std::string(text);
    return out;
  }
  buf_ += text;
  // Reasoning already sent holds no start of a tag: the scan resumes where it ends.
  const Split sp = split(format_, buf_, final, scan_from_);
  const size_t r_len = sp.re > sp.rb ? sp.re - sp.rb : 0;
  if (r_len > reasoning_sent_) {
    out.reasoning = buf_.substr(sp.rb + reasoning_sent_, r_len - reasoning_sent_);
    reasoning_sent_ = r_len;
  }
  scan_from_ = sp.rb + reasoning_sent_;
  if (sp.split) {
    out.content = buf_.substr(sp.cb);
    split_done_ = true;
    buf_.clear();
  }
  return out;
}

}  // namespace vtllm::server
