#include "vt/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace vt {

namespace {
thread_local bool t_inside_parallel_for = false;
}

struct ThreadPool::Job {
  int64_t n = 0, chunk = 1, num_chunks = 0;
  std::atomic<int64_t> next{0};
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  std::mutex err_mu;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < std::max(num_threads, 1); ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_chunks(Job& job) {
  bool outer = t_inside_parallel_for;
  t_inside_parallel_for = true;
  for (int64_t c; (c = job.next.fetch_add(1)) < job.num_chunks;) {
    int64_t b = c * job.chunk, e = std::min(job.n, b + job.chunk);
    try {
      (*job.fn)(b, e);
    } catch (...) {
      std::lock_guard lk(job.err_mu);
      if (!job.error) job.error = std::current_exception();
      job.next.store(job.num_chunks);  // stop handing out chunks
    }
  }
  t_inside_parallel_for = outer;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    Job* job;
    {
      std::unique_lock lk(mu_);
      wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    run_chunks(*job);
    {
      std::lock_guard lk(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  // About four chunks per thread balances uneven chunks without much overhead.
  int64_t target = int64_t(num_threads()) * 4;
  int64_t chunk = std::max(grain, (n + target - 1) / target);
  int64_t num_chunks = (n + chunk - 1) / chunk;
  if (num_chunks == 1 || workers_.empty() || t_inside_parallel_for) {
    fn(0, n);
    return;
  }
  std::lock_guard call(call_mu_);
  Job job;
  job.n = n;
  job.chunk = chunk;
  job.num_chunks = num_chunks;
  job.fn = &fn;
  {
    std::lock_guard lk(mu_);
    job_ = &job;
    busy_ = int(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  run_chunks(job);
  {
    std::unique_lock lk(mu_);
    done_.wait(lk, [&] { return busy_ == 0; });
    job_ = nullptr;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace vt
