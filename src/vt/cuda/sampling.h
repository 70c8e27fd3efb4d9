// CUDA arms of embedding (vt/ops/embedding.h), argmax and sample (vt/ops/sampling.h).
// No CUDA headers; arguments arrive validated. Defined in cuda/sampling/.
#pragma once

#include "vt/ops/args.h"
#include "vt/ops/sampling.h"

namespace vt::cuda {

// ids: i32/i64 [T] (any stride) on the CPU or the device, already range-checked.
void embedding(Stream& s, const Rows& table, const Tensor& ids, const Rows& out);
// Vocabulary masks for argmax, in device memory: row r reads mask rows
// row_masks[2r] and row_masks[2r + 1] (-1: none) of bitmask ([K, words] u32, bit
// t % 32 of word t / 32 set = token t allowed); a masked token counts as -inf (step 0 of
// vt::sample). bitmask null: no masks.
struct ArgmaxMasks {
  const uint32_t* bitmask = nullptr;
  int64_t words = 0;
  const int32_t* row_masks = nullptr;
};
// out: i32/i64 [T] on the device, any stride.
void argmax(Stream& s, const Rows& logits, const Tensor& out, const ArgmaxMasks& masks = {});
// Waits for the stream; the result is on the host.
SampleOutput sample(Stream& s, const Rows& logits, const SampleBatch& batch);

}  // namespace vt::cuda
