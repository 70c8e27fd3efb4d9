// One streamed OpenAI completion request, timed.
//
// POSTs {"model", "prompt", "max_tokens", "temperature": 0, "stream": true,
// "stream_options": {"include_usage": true}, "ignore_eos"} to base_url + endpoint and
// timestamps every SSE event as its bytes arrive.
//
// A token event is a chunk whose choices[0].text is non-empty, or which carries no
// finish_reason (a server may stream a token whose text it holds back until its UTF-8
// completes). A closing chunk with only a finish_reason, and a usage-only chunk, are not
// token events. Output tokens are usage.completion_tokens when the server reports it
// (exact even when one chunk carries several tokens), else the number of token events.
// Cached prompt tokens are usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM,
// vtllm) or the final chunk's timings.cache_n (llama.cpp).
//
// Thread-compatible: one client per thread; it keeps its connection alive between requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/stats.h"
#include "bench/workload.h"

namespace vtllm::bench {

struct CompletionParams {
  std::string base_url = "http://127.0.0.1:8000";  // scheme://host[:port], no path
  std::string endpoint = "/v1/completions";
  std::string model;        // sent as "model"; servers that serve one model ignore it
  int64_t max_tokens = 128;
  bool ignore_eos = true;   // vLLM and llama.cpp extension: generate exactly max_tokens
  std::string api_key;      // sent as a bearer token when not empty
  double timeout_s = 1800;  // read timeout per request
  // Fields merged into every request body (a JSON object, e.g. {"return_token_ids": true}).
  std::string extra_body = "{}";
  bool keep_output = false;  // fill RequestTiming::text and token_ids
};

class CompletionClient {
 public:
  explicit CompletionClient(CompletionParams params);
  ~CompletionClient();
  CompletionClient(const CompletionClient&) = delete;
  CompletionClient& operator=(const CompletionClient&) = delete;

  // Never throws for a server or network failure: the timing comes back with ok = false
  // and the error. Throws vtllm::Error only for a malformed base_url (at construction).
  RequestTiming run(const Prompt& prompt);

  // The JSON body sent for `prompt` (exposed for tests and for --dry-run).
  std::string request_body(const Prompt& prompt) const;

  // POSTs {"prompt": text, "add_special_tokens": false} (vLLM, vtllm) or, with
  // `llama`, {"content": text} (llama.cpp) to /tokenize; throws vtllm::Error on failure.
  std::vector<int32_t> tokenize(const std::string& text, bool llama);

 private:
  struct Impl;
  CompletionParams params_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vtllm::bench
