// CUDA AttnQkNormRopeGate and kv_cache_write (vt/cuda/attention.h).
#include <algorithm>
#include <vector>

#include "vt/cuda/attention.h"
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kPreambleWarps = 8;
constexpr int kCacheWriteThreads = 256;

// Element offsets throughout (the dtypes are run-time values).
struct PreambleParams {
  const void* qg;  // [T, Hq * P]
  DType qg_dtype;
  int64_t qg_row;
  const void* k;  // [T, Hkv * D]
  DType k_dtype;
  int64_t k_row;
  const void* q_w;
  DType q_w_dtype;
  const void* k_w;
  DType k_w_dtype;
  float w_offset;  // 1 for kOnePlus, 0 for kPlain
  float eps;
  const float* cos_sin;  // [T, R]
  int rotary;
  void* q_out;
  DType q_out_dtype;
  int64_t q_out_t, q_out_h;
  void* k_out;
  DType k_out_dtype;
  int64_t k_out_t, k_out_h;
  void* gate;  // null when ungated
  DType gate_dtype;
  int64_t gate_t, gate_h;
  int64_t tokens;
  int hq, hkv, d;
};

// One warp per (token, head) item; items [0, Hq) of a token are query heads (with
// their gate), [Hq, Hq + Hkv) key heads. buf: the warp's d floats of shared memory.
__global__ void __launch_bounds__(kPreambleWarps* kWarp) preamble_kernel(PreambleParams p) {
  extern __shared__ float smem[];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  float* buf = smem + warp * p.d;
  const int64_t items = p.tokens * (p.hq + p.hkv);
  const int per_head = p.gate ? 2 * p.d : p.d, half = p.rotary / 2;
  for (int64_t item = int64_t(blockIdx.x) * kPreambleWarps + warp; item < items;
       item += int64_t(gridDim.x) * kPreambleWarps) {
    const int64_t t = item / (p.hq + p.hkv);
    const int h = int(item % (p.hq + p.hkv));
    const bool is_q = h < p.hq;
    const void* src = is_q ? p.qg : p.k;
    const DType sdt = is_q ? p.qg_dtype : p.k_dtype;
    const int64_t src_off = is_q ? t * p.qg_row + int64_t(h) * per_head
                                 : t * p.k_row + int64_t(h - p.hq) * p.d;
    const void* w = is_q ? p.q_w : p.k_w;
    const DType wdt = is_q ? p.q_w_dtype : p.k_w_dtype;
    void* dst = is_q ? p.q_out : p.k_out;
    const DType ddt = is_q ? p.q_out_dtype : p.k_out_dtype;
    const int64_t dst_off = is_q ? t * p.q_out_t + int64_t(h) * p.q_out_h
                                 : t * p.k_out_t + int64_t(h - p.hq) * p.k_out_h;
    float ss = 0.0f;
    for (int i = lane; i < p.d; i += kWarp) {
      const float v = load_f32(src, sdt, src_off + i);
      buf[i] = v;
      ss += v * v;
    }
    const float inv = rsqrtf(warp_sum(ss) / float(p.d) + p.eps);
    const bool narrow = ddt != DType::kF32;
    if (!narrow) {
      for (int i = lane; i < p.d; i += kWarp) buf[i] = buf[i] * inv * (load_f32(w, wdt, i) + p.w_offset);
    } else {
      // The oracle's separate ops: the norm output rounds (kPlain: the normalised value
      // too, before the weight), then NeoX in dt arithmetic (vt/ops/attn_preamble.h).
      const bool plain = p.w_offset == 0.0f;
      for (int i = lane; i < p.d; i += kWarp) {
        const float nv = buf[i] * inv;
        buf[i] = round_to((plain ? round_to(nv, ddt) : nv) * (load_f32(w, wdt, i) + p.w_offset), ddt);
      }
    }
    __syncwarp();
    const float* c = p.cos_sin + t * p.rotary;
    for (int j = lane; j < half; j += kWarp) {
      const float x1 = buf[j], x2 = buf[j + half];
      if (!narrow) {
        store_f32(dst, ddt, dst_off + j, x1 * c[j] - x2 * c[half + j]);
        store_f32(dst, ddt, dst_off + j + half, x2 * c[j] + x1 * c[half + j]);
      } else {
        const float cj = c[j], sj = c[half + j];
        store_f32(dst, ddt, dst_off + j, round_to(x1 * cj, ddt) - round_to(x2 * sj, ddt));
        store_f32(dst, ddt, dst_off + j + half, round_to(x2 * cj, ddt) + round_to(x1 * sj, ddt));
      }
    }
    for (int i = p.rotary + lane; i < p.d; i += kWarp) store_f32(dst, ddt, dst_off + i, buf[i]);
    if (is_q && p.gate) {
      const int64_t goff = t * p.gate_t + int64_t(h) * p.gate_h;
      for (int i = lane; i < p.d; i += kWarp)
        store_f32(p.gate, p.gate_dtype, goff + i, sigmoidf(load_f32(src, sdt, src_off + p.d + i)));
    }
    __syncwarp();  // buf is reused by the warp's next item
  }
}

__global__ void __launch_bounds__(kCacheWriteThreads)
    cache_write_kernel(const void* k, DType kdt, int64_t k_t, int64_t k_h, const void* v, DType vdt,
                       int64_t v_t, int64_t v_h, const int64_t* slots, int64_t tokens, void* kc,
                       DType kcdt, void* vc, DType vcdt, int heads, int d) {
  const int64_t row = int64_t(heads) * d;
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const int64_t slot = slots[t];
    if (slot < 0) continue;
    for (int64_t i = threadIdx.x; i < row; i += kCacheWriteThreads) {
      const int64_t h = i / d, e = i % d;
      store_f32(kc, kcdt, slot * row + i, load_f32(k, kdt, t * k_t + h * k_h + e));
      store_f32(vc, vcdt, slot * row + i, load_f32(v, vdt, t * v_t + h * v_h + e));
    }
  }
}

}  // namespace

void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, const Tensor& q_out, const Tensor& k_out,
                            const Tensor& gate_out) {
  const int64_t T = qg.size(0);
  if (T == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const bool gated = gate_out.defined();
  PreambleParams p{qg.data_ptr(),
                   qg.dtype(),
                   qg.stride(0),
                   k.data_ptr(),
                   k.dtype(),
                   k.stride(0),
                   q_norm_w.data_ptr(),
                   q_norm_w.dtype(),
                   k_norm_w.data_ptr(),
                   k_norm_w.dtype(),
                   kind == RmsNormKind::kOnePlus ? 1.0f : 0.0f,
                   eps,
                   cos_sin.data<float>(),
                   int(cos_sin.size(1)),
                   q_out.data_ptr(),
                   q_out.dtype(),
                   q_out.stride(0),
                   q_out.stride(1),
                   k_out.data_ptr(),
                   k_out.dtype(),
                   k_out.stride(0),
                   k_out.stride(1),
                   gated ? gate_out.data_ptr() : nullptr,
                   gated ? gate_out.dtype() : DType::kF32,
                   gated ? gate_out.stride(0) : 0,
                   gated ? gate_out.stride(1) : 0,
                   T,
                   int(q_out.size(1)),
                   int(k_out.size(1)),
                   int(q_out.size(2))};
  const size_t smem = size_t(kPreambleWarps) * size_t(p.d) * sizeof(float);
  VT_CHECK(smem <= 48 * 1024, "attn_qk_norm_rope_gate (CUDA): head_dim ", p.d, " is too large");
  const int64_t items = T * (p.hq + p.hkv);
  const unsigned blocks =
      unsigned(std::min<int64_t>((items + kPreambleWarps - 1) / kPreambleWarps, 1 << 20));
  preamble_kernel<<<blocks, kPreambleWarps * kWarp, smem, st.stream>>>(p);
  VT_CUDA_CHECK_LAUNCH("preamble_kernel");
}

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const SlotMapping& slots,
                    const Tensor& k_cache, const Tensor& v_cache) {
  const int64_t T = k.size(0);
  if (T == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const int64_t* d_slots = slots.on_device() ? slots.device : upload_indices(st, slots.host);
  const unsigned blocks = unsigned(std::min<int64_t>(T, 65535));
  cache_write_kernel<<<blocks, kCacheWriteThreads, 0, st.stream>>>(
      k.data_ptr(), k.dtype(), k.stride(0), k.stride(1), v.data_ptr(), v.dtype(), v.stride(0),
      v.stride(1), d_slots, T, k_cache.data_ptr(), k_cache.dtype(), v_cache.data_ptr(),
      v_cache.dtype(), int(k.size(1)), int(k.size(2)));
  VT_CUDA_CHECK_LAUNCH("cache_write_kernel");
}

}  // namespace vt::cuda
