// CUDA chunked gated delta rule (vt/cuda/gdn.h): chunk_table numbers the chunks on
// the device, then chunk_wy_tc and chunk_scan_tc run per pass (the kernels and the pass
// layout: delta_rule_chunked.cuh).
//
// Launch shapes come from a bound on the chunk count, never from index values read
// back: with host indices the exact count (summed here), with device indices
// T / 64 + min(B, T / 16) (each chunked request adds at most one partial chunk, and
// has at least kMinChunkedTokens tokens). A pass past the real count is CTAs that exit.
// Passes are ordered on the stream; a request cut by a pass continues from the state
// the previous pass wrote to its slot.
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"
#include "vt/cuda/gdn/varlen.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace gdn_chunk {
namespace {

// The work scratch one pass may use: 37 chunks of Hv 48, 56 at Hv 32 (kScratchFloats,
// 36,928 floats per chunk and head).
constexpr int64_t kMaxScratchBytes = int64_t(256) << 20;
constexpr int kTableThreads = 1024;

__device__ int chunks_of(const Params& p, int b) {
  const int len = p.start[b + 1] - p.start[b];
  return len >= kMinChunkedTokens ? (len + kChunk - 1) / kChunk : 0;
}

// One CTA: thread i takes a run of requests, a block scan of the runs' chunk counts
// gives each run its first chunk, and the run writes its chunks' entries.
__global__ void __launch_bounds__(kTableThreads) chunk_table_kernel(Params p) {
  __shared__ int32_t runs[kTableThreads];
  const int tid = threadIdx.x, per = (p.batch + kTableThreads - 1) / kTableThreads;
  const int b0 = min(p.batch, tid * per), b1 = min(p.batch, b0 + per);
  int own = 0;
  for (int b = b0; b < b1; ++b) own += chunks_of(p, b);
  runs[tid] = own;
  __syncthreads();
  for (int off = 1; off < kTableThreads; off <<= 1) {  // inclusive scan
    const int add = tid >= off ? runs[tid - off] : 0;
    __syncthreads();
    runs[tid] += add;
    __syncthreads();
  }
  int at = runs[tid] - own;
  for (int b = b0; b < b1; ++b) {
    p.first_chunk[b] = at;
    const int n = chunks_of(p, b), t0 = p.start[b], end = p.start[b + 1];
    for (int j = 0; j < n; ++j, ++at) {
      p.chunk_t0[at] = t0 + j * kChunk;
      p.chunk_len[at] = min(kChunk, end - t0 - j * kChunk);
    }
  }
  if (tid == kTableThreads - 1) p.first_chunk[p.batch] = runs[tid];
}

// Runs the call (p's operands, request starts and slots on the device); max_chunks
// bounds the number of chunks (exact or not).
void run(StreamState& st, Params p, int64_t B, int64_t max_chunks) {
  p.batch = int(B);
  const int64_t chunk_bytes = p.hv * kScratchFloats * int64_t(sizeof(float));
  const int64_t pass_chunks =
      std::min(max_chunks, std::max<int64_t>(1, kMaxScratchBytes / chunk_bytes));
  // The table, then the pass's chunks (16-byte aligned for chunk_scan's float4 loads).
  const int64_t table_ints = (B + 1 + 2 * max_chunks + 3) / 4 * 4;
  char* base = static_cast<char*>(scratch(
      st, kWorkScratch, size_t(table_ints) * 4 + size_t(pass_chunks * chunk_bytes)));
  p.first_chunk = reinterpret_cast<int32_t*>(base);
  p.chunk_t0 = p.first_chunk + B + 1;
  p.chunk_len = p.chunk_t0 + max_chunks;
  p.work = reinterpret_cast<float*>(base + table_ints * 4);
  chunk_table_kernel<<<1, kTableThreads, 0, st.stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("chunk_table_kernel");
  int64_t begin = 0;
  do {  // at least one pass: it runs the short requests
    p.pass_begin = int(begin);
    p.pass_chunks = int(std::min(pass_chunks, max_chunks - begin));
    if (p.pass_chunks > 0) launch_chunk_wy_tc(p, st.stream);
    launch_chunk_scan_tc(p, st.stream);
    begin += pass_chunks;
  } while (begin < max_chunks);
}

}  // namespace
}  // namespace gdn_chunk

void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                              const Tensor& state, const Tensor& out) {
  using namespace gdn_chunk;
  const int64_t B = req.batch(), T = q.size(0), hv = v.size(1), dk = q.size(2), dv = v.size(2);
  if (B == 0 || T == 0 || hv == 0 || dv == 0) return;
  if (dk > kDK || dv > kDV)  // wider heads than the tiles: the token recurrence
    return gated_delta_rule(s, q, k, v, g, beta, scale, req, state, out);
  VT_CHECK(hv <= 65535 && B <= 65535, "gated_delta_rule_chunked (CUDA): grid too large");
  VT_CHECK(T < (int64_t(1) << 31), "gated_delta_rule_chunked (CUDA): ", T,
           " tokens exceed i32 indices");
  StreamState& st = s.cuda_state();
  set_device(st);
  // The chunk count: a bound with device indices, exact with host ones.
  int64_t chunks = T / kChunk + std::min(B, T / kMinChunkedTokens);
  if (!req.on_device()) {
    chunks = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = req.len(b);
      if (len >= kMinChunkedTokens) chunks += (len + kChunk - 1) / kChunk;
    }
  }
  const auto [d_start, d_slot] = device_varlen(st, req);
  const Params p{gdn::delta_rule_params(q, k, v, g, beta, scale, state, out, d_start, d_slot)};
  run(st, p, B, chunks);
}

}  // namespace vt::cuda
