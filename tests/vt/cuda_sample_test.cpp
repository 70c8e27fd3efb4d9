// vt::sample's CUDA arm against its CPU arm at Qwen's vocabulary (151936), batch 1 to
// 64, every parameter combination, f32 and bf16 logits (bf16: many exact ties), raw
// and processed logprobs. Tokens must be equal except on rows that sit within 1e-6 of
// a boundary (the CPU arm itself changes its token when the uniform or top_p moves by
// 1e-6): those are counted, reported and must be rare. Logprobs within 1e-4, ranks
// and top-N ids equal. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/sampling.h"

namespace vt {
namespace {

using cudatest::randn;
using cudatest::Streams;

struct RowSpec {
  SampleRowParams p;
  std::vector<SampleTokenEdit> edits;  // bias ranges index `bias`
  std::vector<float> bias;
};

// Combination c: temperature x top_k x top_p x min_p x penalties; edits and logprobs
// from rng.
RowSpec make_row(int c, int64_t vocab, std::mt19937& rng) {
  RowSpec s;
  const float temps[] = {0.0f, 0.7f, 1.3f};
  const int top_ks[] = {0, 1, 20, 1000};
  const float top_ps[] = {1.0f, 0.9f, 0.5f};
  s.p.temperature = temps[c % 3];
  s.p.top_k = top_ks[(c / 3) % 4];
  s.p.top_p = top_ps[(c / 12) % 3];
  s.p.log_min_p = (c / 36) % 2 ? std::log(0.05f) : -INFINITY;
  if ((c / 72) % 2) s.p.repetition = 1.3f, s.p.frequency = 0.4f, s.p.presence = -0.3f;
  s.p.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  const int lps[] = {-1, 0, 1, 5, 20, 256};
  s.p.logprobs = lps[rng() % 6];
  std::vector<int32_t> ids(60);
  for (auto& t : ids) t = int32_t(rng() % uint32_t(vocab));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t t : ids) {
    SampleTokenEdit e;
    e.token = t;
    e.output_count = rng() % 3 == 0 ? int32_t(rng() % 4) : 0;
    e.in_prompt = rng() % 2;
    e.masked = rng() % 20 == 0;
    e.bias_begin = int32_t(s.bias.size());
    for (int j = 0, n = rng() % 8 == 0 ? 1 + int(rng() % 2) : 0; j < n; ++j)
      s.bias.push_back(float(int(rng() % 21) - 10) * 0.75f);
    e.bias_end = int32_t(s.bias.size());
    s.edits.push_back(e);
  }
  return s;
}

SampleBatch batch_of(const std::vector<RowSpec>& specs, bool processed) {
  SampleBatch b;
  b.processed_logprobs = processed;
  b.edit_start.push_back(0);
  for (const RowSpec& s : specs) {
    b.rows.push_back(s.p);
    const int32_t off = int32_t(b.bias.size());
    for (SampleTokenEdit e : s.edits) {
      e.bias_begin += off;
      e.bias_end += off;
      b.edits.push_back(e);
    }
    b.bias.insert(b.bias.end(), s.bias.begin(), s.bias.end());
    b.edit_start.push_back(int64_t(b.edits.size()));
  }
  return b;
}

// True when the CPU arm's token for row r moves with the uniform or top_p nudged by 1e-6.
bool near_boundary(Stream& cpu, const Tensor& logits, int64_t r, const RowSpec& spec,
                   bool processed, int32_t token) {
  const Tensor row = logits.slice(0, r, r + 1);
  for (int k = 0; k < 4; ++k) {
    RowSpec s = spec;
    s.p.logprobs = -1;
    if (k < 2) s.p.uniform = std::clamp(s.p.uniform + (k ? 1e-6 : -1e-6), 0.0, 0.999999999);
    else s.p.top_p = std::clamp(s.p.top_p + (k == 3 ? 1e-6f : -1e-6f), 1e-6f, 1.0f);
    if (sample(cpu, row, batch_of({s}, processed)).token[0] != token) return true;
  }
  return false;
}

TEST(CudaSample, MatchesCpuArmAtQwenVocab) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t vocab = 151936;
  std::mt19937 rng(2024);
  int rows_checked = 0, boundary_rows = 0, combo = 0;
  for (DType dt : {DType::kBF16, DType::kF32}) {
    for (int64_t batch : {1, 2, 5, 8, 16, 33, 64, 64, 64}) {
      std::vector<RowSpec> specs;
      for (int64_t r = 0; r < batch; ++r) specs.push_back(make_row(combo++, vocab, rng));
      Tensor logits = randn({batch, vocab}, dt, 2.5, rng());
      const Tensor up = s.up(logits);
      for (bool processed : {false, true}) {
        const SampleBatch b = batch_of(specs, processed);
        const SampleOutput want = sample(s.cpu, logits, b);
        const SampleOutput got = sample(s.gpu, up, b);
        ASSERT_EQ(got.token.size(), size_t(batch));
        ASSERT_EQ(got.top_start, want.top_start);
        for (int64_t r = 0; r < batch; ++r) {
          ++rows_checked;
          const std::string at = std::string(dtype_name(dt)) + " batch " + std::to_string(batch) +
                                 " row " + std::to_string(r) + " processed " +
                                 std::to_string(processed);
          if (got.token[size_t(r)] != want.token[size_t(r)]) {
            const bool boundary =
                near_boundary(s.cpu, logits, r, specs[size_t(r)], processed, want.token[size_t(r)]);
            EXPECT_TRUE(boundary) << at << ": cuda " << got.token[size_t(r)] << " cpu "
                                  << want.token[size_t(r)];
            if (boundary) {
              ++boundary_rows;
              std::printf("boundary row (%s): cuda %d cpu %d\n", at.c_str(), got.token[size_t(r)],
                          want.token[size_t(r)]);
            }
            continue;  // logprobs of different tokens differ
          }
          if (specs[size_t(r)].p.logprobs < 0) continue;
          EXPECT_NEAR(got.logprob[size_t(r)], want.logprob[size_t(r)], 1e-4) << at;
          EXPECT_EQ(got.rank[size_t(r)], want.rank[size_t(r)]) << at;
          for (int64_t i = want.top_start[size_t(r)]; i < want.top_start[size_t(r + 1)]; ++i) {
            const float w = want.top_logprob[size_t(i)], g = got.top_logprob[size_t(i)];
            EXPECT_TRUE(w == g || std::abs(w - g) <= 1e-4) << at << " top " << i;
            EXPECT_EQ(got.top_token[size_t(i)], want.top_token[size_t(i)]) << at << " top " << i;
          }
        }
      }
    }
  }
  std::printf("CudaSample: %d rows, %d within 1e-6 of a boundary\n", rows_checked, boundary_rows);
  EXPECT_LE(boundary_rows * 100, rows_checked);  // rare: at most 1%
}

TEST(CudaSample, GreedyEqualsArgmaxAndMaskedRowsThrow) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t vocab = 151936;
  Tensor f = randn({2, vocab}, DType::kF32, 3.0, 5);
  f.data<float>()[9000] = f.data<float>()[150000] = 50.0f;  // a tie: the lower id wins
  SampleBatch b;
  b.rows.resize(2);
  b.rows[0].temperature = b.rows[1].temperature = 0.0f;
  b.edit_start = {0, 0, 0};
  const SampleOutput got = sample(s.gpu, s.up(f), b);
  Tensor ids = Tensor::empty({2}, DType::kI64);
  argmax(s.cpu, f, ids);
  EXPECT_EQ(got.token[0], 9000);
  EXPECT_EQ(got.token[1], ids.data<int64_t>()[1]);

  SampleBatch masked;
  masked.rows.resize(1);
  masked.edit_start = {0, 2};
  masked.edits = {{.token = 0, .masked = true}, {.token = 1, .masked = true}};
  EXPECT_THROW(sample(s.gpu, s.up(f.slice(1, 0, 2).slice(0, 0, 1)), masked), vtllm::Error);
}

}  // namespace
}  // namespace vt
