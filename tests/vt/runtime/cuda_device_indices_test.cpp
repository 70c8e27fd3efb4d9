// Index tensors on the device (vt/ops/indices.h): every op that takes indices gives the
// same bytes with trusted device indices as with host indices (same launch shape:
// attention with the same AttentionBounds), and the bounded attention still matches the
// CPU. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "cuda_compare.h"
#include "vt/ops/attention.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gdn.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

template <class T>
Tensor host_index(const std::vector<T>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DTypeOf<T>::value);
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

void expect_same_bytes(Streams& s, const Tensor& a_gpu, const Tensor& b_gpu, const std::string& what) {
  Tensor a = s.down(a_gpu), b = s.down(b_gpu);
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()), 0) << what;
}

// Decode (and a mixed batch) with bounds: host form vs device form, byte for byte; and
// the CPU. Requests get scattered blocks; rows past a request's blocks are block 0.
void attention_case(Streams& s, const std::vector<int32_t>& ctx, const std::vector<int32_t>& qlen,
                    AttentionBounds bounds, uint64_t seed, const std::string& what) {
  const int64_t bs = 16, hq = 24, hkv = 4, d = 256, B = int64_t(ctx.size());
  const int64_t max_blocks = (bounds.max_seq_len + bs - 1) / bs;
  const int64_t num_blocks = B * max_blocks + 1;
  std::vector<int32_t> perm(size_t(num_blocks - 1));
  std::iota(perm.begin(), perm.end(), 1);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(unsigned(seed)));
  std::vector<int32_t> qs{0}, sl, table(size_t(B * max_blocks), 0);
  std::vector<int64_t> slots;
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t len = ctx[size_t(b)] + qlen[size_t(b)];
    sl.push_back(len);
    qs.push_back(qs.back() + qlen[size_t(b)]);
    for (int64_t i = 0; i < (len + bs - 1) / bs; ++i) table[size_t(b * max_blocks + i)] = perm[next++];
    for (int32_t j = 0; j < qlen[size_t(b)]; ++j) {
      const int64_t pos = ctx[size_t(b)] + j;
      slots.push_back(int64_t(table[size_t(b * max_blocks + pos / bs)]) * bs + pos % bs);
    }
  }
  const int64_t T = qs.back();
  Tensor h_qs = host_index(qs, {B + 1}), h_sl = host_index(sl, {B});
  Tensor h_bt = host_index(table, {B, max_blocks}), h_slots = host_index(slots, {T});
  Tensor kc = randn({num_blocks, bs, hkv, d}, DType::kBF16, 1.0, seed + 1);
  Tensor vc = randn({num_blocks, bs, hkv, d}, DType::kBF16, 1.0, seed + 2);
  Tensor k = randn({T, hkv, d}, DType::kBF16, 1.0, seed + 3), v = randn({T, hkv, d}, DType::kBF16, 1.0, seed + 4);
  Tensor q = randn({T, hq, d}, DType::kBF16, 1.0, seed + 5);
  Tensor kc1 = s.up(kc), vc1 = s.up(vc), kc2 = s.up(kc), vc2 = s.up(vc);
  kv_cache_write(s.cpu, k, v, h_slots, kc, vc);
  kv_cache_write(s.gpu, s.up(k), s.up(v), h_slots, kc1, vc1);
  kv_cache_write(s.gpu, s.up(k), s.up(v), s.up(h_slots), kc2, vc2);
  expect_same_bytes(s, kc1, kc2, what + ": k_cache, device slot_mapping");
  expect_same_bytes(s, vc1, vc2, what + ": v_cache, device slot_mapping");
  const float scale = 1.0f / 16.0f;
  Tensor want = Tensor::empty({T, hq, d}, DType::kBF16);
  paged_attention(s.cpu, q, kc, vc, h_qs, h_sl, h_bt, scale, want);
  Tensor host_form = poisoned_gpu(s, {T, hq, d}, DType::kBF16);
  Tensor dev_form = poisoned_gpu(s, {T, hq, d}, DType::kBF16);
  paged_attention(s.gpu, s.up(q), kc1, vc1, h_qs, h_sl, h_bt, scale, host_form, bounds);
  paged_attention(s.gpu, s.up(q), kc1, vc1, s.up(h_qs), s.up(h_sl), s.up(h_bt), scale, dev_form,
                  bounds);
  expect_same_bytes(s, host_form, dev_form, what + ": attention host vs device indices");
  expect_close(s, want, dev_form, cudatest::kBf16Rel, 4 * cudatest::kBf16Rel, what + " vs CPU");
}

TEST(CudaDeviceIndices, PagedAttentionDeviceFormEqualsHostFormWithBounds) {
  VT_REQUIRE_GPU();
  Streams s;
  attention_case(s, {3000, 17, 600, 1, 1200}, {1, 1, 1, 1, 1}, {8, 1, 4096}, 700,
                 "decode B=5 of a graph for 8 x 4096");
  attention_case(s, {5}, {1}, {1, 1, 65536}, 710, "decode B=1, bound far past the context");
  attention_case(s, {40, 0, 300}, {1, 77, 33}, {3, 80, 512}, 720, "mixed prefill/decode");
}

TEST(CudaDeviceIndices, DeviceIndicesNeedBounds) {
  VT_REQUIRE_GPU();
  Streams s;
  Tensor q = s.up(randn({1, 2, 64}, DType::kBF16, 1.0, 1));
  Tensor kc = s.up(randn({2, 16, 1, 64}, DType::kBF16, 1.0, 2));
  Tensor out = poisoned_gpu(s, {1, 2, 64}, DType::kBF16);
  Tensor qs = s.up(host_index<int32_t>({0, 1}, {2})), sl = s.up(host_index<int32_t>({1}, {1}));
  Tensor bt = s.up(host_index<int32_t>({1}, {1, 1}));
  EXPECT_THROW(paged_attention(s.gpu, q, kc, kc, qs, sl, bt, 1.0f, out), vtllm::Error);
  // Split across sides.
  EXPECT_THROW(paged_attention(s.gpu, q, kc, kc, host_index<int32_t>({0, 1}, {2}), sl, bt, 1.0f,
                               out, AttentionBounds{1, 1, 16}),
               vtllm::Error);
  paged_attention(s.gpu, q, kc, kc, qs, sl, bt, 1.0f, out, AttentionBounds{1, 1, 16});
}

TEST(CudaDeviceIndices, GdnOpsAndEmbeddingTakeDeviceIndices) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t C = 4096, K = 4, slots = 6, hk = 4, hv = 8, dk = 128;
  const std::vector<int32_t> qsl{0, 1, 2, 40, 41}, slot{4, 0, 2, 5};  // decode x2, prefill, decode
  const int64_t T = qsl.back(), B = int64_t(slot.size());
  Tensor h_qsl = host_index(qsl, {B + 1}), h_slot = host_index(slot, {B});
  Tensor d_qsl = s.up(h_qsl), d_slot = s.up(h_slot);
  Tensor x = s.up(randn({T, C}, DType::kBF16, 1.0, 800)), w = s.up(randn({C, K}, DType::kBF16, 0.5, 801));
  Tensor st0 = randn({slots, K - 1, C}, DType::kF32, 1.0, 802);
  Tensor st1 = s.up(st0), st2 = s.up(st0);
  Tensor o1 = poisoned_gpu(s, {T, C}, DType::kBF16), o2 = poisoned_gpu(s, {T, C}, DType::kBF16);
  causal_conv1d_silu(s.gpu, x, w, h_qsl, st1, h_slot, o1);
  causal_conv1d_silu(s.gpu, x, w, d_qsl, st2, d_slot, o2);
  expect_same_bytes(s, o1, o2, "conv out");
  expect_same_bytes(s, st1, st2, "conv state");

  Tensor q = s.up(randn({T, hk, dk}, DType::kBF16, 0.1, 803)), k = s.up(randn({T, hk, dk}, DType::kBF16, 0.1, 804));
  Tensor v = s.up(randn({T, hv, dk}, DType::kBF16, 1.0, 805));
  Tensor g = s.up(cudatest::uniform({T, hv}, -0.5f, -0.01f, 806));
  Tensor beta = s.up(cudatest::uniform({T, hv}, 0.1f, 0.9f, 807));
  Tensor rs0 = randn({slots, hv, dk, dk}, DType::kF32, 0.1, 808);
  Tensor rs1 = s.up(rs0), rs2 = s.up(rs0);
  Tensor y1 = poisoned_gpu(s, {T, hv, dk}, DType::kBF16), y2 = poisoned_gpu(s, {T, hv, dk}, DType::kBF16);
  gated_delta_rule_recurrent(s.gpu, q, k, v, g, beta, 0.088f, h_qsl, rs1, h_slot, y1);
  gated_delta_rule_recurrent(s.gpu, q, k, v, g, beta, 0.088f, d_qsl, rs2, d_slot, y2);
  expect_same_bytes(s, y1, y2, "delta rule out");
  expect_same_bytes(s, rs1, rs2, "delta rule state");

  Tensor table = s.up(randn({100, 64}, DType::kBF16, 1.0, 809));
  Tensor ids = host_index<int32_t>({5, 99, 0, 42}, {4});
  Tensor e1 = poisoned_gpu(s, {4, 64}, DType::kBF16), e2 = poisoned_gpu(s, {4, 64}, DType::kBF16);
  embedding(s.gpu, table, ids, e1);
  embedding(s.gpu, table, s.up(ids), e2);
  expect_same_bytes(s, e1, e2, "embedding");
}

}  // namespace
}  // namespace vt
