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
//   chunk_wy   (chunk_wy_tc.cu), grid (chunk of the pass, value head): everything of a
//              chunk that does not depend on the state, into the work scratch:
//                gam_i = sum_{s <= i} g_s                       (cumulative log decay)
//                L_ij  = beta_i (k_i . k_j) exp(gam_i - gam_j)  for j < i
//                [W | U] = (I + L)^-1 [diag(beta e^gam) K | diag(beta) V]
//                P_ij  = scale (q_i . k_j) exp(gam_i - gam_j)   for j <= i, else 0
//   chunk_scan (chunk_scan_tc.cu), grid (32-column slice, value head, request): the
//              request's chunks of the pass in order from its slot's state S (a
//              [Dk, 32] slice):
//                U' = U - W S;  out = diag(e^gam) (scale Q) S + P U';
//                S <- e^{gam_last} S + (diag(e^{gam_last - gam}) K)^T U'
//              and the slice written back to the slot, where the next pass finds it.
//              Short requests run in the first pass.
// Rows of a partial chunk past its length are zero (k, q, v, beta) with g = 0, so
// they neither update the state nor decay it. Dk, Dv <= 128, zero-padded to 128.
// Both kernels run their products on tensor cores as 3xTF32 (chunk_mma.cuh: f32-level,
// not tf32-level, accuracy); the scan runs the short requests' token recurrence
// (chunk_recurrence.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "vt/cuda/gdn/params.cuh"

namespace vt::cuda::gdn_chunk {

inline constexpr int kChunk = 64;   // tokens per chunk (vt::kGdnChunkSize)
inline constexpr int kDK = 128;     // key head_dim the tiles hold (zero-padded)
inline constexpr int kDV = 128;     // value head_dim the tiles hold (zero-padded)
inline constexpr int kCols = 32;    // value columns per chunk_scan CTA
inline constexpr int kThreads = 256;
inline constexpr int kMinChunkedTokens = 16;

// Floats of work scratch per (chunk, value head), in this order: W [kChunk, kDK],
// U [kChunk, kDV], P [kChunk, kChunk], gam [kChunk], then the chunk's q and k rows as
// f32 [kChunk, kDK] each (zero past the chunk and past dk), so the scan stages
// everything by cp.async, a chunk ahead. Every part is 16-byte aligned.
inline constexpr int64_t kWFloats = int64_t(kChunk) * kDK;
inline constexpr int64_t kUFloats = int64_t(kChunk) * kDV;
inline constexpr int64_t kPFloats = int64_t(kChunk) * kChunk;
inline constexpr int64_t kQOffset = kWFloats + kUFloats + kPFloats + kChunk;  // q rows
inline constexpr int64_t kKOffset = kQOffset + kWFloats;                      // k rows
inline constexpr int64_t kScratchFloats = kKOffset + kWFloats;

// The operands (gdn/params.cuh; start and slot: request b owns tokens [start[b],
// start[b+1]) and state slot slot[b]) and the chunk table and pass.
struct Params : gdn::DeltaRuleParams {
  // [B + 1] (chunk_table) request b owns chunks [first_chunk[b], first_chunk[b+1])
  int32_t* first_chunk = nullptr;
  int32_t* chunk_t0 = nullptr;   // [max_chunks] (chunk_table) first token of each chunk
  int32_t* chunk_len = nullptr;  // [max_chunks] (chunk_table) its tokens, 1..kChunk
  float* work = nullptr;         // [pass_chunks, Hv, kScratchFloats]: chunk pass_begin + i at i
  int batch = 0;
  int pass_begin = 0, pass_chunks = 0;  // the pass: chunks [pass_begin, pass_begin + pass_chunks)
};

// The scratch of chunk `chunk` (numbered over the whole call) of the current pass.
__host__ __device__ inline float* chunk_scratch(const Params& p, int64_t chunk, int h) {
  return p.work + ((chunk - p.pass_begin) * p.hv + h) * kScratchFloats;
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

void launch_chunk_wy_tc(const Params& p, cudaStream_t stream);
void launch_chunk_scan_tc(const Params& p, cudaStream_t stream);

}  // namespace vt::cuda::gdn_chunk
