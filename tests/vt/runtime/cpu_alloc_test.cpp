// CPU tensor storage (plain malloc, aligned by hand: vt/tensor.cpp): 64-byte aligned,
// every byte usable, freed through the block's own start (ASan checks both in the
// sanitizer job). The heap's growth under load is tools/server_tests/soak.sh's gate.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "vt/tensor.h"

namespace vt {
namespace {

TEST(CpuAlloc, StorageIs64ByteAlignedAndWritable) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const int64_t n = 1 + int64_t(rng() % 100000);
    Tensor t = Tensor::empty({n}, DType::kU8, Device::cpu());
    ASSERT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u) << n;
    auto* p = t.data<uint8_t>();
    p[0] = 1;
    p[n - 1] = 2;  // the whole range is ours (ASan checks it in the sanitizer job)
  }
  Tensor empty = Tensor::empty({0}, DType::kF32, Device::cpu());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(empty.data_ptr()) % 64, 0u);
}

}  // namespace
}  // namespace vt
