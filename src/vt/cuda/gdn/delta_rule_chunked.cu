// CUDA chunked gated delta rule (vt/cuda/gdn.h): chunk_table numbers the chunks on
// the device, then chunk_wy and chunk_scan (or their tensor-core forms, the default:
// VTLLM_GDN_PREFILL) run per pass (the kernels and the pass layout:
// delta_rule_chunked.cuh).
//
// Launch shapes come from a bound on the chunk count, never from index values read
// back: with host indices the exact count (summed here), with device indices
// T / 64 + min(B, T / 16) (each chunked request adds at most one partial chunk, and
// has at least kMinChunkedTokens tokens). A pass past the real count is CTAs that exit.
// Passes are ordered on the stream; a request cut by a pass continues from the state
// the previous pass wrote to its slot.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"
#include "vt/cuda/gdn/varlen.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace gdn_chunk {
namespace {

// The work scratch one pass may use: 68 chunks of Hv 48 with the f32 pair, 37 with
// the tensor-core pair (56 at Hv 32; 36,928 floats per chunk and head, its scratch also
// holds q and k).
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

// Runs the call from request starts and slots on the device; max_chunks bounds the
// number of chunks (exact or not).
void run(StreamState& st, Params p, const int32_t* start, const int32_t* slot, int64_t B,
         int64_t max_chunks) {
  p.start = start;
  p.slot = slot;
  p.batch = int(B);
  const bool tc = prefill_selected() == Prefill::kTensorCores;
  p.scratch_floats = tc ? kScratchFloatsTc : kScratchFloats;
  const int64_t chunk_bytes = p.hv * p.scratch_floats * int64_t(sizeof(float));
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
    if (p.pass_chunks > 0) (tc ? launch_chunk_wy_tc : launch_chunk_wy)(p, st.stream);
    (tc ? launch_chunk_scan_tc : launch_chunk_scan)(p, st.stream);
    begin += pass_chunks;
  } while (begin < max_chunks);
}

}  // namespace

// VTLLM_GDN_PREFILL: unset or "tc" the tensor-core kernels, "f32" the CUDA-core ones (the
// comparison in cuda_gdn_bench and cuda_gdn_test). Read here only, per call, so a test
// or bench can switch between calls.
Prefill prefill_selected() {
  const char* v = std::getenv("VTLLM_GDN_PREFILL");
  if (!v || std::string(v) == "tc") return Prefill::kTensorCores;
  VT_CHECK(std::string(v) == "f32", "VTLLM_GDN_PREFILL=", v, ": expected tc or f32");
  return Prefill::kF32;
}

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
  const Params p{q.data_ptr(),   q.dtype(),         q.stride(0),  q.stride(1), k.data_ptr(),
                 k.dtype(),      k.stride(0),       k.stride(1),  v.data_ptr(), v.dtype(),
                 v.stride(0),    v.stride(1),       g.data<float>(), beta.data<float>(),
                 state.data<float>(), out.data_ptr(), out.dtype(), nullptr, nullptr, nullptr,
                 nullptr,        nullptr,           nullptr,      0,           0,
                 0,              int(hv),           int(hv / q.size(1)), int(dk), int(dv),
                 scale,          0};
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
  run(st, p, d_start, d_slot, B, chunks);
}

}  // namespace vt::cuda
