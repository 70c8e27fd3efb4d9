// WorkerPool: threads for the work that blocks (a generation waiting on the
// engine, tokenizing a large body), kept off the HTTP I/O threads.
//
// Threads are started on demand up to `max_threads` and leave after
// `idle_exit` without work, so the count follows the requests in flight, not
// the connections. Tasks beyond max_threads wait in FIFO order.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace vtllm::server {

class WorkerPool {
 public:
  explicit WorkerPool(int max_threads,
                      std::chrono::milliseconds idle_exit = std::chrono::seconds(30));
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs `task` on a pool thread. A task must not throw.
  void submit(std::function<void()> task);
  // Runs the queued tasks, waits for all of them, joins every thread; submit()
  // afterwards runs nothing.
  void stop();
  // Threads alive now.
  int threads() const;

 private:
  void run();

  const int max_threads_;
  const std::chrono::milliseconds idle_exit_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::deque<std::function<void()>> queue_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> exited_;  // threads that left run(), to be joined
  int alive_ = 0;
  int idle_ = 0;
  bool stop_ = false;
};

}  // namespace vtllm::server
