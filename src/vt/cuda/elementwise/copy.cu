// CUDA strided copy with dtype conversion, and fill: one thread per element, the
// flat index unravelled over up to 8 dims (source and destination strides apart).
// Floats convert through f32 (round to nearest even when narrowing, as the CPU copy);
// integers convert as C++ does.
#include <algorithm>
#include <cstdint>

#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/elementwise.h"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxDims = 8;

struct Layout {
  int ndim;
  int64_t size[kMaxDims];
  int64_t src_stride[kMaxDims];
  int64_t dst_stride[kMaxDims];
};

__device__ __forceinline__ int64_t load_int(const void* p, DType dt, int64_t i) {
  switch (dt) {
    case DType::kI8:
      return static_cast<const int8_t*>(p)[i];
    case DType::kI32:
      return static_cast<const int32_t*>(p)[i];
    case DType::kI64:
      return static_cast<const int64_t*>(p)[i];
    default:
      return static_cast<const uint8_t*>(p)[i];
  }
}
__device__ __forceinline__ void store_int(void* p, DType dt, int64_t i, int64_t v) {
  switch (dt) {
    case DType::kI8:
      static_cast<int8_t*>(p)[i] = int8_t(v);
      break;
    case DType::kI32:
      static_cast<int32_t*>(p)[i] = int32_t(v);
      break;
    case DType::kI64:
      static_cast<int64_t*>(p)[i] = v;
      break;
    default:
      static_cast<uint8_t*>(p)[i] = uint8_t(v);
      break;
  }
}
__device__ __forceinline__ bool is_float(DType dt) {
  return dt == DType::kF32 || dt == DType::kBF16 || dt == DType::kF16;
}

__global__ void __launch_bounds__(kThreads)
    copy_kernel(const void* src, DType sdt, void* dst, DType ddt, Layout l, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads) {
    int64_t rem = i, so = 0, dof = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      const int64_t idx = rem % l.size[d];
      rem /= l.size[d];
      so += idx * l.src_stride[d];
      dof += idx * l.dst_stride[d];
    }
    if (is_float(sdt))
      store_f32(dst, ddt, dof, load_f32(src, sdt, so));
    else
      store_int(dst, ddt, dof, load_int(src, sdt, so));
  }
}

__global__ void __launch_bounds__(kThreads)
    fill_kernel(void* dst, DType dt, Layout l, int64_t n, float fv, int64_t iv) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads) {
    int64_t rem = i, off = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      off += (rem % l.size[d]) * l.dst_stride[d];
      rem /= l.size[d];
    }
    if (is_float(dt))
      store_f32(dst, dt, off, fv);
    else
      store_int(dst, dt, off, iv);
  }
}

Layout layout_of(const Tensor& src, const Tensor& dst, const char* op) {
  VT_CHECK(dst.dim() <= kMaxDims, op, " (CUDA): ", dst.str(), " has more than ", kMaxDims, " dims");
  Layout l{};
  l.ndim = int(dst.dim());
  for (int d = 0; d < l.ndim; ++d) {
    l.size[d] = dst.size(d);
    l.dst_stride[d] = dst.stride(d);
    l.src_stride[d] = src.defined() ? src.stride(d) : 0;
  }
  return l;
}

// Grid (column spans, rows): row y copies row_bytes bytes in units of W (uint4 when every
// row start and the row length are 16-byte aligned, else bytes).
template <class W>
__global__ void __launch_bounds__(kThreads)
    copy_rows_kernel(const char* src, int64_t src_stride, const int32_t* src_rows, char* dst,
                     int64_t dst_stride, const int32_t* dst_rows, int64_t n, int64_t units) {
  for (int64_t i = blockIdx.y; i < n; i += gridDim.y) {
    const W* from = reinterpret_cast<const W*>(src + src_rows[i] * src_stride);
    W* to = reinterpret_cast<W*>(dst + dst_rows[i] * dst_stride);
    for (int64_t u = int64_t(blockIdx.x) * kThreads + threadIdx.x; u < units;
         u += int64_t(gridDim.x) * kThreads)
      to[u] = from[u];
  }
}

unsigned blocks_for(int64_t n) {
  return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 65536));
}

}  // namespace

void copy_strided(Stream& s, const Tensor& src, const Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  VT_CHECK(src.dtype() != DType::kF8E4M3 && dst.dtype() != DType::kF8E4M3,
           "copy (CUDA): f8e4m3 conversion has no CUDA kernel yet (", src.str(), " -> ", dst.str(),
           ")");
  copy_kernel<<<blocks_for(n), kThreads, 0, st.stream>>>(
      src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), layout_of(src, dst, "copy"), n);
  VT_CUDA_CHECK_LAUNCH("copy_kernel");
}

void copy_rows(Stream& s, const void* src, int64_t src_stride, const std::vector<int32_t>& src_rows,
               void* dst, int64_t dst_stride, const std::vector<int32_t>& dst_rows,
               int64_t row_bytes) {
  const int64_t n = int64_t(src_rows.size());
  if (n == 0 || row_bytes == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  std::vector<int32_t> idx(src_rows);
  idx.insert(idx.end(), dst_rows.begin(), dst_rows.end());
  const int32_t* d = upload_indices(st, idx);
  const auto addr = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  const bool vec = (addr(src) | addr(dst) | uintptr_t(src_stride) | uintptr_t(dst_stride) |
                    uintptr_t(row_bytes)) %
                       16 ==
                   0;
  const int64_t units = vec ? row_bytes / 16 : row_bytes;
  const dim3 grid(unsigned(std::min<int64_t>((units + kThreads - 1) / kThreads, 1024)),
                  unsigned(std::min<int64_t>(n, 65535)));
  const char* from = static_cast<const char*>(src);
  char* to = static_cast<char*>(dst);
  if (vec)
    copy_rows_kernel<uint4>
        <<<grid, kThreads, 0, st.stream>>>(from, src_stride, d, to, dst_stride, d + n, n, units);
  else
    copy_rows_kernel<unsigned char>
        <<<grid, kThreads, 0, st.stream>>>(from, src_stride, d, to, dst_stride, d + n, n, units);
  VT_CUDA_CHECK_LAUNCH("copy_rows_kernel");
}

void fill(Stream& s, const Tensor& t, double value) {
  const int64_t n = t.numel();
  if (n == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  VT_CHECK(t.dtype() != DType::kF8E4M3, "fill (CUDA): f8e4m3 has no CUDA kernel yet");
  fill_kernel<<<blocks_for(n), kThreads, 0, st.stream>>>(
      t.data_ptr(), t.dtype(), layout_of(Tensor(), t, "fill"), n, float(value), int64_t(value));
  VT_CUDA_CHECK_LAUNCH("fill_kernel");
}

}  // namespace vt::cuda
