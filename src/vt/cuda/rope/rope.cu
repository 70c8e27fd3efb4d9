// CUDA rope_neox and the 1-D cos/sin table (vt/ops/rope.h).
//
// rope_neox: a thread per NeoX pair (j, j + R/2) of a (token, head) row, plus, when out
// is not x, a thread per passthrough dim [R, head_dim); rows through RowsRef (one or two
// strides). When x and out are one narrow dtype, nothing passes through and every row,
// R/2 and the table allow it, a thread takes four adjacent pairs instead, in 8-byte loads
// and stores of x/out and 16-byte loads of the table (rope_neox_vec4_kernel). The
// arithmetic is the CPU's operation for operation, with the f32 products and sums spelled
// __fmul_rn / __fadd_rn so nvcc cannot fuse them into an FMA the CPU does not use: the
// outputs are bit-identical to the CPU arm.
//
// rope_cos_sin_1d: a thread per (token, frequency); inv_freq comes from the host (the
// CPU's f32 values; device powf differs in the last bits), the angle is the same f32
// product, cos/sin are taken in double as on the CPU (CUDA's double sincos is within 2
// ulp, so after the rounding to f32 an entry differs from the CPU's only next to an f32
// rounding boundary, by one ulp).
#include <algorithm>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/rope.h"
#include "vt/cuda/row_chunks.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // grid-stride beyond this
constexpr int kMaxHalf = 512;                     // rotary_dim <= 1024 (the table's inv_freq)

struct RopeParams {
  RowsRef x, out;
  const float* cos_sin;  // [T, 2 * half]
  int64_t rows, heads;
  int half;
  int tail;       // passthrough dims written per row: head_dim - R, or 0 in place
  bool f32_math;  // f32 products and sum, one rounding (else out's dtype per product)
};

__global__ void __launch_bounds__(kThreads) rope_neox_kernel(RopeParams p) {
  const int64_t per_row = p.half + p.tail, total = p.rows * per_row;
  const DType xdt = p.x.dtype, odt = p.out.dtype;
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * kThreads) {
    const int64_t r = idx / per_row;
    const int j = int(idx - r * per_row);
    const char* xr = p.x.row(r);
    char* orow = p.out.row(r);
    if (j >= p.half) {  // partial rotary: dims [R, head_dim) copy through (rounded to out's dtype)
      const int64_t i = 2 * p.half + (j - p.half);
      store_f32(orow, odt, i, load_f32(xr, xdt, i));
      continue;
    }
    const float* c = p.cos_sin + (r / p.heads) * 2 * p.half;
    const float cj = c[j], sj = c[p.half + j];
    const float x1 = load_f32(xr, xdt, j), x2 = load_f32(xr, xdt, j + p.half);
    float o1, o2;
    if (!p.f32_math) {
      // out's dtype arithmetic: each product rounds, then the sum (store_f32 rounds it).
      o1 = __fsub_rn(round_to(__fmul_rn(x1, cj), odt), round_to(__fmul_rn(x2, sj), odt));
      o2 = __fadd_rn(round_to(__fmul_rn(x2, cj), odt), round_to(__fmul_rn(x1, sj), odt));
    } else {
      o1 = __fsub_rn(__fmul_rn(x1, cj), __fmul_rn(x2, sj));
      o2 = __fadd_rn(__fmul_rn(x2, cj), __fmul_rn(x1, sj));
    }
    store_f32(orow, odt, j, o1);
    store_f32(orow, odt, j + p.half, o2);
  }
}

// Four pairs (j .. j + 3, j + R/2 .. j + R/2 + 3) per thread, T = bf16 or half for
// x and out; the same arithmetic as rope_neox_kernel, pair by pair.
template <class T>
__global__ void __launch_bounds__(kThreads) rope_neox_vec4_kernel(RopeParams p) {
  const int groups = p.half / 4;
  const int64_t total = p.rows * groups;
  const DType odt = p.out.dtype;
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * kThreads) {
    const int64_t r = idx / groups;
    const int j = 4 * int(idx - r * groups);
    const T* xr = reinterpret_cast<const T*>(p.x.row(r));
    T* orow = reinterpret_cast<T*>(p.out.row(r));
    const float* c = p.cos_sin + (r / p.heads) * 2 * p.half;
    const float4 cj = *reinterpret_cast<const float4*>(c + j);
    const float4 sj = *reinterpret_cast<const float4*>(c + p.half + j);
    const uint2 a = *reinterpret_cast<const uint2*>(xr + j);
    const uint2 b = *reinterpret_cast<const uint2*>(xr + j + p.half);
    const T* x1 = reinterpret_cast<const T*>(&a);
    const T* x2 = reinterpret_cast<const T*>(&b);
    const float cs[4] = {cj.x, cj.y, cj.z, cj.w}, sn[4] = {sj.x, sj.y, sj.z, sj.w};
    uint2 oa, ob;
    T* o1 = reinterpret_cast<T*>(&oa);
    T* o2 = reinterpret_cast<T*>(&ob);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float u = to_float(x1[e]), w = to_float(x2[e]);
      float v1, v2;
      if (!p.f32_math) {
        v1 = __fsub_rn(round_to(__fmul_rn(u, cs[e]), odt), round_to(__fmul_rn(w, sn[e]), odt));
        v2 = __fadd_rn(round_to(__fmul_rn(w, cs[e]), odt), round_to(__fmul_rn(u, sn[e]), odt));
      } else {
        v1 = __fsub_rn(__fmul_rn(u, cs[e]), __fmul_rn(w, sn[e]));
        v2 = __fadd_rn(__fmul_rn(w, cs[e]), __fmul_rn(u, sn[e]));
      }
      o1[e] = from_float<T>(v1);
      o2[e] = from_float<T>(v2);
    }
    *reinterpret_cast<uint2*>(orow + j) = oa;
    *reinterpret_cast<uint2*>(orow + j + p.half) = ob;
  }
}

struct CosSinParams {
  const void* positions;
  bool positions_i64;
  int64_t positions_stride;  // elements
  int64_t tokens;
  int half;
  float* out;  // [tokens, 2 * half]
  float inv_freq[kMaxHalf];
};

// __grid_constant__: inv_freq is indexed per thread and read from the parameter bank,
// not copied to local memory.
__global__ void __launch_bounds__(kThreads)
    rope_cos_sin_1d_kernel(const __grid_constant__ CosSinParams p) {
  const int64_t total = p.tokens * p.half;
  for (int64_t idx = int64_t(blockIdx.x) * kThreads + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * kThreads) {
    const int64_t t = idx / p.half;
    const int i = int(idx - t * p.half);
    const int64_t off = t * p.positions_stride;
    const int64_t pos = p.positions_i64 ? static_cast<const int64_t*>(p.positions)[off]
                                        : int64_t(static_cast<const int32_t*>(p.positions)[off]);
    const float angle = __fmul_rn(float(pos), p.inv_freq[i]);  // f32, as HF and the CPU arm
    double sn, cs;
    sincos(double(angle), &sn, &cs);
    p.out[t * 2 * p.half + i] = float(cs);
    p.out[t * 2 * p.half + p.half + i] = float(sn);
  }
}

unsigned grid_for(int64_t total) {
  return unsigned(std::min<int64_t>((total + kThreads - 1) / kThreads, kMaxBlocks));
}

}  // namespace

void rope_neox(Stream& s, const Rows& x, const Tensor& cos_sin, int64_t heads, const Rows& out,
               bool f32_math) {
  const int64_t rd = cos_sin.size(1);
  RopeParams p{rows_ref(x),
               rows_ref(out),
               cos_sin.data<float>(),
               x.rows,
               heads,
               int(rd / 2),
               x.data == out.data ? 0 : int(x.cols - rd),  // in place: the tail is already x
               f32_math};
  const int64_t total = p.rows * (p.half + p.tail);
  if (total == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const bool narrow = x.dtype == out.dtype && (x.dtype == DType::kBF16 || x.dtype == DType::kF16);
  // 8-byte x/out pieces (4 elements) at j and j + R/2; 16-byte table pieces (rows of R floats).
  if (narrow && p.tail == 0 && rows_vec_ok(p.x, p.half, 4) && rows_vec_ok(p.out, p.half, 4) &&
      reinterpret_cast<uintptr_t>(p.cos_sin) % 16 == 0) {
    const int64_t groups = p.rows * (p.half / 4);
    if (x.dtype == DType::kBF16)
      rope_neox_vec4_kernel<__nv_bfloat16><<<grid_for(groups), kThreads, 0, st.stream>>>(p);
    else
      rope_neox_vec4_kernel<__half><<<grid_for(groups), kThreads, 0, st.stream>>>(p);
    VT_CUDA_CHECK_LAUNCH("rope_neox_vec4_kernel");
    return;
  }
  rope_neox_kernel<<<grid_for(total), kThreads, 0, st.stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("rope_neox_kernel");
}

void rope_cos_sin_1d(Stream& s, const Tensor& positions, const std::vector<float>& inv_freq,
                     const Tensor& out) {
  const int64_t half = int64_t(inv_freq.size());
  VT_CHECK(half <= kMaxHalf, "rope_cos_sin_1d (CUDA): rotary_dim ", 2 * half, " exceeds ",
           2 * kMaxHalf);
  CosSinParams p{};
  p.positions = positions.data_ptr();
  p.positions_i64 = positions.dtype() == DType::kI64;
  p.positions_stride = positions.stride(0);
  p.tokens = positions.size(0);
  p.half = int(half);
  p.out = static_cast<float*>(out.data_ptr());
  std::copy(inv_freq.begin(), inv_freq.end(), p.inv_freq);
  const int64_t total = p.tokens * half;
  if (total == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  rope_cos_sin_1d_kernel<<<grid_for(total), kThreads, 0, st.stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("rope_cos_sin_1d_kernel");
}

}  // namespace vt::cuda
