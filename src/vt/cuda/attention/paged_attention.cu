// Host side of paged attention (vt/cuda/attention.h): tiles, the split-K choice, the
// index upload, the launch by (head_dim, cache dtype), and the split merge.
#include <algorithm>
#include <vector>

#include "vt/cuda/attention.h"
#include "vt/cuda/attention/flash_prefill.cuh"
#include "vt/cuda/attention/paged_attention.cuh"
#include "vt/cuda/attention/paged_decode.cuh"
#include "vt/cuda/check.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kCombineWarps = 4;
constexpr int64_t kMaxHeadDim = 512;  // the widest CUDA-core instantiation

// out[t, h] = sum_z acc_z e^(m_z - M) / sum_z l_z e^(m_z - M), M = max_z m_z (base 2).
// Rows of tokens past query_start[batch] (tokens of a graph-shaped call that no request
// owns) were never computed: they are skipped and keep what out held, as the unsplit
// kernels leave them. A row whose splits saw no key (m = -inf everywhere) gets 0.
__global__ void __launch_bounds__(kCombineWarps* kWarp)
    combine_kernel(const float* ws_acc, const float* ws_ml, int splits, int64_t rows, int d,
                   void* out, DType out_dtype, int64_t out_t, int64_t out_h, int hq,
                   const int32_t* query_start, int batch) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = int64_t(blockIdx.x) * kCombineWarps + threadIdx.x / kWarp;
  if (row >= rows || row / hq >= query_start[batch]) return;
  float mx = -INFINITY;
  for (int z = 0; z < splits; ++z) mx = fmaxf(mx, ws_ml[(z * rows + row) * 2]);
  float denom = 0.0f;
  for (int z = 0; z < splits; ++z) {
    const float mz = ws_ml[(z * rows + row) * 2];
    if (mz != -INFINITY) denom += ws_ml[(z * rows + row) * 2 + 1] * exp2f(mz - mx);
  }
  const float inv = denom > 0.0f ? 1.0f / denom : 0.0f;
  const int64_t off = (row / hq) * out_t + (row % hq) * out_h;
  for (int e = lane; e < d; e += kWarp) {
    float sum = 0.0f;
    for (int z = 0; z < splits; ++z) {
      const float mz = ws_ml[(z * rows + row) * 2];
      if (mz != -INFINITY) sum += ws_acc[(z * rows + row) * d + e] * exp2f(mz - mx);
    }
    store_f32(out, out_dtype, off + e, sum * inv);
  }
}

// The decode kernel's merge (paged_decode.cuh): out[t, h] = sum_z acc_z 2^(m_z - M) /
// sum_z l_z 2^(m_z - M), M = max_z m_z, over the request's request_split().count splits
// (exactly those wrote the workspace; a request within one split wrote out itself,
// padding requests of a graph included, and is skipped here). Parallel over rows and
// dims: a thread takes 4 consecutive dims of one (request, query head) row (16-byte
// workspace loads), so a block of kDecodeCombineThreads holds 512 / d rows; each
// thread reads its row's (m, l) pairs itself (one 8-byte load per split, shared
// through L1) instead of waiting on another warp.
constexpr int kDecodeCombineThreads = 128;
__global__ void __launch_bounds__(kDecodeCombineThreads)
    decode_combine_kernel(const float* ws_acc, const float* ws_ml, const int32_t* query_start,
                          const int32_t* seq_lens, int batch, int max_splits, int64_t tokens,
                          int hq, int d, void* out, DType out_dtype, int64_t out_t, int64_t out_h) {
  const int per_row = d / 4;  // threads per row
  if (int(threadIdx.x) >= (kDecodeCombineThreads / per_row) * per_row) return;  // d = 24, 40, ...
  const int64_t item =
      int64_t(blockIdx.x) * (kDecodeCombineThreads / per_row) + threadIdx.x / per_row;
  if (item >= int64_t(batch) * hq) return;
  const int b = int(item / hq), h = int(item % hq), e = 4 * (threadIdx.x % per_row);
  const int t = query_start[b];
  if (query_start[b + 1] - t != 1) return;
  const int nz = decode::request_split(seq_lens[b], max_splits).count;
  if (nz < 2) return;
  const int64_t rows = tokens * hq, row = int64_t(t) * hq + h;
  const float2* ml = reinterpret_cast<const float2*>(ws_ml) + row;
  const float4* acc = reinterpret_cast<const float4*>(ws_acc + row * d + e);
  const int64_t acc_split = rows * d / 4;  // float4s between two splits' rows
  float mx = -INFINITY;
  for (int z = 0; z < nz; ++z) mx = fmaxf(mx, ml[z * rows].x);
  float denom = 0.0f;
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
  for (int z = 0; z < nz; ++z) {
    const float2 mlz = ml[z * rows];
    const float4 a = acc[z * acc_split];
    const float w = exp2f(mlz.x - mx);  // every split has a key: m_z is finite
    denom += mlz.y * w;
    sum.x += a.x * w;
    sum.y += a.y * w;
    sum.z += a.z * w;
    sum.w += a.w * w;
  }
  const float inv = 1.0f / denom;
  const int64_t off = int64_t(t) * out_t + int64_t(h) * out_h + e;
  store_f32(out, out_dtype, off, sum.x * inv);
  store_f32(out, out_dtype, off + 1, sum.y * inv);
  store_f32(out, out_dtype, off + 2, sum.z * inv);
  store_f32(out, out_dtype, off + 3, sum.w * inv);
}

// Device-index form: tile i covers request i / per_req, tokens [q0 + j * tpc, +tpc) of
// it with j = i % per_req, clipped to the request's real query length (0: empty tile).
__global__ void tiles_kernel(const int32_t* query_start, int batch, int per_req, int tpc,
                             int32_t* tiles) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= batch * per_req) return;
  const int b = i / per_req, j = i % per_req;
  const int q0 = query_start[b], q1 = query_start[b + 1];
  const int t = q0 + j * tpc;
  tiles[3 * i] = b;
  tiles[3 * i + 1] = t;
  tiles[3 * i + 2] = max(0, min(tpc, q1 - t));
}

// The CUDA-core kernel: head_dim 64, 128 and 256 exactly (16-byte rows), any other up to
// kMaxHeadDim padded to the next of 32, 64, 128, 256, 512 (paged_attention.cuh).
template <class T>
void launch_for_dim(int d, const paged::Params& p, int tiles, cudaStream_t stream) {
  switch (d) {
    case 64:
      return paged::launch<64, T, false>(p, tiles, stream);
    case 128:
      return paged::launch<128, T, false>(p, tiles, stream);
    case 256:
      return paged::launch<256, T, false>(p, tiles, stream);
    default:
      break;
  }
  if (d <= 32) return paged::launch<32, T, true>(p, tiles, stream);
  if (d <= 64) return paged::launch<64, T, true>(p, tiles, stream);
  if (d <= 128) return paged::launch<128, T, true>(p, tiles, stream);
  if (d <= 256) return paged::launch<256, T, true>(p, tiles, stream);
  return paged::launch<512, T, true>(p, tiles, stream);
}

// The tensor-core kernels' instantiation for head_dim d (a multiple of 8 up to 256):
// D_PAD = the next of 64, 128, 256, exact when d == D_PAD.
int tc_pad(int64_t d) { return d <= 64 ? 64 : d <= 128 ? 128 : 256; }

template <class T>
void launch_flash_for_dim(int d, const paged::Params& p, int tiles, cudaStream_t stream) {
  switch (d) {
    case 64:
      return flash::launch<64, T, false>(p, tiles, stream);
    case 128:
      return flash::launch<128, T, false>(p, tiles, stream);
    case 256:
      return flash::launch<256, T, false>(p, tiles, stream);
    default:
      break;
  }
  switch (tc_pad(d)) {
    case 64:
      return flash::launch<64, T, true>(p, tiles, stream);
    case 128:
      return flash::launch<128, T, true>(p, tiles, stream);
    default:
      return flash::launch<256, T, true>(p, tiles, stream);
  }
}

// The rule of vt/cuda/attention.h: the tensor-core kernels take a step when q, the
// caches and out share a 16-bit dtype, head_dim is a multiple of 8 up to 256 (whole
// 16-byte chunks), and q and out rows allow their 16-byte loads and 4-byte stores; then
// prefill (some q_len > 1) goes to flash_prefill, decode (every q_len <= 1) to
// paged_decode.
bool tensor_core_operands(const Tensor& q, const Tensor& k_cache, const Tensor& out) {
  const DType dt = k_cache.dtype();
  const int64_t d = q.size(2);
  const auto aligned = [](const Tensor& t, int64_t elems) {
    return reinterpret_cast<uintptr_t>(t.data_ptr()) % uintptr_t(elems * 2) == 0 &&
           t.stride(0) % elems == 0 && t.stride(1) % elems == 0;
  };
  return (dt == DType::kBF16 || dt == DType::kF16) && q.dtype() == dt && out.dtype() == dt &&
         d % 8 == 0 && d <= 256 && aligned(q, 8) && aligned(out, 2);
}

template <class T>
void launch_decode_for_dim(int d, const paged::Params& p, int batch, cudaStream_t stream) {
  switch (d) {
    case 64:
      return decode::launch<64, T, false>(p, batch, stream);
    case 128:
      return decode::launch<128, T, false>(p, batch, stream);
    case 256:
      return decode::launch<256, T, false>(p, batch, stream);
    default:
      break;
  }
  switch (tc_pad(d)) {
    case 64:
      return decode::launch<64, T, true>(p, batch, stream);
    case 128:
      return decode::launch<128, T, true>(p, batch, stream);
    default:
      return decode::launch<256, T, true>(p, batch, stream);
  }
}

// The kernel parameters every paged-attention kernel reads (the tile list, which only
// the prefill kernels take, is the caller's), with the split-K workspace (f32 partial
// outputs, then each row's max and sum per split) from the stream's work scratch.
paged::Params make_params(StreamState& st, const Tensor& q, const Tensor& k_cache,
                          const Tensor& v_cache, const Tensor& out, const PagedBatch& pb,
                          const int32_t* d_qs, const int32_t* d_sl, const int32_t* d_bt,
                          int heads_per_cta, int head_chunks, int splits, int split_keys,
                          float scale) {
  const int64_t T = q.size(0), hq = q.size(1), d = q.size(2), hkv = k_cache.size(2);
  paged::Params p{};
  p.q = q.data_ptr();
  p.q_dtype = q.dtype();
  p.q_t = q.stride(0);
  p.q_h = q.stride(1);
  p.k_cache = k_cache.data_ptr();
  p.v_cache = v_cache.data_ptr();
  p.out = out.data_ptr();
  p.out_dtype = out.dtype();
  p.out_t = out.stride(0);
  p.out_h = out.stride(1);
  p.query_start = d_qs;
  p.seq_lens = d_sl;
  p.block_table = d_bt;
  p.max_blocks = int(pb.max_blocks);
  p.block_size = int(k_cache.size(1));
  p.tokens = int(T);
  p.hq = int(hq);
  p.hkv = int(hkv);
  p.group = int(hq / hkv);
  p.heads_per_cta = heads_per_cta;
  p.head_chunks = head_chunks;
  p.splits = splits;
  p.split_keys = split_keys;
  p.scale_log2 = scale * 1.4426950408889634f;
  p.head_dim = int(d);
  if (splits > 1) {
    const size_t acc_floats = size_t(splits) * size_t(T * hq * d);
    float* ws = static_cast<float*>(
        scratch(st, kWorkScratch, (acc_floats + size_t(splits) * size_t(T * hq) * 2) * 4));
    p.ws_acc = ws;
    p.ws_ml = ws + acc_floats;
  }
  return p;
}

// The decode kernel's step (paged_decode.cuh): a CTA per (request, kv head, split) over
// the bound batch; requests without exactly one token exit.
// Split rule: the grid holds `splits` CTAs per (request, kv head), and each request
// uses ceil(seq_len / kMinSplitKeys) of them at most (decode::request_split, on the
// device). `splits` fills one wave of resident CTAs (ctas x splits <= SMs x CTAs per
// SM) and never asks for more splits than the longest context can use at
// kMinSplitKeys each. So a small batch over a long context spreads over the SMs (one
// CTA streams at ~1/132 of the copy rate), a short context or a full batch runs
// unsplit, and with bounds (a graph) the grid follows the bounds while the work
// follows each step's real seq_len. With one split per request everywhere (splits ==
// 1) the combine kernel is not launched: the decode kernel writes out itself.
int decode_splits(const StreamState& st, int64_t d, int64_t ctas, int64_t max_keys) {
  const int pad = tc_pad(d);
  const int smem = pad == 64    ? decode::smem_bytes<64>()
                   : pad == 128 ? decode::smem_bytes<128>()
                                : decode::smem_bytes<256>();
  const int64_t per_sm = std::max(1, (227 * 1024) / (smem + 1024));
  const int64_t wave = per_sm * int64_t(st.num_sms);
  if (ctas >= wave) return 1;
  const int64_t useful = (max_keys + decode::kMinSplitKeys - 1) / decode::kMinSplitKeys;
  return int(std::clamp<int64_t>(std::min(wave / ctas, useful), 1, 128));
}

void paged_decode(StreamState& st, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                  const PagedBatch& pb, float scale, const Tensor& out) {
  const int64_t T = q.size(0), hq = q.size(1), d = q.size(2), hkv = k_cache.size(2);
  const int64_t group = hq / hkv, batch = pb.batch();
  if (batch == 0) return;
  const int heads_per_cta = int(std::min<int64_t>(group, decode::kRows));
  const int head_chunks = int((group + heads_per_cta - 1) / heads_per_cta);
  int64_t max_keys = 0, ctas_batch = batch;
  if (pb.bounds.defined()) {
    max_keys = pb.bounds.max_seq_len;
    ctas_batch = pb.bounds.batch;
  } else {
    for (int64_t b = 0; b < batch; ++b) max_keys = std::max(max_keys, pb.seq_lens[size_t(b)]);
  }
  const int splits =
      decode_splits(st, d, std::max<int64_t>(1, ctas_batch * hkv * head_chunks), max_keys);

  const int32_t *d_qs = pb.d_query_start, *d_sl = pb.d_seq_lens, *d_bt = pb.d_block_table;
  if (!pb.on_device()) {
    std::vector<int32_t> idx;  // query_start [B+1], seq_lens [B], block_table
    idx.reserve(size_t(2 * batch + 1 + batch * pb.max_blocks));
    for (int64_t v : pb.query_start) idx.push_back(int32_t(v));
    for (int64_t v : pb.seq_lens) idx.push_back(int32_t(v));
    idx.insert(idx.end(), pb.block_table, pb.block_table + batch * pb.max_blocks);
    const int32_t* d_idx = upload_indices(st, idx);
    d_qs = d_idx;
    d_sl = d_idx + batch + 1;
    d_bt = d_idx + 2 * batch + 1;
  }
  paged::Params p = make_params(st, q, k_cache, v_cache, out, pb, d_qs, d_sl, d_bt, heads_per_cta,
                                head_chunks, splits, /*split_keys: per request*/ 0, scale);
  if (k_cache.dtype() == DType::kBF16)
    launch_decode_for_dim<__nv_bfloat16>(int(d), p, int(batch), st.stream);
  else
    launch_decode_for_dim<__half>(int(d), p, int(batch), st.stream);
  if (splits > 1) {
    const int64_t rows_per_block = kDecodeCombineThreads / (d / 4), items = batch * hq;
    decode_combine_kernel<<<unsigned((items + rows_per_block - 1) / rows_per_block),
                            kDecodeCombineThreads, 0, st.stream>>>(
        p.ws_acc, p.ws_ml, d_qs, d_sl, int(batch), splits, T, int(hq), int(d), out.data_ptr(),
        out.dtype(), out.stride(0), out.stride(1));
    VT_CUDA_CHECK_LAUNCH("paged attention decode_combine_kernel");
  }
}

}  // namespace

void paged_attention(Stream& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                     const PagedBatch& pb, float scale, const Tensor& out) {
  const int64_t T = q.size(0), hq = q.size(1), d = q.size(2);
  if (T == 0) return;
  const int64_t hkv = k_cache.size(2), group = hq / hkv, batch = pb.batch();
  VT_CHECK(k_cache.dtype() == v_cache.dtype(), "paged_attention (CUDA): k_cache ", k_cache.str(),
           " and v_cache ", v_cache.str(), " differ in dtype");
  VT_CHECK(reinterpret_cast<uintptr_t>(k_cache.data_ptr()) % 16 == 0 &&
               reinterpret_cast<uintptr_t>(v_cache.data_ptr()) % 16 == 0,
           "paged_attention (CUDA): the caches must be 16-byte aligned");
  VT_CHECK(T < (int64_t(1) << 31) && pb.max_blocks * batch < (int64_t(1) << 31),
           "paged_attention (CUDA): batch too large for 32-bit indices");
  VT_CHECK(d <= kMaxHeadDim, "paged_attention (CUDA): head_dim ", d, " of q ", q.str(),
           " exceeds the kernels' ", kMaxHeadDim);
  StreamState& st = s.cuda_state();
  set_device(st);

  // Kernel: by the bounds when given, so a graph and an eager call agree.
  int64_t max_query_len = pb.bounds.max_query_len;
  if (!pb.bounds.defined())
    for (int64_t b = 0; b < batch; ++b)
      max_query_len =
          std::max(max_query_len, pb.query_start[size_t(b + 1)] - pb.query_start[size_t(b)]);
  const bool tc_operands = tensor_core_operands(q, k_cache, out);
  // KernelConfig::attn_decode = kCudaCores (VTLLM_ATTN_DECODE=cuda_cores) sends decode
  // steps to the CUDA-core kernel instead (the [cuda cores] rows of cuda_attention_bench).
  if (tc_operands && max_query_len <= 1 &&
      s.kernel_config().attn_decode == AttnDecodeKernel::kTensorCores)
    return paged_decode(st, q, k_cache, v_cache, pb, scale, out);
  const bool tc = tc_operands && max_query_len > 1;
  const int cta_rows = tc ? flash::kRows : paged::kRows;

  // Tiles: per request, runs of tokens_per_cta tokens; a CTA covers heads_per_cta of
  // the group's query heads.
  const int heads_per_cta = int(std::min<int64_t>(group, cta_rows));
  const int head_chunks = int((group + heads_per_cta - 1) / heads_per_cta);
  const int tokens_per_cta = cta_rows / heads_per_cta;
  // Host form: the tiles follow the query lengths and the indices travel with them in
  // one upload. Device form: per_req tiles per request from the bounds, filled on the
  // device (tiles_kernel); empty ones exit at once.
  std::vector<int32_t> idx;  // query_start [B+1], seq_lens [B], block_table, tiles
  size_t tiles_at = 0;
  int64_t max_keys = 0, tiles64 = 0;
  if (!pb.on_device()) {
    idx.reserve(size_t(2 * batch + 1 + batch * pb.max_blocks));
    for (int64_t v : pb.query_start) idx.push_back(int32_t(v));
    for (int64_t v : pb.seq_lens) idx.push_back(int32_t(v));
    idx.insert(idx.end(), pb.block_table, pb.block_table + batch * pb.max_blocks);
    tiles_at = idx.size();
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t q0 = pb.query_start[size_t(b)], q1 = pb.query_start[size_t(b + 1)];
      if (q1 > q0) max_keys = std::max(max_keys, pb.seq_lens[size_t(b)]);
      for (int64_t t = q0; t < q1; t += tokens_per_cta) {
        idx.push_back(int32_t(b));
        idx.push_back(int32_t(t));
        idx.push_back(int32_t(std::min<int64_t>(tokens_per_cta, q1 - t)));
      }
    }
    tiles64 = int64_t(idx.size() - tiles_at) / 3;
  } else {
    tiles64 = batch * ((pb.bounds.max_query_len + tokens_per_cta - 1) / tokens_per_cta);
  }
  if (tiles64 == 0) return;
  VT_CHECK(tiles64 < int64_t(0x7fffffff), "paged_attention (CUDA): too many tiles");
  const int num_tiles = int(tiles64);

  // Split-K when the grid is small and contexts are long. A CTA loads a K/V tile, then
  // computes on it (no double buffering yet), so an SM needs several CTAs in flight to
  // keep memory busy: aim for 8 CTAs per SM, each split at least 256 keys. (2 per SM
  // measured 22% of the copy rate at batch 64, 4K context.) With bounds, the choice
  // sees only the bounds (vt/ops/attention.h), so a graph and an eager call agree.
  int64_t ctas = int64_t(num_tiles) * hkv * head_chunks;
  if (pb.bounds.defined()) {
    max_keys = pb.bounds.max_seq_len;
    ctas = pb.bounds.batch * ((pb.bounds.max_query_len + tokens_per_cta - 1) / tokens_per_cta) *
           hkv * head_chunks;
  }
  // A tensor-core CTA (4x the rows, double-buffered loads, 2 CTAs per SM at head_dim
  // 256) aims at 2 CTAs per SM and >= 512 keys per split.
  const int64_t cta_target = (tc ? 2 : 8) * int64_t(st.num_sms), min_split = tc ? 512 : 256;
  const int align = tc ? flash::kSplitAlign : paged::kKeys;
  int splits = 1;
  if (ctas < cta_target && max_keys > 2 * min_split)
    splits = int(std::min<int64_t>((cta_target + ctas - 1) / ctas,
                                   (max_keys + min_split - 1) / min_split));
  splits = std::clamp(splits, 1, 128);
  int split_keys = int((max_keys + splits - 1) / splits);
  split_keys = std::max(align, (split_keys + align - 1) / align * align);
  splits = int((max_keys + split_keys - 1) / split_keys);
  splits = std::max(splits, 1);

  const int32_t *d_qs = pb.d_query_start, *d_sl = pb.d_seq_lens, *d_bt = pb.d_block_table;
  const int32_t* d_tiles = nullptr;
  if (!pb.on_device()) {
    const int32_t* d_idx = upload_indices(st, idx);
    d_qs = d_idx;
    d_sl = d_idx + batch + 1;
    d_bt = d_idx + 2 * batch + 1;
    d_tiles = d_idx + tiles_at;
  } else {
    int32_t* t = static_cast<int32_t*>(scratch(st, kIndexScratch, size_t(num_tiles) * 3 * 4));
    const int per_req = int(num_tiles / batch);
    tiles_kernel<<<unsigned((num_tiles + 127) / 128), 128, 0, st.stream>>>(
        d_qs, int(batch), per_req, tokens_per_cta, t);
    VT_CUDA_CHECK_LAUNCH("paged attention tiles_kernel");
    d_tiles = t;
  }
  paged::Params p = make_params(st, q, k_cache, v_cache, out, pb, d_qs, d_sl, d_bt, heads_per_cta,
                                head_chunks, splits, split_keys, scale);
  p.tiles = d_tiles;
  if (tc && k_cache.dtype() == DType::kBF16) {
    launch_flash_for_dim<__nv_bfloat16>(int(d), p, num_tiles, st.stream);
  } else if (tc) {
    launch_flash_for_dim<__half>(int(d), p, num_tiles, st.stream);
  } else {
    switch (k_cache.dtype()) {
      case DType::kBF16: launch_for_dim<__nv_bfloat16>(int(d), p, num_tiles, st.stream); break;
      case DType::kF16: launch_for_dim<__half>(int(d), p, num_tiles, st.stream); break;
      default: launch_for_dim<float>(int(d), p, num_tiles, st.stream); break;
    }
  }
  if (splits > 1) {
    const int64_t rows = T * hq;
    combine_kernel<<<unsigned((rows + kCombineWarps - 1) / kCombineWarps), kCombineWarps * kWarp, 0,
                     st.stream>>>(p.ws_acc, p.ws_ml, splits, rows, int(d), out.data_ptr(),
                                  out.dtype(), out.stride(0), out.stride(1), int(hq), d_qs,
                                  int(batch));
    VT_CUDA_CHECK_LAUNCH("paged attention combine_kernel");
  }
}

}  // namespace vt::cuda
