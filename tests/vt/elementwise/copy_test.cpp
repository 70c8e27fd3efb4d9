#include "vt/ops/copy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace vt {
namespace {

Tensor random_f32(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

void poison(Tensor& t) { std::memset(t.data_ptr(), 0x7f, t.nbytes()); }

TEST(Copy, StridedSourceIntoContiguousConvertsEachElement) {
  Stream s(Device::cpu(), 3);
  Tensor a = random_f32({5, 7, 9}, 1);
  Tensor src = a.slice(2, 1, 8).transpose(0, 1);  // [7, 5, 7], non-contiguous
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3}) {
    Tensor dst = Tensor::empty(src.shape(), dt);
    poison(dst);
    copy(s, src, dst);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 7; ++k) {
          float want = a.data<float>()[j * 63 + i * 9 + (k + 1)];
          int64_t o = (i * 5 + j) * 7 + k;
          float got = dt == DType::kF32    ? dst.data<float>()[o]
                      : dt == DType::kBF16 ? bf16_to_f32(dst.data<BF16>()[o])
                      : dt == DType::kF16  ? f16_to_f32(dst.data<F16>()[o])
                                           : f8e4m3_to_f32(dst.data<F8E4M3>()[o]);
          float expect = dt == DType::kF32    ? want
                         : dt == DType::kBF16 ? bf16_to_f32(f32_to_bf16(want))
                         : dt == DType::kF16  ? f16_to_f32(f32_to_f16(want))
                                              : f8e4m3_to_f32(f32_to_f8e4m3(want));
          ASSERT_EQ(got, expect) << dtype_name(dt) << " at " << i << "," << j << "," << k;
        }
  }
}

TEST(Copy, IntoAStridedDestinationLeavesTheRestAlone) {
  Stream s(Device::cpu(), 2);
  Tensor src = random_f32({6, 3}, 2);
  Tensor big = Tensor::empty({6, 10}, DType::kF32);
  poison(big);
  float poison_value = big.data<float>()[0];
  Tensor window = big.slice(1, 4, 7);
  copy(s, src, window);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 10; ++c) {
      float got = big.data<float>()[r * 10 + c];
      if (c >= 4 && c < 7) {
        EXPECT_EQ(got, src.data<float>()[r * 3 + c - 4]);
      } else {
        EXPECT_EQ(std::memcmp(&got, &poison_value, 4), 0) << r << "," << c;
      }
    }
}

TEST(Copy, IntegersWidenAndFloatIntMixIsRefused) {
  Stream s(Device::cpu(), 2);
  Tensor a = Tensor::empty({13}, DType::kI32);
  for (int i = 0; i < 13; ++i) a.data<int32_t>()[i] = (i - 6) * 1000003;
  Tensor b = to_dtype(s, a, DType::kI64);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(b.data<int64_t>()[i], int64_t(i - 6) * 1000003);
  Tensor f = Tensor::empty({13}, DType::kF32);
  EXPECT_THROW(copy(s, a, f), vtllm::Error);
  Tensor wrong = Tensor::empty({12}, DType::kI32);
  EXPECT_THROW(copy(s, a, wrong), vtllm::Error);
}

TEST(Copy, OverlappingViewsAreRefused) {
  Stream s(Device::cpu(), 2);
  Tensor t = random_f32({8, 4}, 3);
  Tensor dst = t.slice(0, 1, 5);
  EXPECT_THROW(copy(s, t.slice(0, 0, 4), dst), vtllm::Error);
}

TEST(Copy, ContiguousAndToDeviceOnCpu) {
  Stream s(Device::cpu(), 2);
  Tensor t = random_f32({4, 5}, 4);
  Tensor tr = t.transpose(0, 1);
  Tensor c = contiguous(s, tr);
  EXPECT_TRUE(c.is_contiguous());
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(c.data<float>()[i * 4 + j], t.data<float>()[j * 5 + i]);
  EXPECT_EQ(to_device(s, t, Device::cpu()).data_ptr(), t.data_ptr());  // already there
}

TEST(Copy, RoundTripThroughGpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Stream g(Device::cuda(0));
  Stream c(Device::cpu());
  Tensor t = to_dtype(c, random_f32({33, 17}, 5), DType::kBF16);
  Tensor d = to_device(g, t, Device::cuda(0));
  EXPECT_TRUE(d.device().is_cuda());
  Tensor back = to_device(g, d, Device::cpu());
  EXPECT_EQ(std::memcmp(back.data_ptr(), t.data_ptr(), t.nbytes()), 0);
}

Tensor rows_of(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::kI32);
  std::memcpy(t.data_ptr(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

// Whether row r of 2-D `a` equals row q of 2-D `b` (same dtype, bytes).
bool same_row(const Tensor& a, int64_t r, const Tensor& b, int64_t q) {
  const size_t es = dtype_size(a.dtype());
  return std::memcmp(static_cast<const char*>(a.data_ptr()) + r * a.stride(0) * es,
                     static_cast<const char*>(b.data_ptr()) + q * b.stride(0) * es,
                     size_t(a.size(1)) * es) == 0;
}

TEST(CopyRows, GathersAndScattersStridedRows) {
  Stream s(Device::cpu(), 2);
  const Tensor full = random_f32({9, 10}, 6);
  const Tensor src = full.slice(1, 2, 8);  // [9, 6], row stride 10
  Tensor dst = Tensor::empty({5, 6}, DType::kF32);
  poison(dst);
  const Tensor before = contiguous(s, dst);
  copy_rows(s, src, rows_of({8, 0, 3}), dst, rows_of({4, 1, 0}));
  EXPECT_TRUE(same_row(dst, 4, src, 8));
  EXPECT_TRUE(same_row(dst, 1, src, 0));
  EXPECT_TRUE(same_row(dst, 0, src, 3));
  EXPECT_TRUE(same_row(dst, 2, before, 2));  // untouched
  EXPECT_TRUE(same_row(dst, 3, before, 3));
}

TEST(CopyRows, MovesRowsWithinOneTensor) {
  Stream s(Device::cpu(), 2);
  Tensor t = random_f32({6, 5}, 7);
  const Tensor before = contiguous(s, t);
  copy_rows(s, t, rows_of({0, 1}), t, rows_of({4, 5}));
  EXPECT_TRUE(same_row(t, 4, before, 0));
  EXPECT_TRUE(same_row(t, 5, before, 1));
  EXPECT_TRUE(same_row(t, 0, before, 0));
}

TEST(CopyRows, RefusesBadRowsAndShapes) {
  Stream s(Device::cpu(), 2);
  Tensor t = random_f32({6, 5}, 8);
  Tensor other = random_f32({6, 4}, 9);
  EXPECT_THROW(copy_rows(s, t, rows_of({0, 1}), t, rows_of({1, 2})), vtllm::Error);      // 1 both
  EXPECT_THROW(copy_rows(s, t, rows_of({0, 1}), other, rows_of({2, 3})), vtllm::Error);  // D
  Tensor dst = random_f32({6, 5}, 10);
  EXPECT_THROW(copy_rows(s, t, rows_of({0, 1}), dst, rows_of({2, 2})), vtllm::Error);  // repeat
  EXPECT_THROW(copy_rows(s, t, rows_of({6}), dst, rows_of({0})), vtllm::Error);        // range
  EXPECT_THROW(copy_rows(s, t, rows_of({0}), dst, rows_of({0, 1})), vtllm::Error);     // counts
  Tensor view = t.slice(0, 1, 4);
  EXPECT_THROW(copy_rows(s, t, rows_of({0}), view, rows_of({0})), vtllm::Error);  // overlap
}

// The CUDA arm against the CPU one: 16-byte rows (f32, 12 wide) and odd byte rows
// (bf16, 7 wide, strided), gather, scatter and a move within one tensor.
TEST(CopyRows, CudaMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Stream g(Device::cuda(0));
  Stream c(Device::cpu(), 2);
  const std::vector<int32_t> from = {7, 0, 5, 2}, to = {1, 6, 0, 3};
  for (const bool narrow : {false, true}) {
    const Tensor host = narrow ? to_dtype(c, random_f32({8, 9}, 11), DType::kBF16).slice(1, 1, 8)
                               : random_f32({8, 12}, 11);
    Tensor cpu_dst = contiguous(c, to_dtype(c, random_f32({8, host.size(1)}, 12), host.dtype()));
    Tensor gpu_dst = to_device(g, cpu_dst, Device::cuda(0));
    const Tensor gpu_src = to_device(g, contiguous(c, host), Device::cuda(0));
    const Tensor cpu_src = contiguous(c, host);
    copy_rows(c, cpu_src, rows_of(from), cpu_dst, rows_of(to));
    copy_rows(g, gpu_src, rows_of(from), gpu_dst, rows_of(to));
    Tensor back = to_device(g, gpu_dst, Device::cpu());
    EXPECT_EQ(std::memcmp(back.data_ptr(), cpu_dst.data_ptr(), cpu_dst.nbytes()), 0) << narrow;
    copy_rows(c, cpu_dst, rows_of({1, 3}), cpu_dst, rows_of({2, 4}));
    copy_rows(g, gpu_dst, rows_of({1, 3}), gpu_dst, rows_of({2, 4}));
    back = to_device(g, gpu_dst, Device::cpu());
    EXPECT_EQ(std::memcmp(back.data_ptr(), cpu_dst.data_ptr(), cpu_dst.nbytes()), 0) << narrow;
  }
}

}  // namespace
}  // namespace vt
