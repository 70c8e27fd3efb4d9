// A chat choice's text -> what the response carries: reasoning, content and tool
// calls, whole or as streaming deltas. The reasoning parser (when the server has one
// and the prompt left the reasoning open) splits first; the tool parser (when the
// request's tools are parsed) then reads only the content, so a call inside the
// reasoning is never a call. Streaming deltas concatenate to the whole-text result.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/reasoning_parser.h"
#include "server/tool_parser.h"

namespace vtllm::server {

struct ChatOutputConfig {
  std::optional<ReasoningFormat> reasoning;  // nullopt: no reasoning split
  std::optional<ToolCallFormat> tool_calls;  // nullopt: no tool-call parsing
  std::vector<ToolFunction> tools;           // the request's tools (parameter types)
  bool any() const { return reasoning || tool_calls; }
};

struct ChatOutput {
  std::optional<std::string> reasoning;
  std::optional<std::string> content;  // nullopt: null in the message
  std::vector<ToolCall> tool_calls;
};

ChatOutput parse_chat_output(const ChatOutputConfig& config, std::string_view text);

struct ChatOutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// One choice's streaming parse. Not thread-safe.
class StreamingChatOutputParser {
 public:
  // `config` must outlive the parser.
  explicit StreamingChatOutputParser(const ChatOutputConfig& config);
  ChatOutputDelta feed(std::string_view text, bool final);
  // Whether a tool call was emitted.
  bool called() const { return tools_ && tools_->called(); }

 private:
  std::optional<StreamingReasoningParser> reasoning_;
  std::optional<StreamingToolParser> tools_;
};

}  // namespace vtllm::server
