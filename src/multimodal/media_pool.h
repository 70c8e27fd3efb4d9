// MediaPool: decoding and preprocessing of images and videos on threads of their own,
// outside the engine loop and the HTTP I/O threads (a request's media are processed in
// parallel, and many requests' at once).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "multimodal/parallel.h"
#include "multimodal/vision_input.h"

namespace vtllm::multimodal {

class MediaPool {
 public:
  using Job = std::function<VisionInput()>;

  // threads >= 1 (throws otherwise).
  explicit MediaPool(int threads);
  // Runs the jobs still queued, then joins the threads.
  ~MediaPool();
  MediaPool(const MediaPool&) = delete;
  MediaPool& operator=(const MediaPool&) = delete;

  // Queues `job`; the future holds its result, or the exception it threw. Thread-safe.
  std::future<std::shared_ptr<const VisionInput>> submit(Job job);

  // A ParallelFor over this pool: the calling thread (a job of this pool's, or any
  // other) claims indices itself, and helpers queued ahead of waiting jobs claim the rest
  // on idle threads, so a loop never waits for a busy pool. Valid while the pool lives.
  ParallelFor parallel_for();

  int size() const { return int(threads_.size()); }
  // min(hardware threads, 8): the --media-pool-threads default.
  static int default_size();

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // jobs and loop helpers
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vtllm::multimodal
