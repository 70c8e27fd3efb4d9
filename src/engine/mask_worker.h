// MaskWorker: one background thread that runs a step's constraint-mask job while the
// engine thread runs that step's forward pass (the job fills the constrained rows'
// bitmasks; vt::sample reads them after wait()). One job at a time; the thread starts
// with the first job. start() and wait() are called by one thread (the engine's).
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace vtllm::engine {

class MaskWorker {
 public:
  MaskWorker() = default;
  MaskWorker(const MaskWorker&) = delete;
  MaskWorker& operator=(const MaskWorker&) = delete;
  ~MaskWorker();  // waits for a running job, then joins

  // Runs `job` on the worker thread. A previous job must have been waited for.
  void start(std::function<void()> job);
  // Blocks until the job started last is done and rethrows what it threw; returns at
  // once when there is none.
  void wait();
  bool busy() const { return pending_; }

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool has_job_ = false, stop_ = false;
  bool pending_ = false;  // started and not yet waited for (the caller's thread only)
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace vtllm::engine
