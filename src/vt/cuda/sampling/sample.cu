// vt::sample on CUDA: one CTA of 512 threads per logits row (block_select.cuh).
//   1. the row is widened into an f32 work row with its mask rows applied (raw
//      logprobs reread the logits through logits_mask), and its edits applied (a thread per
//      touched token; tokens are distinct within a row, so no two threads collide);
//   2. greedy: block argmax; otherwise x / T in place and the row max m, then the
//      filters as a predicate over the work row (Filter), each found without a sort:
//      min_p is a threshold m + log_min_p; top_k's k-th largest value is a count
//      radix select over the float keys; top_p's last kept value v* is a mass radix
//      select (the largest v with mass(x >= v) >= p * total) and, when v* is tied,
//      the number of tied tokens kept follows from the masses in closed form and the
//      last kept id from nth_match (ties keep lower ids first, as the CPU's order);
//   3. the draw: the first id whose fixed-point cumulative mass exceeds u * total;
//   4. logprobs when asked: log_softmax in double, rank by a count, top-N by a count
//      radix select plus the tie rule, the N candidates sorted by rank counting.
// The result is copied back once; the call waits for the stream. A step of plain
// greedy rows (no edits, no logprobs; masks allowed) runs the argmax kernel alone, with
// the rows' mask rows uploaded beside it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/sampling.h"
#include "vt/cuda/sampling/sample_kernel.cuh"
#include "vt/cuda/stream_state.h"
#include "vt/ops/sampling_rules.h"

namespace vt::cuda {
namespace {

using namespace sample_detail;

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& b) {
  const int64_t rows = logits.rows, vocab = logits.cols;
  SampleOutput o;
  o.top_start.push_back(0);
  std::vector<RowDev> dev_rows(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const SampleRowParams& p = b.rows[size_t(r)];
    dev_rows[size_t(r)] = {p.temperature,
                           p.log_min_p,
                           p.top_p,
                           p.repetition,
                           p.frequency,
                           p.presence,
                           p.top_k,
                           p.logprobs,
                           p.logits_mask,
                           p.token_mask,
                           p.uniform,
                           b.edit_start[size_t(r)],
                           b.edit_start[size_t(r + 1)],
                           o.top_start.back()};
    o.top_start.push_back(o.top_start.back() + (p.logprobs >= 0 ? std::min<int64_t>(p.logprobs, vocab) : 0));
  }
  if (rows == 0) return o;
  const size_t num_top = size_t(o.top_start.back());
  StreamState& st = s.cuda_state();
  set_device(st);

  // Plain greedy steps (no edits or logprobs) need one pass: the argmax kernel, which
  // applies the rows' masks as step 0 does (a masked token is -inf; a row with every
  // token masked gets id 0, as the block argmax below gives it).
  const bool plain_greedy =
      b.edits.empty() && std::all_of(b.rows.begin(), b.rows.end(), [](const SampleRowParams& p) {
        return p.temperature < kGreedyTemperature && p.logprobs < 0;
      });
  if (plain_greedy) {
    const Tensor ids = Tensor::empty({rows}, DType::kI32, s.device());
    ArgmaxMasks masks;
    const bool any_mask =
        std::any_of(b.rows.begin(), b.rows.end(), [](const SampleRowParams& p) {
          return p.logits_mask >= 0 || p.token_mask >= 0;
        });
    if (any_mask) {
      // One upload: [rows][2] mask row indices, then the mask rows.
      const size_t mask_at = align_up(size_t(rows) * 2 * sizeof(int32_t));
      std::vector<unsigned char> packed(mask_at + b.bitmask.size() * sizeof(uint32_t));
      auto* idx = reinterpret_cast<int32_t*>(packed.data());
      for (int64_t r = 0; r < rows; ++r) {
        idx[2 * r] = b.rows[size_t(r)].logits_mask;
        idx[2 * r + 1] = b.rows[size_t(r)].token_mask;
      }
      std::memcpy(packed.data() + mask_at, b.bitmask.data(), b.bitmask.size() * sizeof(uint32_t));
      const unsigned char* up = upload_indices(st, packed);
      masks = {reinterpret_cast<const uint32_t*>(up + mask_at), mask_words(vocab),
               reinterpret_cast<const int32_t*>(up)};
    }
    argmax(s, logits, ids, masks);
    o.token.resize(size_t(rows));
    VT_CUDA_CHECK(cudaMemcpyAsync(o.token.data(), ids.data_ptr(), size_t(rows) * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, st.stream));
    VT_CUDA_CHECK(cudaStreamSynchronize(st.stream));
    o.logprob.assign(size_t(rows), 0.0f);
    o.rank.assign(size_t(rows), 0);
    return o;
  }

  // One upload: row params, edits, bias values, mask rows.
  const size_t rows_at = 0, edits_at = align_up(rows_at + dev_rows.size() * sizeof(RowDev)),
               bias_at = align_up(edits_at + b.edits.size() * sizeof(SampleTokenEdit)),
               mask_at = align_up(bias_at + b.bias.size() * sizeof(float)),
               upload_bytes = align_up(mask_at + b.bitmask.size() * sizeof(uint32_t));
  std::vector<unsigned char> packed(upload_bytes);
  std::memcpy(packed.data() + rows_at, dev_rows.data(), dev_rows.size() * sizeof(RowDev));
  if (!b.edits.empty())
    std::memcpy(packed.data() + edits_at, b.edits.data(), b.edits.size() * sizeof(SampleTokenEdit));
  if (!b.bias.empty())
    std::memcpy(packed.data() + bias_at, b.bias.data(), b.bias.size() * sizeof(float));
  if (!b.bitmask.empty())
    std::memcpy(packed.data() + mask_at, b.bitmask.data(), b.bitmask.size() * sizeof(uint32_t));

  const unsigned char* up = upload_indices(st, packed);
  // Work: the f32 rows, then the results (copied back in one piece).
  const size_t out_at = align_up(size_t(rows * vocab) * sizeof(float)),
               id_at = out_at + align_up(size_t(rows) * sizeof(OutRow)),
               lp_at = id_at + align_up(num_top * sizeof(int32_t)),
               end = lp_at + align_up(num_top * sizeof(float));
  char* work = static_cast<char*>(scratch(st, kWorkScratch, end));
  Args a{rows_ref(logits),
         vocab,
         reinterpret_cast<float*>(work),
         reinterpret_cast<const RowDev*>(up + rows_at),
         reinterpret_cast<const SampleTokenEdit*>(up + edits_at),
         reinterpret_cast<const float*>(up + bias_at),
         reinterpret_cast<const uint32_t*>(up + mask_at),
         mask_words(vocab),
         b.processed_logprobs,
         reinterpret_cast<OutRow*>(work + out_at),
         reinterpret_cast<int32_t*>(work + id_at),
         reinterpret_cast<float*>(work + lp_at)};
  sample_kernel<<<unsigned(rows), kThreads, 0, st.stream>>>(a);
  VT_CUDA_CHECK_LAUNCH("sample_kernel");
  std::vector<unsigned char> back(end - out_at);
  VT_CUDA_CHECK(cudaMemcpyAsync(back.data(), work + out_at, back.size(), cudaMemcpyDeviceToHost,
                                st.stream));
  VT_CUDA_CHECK(cudaStreamSynchronize(st.stream));

  const auto* out = reinterpret_cast<const OutRow*>(back.data());
  for (int64_t r = 0; r < rows; ++r) {
    VT_CHECK(out[r].error == 0, "sample: every token of the row is masked (row ", r, ")");
    o.token.push_back(out[r].token);
    o.logprob.push_back(out[r].logprob);
    o.rank.push_back(out[r].rank);
  }
  o.top_token.resize(num_top);
  o.top_logprob.resize(num_top);
  if (num_top) {
    std::memcpy(o.top_token.data(), back.data() + (id_at - out_at), num_top * sizeof(int32_t));
    std::memcpy(o.top_logprob.data(), back.data() + (lp_at - out_at), num_top * sizeof(float));
  }
  return o;
}

}  // namespace vt::cuda
