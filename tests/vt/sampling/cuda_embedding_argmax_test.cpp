// The CUDA arms of embedding and argmax against their CPU twins: bad ids refused, ties and
// NaN at vocabulary size. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cuda_compare.h"
#include "vt/ops/embedding.h"
#include "vt/ops/sampling.h"

namespace vt {
namespace {

using cudatest::expect_close;
using cudatest::poisoned_gpu;
using cudatest::randn;
using cudatest::Streams;

TEST(CudaEmbedding, GathersRowsAndRejectsBadIds) {
  VT_REQUIRE_GPU();
  Streams s;
  Tensor table = randn({32000, 1024}, DType::kBF16, 1.0, 8);
  Tensor ids = Tensor::empty({77}, DType::kI32);
  std::mt19937 rng(9);
  for (int64_t i = 0; i < 77; ++i) ids.data<int32_t>()[i] = int32_t(rng() % 32000);
  ids.data<int32_t>()[0] = 31999;
  Tensor want = Tensor::empty({77, 1024}, DType::kF32);
  embedding(s.cpu, table, ids, want);
  Tensor tg = s.up(table);
  for (bool ids_on_gpu : {false, true}) {
    Tensor got = poisoned_gpu(s, {77, 1024}, DType::kF32);
    embedding(s.gpu, tg, ids_on_gpu ? s.up(ids) : ids, got);
    expect_close(s, want, got, 0, 0, ids_on_gpu ? "embedding, ids on the GPU" : "embedding");
  }
  ids.data<int32_t>()[5] = 32000;
  Tensor got = poisoned_gpu(s, {77, 1024}, DType::kF32);
  EXPECT_THROW(embedding(s.gpu, tg, ids, got), vtllm::Error);
}

TEST(CudaArgmax, VocabRowsWithTiesAndNaN) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t rows = 7, vocab = 151936;
  Tensor f = randn({rows, vocab}, DType::kF32, 3.0, 10);
  f.data<float>()[1 * vocab + 9000] = f.data<float>()[1 * vocab + 150000] = 100.0f;  // tie
  f.data<float>()[2 * vocab + 151935] = 100.0f;                                      // last
  f.data<float>()[3 * vocab + 77] = NAN;                                             // NaN wins
  f.data<float>()[3 * vocab + 5] = 100.0f;
  Tensor logits = to_dtype(s.cpu, f, DType::kBF16);
  Tensor want = Tensor::empty({rows}, DType::kI64);
  argmax(s.cpu, logits, want);
  Tensor got = poisoned_gpu(s, {rows}, DType::kI64);
  argmax(s.gpu, s.up(logits), got);
  Tensor back = s.down(got);
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(back.data<int64_t>()[r], want.data<int64_t>()[r]) << r;
  EXPECT_EQ(back.data<int64_t>()[1], 9000);
  EXPECT_EQ(back.data<int64_t>()[3], 77);
}

}  // namespace
}  // namespace vt
