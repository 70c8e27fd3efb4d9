// vt::sample's CUDA arm against its CPU arm at Qwen's vocabulary (151936), batch 1 to
// 64, every parameter combination, f32 and bf16 logits (bf16: many exact ties), raw
// and processed logprobs. Tokens must be equal except on rows that sit within 1e-6 of
// a boundary (the CPU arm itself changes its token when the uniform or top_p moves by
// 1e-6): those are counted, reported and must be rare. Logprobs within 1e-4, ranks
// and top-N ids equal. Also the other kernels of cuda/sampling/sampling.cu against the
// CPU: argmax (every split of a row, ties across the splits, NaN, graph replay) and
// embedding (every block shape). Vocabulary masks (MasksMatchCpuArm). Skipped without a
// GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "vt/ops/copy.h"
#include "vt/ops/embedding.h"
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
    if (k < 2)
      s.p.uniform = std::clamp(s.p.uniform + (k ? 1e-6 : -1e-6), 0.0, 0.999999999);
    else
      s.p.top_p = std::clamp(s.p.top_p + (k == 3 ? 1e-6f : -1e-6f), 1e-6f, 1.0f);
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

// Vocabulary masks (step 0) on CUDA against the CPU arm: rows without masks, with a
// dense logits_mask, a sparse token_mask (a few hundred ids, as allowed_token_ids), both,
// and mask rows shared between rows; raw and processed logprobs. Tokens equal except
// rows within 1e-6 of a boundary (as MatchesCpuArmAtQwenVocab); every token allowed.
TEST(CudaSample, MasksMatchCpuArm) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t vocab = 151936, words = mask_words(vocab);
  std::mt19937 rng(77);
  int rows_checked = 0, differ = 0;
  for (DType dt : {DType::kBF16, DType::kF32}) {
    const int64_t batch = 48;
    std::vector<RowSpec> specs;
    for (int64_t r = 0; r < batch; ++r) specs.push_back(make_row(int(r * 5 + 1), vocab, rng));
    // Mask rows: 0..3 dense (~5/8 allowed), 4..7 sparse (300 ids).
    std::vector<uint32_t> bitmask(size_t(8 * words), 0u);
    for (int k = 0; k < 8; ++k) {
      uint32_t* m = bitmask.data() + k * words;
      if (k < 4) {
        for (int64_t w = 0; w < words; ++w)
          m[w] = uint32_t(rng()) | (uint32_t(rng()) & uint32_t(rng()));
      } else {
        for (int i = 0; i < 300; ++i) {
          const int64_t t = int64_t(rng() % uint32_t(vocab));
          m[t / 32] |= 1u << (t % 32);
        }
      }
    }
    for (int64_t r = 0; r < batch; ++r) {
      SampleRowParams& p = specs[size_t(r)].p;
      if (r % 4 == 1 || r % 4 == 3) p.logits_mask = int32_t(r % 4);  // shared by several rows
      if (r % 4 >= 2) p.token_mask = int32_t(4 + r % 4);
    }
    Tensor logits = randn({batch, vocab}, dt, 2.5, rng());
    const Tensor up = s.up(logits);
    for (bool processed : {false, true}) {
      SampleBatch b = batch_of(specs, processed);
      b.bitmask = bitmask;
      const SampleOutput want = sample(s.cpu, logits, b);
      const SampleOutput got = sample(s.gpu, up, b);
      ASSERT_EQ(got.top_start, want.top_start);
      for (int64_t r = 0; r < batch; ++r) {
        ++rows_checked;
        const SampleRowParams& p = specs[size_t(r)].p;
        const std::string at = std::string(dtype_name(dt)) + " row " + std::to_string(r) +
                               " processed " + std::to_string(processed);
        for (int32_t k : {p.logits_mask, p.token_mask})
          if (k >= 0) {
            EXPECT_TRUE(mask_allows(bitmask.data() + k * words, got.token[size_t(r)])) << at;
          }
        if (got.token[size_t(r)] != want.token[size_t(r)]) {
          ++differ;
          EXPECT_GT(p.temperature, 0.0f) << at << ": greedy rows must agree";
          continue;
        }
        if (p.logprobs < 0) continue;
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
  std::printf("CudaSample masks: %d rows, %d tokens differ (boundary draws)\n", rows_checked,
              differ);
  EXPECT_LE(differ * 50, rows_checked);  // at most 2%
}

// A step of greedy rows under masks (a grammar on every request, no logprobs) takes the
// argmax kernel with the masks applied: tokens equal the CPU arm's, every row of 1, 8
// and 64 at Qwen's vocabulary: unmasked rows, dense and sparse logits masks, token
// masks, both, shared mask rows, a planted tie between two allowed ids in different
// segments (the lower wins), a larger logit on a masked id, and a row with every token
// masked (id 0, as the block argmax of the general path gives it).
TEST(CudaSample, GreedyRowsUnderMasksMatchCpuArm) {
  VT_REQUIRE_GPU();
  Streams s;
  const int64_t vocab = 151936, words = mask_words(vocab);
  std::mt19937 rng(91);
  for (DType dt : {DType::kBF16, DType::kF32})
    for (int64_t batch : {1, 8, 64}) {
      // Mask rows: 0 dense, 1 sparse (400 ids), 2 nothing allowed, 3 the tie's ids.
      std::vector<uint32_t> bitmask(size_t(4 * words), 0u);
      for (int64_t w = 0; w < words; ++w) bitmask[size_t(w)] = uint32_t(rng()) & uint32_t(rng());
      for (int i = 0; i < 400; ++i) {
        const int64_t t = int64_t(rng() % uint32_t(vocab));
        bitmask[size_t(words + t / 32)] |= 1u << (t % 32);
      }
      for (int64_t t : {int64_t(9000), int64_t(150000)})
        bitmask[size_t(3 * words + t / 32)] |= 1u << (t % 32);
      Tensor f = randn({batch, vocab}, DType::kF32, 3.0, rng());
      SampleBatch b;
      b.rows.resize(size_t(batch));
      b.edit_start.assign(size_t(batch + 1), 0);
      for (int64_t r = 0; r < batch; ++r) {
        SampleRowParams& p = b.rows[size_t(r)];
        p.temperature = 0.0f;
        switch (r % 6) {
          case 1:
            p.logits_mask = 0;
            break;
          case 2:
            p.token_mask = 1;
            break;
          case 3:
            p.logits_mask = 0, p.token_mask = 1;
            break;
          case 4:
            p.logits_mask = batch > 4 && r == 4 ? 2 : 3;
            break;
          case 5:
            p.logits_mask = 1;
            break;
          default:
            break;
        }
        float* row = f.data<float>() + r * vocab;
        if (p.logits_mask == 3) row[9000] = row[150000] = 30.0f, row[77] = 60.0f;
      }
      b.bitmask = bitmask;
      Stream cpu(Device::cpu(), 1);
      const Tensor logits = to_dtype(cpu, f, dt);
      const SampleOutput want = sample(s.cpu, logits, b);
      const SampleOutput got = sample(s.gpu, s.up(logits), b);
      for (int64_t r = 0; r < batch; ++r) {
        const std::string at = std::string(dtype_name(dt)) + " batch " + std::to_string(batch) +
                               " row " + std::to_string(r);
        EXPECT_EQ(got.token[size_t(r)], want.token[size_t(r)]) << at;
        if (b.rows[size_t(r)].logits_mask == 3) {
          EXPECT_EQ(got.token[size_t(r)], 9000) << at;
        }
        if (b.rows[size_t(r)].logits_mask == 2) {
          EXPECT_EQ(got.token[size_t(r)], 0) << at;
        }
      }
    }
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

// Logits whose rows test argmax's order across the kernel's segments (a row of Qwen's
// vocabulary splits into ~74 of them for one row, ~9 for 64 rows; the test need not know
// where they fall): row kind r % 6 is
//   0 random (bf16: many exact ties), 1 the max at every 97th index from 13 (a tie that
//   crosses every boundary: 13 wins), 2 one constant value (0 wins), 3 all -inf (0 wins),
//   4 two NaNs in different halves among large values (the lower NaN wins), 5 the max
//   at the last index.
Tensor argmax_logits(int64_t rows, int64_t vocab, DType dt, uint64_t seed) {
  Tensor f = randn({rows, vocab}, DType::kF32, 3.0, seed);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = f.data<float>() + r * vocab;
    switch (r % 6) {
      case 1:
        for (int64_t i = 13; i < vocab; i += 97) row[i] = 40.0f;
        break;
      case 2:
        std::fill(row, row + vocab, 1.5f);
        break;
      case 3:
        std::fill(row, row + vocab, -INFINITY);
        break;
      case 4:
        row[vocab - 1] = 50.0f;
        row[vocab / 2] = NAN;
        row[vocab - 2] = NAN;
        break;
      case 5:
        row[vocab - 1] = 60.0f;
        break;
      default:
        break;
    }
  }
  Stream cpu(Device::cpu(), 1);
  return to_dtype(cpu, f, dt);
}

// The id argmax must give for a constructed row (-1: the random row, the CPU op decides).
int64_t planted_argmax(int64_t r, int64_t vocab) {
  switch (r % 6) {
    case 1:
      return vocab > 13 ? 13 : -1;
    case 2:
    case 3:
      return 0;
    case 4:
      return vocab >= 3 ? std::min(vocab / 2, vocab - 2) : -1;
    case 5:
      return vocab - 1;
    default:
      return -1;
  }
}

// Rows 1, 3 and 64 (many segments per row), 600 (one segment: the block writes the id),
// at Qwen's vocabulary, 8192 and 4097 (few segments, a partial last one), 1000 and 7
// (one segment, mostly idle threads); 16-byte loads (vocab % 8 == 0) and scalar ones
// (4097, 7); f32 and bf16 logits, i32 and i64 ids.
TEST(CudaArgmax, MatchesCpuForEveryRowSplit) {
  VT_REQUIRE_GPU();
  Streams s;
  struct Case {
    int64_t rows, vocab;
  };
  const Case cases[] = {{1, 151936}, {3, 151936}, {64, 151936}, {1, 8192}, {7, 4097},
                        {600, 8192}, {1, 1000},   {64, 1000},   {3, 7},    {1, 1}};
  uint64_t seed = 70;
  for (const Case& c : cases)
    for (DType dt : {DType::kF32, DType::kBF16})
      for (DType odt : {DType::kI32, DType::kI64}) {
        const std::string what = std::string(dtype_name(dt)) + " -> " + dtype_name(odt) + " [" +
                                 std::to_string(c.rows) + ", " + std::to_string(c.vocab) + "]";
        const Tensor logits = argmax_logits(c.rows, c.vocab, dt, seed++);
        Tensor want = Tensor::empty({c.rows}, DType::kI64);
        argmax(s.cpu, logits, want);
        Tensor got_g = cudatest::poisoned_gpu(s, {c.rows}, odt);
        argmax(s.gpu, s.up(logits), got_g);
        const Tensor got = to_dtype(s.cpu, s.down(got_g), DType::kI64);
        for (int64_t r = 0; r < c.rows; ++r) {
          const int64_t w = want.data<int64_t>()[r], g = got.data<int64_t>()[r];
          EXPECT_EQ(g, w) << what << " row " << r;
          const int64_t planted = planted_argmax(r, c.vocab);
          if (planted >= 0) {
            EXPECT_EQ(w, planted) << what << " row " << r << " (the CPU op)";
          }
        }
      }
}

// A captured argmax (two kernels and a scratch buffer when a row splits) replays on the
// logits now in its input: the scratch is no allocation at replay, the split the same.
TEST(CudaArgmax, CapturedGraphReplaysOnNewLogits) {
  VT_REQUIRE_GPU();
  Streams s;
  for (int64_t rows : {1, 3, 64}) {
    const int64_t vocab = 151936;
    Tensor logits_g = s.up(argmax_logits(rows, vocab, DType::kF32, 90 + uint64_t(rows)));
    Tensor ids_g = cudatest::poisoned_gpu(s, {rows}, DType::kI32);
    s.gpu.synchronize();
    s.gpu.begin_capture();
    argmax(s.gpu, logits_g, ids_g);
    cuda::GraphExecPtr graph = s.gpu.end_capture();
    for (uint64_t round = 0; round < 3; ++round) {
      const Tensor next = randn({rows, vocab}, DType::kF32, 2.0, 500 + 10 * uint64_t(rows) + round);
      copy(s.gpu, s.up(next), logits_g);
      s.gpu.replay(*graph);
      Tensor want = Tensor::empty({rows}, DType::kI64);
      argmax(s.cpu, next, want);
      const Tensor got = to_dtype(s.cpu, s.down(ids_g), DType::kI64);
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(got.data<int64_t>()[r], want.data<int64_t>()[r])
            << "rows " << rows << " replay " << round << " row " << r;
      }
    }
    graph.reset();
    s.gpu.synchronize();
  }
  cuda::release_graph_pool(0);
}

// The embedding gather over every block shape of its kernel: short rows (32 threads,
// scalar: 7 bf16 columns are not 16-byte rows), rows held in one span with 16-byte
// accesses (1000, 4096), and a row walked in two spans (8200 > 1024 x 8); exact copies.
TEST(CudaEmbedding, EveryRowLengthMatchesCpu) {
  VT_REQUIRE_GPU();
  Streams s;
  uint64_t seed = 110;
  for (int64_t hidden : {7, 1000, 4096, 8200})
    for (int64_t tokens : {1, 5})
      for (DType odt : {DType::kBF16, DType::kF32}) {
        const std::string what = "embedding [" + std::to_string(tokens) + ", " +
                                 std::to_string(hidden) + "] -> " + dtype_name(odt);
        const Tensor table = randn({50, hidden}, DType::kBF16, 1.0, seed++);
        Tensor ids = Tensor::empty({tokens}, DType::kI32);
        for (int64_t t = 0; t < tokens; ++t) ids.data<int32_t>()[t] = int32_t((t * 37 + 49) % 50);
        Tensor want = Tensor::empty({tokens, hidden}, odt);
        embedding(s.cpu, table, ids, want);
        Tensor got = cudatest::poisoned_gpu(s, {tokens, hidden}, odt);
        embedding(s.gpu, s.up(table), s.up(ids), got);
        cudatest::expect_close(s, want, got, 0, 0, what);
      }
}

}  // namespace
}  // namespace vt
