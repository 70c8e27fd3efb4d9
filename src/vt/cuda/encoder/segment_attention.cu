// CUDA segment_attention (vt/ops/encoder.h): the host side. Cuts every segment of the
// host cu_seqlens into query tiles of the chosen kernel's height, orders them longest
// segment first (CTAs start in table order: long ones first, short ones fill the tail),
// uploads the table through the stream's staging ring (upload_indices) and launches:
//   q, k, v all bf16 or all f16, head_dim 64, 72 or 80 and 16-byte rows: the wgmma
//     kernel (segment_attention_wgmma.cu), unless KernelConfig::segattn_wgmma is off;
//   else q, k, v all bf16 or all f16 and head_dim <= 128: the mma.sync kernel
//     (segment_attention.cuh) at the padded head dim 16, 32, 48, 64, 80 or 128;
//   otherwise (f32 or mixed dtypes, head_dim <= 256): the CUDA-core kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "vt/cuda/encoder.h"
#include "vt/cuda/encoder/segment_attention.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

using segattn::Tile;
static_assert(sizeof(Tile) == 4 * sizeof(int32_t), "the table is uploaded as i32");

// The tiles of every non-empty segment, rows_per_tile query rows each (the last of a
// segment shorter), segments with more keys first (stable: ties keep segment order).
std::vector<Tile> build_tiles(const std::vector<int32_t>& cu, int rows_per_tile) {
  std::vector<int> order;
  for (size_t i = 0; i + 1 < cu.size(); ++i)
    if (cu[i + 1] > cu[i]) order.push_back(int(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return cu[size_t(a) + 1] - cu[size_t(a)] > cu[size_t(b) + 1] - cu[size_t(b)];
  });
  std::vector<Tile> tiles;
  for (int i : order) {
    const int32_t begin = cu[size_t(i)], end = cu[size_t(i) + 1];
    for (int32_t q0 = begin; q0 < end; q0 += rows_per_tile)
      tiles.push_back({q0, std::min<int32_t>(rows_per_tile, end - q0), begin, end});
  }
  return tiles;
}

// The padded head dim of the tensor-core kernel's instantiation that serves head_dim.
int padded_dim(int64_t head_dim) {
  for (int dp : {16, 32, 48, 64, 80}) {
    if (head_dim <= dp) return dp;
  }
  return 128;
}

template <class T>
void launch_mma(int dp, const segattn::Params& p, int num_tiles, int heads, cudaStream_t st) {
  switch (dp) {
    case 16:
      return segattn::launch<16, T>(p, num_tiles, heads, st);
    case 32:
      return segattn::launch<32, T>(p, num_tiles, heads, st);
    case 48:
      return segattn::launch<48, T>(p, num_tiles, heads, st);
    case 64:
      return segattn::launch<64, T>(p, num_tiles, heads, st);
    case 80:
      return segattn::launch<80, T>(p, num_tiles, heads, st);
    default:
      return segattn::launch<128, T>(p, num_tiles, heads, st);
  }
}

int tile_rows_of(int dp) {
  switch (dp) {
    case 16:
      return segattn::tile_rows<16>();
    case 32:
      return segattn::tile_rows<32>();
    case 48:
      return segattn::tile_rows<48>();
    case 64:
      return segattn::tile_rows<64>();
    case 80:
      return segattn::tile_rows<80>();
    default:
      return segattn::tile_rows<128>();
  }
}

// The head's rows can be copied in 16-byte pieces: aligned base, strides in whole pieces.
bool vec_ok(const HeadsArg& a, int64_t head_dim) {
  const int64_t per = 16 / int64_t(dtype_size(a.dtype));
  return head_dim % per == 0 && reinterpret_cast<uintptr_t>(a.data) % 16 == 0 &&
         a.token_stride % per == 0 && a.head_stride % per == 0;
}

}  // namespace

SegmentAttentionKernel segment_attention_kernel(Stream& s, const HeadsArg& q, const HeadsArg& k,
                                                const HeadsArg& v, int64_t head_dim) {
  const bool narrow = q.dtype == k.dtype && q.dtype == v.dtype &&
                      (q.dtype == DType::kBF16 || q.dtype == DType::kF16);
  if (!narrow || head_dim > 128) return SegmentAttentionKernel::kCudaCores;
  const bool vec_in = vec_ok(q, head_dim) && vec_ok(k, head_dim) && vec_ok(v, head_dim);
  if (vec_in && segattn::wgmma_supports(int(head_dim), s.cuda_state().cc) &&
      s.kernel_config().segattn_wgmma != Toggle::kOff)  // VTLLM_SEGATTN_WGMMA
    return SegmentAttentionKernel::kWgmma;
  return SegmentAttentionKernel::kMmaSync;
}

void segment_attention(Stream& s, const HeadsArg& q, const HeadsArg& k, const HeadsArg& v,
                       int64_t tokens, int64_t heads, int64_t head_dim,
                       const std::vector<int32_t>& cu_seqlens, float scale, const HeadsArg& out) {
  if (tokens == 0 || heads == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const SegmentAttentionKernel kernel = segment_attention_kernel(s, q, k, v, head_dim);
  const bool wgmma = kernel == SegmentAttentionKernel::kWgmma;
  const bool mma = kernel != SegmentAttentionKernel::kCudaCores;
  VT_CHECK(mma || head_dim <= segattn::kCudaCoreMaxDim, "segment_attention (CUDA): head_dim ",
           head_dim, " exceeds ", segattn::kCudaCoreMaxDim, " for ", dtype_name(q.dtype),
           " inputs (the CUDA-core kernel's limit)");
  VT_CHECK(heads <= 65535, "segment_attention (CUDA): ", heads, " heads exceed the grid");
  const int dp = padded_dim(head_dim);
  const bool vec_in = vec_ok(q, head_dim) && vec_ok(k, head_dim) && vec_ok(v, head_dim);
  const int rows = wgmma ? segattn::kWgmmaRows : mma ? tile_rows_of(dp) : segattn::kCudaCoreRows;
  const std::vector<Tile> tiles = build_tiles(cu_seqlens, rows);
  if (tiles.empty()) return;
  VT_CHECK(tiles.size() <= 65535, "segment_attention (CUDA): ", tiles.size(),
           " query tiles exceed the grid (", tokens, " tokens)");

  segattn::Params p{};
  p.q = q.data, p.k = k.data, p.v = v.data, p.out = out.data;
  p.q_t = q.token_stride, p.q_h = q.head_stride;
  p.k_t = k.token_stride, p.k_h = k.head_stride;
  p.v_t = v.token_stride, p.v_h = v.head_stride;
  p.o_t = out.token_stride, p.o_h = out.head_stride;
  p.q_dtype = q.dtype, p.k_dtype = k.dtype, p.v_dtype = v.dtype, p.out_dtype = out.dtype;
  p.head_dim = int(head_dim);
  p.scale_log2 = scale * float(M_LOG2E);
  p.vec_in = vec_in;
  p.out_pairs = out.dtype == q.dtype && head_dim % 2 == 0 &&
                reinterpret_cast<uintptr_t>(out.data) % 4 == 0 && out.token_stride % 2 == 0 &&
                out.head_stride % 2 == 0;
  // Tile is four i32: the table travels as i32 through the index scratch.
  std::vector<int32_t> flat(tiles.size() * 4);
  std::memcpy(flat.data(), tiles.data(), flat.size() * sizeof(int32_t));
  p.tiles = reinterpret_cast<const Tile*>(upload_indices(st, flat));

  const int num_tiles = int(tiles.size());
  if (wgmma)
    segattn::launch_wgmma(p, q.dtype == DType::kBF16, num_tiles, int(heads), st.stream);
  else if (!mma)
    segattn::launch_cuda_cores(p, num_tiles, int(heads), st.stream);
  else if (q.dtype == DType::kBF16)
    launch_mma<__nv_bfloat16>(dp, p, num_tiles, int(heads), st.stream);
  else
    launch_mma<__half>(dp, p, num_tiles, int(heads), st.stream);
}

}  // namespace vt::cuda
