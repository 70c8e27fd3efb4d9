// OpenAiService: what each OpenAI route does, apart from HTTP itself. It turns
// a request body into a reply (or a streaming Generation), with every failure
// as an OpenAI error object; http_server.cpp only moves bytes.
//
// Thread-safe: every method may be called from many server threads at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "engine/async_engine.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/media.h"
#include "server/metrics.h"
#include "server/protocol.h"
#include "server/reasoning_parser.h"
#include "server/structured_constraint.h"
#include "server/tool_parser.h"
#include "text/tokenizer.h"

namespace vtllm::server {

struct ServiceConfig {
  std::string model_name;  // the served name; requests may name it or leave model out
  std::string model_root;  // the model directory, shown as "root" in /v1/models
  int64_t max_model_len = 4096;
  // Generation requests in flight (streaming or not) beyond which new ones get 503.
  int max_pending_requests = 1024;
  // Sampling fields for requests that leave them out (--generation-config).
  SamplingDefaults sampling_defaults;
  // Chat image/video parts: sources, limits, the processor and its pool.
  MediaConfig media;
  // --tool-call-parser (tool calls out of chat replies under tool_choice "auto"),
  // --enable-auto-tool-choice (without it "auto" is a 400, as vLLM), --reasoning-parser.
  std::optional<ToolCallFormat> tool_call_parser;
  bool enable_auto_tool_choice = false;
  std::optional<ReasoningFormat> reasoning_parser;
  // --structured-outputs-config (its reasoning_parser is folded into the one above).
  StructuredOutputsConfig structured_outputs;
  // The ids that end a generation (the engine's EOS), allowed by a grammar where it
  // may end; empty: the tokenizer's EOS.
  std::vector<int32_t> eos_token_ids;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Renders {"messages": [...], "add_generation_prompt": bool} (JSON) into the prompt text.
using ChatRenderer = std::function<std::string(const std::string& request_json)>;

class OpenAiService {
 public:
  // `engine` and `tokenizer` must outlive the service. An empty `chat` makes
  // chat requests a 400 (the model has no chat template).
  OpenAiService(ServiceConfig config, engine::AsyncEngine& engine, const text::Tokenizer& tokenizer,
                ChatRenderer chat);

  HttpReply models() const;
  HttpReply health() const;
  HttpReply version() const;
  HttpReply metrics() const;
  // The counters behind /metrics and the engine's gauges now (the periodic stats line).
  const ServerMetrics& server_metrics() const { return metrics_; }
  engine::SchedulerStats engine_stats() const;
  HttpReply tokenize(std::string_view body) const;
  HttpReply detokenize(std::string_view body) const;

  // A generation route's answer: an error reply, or (`gen` set) the request
  // running in the engine. The caller then either sends gen's SSE frames
  // (gen->streaming()) or calls finish(*gen) for the whole reply; it may
  // gen->cancel() from another thread meanwhile (the client went away).
  struct Started {
    HttpReply reply;
    std::shared_ptr<Generation> gen;
  };
  Started completions(std::string_view body);
  Started chat_completions(std::string_view body);
  // Waits for a non-streaming generation to end; its reply, or the error reply.
  HttpReply finish(Generation& gen) const;

  // From now on generation requests get 503; those in flight continue.
  void begin_shutdown() { shutting_down_ = true; }
  // Cancels every generation still running with `why` (the drain's deadline);
  // returns how many there were.
  int end_in_flight(const ApiError& why) { return registry_.cancel_all(why); }
  // Generation requests in flight (their Generation objects alive).
  int in_flight() const { return in_flight_->load(); }
  const ServiceConfig& config() const { return config_; }

 private:
  Started generate(bool chat, std::string_view body);
  void admit(const std::string& model) const;
  int64_t resolve_max_tokens(bool chat, const std::optional<int64_t>& requested, int64_t prompt_len,
                             const char* prompt_param) const;
  // The prompt's ids; `text`, when given, receives the rendered prompt.
  std::vector<int32_t> render_chat(const ChatCompletionRequest& r,
                                   std::string* text = nullptr) const;
  // The chat's prompt as the engine sees it: ids with every image and video
  // expanded, and their inputs (mm null without media). A bad medium is a 400.
  MediaPrompt chat_prompt(const ChatCompletionRequest& r, std::string* text = nullptr) const;
  // 400 for tool_choice "auto" without the flags, or a forced call without a parser.
  void check_capabilities(const ChatCompletionRequest* chat) const;
  // The request's constraint (structured outputs, a forced tool call) compiled to a
  // per-sample factory; empty when unconstrained. A bad schema is a 400 naming it.
  engine::ConstraintFactory constraint_for(const GenerationRequest& gen,
                                           const ChatCompletionRequest* chat);
  // Built on the first constrained request (the vocabulary's byte trie).
  StructuredCompiler& structured_compiler();

  ServiceConfig config_;
  engine::AsyncEngine& engine_;
  const text::Tokenizer& tokenizer_;
  ChatRenderer chat_;
  mutable ServerMetrics metrics_;
  GenerationRegistry registry_;
  std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<bool> shutting_down_{false};
  std::once_flag compiler_once_;
  std::unique_ptr<StructuredCompiler> compiler_;
  std::atomic<uint64_t> next_id_{0};
  int64_t created_base_;
};

// The reply for a failure.
HttpReply error_reply(const ApiError& e);

}  // namespace vtllm::server
