// CUDA embedding gather and greedy argmax.
//   embedding: one block per token (grid x strides over tokens); the block holds the
//     row in registers (vt/cuda/row_chunks.cuh: every load before any store, 16-byte
//     accesses when aligned), exact or one rounding, as the CPU op.
//   argmax: each row is cut into `splits` contiguous segments, one block each, chosen so
//     that few rows still fill the GPU; a thread has 32 elements in flight (16-byte loads
//     when the rows allow, row_chunks.cuh's layouts). A block's winner goes to scratch,
//     and a second kernel (one warp per row) picks the row's winner from the segments'
//     (with one segment the block writes the id itself).
//     Every comparison is torch.argmax's total order (NaN largest, ties to the lowest
//     index), so the result does not depend on the split or the scan order. With
//     masks (vt::sample's greedy rows under a grammar) a masked element counts as -inf.
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/launch.cuh"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/sampling.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kEmbedVec = 8;  // elements per chunk: 16 bytes of bf16/f16
constexpr int kEmbedMaxThreads = 1024;
constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxVec = 8;                // a chunk: one 16-byte load of bf16/f16, two of f32
constexpr int kArgmaxChunks = 4;             // chunks in flight per thread
constexpr int64_t kArgmaxMinSegment = 2048;  // a segment smaller than this is not worth a block
constexpr int kFinishWarps = 8;

__device__ __forceinline__ int64_t load_id(const void* p, DType dt, int64_t i) {
  return dt == DType::kI32 ? int64_t(static_cast<const int32_t*>(p)[i])
                           : static_cast<const int64_t*>(p)[i];
}

__global__ void __launch_bounds__(kEmbedMaxThreads)
    embedding_kernel(RowsRef table, const void* ids, DType idt, int64_t id_stride, RowsRef out,
                     int64_t tokens, int64_t hidden, bool vec) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int t = int(threadIdx.x), n = int(blockDim.x);
  const int64_t span = int64_t(kEmbedVec) * n;
  for (int64_t tok = blockIdx.x; tok < tokens; tok += gridDim.x) {
    const char* src = table.row(load_id(ids, idt, tok * id_stride));
    char* dst = out.row(tok);
    for (int64_t base = 0; base < hidden; base += span) {
      float v[1][kEmbedVec];
      load_span(src, table.dtype, vec, base, hidden, t, n, v);
      store_span(dst, out.dtype, vec, base, hidden, t, n, v);
    }
  }
}

// True when (va, ia) beats (vb, ib) under torch.argmax's order.
__device__ __forceinline__ bool beats(float va, int64_t ia, float vb, int64_t ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na != nb) return na;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

// (bv, bi) becomes the better of itself and lane (lane ^ off)'s pair, for every off: the
// whole warp ends with the warp's winner.
__device__ __forceinline__ void warp_best(float& bv, int64_t& bi) {
  for (int off = kWarp / 2; off > 0; off >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, off);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, bi, off);
    if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
}

__device__ __forceinline__ void store_id(void* out, DType odt, int64_t at, int64_t id) {
  if (odt == DType::kI32)
    static_cast<int32_t*>(out)[at] = int32_t(id);
  else
    static_cast<int64_t*>(out)[at] = id;
}

// Whether `mask` (null: none) allows token i.
__device__ __forceinline__ bool allowed(const uint32_t* mask, int64_t i) {
  return !mask || ((__ldg(mask + (i >> 5)) >> (i & 31)) & 1u);
}

// Block (s, y) scans segment s of rows y, y + gridDim.y, ...: [s * segment, + segment),
// skipping the tokens the row's masks clear (masks.bitmask null: none).
// With one segment (gridDim.x == 1) it writes the row's id to out; else its winner to
// part_v / part_i[row * gridDim.x + s] for argmax_finish_kernel.

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(RowsRef logits, int64_t vocab, int64_t segment, bool vec, void* out, DType odt,
                  int64_t out_stride, int64_t rows, float* part_v, int64_t* part_i,
                  ArgmaxMasks masks) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  __shared__ float warp_v[kArgmaxThreads / kWarp];
  __shared__ int64_t warp_i[kArgmaxThreads / kWarp];
  const int64_t begin = int64_t(blockIdx.x) * segment;
  const int64_t end = std::min(vocab, begin + segment);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const void* row = logits.row(r);
    const uint32_t *lmask = nullptr, *tmask = nullptr;
    if (masks.bitmask) {
      const int32_t lk = masks.row_masks[2 * r], tk = masks.row_masks[2 * r + 1];
      if (lk >= 0) lmask = masks.bitmask + int64_t(lk) * masks.words;
      if (tk >= 0) tmask = masks.bitmask + int64_t(tk) * masks.words;
    }
    float bv = -INFINITY;
    int64_t bi = vocab;  // loses to every real index
    const int64_t span = int64_t(kArgmaxChunks) * kArgmaxVec * kArgmaxThreads;
    for (int64_t base = begin; base < end; base += span) {
      float v[kArgmaxChunks][kArgmaxVec];  // every load of the span before a compare
      load_span(row, logits.dtype, vec, base, end, int(threadIdx.x), kArgmaxThreads, v);
      // A thread sees its elements in increasing index order, so a later one wins only
      // when it is a NaN or strictly greater, and never after a NaN: one compare each.
#pragma unroll
      for (int c = 0; c < kArgmaxChunks; ++c)
#pragma unroll
        for (int j = 0; j < kArgmaxVec; ++j) {
          const int64_t i =
              span_element<kArgmaxVec>(vec, base, c, j, int(threadIdx.x), kArgmaxThreads);
          if (i < end && !isnan(bv) && !(v[c][j] <= bv) && allowed(lmask, i) &&
              allowed(tmask, i))
            bv = v[c][j], bi = i;
        }
    }
    warp_best(bv, bi);
    if (threadIdx.x % kWarp == 0)
      warp_v[threadIdx.x / kWarp] = bv, warp_i[threadIdx.x / kWarp] = bi;
    __syncthreads();
    if (threadIdx.x < kWarp) {
      bv = threadIdx.x < kArgmaxThreads / kWarp ? warp_v[threadIdx.x] : -INFINITY;
      bi = threadIdx.x < kArgmaxThreads / kWarp ? warp_i[threadIdx.x] : vocab;
      warp_best(bv, bi);
      // No element taken: the segment is all -inf (a NaN or a number would have won), and
      // its first index is the winner.
      if (bi == vocab && begin < end) bi = begin;
      if (threadIdx.x == 0) {
        if (gridDim.x == 1) {
          store_id(out, odt, r * out_stride, bi);
        } else {
          part_v[r * gridDim.x + blockIdx.x] = bv;
          part_i[r * gridDim.x + blockIdx.x] = bi;
        }
      }
    }
    __syncthreads();  // warp_v / warp_i are rewritten for the next row
  }
}

// One warp per row: the winner of the row's `splits` segment winners.
__global__ void __launch_bounds__(kFinishWarps * kWarp)
    argmax_finish_kernel(const float* part_v, const int64_t* part_i, int splits, int64_t vocab,
                         void* out, DType odt, int64_t out_stride, int64_t rows) {
  pdl_wait();  // PDL (vt/cuda/launch.cuh): first, in every thread
  pdl_trigger();
  const int lane = int(threadIdx.x) % kWarp;
  const int64_t r = int64_t(blockIdx.x) * kFinishWarps + threadIdx.x / kWarp;
  if (r >= rows) return;
  float bv = -INFINITY;
  int64_t bi = vocab;
  for (int s = lane; s < splits; s += kWarp) {
    const float v = part_v[r * splits + s];
    const int64_t i = part_i[r * splits + s];
    if (beats(v, i, bv, bi)) bv = v, bi = i;
  }
  warp_best(bv, bi);
  if (lane == 0) store_id(out, odt, r * out_stride, bi);
}

}  // namespace

void embedding(Stream& s, const Rows& table, const Tensor& ids, const Rows& out) {
  const int64_t tokens = ids.size(0);
  if (tokens == 0 || table.cols == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const void* id_ptr = ids.data_ptr();
  DType idt = ids.dtype();
  int64_t id_stride = ids.stride(0);
  if (ids.device().is_cpu()) {  // the runner's ids: upload them with the op
    std::vector<int64_t> host(static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t)
      host[size_t(t)] = idt == DType::kI32 ? ids.data<int32_t>()[t * id_stride]
                                           : ids.data<int64_t>()[t * id_stride];
    id_ptr = upload_indices(st, host);
    idt = DType::kI64;
    id_stride = 1;
  }
  const RowsRef tr = rows_ref(table), orf = rows_ref(out);
  const bool vec =
      rows_vec_ok(tr, table.cols, kEmbedVec) && rows_vec_ok(orf, table.cols, kEmbedVec);
  const int threads = span_threads(table.cols, kEmbedVec, 1, kEmbedMaxThreads);
  const unsigned blocks = unsigned(std::min<int64_t>(tokens, 65535));
  launch_kernel(st, "embedding_kernel", embedding_kernel, dim3(blocks), dim3(unsigned(threads)), 0,
                tr, id_ptr, idt, id_stride, orf, tokens, table.cols, vec);
}

void argmax(Stream& s, const Rows& logits, const Tensor& out, const ArgmaxMasks& masks) {
  const int64_t rows = logits.rows, vocab = logits.cols;
  if (rows == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  // Four blocks per SM over all rows, no segment under kArgmaxMinSegment: on an H200 one
  // row of Qwen's vocabulary gets 74 segments, 64 rows get 9 each, 528+ rows one.
  const int64_t want_blocks = 4 * int64_t(std::max(st.num_sms, 1));
  const int64_t max_splits = std::max<int64_t>(1, vocab / kArgmaxMinSegment);
  const int64_t splits =
      std::clamp<int64_t>((want_blocks + rows - 1) / rows, 1, std::min<int64_t>(max_splits, 65535));
  // Segments start on whole chunks, so 16-byte loads stay aligned.
  const int64_t segment =
      ((vocab + splits - 1) / splits + kArgmaxVec - 1) / kArgmaxVec * kArgmaxVec;
  const RowsRef lr = rows_ref(logits);
  const bool vec = rows_vec_ok(lr, vocab, kArgmaxVec);
  const unsigned row_blocks = unsigned(std::min<int64_t>(rows, 65535));
  float* part_v = nullptr;
  int64_t* part_i = nullptr;
  if (splits > 1) {
    char* work = static_cast<char*>(scratch(st, kWorkScratch, size_t(rows * splits) * 12));
    part_i = reinterpret_cast<int64_t*>(work);
    part_v = reinterpret_cast<float*>(work + size_t(rows * splits) * 8);
  }
  launch_kernel(st, "argmax_kernel", argmax_kernel, dim3(unsigned(splits), row_blocks),
                dim3(kArgmaxThreads), 0, lr, vocab, segment, vec, out.data_ptr(), out.dtype(),
                out.stride(0), rows, part_v, part_i, masks);
  if (splits == 1) return;
  launch_kernel(st, "argmax_finish_kernel", argmax_finish_kernel,
                dim3(unsigned((rows + kFinishWarps - 1) / kFinishWarps)),
                dim3(kFinishWarps * kWarp), 0, static_cast<const float*>(part_v),
                static_cast<const int64_t*>(part_i), int(splits), vocab, out.data_ptr(),
                out.dtype(), out.stride(0), rows);
}

}  // namespace vt::cuda
