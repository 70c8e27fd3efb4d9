// Reasoning parsers: the model's text -> reasoning (<think>...</think>) and content,
// whole or streaming, for the formats vLLM names qwen3 and deepseek_r1.
//
// Both strip a <think> that opens the output (Qwen3.5's template writes it into the
// prompt instead, so usually only </think> is generated) and split at the first
// </think>: before it reasoning, after it content. Without a </think> the whole
// output is reasoning (truncated thinking), except that qwen3, as vLLM's
// Qwen3ReasoningParser, also ends the reasoning at a <tool_call> that is followed
// (after whitespace) by <function= or <function<space>: Qwen3.5 may call a tool from
// inside its thinking. A </think> anywhere wins over that: a call written inside a
// closed <think>...</think> block stays reasoning and is never a tool call.
// Streaming holds back only what may still change: a tail that could begin </think>
// (or, qwen3, a <tool_call> that could begin a call, until the output ends or a
// </think> shows up); reasoning and content deltas concatenate to the whole-text split.
//
// When the prompt itself already ended the reasoning (prompt_ends_reasoning: the
// template's enable_thinking=false writes "<think>\n\n</think>\n\n"), the output is
// all content and no parser runs, as vLLM's prompt_is_reasoning_end.
//
// The same rule on token ids (prompt_ids_end_reasoning, vLLM's is_reasoning_end) decides
// where a structured-output constraint starts: see after_reasoning in
// structured_constraint.h.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace vtllm::server {

enum class ReasoningFormat { kQwen3, kDeepSeekR1 };

// "qwen3" -> kQwen3, "deepseek_r1" -> kDeepSeekR1; else nullopt.
std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);

// Whether the rendered prompt's last </think> comes after its last <think>.
bool prompt_ends_reasoning(std::string_view prompt);

// The ids of the reasoning tags in a vocabulary (both formats use <think> and </think>).
struct ReasoningTokenIds {
  std::optional<int32_t> start;  // <think>; nullopt when the vocabulary lacks it
  int32_t end = -1;              // </think>
};

// The tags' ids in `tokenizer`; nullopt when it has no </think> token (nothing can then
// end the reasoning token by token).
std::optional<ReasoningTokenIds> reasoning_token_ids(const text::Tokenizer& tokenizer);

// prompt_ends_reasoning on ids: scanning back from the end, an `end` id comes before any
// `start` id.
bool prompt_ids_end_reasoning(std::span<const int32_t> ids, const ReasoningTokenIds& tags);

struct ReasoningSplit {
  std::optional<std::string> reasoning;  // nullopt when empty
  std::optional<std::string> content;    // nullopt when empty
};

ReasoningSplit extract_reasoning(ReasoningFormat format, std::string_view text);

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

// The streaming split of one choice. Not thread-safe; one per choice.
class StreamingReasoningParser {
 public:
  explicit StreamingReasoningParser(ReasoningFormat format) : format_(format) {}
  // Appends `text`; `final` marks the end of the output. Returns what is new.
  ReasoningDelta feed(std::string_view text, bool final);

 private:
  ReasoningFormat format_;
  std::string buf_;
  size_t reasoning_sent_ = 0;  // bytes of the reasoning sent
  size_t scan_from_ = 0;       // where the next tag search starts in buf_
  bool split_done_ = false;    // past the split: text passes through as content
  bool finished_ = false;
};

}  // namespace vtllm::server
