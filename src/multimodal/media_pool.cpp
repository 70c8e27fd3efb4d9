#include "multimodal/media_pool.h"

#include <algorithm>

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
  std::packaged_task<std::shared_ptr<const VisionInput>()> task(
      [job = std::move(job)] { return std::make_shared<const VisionInput>(job()); });
  auto fut = task.get_future();
  {
    std::lock_guard lock(mu_);
    VT_CHECK(!stop_, "media pool: submit after shutdown");
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return fut;
}

void MediaPool::loop() {
  for (;;) {
    std::packaged_task<std::shared_ptr<const VisionInput>()> task;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // a throwing job stores its exception in the future
  }
}

}  // namespace vtllm::multimodal
