#include "server/worker_pool.h"

#include <utility>

#include "base/error.h"

namespace vtllm::server {

WorkerPool::WorkerPool(int max_threads, std::chrono::milliseconds idle_exit)
    : max_threads_(max_threads), idle_exit_(idle_exit) {
  VT_CHECK(max_threads > 0, "worker pool: max_threads ", max_threads, " must be > 0");
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::submit(std::function<void()> task) {
  std::vector<std::thread> reap;
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    queue_.push_back(std::move(task));
    for (const std::thread::id id : exited_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      reap.push_back(std::move(it->second));
      threads_.erase(it);
    }
    exited_.clear();
    // Idle threads take queued tasks; start one more when they are all spoken for.
    if (queue_.size() > size_t(idle_) && alive_ < max_threads_) {
      ++alive_;
      std::thread t([this] { run(); });
      const std::thread::id id = t.get_id();
      threads_.emplace(id, std::move(t));
    } else {
      work_.notify_one();
    }
  }
  for (std::thread& t : reap) t.join();
}

void WorkerPool::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      ++idle_;
      const bool woke = work_.wait_for(lock, idle_exit_, [&] { return stop_ || !queue_.empty(); });
      --idle_;
      if (!woke || queue_.empty()) break;  // idle too long, or stopping with nothing queued
    }
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // whatever it holds is released outside the lock
    lock.lock();
  }
  --alive_;
  exited_.push_back(std::this_thread::get_id());
}

void WorkerPool::stop() {
  std::map<std::thread::id, std::thread> all;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    all.swap(threads_);
    exited_.clear();
  }
  work_.notify_all();
  for (auto& [id, t] : all) t.join();
}

int WorkerPool::threads() const {
  std::lock_guard lock(mu_);
  return alive_;
}

}  // namespace vtllm::server
