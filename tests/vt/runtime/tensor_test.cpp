#include "vt/tensor.h"

#include <gtest/gtest.h>

#include <numeric>

namespace vt {
namespace {

// A CPU f32 tensor holding 0, 1, 2, ... so a view's elements name their position.
Tensor iota(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  float* p = t.data<float>();
  std::iota(p, p + t.numel(), 0.0f);
  return t;
}

// Element at a multi-index through strides (independent of the view code).
float at(const Tensor& t, const Shape& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride(int64_t(d));
  return t.data<float>()[off];
}

TEST(Tensor, EmptyIsContiguousAndAligned) {
  Tensor t = Tensor::empty({3, 5, 7}, DType::kBF16);
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.numel(), 105);
  EXPECT_EQ(t.nbytes(), 210u);
  EXPECT_EQ(t.strides(), (Shape{35, 7, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  EXPECT_EQ(t.str(), "bf16[3, 5, 7] cpu");
  EXPECT_THROW(t.data<float>(), vtllm::Error);
  EXPECT_NO_THROW(t.data<BF16>());
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, SliceSelectTransposeShareStorage) {
  Tensor t = iota({4, 6});
  Tensor s = t.slice(1, 2, 5);
  EXPECT_EQ(s.shape(), (Shape{4, 3}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(at(s, {1, 0}), 8.0f);
  Tensor r = t.select(0, -1);
  EXPECT_EQ(r.shape(), (Shape{6}));
  EXPECT_EQ(at(r, {2}), 20.0f);
  Tensor tr = t.transpose(0, 1);
  EXPECT_EQ(tr.shape(), (Shape{6, 4}));
  EXPECT_EQ(at(tr, {5, 3}), 23.0f);
  t.data<float>()[9] = -1.0f;  // writes through the parent show in the views
  EXPECT_EQ(at(s, {1, 1}), -1.0f);
  EXPECT_THROW(t.slice(0, 3, 5), vtllm::Error);
  EXPECT_THROW(t.select(2, 0), vtllm::Error);
}

TEST(Tensor, ViewNeedsContiguousReshapeFollowsStrides) {
  Tensor t = iota({2, 3, 4});
  Tensor v = t.view({6, -1});
  EXPECT_EQ(v.shape(), (Shape{6, 4}));
  EXPECT_EQ(at(v, {5, 3}), 23.0f);
  EXPECT_THROW(t.view({5, -1}), vtllm::Error);
  // A row slice of [2, 3, 4] over dim 2 keeps dims 0 and 1 mergeable.
  Tensor s = t.slice(2, 1, 3);  // [2, 3, 2], strides [12, 4, 1]
  EXPECT_THROW(s.view({6, 2}), vtllm::Error);
  Tensor m = s.reshape({6, 2});
  EXPECT_EQ(m.strides(), (Shape{4, 1}));
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(at(m, {i, j}), float(i * 4 + j + 1));
  // Splitting a strided dim is fine; merging across the gap is not.
  Tensor sp = iota({6, 4}).slice(1, 0, 2).reshape({2, 3, 2, 1});
  EXPECT_EQ(sp.strides(), (Shape{12, 4, 1, 1}));
  EXPECT_EQ(at(sp, {1, 2, 1, 0}), 21.0f);
  EXPECT_THROW(s.reshape({12}), vtllm::Error);
  // A transposed matrix cannot be flattened without a copy.
  EXPECT_THROW(iota({3, 4}).transpose(0, 1).reshape({12}), vtllm::Error);
  Tensor u = t.unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{2, 1, 3, 4}));
  EXPECT_TRUE(u.is_contiguous());
}

TEST(Tensor, FromBlobKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(12, 2.5f);
  std::weak_ptr<std::vector<float>> watch = owner;
  Tensor t = Tensor::from_blob(owner->data(), {3, 4}, DType::kF32, Device::cpu(), owner);
  owner.reset();
  Tensor v = t.slice(0, 1, 2);
  t = Tensor();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(at(v, {0, 3}), 2.5f);
  v = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(Tensor, MayAliasDetectsOverlap) {
  Tensor t = iota({4, 8});
  EXPECT_TRUE(t.slice(0, 0, 2).may_alias(t.slice(0, 1, 3)));
  EXPECT_FALSE(t.slice(0, 0, 2).may_alias(t.slice(0, 2, 4)));
  EXPECT_FALSE(t.may_alias(iota({4, 8})));
}

TEST(Tensor, CudaAllocationWithoutGpuIsAnError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(Tensor::empty({4}, DType::kF32, Device::cuda(0)), vtllm::Error);
}

}  // namespace
}  // namespace vt
