// CUDA chunked gated delta rule (vt/cuda/gdn.h): cuts the requests into chunks of 64
// tokens, groups them into passes whose scratch fits kMaxScratchBytes, and runs
// chunk_wy then chunk_scan per pass (the kernels: delta_rule_chunked.cuh).
//
// A request longer than a pass continues in the next one: its slot holds the state
// the previous pass's chunk_scan wrote, and the passes are ordered on the stream.
// The index upload and the work scratch are reused by the next pass for the same
// reason (vt/cuda/stream_state.h).
#include <algorithm>
#include <vector>

#include "vt/cuda/check.h"
#include "vt/cuda/gdn.h"
#include "vt/cuda/gdn/delta_rule_chunked.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

using namespace gdn_chunk;

// The work scratch one pass may use: 64 chunks (4096 tokens) of Hv 48 fit.
constexpr int64_t kMaxScratchBytes = int64_t(256) << 20;

// The requests and chunks of one pass, in the layout Params points at.
struct Pass {
  std::vector<int32_t> slot, first_chunk, token_t0, token_len, chunk_t0, chunk_len;
  int64_t open_request = -1;  // the request whose chunks are being appended
  int num_chunks() const { return int(chunk_t0.size()); }
  int num_requests() const { return int(slot.size()); }
  void add_request(int64_t request, int64_t slot_of, int64_t t0, int64_t short_len) {
    slot.push_back(int32_t(slot_of));
    first_chunk.push_back(int32_t(chunk_t0.size()));
    token_t0.push_back(int32_t(t0));
    token_len.push_back(int32_t(short_len));
    open_request = request;
  }
  void add_chunk(int64_t request, int64_t slot_of, int64_t t0, int64_t len) {
    if (request != open_request) add_request(request, slot_of, t0, 0);
    chunk_t0.push_back(int32_t(t0));
    chunk_len.push_back(int32_t(len));
  }
};

void run_pass(StreamState& st, Params p, Pass& pass) {
  const int B = pass.num_requests(), nc = pass.num_chunks();
  if (B == 0) return;
  pass.first_chunk.push_back(nc);
  std::vector<int32_t> idx;
  idx.reserve(size_t(B) * 4 + 1 + size_t(nc) * 2);
  for (const auto* v : {&pass.slot, &pass.first_chunk, &pass.token_t0, &pass.token_len,
                        &pass.chunk_t0, &pass.chunk_len})
    idx.insert(idx.end(), v->begin(), v->end());
  const int32_t* d = upload_indices(st, idx);
  p.slot = d;
  p.first_chunk = p.slot + B;
  p.token_t0 = p.first_chunk + B + 1;
  p.token_len = p.token_t0 + B;
  p.chunk_t0 = p.token_len + B;
  p.chunk_len = p.chunk_t0 + nc;
  if (nc > 0) {
    p.work = static_cast<float*>(scratch(
        st, kWorkScratch, size_t(nc) * size_t(p.hv) * size_t(kScratchFloats) * sizeof(float)));
    launch_chunk_wy(p, nc, st.stream);
  }
  launch_chunk_scan(p, B, st.stream);
  pass = Pass{};
}

}  // namespace

void gated_delta_rule_chunked(Stream& s, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& g, const Tensor& beta, float scale, const Varlen& req,
                              const Tensor& state, const Tensor& out) {
  const int64_t B = req.batch(), hv = v.size(1), dk = q.size(2), dv = v.size(2);
  if (B == 0 || hv == 0 || dv == 0) return;
  // Device-resident indices (vt/ops/indices.h) leave the host vectors empty; the chunk
  // table is built from host values, so such a call runs the token recurrence.
  if (req.start.empty()) return gated_delta_rule(s, q, k, v, g, beta, scale, req, state, out);
  if (dk > kDK || dv > kDV)  // wider heads than the tiles: the token recurrence
    return gated_delta_rule(s, q, k, v, g, beta, scale, req, state, out);
  VT_CHECK(hv <= 65535, "gated_delta_rule_chunked (CUDA): grid too large");
  VT_CHECK(req.start.back() < (int64_t(1) << 31), "gated_delta_rule_chunked (CUDA): ",
           req.start.back(), " tokens exceed i32 indices");
  StreamState& st = s.cuda_state();
  set_device(st);
  const Params p{q.data_ptr(),   q.dtype(),         q.stride(0),  q.stride(1), k.data_ptr(),
                 k.dtype(),      k.stride(0),       k.stride(1),  v.data_ptr(), v.dtype(),
                 v.stride(0),    v.stride(1),       g.data<float>(), beta.data<float>(),
                 state.data<float>(), out.data_ptr(), out.dtype(), nullptr, nullptr, nullptr,
                 nullptr,        nullptr,           nullptr,      nullptr,     int(hv),
                 int(hv / q.size(1)), int(dk),      int(dv),      scale};
  const int64_t chunk_bytes = hv * kScratchFloats * int64_t(sizeof(float));
  const int64_t max_chunks = std::max<int64_t>(1, kMaxScratchBytes / chunk_bytes);
  Pass pass;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t begin = req.start[size_t(b)], end = req.start[size_t(b + 1)];
    if (end - begin < kMinChunkedTokens) {
      if (end > begin) {
        if (pass.num_requests() == 65535) run_pass(st, p, pass);
        pass.add_request(b, req.slot[size_t(b)], begin, end - begin);
      }
      continue;
    }
    for (int64_t t0 = begin; t0 < end; t0 += kChunk) {
      if (pass.num_chunks() == max_chunks || pass.num_requests() == 65535) run_pass(st, p, pass);
      pass.add_chunk(b, req.slot[size_t(b)], t0, std::min<int64_t>(kChunk, end - t0));
    }
  }
  run_pass(st, p, pass);
}

}  // namespace vt::cuda
