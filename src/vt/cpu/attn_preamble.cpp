// The CPU AttnQkNormRopeGate. The arithmetic is written in the same order as
// rms_norm, rope_neox and sigmoid (vt/cpu/rowwise.cpp, vt/cpu/rope.cpp) so fused and
// unfused paths agree.
#include "vt/cpu/attn_preamble.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vt/cpu/rounding.h"
#include "vt/cpu/rowio.h"

namespace vt::cpu {

namespace {

// qg/k as [T, heads, P] element addressing: row stride of the [T, heads*P] matrix.
struct Proj {
  const char* data;
  DType dtype;
  int64_t row_stride;
  const char* at(int64_t t, int64_t off) const {
    return data + (t * row_stride + off) * int64_t(dtype_size(dtype));
  }
};

struct OutHeads {
  char* data;
  DType dtype;
  int64_t token_stride, head_stride;
  char* at(int64_t t, int64_t h) const {
    return data + (t * token_stride + h * head_stride) * int64_t(dtype_size(dtype));
  }
};

Proj proj_of(const Tensor& t) {
  return {static_cast<const char*>(t.data_ptr()), t.dtype(), t.stride(0)};
}
OutHeads out_of(const Tensor& t) {
  return {static_cast<char*>(t.data_ptr()), t.dtype(), t.stride(0), t.stride(1)};
}

// In place on one head vector a[0..d): RMSNorm with weights wf (already 1 + w for
// kOnePlus), then NeoX rotary on the first 2*half dims with c = cos row, sn = sin row.
// For a narrow output dtype `dt` the steps round as the oracle's separate ops do
// (rms_norm and rope_neox with narrow outputs): the norm output rounds (kPlain: also the
// normalised value before the weight), then the rotation runs in dt arithmetic.
void norm_rope(float* a, int64_t d, const float* wf, float eps, bool plain, const float* c,
               const float* sn, int64_t half, DType dt) {
  float ss = 0.0f;
  for (int64_t i = 0; i < d; ++i) ss += a[i] * a[i];
  const float inv = 1.0f / std::sqrt(ss / float(d) + eps);
  if (!is_narrow(dt)) {
    for (int64_t i = 0; i < d; ++i) a[i] = a[i] * inv * wf[i];
    for (int64_t j = 0; j < half; ++j) {
      const float x1 = a[j], x2 = a[j + half];
      a[j] = x1 * c[j] - x2 * sn[j];
      a[j + half] = x2 * c[j] + x1 * sn[j];
    }
    return;
  }
  for (int64_t i = 0; i < d; ++i)
    a[i] = round_to((plain ? round_to(a[i] * inv, dt) : a[i] * inv) * wf[i], dt);
  rope_rotate_rounded(a, c, sn, half, dt);
}

}  // namespace

void attn_qk_norm_rope_gate(Stream& s, const Tensor& qg, const Tensor& k, const Tensor& q_norm_w,
                            const Tensor& k_norm_w, float eps, RmsNormKind kind,
                            const Tensor& cos_sin, const Tensor& q_out, const Tensor& k_out,
                            const Tensor& gate_out) {
  const Proj qp = proj_of(qg), kp = proj_of(k);
  const OutHeads qo = out_of(q_out), ko = out_of(k_out);
  const bool gated = gate_out.defined();
  const OutHeads go = gated ? out_of(gate_out) : OutHeads{};
  const int64_t T = qg.size(0), hq = q_out.size(1), hkv = k_out.size(1), d = q_out.size(2);
  const int64_t per_head = gated ? 2 * d : d, rd = cos_sin.size(1), half = rd / 2;
  std::vector<float> qw(static_cast<size_t>(d)), kw(static_cast<size_t>(d));
  load_row(q_norm_w.data_ptr(), q_norm_w.dtype(), d, qw.data());
  load_row(k_norm_w.data_ptr(), k_norm_w.dtype(), d, kw.data());
  if (kind == RmsNormKind::kOnePlus) {
    for (float& v : qw) v += 1.0f;
    for (float& v : kw) v += 1.0f;
  }
  const bool plain = kind == RmsNormKind::kPlain;
  const float* cs = cos_sin.data<float>();
  // Work items: every (token, q head) and every (token, kv head).
  const int64_t heads = hq + hkv;
  s.parallel_for(T * heads, std::max<int64_t>(1, 4096 / d), [&](int64_t i0, int64_t i1) {
    std::vector<float> a(static_cast<size_t>(d));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / heads, h = i % heads;
      const float* c = cs + t * rd;
      if (h < hq) {
        load_row(qp.at(t, h * per_head), qp.dtype, d, a.data());
        norm_rope(a.data(), d, qw.data(), eps, plain, c, c + half, half, qo.dtype);
        store_row(a.data(), d, qo.dtype, qo.at(t, h));
        if (!gated) continue;
        load_row(qp.at(t, h * per_head + d), qp.dtype, d, a.data());
        for (int64_t e = 0; e < d; ++e) a[size_t(e)] = 1.0f / (1.0f + std::exp(-a[size_t(e)]));
        store_row(a.data(), d, go.dtype, go.at(t, h));
      } else {
        const int64_t kh = h - hq;
        load_row(kp.at(t, kh * d), kp.dtype, d, a.data());
        norm_rope(a.data(), d, kw.data(), eps, plain, c, c + half, half, ko.dtype);
        store_row(a.data(), d, ko.dtype, ko.at(t, kh));
      }
    }
  });
}

}  // namespace vt::cpu
