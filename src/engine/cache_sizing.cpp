#include "engine/cache_sizing.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "base/error.h"

#if VTLLM_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vtllm::engine {

CacheFootprint cache_footprint(const models::CacheSpec& spec, int64_t block_size,
                               vt::DType kv_dtype) {
  CacheFootprint f;
  const int64_t kv_item = int64_t(vt::dtype_size(kv_dtype));
  for (const models::LayerCacheSpec& l : spec) {
    if (l.kind == models::LayerCacheSpec::Kind::kAttention) {
      f.bytes_per_block += 2 * block_size * l.kv_heads * l.head_dim * kv_item;
    } else {
      f.bytes_per_state_slot += int64_t(sizeof(float)) *
                                (l.conv_rows * l.conv_dim +
                                 l.value_heads * l.key_head_dim * l.value_head_dim);
    }
  }
  return f;
}

namespace {
std::string gib(uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(uint64_t(1) << 30));
  return s;
}
}  // namespace

std::string CachePlan::describe() const {
  char u[16];
  std::snprintf(u, sizeof u, "%.2f", utilization);
  return str_cat("kv cache: ", u, " x ", gib(total), " total = ", gib(uint64_t(utilization * double(total))),
                 "; - ", gib(in_use), " in use after load (weights ", gib(weights),
                 ") - activation peak ", gib(activation_peak), " (profile step of ", profile_tokens,
                 " tokens) - ", num_state_slots, " GDN state slots ", gib(state_bytes),
                 " - CUDA graphs ", gib(graph_bytes), " = ",
                 gib(kv_bytes()), ": ", num_blocks, " blocks of ", block_size, " tokens (",
                 bytes_per_block, " bytes each), ", int64_t(num_blocks) * block_size,
                 " tokens of KV");
}

CachePlan plan_cache(double utilization, uint64_t total, uint64_t in_use, uint64_t weights,
                     uint64_t activation_peak, int64_t profile_tokens, int32_t num_state_slots,
                     int64_t block_size, const CacheFootprint& footprint,
                     uint64_t graph_bytes) {
  VT_CHECK(utilization > 0 && utilization <= 1, "--gpu-memory-utilization ", utilization,
           ": expected (0, 1]");
  VT_CHECK(footprint.bytes_per_block > 0, "kv cache: the model has no attention layer to size");
  CachePlan p;
  p.utilization = utilization;
  p.total = total;
  p.in_use = in_use;
  p.weights = weights;
  p.activation_peak = activation_peak;
  p.profile_tokens = profile_tokens;
  p.num_state_slots = num_state_slots;
  p.state_bytes = uint64_t(num_state_slots) * uint64_t(footprint.bytes_per_state_slot);
  p.block_size = block_size;
  p.bytes_per_block = uint64_t(footprint.bytes_per_block);
  p.graph_bytes = graph_bytes;
  const double left = utilization * double(total) - double(in_use) - double(activation_peak) -
                      double(p.state_bytes) - double(graph_bytes);
  const double blocks = left / double(p.bytes_per_block);
  VT_CHECK(blocks >= 1, "kv cache: no room for one block: ", utilization, " x ", gib(total), " - ",
           gib(in_use), " in use - ", gib(activation_peak), " activations - ", gib(p.state_bytes),
           " GDN state - ", gib(graph_bytes), " CUDA graphs = ", left / double(uint64_t(1) << 30),
           " GiB; raise --gpu-memory-utilization or lower --max-num-seqs");
  // The block ids are int32 and block 0 is the null block.
  p.num_blocks = int32_t(std::min(blocks, double((int64_t(1) << 31) - 2)));
  return p;
}

DeviceMemory device_memory(vt::Device device) {
  VT_CHECK(device.is_cuda(), "device_memory: ", device.str(), " is not a CUDA device");
#if VTLLM_WITH_CUDA
  DeviceMemory m;
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(device.index) != cudaSuccess ||
      cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    VT_THROW("device_memory: cudaMemGetInfo on ", device.str(), " failed: ", cudaGetErrorString(e));
  }
  m.free = free_b;
  m.total = total_b;
  return m;
#else
  VT_THROW("device_memory: vtllm was built without CUDA");
#endif
}

uint64_t peak_memory_during(vt::Device device, const std::function<void()>& fn) {
  const uint64_t before = device_memory(device).used();
  std::atomic<bool> done{false};
  std::atomic<uint64_t> peak{before};
  std::thread sampler([&] {
    try {
      while (!done.load(std::memory_order_relaxed)) {
        const uint64_t u = device_memory(device).used();
        if (u > peak.load(std::memory_order_relaxed)) peak.store(u, std::memory_order_relaxed);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vtllm: memory sampler stopped: %s\n", e.what());
    }
  });
  try {
    fn();
  } catch (...) {
    done = true;
    sampler.join();
    throw;
  }
  done = true;
  sampler.join();
  return peak.load() - before;
}

}  // namespace vtllm::engine
