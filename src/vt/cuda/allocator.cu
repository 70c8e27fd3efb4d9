// The caching device allocator behind vt::cuda::allocate (contract: vt/cuda/api.h;
// stream rules: vt/cuda/allocator.h).
//
// Why: every op output used to be a fresh cudaMalloc and its cudaFree waited for the
// whole device, so decode ran at host speed with the device idle between ops. Now a
// released block goes to a per-device free list keyed by size and the next request of
// that size class takes it without a CUDA call.
//
// Size classes: up to 1 MiB, four classes per power of two (at least 512 bytes; at
// most 25% over the request) and a block is reused only for its own class; above,
// multiples of 2 MiB (cudaMalloc's own page) and a cached block serves a request up to
// 1/8 smaller. Blocks of kMaxCachedBytes and more (weights, the KV cache, long
// prefill activations) bypass the cache, so the engine's cudaMemGetInfo-based sizing
// sees them come and go as before.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "vt/cuda/allocator.h"
#include "vt/cuda/api.h"
#include "vt/cuda/check.h"

namespace vt::cuda {

namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kSmallLimit = kMiB;             // classes below, 2 MiB pages above
constexpr size_t kLargePage = 2 * kMiB;
constexpr size_t kMaxCachedBytes = 64 * kMiB;    // larger blocks are never cached

size_t size_class(size_t bytes) {
  if (bytes <= 512) return 512;
  if (bytes > kSmallLimit) return (bytes + kLargePage - 1) / kLargePage * kLargePage;
  const size_t step = std::bit_floor(bytes - 1) / 4;  // >= 128 here
  return (bytes + step - 1) / step * step;
}

// The largest cached block that may serve a request of class `c`.
size_t reuse_limit(size_t c) { return c <= kSmallLimit ? c : c + c / 8; }

struct PendingBlock {
  void* ptr = nullptr;
  size_t size = 0;
  std::vector<cudaEvent_t> events;  // one per stream live at release
};

struct DevicePool {
  std::multimap<size_t, void*> free_blocks;  // size -> block, idle on every stream
  // The graph pool (vt/cuda/api.h): blocks handed out while a capture is open; they
  // come back here whenever released and leave only through release_graph_pool.
  int open_captures = 0;
  std::multimap<size_t, void*> graph_free;
  size_t graph_bytes = 0;  // every block of the graph pool, free or not
  std::vector<PendingBlock> pending;         // released, waiting for events
  std::vector<cudaStream_t> streams;         // live vt streams on the device
  std::vector<cudaEvent_t> spare_events;
  AllocatorStats stats;
};

class CachingAllocator {
 public:
  static CachingAllocator& instance() {
    // Never destroyed: tensors in static storage may release blocks during exit,
    // after a function-local static allocator would be gone.
    static CachingAllocator* a = new CachingAllocator;
    return *a;
  }

  std::shared_ptr<void> allocate(size_t bytes, int device) {
    VT_CHECK(device >= 0 && device < int(pools_.size()), "CUDA allocation of ", bytes,
             " bytes: device cuda:", device, " does not exist (", pools_.size(), " visible)");
    if (bytes == 0) return nullptr;
    const size_t want = size_class(bytes);
    void* p = nullptr;
    size_t got = want;
    {
      std::lock_guard lock(mu_);
      DevicePool& pool = pools_[size_t(device)];
      if (pool.open_captures > 0) return allocate_graph(pool, device, want);
      if (!pool.pending.empty()) collect_pending(pool);
      auto it = want < kMaxCachedBytes ? pool.free_blocks.lower_bound(want)
                                       : pool.free_blocks.end();
      if (it != pool.free_blocks.end() && it->first <= reuse_limit(want)) {
        got = it->first;
        p = it->second;
        pool.free_blocks.erase(it);
        pool.stats.cached_bytes -= got;
        ++pool.stats.num_reuses;
      } else {
        p = device_malloc(pool, device, want);
      }
      ++pool.stats.num_allocs;
      pool.stats.in_use_bytes += got;
      pool.stats.peak_in_use_bytes =
          std::max(pool.stats.peak_in_use_bytes, pool.stats.in_use_bytes);
    }
    return std::shared_ptr<void>(p, [this, device, got](void* q) { release(device, q, got); });
  }

  void begin_graph(int device) {
    std::lock_guard lock(mu_);
    ++pool(device, "begin_graph_pool").open_captures;
  }
  void end_graph(int device) noexcept {
    std::lock_guard lock(mu_);
    if (device >= 0 && device < int(pools_.size()) && pools_[size_t(device)].open_captures > 0)
      --pools_[size_t(device)].open_captures;
  }
  size_t graph_bytes(int device) {
    std::lock_guard lock(mu_);
    return pool(device, "graph_pool_bytes").graph_bytes;
  }
  void release_graph(int device) {
    std::lock_guard lock(mu_);
    DevicePool& p = pool(device, "release_graph_pool");
    VT_CHECK(p.open_captures == 0, "release_graph_pool: a capture is open on cuda:", device);
    VT_CUDA_CHECK(cudaSetDevice(device));
    VT_CUDA_CHECK(cudaDeviceSynchronize());
    for (auto& [size, q] : p.graph_free) {
      VT_CUDA_CHECK(cudaFree(q));
      ++p.stats.num_device_frees;
      p.graph_bytes -= size;
    }
    p.graph_free.clear();
  }

  AllocatorStats stats(int device) {
    std::lock_guard lock(mu_);
    return pool(device, "allocator_stats").stats;
  }

  void reset_peak(int device) {
    std::lock_guard lock(mu_);
    DevicePool& p = pool(device, "reset_peak_in_use");
    p.stats.peak_in_use_bytes = p.stats.in_use_bytes;
  }

  void empty_cache(int device) {
    std::lock_guard lock(mu_);
    DevicePool& p = pool(device, "empty_cache");
    VT_CUDA_CHECK(cudaSetDevice(device));
    flush(p);
  }

  void register_stream(int device, cudaStream_t s) {
    std::lock_guard lock(mu_);
    DevicePool& p = pool(device, "register_stream");
    if (!p.streams.empty()) VT_CUDA_CHECK(cudaDeviceSynchronize());  // see allocator.h
    p.streams.push_back(s);
  }

  void unregister_stream(int device, cudaStream_t s) noexcept {
    std::lock_guard lock(mu_);
    if (device < 0 || device >= int(pools_.size())) return;
    DevicePool& pool = pools_[size_t(device)];
    auto& v = pool.streams;
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
    if (!v.empty()) return;
    // The last stream is gone: give the cache back, so that a later measurement of
    // device memory (the engine's weight and cache sizing) starts from what is live.
    try {
      VT_CUDA_CHECK(cudaSetDevice(device));
      flush(pool);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vt: emptying the allocator cache of cuda:%d failed: %s\n", device,
                   e.what());
    }
  }

 private:
  CachingAllocator() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      n = 0;
    }
    pools_.resize(size_t(n));
  }

  DevicePool& pool(int device, const char* what) {
    VT_CHECK(device >= 0 && device < int(pools_.size()), what, ": device cuda:", device,
             " does not exist (", pools_.size(), " visible)");
    return pools_[size_t(device)];
  }

  // cudaMalloc; when the device is full, returns the cache to CUDA and tries once more.
  void* device_malloc(DevicePool& pool, int device, size_t bytes) {
    VT_CUDA_CHECK(cudaSetDevice(device));
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation && pool.stats.cached_bytes > 0) {
      cudaGetLastError();
      flush(pool);
      e = cudaMalloc(&p, bytes);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      VT_THROW("CUDA allocation of ", bytes, " bytes on cuda:", device, " failed: ",
               cudaGetErrorString(e), " (", free_b >> 20, " MiB free of ", total_b >> 20,
               " MiB; allocator: ", pool.stats.in_use_bytes >> 20, " MiB in use, ",
               pool.stats.cached_bytes >> 20, " MiB cached)");
    }
    ++pool.stats.num_device_mallocs;
    return p;
  }

  // A block of the graph pool (mu_ held): any size is kept, a free one serves a
  // request up to reuse_limit; new ones are cudaMalloc'd (legal in a relaxed capture).
  std::shared_ptr<void> allocate_graph(DevicePool& pool, int device, size_t want) {
    void* p = nullptr;
    size_t got = want;
    auto it = pool.graph_free.lower_bound(want);
    if (it != pool.graph_free.end() && it->first <= reuse_limit(want)) {
      got = it->first;
      p = it->second;
      pool.graph_free.erase(it);
      ++pool.stats.num_reuses;
    } else {
      p = device_malloc(pool, device, want);
      pool.graph_bytes += want;
    }
    ++pool.stats.num_allocs;
    pool.stats.in_use_bytes += got;
    pool.stats.peak_in_use_bytes = std::max(pool.stats.peak_in_use_bytes, pool.stats.in_use_bytes);
    return std::shared_ptr<void>(p, [this, device, got](void* q) { release_graph_block(device, q, got); });
  }

  void release_graph_block(int device, void* p, size_t size) noexcept {
    std::lock_guard lock(mu_);
    DevicePool& pool = pools_[size_t(device)];
    pool.stats.in_use_bytes -= size;
    pool.graph_free.emplace(size, p);
  }

  // Called from the tensor's deleter: cannot throw.
  void release(int device, void* p, size_t size) noexcept {
    std::lock_guard lock(mu_);
    DevicePool& pool = pools_[size_t(device)];
    pool.stats.in_use_bytes -= size;
    if (size >= kMaxCachedBytes || pool.streams.empty()) {
      // Large, or no live stream to reuse it on: cudaFree (it waits for the device).
      if (cudaSetDevice(device) != cudaSuccess || cudaFree(p) != cudaSuccess)
        std::fprintf(stderr, "vt: cudaFree on cuda:%d failed: %s\n", device,
                     cudaGetErrorString(cudaGetLastError()));
      ++pool.stats.num_device_frees;
      return;
    }
    pool.stats.cached_bytes += size;
    if (pool.streams.size() <= 1) {
      pool.free_blocks.emplace(size, p);
      return;
    }
    // Several streams: the block's last readers may sit on any of them.
    PendingBlock b{p, size, {}};
    bool ok = cudaSetDevice(device) == cudaSuccess;
    for (cudaStream_t s : pool.streams) {
      if (!ok) break;
      cudaEvent_t e = nullptr;
      if (!pool.spare_events.empty()) {
        e = pool.spare_events.back();
        pool.spare_events.pop_back();
      } else if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        ok = false;
        break;
      }
      b.events.push_back(e);
      ok = cudaEventRecord(e, s) == cudaSuccess;
    }
    if (!ok) {
      // No event to wait on: wait for the device instead (a failing context stays
      // failed; the next CUDA call reports it).
      std::fprintf(stderr, "vt: event for a released block on cuda:%d failed: %s\n", device,
                   cudaGetErrorString(cudaGetLastError()));
      cudaDeviceSynchronize();
      for (cudaEvent_t e : b.events) pool.spare_events.push_back(e);
      pool.free_blocks.emplace(size, p);
      return;
    }
    pool.pending.push_back(std::move(b));
  }

  // Moves pending blocks whose events have all completed to the free list.
  void collect_pending(DevicePool& pool) {
    auto done = [&](PendingBlock& b) {
      for (cudaEvent_t e : b.events) {
        const cudaError_t q = cudaEventQuery(e);
        if (q == cudaErrorNotReady) return false;
        if (q != cudaSuccess) detail::cuda_failed(q, "cudaEventQuery", __FILE__, __LINE__);
      }
      for (cudaEvent_t e : b.events) pool.spare_events.push_back(e);
      pool.free_blocks.emplace(b.size, b.ptr);
      return true;
    };
    pool.pending.erase(std::remove_if(pool.pending.begin(), pool.pending.end(), done),
                       pool.pending.end());
  }

  // Waits for pending blocks, then cudaFrees every cached block (current device set).
  void flush(DevicePool& pool) {
    for (PendingBlock& b : pool.pending) {
      for (cudaEvent_t e : b.events) {
        VT_CUDA_CHECK(cudaEventSynchronize(e));
        pool.spare_events.push_back(e);
      }
      pool.free_blocks.emplace(b.size, b.ptr);
    }
    pool.pending.clear();
    for (auto& [size, p] : pool.free_blocks) {
      VT_CUDA_CHECK(cudaFree(p));
      ++pool.stats.num_device_frees;
      pool.stats.cached_bytes -= size;
    }
    pool.free_blocks.clear();
  }

  std::mutex mu_;
  std::vector<DevicePool> pools_;
};

}  // namespace

std::shared_ptr<void> allocate(size_t bytes, int device) {
  return CachingAllocator::instance().allocate(bytes, device);
}
AllocatorStats allocator_stats(int device) { return CachingAllocator::instance().stats(device); }
void reset_peak_in_use(int device) { CachingAllocator::instance().reset_peak(device); }
void empty_cache(int device) { CachingAllocator::instance().empty_cache(device); }
void register_stream(int device, cudaStream_t stream) {
  CachingAllocator::instance().register_stream(device, stream);
}
void unregister_stream(int device, cudaStream_t stream) noexcept {
  CachingAllocator::instance().unregister_stream(device, stream);
}
void begin_graph_pool(int device) { CachingAllocator::instance().begin_graph(device); }
void end_graph_pool(int device) noexcept { CachingAllocator::instance().end_graph(device); }
size_t graph_pool_bytes(int device) { return CachingAllocator::instance().graph_bytes(device); }
void release_graph_pool(int device) { CachingAllocator::instance().release_graph(device); }

}  // namespace vt::cuda
