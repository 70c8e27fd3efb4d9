// Generation: one /v1/completions or /v1/chat/completions request while the
// engine runs it: its engine requests (one per prompt, each with n samples),
// the choices they build (choice index = prompt * n + sample), the metrics they
// feed, and the response, whole or as server-sent events.
//
// cancel() (a client that went away, the drain's deadline) or destroying a
// Generation before it finished aborts its engine requests; the engine frees
// their blocks at its next step, and each aborted request counts once in the
// abort counter. One thread at a time uses a Generation; cancel() may come from
// any thread meanwhile.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/async_engine.h"
#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/metrics.h"
#include "server/response.h"
#include "text/tokenizer.h"

namespace vtllm::server {

struct GenerationSpec {
  bool chat = false;
  ResponseHeader header;
  std::vector<std::vector<int32_t>> prompts;
  // Per prompt (or empty): its vision items and MRoPE positions (null: text only).
  std::vector<std::shared_ptr<const engine::MultimodalPrompt>> mm;
  std::vector<std::string> echo;  // completions' echo: text put before each prompt's choices
  // echo with max_tokens 0: each choice is the echoed prompt only (its text, and with
  // logprobs its logprobs); the one sampled token is dropped.
  bool echo_only = false;
  engine::SamplingParams params;  // n and max_tokens resolved
  bool stream = false;
  bool include_usage = false;
  bool return_token_ids = false;  // vLLM's: token ids in the response
  // Chat: how each choice's text splits into reasoning, content and tool calls (none
  // set: the text is the content).
  ChatOutputConfig output;
};

class Generation;

// The Generations alive, so a drain can end those still running at its deadline.
// Thread-safe.
class GenerationRegistry {
 public:
  void add(Generation* g);
  void remove(Generation* g);
  // cancel(why) on every Generation alive; returns how many there were.
  int cancel_all(const ApiError& why);

 private:
  std::mutex mu_;
  std::unordered_set<Generation*> live_;
};

class Generation {
 public:
  // Submits every prompt. Throws vtllm::Error when the engine refuses one (the
  // ones already submitted are aborted). `guard` is released on destruction
  // (the server counts requests in flight with it). `registry`, when given,
  // holds this Generation while it lives and must outlive it.
  Generation(engine::AsyncEngine& engine, const text::Tokenizer& tokenizer, ServerMetrics& metrics,
             GenerationSpec spec, std::shared_ptr<void> guard = nullptr,
             GenerationRegistry* registry = nullptr);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Streaming: blocks until the engine produced more, appends the SSE frames to
  // `out`; returns false once the last frames ("data: [DONE]") were appended.
  bool next_frames(std::string& out);
  // Whole response: waits for every choice to finish and returns the JSON body.
  // Throws ApiError 500 when the engine failed the request, and `why` when
  // cancel(why) ended it.
  std::string run_to_end();
  // Ends the request at the engine's next step; next_frames() and run_to_end()
  // return soon after. `why` is what the client is told: an SSE error event
  // before [DONE], or the error run_to_end() throws; none for a client that left.
  // Thread-safe; later calls after the first do nothing.
  void cancel(std::optional<ApiError> why = std::nullopt);
  // Whether the request asked for a stream.
  bool streaming() const { return spec_.stream; }

 private:
  struct ChoiceState {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    std::vector<int32_t> token_ids;
    std::string finish_reason;
    std::optional<int32_t> stop_token;  // what ended it (stop_reason)
    std::string stop_string;
    size_t text_sent = 0;  // bytes streamed so far (completions' text_offset)
    int64_t num_tokens = 0;
    std::chrono::steady_clock::time_point first_token, last_token;
    std::optional<std::chrono::steady_clock::time_point> first_scheduled;  // by the engine
    bool started = false;
    bool prompt_sent = false;  // return_token_ids: the streamed prompt ids
    std::optional<StreamingChatOutputParser> parser;  // streaming with spec.output set
  };

  // Folds one engine output of prompt p into its choice; returns the delta.
  Choice absorb(size_t p, const engine::EngineOutput& o);
  std::string token_text(int32_t id) const;
  // prompt_logprobs of prompt p as the response writes them (null when not asked for).
  std::optional<std::vector<PromptPositionLogprobs>> prompt_logprobs_of(size_t p) const;
  // The echoed prompt p's tokens as completions' logprobs: the first without a logprob,
  // each with its top `logprobs` alternatives.
  std::vector<TokenLogprob> echo_logprobs(size_t p) const;
  // Whether prompt p's prompt logprobs arrived (one per prompt token).
  bool have_prompt_logprobs(size_t p) const;
  Usage usage() const;

  // The error cancel() was given, if any.
  std::optional<ApiError> cancel_reason() const;

  engine::AsyncEngine& engine_;
  const text::Tokenizer& tokenizer_;
  ServerMetrics& metrics_;
  GenerationSpec spec_;
  std::shared_ptr<void> guard_;
  GenerationRegistry* registry_;
  mutable std::mutex cancel_mu_;
  bool cancelled_ = false;
  std::optional<ApiError> cancel_why_;
  std::chrono::steady_clock::time_point arrival_;
  std::vector<std::string> engine_ids_;
  std::vector<std::shared_ptr<engine::RequestStream>> streams_;
  std::vector<bool> stream_done_;
  std::vector<int64_t> cached_tokens_;
  // Per prompt: the engine's prompt_logprobs (sample 0's first output carries them).
  std::vector<std::vector<std::optional<engine::SampleResult>>> prompt_lps_;
  std::vector<int> samples_finished_;  // per prompt: samples whose last output came
  std::vector<ChoiceState> choices_;
  size_t current_ = 0;  // the prompt being streamed
  bool roles_sent_ = false;
  bool finished_ = false;
  bool saw_abort_ = false;  // an engine request ended as aborted
  int64_t completion_tokens_ = 0;
};

}  // namespace vtllm::server
