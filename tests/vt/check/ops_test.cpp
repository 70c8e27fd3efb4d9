// Every CPU op against its double-precision reference (the selfcheck set), plus
// checks that the harness itself can fail and that ops reject bad arguments by name.
#include <gtest/gtest.h>

#include "vt/check/cases.h"
#include "vt/check/harness.h"
#include "vt/ops/activation.h"
#include "vt/ops/args.h"
#include "vt/ops/embedding.h"
#include "vt/ops/gemm.h"
#include "vt/ops/norm.h"
#include "vt/ops/rope.h"
#include "vt/ops/sampling.h"

namespace vt {
namespace {

void expect_all_pass(const std::vector<check::Result>& results) {
  ASSERT_FALSE(results.empty());
  for (const check::Result& r : results)
    EXPECT_TRUE(r.passed) << r.op << " (" << r.config << "): err " << r.err << " > tol " << r.tol
                          << " " << r.note;
}

class CpuOps : public ::testing::TestWithParam<int> {};

TEST_P(CpuOps, NormsMatchDoubleReference) {
  Stream s(Device::cpu());
  check::Harness h(s, uint64_t(GetParam()));
  check::check_norms(h);
  expect_all_pass(h.results());
}
TEST_P(CpuOps, ActivationsMatchDoubleReference) {
  Stream s(Device::cpu());
  check::Harness h(s, uint64_t(GetParam()));
  check::check_activations(h);
  expect_all_pass(h.results());
}
TEST_P(CpuOps, GemmMatchesDoubleReference) {
  Stream s(Device::cpu());
  check::Harness h(s, uint64_t(GetParam()));
  check::check_gemm(h);
  expect_all_pass(h.results());
}
TEST_P(CpuOps, EmbeddingRopeArgmaxMatchReference) {
  Stream s(Device::cpu());
  check::Harness h(s, uint64_t(GetParam()));
  check::check_embedding(h);
  check::check_rope(h);
  check::check_argmax(h);
  expect_all_pass(h.results());
}
TEST_P(CpuOps, GdnGatesAndGatedNormMatchDoubleReference) {
  Stream s(Device::cpu());
  check::Harness h(s, uint64_t(GetParam()));
  check::check_gdn(h);
  expect_all_pass(h.results());
}
INSTANTIATE_TEST_SUITE_P(Seeds, CpuOps, ::testing::Values(1, 2, 3));

TEST(CpuOps, SingleThreadedGemmMatchesPooled) {
  Stream one(Device::cpu(), 1), many(Device::cpu(), 4);
  check::Harness h1(one, 9), h4(many, 9);
  check::check_gemm(h1);
  check::check_gemm(h4);
  expect_all_pass(h1.results());
  expect_all_pass(h4.results());
}

TEST(Harness, UnwrittenOutputFails) {
  Stream s(Device::cpu());
  check::Harness h(s, 1);
  Tensor out = h.poisoned({3, 5}, DType::kBF16);
  h.compare("nothing", "poison only", out, std::vector<double>(15, 1.0), 1.0);
  ASSERT_EQ(h.results().size(), 1u);
  EXPECT_FALSE(h.results()[0].passed);
}

TEST(Harness, WrongResultFailsAndThrowingOpIsReported) {
  Stream s(Device::cpu());
  check::Harness h(s, 2);
  auto x = h.random({4, 8}, DType::kF32);
  std::vector<double> off = x.vals;
  off[5] *= 1.001;
  h.compare("identity", "one element off by 1e-3", x.t, off, check::tolerance(DType::kF32));
  EXPECT_FALSE(h.results().back().passed);
  h.run("throws", "", false, [] { VT_THROW("boom"); });
  EXPECT_FALSE(h.results().back().passed);
  EXPECT_EQ(h.results().back().note, "boom");
}

// Runs fn, which must throw a vtllm::Error whose message contains `part`.
template <class F>
void expect_error(F&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const vtllm::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(OpArgs, BadArgumentsAreNamed) {
  Stream s(Device::cpu());
  Tensor x = Tensor::empty({4, 8}, DType::kF32), w = Tensor::empty({7}, DType::kF32);
  Tensor out = Tensor::empty({4, 8}, DType::kF32);
  expect_error([&] { rms_norm(s, x, w, 1e-6f, RmsNormKind::kPlain, out); }, "rms_norm: w");
  Tensor wi = Tensor::empty({8}, DType::kI32);
  expect_error([&] { rms_norm(s, x, wi, 1e-6f, RmsNormKind::kPlain, out); }, "expected dtype f32");
  Tensor lw = Tensor::empty({5, 9}, DType::kBF16), lo = Tensor::empty({4, 5}, DType::kF32);
  expect_error([&] { linear(s, x, lw, lo); }, "linear: w");
  Tensor odd = Tensor::empty({4, 7}, DType::kF32), half = Tensor::empty({4, 3}, DType::kF32);
  expect_error([&] { silu_and_mul(s, odd, half); }, "even last dim");
  Tensor table = Tensor::empty({10, 4}, DType::kF32), ids = Tensor::empty({2}, DType::kI64);
  ids.data<int64_t>()[0] = 3;
  ids.data<int64_t>()[1] = 10;
  Tensor eo = Tensor::empty({2, 4}, DType::kF32);
  expect_error([&] { embedding(s, table, ids, eo); }, "ids[1] = 10");
  Tensor t3 = Tensor::empty({8, 4}, DType::kF32);
  Tensor overlap = t3.slice(0, 1, 5), src = t3.slice(0, 0, 4);
  expect_error([&] { add(s, src, src, overlap); }, "overlaps");
  // A transposed x has no contiguous last dim.
  Tensor xt = Tensor::empty({8, 4}, DType::kF32).transpose(0, 1);
  Tensor o2 = Tensor::empty({4, 8}, DType::kF32);
  expect_error([&] { sigmoid(s, xt, o2); }, "last dim contiguous");
}

TEST(RopeCosSin1d, StreamFormEqualsTheHostTable) {
  // i64 positions at stride 2 (every other element of a wider buffer), up to 2^18.
  Stream s(Device::cpu(), 3);
  const int64_t n = 97, rd = 64;
  Tensor wide = Tensor::empty({2 * n}, DType::kI64);
  for (int64_t i = 0; i < 2 * n; ++i) wide.data<int64_t>()[i] = (i * 2731) % 262145;
  Tensor pos = wide.view({n, 2}).select(1, 1);
  ASSERT_EQ(pos.stride(0), 2);
  Tensor want = rope_cos_sin_1d(pos, rd, 1e7);
  Tensor got = Tensor::empty({n, rd}, DType::kF32);
  rope_cos_sin_1d(s, pos, 1e7, got);
  ASSERT_EQ(std::memcmp(want.data_ptr(), got.data_ptr(), want.nbytes()), 0);
  // Spot-check against double: the f32 angle's rounding bounds the error.
  const int64_t t = 5, i = 3;
  const double angle = double(pos.data<int64_t>()[t * 2]) * std::pow(1e7, -2.0 * i / rd);
  EXPECT_NEAR(want.data<float>()[t * rd + i], std::cos(angle), 1e-6 + std::fabs(angle) * 2e-7);
  Tensor bad = Tensor::empty({n, rd + 1}, DType::kF32);
  expect_error([&] { rope_cos_sin_1d(s, pos, 1e7, bad); }, "must have an even width");
}

TEST(OpArgs, MissingBackendNamesTheOpAndTheDevice) {
  // Every op has a CUDA arm now; the message an op without one would throw.
  expect_error([] { no_backend("softmax", Device::cuda(0)); },
               "softmax: no CUDA implementation (tensors on cuda:0)");
}

}  // namespace
}  // namespace vt
