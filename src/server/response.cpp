#include "server/response.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace vtllm::server {

// Insertion-ordered objects: keys come out in vLLM's order (prompt_logprobs: the prompt
// token first, then its top-N).
using json = nlohmann::ordered_json;

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

double json_logprob(float lp) { return std::isfinite(lp) ? double(lp) : -9999.0; }

json finish(const std::string& reason) { return reason.empty() ? json() : json(reason); }

json usage_json(const Usage& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

// The bytes of a token string, as the chat logprobs carry them.
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
json chat_logprobs(const Choice& c) {
  if (!c.has_logprobs) return json();
  json content = json::array();
  for (const TokenLogprob& t : c.logprobs) {
    json top = json::array();
    for (const TopLogprob& a : t.top) {
      top.push_back(
          {{"token", a.token}, {"logprob", json_logprob(a.logprob)}, {"bytes", bytes_of(a.token)}});
    }
    content.push_back({{"token", t.token},
                       {"logprob", json_logprob(t.logprob)},
                       {"bytes", bytes_of(t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

// Completions (legacy): parallel arrays; top_logprobs maps token -> logprob and
// includes the sampled token, as vLLM's do.
json completion_logprobs(const Choice& c) {
  if (!c.has_logprobs) return json();
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  size_t offset = c.text_offset;
  for (const TokenLogprob& t : c.logprobs) {
    tokens.push_back(t.token);
    offsets.push_back(offset);
    offset += t.token.size();
    if (t.none) {
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
      continue;
    }
    token_logprobs.push_back(json_logprob(t.logprob));
    json alts = json::object();
    for (const TopLogprob& a : t.top) alts[a.token] = json_logprob(a.logprob);
    alts[t.token] = json_logprob(t.logprob);
    top.push_back(std::move(alts));
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

// vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank", "decoded_token"}, ...}, ...].
json prompt_logprobs_json(const std::optional<std::vector<PromptPositionLogprobs>>& plp) {
  if (!plp) return nullptr;
  json out = json::array();
  for (const PromptPositionLogprobs& pos : *plp) {
    if (!pos) {
      out.push_back(nullptr);
      continue;
    }
    json d = json::object();
    for (const RankedLogprob& r : *pos) {
      const std::string key = std::to_string(r.token_id);
      if (d.contains(key)) continue;
      d[key] = {{"logprob", json_logprob(r.logprob)},
                {"rank", r.rank},
                {"decoded_token", r.decoded_token}};
    }
    out.push_back(std::move(d));
  }
  return out;
}

json head(const ResponseHeader& h, const char* object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

// A whole response's message: content (null when content_null), the reasoning under
// both names, and the tool calls.
json chat_message(const Choice& c) {
  json m = {{"role", "assistant"}, {"content", c.content_null ? json() : json(c.text)}};
  if (c.reasoning) {
    m["reasoning"] = *c.reasoning;
    m["reasoning_content"] = *c.reasoning;
  }
  if (!c.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallDelta& t : c.tool_calls) {
      calls.push_back({{"id", t.id},
                       {"type", "function"},
                       {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
    }
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

json stop_reason(const Choice& c) {
  if (c.stop_token) return *c.stop_token;
  if (!c.stop_string.empty()) return c.stop_string;
  return nullptr;
}

}  // namespace

std::string completion_response(const ResponseHeader& h, const std::vector<Choice>& choices,
                                const Usage& usage) {
  json j = head(h, "text_completion");
  json cs = json::array();
  for (const Choice& c : choices) {
    cs.push_back({{"index", c.index},
                  {"text", c.text},
                  {"logprobs", completion_logprobs(c)},
                  {"finish_reason", finish(c.finish_reason)},
                  {"stop_reason", stop_reason(c)},
                  {"prompt_logprobs", prompt_logprobs_json(c.prompt_logprobs)}});
    if (c.prompt_token_ids) cs.back()["prompt_token_ids"] = *c.prompt_token_ids;
    if (c.token_ids) cs.back()["token_ids"] = *c.token_ids;
  }
  j["choices"] = std::move(cs);
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string chat_completion_response(const ResponseHeader& h, const std::vector<Choice>& choices,
                                     const Usage& usage) {
  json j = head(h, "chat.completion");
  json cs = json::array();
  for (const Choice& c : choices) {
    cs.push_back({{"index", c.index},
                  {"message", chat_message(c)},
                  {"logprobs", chat_logprobs(c)},
                  {"finish_reason", finish(c.finish_reason)},
                  {"stop_reason", stop_reason(c)}});
    if (c.token_ids) cs.back()["token_ids"] = *c.token_ids;
  }
  j["choices"] = std::move(cs);
  j["usage"] = usage_json(usage);
  if (!choices.empty() && choices.front().prompt_token_ids)
    j["prompt_token_ids"] = *choices.front().prompt_token_ids;
  j["prompt_logprobs"] =
      prompt_logprobs_json(choices.empty() ? std::nullopt : choices.front().prompt_logprobs);
  return dump(j);
}

std::string completion_chunk(const ResponseHeader& h, const Choice& c, bool with_usage) {
  json j = head(h, "text_completion");
  j["choices"] = json::array({{{"index", c.index},
                               {"text", c.text},
                               {"logprobs", completion_logprobs(c)},
                               {"finish_reason", finish(c.finish_reason)},
                               {"stop_reason", stop_reason(c)}}});
  if (c.prompt_token_ids) j["choices"][0]["prompt_token_ids"] = *c.prompt_token_ids;
  if (c.token_ids) j["choices"][0]["token_ids"] = *c.token_ids;
  if (with_usage) j["usage"] = nullptr;
  return dump(j);
}

std::string chat_role_chunk(const ResponseHeader& h, int index, bool with_usage,
                            const std::vector<int32_t>* prompt_token_ids) {
  json j = head(h, "chat.completion.chunk");
  if (prompt_token_ids) j["prompt_token_ids"] = *prompt_token_ids;
  j["choices"] = json::array({{{"index", index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr},
                               {"stop_reason", nullptr}}});
  if (with_usage) j["usage"] = nullptr;
  return dump(j);
}

std::string chat_chunk(const ResponseHeader& h, const Choice& c, bool with_usage) {
  json j = head(h, "chat.completion.chunk");
  json delta = json::object();
  if (!c.text.empty()) delta["content"] = c.text;
  if (c.reasoning && !c.reasoning->empty()) {
    delta["reasoning"] = *c.reasoning;
    delta["reasoning_content"] = *c.reasoning;
  }
  if (!c.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallDelta& t : c.tool_calls) {
      json call = {{"index", t.index}};
      json fn = json::object();
      if (!t.id.empty()) {
        call["id"] = t.id;
        call["type"] = "function";
      }
      if (!t.name.empty()) fn["name"] = t.name;
      fn["arguments"] = t.arguments;
      call["function"] = std::move(fn);
      calls.push_back(std::move(call));
    }
    delta["tool_calls"] = std::move(calls);
  }
  j["choices"] = json::array({{{"index", c.index},
                               {"delta", std::move(delta)},
                               {"logprobs", chat_logprobs(c)},
                               {"finish_reason", finish(c.finish_reason)},
                               {"stop_reason", stop_reason(c)}}});
  if (c.token_ids) j["choices"][0]["token_ids"] = *c.token_ids;
  if (with_usage) j["usage"] = nullptr;
  return dump(j);
}

std::string usage_chunk(const ResponseHeader& h, bool chat, const Usage& usage) {
  json j = head(h, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string sse_event(std::string_view json_text) {
  std::string s;
  s.reserve(json_text.size() + 8);
  s += "data: ";
  s += json_text;
  s += "\n\n";
  return s;
}

std::string error_body(const ApiError& e) {
  const json j = {{"error",
                   {{"message", e.what()},
                    {"type", e.type()},
                    {"param", e.param().empty() ? json() : json(e.param())},
                    {"code", e.code().empty() ? json() : json(e.code())}}}};
  return dump(j);
}

}  // namespace vtllm::server
