#include "engine/mask_worker.h"

#include <utility>

#include "base/error.h"

namespace vtllm::engine {

MaskWorker::~MaskWorker() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !has_job_; });
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MaskWorker::start(std::function<void()> job) {
  VT_CHECK(!pending_, "mask worker: a job was started before the previous one was waited for");
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  {
    std::lock_guard lock(mu_);
    job_ = std::move(job);
    error_ = nullptr;
    has_job_ = true;
  }
  pending_ = true;
  cv_.notify_all();
}

void MaskWorker::wait() {
  if (!pending_) return;
  std::exception_ptr error;
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !has_job_; });
    error = std::exchange(error_, nullptr);
  }
  pending_ = false;
  if (error) std::rethrow_exception(error);
}

void MaskWorker::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return has_job_ || stop_; });
    if (!has_job_) return;  // stop_ with nothing left
    std::function<void()> job = std::move(job_);
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    has_job_ = false;
    cv_.notify_all();
  }
}

}  // namespace vtllm::engine
