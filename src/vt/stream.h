// vt::Stream: where ops run. Every op takes the stream first.
//
// A CPU stream owns a thread pool (one thread per hardware thread by default);
// CPU ops run synchronously on the calling thread plus the pool, so their results
// are ready when the op returns. A CUDA stream holds a cudaStream_t, a cuBLASLt
// handle and its workspace (vt/cuda/stream_state.h, CUDA code only); ops enqueue
// work and return, synchronize() waits.
//
// A stream owns the kernel switches of the ops run on it (vt/kernel_config.h); CUDA op
// arms read them from the stream at each call.
//
// A Stream is not copyable. One thread at a time should issue ops on a stream;
// parallel_for calls from several threads are serialised.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "vt/cuda/api.h"
#include "vt/device.h"
#include "vt/kernel_config.h"

namespace vt {

class ThreadPool;

class Stream {
 public:
  // A CPU stream with `num_threads` workers (0: std::thread::hardware_concurrency()),
  // or a new CUDA stream on `device` (num_threads ignored), running with `kernels`
  // (by default the environment's, which throws on a bad value: vt/kernel_config.h).
  explicit Stream(Device device = Device::cpu(), int num_threads = 0,
                  const KernelConfig& kernels = KernelConfig::from_env());
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device device() const { return device_; }
  // Threads that parallel_for uses (the caller included); 1 for a CUDA stream.
  int num_threads() const;

  // CPU: calls fn(begin, end) on disjoint chunks covering [0, n), each at least
  // `grain` long (except the last), spread over the pool; returns when all are
  // done. The first exception thrown by fn is rethrown here. A call from inside
  // fn runs serially. Throws on a CUDA stream.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // The kernel switches ops on this stream run with. Set between ops, not while one is
  // being issued from another thread; a graph captured earlier keeps what its capture
  // chose.
  const KernelConfig& kernel_config() const { return kernels_; }
  void set_kernel_config(const KernelConfig& kernels) { kernels_ = kernels; }

  // Waits for all work issued on this stream (a no-op on the CPU).
  void synchronize();

  // CUDA graphs (CUDA streams only; the contract, graph memory pool included, is in
  // vt/cuda/api.h): between begin_capture and end_capture the ops issued on this stream
  // are recorded, not run; replay runs the recorded work again on this stream, reading
  // whatever its (fixed-address) input buffers hold then. abort_capture ends a capture
  // that failed, leaving the stream usable.
  void begin_capture();
  cuda::GraphExecPtr end_capture();
  void abort_capture() noexcept;
  void replay(cuda::GraphExec& graph);
  // The kernel launches one replay of `graph` makes: its kernel nodes, counted at
  // end_capture before instantiation (the benchmark's kernels per decode step).
  static int64_t graph_kernel_nodes(const cuda::GraphExec& graph);

  // The CUDA state; throws on a CPU stream. For CUDA op arms.
  cuda::StreamState& cuda_state();

 private:
  Device device_;
  KernelConfig kernels_;  // before cuda_: its StreamState points at it
  std::unique_ptr<ThreadPool> pool_;
  cuda::StreamStatePtr cuda_;
};

}  // namespace vt
