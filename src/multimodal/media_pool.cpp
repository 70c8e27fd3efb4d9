#include "multimodal/media_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "base/error.h"

namespace vtllm::multimodal {

MediaPool::MediaPool(int threads) {
  VT_CHECK(threads >= 1, "media pool: ", threads, " threads, expected >= 1");
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

MediaPool::~MediaPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int MediaPool::default_size() {
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp(int(hw), 1, 8);
}

std::future<std::shared_ptr<const VisionInput>> MediaPool::submit(Job job) {
  auto task = std::make_shared<std::packaged_task<std::shared_ptr<const VisionInput>()>>(
      [job = std::move(job)] { return std::make_shared<const VisionInput>(job()); });
  auto fut = task->get_future();
  {
    std::lock_guard lock(mu_);
    VT_CHECK(!stop_, "media pool: submit after shutdown");
    queue_.push_back([task] { (*task)(); });  // a throwing job stores its exception
  }
  wake_.notify_one();
  return fut;
}

namespace {

// One loop's state, shared by its caller and its helpers (a helper that starts after
// every index was claimed only reads `next`).
struct Loop {
  int64_t n = 0;
  const std::function<void(int64_t)>* body = nullptr;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::condition_variable done_cv;
  int64_t done = 0;  // under mu
  std::exception_ptr error;

  // Claims and runs indices until none is left.
  void work() {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      std::exception_ptr e;
      if (!failed.load()) {
        try {
          (*body)(i);
        } catch (...) {
          e = std::current_exception();
          failed = true;
        }
      }
      std::lock_guard lock(mu);
      if (e && !error) error = e;
      if (++done == n) done_cv.notify_all();
    }
  }
};

}  // namespace

ParallelFor MediaPool::parallel_for() {
  return [this](int64_t n, const std::function<void(int64_t)>& body) {
    if (n <= 0) return;
    auto loop = std::make_shared<Loop>();
    loop->n = n;
    loop->body = &body;
    const int64_t helpers = std::min<int64_t>(n, int64_t(threads_.size())) - 1;
    if (helpers > 0) {
      {
        std::lock_guard lock(mu_);
        for (int64_t h = 0; h < helpers; ++h) queue_.push_front([loop] { loop->work(); });
      }
      wake_.notify_all();
    }
    loop->work();
    std::unique_lock lock(loop->mu);
    loop->done_cv.wait(lock, [&] { return loop->done == loop->n; });
    if (loop->error) std::rethrow_exception(loop->error);
  };
}

void MediaPool::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace vtllm::multimodal
