#include "server/openai_service.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "base/version.h"
#include "server/json_body.h"
#include "server/protocol.h"
#include "server/response.h"

namespace vtllm::server {

using nlohmann::json;

namespace {

HttpReply json_reply(const json& j) {
  return HttpReply{200, "application/json", j.dump(-1, ' ', false, json::error_handler_t::replace)};
}

uint64_t random_u64() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

}  // namespace

HttpReply error_reply(const ApiError& e) {
  return HttpReply{e.status(), "application/json", error_body(e)};
}

OpenAiService::OpenAiService(ServiceConfig config, engine::AsyncEngine& engine,
                             const text::Tokenizer& tokenizer, ChatRenderer chat)
    : config_(std::move(config)),
      engine_(engine),
      tokenizer_(tokenizer),
      chat_(std::move(chat)),
      metrics_(config_.model_name, config_.max_model_len),
      next_id_(random_u64()),
      created_base_(int64_t(std::time(nullptr))) {}

HttpReply OpenAiService::models() const {
  const json model = {{"id", config_.model_name},
                      {"object", "model"},
                      {"created", created_base_},
                      {"owned_by", "vtllm"},
                      {"root", config_.model_root},
                      {"parent", nullptr},
                      {"max_model_len", config_.max_model_len}};
  return json_reply({{"object", "list"}, {"data", json::array({model})}});
}

HttpReply OpenAiService::health() const {
  if (shutting_down_)
    return error_reply(ApiError::unavailable("server is shutting down", "shutting_down"));
  return HttpReply{200, "application/json", ""};
}

HttpReply OpenAiService::version() const { return json_reply({{"version", vtllm::version()}}); }

engine::SchedulerStats OpenAiService::engine_stats() const { return engine_.stats(); }

HttpReply OpenAiService::metrics() const {
  return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8",
                   metrics_.render(engine_.stats())};
}

HttpReply OpenAiService::tokenize(std::string_view body) const {
  try {
    const json j = parse_json_object(body);
    const JsonFields f(j);
    std::vector<int32_t> ids;
    if (f.find("messages")) {
      ids = chat_prompt(parse_chat_completion_request(body)).ids;  // media expanded, as vLLM
    } else {
      const std::optional<std::string> prompt = f.opt_string("prompt");
      if (!prompt)
        throw ApiError::bad_request("prompt", "'prompt' or 'messages' is required",
                                    "missing_field");
      ids = tokenizer_.encode(*prompt, f.opt_bool("add_special_tokens").value_or(true));
    }
    return json_reply({{"count", ids.size()},
                       {"max_model_len", config_.max_model_len},
                       {"tokens", ids},
                       {"token_strs", nullptr}});
  } catch (const ApiError& e) {
    return error_reply(e);
  } catch (const JsonError& e) {
    return error_reply(to_api_error(e));
  }
}

HttpReply OpenAiService::detokenize(std::string_view body) const {
  try {
    const json j = parse_json_object(body);
    const json* tokens = JsonFields(j).find("tokens");
    if (!tokens) throw ApiError::bad_request("tokens", "'tokens' is required", "missing_field");
    if (!tokens->is_array()) {
      throw ApiError::bad_request("tokens", "'tokens' must be an array of token ids",
                                  "invalid_type");
    }
    std::vector<int32_t> ids;
    for (const json& t : *tokens) {
      ids.push_back(
          int32_t(json_int(t, 0, int64_t(tokenizer_.id_end()) - 1, JsonPath("", "tokens"))));
    }
    return json_reply({{"prompt", tokenizer_.decode(ids, false)}});
  } catch (const ApiError& e) {
    return error_reply(e);
  } catch (const JsonError& e) {
    return error_reply(to_api_error(e));
  }
}

OpenAiService::Started OpenAiService::completions(std::string_view body) {
  return generate(false, body);
}

OpenAiService::Started OpenAiService::chat_completions(std::string_view body) {
  return generate(true, body);
}

void OpenAiService::admit(const std::string& model) const {
  if (!model.empty() && model != config_.model_name) {
    throw ApiError::not_found(
        str_cat("the model '", model, "' does not exist (this server serves '", config_.model_name,
                "')"),
        "model_not_found");
  }
  if (shutting_down_) throw ApiError::unavailable("server is shutting down", "shutting_down");
}

int64_t OpenAiService::resolve_max_tokens(bool chat, const std::optional<int64_t>& requested,
                                          int64_t prompt_len, const char* prompt_param) const {
  const int64_t limit = config_.max_model_len;
  if (prompt_len >= limit) {
    throw ApiError::bad_request(
        prompt_param,
        str_cat("this model's maximum context length is ", limit, " tokens, but the prompt has ",
                prompt_len, " tokens; reduce the length of the ", chat ? "messages" : "prompt"),
        "context_length_exceeded");
  }
  const std::optional<int64_t> cap = config_.sampling_defaults.max_tokens;
  if (!requested) {
    const int64_t n = chat ? limit - prompt_len : std::min<int64_t>(16, limit - prompt_len);
    return cap ? std::min(n, *cap) : n;
  }
  if (*requested > limit - prompt_len) {
    throw ApiError::bad_request(
        chat ? "max_completion_tokens" : "max_tokens",
        str_cat("this model's maximum context length is ", limit, " tokens, but ",
                prompt_len + *requested, " were requested (", prompt_len, " in the prompt, ",
                *requested, " in the completion)"),
        "context_length_exceeded");
  }
  return cap ? std::min(*requested, *cap) : *requested;
}

StructuredCompiler& OpenAiService::structured_compiler() {
  std::call_once(compiler_once_, [this] {
    compiler_ = std::make_unique<StructuredCompiler>(tokenizer_, 0, config_.eos_token_ids);
  });
  return *compiler_;
}

void OpenAiService::check_capabilities(const ChatCompletionRequest* chat) const {
  if (!chat) return;
  if (chat->tool_choice == ToolChoice::kAuto &&
      !(config_.enable_auto_tool_choice && config_.tool_call_parser)) {
    throw ApiError::bad_request(
        "tool_choice",
        "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set");
  }
  if ((chat->tool_choice == ToolChoice::kRequired || chat->tool_choice == ToolChoice::kNamed) &&
      !config_.tool_call_parser) {
    throw ApiError::bad_request(
        "tool_choice",
        str_cat("'tool_choice' = ",
                chat->tool_choice == ToolChoice::kRequired ? "'required'" : "a named tool",
                " needs --tool-call-parser (the format of the forced call)"));
  }
}

namespace {

std::vector<MediaRef> media_refs(const ChatCompletionRequest& r) {
  std::vector<MediaRef> refs;
  for (const ChatMessage& m : r.messages)
    for (const ContentPart& p : m.parts)
      if (p.kind != ContentPart::Kind::kText)
        refs.push_back({p.kind == ContentPart::Kind::kImage ? multimodal::MediaKind::kImage
                                                            : multimodal::MediaKind::kVideo,
                        p.url, p.param});
  return refs;
}

bool has_media(const ChatCompletionRequest& r) { return !media_refs(r).empty(); }

}  // namespace

MediaPrompt OpenAiService::chat_prompt(const ChatCompletionRequest& r, std::string* text) const {
  const std::vector<MediaRef> refs = media_refs(r);
  if (refs.empty()) return {render_chat(r, text), nullptr};
  check_media_allowed(config_.media, refs);  // before the template sees the parts
  return prepare_media_prompt(config_.media, refs, render_chat(r, text), tokenizer_);
}

engine::ConstraintFactory OpenAiService::constraint_for(const GenerationRequest& gen,
                                                        const ChatCompletionRequest* chat) {
  // A forced call (required: one or, with parallel_tool_calls, more; named: exactly
  // one) is a grammar in the model's call format; vLLM forces JSON instead.
  if (chat &&
      (chat->tool_choice == ToolChoice::kRequired || chat->tool_choice == ToolChoice::kNamed)) {
    return StructuredCompiler::factory(structured_compiler().compile_tool_call(
        chat->tools, chat->tool_choice_name,
        chat->tool_choice == ToolChoice::kRequired && chat->parallel_tool_calls,
        *config_.tool_call_parser));
  }
  if (gen.structured) {
    StructuredOutput so = *gen.structured;
    if (!so.any_whitespace) so.any_whitespace = !config_.structured_outputs.disable_any_whitespace;
    return StructuredCompiler::factory(structured_compiler().compile(so));
  }
  return {};
}

std::vector<int32_t> OpenAiService::render_chat(const ChatCompletionRequest& r,
                                                std::string* text_out) const {
  if (!chat_) {
    throw ApiError::bad_request("messages", "the model has no chat template (pass --chat-template)",
                                "no_chat_template");
  }
  // Ordered: tool schemas and call arguments keep the client's key order (tojson, items).
  using OJson = nlohmann::ordered_json;
  OJson messages = OJson::array();
  for (const ChatMessage& m : r.messages) {
    OJson jm = {{"role", m.role}, {"content", m.content_null ? OJson() : OJson(m.content)}};
    if (!m.parts.empty()) {  // as the template expects media: {"type": "image"} items
      OJson parts = OJson::array();
      for (const ContentPart& p : m.parts) {
        if (p.kind == ContentPart::Kind::kText)
          parts.push_back({{"type", "text"}, {"text", p.text}});
        else
          parts.push_back({{"type", p.kind == ContentPart::Kind::kImage ? "image" : "video"}});
      }
      jm["content"] = std::move(parts);
    }
    if (!m.name.empty()) jm["name"] = m.name;
    if (!m.tool_calls_json.empty()) jm["tool_calls"] = OJson::parse(m.tool_calls_json);
    if (!m.tool_call_id.empty()) jm["tool_call_id"] = m.tool_call_id;
    if (m.reasoning) {  // vLLM passes both names; templates read either
      jm["reasoning"] = *m.reasoning;
      jm["reasoning_content"] = *m.reasoning;
    }
    messages.push_back(std::move(jm));
  }
  OJson req = {{"messages", std::move(messages)},
               {"add_generation_prompt", r.add_generation_prompt}};
  if (!r.tools_json.empty()) req["tools"] = OJson::parse(r.tools_json);
  if (!r.chat_template_kwargs.empty())
    req["chat_template_kwargs"] = OJson::parse(r.chat_template_kwargs);
  std::string text;
  try {
    text = chat_(req.dump());
  } catch (const vtllm::Error& e) {
    throw ApiError::bad_request("messages", str_cat("chat template: ", e.what()),
                                "chat_template_error");
  }
  if (r.continue_final_message) {
    // The reply continues the last message: cut what the template put after its text.
    const std::string& last = r.messages.back().content;
    const size_t at = last.empty() ? std::string::npos : text.rfind(last);
    if (at != std::string::npos) text.resize(at + last.size());
  }
  if (text_out) *text_out = text;
  // The template already wrote the special tokens (vLLM: add_special_tokens=false for chat).
  return tokenizer_.encode(text, /*add_special_tokens=*/false);
}

OpenAiService::Started OpenAiService::generate(bool chat, std::string_view body) {
  try {
    GenerationSpec spec;
    spec.chat = chat;
    GenerationRequest gen;
    std::optional<CompletionRequest> comp;
    std::optional<ChatCompletionRequest> chat_req;
    const char* prompt_param = chat ? "messages" : "prompt";
    if (chat) {
      chat_req = parse_chat_completion_request(body, config_.sampling_defaults);
      gen = chat_req->gen;
    } else {
      comp = parse_completion_request(body, config_.sampling_defaults);
      gen = comp->gen;
    }
    admit(gen.model);
    check_capabilities(chat ? &*chat_req : nullptr);
    engine::ConstraintFactory constraint = constraint_for(gen, chat ? &*chat_req : nullptr);
    // Count this request before the costly tokenization, so overload is seen early.
    in_flight_->fetch_add(1);
    std::shared_ptr<void> guard(nullptr, [c = in_flight_](void*) { c->fetch_sub(1); });
    if (in_flight_->load() > config_.max_pending_requests) {
      throw ApiError::unavailable(str_cat("server is overloaded: ", config_.max_pending_requests,
                                          " requests are in flight; retry later"),
                                  "overloaded");
    }
    if (chat) {
      if (gen.truncate_prompt_tokens && has_media(*chat_req))
        throw ApiError::bad_request("truncate_prompt_tokens",
                                    "'truncate_prompt_tokens' cannot cut a prompt with images "
                                    "or videos");
      std::string prompt_text;
      MediaPrompt mp = chat_prompt(*chat_req, &prompt_text);
      spec.prompts.push_back(std::move(mp.ids));
      if (mp.mm) spec.mm.push_back(std::move(mp.mm));
      // The reasoning split runs unless the prompt already closed the reasoning
      // (enable_thinking false). A constraint then starts after the reasoning (below);
      // without a </think> token nothing can gate it, and a constrained reply is all
      // content. Tool calls are parsed unless tool_choice is "none".
      if (config_.reasoning_parser && !prompt_ends_reasoning(prompt_text) &&
          (!constraint || reasoning_token_ids(tokenizer_)))
        spec.output.reasoning = config_.reasoning_parser;
      if (chat_req->tool_choice != ToolChoice::kNone) {
        spec.output.tool_calls = config_.tool_call_parser;
        spec.output.tools = chat_req->tools;
      }
    } else {
      for (const Prompt& p : comp->prompts) {
        std::vector<int32_t> ids = p.text ? tokenizer_.encode(*p.text, true) : p.token_ids;
        for (int32_t id : ids) {
          if (size_t(id) >= tokenizer_.id_end()) {
            throw ApiError::bad_request(
                "prompt", str_cat("'prompt' token id ", id, " is outside the vocabulary [0, ",
                                  tokenizer_.id_end(), ")"));
          }
        }
        if (comp->echo) spec.echo.push_back(p.text ? *p.text : tokenizer_.decode(ids, false));
        spec.prompts.push_back(std::move(ids));
      }
    }
    if (const std::optional<int64_t> keep = gen.truncate_prompt_tokens) {
      // vLLM keeps the end of the prompt; -1 means the model's whole context.
      const size_t k = size_t(*keep == -1 ? config_.max_model_len : *keep);
      for (auto& p : spec.prompts)
        if (p.size() > k) p.erase(p.begin(), p.end() - ptrdiff_t(k));
    }
    // vLLM's order: with a reasoning parser, the grammar applies after the reasoning
    // (unless --structured-outputs-config's enable_in_reasoning).
    if (constraint && config_.reasoning_parser && !config_.structured_outputs.enable_in_reasoning) {
      if (const std::optional<ReasoningTokenIds> tags = reasoning_token_ids(tokenizer_))
        constraint = after_reasoning(std::move(constraint), *tags);
    }
    int64_t longest = 0;
    for (const auto& p : spec.prompts) {
      if (p.empty())
        throw ApiError::bad_request(prompt_param, str_cat("'", prompt_param, "' is empty"));
      longest = std::max<int64_t>(longest, int64_t(p.size()));
    }
    const int64_t max_tokens = resolve_max_tokens(chat, gen.max_tokens, longest, prompt_param);
    // echo with max_tokens 0: vLLM samples one token and returns the prompt only.
    spec.echo_only = comp && comp->echo_only;
    spec.params = to_sampling_params(gen, spec.echo_only ? 1 : max_tokens);
    spec.params.constraint = std::move(constraint);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(next_id_.fetch_add(1)));
    spec.header = ResponseHeader{str_cat(chat ? "chatcmpl-" : "cmpl-", hex),
                                 int64_t(std::time(nullptr)), config_.model_name};
    spec.stream = gen.stream;
    spec.return_token_ids = gen.return_token_ids;
    spec.include_usage = gen.stream_options.include_usage;
    std::shared_ptr<Generation> g;
    try {
      g = std::make_shared<Generation>(engine_, tokenizer_, metrics_, std::move(spec),
                                       std::move(guard), &registry_);
    } catch (const ApiError&) {
      throw;
    } catch (const vtllm::Error& e) {
      // The engine refused the params or prompt: the client's fault.
      throw ApiError::bad_request("", e.what());
    }
    return Started{HttpReply{200, gen.stream ? "text/event-stream" : "application/json", ""},
                   std::move(g)};
  } catch (const ApiError& e) {
    return Started{error_reply(e), nullptr};
  }
}

HttpReply OpenAiService::finish(Generation& gen) const {
  try {
    return HttpReply{200, "application/json", gen.run_to_end()};
  } catch (const ApiError& e) {
    return error_reply(e);
  }
}

}  // namespace vtllm::server
