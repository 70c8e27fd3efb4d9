// CUDA AttnQkNormRopeGate and kv_cache_write (vt/cuda/attention.h).
#include <algorithm>
#include <vector>

#include "vt/cuda/attention.h"
#include "vt/cuda/check.h"
#include "vt/cuda/common.cuh"
#include "vt/cuda/stream_state.h"

namespace vt::cuda {

namespace {

constexpr int kPreambleWarps = 4;  // small CTAs: one decode token's ~20 heads spread over SMs
constexpr int kCacheWriteThreads = 128;
constexpr int kCacheWriteRun = 8;  // dims per thread: 16 bytes of a 16-bit cache

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
  // The folded cache write (k_cache null: none): key head g of token t also goes to
  // k_cache[slots[t], g] (its output as k_out holds it) and v[t, g] to v_cache (slot -1:
  // skipped), converted as kv_cache_write converts.
  const void* v;
  DType v_dtype;
  int64_t v_t, v_h;
  const int64_t* slots;
  void* k_cache;
  void* v_cache;
  DType k_cache_dtype, v_cache_dtype;
};

// One warp per (token, head) item; items [0, Hq) of a token are query heads (with
// their gate), [Hq, Hq + Hkv) key heads. Lane l holds dims l + 32 k (k < kPerLane,
// d <= 32 kPerLane) in registers. At one decode token there is one item per warp, so
// the kernel is a chain of memory latencies: every load of the item (the head, its
// gate half, the norm weight, the cos/sin slots) is issued before the first store, as
// a store could alias a later load for all the compiler knows (the op forbids
// overlap). buf: the warp's d floats of shared memory, where the rotate-half partner
// (dim i +- R/2, another lane's) is read. The operations and their order are those of
// the one-dim-at-a-time loop this replaced (ss over dims l, l + 32, ... per lane, then
// the warp; the same products and roundings), so the outputs should match it bit for
// bit; the tests hold it to the CPU op's tolerance.
template <int kPerLane>
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
    const bool is_q = h < p.hq, gated = is_q && p.gate;
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
    const float* c = p.cos_sin + t * p.rotary;
    const bool to_cache = !is_q && p.k_cache;
    const int64_t slot = to_cache ? p.slots[t] : -1;
    const int64_t v_off = t * p.v_t + int64_t(h - p.hq) * p.v_h;

    // gv: the gate half of a query head, v's head of a key head (to_cache).
    float x[kPerLane], wt[kPerLane], gv[kPerLane], cs[kPerLane], sn[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + k * kWarp;
      x[k] = wt[k] = gv[k] = cs[k] = sn[k] = 0.0f;
      if (i >= p.d) continue;
      x[k] = load_f32(src, sdt, src_off + i);
      wt[k] = load_f32(w, wdt, i) + p.w_offset;
      if (gated) gv[k] = load_f32(src, sdt, src_off + p.d + i);
      if (to_cache) gv[k] = load_f32(p.v, p.v_dtype, v_off + i);
      if (i < p.rotary) {
        const int j = i < half ? i : i - half;
        cs[k] = c[j];
        sn[k] = c[half + j];
      }
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) ss += x[k] * x[k];
    const float inv = rsqrtf(warp_sum(ss) / float(p.d) + p.eps);
    const bool narrow = ddt != DType::kF32, plain = p.w_offset == 0.0f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      if (!narrow) {
        x[k] = x[k] * inv * wt[k];
      } else {
        // The oracle's separate ops: the norm output rounds (kPlain: the normalised
        // value too, before the weight), then NeoX in dt arithmetic
        // (vt/ops/attn_preamble.h).
        const float nv = x[k] * inv;
        x[k] = round_to((plain ? round_to(nv, ddt) : nv) * wt[k], ddt);
      }
      if (lane + k * kWarp < p.d) buf[lane + k * kWarp] = x[k];
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int i = lane + k * kWarp;
      if (i >= p.d) continue;
      float y = x[k];
      if (i < half) {  // pair (x1, x2) = (this, buf[i + half])
        const float x2 = buf[i + half];
        y = narrow ? round_to(x[k] * cs[k], ddt) - round_to(x2 * sn[k], ddt)
                   : x[k] * cs[k] - x2 * sn[k];
      } else if (i < p.rotary) {  // pair (x1, x2) = (buf[i - half], this)
        const float x1 = buf[i - half];
        y = narrow ? round_to(x[k] * cs[k], ddt) + round_to(x1 * sn[k], ddt)
                   : x[k] * cs[k] + x1 * sn[k];
      }
      store_f32(dst, ddt, dst_off + i, y);
      if (gated)
        store_f32(p.gate, p.gate_dtype, t * p.gate_t + int64_t(h) * p.gate_h + i, sigmoidf(gv[k]));
      if (to_cache && slot >= 0) {
        const int64_t at = (slot * p.hkv + (h - p.hq)) * p.d + i;
        store_f32(p.k_cache, p.k_cache_dtype, at, round_to(y, ddt));  // k_out's value
        store_f32(p.v_cache, p.v_cache_dtype, at, gv[k]);
      }
    }
    __syncwarp();  // buf is reused by the warp's next item
  }
}

// A thread per (token, head, run of kCacheWriteRun dims) of k and v: the slot, the k
// run and the v run are loaded together (the slot is needed only by the stores), all
// before the first store. kCopy16: k, v and both caches share a 16-bit dtype and every
// run is 16-byte aligned, so a run is one 16-byte load and store, bit for bit;
// otherwise each element is converted (load_f32, store_f32: one rounding).
template <bool kCopy16>
__global__ void __launch_bounds__(kCacheWriteThreads)
    cache_write_kernel(const void* k, DType kdt, int64_t k_t, int64_t k_h, const void* v, DType vdt,
                       int64_t v_t, int64_t v_h, const int64_t* slots, int64_t tokens, void* kc,
                       DType kcdt, void* vc, DType vcdt, int heads, int d) {
  const int runs = (d + kCacheWriteRun - 1) / kCacheWriteRun;
  const int64_t items = tokens * heads * runs, row = int64_t(heads) * d;
  for (int64_t item = int64_t(blockIdx.x) * kCacheWriteThreads + threadIdx.x; item < items;
       item += int64_t(gridDim.x) * kCacheWriteThreads) {
    const int64_t t = item / (int64_t(heads) * runs);
    const int h = int(item / runs % heads), e0 = int(item % runs) * kCacheWriteRun;
    const int64_t slot = slots[t];
    const int64_t ks = t * k_t + h * k_h + e0, vs = t * v_t + h * v_h + e0;
    const int64_t cs = int64_t(h) * d + e0;  // within the slot's row
    if constexpr (kCopy16) {
      const uint4 kr = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(k) + ks);
      const uint4 vr = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(v) + vs);
      if (slot < 0) continue;
      *reinterpret_cast<uint4*>(static_cast<uint16_t*>(kc) + slot * row + cs) = kr;
      *reinterpret_cast<uint4*>(static_cast<uint16_t*>(vc) + slot * row + cs) = vr;
    } else {
      const int n = min(kCacheWriteRun, d - e0);
      float kr[kCacheWriteRun], vr[kCacheWriteRun];
#pragma unroll
      for (int i = 0; i < kCacheWriteRun; ++i) {
        kr[i] = i < n ? load_f32(k, kdt, ks + i) : 0.0f;
        vr[i] = i < n ? load_f32(v, vdt, vs + i) : 0.0f;
      }
      if (slot < 0) continue;
#pragma unroll
      for (int i = 0; i < kCacheWriteRun; ++i) {
        if (i >= n) break;
        store_f32(kc, kcdt, slot * row + cs + i, kr[i]);
        store_f32(vc, vcdt, slot * row + cs + i, vr[i]);
      }
    }
  }
}

}  // namespace

void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, const Tensor& q_out, const Tensor& k_out,
                            const Tensor& gate_out, const KvCacheWrite& cache,
                            const SlotMapping& slots) {
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
                   int(q_out.size(2)),
                   nullptr,
                   DType::kF32,
                   0,
                   0,
                   nullptr,
                   nullptr,
                   nullptr,
                   DType::kF32,
                   DType::kF32};
  if (cache.defined()) {
    p.v = cache.v.data_ptr();
    p.v_dtype = cache.v.dtype();
    p.v_t = cache.v.stride(0);
    p.v_h = cache.v.stride(1);
    p.slots = slots.on_device() ? slots.device : upload_indices(st, slots.host);
    p.k_cache = cache.k_cache.data_ptr();
    p.v_cache = cache.v_cache.data_ptr();
    p.k_cache_dtype = cache.k_cache.dtype();
    p.v_cache_dtype = cache.v_cache.dtype();
  }
  VT_CHECK(p.d <= 16 * kWarp, "attn_qk_norm_rope_gate (CUDA): head_dim ", p.d,
           " is too large (at most ", 16 * kWarp, ")");
  const size_t smem = size_t(kPreambleWarps) * size_t(p.d) * sizeof(float);
  const int64_t items = T * (p.hq + p.hkv);
  const unsigned blocks =
      unsigned(std::min<int64_t>((items + kPreambleWarps - 1) / kPreambleWarps, 1 << 20));
  const auto launch = [&](auto kernel) {
    kernel<<<blocks, kPreambleWarps * kWarp, smem, st.stream>>>(p);
  };
  if (p.d <= 2 * kWarp)
    launch(preamble_kernel<2>);
  else if (p.d <= 4 * kWarp)
    launch(preamble_kernel<4>);
  else if (p.d <= 8 * kWarp)
    launch(preamble_kernel<8>);
  else
    launch(preamble_kernel<16>);
  VT_CUDA_CHECK_LAUNCH("preamble_kernel");
}

void kv_cache_write(Stream& s, const Tensor& k, const Tensor& v, const SlotMapping& slots,
                    const Tensor& k_cache, const Tensor& v_cache) {
  const int64_t T = k.size(0);
  if (T == 0) return;
  StreamState& st = s.cuda_state();
  set_device(st);
  const int64_t* d_slots = slots.on_device() ? slots.device : upload_indices(st, slots.host);
  const int heads = int(k.size(1)), d = int(k.size(2));
  const DType dt = k_cache.dtype();
  // 16-byte runs: the caches are 16-byte aligned (the op's allocation), a slot row's
  // runs are when d is a multiple of 8; k and v need it of their data and strides.
  const auto runs16 = [](const Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0 && t.stride(0) % 8 == 0 &&
           t.stride(1) % 8 == 0;
  };
  const bool copy16 = (dt == DType::kBF16 || dt == DType::kF16) && k.dtype() == dt &&
                      v.dtype() == dt && v_cache.dtype() == dt && d % kCacheWriteRun == 0 &&
                      runs16(k) && runs16(v) &&
                      reinterpret_cast<uintptr_t>(k_cache.data_ptr()) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(v_cache.data_ptr()) % 16 == 0;
  const int64_t items = T * heads * ((d + kCacheWriteRun - 1) / kCacheWriteRun);
  const unsigned blocks =
      unsigned(std::min<int64_t>((items + kCacheWriteThreads - 1) / kCacheWriteThreads, 1 << 20));
  const auto launch = [&](auto kernel) {
    kernel<<<blocks, kCacheWriteThreads, 0, st.stream>>>(
        k.data_ptr(), k.dtype(), k.stride(0), k.stride(1), v.data_ptr(), v.dtype(), v.stride(0),
        v.stride(1), d_slots, T, k_cache.data_ptr(), k_cache.dtype(), v_cache.data_ptr(),
        v_cache.dtype(), heads, d);
  };
  if (copy16)
    launch(cache_write_kernel<true>);
  else
    launch(cache_write_kernel<false>);
  VT_CUDA_CHECK_LAUNCH("cache_write_kernel");
}

}  // namespace vt::cuda
