#include "engine/async_engine.h"

#include "base/error.h"

namespace vtllm::engine {

std::optional<EngineOutput> RequestStream::next() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return std::nullopt;
  EngineOutput o = std::move(queue_.front());
  queue_.pop_front();
  return o;
}

std::optional<std::string> RequestStream::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void RequestStream::push(EngineOutput o) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(o));
  }
  cv_.notify_all();
}

void RequestStream::close(std::optional<std::string> error) {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    if (error) error_ = std::move(error);
  }
  cv_.notify_all();
}

namespace {
int64_t vocab_of(const std::unique_ptr<ModelExecutor>& e) {
  VT_CHECK(e != nullptr, "async engine: no model executor");
  return e->vocab_size();
}
}  // namespace

AsyncEngine::AsyncEngine(const EngineConfig& config, std::unique_ptr<ModelExecutor> executor,
                         const text::Tokenizer* tokenizer)
    : vocab_size_(vocab_of(executor)),
      tokenizer_(tokenizer),
      engine_(config, std::move(executor), tokenizer),
      thread_([this] { loop(); }) {}

AsyncEngine::~AsyncEngine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<RequestStream> AsyncEngine::add_request(
    const std::string& id, std::vector<int32_t> prompt, const SamplingParams& params, int priority,
    std::shared_ptr<const MultimodalPrompt> mm) {
  SamplingParams resolved;
  try {
    resolved = resolve_bad_words(params, tokenizer_);  // here: its errors are the caller's
    resolved.validate(vocab_size_);
  } catch (const Error& e) {
    VT_THROW("request '", id, "': ", e.what());
  }
  auto stream = std::make_shared<RequestStream>();
  {
    std::lock_guard lock(mu_);
    VT_CHECK(!stop_, "async engine: add_request('", id, "') after shutdown");
    adds_.push_back({id, std::move(prompt), std::move(resolved), priority, stream, std::move(mm)});
  }
  wake_.notify_all();
  return stream;
}

void AsyncEngine::abort(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    aborts_.push_back(id);
  }
  wake_.notify_all();
}

void AsyncEngine::wait_idle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return adds_.empty() && aborts_.empty() && !busy_; });
}

SchedulerStats AsyncEngine::stats() {
  std::lock_guard lock(mu_);
  return stats_;
}

void AsyncEngine::end_aborted(const std::string& id, Live& live) {
  engine_.abort(id);
  if (auto s = live.stream.lock()) {
    EngineOutput o;
    o.request_id = id;
    o.finished = true;
    o.finish_reason = FinishReason::kAbort;
    s->push(std::move(o));
    s->close();
  }
}

void AsyncEngine::loop() {
  for (;;) {
    std::vector<Pending> adds;
    std::vector<std::string> aborts;
    {
      std::unique_lock lock(mu_);
      stats_ = engine_.stats();  // the engine thread is between steps here
      busy_ = false;
      idle_.notify_all();
      wake_.wait(lock, [&] {
        return stop_ || !adds_.empty() || !aborts_.empty() || engine_.has_unfinished();
      });
      if (stop_) break;
      adds.swap(adds_);
      aborts.swap(aborts_);
      busy_ = true;
    }
    for (Pending& p : adds) {
      try {
        engine_.add_request(p.id, std::move(p.prompt), p.params, p.priority, std::move(p.mm));
        live_[p.id] = Live{p.stream, p.params.n};
      } catch (const Error& e) {
        p.stream->close(e.what());
      }
    }
    // Explicit aborts, and requests whose every stream reference is gone.
    for (auto it = live_.begin(); it != live_.end(); ++it)
      if (it->second.stream.expired()) aborts.push_back(it->first);
    for (const std::string& id : aborts) {
      auto it = live_.find(id);
      if (it == live_.end()) continue;
      end_aborted(id, it->second);
      live_.erase(it);
    }
    if (!engine_.has_unfinished()) continue;
    for (EngineOutput& o : engine_.step()) {
      auto it = live_.find(o.request_id);
      if (it == live_.end()) continue;
      const bool last = o.finished && --it->second.samples_left == 0;
      if (auto s = it->second.stream.lock()) {
        s->push(std::move(o));
        if (last) s->close();
      }
      if (last) live_.erase(it);
    }
  }
  for (auto& [id, live] : live_) end_aborted(id, live);
  live_.clear();
  for (Pending& p : adds_) p.stream->close("the engine shut down");
}

}  // namespace vtllm::engine
