#include "vt/ops/sampling.h"

#include <algorithm>
#include <cmath>

#include "vt/cpu/kernels.h"
#include "vt/cpu/sampling.h"
#include "vt/ops/args.h"
#if VTLLM_WITH_CUDA
#include "vt/cuda/sampling.h"
#endif

namespace vt {

void argmax(Stream& s, const Tensor& logits, Tensor& out) {
  const char* op = "argmax";
  expect_dtype(logits, op, "logits", kActDTypes);
  expect_dtype(out, op, "out", {DType::kI32, DType::kI64});
  VT_CHECK(logits.dim() == 2 && logits.size(1) > 0, op, ": logits ", logits.str(),
           " must be [tokens, vocab] with vocab > 0");
  expect_shape(out, op, "out", {logits.size(0)});
  expect_device(s, op, {&logits, &out});
  Rows lr = rows_view(logits, op, "logits");
  if (s.device().is_cpu()) return cpu::argmax(s, lr, out);
#if VTLLM_WITH_CUDA
  cuda::argmax(s, lr, out);
#else
  no_backend(op, s.device());
#endif
}

namespace {

void check_batch(const SampleBatch& b, int64_t rows, int64_t vocab) {
  const char* op = "sample";
  VT_CHECK(int64_t(b.rows.size()) == rows, op, ": ", b.rows.size(), " row params for ", rows,
           " logits rows");
  VT_CHECK(int64_t(b.edit_start.size()) == rows + 1 && b.edit_start.front() == 0 &&
               b.edit_start.back() == int64_t(b.edits.size()),
           op, ": edit_start must have rows + 1 entries from 0 to ", b.edits.size());
  const int64_t words = mask_words(vocab);
  VT_CHECK(int64_t(b.bitmask.size()) % words == 0, op, ": bitmask has ", b.bitmask.size(),
           " words, not a multiple of ", words, " (one mask row of a vocabulary of ", vocab, ")");
  const int64_t mask_rows = int64_t(b.bitmask.size()) / words;
  std::vector<int32_t> ids;
  for (int64_t r = 0; r < rows; ++r) {
    const SampleRowParams& p = b.rows[size_t(r)];
    VT_CHECK(p.temperature >= 0 && std::isfinite(p.temperature), op, ": row ", r,
             " temperature ", p.temperature);
    VT_CHECK(p.top_p > 0 && p.top_p <= 1, op, ": row ", r, " top_p ", p.top_p, ", expected (0, 1]");
    VT_CHECK(p.log_min_p <= 0 && !std::isnan(p.log_min_p), op, ": row ", r, " log_min_p ",
             p.log_min_p, ", expected <= 0");
    VT_CHECK(p.repetition > 0 && std::isfinite(p.repetition) && std::isfinite(p.frequency) &&
                 std::isfinite(p.presence),
             op, ": row ", r, " penalties must be finite, repetition > 0");
    VT_CHECK(p.uniform >= 0 && p.uniform < 1, op, ": row ", r, " uniform ", p.uniform,
             ", expected [0, 1)");
    VT_CHECK(p.logprobs <= kMaxDeviceLogprobs, op, ": row ", r, " asks for ", p.logprobs,
             " logprobs, at most ", kMaxDeviceLogprobs);
    VT_CHECK(p.logits_mask >= -1 && p.logits_mask < mask_rows && p.token_mask >= -1 &&
                 p.token_mask < mask_rows,
             op, ": row ", r, " mask rows ", p.logits_mask, ", ", p.token_mask, " outside [-1, ",
             mask_rows, ")");
    const int64_t e0 = b.edit_start[size_t(r)], e1 = b.edit_start[size_t(r + 1)];
    VT_CHECK(e0 <= e1, op, ": edit_start decreases at row ", r);
    ids.clear();
    for (int64_t i = e0; i < e1; ++i) {
      const SampleTokenEdit& e = b.edits[size_t(i)];
      VT_CHECK(e.token >= 0 && e.token < vocab, op, ": row ", r, " edits token ", e.token,
               " outside the vocabulary [0, ", vocab, ")");
      VT_CHECK(e.output_count >= 0 && 0 <= e.bias_begin && e.bias_begin <= e.bias_end &&
                   size_t(e.bias_end) <= b.bias.size(),
               op, ": row ", r, " edit of token ", e.token, " has a bad count or bias range");
      ids.push_back(e.token);
    }
    std::sort(ids.begin(), ids.end());
    VT_CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end(), op, ": row ", r,
             " edits a token twice");
  }
}

}  // namespace

SampleOutput sample(Stream& s, const Tensor& logits, const SampleBatch& batch) {
  const char* op = "sample";
  expect_dtype(logits, op, "logits", kActDTypes);
  VT_CHECK(logits.dim() == 2 && logits.size(1) > 0 && logits.size(1) < (int64_t(1) << 23), op,
           ": logits ", logits.str(), " must be [rows, vocab] with 0 < vocab < 2^23");
  expect_device(s, op, {&logits});
  check_batch(batch, logits.size(0), logits.size(1));
  Rows lr = rows_view(logits, op, "logits");
  if (s.device().is_cpu()) return cpu::sample(s, lr, batch);
#if VTLLM_WITH_CUDA
  return cuda::sample(s, lr, batch);
#else
  no_backend(op, s.device());
#endif
}

}  // namespace vt
