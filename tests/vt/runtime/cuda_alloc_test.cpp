// The caching device allocator (vt/cuda/allocator.cu) and the pinned upload ring
// (vt/cuda/host_staging.cu): blocks are reused, live tensors never share memory, a
// block released while another stream may still use it is not handed out early, and
// uploads from host memory freed right after the call arrive intact. Skipped
// without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "cuda_compare.h"
#include "vt/cuda/api.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
#include "vt/ops/fill.h"

namespace vt {
namespace {

std::vector<int32_t> download_i32(Stream& s, const Tensor& t) {
  Tensor h = to_device(s, t, Device::cpu());
  return std::vector<int32_t>(h.data<int32_t>(), h.data<int32_t>() + h.numel());
}

TEST(CudaAlloc, ReleasedBlockIsReusedWithoutCudaMalloc) {
  VT_REQUIRE_GPU();
  Stream s(Device::cuda(0));
  cuda::empty_cache(0);
  const cuda::AllocatorStats s0 = cuda::allocator_stats(0);
  EXPECT_EQ(s0.cached_bytes, 0u);
  const void* first = nullptr;
  {
    Tensor t = Tensor::empty({1000, 37}, DType::kF32, Device::cuda(0));
    first = t.data_ptr();
    const cuda::AllocatorStats live = cuda::allocator_stats(0);
    EXPECT_GE(live.in_use_bytes, s0.in_use_bytes + 1000 * 37 * 4);
    EXPECT_EQ(live.num_device_mallocs, s0.num_device_mallocs + 1);
  }
  const cuda::AllocatorStats released = cuda::allocator_stats(0);
  EXPECT_EQ(released.in_use_bytes, s0.in_use_bytes);
  EXPECT_GE(released.cached_bytes, size_t(1000 * 37 * 4));
  EXPECT_GE(released.peak_in_use_bytes, s0.in_use_bytes + 1000 * 37 * 4);
  for (int i = 0; i < 100; ++i) {
    Tensor t = Tensor::empty({37, 1000}, DType::kF32, Device::cuda(0));  // same bytes
    EXPECT_EQ(t.data_ptr(), first);
    fill(s, t, double(i));
  }
  const cuda::AllocatorStats after = cuda::allocator_stats(0);
  EXPECT_EQ(after.num_device_mallocs, released.num_device_mallocs);
  EXPECT_EQ(after.num_reuses, released.num_reuses + 100);
  cuda::empty_cache(0);
  const cuda::AllocatorStats emptied = cuda::allocator_stats(0);
  EXPECT_EQ(emptied.cached_bytes, 0u);
  EXPECT_GT(emptied.num_device_frees, after.num_device_frees);
  s.synchronize();
}

// Random allocate/release over a few sizes (so blocks are reused often); each live
// tensor is filled on the device with its own id, and every live tensor's content is
// checked against its id at intervals and at the end.
TEST(CudaAlloc, LiveTensorsNeverAliasUnderRandomAllocAndFree) {
  VT_REQUIRE_GPU();
  Stream s(Device::cuda(0));
  std::mt19937_64 rng(7);
  const std::vector<int64_t> sizes = {1, 100, 128, 1000, 4096, 70000, 300000, 700000};
  std::map<int, Tensor> live;
  int next_id = 1;
  auto check_all = [&] {
    for (const auto& [id, t] : live) {
      const std::vector<int32_t> got = download_i32(s, t);
      size_t bad = 0;
      for (int32_t v : got) bad += v != id;
      ASSERT_EQ(bad, 0u) << "tensor " << id << " of " << t.numel() << " elements";
    }
  };
  const cuda::AllocatorStats before = cuda::allocator_stats(0);
  for (int step = 0; step < 600; ++step) {
    if (!live.empty() && (rng() % 100 < 45 || live.size() > 40)) {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      live.erase(it);
    } else {
      const int64_t n = sizes[rng() % sizes.size()];
      Tensor t = Tensor::empty({n}, DType::kI32, Device::cuda(0));
      fill(s, t, double(next_id));
      for (const auto& [id, other] : live)
        ASSERT_FALSE(t.may_alias(other)) << "new tensor overlaps live tensor " << id;
      live.emplace(next_id++, t);
    }
    if (step % 100 == 99) check_all();
  }
  check_all();
  EXPECT_GT(cuda::allocator_stats(0).num_reuses, before.num_reuses + 100);
}

// Stream A writes a block many times and releases it while that work is queued; with
// two live streams the allocator must not hand the block to stream B before A's
// writes are done, or B's fill would be overwritten.
TEST(CudaAlloc, BlockReleasedWhileAnotherStreamRunsIsNotReusedEarly) {
  VT_REQUIRE_GPU();
  Stream a(Device::cuda(0));
  Stream b(Device::cuda(0));
  const int64_t n = int64_t(8) << 20;  // 32 MiB of i32: under the cached-block limit
  for (int round = 0; round < 5; ++round) {
    Tensor b_out;
    {
      Tensor t = Tensor::empty({n}, DType::kI32, Device::cuda(0));
      for (int i = 0; i < 200; ++i) fill(a, t, 1.0);  // ~6 GB of writes queued on A
    }
    b_out = Tensor::empty({n}, DType::kI32, Device::cuda(0));
    fill(b, b_out, 2.0);
    b.synchronize();
    a.synchronize();
    const std::vector<int32_t> got = download_i32(b, b_out);
    size_t bad = 0;
    for (int32_t v : got) bad += v != 2;
    ASSERT_EQ(bad, 0u) << "round " << round;
  }
}

// Index uploads and small host-to-device copies pass through the pinned ring: many
// of them queued without a synchronize, each from a host vector freed at once, with
// enough bytes in total to wrap the ring several times.
TEST(CudaStaging, UploadsFromFreedHostMemoryArriveIntact) {
  VT_REQUIRE_GPU();
  cudatest::Streams s;
  const int64_t rows = 512, cols = 64, tokens = 60000;  // 480 KB of i64 ids per op
  Tensor table = cudatest::uniform({rows, cols}, -1.0f, 1.0f, 11);
  Tensor table_gpu = s.up(table);
  std::vector<Tensor> outs, copies;
  std::vector<std::vector<int32_t>> ids_kept;
  for (int op = 0; op < 40; ++op) {
    std::mt19937_64 rng(100 + op);
    auto ids = std::make_unique<std::vector<int32_t>>(size_t(tokens));
    for (int32_t& v : *ids) v = int32_t(rng() % rows);
    ids_kept.push_back(*ids);
    Tensor out = Tensor::empty({tokens, cols}, DType::kF32, Device::cuda(0));
    embedding(s.gpu, table_gpu,
              Tensor::from_blob(ids->data(), {tokens}, DType::kI32, Device::cpu(), nullptr), out);
    ids.reset();  // the op has returned: its indices may go
    outs.push_back(out);
    // A staged copy from a host tensor released right after the call.
    Tensor host = Tensor::empty({tokens}, DType::kI32);
    std::memcpy(host.data_ptr(), ids_kept.back().data(), host.nbytes());
    Tensor dev = Tensor::empty({tokens}, DType::kI32, Device::cuda(0));
    copy(s.gpu, host, dev);
    copies.push_back(dev);
  }
  for (size_t op = 0; op < outs.size(); ++op) {
    Tensor got = s.down(outs[op]);
    size_t bad = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const int32_t r = ids_kept[op][size_t(t)];
      bad += std::memcmp(got.data<float>() + t * cols, table.data<float>() + r * cols,
                         cols * sizeof(float)) != 0;
    }
    EXPECT_EQ(bad, 0u) << "embedding op " << op;
    const std::vector<int32_t> copied = download_i32(s.gpu, copies[op]);
    size_t bad_copy = 0;
    for (size_t i = 0; i < copied.size(); ++i) bad_copy += copied[i] != ids_kept[op][i];
    EXPECT_EQ(bad_copy, 0u) << "copy " << op;
  }
}

}  // namespace
}  // namespace vt
