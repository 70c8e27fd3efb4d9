#include "server/chat_output.h"

namespace vtllm::server {

ChatOutput parse_chat_output(const ChatOutputConfig& config, std::string_view text) {
  ChatOutput out;
  std::optional<std::string> content = std::string(text);
  if (config.reasoning) {
    ReasoningSplit rs = extract_reasoning(*config.reasoning, text);
    out.reasoning = std::move(rs.reasoning);
    content = std::move(rs.content);
  }
  if (config.tool_calls && content) {
    ExtractedToolCalls tc = extract_tool_calls(*config.tool_calls, *content, config.tools);
    content = std::move(tc.content);
    out.tool_calls = std::move(tc.calls);
  }
  // An empty content is "" when nothing else came, as a plain reply would show it.
  if (!content && !out.reasoning && out.tool_calls.empty()) content = "";
  out.content = std::move(content);
  return out;
}

StreamingChatOutputParser::StreamingChatOutputParser(const ChatOutputConfig& config) {
  if (config.reasoning) reasoning_.emplace(*config.reasoning);
  if (config.tool_calls) tools_.emplace(*config.tool_calls, config.tools);
}

ChatOutputDelta StreamingChatOutputParser::feed(std::string_view text, bool final) {
  ChatOutputDelta out;
  std::string content(text);
  if (reasoning_) {
    ReasoningDelta rd = reasoning_->feed(text, final);
    out.reasoning = std::move(rd.reasoning);
    content = std::move(rd.content);
  }
  if (tools_) {
    ToolStreamDelta td = tools_->feed(content, final);
    out.content = std::move(td.content);
    out.tool_calls = std::move(td.calls);
  } else {
    out.content = std::move(content);
  }
  return out;
}

}  // namespace vtllm::server
