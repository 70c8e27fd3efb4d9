// The chunked gated delta rule's kernels and what they share (CUDA sources of
// cuda/gdn/ only; the host arm is delta_rule_chunked.cu, the math qwen3_5.md §8.7).
//
// A chunk is at most kChunk consecutive tokens of one request; a request shorter than
// kMinChunkedTokens owns none (a decode step in a mixed batch would otherwise pay for
// a whole chunk) and runs the token recurrence of §8.6 inside chunk_scan instead.
//   chunk_table (delta_rule_chunked.cu), one CTA: from the request starts alone (host
//              or device indices alike) numbers the chunks request by request:
//              first_chunk [B + 1], chunk_t0 / chunk_len per chunk.
// The chunks are then run in passes of at most pass_chunks (the work scratch holds one
// pass); per pass, in stream order:
//   chunk_wy   (chunk_wy.cu), grid (chunk of the pass, value head): everything of a
//              chunk that does not depend on the state, into the work scratch:
//                gam_i = sum_{s <= i} g_s                       (cumulative log decay)
//                L_ij  = beta_i (k_i . k_j) exp(gam_i - gam_j)  for j < i
//                [W | U] = (I + L)^-1 [diag(beta e^gam) K | diag(beta) V]
//                P_ij  = scale (q_i . k_j) exp(gam_i - gam_j)   for j <= i, else 0
//   chunk_scan (chunk_scan.cu), grid (32-column slice, value head, request): the
//              request's chunks of the pass in order from its slot's state S (a
//              [Dk, 32] slice):
//                U' = U - W S;  out = diag(e^gam) (scale Q) S + P U';
//                S <- e^{gam_last} S + (diag(e^{gam_last - gam}) K)^T U'
//              and the slice written back to the slot, where the next pass finds it.
//              Short requests run in the first pass.
// Rows of a partial chunk past its length are zero (k, q, v, beta) with g = 0, so
// they neither update the state nor decay it. Dk, Dv <= 128, zero-padded to 128.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "vt/dtype.h"

namespace vt::cuda::gdn_chunk {

inline constexpr int kChunk = 64;   // tokens per chunk (vt::kGdnChunkSize)
inline constexpr int kDK = 128;     // key head_dim the tiles hold (zero-padded)
inline constexpr int kDV = 128;     // value head_dim the tiles hold (zero-padded)
inline constexpr int kCols = 32;    // value columns per chunk_scan CTA
inline constexpr int kThreads = 256;
inline constexpr int kMinChunkedTokens = 16;

// Floats of work scratch per (chunk, value head), in this order: W [kChunk, kDK],
// U [kChunk, kDV], P [kChunk, kChunk], gam [kChunk]; the tensor-core pair adds the
// chunk's q and k rows as f32 [kChunk, kDK] each (zero past the chunk and past dk), so
// its scan stages everything by cp.async, a chunk ahead. Every part is 16-byte aligned.
inline constexpr int64_t kWFloats = int64_t(kChunk) * kDK;
inline constexpr int64_t kUFloats = int64_t(kChunk) * kDV;
inline constexpr int64_t kPFloats = int64_t(kChunk) * kChunk;
inline constexpr int64_t kScratchFloats = kWFloats + kUFloats + kPFloats + kChunk;
inline constexpr int64_t kQOffset = kScratchFloats;            // tc: q rows
inline constexpr int64_t kKOffset = kScratchFloats + kWFloats;  // tc: k rows
inline constexpr int64_t kScratchFloatsTc = kScratchFloats + 2 * kWFloats;

struct Params {
  const void* q;
  DType q_dtype;
  int64_t q_t, q_h;
  const void* k;
  DType k_dtype;
  int64_t k_t, k_h;
  const void* v;
  DType v_dtype;
  int64_t v_t, v_h;
  const float* g;     // [T, Hv]
  const float* beta;  // [T, Hv]
  float* state;       // [S, Hv, dk, dv]
  void* out;          // [T, Hv, dv]
  DType out_dtype;
  const int32_t* start;  // [B + 1] request b owns tokens [start[b], start[b+1])
  const int32_t* slot;   // [B] its state slot
  int32_t* first_chunk;  // [B + 1] (chunk_table) request b owns chunks [first_chunk[b], first_chunk[b+1])
  int32_t* chunk_t0;     // [max_chunks] (chunk_table) first token of each chunk
  int32_t* chunk_len;    // [max_chunks] (chunk_table) its tokens, 1..kChunk
  float* work;           // [pass_chunks, Hv, scratch_floats]: chunk pass_begin + i at i
  int batch;
  int pass_begin, pass_chunks;  // the pass: chunks [pass_begin, pass_begin + pass_chunks)
  int hv, ratio, dk, dv;
  float scale;
  int64_t scratch_floats;  // per (chunk, value head): kScratchFloats, or kScratchFloatsTc
};

// The scratch of chunk `chunk` (numbered over the whole call) of the current pass.
__host__ __device__ inline float* chunk_scratch(const Params& p, int64_t chunk, int h) {
  return p.work + ((chunk - p.pass_begin) * p.hv + h) * p.scratch_floats;
}

// Request b's chunks: those it owns over the call and those of the current pass,
// [begin, end) (empty when they lie in other passes or it owns none). Both scans take
// their range, and the rule for where a short request's token recurrence runs, from here.
struct PassRange {
  int owned_begin, owned_end;
  int begin, end;
  // Whether this pass's scan runs the request's token recurrence (len tokens): it is
  // short (owns no chunk) and this is the first pass.
  __device__ __forceinline__ bool runs_recurrence(const Params& p, int len) const {
    return owned_begin == owned_end && p.pass_begin == 0 && len > 0;
  }
};
__device__ __forceinline__ PassRange pass_range(const Params& p, int b) {
  const int owned_begin = p.first_chunk[b], owned_end = p.first_chunk[b + 1];
  return {owned_begin, owned_end, max(owned_begin, p.pass_begin),
          min(owned_end, p.pass_begin + p.pass_chunks)};
}

// The two implementations of the pair (VTLLM_GDN_PREFILL, read in delta_rule_chunked.cu
// only, per call): tc (the default) chunk_wy_tc.cu + chunk_scan_tc.cu, the products on
// tensor cores as 3xTF32 (chunk_mma.cuh: f32-level, not tf32-level, accuracy); f32
// chunk_wy.cu + chunk_scan.cu, the first version, on f32 CUDA cores. Both write and
// read the same scratch layout and run the short requests' token recurrence
// (chunk_recurrence.cuh) in the scan.
enum class Prefill { kTensorCores, kF32 };
Prefill prefill_selected();

void launch_chunk_wy(const Params& p, cudaStream_t stream);
void launch_chunk_scan(const Params& p, cudaStream_t stream);
void launch_chunk_wy_tc(const Params& p, cudaStream_t stream);
void launch_chunk_scan_tc(const Params& p, cudaStream_t stream);

}  // namespace vt::cuda::gdn_chunk
