// vt::add_rms_norm on the CPU: bit-identical to vt::add then vt::rms_norm (the pair it
// replaces in the decoder), for every dtype and both norm kinds; argument checks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cuda_compare.h"
#include "vt/ops/activation.h"
#include "vt/ops/copy.h"
#include "vt/ops/norm.h"

namespace vt {
namespace {

// Random normals rounded to a dtype, on the CPU (the CUDA tests' helper, host-only).
using cudatest::randn;

Tensor clone(Stream& s, const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  copy(s, t, c);
  return c;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

struct Case {
  DType residual, delta, out;
};

TEST(AddRmsNorm, EqualsAddThenRmsNormBitForBit) {
  Stream s(Device::cpu());
  const Case cases[] = {{DType::kF32, DType::kF32, DType::kF32},
                        {DType::kBF16, DType::kBF16, DType::kBF16},
                        {DType::kF16, DType::kF16, DType::kF16},
                        {DType::kBF16, DType::kF32, DType::kF32},
                        {DType::kF32, DType::kBF16, DType::kBF16}};
  uint64_t seed = 1;
  for (const Case& c : cases)
    for (RmsNormKind kind : {RmsNormKind::kPlain, RmsNormKind::kOnePlus})
      for (int64_t rows : {1, 7, 64}) {
        const int64_t cols = 1000 + 17 * rows;  // not a multiple of any vector width
        const std::string what = std::string(dtype_name(c.residual)) + "/" + dtype_name(c.delta) +
                                 "->" + dtype_name(c.out) +
                                 (kind == RmsNormKind::kPlain ? " plain" : " 1+w") + " rows " +
                                 std::to_string(rows);
        // A residual much larger than the delta: the rounding of the add matters.
        const Tensor x0 = randn({rows, cols}, c.residual, 4.0f, seed++);
        const Tensor delta = randn({rows, cols}, c.delta, 0.05f, seed++);
        const Tensor w = randn({cols}, DType::kBF16, 0.3f, seed++);
        Tensor x_ref = clone(s, x0), out_ref = Tensor::empty({rows, cols}, c.out);
        add(s, x_ref, delta, x_ref);
        rms_norm(s, x_ref, w, 1e-6f, kind, out_ref);
        Tensor x = clone(s, x0), out = Tensor::empty({rows, cols}, c.out);
        add_rms_norm(s, x, delta, w, 1e-6f, kind, out);
        EXPECT_TRUE(same_bytes(x, x_ref)) << what << ": residual";
        EXPECT_TRUE(same_bytes(out, out_ref)) << what << ": out";
        EXPECT_FALSE(same_bytes(x, x0)) << what << ": the residual was not updated";
      }
}

TEST(AddRmsNorm, OutMayBeDelta) {
  Stream s(Device::cpu());
  const Tensor x0 = randn({5, 300}, DType::kBF16, 2.0f, 11);
  const Tensor d0 = randn({5, 300}, DType::kBF16, 0.5f, 12);
  const Tensor w = randn({300}, DType::kF32, 0.3f, 13);
  Tensor x_ref = clone(s, x0), out_ref = Tensor::empty({5, 300}, DType::kBF16);
  add(s, x_ref, d0, x_ref);
  rms_norm(s, x_ref, w, 1e-6f, RmsNormKind::kOnePlus, out_ref);
  Tensor x = clone(s, x0), d = clone(s, d0);
  add_rms_norm(s, x, d, w, 1e-6f, RmsNormKind::kOnePlus, d);
  EXPECT_TRUE(same_bytes(x, x_ref));
  EXPECT_TRUE(same_bytes(d, out_ref));
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const vtllm::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(AddRmsNorm, BadArgumentsAreNamed) {
  Stream s(Device::cpu());
  Tensor x = Tensor::empty({4, 8}, DType::kF32), d = Tensor::empty({4, 8}, DType::kF32);
  Tensor w = Tensor::empty({8}, DType::kF32), out = Tensor::empty({4, 8}, DType::kF32);
  Tensor w7 = Tensor::empty({7}, DType::kF32);
  expect_error([&] { add_rms_norm(s, x, d, w7, 1e-6f, RmsNormKind::kPlain, out); },
               "add_rms_norm: w");
  Tensor d2 = Tensor::empty({4, 9}, DType::kF32);
  expect_error([&] { add_rms_norm(s, x, d2, w, 1e-6f, RmsNormKind::kPlain, out); },
               "add_rms_norm: delta");
  Tensor wide = Tensor::empty({4, 16}, DType::kF32);
  Tensor strided = wide.slice(1, 0, 8);
  expect_error([&] { add_rms_norm(s, strided, d, w, 1e-6f, RmsNormKind::kPlain, out); },
               "must be contiguous");
  expect_error([&] { add_rms_norm(s, x, d, w, 1e-6f, RmsNormKind::kPlain, x); }, "overlaps");
  expect_error([&] { add_rms_norm(s, x, x, w, 1e-6f, RmsNormKind::kPlain, out); }, "overlaps");
  Tensor x3 = Tensor::empty({2, 4, 8}, DType::kF32);
  expect_error([&] { add_rms_norm(s, x3, x3, w, 1e-6f, RmsNormKind::kPlain, x3); },
               "[tokens, hidden]");
}

}  // namespace
}  // namespace vt
