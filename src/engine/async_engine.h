// AsyncEngine: LlmEngine on its own thread, with a stream of outputs per request.
//
// add_request() validates synchronously (throws naming the field) and returns
// a RequestStream; the engine thread steps while any request is unfinished
// and sleeps otherwise. abort(id), or dropping every reference to a request's
// stream (a client that went away), frees its blocks at the next step; an
// aborted stream ends with an output whose finish_reason is kAbort.
// Thread-safe: every public method may be called from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/llm_engine.h"

namespace vtllm::engine {

class RequestStream {
 public:
  // Blocks until an output arrives; nullopt once the stream has ended and
  // everything was read. For n > 1 the samples' outputs interleave (see index).
  std::optional<EngineOutput> next();
  // Set when the engine refused the request after accepting it (e.g. a duplicate id).
  std::optional<std::string> error() const;

 private:
  friend class AsyncEngine;
  void push(EngineOutput o);
  void close(std::optional<std::string> error = std::nullopt);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineOutput> queue_;
  bool closed_ = false;
  std::optional<std::string> error_;
};

class AsyncEngine {
 public:
  // `tokenizer` as LlmEngine's: null means no text and no stop strings.
  AsyncEngine(const EngineConfig& config, std::unique_ptr<ModelExecutor> executor,
              const text::Tokenizer* tokenizer = nullptr);
  ~AsyncEngine();  // stops the thread; open streams end as aborted

  // `mm` as LlmEngine::add_request's (its errors end the stream).
  std::shared_ptr<RequestStream> add_request(const std::string& id, std::vector<int32_t> prompt,
                                             const SamplingParams& params, int priority = 0,
                                             std::shared_ptr<const MultimodalPrompt> mm = nullptr);
  void abort(const std::string& id);

  // Blocks until the engine thread has nothing queued and no request is unfinished.
  void wait_idle();
  // As of the end of the engine thread's last iteration.
  SchedulerStats stats();

 private:
  struct Pending {
    std::string id;
    std::vector<int32_t> prompt;
    SamplingParams params;
    int priority;
    std::shared_ptr<RequestStream> stream;
    std::shared_ptr<const MultimodalPrompt> mm;
  };
  struct Live {
    std::weak_ptr<RequestStream> stream;
    int samples_left;
  };

  void loop();
  void end_aborted(const std::string& id, Live& live);

  int64_t vocab_size_;
  const text::Tokenizer* tokenizer_;  // bad_words are tokenized in add_request
  LlmEngine engine_;  // touched only by the engine thread
  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::vector<Pending> adds_;
  std::vector<std::string> aborts_;
  bool stop_ = false;
  bool busy_ = false;
  SchedulerStats stats_;
  std::unordered_map<std::string, Live> live_;  // engine thread only
  std::thread thread_;
};

}  // namespace vtllm::engine
