// The index-tensor rule of vt/ops/indices.h that needs no GPU: which side index tensors
// may live on, the dtype and shape checks, and host values checked against
// AttentionBounds (a bounded call computes what an unbounded one does on the CPU).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "vt/ops/attention.h"
#include "vt/ops/gdn.h"
#include "vt/ops/indices.h"

namespace vt {
namespace {

template <class T>
Tensor index_tensor(const std::vector<T>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DTypeOf<T>::value);
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

Tensor filled(const Shape& shape, float v) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v * float(i % 7 - 3);
  return t;
}

// A tensor that claims to live on cuda:0 (never dereferenced: metadata checks only).
Tensor fake_gpu(DType dt, const Shape& shape) {
  static int64_t storage[64];
  return Tensor::from_blob(storage, shape, dt, Device::cuda(0), nullptr);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const vtllm::Error& e) {
    return e.what();
  }
  return "";
}

TEST(IndexRule, CpuStreamRejectsDeviceIndexTensors) {
  Stream s(Device::cpu(), 1);
  Tensor k = filled({2, 1, 4}, 0.5f), kc = filled({3, 2, 1, 4}, 0.f), vc = filled({3, 2, 1, 4}, 0.f);
  const std::string e =
      error_of([&] { kv_cache_write(s, k, k, fake_gpu(DType::kI64, {2}), kc, vc); });
  EXPECT_NE(e.find("slot_mapping"), std::string::npos) << e;
  EXPECT_NE(e.find("must be on the CPU or the stream's device"), std::string::npos) << e;

  Tensor x = filled({2, 3}, 1.f), w = filled({3, 2}, 1.f), out = filled({2, 3}, 0.f);
  Tensor conv = filled({4, 1, 3}, 0.f);
  const std::string g = error_of([&] {
    causal_conv1d_silu(s, x, w, index_tensor<int32_t>({0, 2}, {2}), conv,
                       fake_gpu(DType::kI32, {1}), out);
  });
  EXPECT_NE(g.find("state_slots"), std::string::npos) << g;
}

TEST(IndexRule, DtypesAreChecked) {
  Stream s(Device::cpu(), 1);
  Tensor k = filled({2, 1, 4}, 0.5f), kc = filled({3, 2, 1, 4}, 0.f), vc = filled({3, 2, 1, 4}, 0.f);
  EXPECT_THROW(kv_cache_write(s, k, k, index_tensor<int32_t>({0, 1}, {2}), kc, vc), vtllm::Error);
  Tensor q = filled({2, 2, 4}, 0.25f), out = filled({2, 2, 4}, 0.f);
  EXPECT_THROW(paged_attention(s, q, kc, vc, index_tensor<int64_t>({0, 2}, {2}),
                               index_tensor<int32_t>({2}, {1}), index_tensor<int32_t>({1}, {1, 1}),
                               0.5f, out),
               vtllm::Error);
  EXPECT_THROW(paged_attention(s, q, kc, vc, index_tensor<int32_t>({0, 2}, {2}),
                               index_tensor<int32_t>({2}, {1}), index_tensor<int64_t>({1}, {1, 1}),
                               0.5f, out),
               vtllm::Error);
}

TEST(IndexRule, DeviceIndexHelpersCheckMetadataOnly) {
  Stream s(Device::cpu(), 1);
  // On a CPU stream every index is host-side; undefined tensors are skipped.
  Tensor a = index_tensor<int32_t>({0, 1}, {2});
  EXPECT_FALSE(indices_on_device(s, "op", {{&a, "a"}, {&a, "b"}}));
  Tensor undef;
  EXPECT_FALSE(indices_on_device(s, "op", {{&undef, "u"}}));
  // device_index: dtype, contiguity and length from the metadata.
  Tensor d = fake_gpu(DType::kI32, {5});
  EXPECT_EQ(device_index(d, "op", "d", DType::kI32, 5), d.data_ptr());
  EXPECT_EQ(device_index(d, "op", "d", DType::kI32, -1), d.data_ptr());
  EXPECT_THROW(device_index(d, "op", "d", DType::kI64, 5), vtllm::Error);
  EXPECT_THROW(device_index(d, "op", "d", DType::kI32, 4), vtllm::Error);
  Tensor strided = fake_gpu(DType::kI32, {4, 2}).select(1, 0);
  EXPECT_THROW(device_index(strided, "op", "s", DType::kI32, 4), vtllm::Error);
}

// Two decode requests over a 4-slot-block cache: bounds that cover them leave the CPU
// result unchanged; bounds they exceed are an error naming the bound.
TEST(IndexRule, HostIndicesAreCheckedAgainstBounds) {
  Stream s(Device::cpu(), 1);
  const int64_t bs = 4, hkv = 1, d = 4;
  Tensor kc = filled({5, bs, hkv, d}, 0.3f), vc = filled({5, bs, hkv, d}, 0.7f);
  Tensor q = filled({2, 2, d}, 0.25f);
  Tensor qsl = index_tensor<int32_t>({0, 1, 2}, {3}), sl = index_tensor<int32_t>({6, 3}, {2});
  Tensor bt = index_tensor<int32_t>({1, 2, 3, 0}, {2, 2});
  Tensor want = filled({2, 2, d}, 0.f), got = filled({2, 2, d}, 0.f);
  paged_attention(s, q, kc, vc, qsl, sl, bt, 0.5f, want);
  paged_attention(s, q, kc, vc, qsl, sl, bt, 0.5f, got, AttentionBounds{4, 1, 8});
  EXPECT_EQ(std::memcmp(want.data_ptr(), got.data_ptr(), want.nbytes()), 0);
  const std::string e = error_of(
      [&] { paged_attention(s, q, kc, vc, qsl, sl, bt, 0.5f, got, AttentionBounds{4, 1, 5}); });
  EXPECT_NE(e.find("exceeds the bounds"), std::string::npos) << e;
  EXPECT_THROW(paged_attention(s, q, kc, vc, qsl, sl, bt, 0.5f, got, AttentionBounds{1, 1, 8}),
               vtllm::Error);
  EXPECT_FALSE((AttentionBounds{0, 1, 8}).defined());
}

}  // namespace
}  // namespace vt
