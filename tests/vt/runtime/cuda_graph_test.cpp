// CUDA graphs of vt streams (vt/cuda/api.h): a captured step with device index tensors
// replays to the bytes eager execution gives for new inputs copied into the same
// buffers; host uploads inside a capture are refused and leave the stream usable;
// the graph pool holds the capture's activations. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/attention.h"
#include "vt/ops/copy.h"
#include "vt/ops/gemm.h"

namespace vt {
namespace {

using cudatest::randn;
using cudatest::Streams;

template <class T>
Tensor host_index(const std::vector<T>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DTypeOf<T>::value);
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

// One decode-like step on fixed buffers: y = attention(q @ W) over the cache.
struct Step {
  Tensor x, w, kc, vc, qs, sl, bt;  // inputs (device, fixed addresses)
  Tensor run(Stream& s) const {
    const int64_t B = x.size(0);
    Tensor q = Tensor::empty({B, 4 * 64}, DType::kBF16, s.device());
    linear(s, x, w, q);
    Tensor out = Tensor::empty({B, 4, 64}, DType::kBF16, s.device());
    paged_attention(s, q.view({B, 4, 64}), kc, vc, qs, sl, bt, 0.125f, out,
                    AttentionBounds{B, 1, 256});
    return out;
  }
};

void fill_inputs(Streams& s, Step& st, uint64_t seed, const std::vector<int32_t>& lens) {
  copy(s.gpu, s.up(randn(st.x.shape(), DType::kBF16, 1.0, seed)), st.x);
  std::vector<int32_t> qs{0};
  for (size_t b = 0; b < lens.size(); ++b) qs.push_back(int32_t(b + 1));
  copy(s.gpu, s.up(host_index(qs, {int64_t(qs.size())})), st.qs);
  copy(s.gpu, s.up(host_index(lens, {int64_t(lens.size())})), st.sl);
}

TEST(CudaGraph, ReplayEqualsEagerForNewInputs) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t B = 4, H = 512;
  Step st;
  st.x = s.up(randn({B, H}, DType::kBF16, 1.0, 1));
  st.w = s.up(randn({4 * 64, H}, DType::kBF16, 0.05, 2));
  st.kc = s.up(randn({B * 16 + 1, 16, 1, 64}, DType::kBF16, 1.0, 3));
  st.vc = s.up(randn({B * 16 + 1, 16, 1, 64}, DType::kBF16, 1.0, 4));
  std::vector<int32_t> table;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < 16; ++i) table.push_back(int32_t(1 + b * 16 + i));
  st.bt = s.up(host_index(table, {B, 16}));
  st.qs = s.up(host_index<int32_t>({0, 1, 2, 3, 4}, {B + 1}));
  st.sl = s.up(host_index<int32_t>({1, 1, 1, 1}, {B}));
  fill_inputs(s, st, 10, {100, 7, 256, 1});
  st.run(s.gpu);  // warm-up: plans and scratch sized before capture
  s.gpu.synchronize();
  s.gpu.begin_capture();
  Tensor graph_out = st.run(s.gpu);
  cuda::GraphExecPtr g = s.gpu.end_capture();
  EXPECT_GT(cuda::graph_pool_bytes(0), size_t(0));
  for (uint64_t seed : {20u, 30u}) {
    fill_inputs(s, st, seed, seed == 20 ? std::vector<int32_t>{3, 200, 17, 64}
                                        : std::vector<int32_t>{256, 1, 2, 129});
    Tensor eager = s.down(st.run(s.gpu));
    s.gpu.replay(*g);
    Tensor replayed = s.down(graph_out);
    ASSERT_EQ(eager.nbytes(), replayed.nbytes());
    EXPECT_EQ(std::memcmp(eager.data_ptr(), replayed.data_ptr(), eager.nbytes()), 0) << seed;
  }
  graph_out = Tensor();
  g.reset();
  s.gpu.synchronize();
  cuda::release_graph_pool(0);
}

TEST(CudaGraph, HostUploadInCaptureIsRefused) {
  VT_REQUIRE_GPU();
  Streams s;
  Tensor k = s.up(randn({2, 1, 64}, DType::kBF16, 1.0, 5));
  Tensor kc = s.up(randn({2, 16, 1, 64}, DType::kBF16, 1.0, 6));
  Tensor vc = s.up(randn({2, 16, 1, 64}, DType::kBF16, 1.0, 7));
  s.gpu.begin_capture();
  EXPECT_THROW(kv_cache_write(s.gpu, k, k, host_index<int64_t>({0, 1}, {2}), kc, vc),
               vtllm::Error);
  s.gpu.abort_capture();
  // The stream works eagerly afterwards.
  kv_cache_write(s.gpu, k, k, host_index<int64_t>({0, 1}, {2}), kc, vc);
  s.gpu.synchronize();
}

}  // namespace
}  // namespace vt
